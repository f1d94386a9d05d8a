/* SPDX-License-Identifier: MIT */
/*
 * RDMAP (RFC 5040) and its extensions (RFC 7306): the control octet, the
 * opcode table, the RDMA Read Request header, the Terminate message (RFC
 * order and the order Linux siw emits), Atomic Request/Response and Immediate
 * Data headers.  The decoder takes one whole DDP segment (an MPA ULPDU) and
 * validates it with exact Terminate codes.  Pure code over memory.
 */
#ifndef ESOCK_RDMAP_H
#define ESOCK_RDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <esock/ddp.h>
#include <esock/export.h>
#include <esock/term.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ESOCK_RDMAP_VERSION 1
#define ESOCK_RDMAP_CTRL_RV 0xc0
#define ESOCK_RDMAP_CTRL_RSVD 0x30
#define ESOCK_RDMAP_CTRL_OPCODE 0x0f

enum esock_rdmap_opcode {
	ESOCK_RDMAP_WRITE = 0x0,
	ESOCK_RDMAP_READ_REQ = 0x1,
	ESOCK_RDMAP_READ_RESP = 0x2,
	ESOCK_RDMAP_SEND = 0x3,
	ESOCK_RDMAP_SEND_INV = 0x4,
	ESOCK_RDMAP_SEND_SE = 0x5,
	ESOCK_RDMAP_SEND_SE_INV = 0x6,
	ESOCK_RDMAP_TERMINATE = 0x7,
	ESOCK_RDMAP_IMM_DATA = 0x8,     /* RFC 7306 */
	ESOCK_RDMAP_IMM_DATA_SE = 0x9,  /* RFC 7306 */
	ESOCK_RDMAP_ATOMIC_REQ = 0xa,   /* RFC 7306 */
	ESOCK_RDMAP_ATOMIC_RESP = 0xb,  /* RFC 7306 */
};

/* Extra header lengths after the DDP header. */
#define ESOCK_RDMAP_READ_REQ_HLEN 28
#define ESOCK_RDMAP_TERM_HLEN 4      /* layer/etype, code, header control */
#define ESOCK_RDMAP_TERM_SEGLEN_LEN 2 /* DDP Segment Length, with copied headers */
#define ESOCK_RDMAP_IMM_HLEN 8
#define ESOCK_RDMAP_ATOMIC_REQ_HLEN 52
#define ESOCK_RDMAP_ATOMIC_RESP_HLEN 12
/* Largest DDP + RDMAP header (untagged + Atomic Request). */
#define ESOCK_RDMAP_HDR_MAX (ESOCK_DDP_UNTAGGED_HLEN + ESOCK_RDMAP_ATOMIC_REQ_HLEN)

/* Facts about one opcode. */
struct esock_rdmap_opinfo {
	const char *name;
	bool tagged;       /* carried in the tagged buffer model */
	uint8_t qn;        /* untagged queue (meaningless when tagged) */
	uint8_t hlen;      /* RDMAP header after the DDP header (Terminate: minimum) */
	bool payload;      /* may carry ULP payload */
	bool single;       /* always one segment (L=1, MO 0) */
	bool inval;        /* RsvdULP[8:39] carries the STag to invalidate */
	bool rfc7306;
};

/* Table entry for |opcode|, or NULL for a reserved opcode (0xC-0xF). */
ESOCK_EXPORT const struct esock_rdmap_opinfo *esock_rdmap_opinfo(uint8_t opcode);

/* The RDMAP control octet for |opcode| (version 1). */
static inline uint8_t esock_rdmap_ctrl(uint8_t opcode)
{
	return (uint8_t)(ESOCK_RDMAP_VERSION << 6 | (opcode & ESOCK_RDMAP_CTRL_OPCODE));
}

/* RDMA Read Request header (RFC 5040 §4.4). */
struct esock_rdmap_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

