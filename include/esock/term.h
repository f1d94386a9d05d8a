/* SPDX-License-Identifier: MIT */
/*
 * The Terminate vocabulary shared by every layer: error layer, error type and
 * error code as RFC 5040 §4.8 (Terminate header) carries them, with the DDP
 * codes of RFC 5041 §7, the MPA codes of RFC 5044 §8 and the RFC 6581
 * additions.  A failing codec call fills a struct esock_term; that struct is
 * exactly what the RDMAP Terminate encoder (esock/rdmap.h) consumes.
 * Tagged, untagged, RDMAP and LLP tables stay separate, as on the wire.
 */
#ifndef ESOCK_TERM_H
#define ESOCK_TERM_H

#include <stdbool.h>
#include <stdint.h>

#include <esock/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Terminate "Layer" nibble. */
enum esock_term_layer {
	ESOCK_TERM_LAYER_RDMAP = 0,
	ESOCK_TERM_LAYER_DDP = 1,
	ESOCK_TERM_LAYER_LLP = 2, /* MPA (and below) */
};

/* EType for Layer RDMAP (RFC 5040 §4.8). */
enum esock_term_rdmap_etype {
	ESOCK_TERM_RDMAP_ETYPE_CATASTROPHIC = 0, /* local catastrophic error */
	ESOCK_TERM_RDMAP_ETYPE_PROTECTION = 1,   /* remote protection error */
	ESOCK_TERM_RDMAP_ETYPE_OPERATION = 2,    /* remote operation error */
};

/* Error codes for Layer RDMAP. */
enum esock_term_rdmap_ecode {
	ESOCK_TERM_RDMAP_INV_STAG = 0x00,
	ESOCK_TERM_RDMAP_BASE_BOUNDS = 0x01,
	ESOCK_TERM_RDMAP_ACCESS = 0x02,
	ESOCK_TERM_RDMAP_STAG_NOT_ASSOC = 0x03,
	ESOCK_TERM_RDMAP_TO_WRAP = 0x04,
	ESOCK_TERM_RDMAP_VERSION = 0x05,
	ESOCK_TERM_RDMAP_OPCODE = 0x06,
	ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM = 0x07,
	ESOCK_TERM_RDMAP_CATASTROPHIC_GLOBAL = 0x08,
	ESOCK_TERM_RDMAP_CANT_INVALIDATE = 0x09,
	ESOCK_TERM_RDMAP_UNSPECIFIED = 0xff,
};

/* EType for Layer DDP (RFC 5041 §7). */
enum esock_term_ddp_etype {
	ESOCK_TERM_DDP_ETYPE_CATASTROPHIC = 0,
	ESOCK_TERM_DDP_ETYPE_TAGGED = 1,
	ESOCK_TERM_DDP_ETYPE_UNTAGGED = 2,
	ESOCK_TERM_DDP_ETYPE_RSVD_LLP = 3, /* reserved for use by the LLP */
};

/* DDP local catastrophic error code (EType 0). */
#define ESOCK_TERM_DDP_CATASTROPHIC 0x00

/* Error codes for DDP EType 1 (tagged buffer). */
enum esock_term_ddp_tagged_ecode {
	ESOCK_TERM_DDP_T_INV_STAG = 0x00,
	ESOCK_TERM_DDP_T_BASE_BOUNDS = 0x01,
	ESOCK_TERM_DDP_T_STAG_NOT_ASSOC = 0x02,
	ESOCK_TERM_DDP_T_TO_WRAP = 0x03,
	ESOCK_TERM_DDP_T_VERSION = 0x04,
};

/* Error codes for DDP EType 2 (untagged buffer). */
enum esock_term_ddp_untagged_ecode {
	ESOCK_TERM_DDP_U_INV_QN = 0x01,
	ESOCK_TERM_DDP_U_NO_BUF = 0x02,    /* invalid MSN: no buffer available */
	ESOCK_TERM_DDP_U_MSN_RANGE = 0x03, /* invalid MSN: range not valid */
	ESOCK_TERM_DDP_U_INV_MO = 0x04,
	ESOCK_TERM_DDP_U_TOO_LONG = 0x05, /* message too long for the buffer */
	ESOCK_TERM_DDP_U_VERSION = 0x06,
};

/* EType for Layer LLP: only MPA is defined. */
#define ESOCK_TERM_LLP_ETYPE_MPA 0

/* Error codes for Layer LLP / EType MPA (RFC 5044 §8, RFC 6581). */
enum esock_term_llp_ecode {
	ESOCK_TERM_LLP_CONN_LOST = 0x01,
	ESOCK_TERM_LLP_CRC = 0x02,
	ESOCK_TERM_LLP_MARKER = 0x03, /* marker and ULPDU_Length disagree */
	ESOCK_TERM_LLP_BAD_FRAME = 0x04, /* invalid MPA Request or Reply */
	ESOCK_TERM_LLP_CATASTROPHIC = 0x05, /* RFC 6581 */
	ESOCK_TERM_LLP_IRD = 0x06,          /* RFC 6581: insufficient IRD */
	ESOCK_TERM_LLP_NO_RTR = 0x07,       /* RFC 6581: no matching RTR */
};

/* Header-control flags of the Terminate (which headers are attached). */
#define ESOCK_TERM_HDRCT_M 0x4 /* DDP Segment Length valid */
#define ESOCK_TERM_HDRCT_D 0x2 /* DDP header included */
#define ESOCK_TERM_HDRCT_R 0x1 /* RDMAP (Read Request) header included */

/*
 * Why a stream failed.  First error wins: a codec that already holds a valid
 * esock_term does not overwrite it.  |hdrct| says which offending headers the
 * Terminate should carry; the bytes themselves travel in the RDMAP Terminate
 * message (struct esock_rdmap_term).
 */
struct esock_term {
	bool valid;
	uint8_t layer; /* enum esock_term_layer */
	uint8_t etype;
	uint8_t ecode;
	uint8_t hdrct; /* ESOCK_TERM_HDRCT_* */
};

/* Records an error unless one is already recorded (first error wins). */
static inline void esock_term_set(struct esock_term *t, uint8_t layer, uint8_t etype,
				  uint8_t ecode, uint8_t hdrct)
{
	if (t && !t->valid) {
		t->valid = true;
		t->layer = layer;
		t->etype = etype;
		t->ecode = ecode;
		t->hdrct = hdrct;
	}
}

/*
 * Human-readable text for a (layer, etype, ecode) triple, e.g.
 * "DDP untagged: invalid MSN - no buffer available".  Never NULL; unknown
 * values give "... unknown (0xNN)".  Implemented in rdmap/rdmap_names.c,
 * shared by logs and ddpdump.
 */
ESOCK_EXPORT const char *esock_term_str(uint8_t layer, uint8_t etype, uint8_t ecode);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_TERM_H */
