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

/* ==== end of FPDU framing ==== */

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_MPA_H */
