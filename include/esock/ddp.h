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
 * untagged EType by the T bit, code "invalid DDP version") and returns
 * -EPROTO; returns 0 when the header is acceptable.
 */
ESOCK_EXPORT int esock_ddp_hdr_check(const struct esock_ddp_hdr *h, struct esock_term *term);

/* --- Segmentation, placement: declared below by ddp/ (see ddp_seg.c, ddp_place.c). --- */

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_DDP_H */
