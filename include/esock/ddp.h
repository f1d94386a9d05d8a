/* SPDX-License-Identifier: MIT */
/*
 * DDP (RFC 5041): header codec (§4), segmentation of one message into DDP
 * segments no larger than the MPA MULPDU (§5), and placement of received
 * segments into tagged regions or untagged buffers through a caller-supplied
 * lookup (§5, §7 errors).  Pure code over memory: no I/O, no clocks.
 *
 * A DDP segment is the ULPDU of one MPA FPDU; offsets here are from the first
 * octet of the DDP segment (the MPA ULPDU_Length field is not part of it).
 */
#ifndef ESOCK_DDP_H
#define ESOCK_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <esock/export.h>
#include <esock/term.h>
#ifdef ESOCK_BUILDING
#include "ddp/ddp_state.h" /* the state structs' fields, for the codecs and the tree */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ESOCK_DDP_VERSION 1
#define ESOCK_DDP_TAGGED_HLEN 14   /* ctrl, RsvdULP, STag, TO */
#define ESOCK_DDP_UNTAGGED_HLEN 18 /* ctrl, RsvdULP[0:39], QN, MSN, MO */

/* DDP control octet (first octet of the segment). */
#define ESOCK_DDP_CTRL_T 0x80
#define ESOCK_DDP_CTRL_L 0x40
#define ESOCK_DDP_CTRL_RSVD 0x3c
#define ESOCK_DDP_CTRL_DV 0x03

/* Untagged queue numbers used by RDMAP (RFC 5040 §5.1, RFC 7306). */
enum esock_ddp_qn {
	ESOCK_DDP_QN_SEND = 0,
	ESOCK_DDP_QN_READ_REQ = 1, /* also RFC 7306 Atomic Request */
	ESOCK_DDP_QN_TERMINATE = 2,
	ESOCK_DDP_QN_ATOMIC_RESP = 3, /* RFC 7306 */
};

/*
 * A decoded DDP header in host order.  Fields not used by the buffer model
 * are zero after decode and ignored by encode.
 */
struct esock_ddp_hdr {
	bool tagged;       /* T */
	bool last;         /* L */
	uint8_t rsvd;      /* the 4 reserved control bits, shifted down (send 0) */
	uint8_t dv;        /* DDP version (1) */
	uint8_t ulp_ctrl;  /* RsvdULP[0:7]: the RDMAP control octet */
	uint32_t ulp_word; /* untagged RsvdULP[8:39]: RDMAP Invalidate STag */
	uint32_t stag;     /* tagged: Data Sink STag */
	uint64_t to;       /* tagged: Tagged Offset */
	uint32_t qn;       /* untagged: Queue Number */
	uint32_t msn;      /* untagged: Message Sequence Number */
	uint32_t mo;       /* untagged: Message Offset */
};

/* Header length for a first octet: 14 tagged, 18 untagged. */
static inline size_t esock_ddp_hdr_len(uint8_t ctrl)
{
	return (ctrl & ESOCK_DDP_CTRL_T) ? ESOCK_DDP_TAGGED_HLEN : ESOCK_DDP_UNTAGGED_HLEN;
}

/*
 * esock_ddp_hdr_decode decodes the DDP header at the start of the DDP
 * segment |buf| (|len| octets, borrowed).  Decoding does not judge the
 * version or reserved bits (see esock_ddp_hdr_check).
 *
 * Returns the header length (14 or 18), or
 *   -EBADMSG  |len| is shorter than the header the T bit announces (or 0).
 */
ESOCK_EXPORT ssize_t esock_ddp_hdr_decode(struct esock_ddp_hdr *h, const uint8_t *buf, size_t len);

/*
 * esock_ddp_hdr_encode writes |h| into |buf| (|cap| octets).  The version
 * written is h->dv (callers set ESOCK_DDP_VERSION); reserved bits from h->rsvd.
 *
 * Returns the header length (14 or 18), or
 *   -ENOBUFS  |cap| is too small.
 */
ESOCK_EXPORT ssize_t esock_ddp_hdr_encode(const struct esock_ddp_hdr *h, uint8_t *buf, size_t cap);

/*
 * esock_ddp_hdr_check validates what RFC 5041 lets a data sink judge from the
 * header alone: the DDP version.  On failure fills |term| (DDP, tagged or
 * untagged EType by the T bit, code "invalid DDP version", header copy M|D) and returns
 * -EPROTO; returns 0 when the header is acceptable.
 */
ESOCK_EXPORT int esock_ddp_hdr_check(const struct esock_ddp_hdr *h, struct esock_term *term);

/* ==== Segmentation (ddp/ddp_seg.c) ==== */

