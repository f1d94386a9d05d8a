/* SPDX-License-Identifier: MIT */
/*
 * MPA (RFC 5044, updated by RFC 6581): start frames (Request/Reply, revision
 * 1 and 2, enhanced IRD/ORD and RTR negotiation) and FPDU framing (length,
 * markers, pad, CRC32C) for transmit and receive.  Pure code over memory.
 */
#ifndef ESOCK_MPA_H
#define ESOCK_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <esock/export.h>
#include <esock/term.h>
#ifdef ESOCK_BUILDING
#include "mpa/mpa_state.h" /* the state structs' fields, for the codecs and the tree */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Start frames (mpa/mpa_startup.c, mpa/mpa_negotiate.c) ==== */

#define ESOCK_MPA_KEY_LEN 16
#define ESOCK_MPA_HDR_LEN 20      /* key, flags, rev, PD_Length */
#define ESOCK_MPA_PD_MAX 512      /* RFC 5044 limit on PD_Length */
#define ESOCK_MPA_PD_MAX_SIW 256  /* what Linux siw (and iw_cxgb4) accept */
#define ESOCK_MPA_IRD_ORD_LEN 4   /* RFC 6581 word at the start of PD */
#define ESOCK_MPA_IRD_ORD_MAX 0x3fff
#define ESOCK_MPA_FRAME_MAX (ESOCK_MPA_HDR_LEN + ESOCK_MPA_PD_MAX)

/* Flag octet (offset 16). */
#define ESOCK_MPA_FLAG_M 0x80   /* sender wants to receive markers */
#define ESOCK_MPA_FLAG_C 0x40   /* CRC */
#define ESOCK_MPA_FLAG_R 0x20   /* reject (Reply only) */
#define ESOCK_MPA_FLAG_S 0x10   /* RFC 6581 enhanced connection establishment */
#define ESOCK_MPA_FLAG_RES 0x0f /* reserved: send 0, ignore on receive */

/* RFC 6581 ready-to-receive (RTR) message types, as a bit mask. */
enum esock_mpa_rtr {
	ESOCK_MPA_RTR_SEND = 0x1,  /* zero-length Send (B bit) */
	ESOCK_MPA_RTR_WRITE = 0x2, /* zero-length RDMA Write (C bit) */
	ESOCK_MPA_RTR_READ = 0x4,  /* zero-length RDMA Read (D bit) */
};

/*
 * One MPA Request or Reply in host order.  |pd| is the ULP's private data
 * (after the IRD/ORD word when enhanced) and is borrowed: after decode it
 * points into the decoded buffer.
 */
struct esock_mpa_frame {
	bool reply;    /* Reply key (else Request key) */
	bool markers;  /* M */
	bool crc;      /* C */
	bool reject;   /* R */
	bool enhanced; /* S; the IRD/ORD word is present when also rev == 2 */
	uint8_t res;   /* reserved flag bits as received (low 4 bits) */
	uint8_t rev;   /* 0, 1 or 2 */
	/* RFC 6581 IRD/ORD word (meaningful when enhanced && rev == 2). */
	bool p2p;      /* A: peer-to-peer / RTR mode */
	uint8_t rtr;   /* enum esock_mpa_rtr bits (B, C, D) */
	uint16_t ird;  /* 14 bits */
	uint16_t ord;  /* 14 bits */
	const uint8_t *pd;
	uint16_t pd_len;
};

/* True when |f| carries the RFC 6581 IRD/ORD word. */
static inline bool esock_mpa_frame_has_ird_ord(const struct esock_mpa_frame *f)
{
	return f->enhanced && f->rev >= 2;
}

/* Encoded length of |f| (20 + PD_Length). */
ESOCK_EXPORT size_t esock_mpa_frame_len(const struct esock_mpa_frame *f);

/*
 * esock_mpa_frame_encode writes |f| into |buf| (|cap| octets).
 * Returns the frame length, or
 *   -EINVAL   R set in a Request, IRD/ORD above 0x3FFF, RTR bits outside
 *             the mask, rev > 2, or pd_len > 0 with pd NULL;
 *   -EMSGSIZE PD_Length (IRD/ORD word included) would exceed 512;
 *   -ENOBUFS  |cap| too small.
 */
