/* SPDX-License-Identifier: MIT */
/* DDP segmentation: sizes around MULPDU, empty messages, TO/MO/L/MSN rules. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/ddp.h>

#include "tests/unit/testutil.h"

static void check_message(bool tagged, size_t len, size_t mulpdu, uint64_t start)
{
	struct esock_ddp_hdr t = { .tagged = tagged, .dv = 1, .ulp_ctrl = tagged ? 0x40 : 0x43,
				   .stag = 0x1234, .to = start, .qn = 0, .msn = 7,
				   .mo = tagged ? 0 : (uint32_t)start },
			     h;
	struct esock_ddp_seg s;
	size_t hlen = tagged ? 14 : 18, off, n, sum = 0, segs = 0, expect_off = 0;

	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, len, mulpdu), 0);
	while (esock_ddp_seg_next(&s, &h, &off, &n)) {
		ck_assert_uint_eq(off, expect_off);
		ck_assert_uint_le(hlen + n, mulpdu);
		ck_assert(h.tagged == tagged && h.dv == 1 && h.ulp_ctrl == t.ulp_ctrl);
		if (tagged) {
			ck_assert_uint_eq(h.stag, 0x1234);
			ck_assert(h.to == start + off);
		} else {
			ck_assert_uint_eq(h.msn, 7);
			ck_assert_uint_eq(h.mo, (uint32_t)start + off);
		}
		ck_assert(h.last == (off + n == len));
		if (!h.last)
			ck_assert_uint_eq(n % 4, 0);
		sum += n;
		expect_off += n;
		segs++;
	}
	ck_assert_uint_eq(sum, len);
	ck_assert_uint_ge(segs, 1);
	ck_assert(!esock_ddp_seg_next(&s, &h, &off, &n));
}

START_TEST(test_sizes)
{
	static const size_t mulpdus[] = { 22, 23, 64, 1442, 1430, 65535 };

	for (size_t m = 0; m < sizeof(mulpdus) / sizeof(mulpdus[0]); m++)
		for (size_t len = 0; len < 3000; len += (len < 100 ? 1 : 37)) {
			check_message(true, len, mulpdus[m], 0x1000);
			check_message(false, len, mulpdus[m], 0);
		}
	check_message(true, 100000, 1442, 0);
}
END_TEST

START_TEST(test_siw_like_4096)
{
	/* MULPDU 1442 (EMSS 1448): a 4096-octet Send is 1424 + 1424 + 1248. */
	struct esock_ddp_hdr t = { .dv = 1, .ulp_ctrl = 0x43, .msn = 1 }, h;
	struct esock_ddp_seg s;
	size_t off, n, lens[4], k = 0;

	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, 4096, 1442), 0);
	while (esock_ddp_seg_next(&s, &h, &off, &n))
		lens[k++] = n;
	ck_assert_uint_eq(k, 3);
	ck_assert_uint_eq(lens[0], 1424);
	ck_assert_uint_eq(lens[1], 1424);
	ck_assert_uint_eq(lens[2], 1248);
}
END_TEST

START_TEST(test_to_wrap_and_errors)
{
	struct esock_ddp_hdr t = { .tagged = true, .dv = 1, .to = UINT64_MAX - 10 }, h;
	struct esock_ddp_seg s;
	size_t off, n;

	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, 40, 30), 0);
	ck_assert(esock_ddp_seg_next(&s, &h, &off, &n));
	ck_assert(esock_ddp_seg_next(&s, &h, &off, &n));
	ck_assert(h.to == UINT64_MAX - 10 + 16); /* wraps like the wire field */
	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, 1, 17), -EINVAL);
	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, 0, 13), -EINVAL);
	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, 0, 14), 0);
	t.tagged = false;
	t.mo = UINT32_MAX - 3;
	ck_assert_int_eq(esock_ddp_seg_init(&s, &t, 5, 100), -EMSGSIZE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ddp_seg");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_siw_like_4096);
	tcase_add_test(tc, test_to_wrap_and_errors);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
