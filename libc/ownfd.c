/* SPDX-License-Identifier: MIT */
/* The library's own descriptors (see ownfd.h). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "libc/ownfd.h"
#include "libc/real.h"

#define FD_CAP (1u << 22) /* no marks beyond 4 Mi descriptors */
#define PAGE_SHIFT 10
#define PAGE (1u << PAGE_SHIFT)
#define WORDS (PAGE / 64)

static _Atomic(_Atomic uint64_t *) *top; /* pages of bits, by fd >> PAGE_SHIFT */
static unsigned max;                       /* descriptors below this can be marked */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fork_lock(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

unsigned esock_fd_span(unsigned page)
{
	struct rlimit rl;
	unsigned n = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		n = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > FD_CAP ? FD_CAP : (unsigned)rl.rlim_max;
	return n < page ? page : (n + page - 1) & ~(page - 1);
}

static void init_once(void)
{
	unsigned n = esock_fd_span(PAGE);

	if ((top = calloc(n >> PAGE_SHIFT, sizeof(*top)))) {
		pthread_atfork(fork_lock, fork_unlock, fork_unlock);
		max = n;
	}
}

/* The page of bits holding |fd|, allocated when |make|; NULL beyond the table. */
static _Atomic uint64_t *page_of(unsigned fd, bool make)
{
	_Atomic uint64_t *pg;

	pthread_once(&once, init_once);
	if (fd >= max)
		return NULL;
	pg = atomic_load_explicit(&top[fd >> PAGE_SHIFT], memory_order_acquire);
	if (!pg && make) {
		pthread_mutex_lock(&lock);
		if (!(pg = atomic_load(&top[fd >> PAGE_SHIFT])) && (pg = calloc(WORDS, sizeof(*pg))))
			atomic_store_explicit(&top[fd >> PAGE_SHIFT], pg, memory_order_release);
		pthread_mutex_unlock(&lock);
	}
	return pg;
}

static _Atomic uint64_t *word_of(_Atomic uint64_t *pg, unsigned fd)
{
	return &pg[(fd & (PAGE - 1)) / 64];
}

void esock_fd_own(int fd)
{
	_Atomic uint64_t *pg;

	if (fd >= 0 && (pg = page_of((unsigned)fd, true)))
		atomic_fetch_or(word_of(pg, (unsigned)fd), 1ull << ((unsigned)fd % 64));
}

bool esock_fd_is_own(int fd)
{
	_Atomic uint64_t *pg;

	return fd >= 0 && (pg = page_of((unsigned)fd, false)) &&
	       (atomic_load(word_of(pg, (unsigned)fd)) >> ((unsigned)fd % 64)) & 1;
}

int esock_fd_close(int fd)
{
	_Atomic uint64_t *pg;

	if (fd >= 0 && (pg = page_of((unsigned)fd, false)))
		atomic_fetch_and(word_of(pg, (unsigned)fd), ~(1ull << ((unsigned)fd % 64)));
	return REAL(close)(fd);
}

int esock_fd_next_own(unsigned from, unsigned to)
{
	pthread_once(&once, init_once);
	if (!max)
		return -1;
	if (to >= max)
		to = max - 1;
	for (unsigned fd = from; fd <= to;) {
		_Atomic uint64_t *pg = atomic_load(&top[fd >> PAGE_SHIFT]);

		if (!pg) { /* a whole page of none */
			fd = ((fd >> PAGE_SHIFT) + 1) << PAGE_SHIFT;
			continue;
		}
		if ((atomic_load(word_of(pg, fd)) >> (fd % 64)) & 1)
			return (int)fd;
		fd++;
	}
	return -1;
}
