/* SPDX-License-Identifier: MIT */
/*
 * A host's sockets: their handles (the host's names for them), their place
 * in tcpserverd's epoll set, their end, and the addresses and options TSP
 * carries for them.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcpserver/daemon/tsd.h"

struct tsock *sock_of(struct host *h, uint32_t handle)
{
	if (handle == 0 || handle > (uint32_t)d.max_socks || h->socks[handle - 1].fd < 0)
		return NULL;
	return &h->socks[handle - 1];
}

int new_handle(struct host *h, int fd, bool nonblock)
{
	for (int i = h->low_free; i < d.max_socks; i++)
		if (h->socks[i].fd < 0) {
			h->low_free = i + 1;
			memset(&h->socks[i], 0, sizeof(h->socks[i]));
			h->socks[i].fd = fd;
			h->socks[i].nonblock = nonblock;
			h->socks[i].shut_how = -1;
			h->nsocks++;
			return i + 1;
		}
	return -EMFILE;
}

/*
 * The socket's place in the epoll set follows what waits on it: a parked
 * call and a WATCH.  Edge-triggered: an event is a change, and each is
 * answered by looking at the socket (the call again, its state for READY).
 */
bool interest(int hi, uint32_t handle, struct tsock *s)
{
	uint32_t ev = s->park_ev | (s->want ? s->want | EPOLLRDHUP : 0) | (s->olen && d.hosts[hi].held != handle ? EPOLLOUT : 0) |
		      (s->eager ? EPOLLIN : 0) |
		      (s->eager_rx && !s->rx_end && s->rx_out < ESOCK_TSP_CREDIT_WINDOW ? EPOLLIN | EPOLLRDHUP : 0);
	struct epoll_event e = { .events = ev | EPOLLET, .data.u64 = key(EV_NET, hi, (int)handle) };

	if (ev == s->reg)
		return true;
	if (!ev) {
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	} else if (epoll_ctl(d.epfd, s->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &e) < 0) {
		return false;
	}
	s->reg = ev;
	return true;
}

void unwatch(struct tsock *s)
{
	if (s->reg)
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	s->reg = s->park_ev = s->want = 0;
}

/* |keep_queued|: octets of an asynchronous send still go out (a host's CLOSE), else dropped. */
void sock_close(struct host *h, uint32_t handle, bool keep_queued)
{
	struct tsock *s = sock_of(h, handle);

	hold_forget(h, handle);
	if (!s)
		return;
	free(s->parked);
	s->parked = NULL;
	if (s->eager)
		h->neager--;
	s->eager = false;
	if (keep_queued && s->olen)
		drain_add(s); /* (takes the descriptor and the queue, when it can) */
	if (s->fd >= 0) {
		if (h->fds_shared)
			unwatch(s);
		else
			s->reg = s->park_ev = s->want = 0; /* (the close takes it out of the set) */
		close(s->fd);
	}
	free(s->obuf);
	s->obuf = NULL;
	s->fd = -1;
	h->nsocks--;
	if ((int)handle - 1 < h->low_free)
		h->low_free = (int)handle - 1;
}

int to_sockaddr(const struct esock_tsp_addr *a, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(a->port);
		memcpy(&s->sin_addr, a->addr, 4);
		*len = sizeof(*s);
		return 0;
	}
	if (a->family == 6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(a->port);
		s->sin6_scope_id = a->scope_id;
		memcpy(&s->sin6_addr, a->addr, 16);
		*len = sizeof(*s);
		return 0;
	}
	return -EAFNOSUPPORT;
}

void from_sockaddr(const struct sockaddr_storage *ss, struct esock_tsp_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		a->family = 4;
		a->port = ntohs(s->sin_port);
		memcpy(a->addr, &s->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		a->family = 6;
		a->port = ntohs(s->sin6_port);
		a->scope_id = s->sin6_scope_id;
		memcpy(a->addr, &s->sin6_addr, 16);
	}
}

/* Options a host may set or read: the portable ones, nothing that reaches beyond its socket. */
bool option_ok(int level, int name)
{
	if (level == SOL_SOCKET)
		return name == SO_REUSEADDR || name == SO_REUSEPORT || name == SO_KEEPALIVE ||
		       name == SO_RCVBUF || name == SO_SNDBUF || name == SO_LINGER || name == SO_ERROR ||
		       name == SO_TYPE || name == SO_RCVLOWAT || name == SO_OOBINLINE;
	if (level == IPPROTO_TCP)
		return name == TCP_NODELAY || name == TCP_KEEPIDLE || name == TCP_KEEPINTVL ||
		       name == TCP_KEEPCNT || name == TCP_MAXSEG || name == TCP_CORK ||
		       name == TCP_DEFER_ACCEPT || name == TCP_NOTSENT_LOWAT || name == TCP_QUICKACK;
	return level == IPPROTO_IPV6 && name == IPV6_V6ONLY;
}
