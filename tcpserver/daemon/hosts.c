/* SPDX-License-Identifier: MIT */
/*
 * Hosts: admission (a free slot), their channels arriving (a Unix socket
 * with shared memory, or an esock QP from another node), their bells, their
 * queues served, their sockets' events, and their end.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcpserver/daemon/tsd.h"

/*
 * |graceful|: the host ended (exit, or killed): what it had sent is still
 * sent, as the kernel sends what a process wrote before it ended.  Else (it
 * broke the protocol) what it queued goes with it.
 */
void host_drop_ex(int hi, const char *why, bool graceful)
{
	struct host *h = &d.hosts[hi];

	if (!h->used)
		return;
	for (int i = 0; h->socks && i < d.max_socks; i++)
		sock_close(h, (uint32_t)i + 1, graceful);
	logv("host %d (pid %u): %s; its sockets closed\n", hi, h->pid, why);
	if (h->usock >= 0) {
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, h->usock, NULL);
		close(h->usock);
	}
	if (h->bell >= 0)
		epoll_ctl(d.epfd, EPOLL_CTL_DEL, h->bell, NULL);
	tsp_chan_close(&h->ch);
	tsp_rchan_close(h->rc);
	free(h->socks);
	memset(h, 0, sizeof(*h));
}

void host_drop(int hi, const char *why)
{
	host_drop_ex(hi, why, false);
}


/* A free host slot, or -1 (admission: no more hosts). */
static int host_slot(void)
{
	for (int i = 0; i < d.max_hosts; i++)
		if (!d.hosts[i].used) {
			struct host *h = &d.hosts[i];

			memset(h, 0, sizeof(*h));
			h->ch.memfd = h->ch.bell = h->ch.hbell = -1;
			h->usock = h->bell = -1;
			return i;
		}
	d.refused_hosts++;
	logv("a host refused: %d hosts already\n", d.max_hosts);
	return -1;
}

/* Host |hi| has its channel: its socket table, its bell watched. */
static bool host_ready(int hi)
{
	struct host *h = &d.hosts[hi];

	if (!(h->socks = malloc(sizeof(*h->socks) * (size_t)d.max_socks)))
		return false;
	for (int i = 0; i < d.max_socks; i++)
		h->socks[i].fd = -1;
	h->ready = true;
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, h->bell, &(struct epoll_event){ .events = EPOLLIN,
									 .data.u64 = key(EV_HOST_BELL, hi, 0) });
	return true;
}

/*
 * Hosts of other nodes (-l): each connection request with a channel's
 * hello becomes a host at once (its channel comes with it); beyond the
 * host limit, or without a valid hello, the request is rejected.
 */
void host_new_net(void)
{
	struct esock_conn_req *r;

	(void)esock_listener_ready(d.rl);
	while (esock_get_request(d.rl, &r, 0) == 0) {
		int hi = host_slot(), rc;
		struct host *h;

		if (hi < 0) {
			esock_reject(r, NULL, 0);
			continue;
		}
		h = &d.hosts[hi];
		if ((rc = tsp_rchan_accept(&h->rc, r)) < 0) {
			d.dropped_hosts++;
			logv("a host of the network refused: %s\n", strerror(-rc));
			continue;
		}
		h->used = true;
		h->since_us = now_us();
		h->req = tsp_rchan_req(h->rc);
		h->resp = tsp_rchan_resp(h->rc);
		h->bell = tsp_rchan_bell(h->rc);
		if (!host_ready(hi) || tsp_rchan_drain(h->rc) < 0) {
			d.dropped_hosts++;
			host_drop(hi, "its channel broke at once");
		}
	}
}

void host_new(void)
{
	int fd = accept4(d.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), hi;
	struct host *h;

	if (fd < 0)
		return;
	if ((hi = host_slot()) < 0) { /* (it sees its HELLO refused: the socket ends) */
		close(fd);
		return;
	}
	h = &d.hosts[hi];
	h->usock = fd;
	h->used = true;
	h->since_us = now_us();
	{
		struct ucred uc;
		socklen_t ul = sizeof(uc);

		h->cred_pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0 ? uc.pid : 0;
	}
	/* Its channel comes behind the connect: watched, never waited for (nobody waits on a host). */
	epoll_ctl(d.epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP,
								     .data.u64 = key(EV_HOST_SOCK, hi, 0) });
}

/* The host's Unix socket has news: its channel, or (after it) its end. */
void host_sock(int hi)
{
	struct host *h = &d.hosts[hi];

	if (!h->used)
		return;
	if (h->ready) {
		/* (nothing else ever comes there) What it queued before it ended is carried out first. */
		host_serve(hi);
		host_drop_ex(hi, "its socket ended", true);
		return;
	}
	if (tsp_chan_recv(&h->ch, h->usock) < 0) {
		d.dropped_hosts++;
		host_drop(hi, "no valid channel");
		return;
	}
	h->req = h->ch.req;
	h->resp = h->ch.resp;
	h->bell = h->ch.bell;
	if (!host_ready(hi)) {
		d.dropped_hosts++;
		host_drop(hi, "no memory for its sockets");
	}
}

