/* SPDX-License-Identifier: MIT */
/* DDP header codec: reference headers, truncation, version check, round trips. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/ddp.h>

#include "tests/unit/mpa_vectors.h"
#include "tests/unit/testutil.h"

START_TEST(test_reference_tagged)
{
	uint8_t w[128], out[32];
	struct esock_ddp_hdr h;

	tu_hex(fpdu_vecs[0].hex, w, sizeof(w));
	ck_assert_int_eq(esock_ddp_hdr_decode(&h, w + 2, 14), 14);
	ck_assert(h.tagged && h.last);
	ck_assert_uint_eq(h.dv, 1);
	ck_assert_uint_eq(h.ulp_ctrl, 0x40);
	ck_assert_uint_eq(h.stag, 1);
	ck_assert_uint_eq(h.to, 0);
	ck_assert_int_eq(esock_ddp_hdr_encode(&h, out, sizeof(out)), 14);
	tu_assert_mem(out, w + 2, 14);
}
END_TEST

START_TEST(test_reference_untagged)
{
	uint8_t w[128], out[32];
	struct esock_ddp_hdr h;

	tu_hex(fpdu_vecs[3].hex, w, sizeof(w)); /* Read Request: QN 1, MSN 1 */
	ck_assert_int_eq(esock_ddp_hdr_decode(&h, w + 2, 46), 18);
	ck_assert(!h.tagged && h.last);
	ck_assert_uint_eq(h.ulp_ctrl, 0x41);
	ck_assert_uint_eq(h.qn, 1);
	ck_assert_uint_eq(h.msn, 1);
	ck_assert_uint_eq(h.mo, 0);
	ck_assert_int_eq(esock_ddp_hdr_encode(&h, out, sizeof(out)), 18);
	tu_assert_mem(out, w + 2, 18);
}
END_TEST

START_TEST(test_truncated)
{
	uint8_t b[18] = { 0x80 | 0x41 };
	struct esock_ddp_hdr h;

	for (size_t n = 0; n < 14; n++)
		ck_assert_int_eq(esock_ddp_hdr_decode(&h, b, n), -EBADMSG);
	ck_assert_int_eq(esock_ddp_hdr_decode(&h, b, 14), 14);
	b[0] = 0x41;
	for (size_t n = 0; n < 18; n++)
		ck_assert_int_eq(esock_ddp_hdr_decode(&h, b, n), -EBADMSG);
	ck_assert_int_eq(esock_ddp_hdr_decode(&h, b, 18), 18);
	ck_assert_int_eq(esock_ddp_hdr_encode(&h, b, 17), -ENOBUFS);
}
END_TEST

START_TEST(test_version_check)
{
	struct esock_ddp_hdr h = { .tagged = true, .dv = 0 };
	struct esock_term t = { 0 };

	ck_assert_int_eq(esock_ddp_hdr_check(&h, &t), -EPROTO);
	ck_assert(t.valid && t.layer == ESOCK_TERM_LAYER_DDP);
	ck_assert_uint_eq(t.etype, ESOCK_TERM_DDP_ETYPE_TAGGED);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_DDP_T_VERSION);
	memset(&t, 0, sizeof(t));
	h.tagged = false;
	h.dv = 2;
	ck_assert_int_eq(esock_ddp_hdr_check(&h, &t), -EPROTO);
	ck_assert_uint_eq(t.etype, ESOCK_TERM_DDP_ETYPE_UNTAGGED);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_DDP_U_VERSION);
	h.dv = 1;
	ck_assert_int_eq(esock_ddp_hdr_check(&h, &t), 0);
}
END_TEST

START_TEST(test_round_trip)
{
	uint64_t rng = tu_rng_seed("ddp hdr round trip");

	for (int i = 0; i < 20000; i++) {
		uint8_t b[18], b2[18];
		struct esock_ddp_hdr h, d;
		ssize_t n;

		tu_rng_fill(&rng, b, sizeof(b));
		n = esock_ddp_hdr_decode(&h, b, sizeof(b));
		ck_assert_int_eq(n, (b[0] & 0x80) ? 14 : 18);
		ck_assert_int_eq(esock_ddp_hdr_encode(&h, b2, sizeof(b2)), n);
		tu_assert_mem(b2, b, (size_t)n);
		ck_assert_int_eq(esock_ddp_hdr_decode(&d, b2, (size_t)n), n);
		ck_assert(memcmp(&d, &h, sizeof(h)) == 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ddp_hdr");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reference_tagged);
	tcase_add_test(tc, test_reference_untagged);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_version_check);
	tcase_add_test(tc, test_round_trip);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
