/* SPDX-License-Identifier: MIT */
/*
 * kpatch/verbs/vb_keys.c, the verbs backend's STag -> MR map: what is put is
 * found, what is deleted is gone while the rest of its probe run stays
 * findable (backward shift), growth keeps everything, and many readers look
 * up while a writer registers and deregisters.  Checked against a plain
 * array, with keys that collide on purpose.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "kpatch/verbs/vb_keys.h"
#include "tests/unit/testutil.h"

#define N 4096

static uintptr_t val_of(uint32_t key)
{
	return (uintptr_t)key * 8 + 8; /* never NULL */
}

START_TEST(put_get_del)
{
	struct vb_keys k;
	static uint8_t present[N];
	unsigned seed = 7;

	vb_keys_init(&k);
	ck_assert_ptr_null(vb_keys_get(&k, 1)); /* empty */
	vb_keys_del(&k, 1);
	ck_assert_int_eq(vb_keys_put(&k, 1, NULL), -EINVAL);
	/* Keys i << 8 (as STags are: index above, key octet below) and a few that collide. */
	for (int round = 0; round < 40000; round++) {
		uint32_t i = (uint32_t)rand_r(&seed) % N, key = i << 8;

		if (rand_r(&seed) % 3) {
			ck_assert_int_eq(vb_keys_put(&k, key, (void *)val_of(key)), 0);
			present[i] = 1;
		} else {
			vb_keys_del(&k, key);
			present[i] = 0;
		}
		if (round % 1000 == 0)
			for (uint32_t j = 0; j < N; j++)
				ck_assert_ptr_eq(vb_keys_get(&k, j << 8),
						 present[j] ? (void *)val_of(j << 8) : NULL);
	}
	for (uint32_t j = 0; j < N; j++) {
		ck_assert_ptr_eq(vb_keys_get(&k, j << 8), present[j] ? (void *)val_of(j << 8) : NULL);
		ck_assert_ptr_null(vb_keys_get(&k, (j << 8) | 1)); /* another key octet */
	}
	ck_assert_uint_le(k.n * 2, k.cap);
	vb_keys_fini(&k);
}
END_TEST

START_TEST(replace)
{
	struct vb_keys k;

	vb_keys_init(&k);
	ck_assert_int_eq(vb_keys_put(&k, 42, (void *)8), 0);
	ck_assert_int_eq(vb_keys_put(&k, 42, (void *)16), 0);
	ck_assert_ptr_eq(vb_keys_get(&k, 42), (void *)16);
	ck_assert_uint_eq(k.n, 1);
	vb_keys_del(&k, 42);
	ck_assert_ptr_null(vb_keys_get(&k, 42));
	ck_assert_uint_eq(k.n, 0);
	vb_keys_fini(&k);
}
END_TEST

static struct vb_keys shared;
static atomic_int stop;

/* Keys below 1024 stay put all along: every lookup of one must find it. */
static void *reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	uintptr_t misses = 0;

	while (!atomic_load(&stop)) {
		uint32_t key = ((uint32_t)rand_r(&seed) % 1024) << 8;

		if (vb_keys_get(&shared, key) != (void *)val_of(key))
			misses++;
	}
	return (void *)misses;
}

START_TEST(readers_and_a_writer)
{
	pthread_t t[3];
	unsigned seed = 3;

	vb_keys_init(&shared);
	for (uint32_t i = 0; i < 1024; i++)
		ck_assert_int_eq(vb_keys_put(&shared, i << 8, (void *)val_of(i << 8)), 0);
	atomic_store(&stop, 0);
	for (uintptr_t i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reader, (void *)(i + 1)), 0);
	for (int round = 0; round < 5000; round++) { /* others come and go (and grow the table) */
		uint32_t key = (1024 + (uint32_t)rand_r(&seed) % 8192) << 8;

		if (round % 2)
			vb_keys_del(&shared, key);
		else
			ck_assert_int_eq(vb_keys_put(&shared, key, (void *)val_of(key)), 0);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++) {
		void *misses;

		ck_assert_int_eq(pthread_join(t[i], &misses), 0);
		ck_assert_uint_eq((uintptr_t)misses, 0);
	}
	vb_keys_fini(&shared);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("vb_keys");
	TCase *tc = tcase_create("map");

	tcase_add_test(tc, put_get_del);
	tcase_add_test(tc, replace);
	tcase_add_test(tc, readers_and_a_writer);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
