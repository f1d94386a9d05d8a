/* SPDX-License-Identifier: MIT */
/*
 * The host's requests carried out, one decoded request at a time (call):
 * checked, then handed to the handler of its operation, here for the calls
 * that make, take and end connections, in calls_io.c for SEND and RECV, in
 * calls_opt.c for options and names.  A call that would block is parked on
 * its socket (hosts.c calls it again when the socket is ready: resume).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "tcpserver/daemon/req.h"

/* READY when the watched events of the socket changed since it was last told. */
bool tell_ready(struct host *h, uint32_t handle, struct tsock *s)
{
	struct pollfd p = { .fd = s->fd, .events = (short)s->want };
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_EVENT, .op = ESOCK_TSP_READY, .sock = handle } };
	uint32_t now;

	if (!s->want)
		return true;
	now = poll(&p, 1, 0) == 1 ? (uint32_t)p.revents & (s->want | POLLERR | POLLHUP) : 0;
	if (now == s->told)
		return true;
	s->told = now;
	m.u.watch.events = now;
	return answer(h, &m);
}

static int call_hello(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	struct host *h = r->h;

	if (q->u.hello.vmin > ESOCK_TSP_VERSION || q->u.hello.vmax < ESOCK_TSP_VERSION)
		return done(r, -EPROTONOSUPPORT);
	if ((q->u.hello.flags & ESOCK_TSP_F_INHERIT) && fork_take(h, q->h.sock) < 0)
		return done(r, -EPERM); /* (no such fork: it may try again) */
	h->hello = true;
	h->pid = q->u.hello.pid;
	/*
	 * Granted: all it asks for; registered buffers over shared memory only
	 * where the kernel told the host's pid (across the network they are
	 * RDMA Reads and Writes of the host's registered memory).
	 */
	h->flags = q->u.hello.flags & (ESOCK_TSP_F_SETUP_ACCEPT | ESOCK_TSP_F_ASYNC_SEND | ESOCK_TSP_F_EAGER_ACCEPT |
				       ESOCK_TSP_F_EAGER_RECV | ESOCK_TSP_F_INHERIT |
				       (h->cred_pid > 0 || h->rc ? ESOCK_TSP_F_REG_BUFFERS : 0));
	r->m.u.hello_ok.version = ESOCK_TSP_VERSION;
	r->m.u.hello_ok.flags = h->flags;
	r->m.u.hello_ok.max_socks = (uint32_t)d.max_socks;
	r->m.u.hello_ok.max_data = ESOCK_TSP_BODY_MAX;
	logv("host %d: pid %u said hello\n", r->hi, h->pid);
	return done(r, 0);
}

static int call_socket(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	int fd, rc;

	if (q->u.socket.family != 4 && q->u.socket.family != 6)
		return answered(r, -EAFNOSUPPORT);
	if ((fd = socket(q->u.socket.family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			 0)) < 0)
		return answered(r, -errno);
	if ((rc = new_handle(r->h, fd, q->u.socket.flags & ESOCK_TSP_NONBLOCK)) < 0)
		close(fd);
	return answered(r, rc);
}

static int call_bind_connect(struct req *r)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct tsock *s = r->s;
	int rc, err = 0;

	if ((rc = to_sockaddr(&r->q->u.addr, &ss, &sl)) < 0)
		return done(r, rc);
	if (r->q->h.op == ESOCK_TSP_BIND)
		return done(r, bind(s->fd, (struct sockaddr *)&ss, sl) < 0 ? -errno : 0);
	if (r->rec == s->parked) { /* ready: how did it end? */
		socklen_t el = sizeof(err);

		return done(r, getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ? -errno : -err);
	}
	if (connect(s->fd, (struct sockaddr *)&ss, sl) == 0)
		return done(r, 0);
	if (errno == EINPROGRESS && !s->nonblock)
		return park(r, EPOLLOUT);
	return done(r, -errno);
}