ESOCK_EXPORT ssize_t esock_mpa_frame_encode(const struct esock_mpa_frame *f, uint8_t *buf,
					    size_t cap);

/*
 * esock_mpa_frame_need tells how many octets the start frame at |buf| has
 * in total: 20 while fewer than 20 are present, then 20 + PD_Length.
 * Lets an engine read exactly one frame and leave what follows.
 */
ESOCK_EXPORT size_t esock_mpa_frame_need(const uint8_t *buf, size_t len);

/*
 * esock_mpa_frame_decode parses the start frame at |buf| (|len| octets,
 * borrowed; f->pd points into it).  |reply| says which key is expected;
 * |pd_max| caps PD_Length (0 means ESOCK_MPA_PD_MAX).  Octets after the frame
 * are not looked at: they belong to the FPDU stream.
 *
 * Returns the frame length consumed, or (with |term| set to LLP / MPA /
 * "invalid MPA Request or Reply", except for -ENODATA)
 *   -ENODATA          truncated: fewer than esock_mpa_frame_need() octets;
 *   -EBADMSG          wrong key (including a Reply key where a Request was
 *                     expected and vice versa);
 *   -EPROTONOSUPPORT  revision above 2;
 *   -EMSGSIZE         PD_Length above |pd_max|;
 *   -EPROTO           inconsistent: R=1 in a Request, or enhanced revision 2
 *                     with PD_Length < 4.
 */
ESOCK_EXPORT ssize_t esock_mpa_frame_decode(struct esock_mpa_frame *f, bool reply,
					    const uint8_t *buf, size_t len, size_t pd_max,
					    struct esock_term *term);

/* What one side is willing to do; the input of negotiation. */
struct esock_mpa_policy {
	uint8_t rev;           /* 1, or 2 for RFC 6581 (default when 0: 2) */
	bool crc;              /* ask for CRC (C=1) */
	bool markers_rx;       /* ask the peer to send markers (M=1) */
	bool markers_tx;       /* able to send markers when the peer asks */
	bool p2p;              /* initiator: request RTR mode; responder: allow it */
	uint8_t rtr;           /* RTR types we can send (initiator) / accept (responder) */
	uint16_t ird, ord;     /* our inbound / outbound Read queue depths */
	const uint8_t *pd;     /* ULP private data (borrowed) */
	uint16_t pd_len;
	uint16_t pd_max;       /* largest PD we accept (0: 512) */
	bool siw_compat;       /* interop profile for Linux siw peers (see docs) */
	/*
	 * Initiator with p2p: a revision 1 Reply (no RFC 6581 word) is taken
	 * without RTR mode instead of refused; the caller then sends the first
	 * FPDU itself (RFC 5044: the responder waits for it).
	 */
	bool p2p_optional;
};

/* The outcome of negotiation: how this side runs the connection. */
struct esock_mpa_params {
	uint8_t rev;       /* revision in use */
	bool enhanced;     /* RFC 6581 word exchanged */
	bool crc;          /* CRC generated and checked, both directions */
	bool markers_tx;   /* we insert markers (the peer set M) */
	bool markers_rx;   /* the peer inserts markers (we set M) */
	bool p2p;          /* RTR mode */
	uint8_t rtr;       /* the one chosen RTR type, 0 when none */
	uint16_t ird, ord; /* ours after adaptation: ord <= peer_ird */
	uint16_t peer_ird, peer_ord;
};

/* Builds the initiator's Request from |pol|.  Returns 0 or -EINVAL. */
ESOCK_EXPORT int esock_mpa_request_build(const struct esock_mpa_policy *pol,
					 struct esock_mpa_frame *req);

/*
 * esock_mpa_reply_build decides, as responder, on the decoded Request |req|:
 * fills the Reply |rep| to send and, on acceptance, |out|.  rep->pd borrows
 * pol->pd.  Returns 0 when accepted, or -ECONNREFUSED when |rep| is a reject
 * (R=1), with the reason in |term| (LLP / MPA: 0x04 markers we cannot send,
 * 0x07 no acceptable RTR type).
 */
ESOCK_EXPORT int esock_mpa_reply_build(const struct esock_mpa_policy *pol,
				       const struct esock_mpa_frame *req,
				       struct esock_mpa_frame *rep, struct esock_mpa_params *out,
				       struct esock_term *term);

