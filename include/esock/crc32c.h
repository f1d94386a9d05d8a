/* SPDX-License-Identifier: MIT */
/*
 * CRC32C (Castagnoli, reflected, init and final XOR 0xFFFFFFFF), the MPA FPDU
 * CRC of RFC 5044 §4.4 (algorithm of RFC 3720 §12.1).  Check value of
 * "123456789" is 0xE3069283.  On the MPA wire the value travels
 * least-significant octet first.
 */
#ifndef ESOCK_CRC32C_H
#define ESOCK_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#include <esock/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * esock_crc32c computes the standard CRC32C of |len| octets at |buf|,
 * continuing from |crc| (the value returned for the preceding data; 0 to
 * start).  Chaining works like zlib's crc32(): crc(a||b) ==
 * esock_crc32c(esock_crc32c(0, a, la), b, lb).  Uses ISA-L when built with
 * it, else the portable implementation.  |buf| is borrowed.
 */
ESOCK_EXPORT uint32_t esock_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable implementation (slice-by-8, SSE4.2 when the CPU has it);
 * always built so that tests can hold it to the same vectors. */
ESOCK_EXPORT uint32_t esock_crc32c_portable(uint32_t crc, const void *buf, size_t len);

/* Name of the implementation esock_crc32c() uses: "isa-l", "sse4.2" or
 * "slice-by-8". */
ESOCK_EXPORT const char *esock_crc32c_impl(void);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_CRC32C_H */
