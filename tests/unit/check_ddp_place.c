/* SPDX-License-Identifier: MIT */
/*
 * DDP placement: every error path with its exact Terminate values, nothing
 * written before the checks pass or outside a region (guard octets), and
 * out-of-order untagged messages (all permutations for small counts, random
 * for larger, duplicates) completing exactly once and in MSN order.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/ddp.h>

#include "tests/unit/testutil.h"

#define GUARD 64
#define RLEN 4096

struct world {
	uint8_t mem[GUARD + RLEN + GUARD];     /* tagged region between guards */
	uint8_t rbuf[4][GUARD + 2048 + GUARD]; /* posted receive buffers */
	int posted;                            /* buffers left to hand out */
	int handed;
	struct esock_ddp_place p;
};

static int lk_stag(void *ctx, uint32_t stag, struct esock_ddp_region *out)
{
	struct world *w = ctx;

	if (stag == 0x100) { /* remote-writable, our PD */
		*out = (struct esock_ddp_region){ 0x10000, RLEN, w->mem + GUARD,
						  ESOCK_DDP_ACCESS_REMOTE_WRITE | ESOCK_DDP_ACCESS_LOCAL_WRITE, 7 };
		return 0;
	}
	if (stag == 0x200) { /* read-only */
		*out = (struct esock_ddp_region){ 0x10000, RLEN, w->mem + GUARD,
						  ESOCK_DDP_ACCESS_REMOTE_READ, 7 };
		return 0;
	}
	if (stag == 0x300) { /* another PD */
		*out = (struct esock_ddp_region){ 0x10000, RLEN, w->mem + GUARD,
						  ESOCK_DDP_ACCESS_REMOTE_WRITE, 8 };
		return 0;
	}
	if (stag == 0x400) { /* a region at the top of the TO space */
		*out = (struct esock_ddp_region){ UINT64_MAX - 99, 100, w->mem + GUARD,
						  ESOCK_DDP_ACCESS_REMOTE_WRITE, 7 };
		return 0;
	}
	return -ENOENT;
}

static int lk_untagged(void *ctx, uint32_t qn, uint32_t msn, struct esock_ddp_buf *out)
{
	struct world *w = ctx;
	int i = w->handed;

	if (w->posted == 0 || i >= 4)
		return -ENOENT;
	w->posted--;
	w->handed++;
	*out = (struct esock_ddp_buf){ w->rbuf[i] + GUARD, 2048, ((uint64_t)qn << 32) | msn };
	return 0;
}

static struct world *world_new(int posted)
{
	struct world *w = calloc(1, sizeof(*w));
	struct esock_ddp_place_cfg cfg = { .lookup = { lk_stag, lk_untagged, NULL }, .pd = 7 };

	memset(w->mem, 0xee, sizeof(w->mem));
	memset(w->rbuf, 0xee, sizeof(w->rbuf));
	w->posted = posted;
	cfg.lookup.ctx = w;
	ck_assert_int_eq(esock_ddp_place_init(&w->p, &cfg), 0);
	return w;
}

static void guards_intact(const struct world *w)
{
	for (int i = 0; i < GUARD; i++) {
		ck_assert_uint_eq(w->mem[i], 0xee);
		ck_assert_uint_eq(w->mem[GUARD + RLEN + i], 0xee);
		for (int b = 0; b < 4; b++) {
			ck_assert_uint_eq(w->rbuf[b][i], 0xee);
			ck_assert_uint_eq(w->rbuf[b][GUARD + 2048 + i], 0xee);
		}
	}
}

static bool region_untouched(const struct world *w)
{
	for (size_t i = 0; i < sizeof(w->mem); i++)
		if (w->mem[i] != 0xee)
			return false;
	return true;
}

