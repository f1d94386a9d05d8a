/* SPDX-License-Identifier: MIT */
/* Per-thread spare blocks (ep_spare.h). */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "libesock/ep_spare.h"

static __thread void *spare[EP_SPARE_KINDS];
static __thread bool keyed;
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* At thread exit (its own variables still valid): the key holds the thread's array. */
static void spare_free(void *arg)
{
	void **s = arg;

	for (int k = 0; k < EP_SPARE_KINDS; k++) {
		free(s[k]);
		s[k] = NULL;
	}
}

static void key_init(void)
{
	pthread_key_create(&key, spare_free);
}

void *ep_spare_get(enum ep_spare_kind kind, size_t size, bool *fresh)
{
	void *p = spare[kind];

	*fresh = !p;
	if (p) {
		spare[kind] = NULL;
		return p;
	}
	return malloc(size);
}

void ep_spare_put(enum ep_spare_kind kind, void *p)
{
	if (spare[kind]) {
		free(p);
		return;
	}
	if (!keyed) {
		pthread_once(&once, key_init);
		pthread_setspecific(key, spare);
		keyed = true;
	}
	spare[kind] = p;
}
