/* SPDX-License-Identifier: MIT */
/*
 * Memory for the objects every connection has (its QP, queues, CQ): taken
 * from chunks the kernel fills in one go (MAP_POPULATE) instead of pages
 * that fault in one by one as a new connection first touches them.  A
 * process with thousands of connections otherwise took some ten page faults
 * per connection across both ends, 13 % of the samples of a connection's
 * setup (docs/benchmarks.md).  Freed blocks go to a list per size and are
 * used again first (warm); chunks are never given back.
 */
#ifndef ESOCK_ENDPOINT_EP_MEM_H
#define ESOCK_ENDPOINT_EP_MEM_H

#include <stddef.h>

/* |n| * |size| zeroed octets, 64-aligned (a cache line); NULL on overflow or out of memory. */
void *ep_calloc(size_t n, size_t size);
/* Gives back what ep_calloc returned (NULL: nothing). */
void ep_free(void *p);

#endif /* ESOCK_ENDPOINT_EP_MEM_H */