START_TEST(test_tagged_ok)
{
	struct world *w = world_new(0);
	struct esock_ddp_hdr h = { .tagged = true, .last = true, .dv = 1, .stag = 0x100, .to = 0x10000 + RLEN - 5 };
	struct esock_ddp_placed out;

	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"abcde", 5,
						 ESOCK_DDP_ACCESS_REMOTE_WRITE, &out), 0);
	ck_assert_uint_eq(out.len, 5);
	ck_assert(out.last);
	ck_assert(memcmp(w->mem + GUARD + RLEN - 5, "abcde", 5) == 0);
	/* Zero-length tagged (an RTR): no lookup, even with a meaningless STag. */
	h.stag = 0xdead;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, NULL, 0, ESOCK_DDP_ACCESS_REMOTE_WRITE, &out), 0);
	/* Top of the TO space, up to the last octet. */
	h.stag = 0x400;
	h.to = UINT64_MAX;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"z", 1,
						 ESOCK_DDP_ACCESS_REMOTE_WRITE, &out), 0);
	guards_intact(w);
	free(w);
}
END_TEST

struct terr {
	const char *name;
	uint32_t stag;
	uint64_t to;
	size_t len;
	uint8_t dv;
	int rc;
	uint8_t layer, etype, ecode;
};

static const struct terr terrs[] = {
	{ "unknown STag", 0x999, 0x10000, 4, 1, -EPROTO, 1, 1, 0x00 },
	{ "STag of another PD", 0x300, 0x10000, 4, 1, -EPROTO, 1, 1, 0x02 },
	{ "no remote write right", 0x200, 0x10000, 4, 1, -EACCES, 0, 1, 0x02 },
	{ "below base", 0x100, 0xffff, 4, 1, -EPROTO, 1, 1, 0x01 },
	{ "past the end", 0x100, 0x10000 + RLEN - 3, 4, 1, -EPROTO, 1, 1, 0x01 },
	{ "far past the end", 0x100, 0x10000 + 2 * RLEN, 4, 1, -EPROTO, 1, 1, 0x01 },
	{ "TO wrap", 0x400, UINT64_MAX - 1, 4, 1, -EPROTO, 1, 1, 0x03 },
	{ "DDP version 0", 0x100, 0x10000, 4, 0, -EPROTO, 1, 1, 0x04 },
};

START_TEST(test_tagged_errors)
{
	const struct terr *c = &terrs[_i];
	struct world *w = world_new(0);
	struct esock_ddp_hdr h = { .tagged = true, .dv = c->dv, .stag = c->stag, .to = c->to };
	struct esock_ddp_placed out;
	const struct esock_term *t;

	ck_assert_msg(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"wxyz", c->len,
					      ESOCK_DDP_ACCESS_REMOTE_WRITE, &out) == c->rc, "%s", c->name);
	t = esock_ddp_place_term(&w->p);
	ck_assert_ptr_nonnull(t);
	ck_assert_msg(t->layer == c->layer && t->etype == c->etype && t->ecode == c->ecode,
		      "%s: got %u/%u/0x%02x", c->name, t->layer, t->etype, t->ecode);
	ck_assert_uint_eq(t->hdrct, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	ck_assert(region_untouched(w));
	/* Terminal: even a valid segment is refused now. */
	h = (struct esock_ddp_hdr){ .tagged = true, .dv = 1, .stag = 0x100, .to = 0x10000 };
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"ok", 2,
						 ESOCK_DDP_ACCESS_REMOTE_WRITE, &out), c->rc);
	ck_assert(region_untouched(w));
	free(w);
}
END_TEST

struct uerr {
	const char *name;
	uint32_t qn, msn, mo;
	size_t len;
	int posted;
	int rc;
	uint8_t ecode;
};

static const struct uerr uerrs[] = {
	{ "invalid QN 4", 4, 1, 0, 4, 1, -EPROTO, 0x01 },
	{ "invalid QN 2^31", 0x80000000u, 1, 0, 4, 1, -EPROTO, 0x01 },
	{ "MSN 0 (behind)", 0, 0, 0, 4, 1, -EPROTO, 0x03 },
	{ "MSN beyond the window", 0, 1 + ESOCK_DDP_MSG_SLOTS, 0, 4, 1, -EPROTO, 0x03 },
	{ "no buffer posted", 0, 1, 0, 4, 0, -ENOBUFS, 0x02 },
	{ "MO beyond the buffer", 0, 1, 2049, 4, 1, -EPROTO, 0x04 },
	{ "message too long", 0, 1, 2046, 4, 1, -EPROTO, 0x05 },
	{ "MO + len over 2^32", 0, 1, UINT32_MAX - 1, 4, 1, -EPROTO, 0x04 },
};

