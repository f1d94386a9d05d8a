/* SPDX-License-Identifier: MIT */
/*
 * The endpoint reaches the C library only through its resolved-real table
 * (libc/real.h): this program defines its own recv, send, recvmsg,
 * sendmsg and poll, as libesock's interposer will, and counts the
 * calls that land in them while a pair of QPs connects, moves data both
 * ways, and is torn down.  Any count above zero would be a call that, under
 * the interposer, recursed into the library's own wrappers.
 */
#include "config.h"

#define _GNU_SOURCE 1
#include <check.h>
#include <dlfcn.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/ep_pair.h"
#include "tests/unit/testutil.h"

static atomic_int hits;

#define FORWARD(ret, name, params, args)                                  \
	ret name params                                                   \
	{                                                                 \
		static ret(*real) params;                                 \
		if (!real)                                                \
			*(void **)&real = dlsym(RTLD_NEXT, #name);        \
		atomic_fetch_add(&hits, 1);                               \
		return real args;                                         \
	}

FORWARD(ssize_t, recv, (int fd, void *b, size_t n, int f), (fd, b, n, f))
FORWARD(ssize_t, send, (int fd, const void *b, size_t n, int f), (fd, b, n, f))
FORWARD(ssize_t, recvmsg, (int fd, struct msghdr *m, int f), (fd, m, f))
FORWARD(ssize_t, sendmsg, (int fd, const struct msghdr *m, int f), (fd, m, f))
FORWARD(int, poll, (struct pollfd *p, nfds_t n, int t), (p, n, t))

START_TEST(no_direct_calls)
{
	struct ep_pair p;
	static uint8_t src[200000], dst[200000];
	struct esock_mr *ms, *md;
	struct esock_wc wc;

	memset(src, 0x5a, sizeof(src));
	atomic_store(&hits, 0);
	ck_assert_int_eq(ep_pair_open(&p, NULL, NULL), 0);
	ms = ep_reg(&p.a, src, sizeof(src), ESOCK_ACCESS_REMOTE_READ);
	md = ep_reg(&p.b, dst, sizeof(dst), ESOCK_ACCESS_LOCAL_WRITE);
	ep_post_recv1(&p.b, 1, dst, sizeof(dst), esock_mr_stag(md));
	ck_assert_int_eq(ep_post_send1(&p.a, 2, ESOCK_WR_SEND, src, sizeof(src), esock_mr_stag(ms), 0, 0), 0);
	ck_assert_int_eq(ep_wait1(p.b.rcq, &wc), 1);
	ck_assert_int_eq(ep_post_send1(&p.b, 3, ESOCK_WR_RDMA_READ, dst, sizeof(dst), esock_mr_stag(md),
				       (uint64_t)(uintptr_t)src, esock_mr_stag(ms)), 0);
	ck_assert_int_eq(ep_wait1(p.b.scq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(memcmp(src, dst, sizeof(src)), 0);
	esock_mr_dereg(ms);
	esock_mr_dereg(md);
	ep_pair_close(&p);
	int h = atomic_load(&hits);

	ck_assert_msg(h == 0, "%d calls reached the C library around the table", h);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("endpoint calls libc through its table");
	TCase *tc = tcase_create("real");

	tcase_add_test(tc, no_direct_calls);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
