/* SPDX-License-Identifier: MIT */
/*
 * MPA start frames: encode and decode of the Request and Reply (RFC 5044
 * §7.1.1) including the RFC 6581 §9 IRD/ORD word (A and B flags in the IRD
 * half, C and D flags in the ORD half, 14-bit values).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/mpa.h>

#include "util/byteorder.h"

static const uint8_t key_req[ESOCK_MPA_KEY_LEN] = "MPA ID Req Frame";
static const uint8_t key_rep[ESOCK_MPA_KEY_LEN] = "MPA ID Rep Frame";

/* RFC 6581 word bits (in the 16-bit IRD and ORD halves). */
#define WORD_A 0x8000u /* IRD half: peer-to-peer */
#define WORD_B 0x4000u /* IRD half: zero-length Send RTR */
#define WORD_C 0x8000u /* ORD half: zero-length RDMA Write RTR */
#define WORD_D 0x4000u /* ORD half: zero-length RDMA Read RTR */

static size_t pd_total(const struct esock_mpa_frame *f)
{
	return (esock_mpa_frame_has_ird_ord(f) ? ESOCK_MPA_IRD_ORD_LEN : 0) + f->pd_len;
}

ESOCK_EXPORT size_t esock_mpa_frame_len(const struct esock_mpa_frame *f)
{
	return ESOCK_MPA_HDR_LEN + pd_total(f);
}

static int frame_validate(const struct esock_mpa_frame *f)
{
	if (f->reject && !f->reply)
		return -EINVAL;
	if (f->rev > 2 || (f->res & ~ESOCK_MPA_FLAG_RES) ||
	    (f->rtr & ~(ESOCK_MPA_RTR_SEND | ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ)))
		return -EINVAL;
	if (f->ird > ESOCK_MPA_IRD_ORD_MAX || f->ord > ESOCK_MPA_IRD_ORD_MAX)
		return -EINVAL;
	if (f->pd_len && !f->pd)
		return -EINVAL;
	if (pd_total(f) > ESOCK_MPA_PD_MAX)
		return -EMSGSIZE;
	return 0;
}

ESOCK_EXPORT ssize_t esock_mpa_frame_encode(const struct esock_mpa_frame *f, uint8_t *buf,
					    size_t cap)
{
	size_t len = esock_mpa_frame_len(f);
	uint8_t *p = buf + ESOCK_MPA_HDR_LEN;
	int rc = frame_validate(f);

	if (rc < 0)
		return rc;
	if (cap < len)
		return -ENOBUFS;
	memcpy(buf, f->reply ? key_rep : key_req, ESOCK_MPA_KEY_LEN);
	buf[16] = (uint8_t)((f->markers ? ESOCK_MPA_FLAG_M : 0) | (f->crc ? ESOCK_MPA_FLAG_C : 0) |
			    (f->reject ? ESOCK_MPA_FLAG_R : 0) |
			    (f->enhanced ? ESOCK_MPA_FLAG_S : 0) | f->res);
	buf[17] = f->rev;
	esock_put_be16(buf + 18, (uint16_t)pd_total(f));
	if (esock_mpa_frame_has_ird_ord(f)) {
		esock_put_be16(p, (uint16_t)(f->ird | (f->p2p ? WORD_A : 0) |
					     ((f->rtr & ESOCK_MPA_RTR_SEND) ? WORD_B : 0)));
		esock_put_be16(p + 2, (uint16_t)(f->ord | ((f->rtr & ESOCK_MPA_RTR_WRITE) ? WORD_C : 0) |
						 ((f->rtr & ESOCK_MPA_RTR_READ) ? WORD_D : 0)));
		p += ESOCK_MPA_IRD_ORD_LEN;
	}
	if (f->pd_len)
		memcpy(p, f->pd, f->pd_len);
	return (ssize_t)len;
}

ESOCK_EXPORT size_t esock_mpa_frame_need(const uint8_t *buf, size_t len)
{
	if (len < ESOCK_MPA_HDR_LEN)
		return ESOCK_MPA_HDR_LEN;
	return ESOCK_MPA_HDR_LEN + esock_get_be16(buf + 18);
}

static ssize_t bad_frame(struct esock_term *term, ssize_t rc)
{
	esock_term_set(term, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA,
		       ESOCK_TERM_LLP_BAD_FRAME, 0);
	return rc;
}

static void decode_ird_ord(struct esock_mpa_frame *f, const uint8_t *p)
{
	uint16_t ird = esock_get_be16(p), ord = esock_get_be16(p + 2);

	f->p2p = (ird & WORD_A) != 0;
	f->rtr = (uint8_t)(((ird & WORD_B) ? ESOCK_MPA_RTR_SEND : 0) |
			   ((ord & WORD_C) ? ESOCK_MPA_RTR_WRITE : 0) |
			   ((ord & WORD_D) ? ESOCK_MPA_RTR_READ : 0));
	f->ird = ird & ESOCK_MPA_IRD_ORD_MAX;
	f->ord = ord & ESOCK_MPA_IRD_ORD_MAX;
}

ESOCK_EXPORT ssize_t esock_mpa_frame_decode(struct esock_mpa_frame *f, bool reply,
					    const uint8_t *buf, size_t len, size_t pd_max,
					    struct esock_term *term)
{
	size_t need = esock_mpa_frame_need(buf, len), pd_len;
	const uint8_t *pd = buf + ESOCK_MPA_HDR_LEN;

	memset(f, 0, sizeof(*f));
	if (len < ESOCK_MPA_HDR_LEN)
		return -ENODATA;
	if (memcmp(buf, reply ? key_rep : key_req, ESOCK_MPA_KEY_LEN) != 0)
		return bad_frame(term, -EBADMSG);
	if (buf[17] > 2)
		return bad_frame(term, -EPROTONOSUPPORT);
	pd_len = esock_get_be16(buf + 18);
	if (pd_len > (pd_max ? pd_max : ESOCK_MPA_PD_MAX))
		return bad_frame(term, -EMSGSIZE);
	if (len < need)
		return -ENODATA;
	f->reply = reply;
	f->markers = (buf[16] & ESOCK_MPA_FLAG_M) != 0;
	f->crc = (buf[16] & ESOCK_MPA_FLAG_C) != 0;
	f->reject = (buf[16] & ESOCK_MPA_FLAG_R) != 0;
	f->enhanced = (buf[16] & ESOCK_MPA_FLAG_S) != 0;
	f->res = buf[16] & ESOCK_MPA_FLAG_RES;
	f->rev = buf[17];
	if (f->reject && !reply)
		return bad_frame(term, -EPROTO);
	if (esock_mpa_frame_has_ird_ord(f)) {
		if (pd_len < ESOCK_MPA_IRD_ORD_LEN)
			return bad_frame(term, -EPROTO);
		decode_ird_ord(f, pd);
		pd += ESOCK_MPA_IRD_ORD_LEN;
		pd_len -= ESOCK_MPA_IRD_ORD_LEN;
	}
	f->pd = pd_len ? pd : NULL;
	f->pd_len = (uint16_t)pd_len;
	return (ssize_t)need;
}
