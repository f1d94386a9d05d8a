/* SPDX-License-Identifier: MIT */
/*
 * CRC32C: RFC 3720 Appendix B.4 vectors, the "123456789" check value, chaining,
 * the MPA wire order (LSB first) and agreement of every implementation
 * (ISA-L or dispatch, SSE4.2, slice-by-8) on random data at every alignment,
 * and that a CRC leaves the vector registers' upper halves clean.
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <esock/crc32c.h>

#include "tests/unit/testutil.h"
#include "util/byteorder.h"
#include "util/crc32c_impl.h"

struct vec {
	const char *name;
	uint8_t data[48];
	size_t len;
	uint32_t crc;
	uint8_t wire[4];
};

static struct vec vecs[7];

static void vecs_init(void)
{
	static const uint8_t read10[48] = {
		0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
		0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0,
	};
	int i;

	vecs[0] = (struct vec){ "32 zeros", { 0 }, 32, 0x8A9136AA, { 0xaa, 0x36, 0x91, 0x8a } };
	vecs[1] = (struct vec){ "32 ones", { 0 }, 32, 0x62A8AB43, { 0x43, 0xab, 0xa8, 0x62 } };
	memset(vecs[1].data, 0xff, 32);
	vecs[2] = (struct vec){ "ascending", { 0 }, 32, 0x46DD794E, { 0x4e, 0x79, 0xdd, 0x46 } };
	vecs[3] = (struct vec){ "descending", { 0 }, 32, 0x113FDB5C, { 0x5c, 0xdb, 0x3f, 0x11 } };
	for (i = 0; i < 32; i++) {
		vecs[2].data[i] = (uint8_t)i;
		vecs[3].data[i] = (uint8_t)(31 - i);
	}
	vecs[4] = (struct vec){ "iSCSI Read(10)", { 0 }, 48, 0xD9963A56, { 0x56, 0x3a, 0x96, 0xd9 } };
	memcpy(vecs[4].data, read10, 48);
	vecs[5] = (struct vec){ "123456789", "123456789", 9, 0xE3069283, { 0x83, 0x92, 0x06, 0xe3 } };
	vecs[6] = (struct vec){ "empty", { 0 }, 0, 0, { 0, 0, 0, 0 } };
}

static uint32_t slice8(uint32_t crc, const void *p, size_t n)
{
	return ~esock_crc32c_raw_slice8(~crc, p, n);
}

static uint32_t hw(uint32_t crc, const void *p, size_t n)
{
	uint32_t (*k)(uint32_t, const uint8_t *, size_t) = esock_crc32c_raw_hw();

	return k ? ~k(~crc, p, n) : slice8(crc, p, n);
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);
static const crc_fn impls[] = { esock_crc32c, esock_crc32c_portable, slice8, hw };
#define NIMPL (sizeof(impls) / sizeof(impls[0]))

START_TEST(test_rfc3720_vectors)
{
	const struct vec *v = &vecs[_i / NIMPL];
	crc_fn f = impls[_i % NIMPL];
	uint32_t crc = f(0, v->data, v->len);
	uint8_t wire[4];

	ck_assert_msg(crc == v->crc, "%s impl %d: got 0x%08x want 0x%08x", v->name,
		      (int)(_i % NIMPL), crc, v->crc);
	/* MPA puts the value least-significant octet first (RFC 3720 B.4 order). */
	esock_put_le32(wire, crc);
	tu_assert_mem(wire, v->wire, 4);
}
END_TEST

START_TEST(test_chaining)
{
	uint64_t rng = tu_rng_seed("crc32c chaining");
	static uint8_t buf[4096];

	tu_rng_fill(&rng, buf, sizeof(buf));
	for (int iter = 0; iter < 200; iter++) {
		size_t len = (size_t)tu_rng_below(&rng, sizeof(buf) + 1);
		size_t cut = (size_t)tu_rng_below(&rng, len + 1);

		for (size_t k = 0; k < NIMPL; k++) {
			uint32_t whole = impls[k](0, buf, len);
			uint32_t parts = impls[k](impls[k](0, buf, cut), buf + cut, len - cut);

			ck_assert_uint_eq(whole, parts);
		}
	}
}
END_TEST

START_TEST(test_impls_agree_every_alignment)
{
	uint64_t rng = tu_rng_seed("crc32c agree");
	static uint8_t buf[70000];

	tu_rng_fill(&rng, buf, sizeof(buf));
	for (size_t align = 0; align < 16; align++) {
		for (size_t len = 0; len < 300; len++) {
			uint32_t ref = slice8(0, buf + align, len);

			for (size_t k = 0; k < NIMPL; k++)
				ck_assert_uint_eq(impls[k](0, buf + align, len), ref);
		}
	}
	/* A maximal FPDU-sized buffer. */
	for (size_t k = 0; k < NIMPL; k++)
		ck_assert_uint_eq(impls[k](0, buf + 3, 65535 + 8), slice8(0, buf + 3, 65535 + 8));
}
END_TEST

START_TEST(test_residue)
{
	/* CRC over data followed by its own LE CRC gives the fixed residue. */
	uint8_t buf[13];

	memcpy(buf, "123456789", 9);
	esock_put_le32(buf + 9, esock_crc32c(0, buf, 9));
	ck_assert_uint_eq(esock_crc32c(0, buf, 13), 0x48674BC7u);
}
END_TEST

START_TEST(test_impl_name)
{
	const char *n = esock_crc32c_impl();

#ifdef HAVE_ISAL
	ck_assert_str_eq(n, "isa-l");
#else
	ck_assert(strcmp(n, "sse4.2") == 0 || strcmp(n, "slice-by-8") == 0);
#endif
}
END_TEST

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

/* XGETBV with ECX = 1 (XINUSE) is there: CPUID.(EAX=0DH, ECX=1):EAX bit 2. */
static bool xinuse_readable(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return false;
	if (__get_cpuid_max(0, NULL) < 0xd)
		return false;
	__cpuid_count(0xd, 1, a, b, c, d);
	return a & (1u << 2);
}

static uint64_t xinuse(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}
#endif

/*
 * After a CRC of any size the upper halves of YMM0-15 and ZMM0-15 are in
 * their initial state (XINUSE bits 2 and 6 clear): ISA-L's AVX-512 kernel
 * leaves them dirty, and on Intel cores every legacy-SSE instruction of the
 * library and the application then pays a transition penalty (util/crc32c.c).
 */
START_TEST(test_upper_state_clean)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static uint8_t buf[65536];
	static const size_t sizes[] = { 16, 255, 256, 4096, 4112, 65536 };

	if (!xinuse_readable()) {
		fprintf(stderr, "upper_state_clean: no XGETBV(1) on this CPU, not checked\n");
		return;
	}
	memset(buf, 0x5a, sizeof(buf));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t crc = esock_crc32c(0, buf, sizes[i]);
		uint64_t in_use = xinuse();

		ck_assert_msg(!(in_use & ((1u << 2) | (1u << 6))),
			      "%zu octets (crc %08x): XINUSE %#llx, upper halves dirty", sizes[i], crc,
			      (unsigned long long)in_use);
	}
#endif
}
END_TEST

static Suite *crc32c_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("core");

	vecs_init();
	tcase_add_loop_test(tc, test_rfc3720_vectors, 0, (int)(7 * NIMPL));
	tcase_add_test(tc, test_chaining);
	tcase_add_test(tc, test_impls_agree_every_alignment);
	tcase_add_test(tc, test_residue);
	tcase_add_test(tc, test_impl_name);
	tcase_add_test(tc, test_upper_state_clean);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(crc32c_suite());
}
