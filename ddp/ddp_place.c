/* SPDX-License-Identifier: MIT */
/*
 * DDP placement (RFC 5041 §5 data transfer, §7 errors) over a caller-supplied
 * lookup.  Tagged segments go to registered regions after checks in siw's
 * order (STag, stream/PD, access, bounds with overflow-safe arithmetic);
 * untagged segments go to the buffer posted for their (QN, MSN), in any order:
 * each message tracks the disjoint ranges received, completes once every octet
 * up to the end fixed by its L segment arrived, and is delivered in MSN order.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/ddp.h>

/* The fields fit the fixed storage users allocate (the installed header's size). */
_Static_assert(sizeof(struct esock_ddp_place) == ESOCK_DDP_PLACE_WORDS * sizeof(uint64_t),
	       "struct esock_ddp_place outgrew ESOCK_DDP_PLACE_WORDS: raise it (an ABI change) or shrink the fields");

#define TOTAL_UNKNOWN UINT64_MAX

ESOCK_EXPORT int esock_ddp_place_init(struct esock_ddp_place *p, const struct esock_ddp_place_cfg *cfg)
{
	if (!cfg->lookup.stag || !cfg->lookup.untagged)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	if (!p->cfg.qn_mask)
		p->cfg.qn_mask = 0xf;
	if (!p->cfg.msn_window)
		p->cfg.msn_window = ESOCK_DDP_MSG_SLOTS;
	for (int i = 0; i < ESOCK_DDP_QN_MAX; i++)
		p->next_msn[i] = 1;
	return 0;
}

ESOCK_EXPORT const struct esock_term *esock_ddp_place_term(const struct esock_ddp_place *p)
{
	return p->err ? &p->term : NULL;
}

