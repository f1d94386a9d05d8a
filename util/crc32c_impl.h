/* SPDX-License-Identifier: MIT */
/* Internal: raw-register CRC32C kernels (no pre/post inversion). */
#ifndef ESOCK_UTIL_CRC32C_IMPL_H
#define ESOCK_UTIL_CRC32C_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* Reflected Castagnoli polynomial 0x1EDC6F41. */
#define CRC32C_POLY_REFLECTED 0x82F63B78u

uint32_t esock_crc32c_raw_slice8(uint32_t reg, const uint8_t *p, size_t len);
/* NULL when the CPU lacks SSE4.2. */
uint32_t (*esock_crc32c_raw_hw(void))(uint32_t reg, const uint8_t *p, size_t len);

#endif
