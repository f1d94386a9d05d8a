/* SPDX-License-Identifier: MIT */
/* Receive buffers shared by a process's DDPMODE sockets (sock_rxbuf.h). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "libesock/sock_rxbuf.h"
#include "util/atfork.h"

#define CLASSES 8                  /* distinct buffer sizes in one process */
#define CHUNK_BYTES (4u << 20)     /* carved into buffers as they are needed */
#define HOT_BYTES (16u << 20)      /* free buffers that keep their pages */
#define HOT_MIN 16

/*
 * One size of buffer.  Free ones on a stack, most recently freed on top;
 * those deeper than the hot budget give their pages back (MADV_DONTNEED,
 * once each): a burst of unread messages does not stay resident for good,
 * and the buffers in use day to day keep theirs (no fault, warm caches).
 */
struct rxclass {
	pthread_mutex_t lock;
	size_t size;
	void **free;
	size_t nfree, cap;
	size_t released;           /* free[0..released) have no pages */
	size_t hot_max;
	uint8_t *carve;            /* the chunk being cut, and what is left of it */
	size_t carve_left;
};

/* Classes are only ever added (under classes_lock), each published by ncls's release store. */
static pthread_mutex_t classes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rxclass cls[CLASSES];
static atomic_int ncls;

static void fork_prepare(void)
{
	pthread_mutex_lock(&classes_lock);
	for (int i = 0; i < atomic_load(&ncls); i++)
		pthread_mutex_lock(&cls[i].lock);
}

static void fork_done(void)
{
	for (int i = atomic_load(&ncls) - 1; i >= 0; i--)
		pthread_mutex_unlock(&cls[i].lock);
	pthread_mutex_unlock(&classes_lock);
}

static void atfork_once(void)
{
	esock_atfork(ESOCK_FORK_LEAVES, fork_prepare, fork_done, fork_done);
}

/* The class of |size|: found without a lock (every message's get and put), added under it. */
static struct rxclass *class_of(size_t size)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct rxclass *c = NULL;
	int n = atomic_load_explicit(&ncls, memory_order_acquire);

	for (int i = 0; i < n; i++)
		if (cls[i].size == size)
			return &cls[i];
	pthread_once(&once, atfork_once);
	pthread_mutex_lock(&classes_lock);
	n = atomic_load_explicit(&ncls, memory_order_relaxed);
	for (int i = 0; i < n && !c; i++)
		if (cls[i].size == size)
			c = &cls[i];
	if (!c && n < CLASSES) {
		c = &cls[n];
		pthread_mutex_init(&c->lock, NULL);
		c->size = size;
		c->hot_max = HOT_BYTES / size > HOT_MIN ? HOT_BYTES / size : HOT_MIN;
		atomic_store_explicit(&ncls, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&classes_lock);
	return c;
}

/* A buffer never used yet, cut from the current chunk or a new one (class lock held). */
static void *carve(struct rxclass *c)
{
	void *p;

	if (c->carve_left < c->size) {
		size_t n = CHUNK_BYTES / c->size ? CHUNK_BYTES / c->size : 1;
		/* MAP_NORESERVE: a chunk's buffers are touched only as messages land in them. */
		void *m = mmap(NULL, n * c->size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		c->carve = m; /* (chunks stay: their buffers circulate) */
		c->carve_left = n * c->size;
	}
	p = c->carve;
	c->carve += c->size;
	c->carve_left -= c->size;
	return p;
}

void *sock_rxbuf_get(size_t size)
{
	struct rxclass *c = class_of(size);
	void *p = NULL;

	if (!c)
		return malloc(size); /* (more sizes than classes: each its own) */
	pthread_mutex_lock(&c->lock);
	if (c->nfree) {
		p = c->free[--c->nfree];
		if (c->released > c->nfree)
			c->released = c->nfree;
	} else {
		p = carve(c);
	}
	pthread_mutex_unlock(&c->lock);
	return p;
}

void sock_rxbuf_put(void *p, size_t size)
{
	struct rxclass *c;

	if (!p)
		return;
	if (!(c = class_of(size))) {
		free(p);
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (c->nfree == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		void **v = realloc(c->free, cap * sizeof(*v));

		if (!v) { /* (cannot happen often: the buffer is given up, its pages first) */
			madvise(p, c->size, MADV_DONTNEED);
			pthread_mutex_unlock(&c->lock);
			return;
		}
		c->free = v;
		c->cap = cap;
	}
	c->free[c->nfree++] = p;
	if (c->nfree - c->released > c->hot_max)
		madvise(c->free[c->released++], c->size, MADV_DONTNEED);
	pthread_mutex_unlock(&c->lock);
}
