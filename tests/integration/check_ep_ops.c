/* SPDX-License-Identifier: MIT */
/*
 * Endpoint operations on loopback, both ends in this process: Send/Recv,
 * RDMA Write and RDMA Read for sizes from 0 octets to 16 MiB, data verified
 * byte for byte, completions checked for id, opcode, length and status.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ep_pair.h"
#include "tests/unit/testutil.h"

static const size_t sizes[] = { 0, 1, 3, 64, 1000, 4096, 65536, 1 << 20, 16 << 20 };
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 8));
	return p;
}

START_TEST(send_recv_sizes)
{
	struct ep_pair p;
	size_t len = sizes[_i];
	uint8_t *src = pattern(len, 1), *dst = calloc(1, len + 16);
	struct esock_mr *ms, *md;
	struct esock_wc wc;

	ck_assert_int_eq(ep_pair_open(&p, NULL, NULL), 0);
	ck_assert_int_eq(p.accept_rc, 0);
	ms = ep_reg(&p.a, src, len, 0);
	md = ep_reg(&p.b, dst, len + 16, ESOCK_ACCESS_LOCAL_WRITE);
	ep_post_recv1(&p.b, 77, dst, (uint32_t)len + 16, esock_mr_stag(md));
	ck_assert_int_eq(ep_post_send1(&p.a, 11, ESOCK_WR_SEND, src, (uint32_t)len, esock_mr_stag(ms), 0, 0), 0);
	ck_assert_int_eq(ep_wait1(p.b.rcq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, ESOCK_WC_RECV);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_int_eq(memcmp(src, dst, len), 0);
	ck_assert_int_eq(ep_wait1(p.a.scq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, ESOCK_WC_SEND);
	ck_assert_uint_eq(wc.wr_id, 11);
	esock_mr_dereg(ms);
	esock_mr_dereg(md);
	ep_pair_close(&p);
	free(src);
	free(dst);
}
END_TEST

START_TEST(write_sizes)
{
	struct ep_pair p;
	size_t len = sizes[_i];
	uint8_t *src = pattern(len, 2), *dst = calloc(1, len + 64);
	struct esock_mr *ms, *md;
	struct esock_wc wc;

	ck_assert_int_eq(ep_pair_open(&p, NULL, NULL), 0);
	ms = ep_reg(&p.a, src, len, 0);
	md = ep_reg(&p.b, dst, len + 64, ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(ep_post_send1(&p.a, 5, ESOCK_WR_RDMA_WRITE, src, (uint32_t)len,
				       esock_mr_stag(ms), (uint64_t)(uintptr_t)dst + 32, esock_mr_stag(md)), 0);
	ck_assert_int_eq(ep_wait1(p.a.scq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, ESOCK_WC_RDMA_WRITE);
	/* The Write is placed by the target's engine; a Send behind it orders it. */
	uint8_t flag = 0;
	struct esock_mr *mf = ep_reg(&p.b, &flag, 1, ESOCK_ACCESS_LOCAL_WRITE);

	ep_post_recv1(&p.b, 1, &flag, 1, esock_mr_stag(mf));
	ck_assert_int_eq(ep_post_send1(&p.a, 6, ESOCK_WR_SEND, src, len ? 1 : 0, esock_mr_stag(ms), 0, 0), 0);
	ck_assert_int_eq(ep_wait1(p.b.rcq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(memcmp(src, dst + 32, len), 0);
	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(dst[i], 0);
	ck_assert_int_eq(dst[32 + len], 0);
	esock_mr_dereg(ms);
	esock_mr_dereg(md);
	esock_mr_dereg(mf);
	ep_pair_close(&p);
	free(src);
	free(dst);
}
END_TEST

START_TEST(read_sizes)
{
	struct ep_pair p;
	size_t len = sizes[_i];
	uint8_t *src = pattern(len, 3), *dst = calloc(1, len + 8);
	struct esock_mr *ms, *md;
	struct esock_wc wc;

	ck_assert_int_eq(ep_pair_open(&p, NULL, NULL), 0);
	/* b's memory is read by a; b's application does nothing meanwhile. */
	ms = ep_reg(&p.b, src, len, ESOCK_ACCESS_REMOTE_READ);
	md = ep_reg(&p.a, dst, len + 8, ESOCK_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(ep_post_send1(&p.a, 9, ESOCK_WR_RDMA_READ, dst, (uint32_t)len,
				       esock_mr_stag(md), (uint64_t)(uintptr_t)src, esock_mr_stag(ms)), 0);
	ck_assert_int_eq(ep_wait1(p.a.scq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, ESOCK_WC_RDMA_READ);
	ck_assert_uint_eq(wc.wr_id, 9);
	ck_assert_int_eq(memcmp(src, dst, len), 0);
	ck_assert_int_eq(dst[len], 0);
	esock_mr_dereg(ms);
	esock_mr_dereg(md);
	ep_pair_close(&p);
	free(src);
	free(dst);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("endpoint operations");
	TCase *tc = tcase_create("sizes");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, send_recv_sizes, 0, NSIZES);
	tcase_add_loop_test(tc, write_sizes, 0, NSIZES);
	tcase_add_loop_test(tc, read_sizes, 0, NSIZES);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
