/* SPDX-License-Identifier: MIT */
/*
 * esock_crc32c(): the CRC32C every layer uses.  ISA-L's crc32_iscsi() takes
 * and returns the raw register (no inversion), so the standard value is
 * ~crc32_iscsi(buf, len, ~crc); that also makes chaining work.
 */
#include "config.h"

#include <esock/crc32c.h>

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

__attribute__((constructor)) static void crc32c_small_init(void)
{
	small_kernel = esock_crc32c_raw_hw();
}

ESOCK_EXPORT uint32_t esock_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t reg = ~crc;

	if (len < SMALL && small_kernel)
		return ~small_kernel(reg, p, len);

	/* crc32_iscsi() takes an int length: feed huge buffers in chunks. */
	while (len > 0x40000000u) {
		reg = crc32_iscsi((unsigned char *)(uintptr_t)p, 0x40000000, reg);
		p += 0x40000000u;
		len -= 0x40000000u;
	}
	return ~crc32_iscsi((unsigned char *)(uintptr_t)p, (int)len, reg);
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
