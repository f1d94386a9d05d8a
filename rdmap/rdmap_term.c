/* SPDX-License-Identifier: MIT */
/*
 * RDMAP Terminate (RFC 5040 §4.8 header, §7 error handling): encode and
 * decode of the Terminate header with its optional DDP Segment Length,
 * copied DDP header and copied Read Request header; the builder that fills
 * the copies from an offending segment; and the whole Terminate ULPDU.
 *
 * Two bit orders exist on the wire.  RFC 5040 puts Layer in the high nibble
 * of the first octet and M/D/R in the top three bits of the 16-bit header
 * control field.  Linux siw (6.1) declares the same fields as C bit-fields,
 * which on little-endian machines puts Layer in the low nibble, EType in the
 * high nibble and M/D/R at 0x01/0x02/0x04 of the third octet.  We send RFC
 * order and read both; AUTO picks the reading whose reserved bits are zero
 * and whose reason is defined, RFC when both are.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/rdmap.h>

#include "rdmap/rdmap_internal.h"
#include "util/byteorder.h"

#define RFC_M 0x8000u
#define RFC_D 0x4000u
#define RFC_R 0x2000u
#define RFC_RSVD 0x1fffu
#define SIW_M 0x01u
#define SIW_D 0x02u
#define SIW_R 0x04u

static uint8_t flags_to_hdrct(bool m, bool d, bool r)
{
	return (uint8_t)((m ? ESOCK_TERM_HDRCT_M : 0) | (d ? ESOCK_TERM_HDRCT_D : 0) |
			 (r ? ESOCK_TERM_HDRCT_R : 0));
}

static void ctrl_decode(struct esock_rdmap_term *tm, const uint8_t *p, uint8_t order)
{
	uint16_t w = esock_get_be16(p + 2);

	tm->t.valid = true;
	tm->t.ecode = p[1];
	tm->order = order;
	if (order == ESOCK_RDMAP_TERM_SIW) {
		tm->t.layer = p[0] & 0x0f;
		tm->t.etype = p[0] >> 4;
		tm->t.hdrct = flags_to_hdrct(p[2] & SIW_M, p[2] & SIW_D, p[2] & SIW_R);
		tm->rsvd = (uint16_t)((p[2] >> 3) | (p[3] << 5));
	} else {
		tm->t.layer = p[0] >> 4;
		tm->t.etype = p[0] & 0x0f;
		tm->t.hdrct = flags_to_hdrct(w & RFC_M, w & RFC_D, w & RFC_R);
		tm->rsvd = w & RFC_RSVD;
	}
}

static uint8_t pick_order(const uint8_t *p)
{
	bool rfc_ok = (p[2] & 0x1f) == 0 && p[3] == 0 && esock_rdmap_term_known(p[0] >> 4, p[0] & 0xf, p[1]);
	bool siw_ok = (p[2] & 0xf8) == 0 && p[3] == 0 && esock_rdmap_term_known(p[0] & 0xf, p[0] >> 4, p[1]);

	return (!rfc_ok && siw_ok) ? ESOCK_RDMAP_TERM_SIW : ESOCK_RDMAP_TERM_RFC;
}

ssize_t esock_rdmap_term_hdr_decode(struct esock_rdmap_term *tm, const uint8_t *p, size_t len, uint8_t order)
{
	size_t off = ESOCK_RDMAP_TERM_HLEN;

	memset(tm, 0, sizeof(*tm));
	if (len < ESOCK_RDMAP_TERM_HLEN)
		return -EBADMSG;
	ctrl_decode(tm, p, order == ESOCK_RDMAP_TERM_AUTO ? pick_order(p) : order);
	if (!tm->t.hdrct)
		return (ssize_t)off;
	if (len < off + ESOCK_RDMAP_TERM_SEGLEN_LEN)
		return -EBADMSG;
	tm->ddp_seg_len = esock_get_be16(p + off);
	off += ESOCK_RDMAP_TERM_SEGLEN_LEN;
	if (tm->t.hdrct & ESOCK_TERM_HDRCT_D) {
		if (len <= off || len - off < esock_ddp_hdr_len(p[off]))
			return -EBADMSG;
		tm->ddp_hdr_len = (uint8_t)esock_ddp_hdr_len(p[off]);
		memcpy(tm->ddp_hdr, p + off, tm->ddp_hdr_len);
		off += tm->ddp_hdr_len;
	}
	if (tm->t.hdrct & ESOCK_TERM_HDRCT_R) {
		if (len - off < ESOCK_RDMAP_READ_REQ_HLEN)
			return -EBADMSG;
		memcpy(tm->rdmap_hdr, p + off, ESOCK_RDMAP_READ_REQ_HLEN);
		off += ESOCK_RDMAP_READ_REQ_HLEN;
	}
	return (ssize_t)off;
}

static void ctrl_encode(const struct esock_rdmap_term *tm, uint8_t *p)
{
	uint8_t h = tm->t.hdrct;

	p[1] = tm->t.ecode;
	if (tm->order == ESOCK_RDMAP_TERM_SIW) {
		p[0] = (uint8_t)((tm->t.etype & 0xf) << 4 | (tm->t.layer & 0xf));
		p[2] = (uint8_t)(((h & ESOCK_TERM_HDRCT_M) ? SIW_M : 0) | ((h & ESOCK_TERM_HDRCT_D) ? SIW_D : 0) |
				 ((h & ESOCK_TERM_HDRCT_R) ? SIW_R : 0) | (tm->rsvd << 3));
		p[3] = (uint8_t)(tm->rsvd >> 5);
		return;
	}
	p[0] = (uint8_t)((tm->t.layer & 0xf) << 4 | (tm->t.etype & 0xf));
	esock_put_be16(p + 2, (uint16_t)(((h & ESOCK_TERM_HDRCT_M) ? RFC_M : 0) |
					 ((h & ESOCK_TERM_HDRCT_D) ? RFC_D : 0) |
					 ((h & ESOCK_TERM_HDRCT_R) ? RFC_R : 0) | (tm->rsvd & RFC_RSVD)));
}

ssize_t esock_rdmap_term_hdr_encode(const struct esock_rdmap_term *tm, uint8_t *p, size_t cap)
{
	size_t need = ESOCK_RDMAP_TERM_HLEN, off;
	bool d = tm->t.hdrct & ESOCK_TERM_HDRCT_D, r = tm->t.hdrct & ESOCK_TERM_HDRCT_R;

	if (d && tm->ddp_hdr_len != ESOCK_DDP_TAGGED_HLEN && tm->ddp_hdr_len != ESOCK_DDP_UNTAGGED_HLEN)
		return -EINVAL;
	if (tm->t.hdrct)
		need += ESOCK_RDMAP_TERM_SEGLEN_LEN + (d ? tm->ddp_hdr_len : 0) +
			(r ? ESOCK_RDMAP_READ_REQ_HLEN : 0);
	if (cap < need)
		return -ENOBUFS;
	ctrl_encode(tm, p);
	off = ESOCK_RDMAP_TERM_HLEN;
	if (!tm->t.hdrct)
		return (ssize_t)off;
	esock_put_be16(p + off, tm->ddp_seg_len);
	off += ESOCK_RDMAP_TERM_SEGLEN_LEN;
	if (d) {
		memcpy(p + off, tm->ddp_hdr, tm->ddp_hdr_len);
		off += tm->ddp_hdr_len;
	}
	if (r) {
		memcpy(p + off, tm->rdmap_hdr, ESOCK_RDMAP_READ_REQ_HLEN);
		off += ESOCK_RDMAP_READ_REQ_HLEN;
	}
	return (ssize_t)off;
}

ESOCK_EXPORT void esock_rdmap_term_build(struct esock_rdmap_term *out, const struct esock_term *t,
					 const uint8_t *seg, size_t len)
{
	uint8_t h = t->hdrct;

	memset(out, 0, sizeof(*out));
	out->t = *t;
	out->t.valid = true;
	out->order = ESOCK_RDMAP_TERM_RFC;
	if (!seg || len == 0 || len < esock_ddp_hdr_len(seg[0]))
		h &= (uint8_t)~(ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D | ESOCK_TERM_HDRCT_R);
	if (h & ESOCK_TERM_HDRCT_M)
		out->ddp_seg_len = len > UINT16_MAX ? UINT16_MAX : (uint16_t)len;
	if (h & ESOCK_TERM_HDRCT_D) {
		out->ddp_hdr_len = (uint8_t)esock_ddp_hdr_len(seg[0]);
		memcpy(out->ddp_hdr, seg, out->ddp_hdr_len);
	}
	/* R: only a whole RDMA Read Request has a header to copy. */
	if ((h & ESOCK_TERM_HDRCT_R) &&
	    !((seg[0] & ESOCK_DDP_CTRL_T) == 0 && (seg[1] & ESOCK_RDMAP_CTRL_OPCODE) == ESOCK_RDMAP_READ_REQ &&
	      len >= ESOCK_DDP_UNTAGGED_HLEN + ESOCK_RDMAP_READ_REQ_HLEN))
		h &= (uint8_t)~ESOCK_TERM_HDRCT_R;
	if (h & ESOCK_TERM_HDRCT_R)
		memcpy(out->rdmap_hdr, seg + ESOCK_DDP_UNTAGGED_HLEN, ESOCK_RDMAP_READ_REQ_HLEN);
	out->t.hdrct = h;
}

ESOCK_EXPORT ssize_t esock_rdmap_term_msg(const struct esock_rdmap_term *tm, uint32_t msn,
					  uint8_t *buf, size_t cap)
{
	struct esock_rdmap_msg m;

	esock_rdmap_msg_init(&m, ESOCK_RDMAP_TERMINATE);
	m.ddp.msn = msn;
	m.u.term = *tm;
	return esock_rdmap_hdr_encode(&m, buf, cap);
}