/*
 * esock_mpa_reply_check judges, as initiator, the decoded Reply |rep| to our
 * Request |req|.  Returns 0 and fills |out|, or
 *   -ECONNREFUSED  R=1: the peer rejected (no Terminate is due);
 *   -EPROTO        the Reply is unacceptable; |term| holds the LLP / MPA code
 *                  for the Terminate: 0x04 bad frame (revision above ours,
 *                  markers we cannot send), 0x06 insufficient IRD, 0x07 no
 *                  matching RTR.
 */
ESOCK_EXPORT int esock_mpa_reply_check(const struct esock_mpa_policy *pol,
				       const struct esock_mpa_frame *req,
				       const struct esock_mpa_frame *rep,
				       struct esock_mpa_params *out, struct esock_term *term);

/* ==== end of start frames ==== */

/* ==== FPDU framing (mpa/mpa_tx.c, mpa/mpa_rx.c) ==== */

#define ESOCK_MPA_MARKER_INTERVAL 512 /* stream octets from marker to marker */
#define ESOCK_MPA_MARKER_LEN 4
#define ESOCK_MPA_LEN_LEN 2           /* the ULPDU_Length field */
#define ESOCK_MPA_CRC_LEN 4
#define ESOCK_MPA_ULPDU_MAX 65535
#define ESOCK_MPA_TX_PIECES_MAX 16    /* iovec entries of one ULPDU */
#define ESOCK_MPA_MARKERS_MAX 132     /* markers one FPDU can span */
#define ESOCK_MPA_TX_IOV_MAX (ESOCK_MPA_TX_PIECES_MAX + 3 + 2 * ESOCK_MPA_MARKERS_MAX)
#define ESOCK_MPA_RX_PEEK_MAX 64      /* header-first mode: octets gathered */

/* PAD octets after a ULPDU of |ulpdu_len| octets (RFC 5044 §4.1). */
static inline size_t esock_mpa_pad_len(size_t ulpdu_len)
{
	return (4 - ((ulpdu_len + ESOCK_MPA_LEN_LEN) & 3)) & 3;
}

/*
 * esock_mpa_mulpdu gives the largest ULPDU that keeps one FPDU within one TCP
 * segment of |emss| octets (RFC 5044 §4.5): EMSS - (6 + 4 * ceil(EMSS / 512)
 * + EMSS mod 4) with markers, EMSS - (6 + EMSS mod 4) without.  Returns 0
 * when |emss| is too small to carry any ULPDU; never more than 65535.
 */
ESOCK_EXPORT size_t esock_mpa_mulpdu(uint32_t emss, bool markers);

/*
 * esock_mpa_fpdu_len gives the wire length of an FPDU carrying |ulpdu_len|
 * octets that starts at stream position |pos| (markers counted when on).
 */
ESOCK_EXPORT size_t esock_mpa_fpdu_len(size_t ulpdu_len, bool markers, uint32_t pos);

/*
 * Transmit state of one direction: builds one FPDU at a time as a plan (an
 * iovec over the caller's ULPDU pieces and scratch octets held here) for the
 * engine to writev().  Caller-allocated; no allocation, no copy of payload.
 * Its contents are the codec's: only its size is part of the ABI.
 */
#define ESOCK_MPA_TX_WORDS 768 /* its size, fixed: part of the ABI */
struct esock_mpa_tx {
#ifdef ESOCK_BUILDING
	union {
		ESOCK_MPA_TX_FIELDS; /* (the codec's own view: mpa/mpa_state.h) */
		uint64_t esock_private_[ESOCK_MPA_TX_WORDS];
	};
#else
	uint64_t esock_private_[ESOCK_MPA_TX_WORDS];
#endif
};

/*
 * esock_mpa_tx_init prepares |tx|.  |pos| is the number of octets this side
 * has sent in full-operation phase so far (0 for a new connection): markers
 * sit at positions that are multiples of 512 counted from there.  FPDUs are
 * 4-octet multiples, so |pos| is a multiple of 4 whenever markers are on.
 */
ESOCK_EXPORT void esock_mpa_tx_init(struct esock_mpa_tx *tx, bool crc, bool markers,
				    uint32_t pos);