/* RFC 7306 atomic operation codes. */
enum esock_rdmap_atomic_op {
	ESOCK_RDMAP_ATOMIC_FETCH_ADD = 0x0,
	ESOCK_RDMAP_ATOMIC_CMP_SWAP = 0x2,
};

struct esock_rdmap_atomic_req {
	uint8_t op;          /* enum esock_rdmap_atomic_op (low 4 bits on the wire) */
	uint32_t rsvd;       /* the 28 reserved bits as received */
	uint32_t req_id;
	uint32_t stag;       /* remote STag */
	uint64_t to;         /* remote tagged offset */
	uint64_t swap_add;   /* Add Data / Swap Data */
	uint64_t swap_add_mask;
	uint64_t compare;
	uint64_t compare_mask;
};

struct esock_rdmap_atomic_resp {
	uint32_t req_id;     /* Original Request Identifier */
	uint64_t orig;       /* Original Remote Data Value */
};

/* Terminate control bit layout. */
enum esock_rdmap_term_order {
	ESOCK_RDMAP_TERM_RFC = 0,  /* RFC 5040: Layer in the high nibble, M/D/R in the top bits */
	ESOCK_RDMAP_TERM_SIW = 1,  /* Linux siw on little-endian: Layer low nibble, M/D/R 0x01/0x02/0x04 */
	ESOCK_RDMAP_TERM_AUTO = 2, /* decode only: pick by plausibility, report which */
};

/* A Terminate message: the reason plus the copied offending headers. */
struct esock_rdmap_term {
	struct esock_term t;       /* layer, etype, ecode, hdrct (M/D/R) */
	uint8_t order;             /* bit order seen (decode) or to write (encode) */
	uint16_t rsvd;             /* the 13 reserved header-control bits as received */
	uint16_t ddp_seg_len;      /* meaningful when M */
	uint8_t ddp_hdr_len;       /* 0, 14 or 18 (when D) */
	uint8_t ddp_hdr[ESOCK_DDP_UNTAGGED_HLEN];
	uint8_t rdmap_hdr[ESOCK_RDMAP_READ_REQ_HLEN]; /* when R */
};

/* One decoded RDMAP message segment. */
struct esock_rdmap_msg {
	struct esock_ddp_hdr ddp;
	uint8_t rv;          /* RDMAP version */
	uint8_t rsvd;        /* reserved control bits */
	uint8_t opcode;
	uint32_t inval_stag; /* Send with Invalidate variants */
	union {
		struct esock_rdmap_read_req read_req;
		struct esock_rdmap_term term;
		struct esock_rdmap_atomic_req atomic_req;
		struct esock_rdmap_atomic_resp atomic_resp;
		uint64_t imm;    /* Immediate Data */
	} u;
	const uint8_t *payload; /* borrowed from the decoded segment */
	size_t payload_len;
};

struct esock_rdmap_decode_opts {
	bool no_rfc7306;     /* treat opcodes 0x8-0xB as unexpected (peer without RFC 7306) */
	uint8_t term_order;  /* enum esock_rdmap_term_order (AUTO recommended) */
};

/*
 * esock_rdmap_msg_init sets up |m| for sending |opcode|: DDP model and QN
 * from the table, DDP and RDMAP version 1, L=1, everything else zero.
 * Returns 0 or -EINVAL for a reserved opcode.
 */
ESOCK_EXPORT int esock_rdmap_msg_init(struct esock_rdmap_msg *m, uint8_t opcode);

/*
 * esock_rdmap_plain_send recognizes the commonest segment of a stream in one
 * look: a Send (no Solicited Event, no Invalidate) that is its whole message
 * (untagged, L set, QN 0, MO 0, DDP and RDMAP version 1, reserved fields and
 * bits 0) with at least one payload octet.  Returns the payload's offset in
 * |seg| (ESOCK_DDP_UNTAGGED_HLEN) with its MSN in |*msn|, or 0 for anything
 * else, which esock_rdmap_decode must then judge (a segment this accepts,
 * the decoder accepts alike).
 */
