/* SPDX-License-Identifier: MIT */
/*
 * esock_crc32c(): the CRC32C every layer uses.  ISA-L's crc32_iscsi() takes
 * and returns the raw register (no inversion), so the standard value is
 * ~crc32_iscsi(buf, len, ~crc); that also makes chaining work.
 */
#include "config.h"

#include <esock/crc32c.h>

#include <stdbool.h>

#include "util/crc32c_impl.h"

#ifdef HAVE_ISAL
#include <isa-l/crc.h>

/*
 * ISA-L's folding kernel has a fixed cost that dominates small buffers (the
 * 2-octet length field, a header, a whole small FPDU): below this size the
 * SSE4.2 crc32 instruction loop is faster, when the CPU has it.  Measured
 * here (2026-11, EPYC): the loop wins by ~2.5 ns up to 192 octets, ISA-L
 * switches to its folding path at 256 and wins from there on.
 */
#define SMALL 256

static uint32_t (*small_kernel)(uint32_t, const uint8_t *, size_t);

/*
 * ISA-L's AVX-512 kernel (crc32_iscsi_by16_10, ISA-L 2.30 as Debian 12
 * ships it) returns with the upper halves of the vector registers dirty: no
 * VZEROUPPER.  On Intel cores every legacy-SSE instruction that follows
 * (the compiler's own struct copies and zeroing, glibc's, the
 * application's) then pays a state-transition penalty until something
 * clears that state; measured on a Xeon (Emerald Rapids, 2026-11), 4 KiB of
 * CRC followed by 50 SSE stores took 350 ns instead of 93 ns, and a
 * DDPMODE redis server spent twice the CPU per request in its own code.
 * AMD cores have no such penalty, which is why the same build met its
 * goals on EPYC and missed them on Xeon.  So the register state is cleaned
 * after every call into ISA-L, where the CPU has AVX (VZEROUPPER is an AVX
 * instruction; one cycle).
 */
static bool clean_upper;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static inline void upper_clean(void)
{
	__builtin_ia32_vzeroupper();
}
#else
static inline void upper_clean(void)
{
}
#endif

__attribute__((constructor)) static void crc32c_small_init(void)
{
	small_kernel = esock_crc32c_raw_hw();
#if defined(__x86_64__) && defined(__GNUC__)
	clean_upper = __builtin_cpu_supports("avx");
#endif
}

static inline uint32_t isal_crc(const unsigned char *p, size_t len, uint32_t reg)
{
	reg = crc32_iscsi((unsigned char *)(uintptr_t)p, (int)len, reg);
	if (clean_upper)
		upper_clean();
	return reg;
}

ESOCK_EXPORT uint32_t esock_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t reg = ~crc;

	if (len < SMALL && small_kernel)
		return ~small_kernel(reg, p, len);

	/* crc32_iscsi() takes an int length: feed huge buffers in chunks. */
	while (len > 0x40000000u) {
		reg = isal_crc(p, 0x40000000u, reg);
		p += 0x40000000u;
		len -= 0x40000000u;
	}
	return ~isal_crc(p, len, reg);
}

ESOCK_EXPORT const char *esock_crc32c_impl(void)
{
	return "isa-l";
}
#else
ESOCK_EXPORT uint32_t esock_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return esock_crc32c_portable(crc, buf, len);
}

ESOCK_EXPORT const char *esock_crc32c_impl(void)
{
	return esock_crc32c_raw_hw() ? "sse4.2" : "slice-by-8";
}
#endif
