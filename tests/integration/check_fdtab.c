/* SPDX-License-Identifier: MIT */
/*
 * The interposer's descriptor table (libesock/fdtab.[ch]): lookups of set,
 * cleared, negative and out-of-range descriptors, and readers racing
 * writers: a reader may see a slot before or after a write, never anything
 * else.  The library's own descriptors (libc/ownfd.[ch]) and the searches
 * closefrom and close_range make over both.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "libc/ownfd.h"
#include "libesock/fdtab.h"
#include "tests/unit/testutil.h"

#define FDS 4096

/* A recognisable fake socket pointer for |fd| (never dereferenced). */
static struct esock_sock *fake(int fd)
{
	return (struct esock_sock *)(uintptr_t)((uintptr_t)fd << 4 | 8);
}

START_TEST(basics)
{
	ck_assert_int_eq(esock_fdtab_init(), 0);
	ck_assert_ptr_null(esock_fdtab_get(5));
	ck_assert_int_eq(esock_fdtab_set(5, fake(5)), 0);
	ck_assert_ptr_eq(esock_fdtab_get(5), fake(5));
	ck_assert_ptr_null(esock_fdtab_get(6));
	ck_assert_ptr_eq(esock_fdtab_take(5), fake(5));
	ck_assert_ptr_null(esock_fdtab_get(5));
	ck_assert_ptr_null(esock_fdtab_take(5));
	ck_assert_int_eq(esock_fdtab_set(-1, fake(1)), -EBADF);
	ck_assert_ptr_null(esock_fdtab_get(-1));
	ck_assert_ptr_null(esock_fdtab_get(INT_MAX));
	ck_assert_int_eq(esock_fdtab_set(INT_MAX, fake(1)), -EMFILE);
	ck_assert_ptr_null(esock_fdtab_take(INT_MAX));
	/* Clearing a slot in a page that does not exist yet is a no-op. */
	ck_assert_int_eq(esock_fdtab_set(3000, NULL), 0);
}
END_TEST

static atomic_int stop, bad;

static void *writer(void *arg)
{
	int first = (int)(intptr_t)arg;

	while (!atomic_load(&stop))
		for (int fd = first; fd < FDS; fd += 2) {
			esock_fdtab_set(fd, fake(fd));
			esock_fdtab_take(fd);
		}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		for (int fd = 0; fd < FDS; fd++) {
			struct esock_sock *s = esock_fdtab_get(fd);

			if (s && s != fake(fd))
				atomic_fetch_add(&bad, 1);
		}
	return NULL;
}

/* The next DDPMODE or own descriptor in a span, across pages and at its ends. */
START_TEST(next_in_span)
{
	int fd = dup(0);

	ck_assert_int_eq(esock_fdtab_init(), 0);
	ck_assert_int_eq(esock_fdtab_next(0, ~0u), -1);
	ck_assert_int_eq(esock_fdtab_set(7, fake(7)), 0);
	ck_assert_int_eq(esock_fdtab_set(3000, fake(3000)), 0);
	ck_assert_int_eq(esock_fdtab_next(0, ~0u), 7);
	ck_assert_int_eq(esock_fdtab_next(7, 7), 7);
	ck_assert_int_eq(esock_fdtab_next(8, ~0u), 3000);
	ck_assert_int_eq(esock_fdtab_next(8, 2999), -1);
	ck_assert_int_eq(esock_fdtab_next(3001, ~0u), -1);
	ck_assert_ptr_eq(esock_fdtab_take(7), fake(7));
	ck_assert_ptr_eq(esock_fdtab_take(3000), fake(3000));
	ck_assert_int_eq(esock_fdtab_next(0, ~0u), -1);

	ck_assert_int_ge(fd, 0);
	ck_assert(!esock_fd_is_own(fd));
	esock_fd_own(fd);
	esock_fd_own(2500);
	ck_assert(esock_fd_is_own(fd));
	ck_assert(esock_fd_is_own(2500));
	ck_assert(!esock_fd_is_own(-1));
	ck_assert(!esock_fd_is_own(2501));
	ck_assert_int_eq(esock_fd_next_own(0, ~0u), fd);
	ck_assert_int_eq(esock_fd_next_own((unsigned)fd + 1, ~0u), 2500);
	ck_assert_int_eq(esock_fd_next_own((unsigned)fd + 1, 2499), -1);
	ck_assert_int_eq(esock_fd_close(fd), 0); /* forgets the mark, closes it */
	ck_assert(!esock_fd_is_own(fd));
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
	ck_assert_int_eq(esock_fd_next_own(0, ~0u), 2500);
	ck_assert_int_eq(esock_fd_close(2500), -1); /* (never open: the mark goes all the same) */
	ck_assert_int_eq(esock_fd_next_own(0, ~0u), -1);
}
END_TEST

START_TEST(races)
{
	pthread_t w[2], r[2];

	ck_assert_int_eq(esock_fdtab_init(), 0);
	for (int i = 0; i < 2; i++) {
		pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i);
		pthread_create(&r[i], NULL, reader, NULL);
	}
	usleep(300000);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
		pthread_join(r[i], NULL);
	}
	ck_assert_int_eq(atomic_load(&bad), 0);
	for (int fd = 0; fd < FDS; fd++)
		ck_assert_ptr_null(esock_fdtab_get(fd));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fd table");
	TCase *tc = tcase_create("fdtab");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, basics);
	tcase_add_test(tc, next_in_span);
	tcase_add_test(tc, races);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
