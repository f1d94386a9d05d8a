/* SPDX-License-Identifier: MIT */
/*
 * The receive buffers a process's DDPMODE sockets share (libesock/sock_rxbuf.c):
 * the one freed last is the next one taken (its pages still in cache), sizes
 * do not mix, and free buffers beyond the hot budget give their pages back.
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libesock/sock_rxbuf.h"
#include "tests/unit/testutil.h"

/* Whether the first page of |p| is resident. */
static bool resident(void *p)
{
	unsigned char v = 0;
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);

	ck_assert_int_eq(mincore((void *)page, 1, &v), 0);
	return v & 1;
}

START_TEST(last_freed_first)
{
	void *a = sock_rxbuf_get(65536), *b = sock_rxbuf_get(65536), *c;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	memset(a, 1, 65536); /* the whole buffer is usable */
	memset(b, 2, 65536);
	sock_rxbuf_put(a, 65536);
	sock_rxbuf_put(b, 65536);
	c = sock_rxbuf_get(65536);
	ck_assert_ptr_eq(c, b);
	ck_assert_ptr_eq(sock_rxbuf_get(65536), a);
	sock_rxbuf_put(a, 65536);
	sock_rxbuf_put(c, 65536);
}
END_TEST

START_TEST(sizes_apart)
{
	void *small = sock_rxbuf_get(4096), *big;

	ck_assert_ptr_nonnull(small);
	sock_rxbuf_put(small, 4096);
	big = sock_rxbuf_get(1 << 20);
	ck_assert_ptr_nonnull(big);
	ck_assert_ptr_ne(big, small); /* a 4 KiB buffer never serves a 1 MiB message */
	memset(big, 3, 1 << 20);
	ck_assert_ptr_eq(sock_rxbuf_get(4096), small);
	sock_rxbuf_put(small, 4096);
	sock_rxbuf_put(big, 1 << 20);
}
END_TEST

/* 16 MiB of free 1 MiB buffers keep their pages; the ones freed earlier give them back. */
START_TEST(cold_ones_give_pages_back)
{
	enum { N = 40, SZ = 1 << 20 };
	static void *b[N];

	for (int i = 0; i < N; i++) {
		ck_assert_ptr_nonnull(b[i] = sock_rxbuf_get(SZ));
		memset(b[i], 4, SZ);
		ck_assert(resident(b[i]));
	}
	for (int i = 0; i < N; i++)
		sock_rxbuf_put(b[i], SZ);
	ck_assert_msg(!resident(b[0]), "the buffer freed first kept its pages");
	ck_assert_msg(resident(b[N - 1]), "the buffer freed last lost its pages");
	/* Taken again, a released buffer is memory as good as new. */
	for (int i = 0; i < N; i++)
		ck_assert_ptr_nonnull(b[i] = sock_rxbuf_get(SZ));
	for (int i = 0; i < N; i++) {
		memset(b[i], 5, SZ);
		sock_rxbuf_put(b[i], SZ);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sock_rxbuf");
	TCase *tc = tcase_create("rxbuf");

	tcase_add_test(tc, last_freed_first);
	tcase_add_test(tc, sizes_apart);
	tcase_add_test(tc, cold_ones_give_pages_back);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
