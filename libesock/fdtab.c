/* SPDX-License-Identifier: MIT */
/*
 * The interposer's descriptor table (see fdtab.h): lock-free lookups over
 * pages that never move, writers under one mutex, sized from RLIMIT_NOFILE.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "libesock/fdtab.h"
#include "libesock/real.h"

#define FD_CAP (1u << 22) /* no table beyond 4 Mi descriptors */

struct esock_fdtab esock_fdtab;

/* The own-descriptor marks: a bit per fd, in pages beside the table's. */
#define OWN_WORDS (ESOCK_FDTAB_PAGE / 64)
static _Atomic(_Atomic uint64_t *) *own_top;

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
	struct rlimit rl;
	unsigned max = 1024, npages;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		max = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > FD_CAP ? FD_CAP
									   : (unsigned)rl.rlim_max;
	if (max < ESOCK_FDTAB_PAGE)
		max = ESOCK_FDTAB_PAGE;
	npages = (max + ESOCK_FDTAB_PAGE - 1) >> ESOCK_FDTAB_PAGE_SHIFT;
	esock_fdtab.top = calloc(npages, sizeof(*esock_fdtab.top));
	own_top = calloc(npages, sizeof(*own_top));
	if (!esock_fdtab.top || !own_top) {
		init_rc = -ENOMEM;
		return;
	}
	pthread_atfork(fork_lock, fork_unlock, fork_unlock);
	atomic_store_explicit(&esock_fdtab.max, npages << ESOCK_FDTAB_PAGE_SHIFT,
			      memory_order_release);
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

/* ---- the library's own descriptors ---- */

static _Atomic uint64_t *own_page(unsigned fd, int make)
{
	_Atomic uint64_t *pg;

	if (esock_fdtab_init() < 0 || fd >= atomic_load(&esock_fdtab.max))
		return NULL;
	pg = atomic_load_explicit(&own_top[fd >> ESOCK_FDTAB_PAGE_SHIFT], memory_order_acquire);
	if (!pg && make) {
		pthread_mutex_lock(&lock);
		if (!(pg = atomic_load(&own_top[fd >> ESOCK_FDTAB_PAGE_SHIFT])) &&
		    (pg = calloc(OWN_WORDS, sizeof(*pg))))
			atomic_store_explicit(&own_top[fd >> ESOCK_FDTAB_PAGE_SHIFT], pg,
					      memory_order_release);
		pthread_mutex_unlock(&lock);
	}
	return pg;
}

void esock_fd_own(int fd)
{
	_Atomic uint64_t *pg;

	if (fd >= 0 && (pg = own_page((unsigned)fd, 1)))
		atomic_fetch_or(&pg[((unsigned)fd & (ESOCK_FDTAB_PAGE - 1)) / 64],
				1ull << ((unsigned)fd % 64));
}

bool esock_fd_is_own(int fd)
{
	_Atomic uint64_t *pg;

	return fd >= 0 && (pg = own_page((unsigned)fd, 0)) &&
	       (atomic_load(&pg[((unsigned)fd & (ESOCK_FDTAB_PAGE - 1)) / 64]) >> ((unsigned)fd % 64)) & 1;
}

int esock_fd_close(int fd)
{
	_Atomic uint64_t *pg;

	if (fd >= 0 && (pg = own_page((unsigned)fd, 0)))
		atomic_fetch_and(&pg[((unsigned)fd & (ESOCK_FDTAB_PAGE - 1)) / 64],
				 ~(1ull << ((unsigned)fd % 64)));
	return REAL(close)(fd);
}

int esock_fd_next_kept(unsigned from, unsigned to, bool *own)
{
	unsigned max;

	if (esock_fdtab_init() < 0)
		return -1;
	max = atomic_load(&esock_fdtab.max);
	if (to >= max)
		to = max - 1;
	for (unsigned fd = from; fd <= to && fd < max;) {
		unsigned pi = fd >> ESOCK_FDTAB_PAGE_SHIFT;
		_Atomic uint64_t *op = atomic_load(&own_top[pi]);
		struct esock_sock *_Atomic *sp = atomic_load(&esock_fdtab.top[pi]);

		if (!op && !sp) { /* a whole page of neither */
			fd = (pi + 1) << ESOCK_FDTAB_PAGE_SHIFT;
			continue;
		}
		if (op && (atomic_load(&op[(fd & (ESOCK_FDTAB_PAGE - 1)) / 64]) >> (fd % 64)) & 1) {
			*own = true;
			return (int)fd;
		}
		if (sp && atomic_load(&sp[fd & (ESOCK_FDTAB_PAGE - 1)])) {
			*own = false;
			return (int)fd;
		}
		fd++;
	}
	return -1;
}