START_TEST(test_untagged_errors)
{
	const struct uerr *c = &uerrs[_i];
	struct world *w = world_new(c->posted);
	struct esock_ddp_hdr h = { .dv = 1, .last = true, .qn = c->qn, .msn = c->msn, .mo = c->mo };
	struct esock_ddp_placed out;
	struct esock_ddp_completion comp;
	const struct esock_term *t;

	ck_assert_msg(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"wxyz", c->len, 0, &out) == c->rc,
		      "%s", c->name);
	t = esock_ddp_place_term(&w->p);
	ck_assert_uint_eq(t->layer, ESOCK_TERM_LAYER_DDP);
	ck_assert_uint_eq(t->etype, ESOCK_TERM_DDP_ETYPE_UNTAGGED);
	ck_assert_msg(t->ecode == c->ecode, "%s: code 0x%02x", c->name, t->ecode);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &comp), c->rc);
	for (int b = 0; b < 4; b++)
		for (size_t i = 0; i < sizeof(w->rbuf[b]); i++)
			ck_assert_uint_eq(w->rbuf[b][i], 0xee);
	free(w);
}
END_TEST

START_TEST(test_inconsistent_last)
{
	struct world *w = world_new(1);
	struct esock_ddp_hdr h = { .dv = 1, .last = true, .qn = 0, .msn = 1, .mo = 8 };
	struct esock_ddp_placed out;

	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"abcd", 4, 0, &out), 0);
	/* A segment beyond the end fixed by the L segment. */
	h.last = false;
	h.mo = 12;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"abcd", 4, 0, &out), -EPROTO);
	ck_assert_uint_eq(esock_ddp_place_term(&w->p)->ecode, ESOCK_TERM_DDP_U_INV_MO);
	free(w);
}
END_TEST

/* Delivers a 4-segment message in the order given by |perm|; with dups. */
static void run_order(const int *perm, int nseg, bool dup)
{
	struct world *w = world_new(2);
	static uint8_t msg[1000];
	struct esock_ddp_placed out;
	struct esock_ddp_completion c;
	size_t seg = sizeof(msg) / (size_t)nseg;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 13 + 1);
	for (int k = 0; k < nseg; k++) {
		int s = perm[k];
		size_t off = (size_t)s * seg, len = s == nseg - 1 ? sizeof(msg) - off : seg;
		struct esock_ddp_hdr h = { .dv = 1, .last = s == nseg - 1, .qn = 0, .msn = 1, .mo = (uint32_t)off };

		ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, msg + off, len, 0, &out), 0);
		ck_assert(out.msg_done == (k == nseg - 1));
		if (dup)
			ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, msg + off, len, 0, &out), 0);
		ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), k == nseg - 1 ? 1 : 0);
	}
	ck_assert_uint_eq(c.len, sizeof(msg));
	ck_assert_uint_eq(c.msn, 1);
	ck_assert(memcmp(c.buf.addr, msg, sizeof(msg)) == 0);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 0); /* exactly once */
	guards_intact(w);
	free(w);
}

static void permute(int *a, int k, int n, bool dup)
{
	if (k == n) {
		run_order(a, n, dup);
		return;
	}
	for (int i = k; i < n; i++) {
		int t = a[k];

		a[k] = a[i];
		a[i] = t;
		permute(a, k + 1, n, dup);
		a[i] = a[k];
		a[k] = t;
	}
}

START_TEST(test_out_of_order_all_permutations)
{
	int a[5] = { 0, 1, 2, 3, 4 };

	permute(a, 0, 5, false);
	permute(a, 0, 4, true);
}
END_TEST