static int call_listen(struct req *r)
{
	static const uint8_t any[16];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct tsock *s = r->s;
	int rc = listen(s->fd, r->q->u.listen.backlog) < 0 ? -errno : 0;

	s->listener |= rc == 0;
	if (rc == 0 && getsockname(s->fd, (struct sockaddr *)&ss, &sl) == 0) {
		from_sockaddr(&ss, &s->local);
		s->local_fixed = memcmp(s->local.addr, any, s->local.family == 4 ? 4 : 16) != 0;
	}
	return done(r, rc);
}

static int call_accept(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	struct host *h = r->h;
	struct tsock *s = r->s;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, rc;

	if (s->eager || (s->listener && (h->flags & ESOCK_TSP_F_EAGER_ACCEPT))) {
		/* Its connections come as ACCEPTED events (from now on: eager_arm). */
		r->m.result = -EINVAL;
		if (!answer(h, &r->m))
			return -1;
		return eager_arm(h, r->hi, q->h.sock, s) ? 1 : -1;
	}
	if ((fd = accept4(s->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0) {
		rc = -errno;
		if (rc == -EAGAIN || rc == -EWOULDBLOCK) {
			s->told &= ~(uint32_t)POLLIN; /* (the host knows: the next connection is news) */
			if (!s->nonblock && !(q->u.accept.flags & ESOCK_TSP_MSG_DONTWAIT))
				return park(r, EPOLLIN);
		}
		return done(r, rc);
	}
	if ((rc = new_handle(h, fd, q->u.accept.flags & ESOCK_TSP_NONBLOCK)) < 0) {
		close(fd);
		return done(r, rc);
	}
	h->accepted++;
	from_sockaddr(&ss, &r->m.u.accepted.peer); /* (as accept4 gives it) */
	sl = sizeof(ss);
	/* Setup with accept: the local address too, no GETSOCKNAME round trip after. */
	if ((h->flags & ESOCK_TSP_F_SETUP_ACCEPT) && s->local_fixed)
		r->m.u.accepted.local = s->local;
	else if ((h->flags & ESOCK_TSP_F_SETUP_ACCEPT) && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		from_sockaddr(&ss, &r->m.u.accepted.local);
	return done(r, rc);
}

static int call_close(struct req *r)
{
	struct host *h = r->h;

	sock_close(h, r->q->h.sock, true);
	r->m.result = 0;
	if (!answer(h, &r->m))
		return -1;
	/* A handle is free again: eager listeners held back by the limit take more. */
	if (!h->held_back)
		return 1;
	h->held_back = false;
	for (int i = 0; h->neager && i < d.max_socks; i++)
		if (h->socks[i].fd >= 0 && h->socks[i].eager && !accept_ahead(h, (uint32_t)i + 1, &h->socks[i]))
			return -1;
	return 1;
}

static int call_shutdown(struct req *r)
{
	struct tsock *s = r->s;
	int how = r->q->u.shutdown.how;

	if (s->olen && (how == SHUT_WR || how == SHUT_RDWR) && how >= 0) {
		s->shut_how = how; /* after the queued octets (flush_out) */
		return done(r, 0);
	}
	return done(r, shutdown(s->fd, how) < 0 ? -errno : 0);
}

static int call_fork(struct req *r)
{
	struct host *h = r->h;
	int rc;

	/* Two processes hold them now: nothing is pushed ahead to one of them any more. */
	for (int i = 0; i < d.max_socks; i++)
		if (h->socks[i].fd >= 0 && h->socks[i].eager_rx) {
			h->socks[i].eager_rx = false;
			if (!interest(r->hi, (uint32_t)i + 1, &h->socks[i]))
				return -1;
		}
	rc = fork_copy(h);
	logv("host %d (pid %u): fork, %d sockets copied\n", r->hi, h->pid, rc > 0 ? h->nsocks : 0);
	return done(r, rc);
}

/* From now on READY tells each change of these (0: no more); the first comes now. */
static int call_watch(struct req *r)
{
	uint32_t handle = r->q->h.sock;
	struct tsock *s = r->s;

	s->want = r->q->u.watch.events & (POLLIN | POLLOUT | POLLPRI | POLLRDHUP);
	s->told = 0;
	r->m.result = interest(r->hi, handle, s) ? 0 : -ENOMEM;
	if (!answer(r->h, &r->m) || ((s->want & POLLIN) && !eager_arm(r->h, r->hi, handle, s)))
		return -1;
	if (s->eager) {
		/*
		 * Its connections come as ACCEPTED, which is what the host's
		 * readiness of it says: no READY (and no poll here) for each.
		 */
		s->want &= ~(uint32_t)(POLLIN | POLLRDHUP);
		if (!interest(r->hi, handle, s))
			return -1;
	}
	return tell_ready(r->h, handle, s) ? 1 : -1;
}

/* SEND_REG: the octets from the host's region into |xbuf| (or the stage), then a SEND of them in |xq|. */
static int fetch_reg(struct req *r, struct esock_tsp_msg *xq, uint8_t *xbuf, size_t cap)
{
	const struct esock_tsp_msg *q = r->q;
	struct host *h = r->h;
	int rc;

	if (q->u.xfer.len > cap)
		return -EMSGSIZE;
	if ((rc = tsp_region_check(&h->regions, q->u.xfer.region, q->u.xfer.addr, q->u.xfer.len,
				   ESOCK_TSP_REG_READ)) < 0 ||
	    (rc = h->rc ? tsp_rchan_fetch(h->rc, tsp_region_key(&h->regions, q->u.xfer.region), q->u.xfer.addr,
					  q->u.xfer.len)
			: tsp_mem_read(h->cred_pid, q->u.xfer.addr, xbuf, q->u.xfer.len)) < 0)
		return rc;
	if (r->rec != r->s->parked)
		h->reg_out += q->u.xfer.len; /* (a parked call read again is counted once) */
	*xq = *q;
	xq->u.send.flags = q->u.xfer.flags;
	xq->data = h->rc && q->u.xfer.len ? tsp_rchan_stage(h->rc) : xbuf; /* (the stage: fetch made it) */
	xq->data_len = q->u.xfer.len;
	r->q = xq;
	return 0;
}

/* The answer a handler left in r->m, and what follows it. */
static int finish(struct req *r)
{
	int rc = r->m.result;

	if (rc < 0) {
		r->m.data = NULL;
		r->m.data_len = 0;
	}
	if (!answer(r->h, &r->m))
		return -1;
	/*
	 * A connection taken: the listener's readiness told again when that was
	 * its last (a level-triggered watcher must not see it ready for
	 * nothing); eager receive starts on it (after the answer that names it).
	 */
	if (rc > 0 && r->q->h.op == ESOCK_TSP_ACCEPT)
		return tell_ready(r->h, r->q->h.sock, r->s) && rx_start(r->h, r->hi, (uint32_t)rc, &r->h->socks[rc - 1])
			       ? 1
			       : -1;
	/* A connection made: eager receive starts. */
	if (rc == 0 && r->q->h.op == ESOCK_TSP_CONNECT)
		return rx_start(r->h, r->hi, r->q->h.sock, r->s) ? 1 : -1;
	return 1;
}

static int call_bye(struct req *r)
{
	for (int i = 0; i < d.max_socks; i++)
		sock_close(r->h, (uint32_t)i + 1, true);
	return done(r, 0);
}

static int call_reg(struct req *r)
{
	const struct esock_tsp_msg *q = r->q;
	struct host *h = r->h;

	return answered(r, tsp_region_add(&h->regions, h->rc ? 0 : h->cred_pid, q->u.reg.addr, q->u.reg.len,
					  q->u.reg.access, q->u.reg.key));
}

static int call_dereg(struct req *r)
{
	return done(r, tsp_region_del(&r->h->regions, r->q->u.dereg.region));
}

/* Each request's handler (the events' numbers have none: a request with one is refused). */
static int (*const handlers[ESOCK_TSP_OP_MAX + 1])(struct req *) = {
	[ESOCK_TSP_HELLO] = call_hello,
	[ESOCK_TSP_BYE] = call_bye,
	[ESOCK_TSP_SOCKET] = call_socket,
	[ESOCK_TSP_BIND] = call_bind_connect,
	[ESOCK_TSP_CONNECT] = call_bind_connect,
	[ESOCK_TSP_LISTEN] = call_listen,
	[ESOCK_TSP_ACCEPT] = call_accept,
	[ESOCK_TSP_REG] = call_reg,
	[ESOCK_TSP_DEREG] = call_dereg,
	[ESOCK_TSP_SEND] = call_send,
	[ESOCK_TSP_SEND_REG] = call_send,
	[ESOCK_TSP_RECV] = call_recv,
	[ESOCK_TSP_RECV_REG] = call_recv,
	[ESOCK_TSP_CLOSE] = call_close,
	[ESOCK_TSP_SHUTDOWN] = call_shutdown,
	[ESOCK_TSP_SETSOCKOPT] = call_setsockopt,
	[ESOCK_TSP_GETSOCKOPT] = call_getsockopt,
	[ESOCK_TSP_GETSOCKNAME] = call_names,
	[ESOCK_TSP_GETPEERNAME] = call_names,
	[ESOCK_TSP_FORK] = call_fork,
	[ESOCK_TSP_WATCH] = call_watch,
};

/*
 * Carries out one decoded request.  Returns 1 answered, 0 parked (|rec|
 * kept), -1 the host must go (it broke the protocol or does not read).
 */
int call(struct host *h, int hi, const struct esock_tsp_msg *q, const uint8_t *rec, uint32_t len)
{
	static uint8_t xbuf[ESOCK_TSP_BODY_MAX];
	struct req r = { .h = h, .hi = hi, .q = q, .rec = rec, .len = len,
			 .m = { .h = { .type = ESOCK_TSP_RESP, .op = q->h.op, .id = q->h.id, .sock = q->h.sock } } };
	struct esock_tsp_msg xq;
	int rc;

	if (q->h.type != ESOCK_TSP_REQ || (!h->hello && q->h.op != ESOCK_TSP_HELLO))
		return -1;
	switch (q->h.op) {
	case ESOCK_TSP_HELLO:
	case ESOCK_TSP_BYE:
	case ESOCK_TSP_SOCKET:
	case ESOCK_TSP_FORK:
	case ESOCK_TSP_REG:
	case ESOCK_TSP_DEREG:
		break;
	default:
		if (!(r.s = sock_of(h, q->h.sock)))
			return reply(h, &q->h, -EBADF) ? 1 : -1;
		if (r.s->parked && rec != r.s->parked)
			return reply(h, &q->h, -EBUSY) ? 1 : -1; /* (one call at a time per socket) */
		if (rec != r.s->parked)
			r.s->calls++;
	}
	switch (q->h.op) {
	case ESOCK_TSP_REG:
	case ESOCK_TSP_DEREG:
	case ESOCK_TSP_SEND_REG:
	case ESOCK_TSP_RECV_REG:
		if (!(h->flags & ESOCK_TSP_F_REG_BUFFERS))
			return reply(h, &q->h, -EOPNOTSUPP) ? 1 : -1;
		break;
	}
	if (q->h.op == ESOCK_TSP_SEND_REG && (rc = fetch_reg(&r, &xq, xbuf, sizeof(xbuf))) < 0)
		return reply(h, &q->h, rc) ? 1 : -1;
	rc = q->h.op <= ESOCK_TSP_OP_MAX && handlers[q->h.op] ? handlers[q->h.op](&r) : done(&r, -EOPNOTSUPP);
	return rc == ANSWER ? finish(&r) : rc;
}
