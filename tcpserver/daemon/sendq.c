/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous send: the octets a host handed over and TCP has not taken
 * yet, in a ring per socket; credits back to the host as TCP takes them;
 * and the queues of sockets the host closed, which still go out for a while.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcpserver/daemon/tsd.h"

/* Hands queued octets to TCP from |obuf| (a ring); returns the octets taken, or -errno. */
static long ring_send(int fd, uint8_t *obuf, uint32_t *ohead, uint32_t *olen)
{
	long total = 0;

	while (*olen) {
		uint32_t run = ESOCK_TSP_CREDIT_WINDOW - *ohead < *olen ? ESOCK_TSP_CREDIT_WINDOW - *ohead : *olen;
		ssize_t n = send(fd, obuf + *ohead, run, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? total : -errno;
		d.sent = true;
		*ohead = (*ohead + (uint32_t)n) % ESOCK_TSP_CREDIT_WINDOW;
		*olen -= (uint32_t)n;
		total += n;
	}
	return total;
}

/*
 * Credits back to the host: a CREDIT once a quarter of the window went to
 * TCP, or once all did and the host has half of it or more outstanding (it
 * may be about to wait for them).  Small sends cost no event each.
 */
bool credit(struct host *h, uint32_t handle, struct tsock *s)
{
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_CREDIT, .sock = handle } };

	if (!s->unreported || (s->unreported < ESOCK_TSP_CREDIT_WINDOW / 4 &&
				(s->olen || s->unreported < ESOCK_TSP_CREDIT_WINDOW / 2)))
		return true;
	m.u.credit.octets = s->unreported;
	s->unreported = 0;
	return answer(h, &m);
}

/* The queue goes to TCP as far as it takes it; a SHUTDOWN waiting for it follows. */
void flush_out(struct host *h, struct tsock *s)
{
	long n = ring_send(s->fd, s->obuf, &s->ohead, &s->olen);

	if (n < 0) { /* the rest is lost: the next SEND says why, the credits come back */
		s->oerr = (int)-n;
		s->unreported += s->olen;
		s->olen = 0;
	} else {
		s->unreported += (uint32_t)n;
		h->bytes_out += (uint64_t)n;
		s->out += (uint64_t)n;
	}
	if (!s->olen && s->shut_how >= 0) {
		shutdown(s->fd, s->shut_how);
		s->shut_how = -1;
	}
}

/* A socket closed with octets still queued: they go on out, bounded in time. */
void drain_add(struct tsock *s)
{
	struct drain *dr;

	if (d.ndrains == d.capdrains) {
		int cap = d.capdrains ? 2 * d.capdrains : 16;
		struct drain *nd = realloc(d.drains, (size_t)cap * sizeof(*nd));

		if (!nd)
			return; /* (then they are dropped: the socket closes now) */
		d.drains = nd;
		d.capdrains = cap;
	}
	dr = &d.drains[d.ndrains];
	*dr = (struct drain){ s->fd, s->obuf, s->ohead, s->olen, now_us() + DRAIN_US };
	if (epoll_ctl(d.epfd, s->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd,
		      &(struct epoll_event){ .events = EPOLLOUT | EPOLLET,
					     .data.u64 = key(EV_DRAIN, 0, s->fd) }) < 0)
		return;
	d.ndrains++;
	s->fd = -1;
	s->obuf = NULL;
	s->reg = 0;
}

void drain_end(int i)
{
	epoll_ctl(d.epfd, EPOLL_CTL_DEL, d.drains[i].fd, NULL);
	close(d.drains[i].fd);
	free(d.drains[i].obuf);
	d.drains[i] = d.drains[--d.ndrains];
}

/* A draining socket has room (fd |fd|), or time passed (-1): what is done goes. */
void drain_step(int fd)
{
	int64_t now = now_us();

	for (int i = 0; i < d.ndrains;) {
		struct drain *dr = &d.drains[i];

		if (dr->fd == fd && ring_send(dr->fd, dr->obuf, &dr->ohead, &dr->olen) < 0)
			dr->olen = 0;
		if (!dr->olen || now >= dr->until_us)
			drain_end(i);
		else
			i++;
	}
}
