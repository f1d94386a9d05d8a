/* SPDX-License-Identifier: MIT */
/*
 * RDMAP control octet and opcode table (RFC 5040 §4.1-4.3, RFC 7306 §6-8),
 * the RDMA Read Request header (RFC 5040 §4.4), and the whole-segment decoder
 * with its validation order: DDP header present and of version 1, RDMAP
 * version 1, opcode known and in the right buffer model and queue, opcode
 * header complete, single-segment rules.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/rdmap.h>

#include "rdmap/rdmap_internal.h"
#include "util/byteorder.h"

static const struct esock_rdmap_opinfo opinfo[12] = {
	[ESOCK_RDMAP_WRITE] = { "RDMA Write", true, 0, 0, true, false, false, false },
	[ESOCK_RDMAP_READ_REQ] = { "RDMA Read Request", false, ESOCK_DDP_QN_READ_REQ,
				   ESOCK_RDMAP_READ_REQ_HLEN, false, true, false, false },
	[ESOCK_RDMAP_READ_RESP] = { "RDMA Read Response", true, 0, 0, true, false, false, false },
	[ESOCK_RDMAP_SEND] = { "Send", false, ESOCK_DDP_QN_SEND, 0, true, false, false, false },
	[ESOCK_RDMAP_SEND_INV] = { "Send with Invalidate", false, ESOCK_DDP_QN_SEND, 0, true, false,
				   true, false },
	[ESOCK_RDMAP_SEND_SE] = { "Send with Solicited Event", false, ESOCK_DDP_QN_SEND, 0, true,
				  false, false, false },
	[ESOCK_RDMAP_SEND_SE_INV] = { "Send with Solicited Event and Invalidate", false,
				      ESOCK_DDP_QN_SEND, 0, true, false, true, false },
	[ESOCK_RDMAP_TERMINATE] = { "Terminate", false, ESOCK_DDP_QN_TERMINATE, ESOCK_RDMAP_TERM_HLEN,
				    false, true, false, false },
	[ESOCK_RDMAP_IMM_DATA] = { "Immediate Data", false, ESOCK_DDP_QN_SEND, ESOCK_RDMAP_IMM_HLEN,
				   false, true, false, true },
	[ESOCK_RDMAP_IMM_DATA_SE] = { "Immediate Data with Solicited Event", false, ESOCK_DDP_QN_SEND,
				      ESOCK_RDMAP_IMM_HLEN, false, true, false, true },
	[ESOCK_RDMAP_ATOMIC_REQ] = { "Atomic Request", false, ESOCK_DDP_QN_READ_REQ,
				     ESOCK_RDMAP_ATOMIC_REQ_HLEN, false, true, false, true },
	[ESOCK_RDMAP_ATOMIC_RESP] = { "Atomic Response", false, ESOCK_DDP_QN_ATOMIC_RESP,
				      ESOCK_RDMAP_ATOMIC_RESP_HLEN, false, true, false, true },
};

ESOCK_EXPORT const struct esock_rdmap_opinfo *esock_rdmap_opinfo(uint8_t opcode)
{
	return opcode < 12 ? &opinfo[opcode] : NULL;
}

ESOCK_EXPORT int esock_rdmap_msg_init(struct esock_rdmap_msg *m, uint8_t opcode)
{
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(opcode);

	memset(m, 0, sizeof(*m));
	if (!oi)
		return -EINVAL;
	m->opcode = opcode;
	m->rv = ESOCK_RDMAP_VERSION;
	m->ddp.tagged = oi->tagged;
	m->ddp.dv = ESOCK_DDP_VERSION;
	m->ddp.last = true;
	m->ddp.qn = oi->tagged ? 0 : oi->qn;
	return 0;
}

static void read_req_decode(struct esock_rdmap_read_req *r, const uint8_t *p)
{
	r->sink_stag = esock_get_be32(p);
	r->sink_to = esock_get_be64(p + 4);
	r->size = esock_get_be32(p + 12);
	r->src_stag = esock_get_be32(p + 16);
	r->src_to = esock_get_be64(p + 20);
}

static void read_req_encode(const struct esock_rdmap_read_req *r, uint8_t *p)
{
	esock_put_be32(p, r->sink_stag);
	esock_put_be64(p + 4, r->sink_to);
	esock_put_be32(p + 12, r->size);
	esock_put_be32(p + 16, r->src_stag);
	esock_put_be64(p + 20, r->src_to);
}

static ssize_t bad(struct esock_term *term, int rc, uint8_t layer, uint8_t etype, uint8_t ecode,
		   uint8_t hdrct)
{
	esock_term_set(term, layer, etype, ecode, hdrct);
	return rc;
}

#define HDRS (ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D)

/* Control octet, opcode table and queue checks. */
static ssize_t check_opcode(struct esock_rdmap_msg *m, const struct esock_rdmap_decode_opts *o,
			    struct esock_term *term)
{
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(m->opcode);

