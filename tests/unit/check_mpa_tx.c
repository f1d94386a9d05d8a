/* SPDX-License-Identifier: MIT */
/*
 * MPA transmit plan: byte-exact FPDUs, MULPDU, PAD, marker placement and
 * FPDUPTR values, the zero-copy property, partial-write resumption, and the
 * copying frame for small ULPDUs (the same octets as a plan).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/crc32c.h>
#include <esock/mpa.h>

#include "tests/unit/mpa_vectors.h"
#include "tests/unit/testutil.h"
#include "util/byteorder.h"

START_TEST(test_vectors)
{
	uint8_t want[128], got[128];
	int n = tu_hex(fpdu_vecs[_i].hex, want, sizeof(want));
	size_t ulen = esock_get_be16(want);
	struct esock_mpa_tx tx;
	struct iovec v[2] = { { want + 2, 5 }, { want + 7, ulen - 5 } };

	esock_mpa_tx_init(&tx, true, false, 0);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 2), n);
	ck_assert_int_eq(esock_mpa_tx_flatten(&tx, got, sizeof(got)), n);
	tu_assert_mem(got, want, (size_t)n);
	/* CRC not negotiated: the same frame with a zero CRC field (siw default). */
	esock_mpa_tx_init(&tx, false, false, 0);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 2), n);
	ck_assert_int_eq(esock_mpa_tx_flatten(&tx, got, sizeof(got)), n);
	memset(want + n - 4, 0, 4);
	tu_assert_mem(got, want, (size_t)n);
}
END_TEST

START_TEST(test_zero_copy)
{
	static uint8_t payload[3000];
	struct esock_mpa_tx tx;
	struct iovec v = { payload, sizeof(payload) };
	const struct iovec *plan;
	int cnt;
	bool seen = false;

	esock_mpa_tx_init(&tx, true, false, 0);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, &v, 1), 2 + 3000 + 2 + 4);
	plan = esock_mpa_tx_iov(&tx, &cnt);
	for (int i = 0; i < cnt; i++)
		if (plan[i].iov_base == payload && plan[i].iov_len == sizeof(payload))
			seen = true;
	ck_assert_msg(seen, "the payload must be referenced, not copied");
	ck_assert_int_eq(esock_mpa_tx_build(&tx, &v, 1), -EBUSY);
}
END_TEST

START_TEST(test_mulpdu)
{
	/* EMSS 1448 (MTU 1500 with timestamps): 1442 without markers, as siw. */
	ck_assert_uint_eq(esock_mpa_mulpdu(1448, false), 1442);
	ck_assert_uint_eq(esock_mpa_mulpdu(1460, false), 1454);
	/* With markers: 1448 - (6 + 4*3 + 0) = 1430; 1460 - (6 + 12 + 0) = 1442. */
	ck_assert_uint_eq(esock_mpa_mulpdu(1448, true), 1430);
	ck_assert_uint_eq(esock_mpa_mulpdu(1460, true), 1442);
	ck_assert_uint_eq(esock_mpa_mulpdu(1461, false), 1454);
	ck_assert_uint_eq(esock_mpa_mulpdu(6, false), 0);
	ck_assert_uint_eq(esock_mpa_mulpdu(65536 + 100, false), 65535);
	/* One FPDU of MULPDU octets fits the segment, markers counted. */
	for (uint32_t emss = 64; emss < 9000; emss += 4) {
		for (uint32_t pos = 0; pos < 512; pos += 4) {
			size_t m = esock_mpa_mulpdu(emss, true);

			ck_assert_uint_le(esock_mpa_fpdu_len(m, true, pos), emss);
		}
		ck_assert_uint_le(esock_mpa_fpdu_len(esock_mpa_mulpdu(emss, false), false, 0), emss);
	}
}
END_TEST

START_TEST(test_pad)
{
	ck_assert_uint_eq(esock_mpa_pad_len(14), 0);
	ck_assert_uint_eq(esock_mpa_pad_len(29), 1);
	ck_assert_uint_eq(esock_mpa_pad_len(31), 3);
	ck_assert_uint_eq(esock_mpa_pad_len(32), 2);
	ck_assert_uint_eq(esock_mpa_pad_len(33), 1);
	ck_assert_uint_eq(esock_mpa_pad_len(34), 0);
}
END_TEST

/* Independent model of the marked wire image, for comparison. */
static size_t model_marked(const uint8_t *fpdu, size_t flen, uint32_t pos, uint8_t *out)
{
	size_t o = 0, i = 0;
	uint32_t hdr = 0;
	bool started = false;

	while (i < flen) {
		if (pos % 512 == 0) {
			uint16_t ptr = started ? (uint16_t)(pos - hdr) : 0;

			out[o++] = 0;
			out[o++] = 0;
			out[o++] = (uint8_t)(ptr >> 8);
			out[o++] = (uint8_t)ptr;
			pos += 4;
			continue;
		}
		if (!started) {
			started = true;
			hdr = pos;
		}
		out[o++] = fpdu[i++];
		pos++;
	}
	return o;
}