/*
 * esock_mpa_tx_build plans the FPDU for the ULPDU given as |cnt| pieces
 * |ulpdu| (the DDP header and payload; keeps the memory until the plan is
 * fully written, see esock_mpa_tx_advance).  Computes the CRC now, so the
 * pieces must not change afterwards.
 *
 * Returns the FPDU's wire length, or
 *   -EBUSY    the previous plan is not fully written;
 *   -EINVAL   |cnt| outside 0..ESOCK_MPA_TX_PIECES_MAX;
 *   -EMSGSIZE the ULPDU exceeds 65535 octets, or (with markers) a marker
 *             would sit further than 65535 octets from its FPDU header.
 */
ESOCK_EXPORT ssize_t esock_mpa_tx_build(struct esock_mpa_tx *tx, const struct iovec *ulpdu,
					int cnt);

/*
 * esock_mpa_tx_frame writes the whole FPDU for |ulpdu| into |out| (|cap|
 * octets), contiguous: the copying alternative to esock_mpa_tx_build for
 * small ULPDUs, whose pieces then cost neither an iovec entry each nor a
 * CRC call each.  Markers off only.  Same octets on the wire as a plan.
 * Returns the FPDU's length, or -EBUSY (a plan is not fully written),
 * -EINVAL (markers on, bad |cnt|), -EMSGSIZE, -ENOBUFS (|cap| too small).
 */
ESOCK_EXPORT ssize_t esock_mpa_tx_frame(struct esock_mpa_tx *tx, const struct iovec *ulpdu,
					int cnt, uint8_t *out, size_t cap);

/*
 * esock_mpa_tx_wrap frames the ULPDU |ulpdu| (|cnt| pieces) where it lies,
 * markers off, without a plan: the MPA length into |head| (2 octets), pad
 * and CRC into |tail| (ESOCK_MPA_CRC_LEN + 3 octets of room); the FPDU on
 * the wire is |head|, the pieces, then the tail.  The copy-free twin of
 * esock_mpa_tx_frame for a caller that writes the pieces itself.  Same
 * octets on the wire as a plan.  Returns the tail's length, or -EBUSY (a
 * plan is not fully written), -EINVAL (markers on, bad |cnt|), -EMSGSIZE.
 */
ESOCK_EXPORT ssize_t esock_mpa_tx_wrap(struct esock_mpa_tx *tx, const struct iovec *ulpdu, int cnt,
				       uint8_t *head, uint8_t *tail);

/* The unwritten rest of the current plan (|*cnt| entries; NULL when done). */
ESOCK_EXPORT const struct iovec *esock_mpa_tx_iov(const struct esock_mpa_tx *tx, int *cnt);

/*
 * esock_mpa_tx_advance records that |n| more octets of the plan were
 * written (a short writev resumes where it stopped).  Returns the octets
 * still to write, or -EINVAL when |n| exceeds them.
 */
ESOCK_EXPORT ssize_t esock_mpa_tx_advance(struct esock_mpa_tx *tx, size_t n);

/*
 * esock_mpa_tx_flatten copies the unwritten rest of the plan into |buf|
 * (|cap| octets) without advancing.  For tools and tests; the engine uses
 * the iovec.  Returns the octets copied or -ENOBUFS.
 */
ESOCK_EXPORT ssize_t esock_mpa_tx_flatten(const struct esock_mpa_tx *tx, uint8_t *buf,
					  size_t cap);

/* Receive events (one per feed call at most). */
enum esock_mpa_ev_type {
	ESOCK_MPA_EV_NONE = 0,
	ESOCK_MPA_EV_ULPDU, /* buffered mode (or cfg.whole): data/len = whole ULPDU, CRC
			     * verified; in the rx buffer, or in the input when the FPDU
			     * came whole */
	ESOCK_MPA_EV_HDR,   /* header-first: ulpdu_len known; data/len = first octets */
	ESOCK_MPA_EV_DATA,  /* header-first: data/len = next ULPDU octets (in the input) */
	ESOCK_MPA_EV_END,   /* header-first: FPDU complete, CRC verified */
};

/* Event flags (tolerant mode reports instead of failing). */
#define ESOCK_MPA_EVF_CRC_BAD 0x1    /* CRC checked and wrong */
#define ESOCK_MPA_EVF_MARKER_BAD 0x2 /* a marker's FPDUPTR disagreed */