	if (m->rv != ESOCK_RDMAP_VERSION)
		return bad(term, -EPROTO, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
			   ESOCK_TERM_RDMAP_VERSION, HDRS);
	/* An opcode in the wrong buffer model is as unexpected as an unknown one. */
	if (!oi || (oi->rfc7306 && o->no_rfc7306) || oi->tagged != m->ddp.tagged)
		return bad(term, -EPROTO, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
			   ESOCK_TERM_RDMAP_OPCODE, HDRS);
	if (!oi->tagged && m->ddp.qn != oi->qn)
		return bad(term, -EPROTO, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED,
			   ESOCK_TERM_DDP_U_INV_QN, HDRS);
	if (oi->single && m->ddp.mo != 0)
		return bad(term, -EPROTO, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED,
			   ESOCK_TERM_DDP_U_INV_MO, HDRS);
	if (oi->single && !m->ddp.last)
		return bad(term, -EPROTO, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
			   ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, HDRS);
	return 0;
}

/* Opcode-specific header; returns its length or a negative code. */
static ssize_t decode_ext(struct esock_rdmap_msg *m, const uint8_t *p, size_t len, uint8_t order)
{
	switch (m->opcode) {
	case ESOCK_RDMAP_READ_REQ:
		read_req_decode(&m->u.read_req, p);
		return ESOCK_RDMAP_READ_REQ_HLEN;
	case ESOCK_RDMAP_TERMINATE:
		return esock_rdmap_term_hdr_decode(&m->u.term, p, len, order);
	case ESOCK_RDMAP_IMM_DATA:
	case ESOCK_RDMAP_IMM_DATA_SE:
		m->u.imm = esock_get_be64(p);
		return ESOCK_RDMAP_IMM_HLEN;
	case ESOCK_RDMAP_ATOMIC_REQ:
		esock_rdmap_atomic_req_decode(&m->u.atomic_req, p);
		return ESOCK_RDMAP_ATOMIC_REQ_HLEN;
	case ESOCK_RDMAP_ATOMIC_RESP:
		esock_rdmap_atomic_resp_decode(&m->u.atomic_resp, p);
		return ESOCK_RDMAP_ATOMIC_RESP_HLEN;
	default:
		return 0;
	}
}

/* A plain Send's first two octets. DDP: untagged, L, version 1; RDMAP: version 1, Send. */
static const uint8_t plain_head[2] = { ESOCK_DDP_CTRL_L | ESOCK_DDP_VERSION,
				       ESOCK_RDMAP_VERSION << 6 | ESOCK_RDMAP_SEND };

ESOCK_EXPORT void esock_rdmap_plain_send_hdr(uint8_t *hdr, uint32_t msn)
{
	memset(hdr, 0, ESOCK_DDP_UNTAGGED_HLEN); /* (reserved field, QN 0, MO 0) */
	memcpy(hdr, plain_head, sizeof(plain_head));
	esock_put_be32(hdr + 10, msn);
}

ESOCK_EXPORT size_t esock_rdmap_plain_send(const uint8_t *seg, size_t len, uint32_t *msn)
{
	const uint8_t *head = plain_head;

	if (len <= ESOCK_DDP_UNTAGGED_HLEN || seg[0] != head[0] || seg[1] != head[1] ||
	    esock_get_be32(seg + 2) != 0 || esock_get_be32(seg + 6) != ESOCK_DDP_QN_SEND ||
	    esock_get_be32(seg + 14) != 0)
		return 0;
	*msn = esock_get_be32(seg + 10);
	return ESOCK_DDP_UNTAGGED_HLEN;
}

