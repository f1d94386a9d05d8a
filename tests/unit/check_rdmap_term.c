/* SPDX-License-Identifier: MIT */
/*
 * RDMAP Terminate: reference frames, copied headers (DDP tagged/untagged,
 * Read Request), both bit orders (RFC and siw's little-endian bit-fields) with
 * automatic detection, the builder's header-copy rules, and round trips.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/rdmap.h>

#include "tests/unit/mpa_vectors.h"
#include "tests/unit/testutil.h"
#include "util/byteorder.h"

START_TEST(test_reference_llp_crc)
{
	uint8_t w[128], out[128];
	struct esock_term t = { .layer = ESOCK_TERM_LAYER_LLP, .etype = 0, .ecode = ESOCK_TERM_LLP_CRC };
	struct esock_rdmap_term tm;
	int n = tu_hex(fpdu_vecs[5].hex, w, sizeof(w));

	esock_rdmap_term_build(&tm, &t, NULL, 0);
	ck_assert_int_eq(esock_rdmap_term_msg(&tm, 1, out, sizeof(out)), 22);
	tu_assert_mem(out, w + 2, 22);
	(void)n;
}
END_TEST

START_TEST(test_build_copies_untagged_header)
{
	/* A Send with a bad MSN: Terminate DDP/untagged/0x03 with M and D. */
	uint8_t seg[64], out[128];
	int n = tu_hex("41 43 00 00 00 00 00 00 00 00 00 00 00 09 00 00 00 00 61 62 63", seg, sizeof(seg));
	struct esock_term t = { true, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED,
				ESOCK_TERM_DDP_U_MSN_RANGE, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D };
	struct esock_rdmap_term tm;
	struct esock_rdmap_msg m;
	uint8_t want[64];
	int wn = tu_hex("41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00"
			" 12 03 c0 00 00 15"
			" 41 43 00 00 00 00 00 00 00 00 00 00 00 09 00 00 00 00", want, sizeof(want));
	ssize_t len;

	esock_rdmap_term_build(&tm, &t, seg, (size_t)n);
	ck_assert_uint_eq(tm.ddp_seg_len, 21);
	ck_assert_uint_eq(tm.ddp_hdr_len, 18);
	len = esock_rdmap_term_msg(&tm, 1, out, sizeof(out));
	ck_assert_int_eq(len, wn);
	tu_assert_mem(out, want, (size_t)wn);
	ck_assert_int_eq(esock_rdmap_decode(&m, out, (size_t)len, NULL, NULL), len);
	ck_assert_uint_eq(m.u.term.order, ESOCK_RDMAP_TERM_RFC);
	ck_assert_uint_eq(m.u.term.t.hdrct, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	tu_assert_mem(m.u.term.ddp_hdr, seg, 18);
}
END_TEST