START_TEST(test_markers_layout)
{
	uint64_t rng = tu_rng_seed("mpa tx markers");
	static uint8_t ulpdu[4000], plain[5000], model[6000], got[6000];

	for (int iter = 0; iter < 400; iter++) {
		size_t ulen = (size_t)tu_rng_below(&rng, sizeof(ulpdu));
		uint32_t pos = (uint32_t)tu_rng_below(&rng, 1u << 20) * 4;
		struct esock_mpa_tx tx;
		struct iovec v = { ulpdu, ulen };
		size_t flen, mlen;
		ssize_t n;

		if (iter % 7 == 0)
			pos = 0xfffffe00u + 4 * (uint32_t)(iter % 128); /* around 2^32 */
		tu_rng_fill(&rng, ulpdu, ulen);
		/* Unmarked reference, then insert markers by the model. */
		esock_mpa_tx_init(&tx, false, false, 0);
		flen = (size_t)esock_mpa_tx_build(&tx, &v, 1);
		esock_mpa_tx_flatten(&tx, plain, sizeof(plain));
		esock_mpa_tx_init(&tx, true, true, pos);
		n = esock_mpa_tx_build(&tx, &v, 1);
		ck_assert_int_eq(n, (ssize_t)esock_mpa_fpdu_len(ulen, true, pos));
		ck_assert_int_eq(esock_mpa_tx_flatten(&tx, got, sizeof(got)), n);
		ck_assert_uint_eq(tx.pos, pos + (uint32_t)n);
		/* CRC covers everything before it, markers included. */
		esock_put_le32(plain + flen - 4, 0);
		mlen = model_marked(plain, flen, pos, model);
		ck_assert_int_eq(mlen, n);
		ck_assert_uint_eq(esock_get_le32(got + n - 4), esock_crc32c(0, got, (size_t)n - 4));
		memcpy(model + mlen - 4, got + n - 4, 4);
		tu_assert_mem(got, model, mlen);
	}
}
END_TEST

START_TEST(test_partial_writes)
{
	uint64_t rng = tu_rng_seed("mpa tx advance");
	static uint8_t a[700], b[900], whole[2000], out[2000];
	struct iovec v[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct esock_mpa_tx tx;
	ssize_t n;

	tu_rng_fill(&rng, a, sizeof(a));
	tu_rng_fill(&rng, b, sizeof(b));
	esock_mpa_tx_init(&tx, true, true, 508);
	n = esock_mpa_tx_build(&tx, v, 2);
	esock_mpa_tx_flatten(&tx, whole, sizeof(whole));
	for (size_t first = 0; first <= (size_t)n; first++) {
		size_t off = 0;
		const struct iovec *rest;
		int cnt;

		esock_mpa_tx_init(&tx, true, true, 508);
		ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 2), n);
		/* Write |first| octets, then the rest in random-sized chunks. */
		ck_assert_int_eq(esock_mpa_tx_advance(&tx, first), n - (ssize_t)first);
		off = first;
		while (tx.left) {
			size_t k = 1 + (size_t)tu_rng_below(&rng, 300);

			if (k > tx.left)
				k = tx.left;
			rest = esock_mpa_tx_iov(&tx, &cnt);
			ck_assert_ptr_nonnull(rest);
			ck_assert_int_gt(cnt, 0);
			ck_assert_int_eq(esock_mpa_tx_flatten(&tx, out + off, sizeof(out) - off), (ssize_t)tx.left);
			ck_assert_int_eq(esock_mpa_tx_advance(&tx, k), (ssize_t)(tx.left));
			off += k;
		}
		tu_assert_mem(out + first, whole + first, (size_t)n - first);
		ck_assert_ptr_null(esock_mpa_tx_iov(&tx, &cnt));
		ck_assert_int_eq(cnt, 0);
		ck_assert_int_eq(esock_mpa_tx_advance(&tx, 1), -EINVAL);
	}
}
END_TEST

START_TEST(test_build_errors)
{
	static uint8_t big[65536];
	struct iovec v[17];
	struct esock_mpa_tx tx;

	for (int i = 0; i < 17; i++)
		v[i] = (struct iovec){ big, 1 };
	esock_mpa_tx_init(&tx, true, false, 0);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 17), -EINVAL);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, -1), -EINVAL);
	v[0].iov_len = 65536;
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 1), -EMSGSIZE);
	v[0].iov_len = 65535;
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 1), 65535 + 2 + 3 + 4);
	/* With markers a 65535-octet ULPDU puts a marker beyond FPDUPTR's range. */
	esock_mpa_tx_init(&tx, true, true, 0);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, v, 1), -EMSGSIZE);
	ck_assert_uint_eq(tx.pos, 0);
	ck_assert_uint_eq(tx.left, 0);
	v[0].iov_len = 60000;
	ck_assert_int_gt(esock_mpa_tx_build(&tx, v, 1), 60000);
}
END_TEST

