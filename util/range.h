/* SPDX-License-Identifier: MIT */
/*
 * Whether [addr, addr + len) lies inside [base, base + size): registered
 * memory checked against what a request names, with no sum that could wrap
 * (the offset first, then the room after it).
 */
#ifndef ESOCK_UTIL_RANGE_H
#define ESOCK_UTIL_RANGE_H

#include <stdbool.h>
#include <stdint.h>

static inline bool esock_range_within(uint64_t base, uint64_t size, uint64_t addr, uint64_t len)
{
	return addr >= base && addr - base <= size && len <= size - (addr - base);
}

#endif /* ESOCK_UTIL_RANGE_H */