/*
 * Cuts one DDP message into segments whose whole DDP segment (header +
 * payload) fits in |mulpdu| octets (RFC 5041 §5.1).  Every segment but the
 * last carries the same payload size, rounded down to a multiple of 4 so that
 * only the last FPDU needs PAD (as siw does); TO (tagged) or MO (untagged)
 * advances by the payload already sent; MSN and the ULP fields stay; L is set
 * on the last segment only.  An empty message is one empty segment with L=1.
 * Caller-allocated; its contents are the codec's: only its size is part of
 * the ABI.
 */
#define ESOCK_DDP_SEG_WORDS 16 /* its size, fixed: part of the ABI */
struct esock_ddp_seg {
#ifdef ESOCK_BUILDING
	union {
		ESOCK_DDP_SEG_FIELDS; /* (the codec's own view: ddp/ddp_state.h) */
		uint64_t esock_private_[ESOCK_DDP_SEG_WORDS];
	};
#else
	uint64_t esock_private_[ESOCK_DDP_SEG_WORDS];
#endif
};

/*
 * esock_ddp_seg_init prepares |s| for a message of |msg_len| payload octets
 * described by |tmpl| (copied; its L and TO/MO are the iterator's).
 * Returns 0, or -EINVAL when |mulpdu| cannot hold the header plus 4 payload
 * octets (and the message is not empty), or -EMSGSIZE when an untagged
 * message would need an MO beyond 2^32.
 */
ESOCK_EXPORT int esock_ddp_seg_init(struct esock_ddp_seg *s, const struct esock_ddp_hdr *tmpl,
				    size_t msg_len, size_t mulpdu);

/*
 * esock_ddp_seg_next yields the next segment: its header in |h| and its
 * payload as [*off, *off + *len) of the message.  Returns false when the
 * message is exhausted.
 */
ESOCK_EXPORT bool esock_ddp_seg_next(struct esock_ddp_seg *s, struct esock_ddp_hdr *h, size_t *off,
				     size_t *len);

/* ==== Placement (ddp/ddp_place.c) ==== */

#define ESOCK_DDP_ACCESS_LOCAL_WRITE 0x1  /* sink of a Read Response */
#define ESOCK_DDP_ACCESS_REMOTE_WRITE 0x2 /* target of an RDMA Write */
#define ESOCK_DDP_ACCESS_REMOTE_READ 0x4  /* source of an RDMA Read */

#define ESOCK_DDP_MSG_SLOTS 8  /* untagged messages in progress at once */
#define ESOCK_DDP_RANGES 8     /* disjoint received ranges per message */
#define ESOCK_DDP_QN_MAX 32

/* A registered region as the lookup reports it. */
struct esock_ddp_region {
	uint64_t base;  /* TO of the first octet */
	uint64_t len;
	uint8_t *addr;  /* host address of the first octet */
	uint32_t access; /* ESOCK_DDP_ACCESS_* */
	uint32_t pd;    /* protection domain / stream association */
};

/* A posted untagged receive buffer. */
struct esock_ddp_buf {
	uint8_t *addr;
	size_t len;
	uint64_t cookie; /* caller's work-request id, echoed in the completion */
};

/* Caller-supplied lookups: 0 and |out| filled, or -ENOENT. */
struct esock_ddp_lookup {
	int (*stag)(void *ctx, uint32_t stag, struct esock_ddp_region *out);
	/* Consumes the buffer for (qn, msn): called once per message. */
	int (*untagged)(void *ctx, uint32_t qn, uint32_t msn, struct esock_ddp_buf *out);
	void *ctx;
};

struct esock_ddp_place_cfg {
	struct esock_ddp_lookup lookup;
	uint32_t pd;         /* this stream's protection domain */
	uint32_t qn_mask;    /* valid QNs, bit n for QN n (0: QNs 0-3) */
	uint32_t msn_window; /* acceptable MSNs from the next expected (0: slots) */
};

/* A completed untagged message, reported in MSN order per QN. */
struct esock_ddp_completion {
	uint32_t qn, msn;
	size_t len;
	struct esock_ddp_buf buf;
};

/*
 * Placement state of one DDP stream (receive side).  Caller-allocated; its
 * contents are the codec's: only its size is part of the ABI.
 */
#define ESOCK_DDP_PLACE_WORDS 192 /* its size, fixed: part of the ABI */
struct esock_ddp_place {
#ifdef ESOCK_BUILDING
	union {
		ESOCK_DDP_PLACE_FIELDS; /* (the codec's own view: ddp/ddp_state.h) */
		uint64_t esock_private_[ESOCK_DDP_PLACE_WORDS];
	};
#else
	uint64_t esock_private_[ESOCK_DDP_PLACE_WORDS];
#endif
};

/* What placing one segment did. */
struct esock_ddp_placed {
	size_t len;        /* octets written */
	bool last;         /* the segment had L=1 */
	bool msg_done;     /* untagged: its message is now complete (maybe not deliverable yet) */
};