ESOCK_EXPORT size_t esock_rdmap_plain_send(const uint8_t *seg, size_t len, uint32_t *msn);

/*
 * The sending twin: writes the header of such a Send with |msn| into |hdr|
 * (ESOCK_DDP_UNTAGGED_HLEN octets), as esock_rdmap_hdr_encode would.
 */
ESOCK_EXPORT void esock_rdmap_plain_send_hdr(uint8_t *hdr, uint32_t msn);

/*
 * esock_rdmap_decode decodes and validates one DDP segment |seg| (|len|
 * octets, borrowed; payload points into it).  |o| may be NULL (RFC 7306 known,
 * Terminate order AUTO).  Returns the header length (DDP + RDMAP), or a
 * negative code with |term| set:
 *   -EBADMSG  shorter than its DDP header or the opcode's header (LLP / MPA
 *             0x03, as siw), or Terminate copied headers cut short;
 *   -EPROTO   DDP version (DDP tagged 0x04 / untagged 0x06); RDMAP version
 *             (RDMAP / remote operation 0x05); reserved or (with no_rfc7306)
 *             extension opcode, or an opcode in the wrong buffer model
 *             (RDMAP / remote operation 0x06); wrong QN for the opcode (DDP
 *             untagged 0x01); a single-segment message (Read Request,
 *             Terminate, atomics, Immediate Data) with MO != 0 (DDP untagged
 *             0x04), without L or with extra payload (RDMAP / remote
 *             operation 0x07).
 */
ESOCK_EXPORT ssize_t esock_rdmap_decode(struct esock_rdmap_msg *m, const uint8_t *seg, size_t len,
					const struct esock_rdmap_decode_opts *o,
					struct esock_term *term);

/*
 * esock_rdmap_hdr_encode writes the DDP header and RDMAP header of |m| into
 * |buf| (|cap| octets; ESOCK_RDMAP_HDR_MAX + copied Terminate headers is
 * always enough).  The RDMAP control octet comes from rv/rsvd/opcode; the
 * payload is not written (it follows in the caller's iovec).  Returns the
 * header length, or -EINVAL (reserved opcode, Terminate with a copied DDP
 * header length other than 14/18), -ENOBUFS.
 */
ESOCK_EXPORT ssize_t esock_rdmap_hdr_encode(const struct esock_rdmap_msg *m, uint8_t *buf, size_t cap);

/*
 * esock_rdmap_term_build fills |out| for a Terminate about the offending
 * segment |seg| (|len| octets, borrowed; may be NULL): the reason |t|; the
 * DDP header copy when t->hdrct has D and the segment holds one (with the
 * segment length when M); the Read Request header copy when R and the
 * segment is a whole Read Request.  Flags whose header is not available are
 * cleared.  Order is RFC.
 */
ESOCK_EXPORT void esock_rdmap_term_build(struct esock_rdmap_term *out, const struct esock_term *t,
					 const uint8_t *seg, size_t len);

/*
 * esock_rdmap_term_msg builds the whole Terminate ULPDU (DDP untagged header
 * QN 2 with |msn| — 1 for the only Terminate of a stream — MO 0, L=1, then
 * the Terminate header and copies) into |buf|.  Returns its length or
 * -ENOBUFS / -EINVAL.
 */
ESOCK_EXPORT ssize_t esock_rdmap_term_msg(const struct esock_rdmap_term *tm, uint32_t msn,
					  uint8_t *buf, size_t cap);

/* Names for logs and ddpdump ("RDMA Write", "FetchAdd", ...); never NULL. */
ESOCK_EXPORT const char *esock_rdmap_opcode_name(uint8_t opcode);
ESOCK_EXPORT const char *esock_rdmap_atomic_name(uint8_t op);
ESOCK_EXPORT const char *esock_term_layer_name(uint8_t layer);
ESOCK_EXPORT const char *esock_term_etype_name(uint8_t layer, uint8_t etype);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_RDMAP_H */
