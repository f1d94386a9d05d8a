/* SPDX-License-Identifier: MIT */
/*
 * endpoint/ep_mem.c, the per-connection objects' memory: zeroed blocks,
 * 16-aligned, of any size (large ones from calloc), used again after they
 * are given back (and zeroed again), overflow refused, a foreign or a second
 * ep_free left alone, and many threads at once.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint/ep_mem.h"
#include "tests/unit/testutil.h"

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

START_TEST(sizes_zeroed_aligned)
{
	static const size_t sizes[] = { 1, 16, 40, 240, 241, 1000, 3920, 4096, 16368, 16369, 100000 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p = ep_calloc(1, sizes[i]);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % 16, 0);
		ck_assert(all_zero(p, sizes[i]));
		memset(p, 0xa5, sizes[i]); /* the whole block is ours to write (ASan checks the big ones) */
		ep_free(p);
	}
	ep_free(NULL);
}
END_TEST

START_TEST(reused_zeroed)
{
	uint8_t *a = ep_calloc(30, 100), *b;

	ck_assert_ptr_nonnull(a);
	memset(a, 0xff, 3000);
	ep_free(a);
	b = ep_calloc(3000, 1); /* the same size class: the block just given back */
	ck_assert_ptr_eq(a, b);
	ck_assert(all_zero(b, 3000));
	ep_free(b);
}
END_TEST

START_TEST(overflow_and_bad_frees)
{
	uint8_t *p = ep_calloc(2, 64);
	uint8_t *q;
	uint8_t stack[64] = { 0 };

	ck_assert_ptr_null(ep_calloc(SIZE_MAX / 2, 4));
	ck_assert_ptr_null(ep_calloc(2, SIZE_MAX - 8));
	ck_assert_ptr_nonnull(p);
	ep_free(p);
	ep_free(p);             /* a second free: refused, the list stays sound */
	ep_free(stack + 16);     /* not ours: refused */
	q = ep_calloc(2, 64);
	ck_assert_ptr_eq(q, p);
	ck_assert_ptr_ne(ep_calloc(2, 64), q); /* (given out once only) */
}
END_TEST

#define THREADS 4
#define ROUNDS 20000

static void *churn(void *arg)
{
	uint8_t *held[16] = { 0 };
	unsigned seed = (unsigned)(uintptr_t)arg, bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		unsigned k = (unsigned)rand_r(&seed) % 16;
		size_t n = 1 + (size_t)rand_r(&seed) % 6000;

		if (held[k]) {
			if (held[k][0] != (uint8_t)(uintptr_t)arg)
				bad++; /* somebody else wrote into our block */
			ep_free(held[k]);
		}
		if (!(held[k] = ep_calloc(1, n)) || !all_zero(held[k], n))
			bad++;
		else
			memset(held[k], (int)(uintptr_t)arg, n);
	}
	for (int k = 0; k < 16; k++)
		ep_free(held[k]);
	return (void *)(uintptr_t)bad;
}

START_TEST(threads)
{
	pthread_t t[THREADS];

	for (uintptr_t i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++) {
		void *bad;

		ck_assert_int_eq(pthread_join(t[i], &bad), 0);
		ck_assert_uint_eq((uintptr_t)bad, 0);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ep_mem");
	TCase *tc = tcase_create("blocks");

	tcase_add_test(tc, sizes_zeroed_aligned);
	tcase_add_test(tc, reused_zeroed);
	tcase_add_test(tc, overflow_and_bad_frees);
	tcase_add_test(tc, threads);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
