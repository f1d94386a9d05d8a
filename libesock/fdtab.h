/* SPDX-License-Identifier: MIT */
/*
 * The interposer's descriptor table: which fds are DDPMODE sockets.  Every
 * interposed call looks its fd up here first, so a lookup is a bounds check
 * and two loads: pages of slots that are allocated once and never move or go
 * away (readers take no lock, fork copies them as they are), found through a
 * top array sized at init from the hard RLIMIT_NOFILE.  Writers (socket,
 * accept, close, dup) serialise on one mutex.  An fd beyond the table is
 * never a DDPMODE socket: set() refuses it with -EMFILE.
 */
#ifndef ESOCK_LIBESOCK_FDTAB_H
#define ESOCK_LIBESOCK_FDTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct esock_sock;

#define ESOCK_FDTAB_PAGE_SHIFT 10
#define ESOCK_FDTAB_PAGE (1u << ESOCK_FDTAB_PAGE_SHIFT)

struct esock_fdtab {
	struct esock_sock *_Atomic *_Atomic *top; /* pages, by fd >> PAGE_SHIFT */
	_Atomic unsigned max;                     /* fds below this can be looked up */
};

extern struct esock_fdtab esock_fdtab;

/* Sizes the table (idempotent, thread-safe).  Returns 0 or -ENOMEM. */
int esock_fdtab_init(void);

/* The DDPMODE socket behind |fd|, or NULL (the pass-through case). */
static inline struct esock_sock *esock_fdtab_get(int fd)
{
	unsigned u = (unsigned)fd;
	struct esock_sock *_Atomic *pg;

	if (u >= atomic_load_explicit(&esock_fdtab.max, memory_order_acquire))
		return NULL;
	pg = atomic_load_explicit(&esock_fdtab.top[u >> ESOCK_FDTAB_PAGE_SHIFT],
				  memory_order_acquire);
	return pg ? atomic_load_explicit(&pg[u & (ESOCK_FDTAB_PAGE - 1)], memory_order_acquire)
		  : NULL;
}

/*
 * Makes |fd| refer to |s| (NULL clears).  Returns 0, or -EBADF (negative
 * fd), -EMFILE (beyond the table), -ENOMEM.
 */
int esock_fdtab_set(int fd, struct esock_sock *s);

/* Clears |fd| and returns what it held (NULL when nothing). */
struct esock_sock *esock_fdtab_take(int fd);

/* The lowest DDPMODE descriptor in [|from|, |to|], or -1. */
int esock_fdtab_next(unsigned from, unsigned to);

#endif /* ESOCK_LIBESOCK_FDTAB_H */
