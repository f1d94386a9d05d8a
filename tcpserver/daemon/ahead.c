/* SPDX-License-Identifier: MIT */
/*
 * Work done ahead of the host's calls: eager receive (octets pushed in DATA
 * events as they come) and eager accept (connections taken as they come and
 * told in ACCEPTED events).
 */
#include "config.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcpserver/daemon/tsd.h"

/*
 * DATA leaves this much of the host's queue free, so that any answer to a
 * call (up to ESOCK_TSP_BODY_MAX, with a skip mark before it) still fits:
 * pushed octets never crowd out a response.
 */
#define RX_RESERVE (2 * (ESOCK_TSP_BODY_MAX + 64))

/*
 * Eager receive: what comes is read at once and pushed in DATA events, as
 * far as the host's window allows (it gives octets back as it consumes
 * them).  An empty DATA ends the stream.  False: the host does not read.
 *
 * |edge_open|: the edge being served said input and no end (no EPOLLRDHUP):
 * a short read drained the socket, and whatever comes after it makes a new
 * edge, so no recv to hear EAGAIN.  (With the end already there no edge
 * would come for it: then, as for any other caller, reading goes on until
 * recv says so.)
 */
bool push_data(struct host *h, uint32_t handle, struct tsock *s, bool edge_open)
{
	static uint8_t buf[ESOCK_TSP_BODY_MAX];

	s->rx_blocked = false;
	while (s->eager_rx && !s->rx_end && s->rx_out < ESOCK_TSP_CREDIT_WINDOW) {
		struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_DATA, .sock = handle } };
		uint32_t room = ESOCK_TSP_CREDIT_WINDOW - s->rx_out, qfree = esock_shmq_free(h->resp);
		size_t ask;
		ssize_t n;

		if (qfree < RX_RESERVE + ESOCK_TSP_HDR_LEN + 64 + 4096) { /* the host is behind: later */
			s->rx_blocked = h->rx_blocked = true; /* (the next look reads until EAGAIN) */
			return true;
		}
		qfree -= RX_RESERVE + ESOCK_TSP_HDR_LEN + 64;
		if (room > qfree)
			room = qfree;
		ask = room < sizeof(buf) ? room : sizeof(buf);
		n = recv(s->fd, buf, ask, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			s->rx_end = true;
			s->rx_err = n < 0 ? errno : 0;
		} else {
			m.data = buf;
			m.data_len = (uint32_t)n;
			s->rx_out += (uint32_t)n;
			h->bytes_in += (uint64_t)n;
			s->in += (uint64_t)n;
		}
		if (!answer(h, &m))
			return false;
		if (n > 0 && (size_t)n < ask && edge_open)
			break;
	}
	return true;
}

/*
 * A connected socket of a host that asked for eager receive: from now on.
 * Octets already there are found by the epoll set (adding or changing a
 * registration reports what is ready), not by a recv now, which right
 * after an accept mostly says EAGAIN; only a socket already registered for
 * input (WATCH) is looked at now, its edge perhaps gone by.
 */
bool rx_start(struct host *h, int hi, uint32_t handle, struct tsock *s)
{
	bool had_in = s->reg & EPOLLIN;

	if (!(h->flags & ESOCK_TSP_F_EAGER_RECV))
		return true;
	s->eager_rx = true;
	return interest(hi, handle, s) && (!had_in || push_data(h, handle, s, false));
}

/*
 * Eager accept: a listening socket's connections taken as they come and
 * told in ACCEPTED events (with both addresses), so that the host's accept
 * finds one already there.  Within the host's socket limit: beyond it they
 * wait in the kernel's backlog.  False: the host does not read its events.
 */
bool accept_ahead(struct host *h, uint32_t handle, struct tsock *s)
{
	for (;;) {
		struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_ACCEPTED, .sock = handle } };
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd, nh;

		if (h->nsocks >= d.max_socks) {
			h->held_back = true;
			return true; /* (no room: they wait in the backlog) */
		}
		if ((fd = accept4(s->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0)
			return true;
		if ((nh = new_handle(h, fd, false)) < 0) {
			close(fd);
			return true;
		}
		h->accepted++;
		m.u.accepted.sock = (uint32_t)nh;
		from_sockaddr(&ss, &m.u.accepted.peer);
		sl = sizeof(ss);
		if (s->local_fixed)
			m.u.accepted.local = s->local;
		else if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			from_sockaddr(&ss, &m.u.accepted.local);
		if (!answer(h, &m) || !rx_start(h, (int)(h - d.hosts), (uint32_t)nh, &h->socks[nh - 1]))
			return false;
	}
}

/*
 * Eager accept starts on a listener once its host shows it wants its
 * connections (a WATCH for POLLIN, or an ACCEPT): a pre-fork server's parent
 * that listens and forks never takes connections its children should.
 */
bool eager_arm(struct host *h, int hi, uint32_t handle, struct tsock *s)
{
	if (s->eager || !s->listener || !(h->flags & ESOCK_TSP_F_EAGER_ACCEPT))
		return true;
	s->eager = true;
	h->neager++;
	return interest(hi, handle, s) && accept_ahead(h, handle, s);
}