START_TEST(test_build_copies_read_request)
{
	uint8_t seg[64], out[128];
	int n = tu_hex("41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00"
		       " 00 00 00 07 00 00 00 00 00 00 10 00 00 00 01 00 00 00 00 99 00 00 00 00 00 00 00 00",
		       seg, sizeof(seg));
	struct esock_term t = { true, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_PROTECTION,
				ESOCK_TERM_RDMAP_INV_STAG,
				ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D | ESOCK_TERM_HDRCT_R };
	struct esock_rdmap_term tm;
	struct esock_rdmap_msg m;
	ssize_t len;

	ck_assert_int_eq(n, 46);
	esock_rdmap_term_build(&tm, &t, seg, (size_t)n);
	ck_assert_uint_eq(tm.t.hdrct, t.hdrct);
	len = esock_rdmap_term_msg(&tm, 1, out, sizeof(out));
	ck_assert_int_eq(len, 18 + 4 + 2 + 18 + 28);
	ck_assert_int_eq(esock_rdmap_decode(&m, out, (size_t)len, NULL, NULL), len);
	tu_assert_mem(m.u.term.rdmap_hdr, seg + 18, 28);
	ck_assert_uint_eq(m.u.term.t.ecode, ESOCK_TERM_RDMAP_INV_STAG);
	/* R on a segment that is not a Read Request: dropped. */
	seg[1] = 0x43;
	esock_rdmap_term_build(&tm, &t, seg, 18);
	ck_assert_uint_eq(tm.t.hdrct, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	/* No segment at all: no copies. */
	esock_rdmap_term_build(&tm, &t, NULL, 0);
	ck_assert_uint_eq(tm.t.hdrct, 0);
}
END_TEST

START_TEST(test_tagged_copy)
{
	uint8_t seg[32] = { 0xc1, 0x40, 0, 0, 0x12, 0x34 }, out[128];
	struct esock_term t = { true, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_TAGGED,
				ESOCK_TERM_DDP_T_BASE_BOUNDS, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D };
	struct esock_rdmap_term tm;
	struct esock_rdmap_msg m;
	ssize_t len;

	esock_rdmap_term_build(&tm, &t, seg, sizeof(seg));
	ck_assert_uint_eq(tm.ddp_hdr_len, 14);
	len = esock_rdmap_term_msg(&tm, 1, out, sizeof(out));
	ck_assert_int_eq(len, 18 + 4 + 2 + 14);
	ck_assert_int_eq(esock_rdmap_decode(&m, out, (size_t)len, NULL, NULL), len);
	ck_assert_uint_eq(m.u.term.ddp_hdr_len, 14);
	ck_assert_uint_eq(m.u.term.ddp_seg_len, 32);
	ck_assert_int_eq(esock_rdmap_term_msg(&tm, 1, out, len - 1), -ENOBUFS);
}
END_TEST

START_TEST(test_siw_order)
{
	/* siw on x86: octet 20 = EType << 4 | Layer; M/D/R at 0x01/0x02/0x04 of octet 22. */
	uint8_t seg[64], out[128];
	int n = tu_hex("41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00"
		       " 21 03 03 00 00 03"
		       " 41 43 00 00 00 00 00 00 00 00 00 00 00 09 00 00 00 00", seg, sizeof(seg));
	struct esock_rdmap_msg m;
	struct esock_rdmap_decode_opts auto_o = { false, ESOCK_RDMAP_TERM_AUTO };
	struct esock_rdmap_decode_opts rfc_o = { false, ESOCK_RDMAP_TERM_RFC };
	ssize_t len;

	ck_assert_int_eq(esock_rdmap_decode(&m, seg, (size_t)n, &auto_o, NULL), n);
	ck_assert_uint_eq(m.u.term.order, ESOCK_RDMAP_TERM_SIW);
	ck_assert_uint_eq(m.u.term.t.layer, ESOCK_TERM_LAYER_DDP);
	ck_assert_uint_eq(m.u.term.t.etype, ESOCK_TERM_DDP_ETYPE_UNTAGGED);
	ck_assert_uint_eq(m.u.term.t.ecode, ESOCK_TERM_DDP_U_MSN_RANGE);
	ck_assert_uint_eq(m.u.term.t.hdrct, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	ck_assert_uint_eq(m.u.term.ddp_seg_len, 3); /* siw: payload-only length */
	/* Re-encoding in siw order reproduces the octets. */
	len = esock_rdmap_hdr_encode(&m, out, sizeof(out));
	ck_assert_int_eq(len, n);
	tu_assert_mem(out, seg, (size_t)n);
	/* Forced RFC reading of the same octets: flags in reserved bits, no copies. */
	ck_assert_int_eq(esock_rdmap_decode(&m, seg, 22, &rfc_o, NULL), 22);
	ck_assert_uint_eq(m.u.term.t.layer, 2);
	ck_assert_uint_eq(m.u.term.t.hdrct, 0);
	ck_assert_uint_ne(m.u.term.rsvd, 0);
}
END_TEST

START_TEST(test_round_trip_both_orders)
{
	uint64_t rng = tu_rng_seed("rdmap term round trip");

	for (int i = 0; i < 5000; i++) {
		struct esock_rdmap_term tm = { 0 };
		struct esock_rdmap_msg m;
		struct esock_rdmap_decode_opts o = { false, 0 };
		uint8_t out[128];
		uint64_t r = tu_rng_next(&rng);
		ssize_t len;

		tm.t.valid = true;
		tm.t.layer = (uint8_t)(r & 0xf);
		tm.t.etype = (uint8_t)(r >> 4 & 0xf);
		tm.t.ecode = (uint8_t)(r >> 8);
		tm.t.hdrct = (uint8_t)(r >> 16 & 7);
		tm.order = o.term_order = (uint8_t)(r >> 19 & 1);
		tm.rsvd = (uint16_t)(r >> 20 & 0x1fff);
		tm.ddp_seg_len = tm.t.hdrct ? (uint16_t)(r >> 33) : 0;
		if (tm.t.hdrct & ESOCK_TERM_HDRCT_D) {
			tu_rng_fill(&rng, tm.ddp_hdr, sizeof(tm.ddp_hdr));
			tm.ddp_hdr_len = (uint8_t)esock_ddp_hdr_len(tm.ddp_hdr[0]);
			if (tm.ddp_hdr_len == 14)
				memset(tm.ddp_hdr + 14, 0, 4);
		}
		if (tm.t.hdrct & ESOCK_TERM_HDRCT_R)
			tu_rng_fill(&rng, tm.rdmap_hdr, sizeof(tm.rdmap_hdr));
		len = esock_rdmap_term_msg(&tm, 1, out, sizeof(out));
		ck_assert_int_gt(len, 0);
		ck_assert_int_eq(esock_rdmap_decode(&m, out, (size_t)len, &o, NULL), len);
		ck_assert(memcmp(&m.u.term, &tm, sizeof(tm)) == 0);
	}
}
END_TEST

START_TEST(test_encode_invalid_copy)
{
	struct esock_rdmap_term tm = { .t = { true, 1, 1, 0, ESOCK_TERM_HDRCT_D }, .ddp_hdr_len = 10 };
	uint8_t out[128];

	ck_assert_int_eq(esock_rdmap_term_msg(&tm, 1, out, sizeof(out)), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rdmap_term");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reference_llp_crc);
	tcase_add_test(tc, test_build_copies_untagged_header);
	tcase_add_test(tc, test_build_copies_read_request);
	tcase_add_test(tc, test_tagged_copy);
	tcase_add_test(tc, test_siw_order);
	tcase_add_test(tc, test_round_trip_both_orders);
	tcase_add_test(tc, test_encode_invalid_copy);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
