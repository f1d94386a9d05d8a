/* SPDX-License-Identifier: MIT */
/*
 * DDP segmentation (RFC 5041 §5.1): one message into segments that each fit
 * one MPA FPDU of at most MULPDU octets, TO/MO advancing, L on the last.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/ddp.h>

/* The fields fit the fixed storage users allocate (the installed header's size). */
_Static_assert(sizeof(struct esock_ddp_seg) == ESOCK_DDP_SEG_WORDS * sizeof(uint64_t),
	       "struct esock_ddp_seg outgrew ESOCK_DDP_SEG_WORDS: raise it (an ABI change) or shrink the fields");

ESOCK_EXPORT int esock_ddp_seg_init(struct esock_ddp_seg *s, const struct esock_ddp_hdr *tmpl,
				    size_t msg_len, size_t mulpdu)
{
	size_t hlen = tmpl->tagged ? ESOCK_DDP_TAGGED_HLEN : ESOCK_DDP_UNTAGGED_HLEN;

	memset(s, 0, sizeof(*s));
	if (mulpdu < hlen || (msg_len > 0 && mulpdu < hlen + 4))
		return -EINVAL;
	if (!tmpl->tagged && (uint64_t)tmpl->mo + msg_len > UINT32_MAX + (uint64_t)1)
		return -EMSGSIZE;
	s->tmpl = *tmpl;
	s->msg_len = msg_len;
	/* Non-final payloads stay multiples of 4: only the last FPDU needs PAD. */
	s->max_payload = (mulpdu - hlen) & ~(size_t)3;
	return 0;
}

ESOCK_EXPORT bool esock_ddp_seg_next(struct esock_ddp_seg *s, struct esock_ddp_hdr *h, size_t *off,
				     size_t *len)
{
	size_t n;

	if (s->done)
		return false;
	n = s->msg_len - s->off;
	if (n > s->max_payload)
		n = s->max_payload;
	*h = s->tmpl;
	if (h->tagged)
		h->to = s->tmpl.to + s->off; /* wraps mod 2^64 like the wire field */
	else
		h->mo = s->tmpl.mo + (uint32_t)s->off;
	h->last = s->off + n == s->msg_len;
	*off = s->off;
	*len = n;
	s->off += n;
	s->done = h->last;
	return true;
}
