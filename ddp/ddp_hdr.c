/* SPDX-License-Identifier: MIT */
/*
 * DDP header encode/decode (RFC 5041 §4.2 control field, §4.3 tagged header,
 * §4.4 untagged header) and the header-only version check (§7.2).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/ddp.h>

#include "util/byteorder.h"

ESOCK_EXPORT ssize_t esock_ddp_hdr_decode(struct esock_ddp_hdr *h, const uint8_t *buf, size_t len)
{
	size_t hlen;

	if (len == 0)
		return -EBADMSG;
	hlen = esock_ddp_hdr_len(buf[0]);
	if (len < hlen)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	h->tagged = (buf[0] & ESOCK_DDP_CTRL_T) != 0;
	h->last = (buf[0] & ESOCK_DDP_CTRL_L) != 0;
	h->rsvd = (uint8_t)((buf[0] & ESOCK_DDP_CTRL_RSVD) >> 2);
	h->dv = buf[0] & ESOCK_DDP_CTRL_DV;
	h->ulp_ctrl = buf[1];
	if (h->tagged) {
		h->stag = esock_get_be32(buf + 2);
		h->to = esock_get_be64(buf + 6);
	} else {
		h->ulp_word = esock_get_be32(buf + 2);
		h->qn = esock_get_be32(buf + 6);
		h->msn = esock_get_be32(buf + 10);
		h->mo = esock_get_be32(buf + 14);
	}
	return (ssize_t)hlen;
}

ESOCK_EXPORT ssize_t esock_ddp_hdr_encode(const struct esock_ddp_hdr *h, uint8_t *buf, size_t cap)
{
	size_t hlen = h->tagged ? ESOCK_DDP_TAGGED_HLEN : ESOCK_DDP_UNTAGGED_HLEN;

	if (cap < hlen)
		return -ENOBUFS;
	buf[0] = (uint8_t)((h->tagged ? ESOCK_DDP_CTRL_T : 0) | (h->last ? ESOCK_DDP_CTRL_L : 0) |
			   ((h->rsvd << 2) & ESOCK_DDP_CTRL_RSVD) | (h->dv & ESOCK_DDP_CTRL_DV));
	buf[1] = h->ulp_ctrl;
	if (h->tagged) {
		esock_put_be32(buf + 2, h->stag);
		esock_put_be64(buf + 6, h->to);
	} else {
		esock_put_be32(buf + 2, h->ulp_word);
		esock_put_be32(buf + 6, h->qn);
		esock_put_be32(buf + 10, h->msn);
		esock_put_be32(buf + 14, h->mo);
	}
	return (ssize_t)hlen;
}

ESOCK_EXPORT int esock_ddp_hdr_check(const struct esock_ddp_hdr *h, struct esock_term *term)
{
	if (h->dv == ESOCK_DDP_VERSION)
		return 0;
	/* RFC 5041 §7.2: the version error is reported in the table of the
	 * buffer model the segment claims (tagged 0x04, untagged 0x06); the
	 * Terminate copies the offending DDP header, as for every DDP error. */
	if (h->tagged)
		esock_term_set(term, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_TAGGED,
			       ESOCK_TERM_DDP_T_VERSION, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	else
		esock_term_set(term, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED,
			       ESOCK_TERM_DDP_U_VERSION, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	return -EPROTO;
}
