/* SPDX-License-Identifier: MIT */
/*
 * Spare blocks (ep_spare.h): a few per kind for the whole process, each
 * slot taken and given back with one atomic exchange.  Not per thread: a
 * forked child keeps only the forking thread, and blocks held by the other
 * threads' variables would be lost to it; these stay reachable.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "endpoint/ep_spare.h"

#define SLOTS 4 /* per kind: the engine and a few application threads at once */

static void *_Atomic spare[EP_SPARE_KINDS][SLOTS];

void *ep_spare_get(enum ep_spare_kind kind, size_t size, bool *fresh)
{
	for (int i = 0; i < SLOTS; i++) {
		void *p;

		if (atomic_load_explicit(&spare[kind][i], memory_order_relaxed) &&
		    (p = atomic_exchange_explicit(&spare[kind][i], NULL, memory_order_acquire))) {
			*fresh = false;
			return p;
		}
	}
	*fresh = true;
	return malloc(size);
}

void ep_spare_put(enum ep_spare_kind kind, void *p)
{
	for (int i = 0; i < SLOTS; i++) {
		void *none = NULL;

		if (!atomic_load_explicit(&spare[kind][i], memory_order_relaxed) &&
		    atomic_compare_exchange_strong_explicit(&spare[kind][i], &none, p,
							    memory_order_release, memory_order_relaxed))
			return;
	}
	free(p);
}
