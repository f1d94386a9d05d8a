/* SPDX-License-Identifier: MIT */
/*
 * The lock-free ring of endpoint/ep_ring.h under contention: several
 * producer threads and several copying consumers move numbered items
 * through a small ring; every item must come out exactly once, each
 * producer's items in its order.  Also the single-thread edge cases: full,
 * empty, wrap-around of the 32-bit positions, in-place consumption.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint/ep_ring.h"
#include "tests/unit/testutil.h"

#define PRODUCERS 4
#define CONSUMERS 3
#define PER_PRODUCER 20000u

struct shared {
	struct ep_ring r;
	uint64_t *slot;
	atomic_uint taken;
	uint8_t *seen;           /* per item */
	uint32_t last[CONSUMERS][PRODUCERS]; /* last sequence seen, per consumer and producer */
	atomic_int order_errors;
};

static struct shared sh;

static void *producer(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;

	for (uint32_t i = 0; i < PER_PRODUCER; i++) {
		uint32_t pos;

		while (!ep_ring_claim(&sh.r, &pos))
			sched_yield(); /* two cores, seven threads: let the others run */
		sh.slot[ep_ring_idx(&sh.r, pos)] = id << 32 | i;
		ep_ring_publish(&sh.r, pos);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	int me = (int)(uintptr_t)arg;

	while (atomic_load(&sh.taken) < PRODUCERS * PER_PRODUCER) {
		uint32_t pos;

		if (!ep_ring_take(&sh.r, &pos)) {
			sched_yield();
			continue;
		}
		uint64_t v = sh.slot[ep_ring_idx(&sh.r, pos)];

		ep_ring_release(&sh.r, pos);
		uint32_t p = (uint32_t)(v >> 32), i = (uint32_t)v;

		/* One consumer sees one producer's items in increasing order. */
		if (sh.last[me][p] && i <= sh.last[me][p] - 1)
			atomic_fetch_add(&sh.order_errors, 1);
		sh.last[me][p] = i + 1;
		sh.seen[(size_t)p * PER_PRODUCER + i]++;
		atomic_fetch_add(&sh.taken, 1);
	}
	return NULL;
}

START_TEST(contended)
{
	pthread_t pt[PRODUCERS], ct[CONSUMERS];

	memset(&sh, 0, sizeof(sh));
	ck_assert_int_eq(ep_ring_init(&sh.r, 16), 0);
	sh.slot = calloc(sh.r.size, sizeof(*sh.slot));
	sh.seen = calloc((size_t)PRODUCERS * PER_PRODUCER, 1);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_create(&ct[i], NULL, consumer, (void *)(uintptr_t)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_create(&pt[i], NULL, producer, (void *)(uintptr_t)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(ct[i], NULL);
	for (size_t k = 0; k < (size_t)PRODUCERS * PER_PRODUCER; k++)
		ck_assert_msg(sh.seen[k] == 1, "item %zu seen %u times", k, sh.seen[k]);
	ck_assert_int_eq(atomic_load(&sh.order_errors), 0);
	ck_assert_uint_eq(ep_ring_count(&sh.r), 0);
	free(sh.slot);
	free(sh.seen);
	ep_ring_fini(&sh.r);
}
END_TEST

START_TEST(edges)
{
	struct ep_ring r;
	uint32_t pos, p2;

	ck_assert_int_eq(ep_ring_init(&r, 3), 0);
	ck_assert_uint_eq(r.size, 4);
	ck_assert(!ep_ring_take(&r, &pos)); /* empty */
	for (uint32_t i = 0; i < 4; i++) {
		ck_assert(ep_ring_claim(&r, &pos));
		ck_assert_uint_eq(pos, i);
		ck_assert(!ep_ring_ready(&r, pos)); /* claimed, not yet published */
		ep_ring_publish(&r, pos);
		ck_assert(ep_ring_ready(&r, pos));
	}
	ck_assert(!ep_ring_claim(&r, &pos)); /* full */
	/* In-place consumption: a slot comes back only when released. */
	ep_ring_release(&r, 0);
	ck_assert(ep_ring_claim(&r, &pos));
	ck_assert_uint_eq(pos, 4);
	ck_assert(!ep_ring_claim(&r, &p2));
	ep_ring_fini(&r);
	/* Positions wrap around 2^32 without a hiccup. */
	ck_assert_int_eq(ep_ring_init(&r, 4), 0);
	atomic_store(&r.head, UINT32_MAX - 5);
	atomic_store(&r.tail, UINT32_MAX - 5);
	for (uint32_t i = 0; i < 4; i++)
		atomic_store(&r.seq[ep_ring_idx(&r, UINT32_MAX - 5 + i)], UINT32_MAX - 5 + i);
	for (int round = 0; round < 12; round++) {
		ck_assert(ep_ring_claim(&r, &pos));
		ep_ring_publish(&r, pos);
		ck_assert(ep_ring_take(&r, &p2));
		ck_assert_uint_eq(p2, pos);
		ep_ring_release(&r, p2);
	}
	ck_assert_uint_eq(atomic_load(&r.head), UINT32_MAX - 5 + 12);
	ep_ring_fini(&r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lock-free ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, edges);
	tcase_add_test(tc, contended);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
