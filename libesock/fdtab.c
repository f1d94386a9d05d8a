/* SPDX-License-Identifier: MIT */
/*
 * The interposer's descriptor table (see fdtab.h): lock-free lookups over
 * pages that never move, writers under one mutex, sized from RLIMIT_NOFILE
 * (esock_fd_span).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "libc/ownfd.h"
#include "libesock/fdtab.h"
#include "util/atfork.h"

struct esock_fdtab esock_fdtab;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc;

static void fork_lock(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

static void init_once(void)
{
	unsigned max = esock_fd_span(ESOCK_FDTAB_PAGE);

	esock_fdtab.top = calloc(max >> ESOCK_FDTAB_PAGE_SHIFT, sizeof(*esock_fdtab.top));
	if (!esock_fdtab.top) {
		init_rc = -ENOMEM;
		return;
	}
	esock_atfork(ESOCK_FORK_TABLES, fork_lock, fork_unlock, fork_unlock);
	atomic_store_explicit(&esock_fdtab.max, max, memory_order_release);
}

int esock_fdtab_init(void)
{
	pthread_once(&once, init_once);
	return init_rc;
}

/* The page holding |fd|, allocated when |make|; under the lock. */
static struct esock_sock *_Atomic *page_of(unsigned fd, int make)
{
	struct esock_sock *_Atomic *pg = atomic_load(&esock_fdtab.top[fd >> ESOCK_FDTAB_PAGE_SHIFT]);

	if (!pg && make) {
		pg = calloc(ESOCK_FDTAB_PAGE, sizeof(*pg));
		if (pg)
			atomic_store_explicit(&esock_fdtab.top[fd >> ESOCK_FDTAB_PAGE_SHIFT], pg,
					      memory_order_release);
	}
	return pg;
}

int esock_fdtab_set(int fd, struct esock_sock *s)
{
	struct esock_sock *_Atomic *pg;
	int rc;

	if (fd < 0)
		return -EBADF;
	if ((rc = esock_fdtab_init()) < 0)
		return rc;
	if ((unsigned)fd >= atomic_load(&esock_fdtab.max))
		return -EMFILE;
	pthread_mutex_lock(&lock);
	pg = page_of((unsigned)fd, s != NULL);
	if (pg)
		atomic_store_explicit(&pg[(unsigned)fd & (ESOCK_FDTAB_PAGE - 1)], s,
				      memory_order_release);
	pthread_mutex_unlock(&lock);
	return pg || !s ? 0 : -ENOMEM;
}

struct esock_sock *esock_fdtab_take(int fd)
{
	struct esock_sock *_Atomic *pg, *old = NULL;

	if (fd < 0 || esock_fdtab_init() < 0 || (unsigned)fd >= atomic_load(&esock_fdtab.max))
		return NULL;
	pthread_mutex_lock(&lock);
	if ((pg = page_of((unsigned)fd, 0)))
		old = atomic_exchange(&pg[(unsigned)fd & (ESOCK_FDTAB_PAGE - 1)], NULL);
	pthread_mutex_unlock(&lock);
	return old;
}

int esock_fdtab_next(unsigned from, unsigned to)
{
	unsigned max;

	if (esock_fdtab_init() < 0)
		return -1;
	max = atomic_load(&esock_fdtab.max);
	if (to >= max)
		to = max - 1;
	for (unsigned fd = from; fd <= to;) {
		struct esock_sock *_Atomic *pg = atomic_load(&esock_fdtab.top[fd >> ESOCK_FDTAB_PAGE_SHIFT]);

		if (!pg) { /* a whole page of none */
			fd = ((fd >> ESOCK_FDTAB_PAGE_SHIFT) + 1) << ESOCK_FDTAB_PAGE_SHIFT;
			continue;
		}
		if (atomic_load(&pg[fd & (ESOCK_FDTAB_PAGE - 1)]))
			return (int)fd;
		fd++;
	}
	return -1;
}