START_TEST(test_msn_order_delivery)
{
	struct world *w = world_new(3);
	struct esock_ddp_placed out;
	struct esock_ddp_completion c;
	struct esock_ddp_hdr h = { .dv = 1, .last = true, .qn = 0, .mo = 0 };

	/* MSN 3 and 2 complete before 1: delivered 1, 2, 3. */
	h.msn = 3;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"three", 5, 0, &out), 0);
	h.msn = 2;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"two", 3, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 0);
	h.msn = 1;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"1", 1, 0, &out), 0);
	for (uint32_t m = 1; m <= 3; m++) {
		ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 1);
		ck_assert_uint_eq(c.msn, m);
	}
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 0);
	free(w);
}
END_TEST

/*
 * A whole message placed by the caller itself (esock_ddp_place_whole): only
 * the next MSN of its queue while none of that queue is open; it moves the
 * queue on (the segment after it is the next MSN) and nothing is reported
 * for it, nor is a posted buffer consumed.
 */
START_TEST(test_place_whole)
{
	struct world *w = world_new(2);
	struct esock_ddp_placed out;
	struct esock_ddp_completion c;
	struct esock_ddp_hdr h = { .dv = 1, .last = false, .qn = 0, .msn = 2, .mo = 0 };

	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 2), -EAGAIN); /* 1 is next */
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 1), 0);
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 1), -EAGAIN); /* once */
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 5, 1), -EAGAIN); /* a queue not ours */
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, ESOCK_DDP_QN_MAX, 1), -EAGAIN);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 0);
	ck_assert_int_eq(w->handed, 0);
	/* MSN 2 opened by a first segment: not whole, and 3 must wait behind it. */
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"ab", 2, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 2), -EAGAIN);
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 3), -EAGAIN);
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 1, 1), 0); /* another queue goes on */
	h.last = true;
	h.mo = 2;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"c", 1, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 1);
	ck_assert_uint_eq(c.msn, 2);
	ck_assert_uint_eq(c.len, 3);
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 3), 0);
	/* After a failure: never. */
	h.msn = 99;
	h.mo = 0;
	ck_assert_int_lt(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"x", 1, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_whole(&w->p, 0, 4), -EAGAIN);
	free(w);
}
END_TEST

/* A message lent to one buffer goes on in another: placed octets copied there, later ones land there. */
START_TEST(test_rebuf)
{
	struct world *w = world_new(2);
	struct esock_ddp_placed out;
	struct esock_ddp_completion c;
	struct esock_ddp_hdr h = { .dv = 1, .last = false, .qn = 0, .msn = 1, .mo = 0 };
	struct esock_ddp_buf nb = { w->rbuf[3] + GUARD, 4, 77 };
	const struct esock_ddp_buf *b;

	ck_assert_int_eq(esock_ddp_place_rebuf(&w->p, 0, 1, &nb), -ENOENT); /* not open */
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"abc", 3, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_rebuf(&w->p, 0, 2, &nb), -ENOENT); /* another MSN */
	nb.len = 2; /* shorter than what was placed */
	ck_assert_int_eq(esock_ddp_place_rebuf(&w->p, 0, 1, &nb), -EINVAL);
	ck_assert_ptr_eq(esock_ddp_place_msg_buf(&w->p, 0, 1)->addr, w->rbuf[0] + GUARD);
	nb.len = 4;
	memcpy(nb.addr, w->rbuf[0] + GUARD, 3);
	ck_assert_int_eq(esock_ddp_place_rebuf(&w->p, 0, 1, &nb), 0);
	b = esock_ddp_place_msg_buf(&w->p, 0, 1);
	ck_assert_ptr_eq(b->addr, nb.addr);
	ck_assert_uint_eq(b->cookie, 77);
	/* The rest lands in the new buffer, bounded by its length. */
	h.mo = 3;
	h.last = true;
	ck_assert_int_lt(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"de", 2, 0, &out), 0);
	free(w);
	w = world_new(2);
	nb.addr = w->rbuf[3] + GUARD;
	h.mo = 0;
	h.last = false;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"abc", 3, 0, &out), 0);
	memcpy(nb.addr, w->rbuf[0] + GUARD, 3);
	ck_assert_int_eq(esock_ddp_place_rebuf(&w->p, 0, 1, &nb), 0);
	h.mo = 3;
	h.last = true;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"d", 1, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 1);
	ck_assert_uint_eq(c.len, 4);
	ck_assert_uint_eq(c.buf.cookie, 77);
	ck_assert_int_eq(memcmp(w->rbuf[3] + GUARD, "abcd", 4), 0);
	ck_assert_uint_eq(w->rbuf[0][GUARD + 3], 0xee); /* nothing more in the old one */
	/* A known total longer than the new buffer: refused. */
	h.msn = 2;
	h.mo = 2;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"yz", 2, 0, &out), 0);
	nb.len = 3;
	ck_assert_int_eq(esock_ddp_place_rebuf(&w->p, 0, 2, &nb), -EINVAL);
	guards_intact(w);
	free(w);
}
END_TEST

