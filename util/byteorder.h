/* SPDX-License-Identifier: MIT */
/*
 * Big-endian load/store helpers for wire fields.  Every multi-octet iWARP field
 * is network order except the MPA CRC (little-endian, see mpa/mpa_wire.h), so
 * codecs read and write bytes through these instead of overlaying structs.
 */
#ifndef ESOCK_UTIL_BYTEORDER_H
#define ESOCK_UTIL_BYTEORDER_H

#include <stdint.h>

static inline uint16_t esock_get_be16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t esock_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t esock_get_be64(const uint8_t *p)
{
	return (uint64_t)esock_get_be32(p) << 32 | esock_get_be32(p + 4);
}

static inline void esock_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void esock_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void esock_put_be64(uint8_t *p, uint64_t v)
{
	esock_put_be32(p, (uint32_t)(v >> 32));
	esock_put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t esock_get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline void esock_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#endif /* ESOCK_UTIL_BYTEORDER_H */