/* Prepares |p|; MSNs start at 1 on every queue (RFC 5041 §5.1).  Returns 0 or -EINVAL. */
ESOCK_EXPORT int esock_ddp_place_init(struct esock_ddp_place *p, const struct esock_ddp_place_cfg *cfg);

/*
 * esock_ddp_place_segment checks one received DDP segment (header |h|,
 * payload |payload| of |len| octets, borrowed) and copies the payload into
 * its tagged region or untagged buffer.  Segments may come in any order.
 * |access| is the right a tagged target must grant
 * (ESOCK_DDP_ACCESS_REMOTE_WRITE for an RDMA Write,
 * ESOCK_DDP_ACCESS_LOCAL_WRITE for a Read Response sink).  Zero-length
 * tagged segments are accepted without lookup (RFC 6581 RTRs carry
 * meaningless STags).
 *
 * Nothing is written unless every check passes.  On failure returns, now and
 * for every later call, a negative code with esock_ddp_place_term() set
 * (hdrct M|D: the Terminate copies the offending DDP header):
 *   -EPROTO   DDP version (tagged 0x04 / untagged 0x06); invalid STag
 *             (tagged 0x00); STag of another stream (0x02); TO wrap (0x03);
 *             base/bounds (0x01); invalid QN (untagged 0x01); MSN outside the
 *             window (0x03); MO beyond the buffer or beyond the end an L
 *             segment fixed (0x04); message longer than the buffer (0x05);
 *   -EACCES   the region lacks |access| (RDMAP / remote protection / access
 *             0x02: DDP has no access code);
 *   -ENOBUFS  no buffer posted for the MSN (untagged 0x02);
 *   -ENOSPC   more messages or ranges in flight than tracked (DDP local
 *             catastrophic 0x00).
 */
ESOCK_EXPORT int esock_ddp_place_segment(struct esock_ddp_place *p, const struct esock_ddp_hdr *h,
					 const uint8_t *payload, size_t len, uint32_t access,
					 struct esock_ddp_placed *out);

/*
 * esock_ddp_place_prepare runs every check of esock_ddp_place_segment for a
 * segment of |len| payload octets and records it as placed, but copies
 * nothing: |*dst| is where the caller must write the payload itself (NULL
 * when |len| is 0), before it next calls esock_ddp_place_poll.  This lets an
 * engine receive straight from the socket into the target.  Same returns.
 */
ESOCK_EXPORT int esock_ddp_place_prepare(struct esock_ddp_place *p, const struct esock_ddp_hdr *h,
					 size_t len, uint32_t access, uint8_t **dst,
					 struct esock_ddp_placed *out);

/*
 * The buffer of the untagged message (qn, msn) in progress: it was consumed
 * for that message by an earlier segment.  NULL when no such message is open
 * (its next segment would consume a new buffer).  Borrowed until the next call.
 */
ESOCK_EXPORT const struct esock_ddp_buf *esock_ddp_place_msg_buf(const struct esock_ddp_place *p,
								   uint32_t qn, uint32_t msn);

/*
 * Moves the open untagged message (qn, msn) to the buffer |nb|: its consumer
 * has copied what was placed so far to the same offsets of |nb|, and the
 * message's later segments land there (a receiver that lent a buffer of its
 * own to a message, and must take it back before the message is done).
 * Returns 0, -ENOENT when no such message is open, -EINVAL when |nb| is
 * shorter than what was placed (the octets would not fit).
 */
ESOCK_EXPORT int esock_ddp_place_rebuf(struct esock_ddp_place *p, uint32_t qn, uint32_t msn,
				       const struct esock_ddp_buf *nb);

/*
 * esock_ddp_place_whole accounts for an untagged message of queue |qn| that
 * came whole in one segment (L set, MO 0) and that the caller placed in a
 * buffer of its own (a fast path for the commonest segment of a stream): it
 * must carry the next MSN of its queue while no message of that queue is
 * open.  Returns 0 (the queue expects the MSN after it; nothing is
 * reported by esock_ddp_place_poll for it) or -EAGAIN when the segment is
 * not that case: then esock_ddp_place_prepare must judge it, which also
 * says what is wrong with it.
 */
ESOCK_EXPORT int esock_ddp_place_whole(struct esock_ddp_place *p, uint32_t qn, uint32_t msn);

/*
 * esock_ddp_place_poll hands out the next deliverable untagged message (the
 * next MSN of some QN whose octets have all arrived).  Returns 1 with |c|
 * filled, 0 when none is ready, or the terminal error.  Each message is
 * reported exactly once.
 */
ESOCK_EXPORT int esock_ddp_place_poll(struct esock_ddp_place *p, struct esock_ddp_completion *c);

/* The Terminate reason after a failure (NULL while healthy). */
ESOCK_EXPORT const struct esock_term *esock_ddp_place_term(const struct esock_ddp_place *p);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_DDP_H */
