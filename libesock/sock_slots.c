/* SPDX-License-Identifier: MIT */
/*
 * Send slots shared by all sockets of the process.  A non-blocking write
 * copies into a slot, posts a Send from it and returns; the slot comes back
 * when the Send completes.  Slots come from one pool, most recently freed
 * first, so the pages that hold data are few and hot, and a connection that
 * is not writing holds none (per-socket slots kept a touched page for every
 * connection that ever wrote).  A socket still takes at most SOCK_SLOTS_MAX
 * at a time: that is its send buffer.  The pool grows in chunks straight
 * from mmap and keeps what it got (bounded by the data in flight at the peak).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "libesock/sock.h"

#define CHUNK_SLOTS 16
#define CHUNKS_MAX (1u << 16) /* 64 GiB of slots */

static uint8_t *chunk[CHUNKS_MAX]; /* written under the lock before any index of it is handed out */
static uint32_t nchunks;
static uint32_t *free_ids, nfree, free_cap;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int grow(void)
{
	uint8_t *c;
	uint32_t *f;

	if (nchunks == CHUNKS_MAX)
		return -ENOMEM;
	if (free_cap < nfree + CHUNK_SLOTS) {
		if (!(f = realloc(free_ids, (free_cap + 1024) * sizeof(*f))))
			return -ENOMEM;
		free_ids = f;
		free_cap += 1024;
	}
	if (!(c = sock_region_alloc((size_t)CHUNK_SLOTS * SOCK_SLOT_SIZE)))
		return -ENOMEM;
	chunk[nchunks] = c;
	/* Lowest index on top: a fresh chunk is used from its start. */
	for (uint32_t k = CHUNK_SLOTS; k-- > 0;)
		free_ids[nfree++] = nchunks * CHUNK_SLOTS + k;
	nchunks++;
	return 0;
}

int sock_slot_get(uint32_t *id)
{
	int rc = 0;

	pthread_mutex_lock(&lock);
	if (!nfree)
		rc = grow();
	if (rc == 0)
		*id = free_ids[--nfree];
	pthread_mutex_unlock(&lock);
	return rc;
}

uint8_t *sock_slot_addr(uint32_t id)
{
	return chunk[id / CHUNK_SLOTS] + (size_t)(id % CHUNK_SLOTS) * SOCK_SLOT_SIZE;
}

void sock_slot_put(uint32_t id)
{
	pthread_mutex_lock(&lock);
	free_ids[nfree++] = id; /* room: every id handed out had its place */
	pthread_mutex_unlock(&lock);
}