/* Host |hi| rang.  Across the network its bell also tells that the link broke: the host's end. */
void host_bell(int hi)
{
	struct host *h = &d.hosts[hi];
	uint64_t v;

	if (!h->used)
		return;
	if (!h->rc) {
		(void)!read(h->bell, &v, sizeof(v));
		return;
	}
	if (tsp_rchan_drain(h->rc) < 0) {
		host_serve(hi); /* (what it queued before it ended is carried out first) */
		host_drop_ex(hi, "its link ended", true);
	}
}

/* Hosts that connected and sent no channel within a second go; the time to look again, in ms. */
int host_deadlines(void)
{
	int64_t now = now_us(), next = -1;

	for (int i = 0; i < d.max_hosts; i++) {
		struct host *h = &d.hosts[i];

		if (!h->used || h->ready)
			continue;
		if (now - h->since_us >= 1000000) {
			d.dropped_hosts++;
			host_drop(i, "no channel within a second");
		} else if (next < 0 || h->since_us + 1000000 - now < next) {
			next = h->since_us + 1000000 - now;
		}
	}
	return next < 0 ? -1 : (int)(next / 1000) + 1;
}


/* Eager receive that waited for room in a host's queue: again (the host reads as it can). */
void retry_rx(int hi)
{
	struct host *h = &d.hosts[hi];

	h->rx_blocked = false;
	for (int i = 0; h->used && i < d.max_socks; i++) {
		struct tsock *s = &h->socks[i];

		if (s->fd >= 0 && s->rx_blocked &&
		    (!push_data(h, (uint32_t)i + 1, s, false) || !interest(hi, (uint32_t)i + 1, s))) {
			host_drop(hi, "it does not read its events");
			return;
		}
	}
}

/*
 * Host |hi| is dropped for |why|, unless its link broke (across the network:
 * the host ended, as a shared-memory host's Unix socket ends), which is no
 * fault of its own: then what it sent before is still sent.
 */
static void host_fail(int hi, const char *why)
{
	struct host *h = &d.hosts[hi];

	if (h->rc && tsp_rchan_drain(h->rc) < 0)
		host_drop_ex(hi, "its link ended", true);
	else
		host_drop(hi, why);
}

/* Serves what host |hi| has queued.  Returns the number of requests taken. */
int host_serve(int hi)
{
	struct host *h = &d.hosts[hi];
	int n = 0;

	while (h->used && h->ready) {
		struct esock_tsp_msg q;
		uint32_t len;
		int rc;
		const uint8_t *r = esock_shmq_peek(h->req, &len, &rc);
		static uint8_t in[MSG_MAX];

		if (!r) {
			if (rc != -EAGAIN)
				host_fail(hi, "its queue is broken");
			return n;
		}
		/* Copied out before it is read: the host may change the shared octets meanwhile. */
		if (len > sizeof(in) || (memcpy(in, r, len), esock_tsp_decode(in, len, &q)) != (int)len) {
			host_drop(hi, "a request that is not TSP");
			return n;
		}
		esock_shmq_release(h->req);
		n++;
		h->calls++;
		if (h->held && !(q.h.op == ESOCK_TSP_SEND && q.h.sock == h->held))
			hold_end(hi, false); /* (the host went on to something else: it goes alone) */
		if (!h->used)
			return n;
		rc = call(h, hi, &q, in, len);
		if (rc < 0) {
			host_fail(hi, "it broke the protocol or does not read its answers");
			return n;
		}
		if (q.h.op == ESOCK_TSP_BYE) {
			host_drop(hi, "said bye");
			return n;
		}
	}
	return n;
}

/* A parked call's socket is ready (|events|): the call again, from its kept request. */
void resume(int hi, uint32_t handle, uint32_t events)
{
	struct host *h = &d.hosts[hi];
	struct tsock *s;
	struct esock_tsp_msg q;

	if (!h->used || !(s = sock_of(h, handle)))
		return;
	if ((s->eager && !accept_ahead(h, handle, s)) ||
	    !push_data(h, handle, s, (events & EPOLLIN) && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) ||
	    !interest(hi, handle, s)) {
		host_drop(hi, "it does not read its events");
		return;
	}
	if (s->olen) { /* room, maybe: the queued octets first */
		flush_out(h, s);
		if (!interest(hi, handle, s) || !credit(h, handle, s)) {
			host_drop(hi, "it does not read its events");
			return;
		}
	}
	if (s->parked) {
		if (esock_tsp_decode(s->parked, s->parked_len, &q) != (int)s->parked_len)
			return;
		switch (call(h, hi, &q, s->parked, s->parked_len)) {
		case 1: /* answered: the call waits no more (a WATCH may go on) */
			free(s->parked);
			s->parked = NULL;
			s->sent = 0;
			s->park_ev = 0;
			if (!interest(hi, handle, s)) {
				host_drop(hi, "out of memory");
				return;
			}
			break;
		case -1:
			host_drop(hi, "it does not read its answers");
			return;
		}
	}
	if (!tell_ready(h, handle, s))
		host_drop(hi, "it does not read its events");
}