struct esock_mpa_ev {
	enum esock_mpa_ev_type type;
	const uint8_t *data; /* borrowed: valid until the next feed and while the input is */
	size_t len;
	uint16_t ulpdu_len;  /* of the current FPDU */
	/* With EV_ULPDU and EV_END: */
	uint8_t flags;       /* ESOCK_MPA_EVF_* */
	uint16_t markers;    /* markers inside this FPDU */
	uint32_t crc_rx;     /* the CRC field as received (value, not octet order) */
	uint32_t crc_calc;   /* the CRC computed over the FPDU */
};

struct esock_mpa_rx_cfg {
	bool crc;            /* check CRCs (else the field is ignored) */
	bool markers;        /* the peer inserts markers (we set M) */
	uint16_t max_ulpdu;  /* larger ULPDU_Length is an error (0: 65535) */
	uint32_t pos;        /* stream position of the first octet fed */
	uint8_t *buf;        /* buffered mode: ULPDU buffer (keeps; >= max_ulpdu octets) */
	size_t buf_len;
	size_t peek;         /* header-first mode (buf NULL): octets for EV_HDR, <= 64 */
	bool tolerant;       /* analysers: report CRC and marker errors in ev.flags and go on */
	bool whole;          /* header-first mode: an FPDU wholly in the input (no markers)
			      * comes as one EV_ULPDU, CRC verified, instead of HDR/DATA/END */
};

/*
 * Receive state of one direction.  Caller-allocated (embed it or allocate
 * it); its contents are the codec's: only its size is part of the ABI.
 */
#define ESOCK_MPA_RX_WORDS 32 /* its size, fixed: part of the ABI */
struct esock_mpa_rx {
#ifdef ESOCK_BUILDING
	union {
		ESOCK_MPA_RX_FIELDS; /* (the codec's own view: mpa/mpa_state.h) */
		uint64_t esock_private_[ESOCK_MPA_RX_WORDS];
	};
#else
	uint64_t esock_private_[ESOCK_MPA_RX_WORDS];
#endif
};

/*
 * esock_mpa_rx_init prepares |rx| from |cfg| (copied; cfg->buf is kept).
 * Returns 0, or -EINVAL (buffer shorter than max_ulpdu, peek above 64).
 */
ESOCK_EXPORT int esock_mpa_rx_init(struct esock_mpa_rx *rx, const struct esock_mpa_rx_cfg *cfg);

/*
 * esock_mpa_rx_feed takes stream octets |data| (|len|, borrowed) in any
 * split, removes and checks markers, checks CRCs, and stops after at most one
 * event (|ev|, type NONE when none).  Returns the octets consumed; feed the
 * rest again after handling the event.  On a terminal error returns, now and
 * on every later call, one of (with esock_mpa_rx_term() filled):
 *   -EBADMSG   CRC mismatch (LLP / MPA 0x02);
 *   -EPROTO    a marker's FPDUPTR disagrees with the framing (LLP / MPA 0x03);
 *   -EMSGSIZE  ULPDU_Length above max_ulpdu (LLP / MPA 0x03: no closer code).
 * With cfg.tolerant the first two only set ESOCK_MPA_EVF_* in the FPDU's
 * final event and parsing goes on (for analysers such as ddpdump).
 */
ESOCK_EXPORT ssize_t esock_mpa_rx_feed(struct esock_mpa_rx *rx, const uint8_t *data,
				       size_t len, struct esock_mpa_ev *ev);

/* The Terminate reason after a terminal error (NULL while healthy). */
ESOCK_EXPORT const struct esock_term *esock_mpa_rx_term(const struct esock_mpa_rx *rx);

/* True between FPDUs (no partial FPDU held). */
ESOCK_EXPORT bool esock_mpa_rx_idle(const struct esock_mpa_rx *rx);

/*
 * esock_mpa_rx_peek copies into |out| up to |want| octets of the FPDU stream
 * held by |data| (the next |len| stream octets, not fed yet), leaving out
 * the markers among them: the next FPDU's length field and header as they
 * will be parsed, known before they are taken (a receiver deciding whether
 * it has a buffer for the next message).  Returns the octets copied.
 */
ESOCK_EXPORT size_t esock_mpa_rx_peek(const struct esock_mpa_rx *rx, const uint8_t *data,
				      size_t len, uint8_t *out, size_t want);

/* ==== end of FPDU framing ==== */

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_MPA_H */