static int fail(struct esock_ddp_place *p, int rc, uint8_t layer, uint8_t etype, uint8_t ecode)
{
	esock_term_set(&p->term, layer, etype, ecode, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	p->err = rc;
	return rc;
}

static int fail_tagged(struct esock_ddp_place *p, uint8_t ecode)
{
	return fail(p, -EPROTO, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_TAGGED, ecode);
}

static int fail_untagged(struct esock_ddp_place *p, int rc, uint8_t ecode)
{
	return fail(p, rc, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED, ecode);
}

static int place_tagged(struct esock_ddp_place *p, const struct esock_ddp_hdr *h, size_t len,
			uint32_t access, uint8_t **dst)
{
	struct esock_ddp_region r;

	*dst = NULL;
	if (len == 0)
		return 0;
	if (p->cfg.lookup.stag(p->cfg.lookup.ctx, h->stag, &r) < 0)
		return fail_tagged(p, ESOCK_TERM_DDP_T_INV_STAG);
	if (r.pd != p->cfg.pd)
		return fail_tagged(p, ESOCK_TERM_DDP_T_STAG_NOT_ASSOC);
	/* DDP has no access-rights code: RFC 5040 reports it at the RDMAP layer. */
	if ((r.access & access) != access)
		return fail(p, -EACCES, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_PROTECTION,
			    ESOCK_TERM_RDMAP_ACCESS);
	if (h->to > UINT64_MAX - (len - 1))
		return fail_tagged(p, ESOCK_TERM_DDP_T_TO_WRAP);
	if (h->to < r.base || h->to - r.base > r.len || len > r.len - (h->to - r.base))
		return fail_tagged(p, ESOCK_TERM_DDP_T_BASE_BOUNDS);
	*dst = r.addr + (h->to - r.base);
	return 0;
}

_Static_assert(ESOCK_DDP_MSG_SLOTS <= 8, "one bit per message slot in |used|");

static struct esock_ddp_msg_state *msg_find(struct esock_ddp_place *p, uint32_t qn, uint32_t msn)
{
	for (unsigned u = p->used; u; u &= u - 1) {
		int i = __builtin_ctz(u);

		if (p->msg[i].qn == qn && p->msg[i].msn == msn)
			return &p->msg[i];
	}
	return NULL;
}

ESOCK_EXPORT const struct esock_ddp_buf *esock_ddp_place_msg_buf(const struct esock_ddp_place *p,
								   uint32_t qn, uint32_t msn)
{
	const struct esock_ddp_msg_state *m = msg_find((struct esock_ddp_place *)p, qn, msn);

	return m ? &m->buf : NULL;
}

/* Finds or opens the message for (qn, msn); consumes its posted buffer. */
static int msg_open(struct esock_ddp_place *p, const struct esock_ddp_hdr *h,
		    struct esock_ddp_msg_state **out)
{
	struct esock_ddp_msg_state *m = msg_find(p, h->qn, h->msn);

	if (!m) {
		unsigned freeb = ~(unsigned)p->used & ((1u << ESOCK_DDP_MSG_SLOTS) - 1);
		int i;

		if (!freeb)
			return fail(p, -ENOSPC, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_CATASTROPHIC,
				    ESOCK_TERM_DDP_CATASTROPHIC);
		i = __builtin_ctz(freeb);
		m = &p->msg[i];
		memset(m, 0, sizeof(*m));
		if (p->cfg.lookup.untagged(p->cfg.lookup.ctx, h->qn, h->msn, &m->buf) < 0)
			return fail_untagged(p, -ENOBUFS, ESOCK_TERM_DDP_U_NO_BUF);
		p->used |= (uint8_t)(1u << i);
		m->qn = h->qn;
		m->msn = h->msn;
		m->total = TOTAL_UNKNOWN;
	}
	*out = m;
	return 0;
}

/* Adds [lo, hi) to the message's disjoint sorted ranges; counts new octets. */
static int msg_add_range(struct esock_ddp_place *p, struct esock_ddp_msg_state *m, uint32_t lo,
			 uint32_t hi)
{
	uint32_t nlo = lo, nhi = hi, covered = 0, keep = 0;
	struct { uint32_t lo, hi; } out[ESOCK_DDP_RANGES + 1];

	if (lo == hi)
		return 0;
	for (uint32_t i = 0; i < m->nranges; i++) {
		uint32_t a = m->r[i].lo, b = m->r[i].hi;

		if (b < lo || a > hi) {
			out[keep].lo = a;
			out[keep++].hi = b;
			continue;
		}
		/* Overlapping or touching: merge, and count the overlap once. */
		if (b > lo && a < hi)
			covered += (b < hi ? b : hi) - (a > lo ? a : lo);
		nlo = a < nlo ? a : nlo;
		nhi = b > nhi ? b : nhi;
	}
	if (keep >= ESOCK_DDP_RANGES)
		return fail(p, -ENOSPC, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_CATASTROPHIC,
			    ESOCK_TERM_DDP_CATASTROPHIC);
	/* Insert keeping the order by lo. */
	{
		uint32_t j = keep;

		while (j > 0 && out[j - 1].lo > nlo) {
			out[j] = out[j - 1];
			j--;
		}
		out[j].lo = nlo;
		out[j].hi = nhi;
	}
	m->nranges = keep + 1;
	memcpy(m->r, out, m->nranges * sizeof(out[0]));
	m->received += (hi - lo) - covered;
	return 0;
}

static int check_untagged(struct esock_ddp_place *p, const struct esock_ddp_hdr *h, size_t len)
{
	if (h->qn >= ESOCK_DDP_QN_MAX || !(p->cfg.qn_mask & (1u << h->qn)))
		return fail_untagged(p, -EPROTO, ESOCK_TERM_DDP_U_INV_QN);
	if (h->msn - p->next_msn[h->qn] >= p->cfg.msn_window)
		return fail_untagged(p, -EPROTO, ESOCK_TERM_DDP_U_MSN_RANGE);
	if ((uint64_t)h->mo + len > UINT32_MAX)
		return fail_untagged(p, -EPROTO, ESOCK_TERM_DDP_U_INV_MO);
	return 0;
}

static int place_untagged(struct esock_ddp_place *p, const struct esock_ddp_hdr *h, size_t len,
			  uint8_t **dst, struct esock_ddp_placed *out)
{
	struct esock_ddp_msg_state *m;
	uint64_t end = (uint64_t)h->mo + len;
	int rc;

	if ((rc = check_untagged(p, h, len)) < 0 || (rc = msg_open(p, h, &m)) < 0)
		return rc;
	if (h->mo > m->buf.len)
		return fail_untagged(p, -EPROTO, ESOCK_TERM_DDP_U_INV_MO);
	if (end > m->buf.len)
		return fail_untagged(p, -EPROTO, ESOCK_TERM_DDP_U_TOO_LONG);
	/* The L segment fixes the length: nothing may lie beyond it, no second end. */
	if ((m->total != TOTAL_UNKNOWN && (end > m->total || (h->last && end != m->total))) ||
	    (h->last && m->nranges && m->r[m->nranges - 1].hi > end))
		return fail_untagged(p, -EPROTO, ESOCK_TERM_DDP_U_INV_MO);
	if ((rc = msg_add_range(p, m, h->mo, (uint32_t)end)) < 0)
		return rc;
	if (h->last)
		m->total = end;
	*dst = len ? m->buf.addr + h->mo : NULL;
	m->done = m->total != TOTAL_UNKNOWN && m->received == m->total;
	out->msg_done = m->done;
	return 0;
}

ESOCK_EXPORT int esock_ddp_place_prepare(struct esock_ddp_place *p, const struct esock_ddp_hdr *h,
					 size_t len, uint32_t access, uint8_t **dst,
					 struct esock_ddp_placed *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	*dst = NULL;
	if (p->err)
		return p->err;
	if (esock_ddp_hdr_check(h, &p->term) < 0) {
		p->term.hdrct = ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D;
		return p->err = -EPROTO;
	}
	rc = h->tagged ? place_tagged(p, h, len, access, dst) : place_untagged(p, h, len, dst, out);
	if (rc < 0)
		return rc;
	out->len = len;
	out->last = h->last;
	return 0;
}

ESOCK_EXPORT int esock_ddp_place_segment(struct esock_ddp_place *p, const struct esock_ddp_hdr *h,
					 const uint8_t *payload, size_t len, uint32_t access,
					 struct esock_ddp_placed *out)
{
	uint8_t *dst;
	int rc = esock_ddp_place_prepare(p, h, len, access, &dst, out);

	if (rc == 0 && len)
		memcpy(dst, payload, len);
	return rc;
}

ESOCK_EXPORT int esock_ddp_place_rebuf(struct esock_ddp_place *p, uint32_t qn, uint32_t msn,
				       const struct esock_ddp_buf *nb)
{
	struct esock_ddp_msg_state *m = msg_find(p, qn, msn);

	if (!m)
		return -ENOENT;
	/* (The ranges are sorted: the last one ends highest; the total bounds what may still come.) */
	if ((m->nranges && m->r[m->nranges - 1].hi > nb->len) ||
	    (m->total != TOTAL_UNKNOWN && m->total > nb->len))
		return -EINVAL;
	m->buf = *nb;
	return 0;
}

ESOCK_EXPORT int esock_ddp_place_whole(struct esock_ddp_place *p, uint32_t qn, uint32_t msn)
{
	if (p->err || qn >= ESOCK_DDP_QN_MAX || !(p->cfg.qn_mask & (1u << qn)) ||
	    msn != p->next_msn[qn])
		return -EAGAIN;
	for (unsigned u = p->used; u; u &= u - 1) /* (an open message of |qn| comes first) */
		if (p->msg[__builtin_ctz(u)].qn == qn)
			return -EAGAIN;
	p->next_msn[qn]++;
	return 0;
}

ESOCK_EXPORT int esock_ddp_place_poll(struct esock_ddp_place *p, struct esock_ddp_completion *c)
{
	if (p->err)
		return p->err;
	for (unsigned u = p->used; u; u &= u - 1) {
		int i = __builtin_ctz(u);
		struct esock_ddp_msg_state *m = &p->msg[i];

		if (m->done && m->msn == p->next_msn[m->qn]) {
			c->qn = m->qn;
			c->msn = m->msn;
			c->len = (size_t)m->total;
			c->buf = m->buf;
			p->next_msn[m->qn]++;
			p->used &= (uint8_t)~(1u << i);
			return 1;
		}
	}
	return 0;
}