/* The copying frame and the wrap give the plan's octets, for every pad and both CRC settings. */
START_TEST(test_frame_same_octets)
{
	uint8_t ulpdu[80], plan[128], frame[128];
	struct esock_mpa_tx a, b;

	for (size_t i = 0; i < sizeof(ulpdu); i++)
		ulpdu[i] = (uint8_t)(i * 37 + 5);
	for (int crc = 0; crc < 2; crc++) {
		for (size_t len = 0; len <= sizeof(ulpdu); len++) {
			size_t cut = len / 3;
			struct iovec v[2] = { { ulpdu, cut }, { ulpdu + cut, len - cut } };
			ssize_t n;

			esock_mpa_tx_init(&a, crc, false, 100);
			esock_mpa_tx_init(&b, crc, false, 100);
			n = esock_mpa_tx_build(&a, v, 2);
			ck_assert_int_eq(esock_mpa_tx_flatten(&a, plan, sizeof(plan)), n);
			ck_assert_int_eq(esock_mpa_tx_frame(&b, v, 2, frame, sizeof(frame)), n);
			tu_assert_mem(frame, plan, (size_t)n);
			ck_assert_uint_eq(b.pos, a.pos);
			ck_assert_uint_eq(b.left, 0); /* nothing left to write from the state */

			/* The wrap: head, the pieces where they lie, tail: the same octets. */
			uint8_t head[2], tail[8], wrapped[128];
			ssize_t k;

			memset(tail, 0xa5, sizeof(tail));
			esock_mpa_tx_init(&b, crc, false, 100);
			k = esock_mpa_tx_wrap(&b, v, 2, head, tail);
			ck_assert_int_eq(k, n - 2 - (ssize_t)len);
			ck_assert_uint_eq(tail[k], 0xa5); /* nothing written behind the tail */
			memcpy(wrapped, head, 2);
			memcpy(wrapped + 2, ulpdu, len);
			memcpy(wrapped + 2 + len, tail, (size_t)k);
			tu_assert_mem(wrapped, plan, (size_t)n);
			ck_assert_uint_eq(b.pos, a.pos);
			ck_assert_uint_eq(b.left, 0);
		}
	}
}
END_TEST

START_TEST(test_frame_errors)
{
	uint8_t out[64], data[42] = { 0 };
	struct iovec v = { data, sizeof(data) };
	struct esock_mpa_tx tx;

	esock_mpa_tx_init(&tx, true, false, 0);
	ck_assert_int_eq(esock_mpa_tx_frame(&tx, &v, 1, out, 2 + 42 + 4 - 1), -ENOBUFS);
	ck_assert_int_eq(esock_mpa_tx_frame(&tx, &v, 1, out, sizeof(out)), 2 + 42 + 4);
	ck_assert_int_eq(esock_mpa_tx_frame(&tx, &v, -1, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(esock_mpa_tx_build(&tx, &v, 1), 2 + 42 + 4);
	ck_assert_int_eq(esock_mpa_tx_frame(&tx, &v, 1, out, sizeof(out)), -EBUSY);
	ck_assert_int_eq(esock_mpa_tx_wrap(&tx, &v, 1, out, out + 8), -EBUSY);
	esock_mpa_tx_init(&tx, true, true, 0); /* markers: only the plan places them */
	ck_assert_int_eq(esock_mpa_tx_frame(&tx, &v, 1, out, sizeof(out)), -EINVAL);
	ck_assert_int_eq(esock_mpa_tx_wrap(&tx, &v, 1, out, out + 8), -EINVAL);
	esock_mpa_tx_init(&tx, true, false, 0);
	ck_assert_int_eq(esock_mpa_tx_wrap(&tx, &v, ESOCK_MPA_TX_PIECES_MAX + 1, out, out + 8), -EINVAL);
	v.iov_len = ESOCK_MPA_ULPDU_MAX + 1;
	ck_assert_int_eq(esock_mpa_tx_wrap(&tx, &v, 1, out, out + 8), -EMSGSIZE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpa_tx");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_vectors, 0, (int)FPDU_VECS);
	tcase_add_test(tc, test_zero_copy);
	tcase_add_test(tc, test_mulpdu);
	tcase_add_test(tc, test_pad);
	tcase_add_test(tc, test_markers_layout);
	tcase_add_test(tc, test_partial_writes);
	tcase_add_test(tc, test_build_errors);
	tcase_add_test(tc, test_frame_same_octets);
	tcase_add_test(tc, test_frame_errors);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