START_TEST(test_msn_wrap)
{
	struct world *w = world_new(2);
	struct esock_ddp_placed out;
	struct esock_ddp_completion c;
	struct esock_ddp_hdr h = { .dv = 1, .last = true, .qn = 1 };

	w->p.next_msn[1] = UINT32_MAX;
	h.msn = UINT32_MAX;
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, NULL, 0, 0, &out), 0);
	h.msn = 0; /* after 0xFFFFFFFF comes 0 */
	ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, (const uint8_t *)"x", 1, 0, &out), 0);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 1);
	ck_assert_uint_eq(c.msn, UINT32_MAX);
	ck_assert_uint_eq(c.len, 0);
	ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 1);
	ck_assert_uint_eq(c.msn, 0);
	free(w);
}
END_TEST

START_TEST(test_random_segments)
{
	uint64_t rng = tu_rng_seed("ddp place random");

	for (int iter = 0; iter < 500; iter++) {
		struct world *w = world_new(1);
		static uint8_t msg[2048];
		size_t len = (size_t)tu_rng_below(&rng, sizeof(msg) + 1), cuts[8], ncut = 0;
		struct esock_ddp_placed out;
		struct esock_ddp_completion c;
		int order[9], nseg;

		tu_rng_fill(&rng, msg, len);
		/* Up to 8 segments: sorted random cut points (dups give empty ones). */
		ncut = (size_t)tu_rng_below(&rng, 8);
		for (size_t i = 0; i < ncut; i++)
			cuts[i] = (size_t)tu_rng_below(&rng, len + 1);
		for (size_t i = 1; i < ncut; i++)
			for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
				size_t t = cuts[j];

				cuts[j] = cuts[j - 1];
				cuts[j - 1] = t;
			}
		nseg = (int)ncut + 1;
		for (int i = 0; i < nseg; i++)
			order[i] = i;
		for (int i = nseg - 1; i > 0; i--) {
			int j = (int)tu_rng_below(&rng, (uint64_t)i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (int k = 0; k < nseg; k++) {
			int s = order[k];
			size_t lo = s == 0 ? 0 : cuts[s - 1], hi = s == nseg - 1 ? len : cuts[s];
			struct esock_ddp_hdr h = { .dv = 1, .last = s == nseg - 1, .msn = 1, .mo = (uint32_t)lo };

			ck_assert_int_eq(esock_ddp_place_segment(&w->p, &h, msg + lo, hi - lo, 0, &out), 0);
		}
		ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 1);
		ck_assert_uint_eq(c.len, len);
		ck_assert(memcmp(c.buf.addr, msg, len) == 0);
		ck_assert_int_eq(esock_ddp_place_poll(&w->p, &c), 0);
		guards_intact(w);
		free(w);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ddp_place");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_tagged_ok);
	tcase_add_loop_test(tc, test_tagged_errors, 0, (int)(sizeof(terrs) / sizeof(terrs[0])));
	tcase_add_loop_test(tc, test_untagged_errors, 0, (int)(sizeof(uerrs) / sizeof(uerrs[0])));
	tcase_add_test(tc, test_inconsistent_last);
	tcase_add_test(tc, test_out_of_order_all_permutations);
	tcase_add_test(tc, test_msn_order_delivery);
	tcase_add_test(tc, test_place_whole);
	tcase_add_test(tc, test_rebuf);
	tcase_add_test(tc, test_msn_wrap);
	tcase_add_test(tc, test_random_segments);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
