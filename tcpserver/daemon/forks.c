/* SPDX-License-Identifier: MIT */
/*
 * fork of a host: its sockets copied at FORK for the child, which takes them
 * with its HELLO; copies nobody takes go after a while.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tcpserver/daemon/tsd.h"

static void fork_free(struct forked *f, bool close_fds)
{
	for (int i = 0; close_fds && i < f->n; i++)
		close(f->v[i].fd);
	free(f->v);
	memset(f, 0, sizeof(*f));
	d.nforks--;
}

/* FORK: every socket of |h| copied for its child.  The token (> 0), or -errno. */
int fork_copy(struct host *h)
{
	struct forked *f = NULL;
	uint32_t tok = 0;

	h->fds_shared = true; /* (the parent's and the child's descriptors: one file each) */
	for (int i = 0; i < MAX_FORKS && !f; i++)
		if (!d.forks[i].token)
			f = &d.forks[i];
	if (!f)
		return -EAGAIN; /* (that many forks in the last FORK_US, none taken) */
	if (!(f->v = calloc((size_t)(h->nsocks ? h->nsocks : 1), sizeof(*f->v))))
		return -ENOMEM;
	d.nforks++;
	for (int i = 0; i < d.max_socks && f->n < h->nsocks; i++) {
		struct tsock *s = &h->socks[i];
		int fd;

		if (s->fd < 0)
			continue;
		if ((fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			int rc = -errno;

			fork_free(f, true);
			return rc;
		}
		f->v[f->n].handle = (uint32_t)i + 1;
		f->v[f->n].fd = fd;
		f->v[f->n].nonblock = s->nonblock;
		f->v[f->n++].listener = s->listener;
	}
	/* A token nobody can guess (a host takes only what its parent's FORK named). */
	while (!tok)
		if (getrandom(&tok, sizeof(tok), 0) != sizeof(tok) || !(tok &= 0x7fffffffu))
			tok = (uint32_t)now_us() & 0x7fffffffu;
	f->token = tok;
	f->until_us = now_us() + FORK_US;
	return (int)tok;
}

/* HELLO with ESOCK_TSP_F_INHERIT: the copies of |token| become |h|'s.  0 or -EPERM. */
int fork_take(struct host *h, uint32_t token)
{
	for (int i = 0; token && i < MAX_FORKS; i++) {
		struct forked *f = &d.forks[i];

		if (f->token != token)
			continue;
		for (int k = 0; k < f->n; k++) {
			struct tsock *s = &h->socks[f->v[k].handle - 1];

			memset(s, 0, sizeof(*s));
			s->fd = f->v[k].fd;
			s->nonblock = f->v[k].nonblock;
			s->listener = f->v[k].listener;
			s->shut_how = -1;
			h->nsocks++;
		}
		h->fds_shared = true;
		fork_free(f, false);
		return 0;
	}
	return -EPERM;
}

/* Copies nobody took in time go; the time until the next does, in ms (-1: none). */
int forks_expire(void)
{
	int64_t now = now_us(), next = -1;

	for (int i = 0; d.nforks && i < MAX_FORKS; i++) {
		struct forked *f = &d.forks[i];

		if (!f->token)
			continue;
		if (now >= f->until_us) {
			logv("the sockets of a fork nobody took (%d) closed\n", f->n);
			fork_free(f, true);
		} else if (next < 0 || f->until_us - now < next) {
			next = f->until_us - now;
		}
	}
	return next < 0 ? -1 : (int)(next / 1000) + 1;
}