ESOCK_EXPORT ssize_t esock_rdmap_decode(struct esock_rdmap_msg *m, const uint8_t *seg, size_t len,
					const struct esock_rdmap_decode_opts *o,
					struct esock_term *term)
{
	static const struct esock_rdmap_decode_opts defaults = { false, ESOCK_RDMAP_TERM_AUTO };
	const struct esock_rdmap_opinfo *oi;
	ssize_t hl, xl;

	memset(m, 0, sizeof(*m));
	o = o ? o : &defaults;
	hl = esock_ddp_hdr_decode(&m->ddp, seg, len);
	if (hl < 0) /* siw (2026 fix): ULPDU_Length shorter than the header */
		return bad(term, -EBADMSG, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA,
			   ESOCK_TERM_LLP_MARKER, 0);
	if (esock_ddp_hdr_check(&m->ddp, term) < 0)
		return -EPROTO;
	m->rv = m->ddp.ulp_ctrl >> 6;
	m->rsvd = (m->ddp.ulp_ctrl & ESOCK_RDMAP_CTRL_RSVD) >> 4;
	m->opcode = m->ddp.ulp_ctrl & ESOCK_RDMAP_CTRL_OPCODE;
	if ((xl = check_opcode(m, o, term)) < 0)
		return xl;
	oi = esock_rdmap_opinfo(m->opcode);
	if (oi->inval)
		m->inval_stag = m->ddp.ulp_word;
	if (len - (size_t)hl < oi->hlen)
		return bad(term, -EBADMSG, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA,
			   ESOCK_TERM_LLP_MARKER, 0);
	xl = decode_ext(m, seg + hl, len - (size_t)hl, o->term_order);
	if (xl < 0)
		return bad(term, (int)xl, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA,
			   ESOCK_TERM_LLP_MARKER, 0);
	hl += xl;
	m->payload = seg + hl;
	m->payload_len = len - (size_t)hl;
	if (!oi->payload && m->payload_len)
		return bad(term, -EPROTO, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
			   ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, HDRS);
	return hl;
}

ESOCK_EXPORT ssize_t esock_rdmap_hdr_encode(const struct esock_rdmap_msg *m, uint8_t *buf, size_t cap)
{
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(m->opcode);
	struct esock_ddp_hdr d = m->ddp;
	ssize_t hl, xl = 0;

	if (!oi)
		return -EINVAL;
	d.ulp_ctrl = (uint8_t)((m->rv & 3) << 6 | (m->rsvd & 3) << 4 | m->opcode);
	if (!d.tagged)
		d.ulp_word = oi->inval ? m->inval_stag : m->ddp.ulp_word;
	if ((hl = esock_ddp_hdr_encode(&d, buf, cap)) < 0)
		return hl;
	if (m->opcode == ESOCK_RDMAP_TERMINATE)
		return (xl = esock_rdmap_term_hdr_encode(&m->u.term, buf + hl, cap - (size_t)hl)) < 0 ? xl : hl + xl;
	if (cap - (size_t)hl < oi->hlen)
		return -ENOBUFS;
	if (m->opcode == ESOCK_RDMAP_READ_REQ)
		read_req_encode(&m->u.read_req, buf + hl);
	else if (m->opcode == ESOCK_RDMAP_IMM_DATA || m->opcode == ESOCK_RDMAP_IMM_DATA_SE)
		esock_put_be64(buf + hl, m->u.imm);
	else if (m->opcode == ESOCK_RDMAP_ATOMIC_REQ)
		esock_rdmap_atomic_req_encode(&m->u.atomic_req, buf + hl);
	else if (m->opcode == ESOCK_RDMAP_ATOMIC_RESP)
		esock_rdmap_atomic_resp_encode(&m->u.atomic_resp, buf + hl);
	return hl + oi->hlen;
}
