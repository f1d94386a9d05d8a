/* SPDX-License-Identifier: MIT */
/*
 * The offload mode's calls (sock_off.h): each socket call of the program
 * becomes a TSP request to tcpserverd, made without waiting there (DONTWAIT
 * on every call, its sockets non-blocking); a blocking call waits here on
 * READY events and tries again.  With the switches, input comes ahead in
 * DATA events (read from a buffer here, credit given back in batches),
 * connections in ACCEPTED events, and sends are answered once queued.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/fdtab.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_off_int.h"
#include "util/log.h"

/* Credit for pushed octets goes back once this much was read (one call per batch). */
#define RX_CREDIT_BATCH (ESOCK_TSP_CREDIT_WINDOW / 4)

#define LOCK() pthread_mutex_lock(&off_proc.lock)
#define UNLOCK() pthread_mutex_unlock(&off_proc.lock)

static bool granted(uint32_t f)
{
	return (off_proc.flags & f) != 0;
}

/* ---- state ---- */

struct sock_off *off_new(uint32_t handle, int family)
{
	struct sock_off *o = calloc(1, sizeof(*o));

	if (o) {
		o->handle = handle;
		o->family = family;
		o->kfd = -1;
	}
	return o;
}

void off_free(struct sock_off *o)
{
	if (!o)
		return;
	if (o->kfd >= 0)
		esock_fd_close(o->kfd);
	free(o->rx);
	free(o->acq);
	free(o);
}

int off_rx_append(struct sock_off *o, const uint8_t *p, uint32_t n)
{
	if (o->rx_off && o->rx_off == o->rx_len)
		o->rx_off = o->rx_len = 0;
	if (o->rx_len + n > o->rx_cap) {
		size_t live = o->rx_len - o->rx_off, cap = o->rx_cap ? o->rx_cap : 4096;
		uint8_t *nb;

		while (cap < live + n)
			cap *= 2;
		if (!(nb = malloc(cap)))
			return -ENOMEM;
		if (live)
			memcpy(nb, o->rx + o->rx_off, live);
		free(o->rx);
		o->rx = nb;
		o->rx_cap = cap;
		o->rx_off = 0;
		o->rx_len = live;
	}
	memcpy(o->rx + o->rx_len, p, n);
	o->rx_len += n;
	return 0;
}

int off_acq_push(struct sock_off *o, const struct esock_tsp_msg *ev)
{
	struct sock_off *c;

	if (o->acq_n == o->acq_cap) {
		unsigned cap = o->acq_cap ? 2 * o->acq_cap : 16;
		struct off_acc *q = malloc(cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (unsigned i = 0; i < o->acq_n; i++)
			q[i] = o->acq[(o->acq_head + i) % o->acq_cap];
		free(o->acq);
		o->acq = q;
		o->acq_head = 0;
		o->acq_cap = cap;
	}
	if (!(c = off_new(ev->u.accepted.sock, o->family)))
		return -ENOMEM;
	if (off_register(c) < 0) {
		off_free(c);
		return -ENOMEM;
	}
	c->eager_rx = granted(ESOCK_TSP_F_EAGER_RECV);
	c->connected = c->accepted = true;
	o->acq[(o->acq_head + o->acq_n++) % o->acq_cap] =
		(struct off_acc){ .o = c, .peer = ev->u.accepted.peer, .local = ev->u.accepted.local };
	return 0;
}

/* Poll bits of |s| as we know them (its lock held or not: a snapshot). */
static unsigned bits(struct esock_sock *s)
{
	struct sock_off *o = s->off;
	unsigned r = 0;

	if (o->orphan)
		return POLLERR | POLLHUP;
	if (o->listening) {
		if (granted(ESOCK_TSP_F_EAGER_ACCEPT))
			r = o->acq_n ? POLLIN : 0;
		else
			r = o->kready & POLLIN;
		return r | (o->kready & POLLERR);
	}
	if (o->rx_len > o->rx_off)
		r |= POLLIN;
	if (o->eager_rx) {
		if (o->rx_end)
			r |= POLLIN | POLLRDHUP;
	} else {
		r |= o->kready & (POLLIN | POLLRDHUP | POLLPRI);
	}
	if (granted(ESOCK_TSP_F_ASYNC_SEND) && o->connected)
		r |= o->tx_out < ESOCK_TSP_CREDIT_WINDOW ? POLLOUT : 0;
	else
		r |= o->kready & POLLOUT;
	r |= o->kready & (POLLERR | POLLHUP);
	if (o->err)
		r |= POLLERR;
	return r;
}

/* ---- calls to tcpserverd ---- */

/* A call on |s|'s handle, then the events that came with it (channel lock held). */
static int call_locked(struct esock_sock *s, struct esock_tsp_msg *req, struct esock_tsp_msg *resp)
{
	if (s->off->orphan)
		return -EBADF;
	req->h.sock = s->off->handle;
	return off_call(req, resp);
}

/* A call whose answer carries nothing beyond its result. */
static int call_simple(struct esock_sock *s, struct esock_tsp_msg *req)
{
	struct esock_tsp_msg resp;
	int rc;

	LOCK();
	rc = call_locked(s, req, &resp);
	off_pump_locked();
	UNLOCK();
	return rc;
}

/*
 * After a call that found |s| drained of |gone| (EAGAIN, a short read, a
 * send that did not go whole; channel lock held): the events sent before
 * its answer apply first, then what the call found, then the events after
 * it (a READY that came after the answer is news, not to be forgotten).
 * |full|: a send found no room (epoll: room again is an edge).
 */
static void settle_locked(struct esock_sock *s, unsigned gone, bool full)
{
	if (gone || full) {
		off_pump_kept_locked();
		pthread_mutex_lock(&s->lock);
		s->off->kready &= ~gone;
		if (full)
			s->out_full++;
		pthread_mutex_unlock(&s->lock);
	}
	off_pump_locked();
}

int sock_off_watch(struct esock_sock *s, unsigned events)
{
	struct sock_off *o = s->off;
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_WATCH } };
	unsigned need = events & (POLLIN | POLLOUT | POLLPRI | POLLRDHUP);
	int rc;

	/* What comes in events anyway needs no READY. */
	if (o->eager_rx)
		need &= ~(unsigned)(POLLIN | POLLRDHUP);
	if (o->connected && granted(ESOCK_TSP_F_ASYNC_SEND))
		need &= ~(unsigned)POLLOUT;
	if (!(need & ~o->watched))
		return 0;
	req.u.watch.events = o->watched | need;
	if ((rc = call_simple(s, &req)) == 0)
		o->watched |= need;
	return rc;
}

/*
 * A blocking call waits for |ev| (or an error) on |s| until |deadline|
 * (ep_now_ms time; -1 none): 0, -EAGAIN (its time passed), -EBADF (closed
 * meanwhile), -EPIPE (tcpserverd gone).
 */
static int wait_for(struct esock_sock *s, unsigned ev, int64_t deadline)
{
	int rc;

	if ((rc = sock_off_watch(s, ev)) < 0)
		return rc;
	for (;;) {
		struct pollfd p[2] = { { .fd = sock_off_bell(), .events = POLLIN },
				       { .fd = (ev & POLLIN) ? s->off->kfd : -1, .events = POLLIN } };
		int ms = 200;

		sock_off_pump();
		if (bits(s) & (ev | POLLERR | POLLHUP))
			return 0;
		if (p[1].fd >= 0 && off_share_pending(s->off))
			return 0; /* (the host's own share of a listener's connections) */
		if (atomic_load(&s->closing))
			return -EBADF;
		if (off_proc.broken || p[0].fd < 0)
			return -EPIPE;
		if (deadline >= 0) {
			int64_t left = deadline - ep_now_ms();

			if (left <= 0)
				return -EAGAIN;
			ms = left < ms ? (int)left : ms;
		}
		if (!sock_off_sleep_begin() && REAL(poll)(p, 2, ms) > 0 && (p[1].revents & POLLIN))
			sock_off_kernel_news(s);
		sock_off_sleep_end();
	}
}

/* ---- addresses ---- */

static int to_tsp(const struct sockaddr *a, socklen_t len, struct esock_tsp_addr *t)
{
	memset(t, 0, sizeof(*t));
	if (!a)
		return -EFAULT;
	if (a->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *v = (const void *)a;

		t->family = 4;
		t->port = ntohs(v->sin_port);
		memcpy(t->addr, &v->sin_addr, 4);
		return 0;
	}
	if (a->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *v = (const void *)a;

		t->family = 6;
		t->port = ntohs(v->sin6_port);
		t->scope_id = v->sin6_scope_id;
		memcpy(t->addr, &v->sin6_addr, 16);
		return 0;
	}
	return a->sa_family == AF_INET || a->sa_family == AF_INET6 ? -EINVAL : -EAFNOSUPPORT;
}

/* As the kernel does: at most *len octets written, *len the whole length. */
static void from_tsp(const struct esock_tsp_addr *t, struct sockaddr *a, socklen_t *len)
{
	struct sockaddr_storage ss;
	socklen_t n;

	memset(&ss, 0, sizeof(ss));
	if (t->family == 6) {
		struct sockaddr_in6 *v = (void *)&ss;

		v->sin6_family = AF_INET6;
		v->sin6_port = htons(t->port);
		v->sin6_scope_id = t->scope_id;
		memcpy(&v->sin6_addr, t->addr, 16);
		n = sizeof(*v);
	} else {
		struct sockaddr_in *v = (void *)&ss;

		v->sin_family = AF_INET;
		v->sin_port = htons(t->port);
		memcpy(&v->sin_addr, t->addr, 4);
		n = sizeof(*v);
	}
	if (a && len)
		memcpy(a, &ss, *len < n ? *len : n);
	if (len)
		*len = n;
}

/* ---- setup ---- */

int sock_off_born(int fd, int domain, int type)
{
	struct esock_tsp_msg req = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_SOCKET } }, resp;
	struct esock_sock *s;
	struct sock_off *o;
	int rc;

	req.u.socket.family = domain == AF_INET6 ? 6 : 4;
	req.u.socket.flags = ESOCK_TSP_NONBLOCK; /* (waiting is ours) */
	if (off_proc.bad_opt)
		return -EINVAL;
	LOCK();
	if (!off_host()) {
		UNLOCK();
		return -ECONNREFUSED;
	}
	rc = off_call(&req, &resp);
	if (rc > 0 && (!(o = off_new((uint32_t)rc, domain)) || off_register(o) < 0 ||
		       !(s = sock_new_born(fd, type)))) {
		struct esock_tsp_msg c = { .h = { .op = ESOCK_TSP_CLOSE, .sock = (uint32_t)rc } };

		if (o && o->handle < off_proc.cap && off_proc.byh[o->handle] == o)
			off_unregister(o->handle);
		off_free(o);
		(void)off_call(&c, &resp);
		rc = -ENOMEM;
	}
	if (rc > 0) {
		o->s = s;
		s->off = o;
		s->st = SOCK_OFFLOADED;
		rc = 0;
	} else if (rc == 0) {
		rc = -EPROTO; /* (handles start at 1) */
	}
	UNLOCK();
	return rc;
}

int sock_off_bind(struct esock_sock *s, const struct sockaddr *a, socklen_t len)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_BIND } };
	int rc = to_tsp(a, len, &req.u.addr);

	if (rc < 0)
		return rc;
	if (off_share_bind(s) < 0)
		log_info("offload: share: tcpserverd's socket cannot be shared; it takes every connection");
	return call_simple(s, &req);
}

int sock_off_listen(struct esock_sock *s, int backlog)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_LISTEN } };
	int rc;

	req.u.listen.backlog = backlog;
	rc = call_simple(s, &req);
	if (rc == 0) {
		pthread_mutex_lock(&s->lock);
		s->off->listening = true;
		pthread_mutex_unlock(&s->lock);
		off_share_listen(s, backlog);
	}
	return rc;
}

/* SO_ERROR from tcpserverd (the end of a connect).  0 or -errno. */
static int so_error(struct esock_sock *s, int *err)
{
	int32_t v = 0;
	socklen_t len = sizeof(v);
	int rc = sock_off_getopt(s, SOL_SOCKET, SO_ERROR, &v, &len);

	*err = v;
	return rc;
}

int sock_off_connect(struct esock_sock *s, const struct sockaddr *a, socklen_t len)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_CONNECT } }, resp;
	int rc = to_tsp(a, len, &req.u.addr), err = 0;

	if (rc < 0)
		return rc;
	LOCK();
	rc = call_locked(s, &req, &resp);
	settle_locked(s, rc == -EINPROGRESS ? POLLOUT : 0, false);
	UNLOCK();
	if (rc == -EINPROGRESS) {
		if (s->nonblock)
			return rc;
		rc = wait_for(s, POLLOUT, sock_timeo_deadline(s->sndtimeo_ms));
		if (rc == -EAGAIN)
			return -EINPROGRESS; /* (SO_SNDTIMEO, as Linux) */
		if (rc < 0 || (rc = so_error(s, &err)) < 0)
			return rc;
		rc = -err;
	}
	if (rc == 0)
		s->off->connected = true;
	return rc;
}

/* A kernel descriptor for an accepted connection: a copy of one socket of its family. */
static int new_fd(int family, int flags)
{
	static int tmpl[2] = { -1, -1 };
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int i = family == AF_INET6, fd;

	pthread_mutex_lock(&lock);
	if (tmpl[i] < 0 && (tmpl[i] = REAL(socket)(family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0)
		esock_fd_own(tmpl[i]);
	pthread_mutex_unlock(&lock);
	if (tmpl[i] < 0)
		return -errno;
	/* (the lowest free number, as accept gives; O_NONBLOCK is the sock's, never the file's) */
	fd = REAL(fcntl)(tmpl[i], flags & SOCK_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
	return fd < 0 ? -errno : fd;
}

/* A connection's state |c| gets a descriptor and a sock (channel lock held).  fd or -errno. */
static int adopt(struct sock_off *c, int flags)
{
	struct esock_sock *s;
	int fd = new_fd(c->family, flags);

	if (fd < 0)
		return fd;
	if (esock_fdtab_get(fd))
		sock_release_fd(fd); /* (a stale entry under a number the kernel gave anew) */
	if (!(s = sock_new_born(fd, SOCK_STREAM | flags))) {
		esock_fd_close(fd);
		return -ENOMEM;
	}
	s->st = SOCK_OFFLOADED;
	s->off = c;
	c->s = s;
	return fd;
}

int sock_off_accept(struct esock_sock *ls, struct sockaddr *a, socklen_t *alen, int flags)
{
	struct sock_off *o = ls->off;
	bool eager = granted(ESOCK_TSP_F_EAGER_ACCEPT);
	int rc;

	if (!o->listening)
		return -EINVAL;
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	for (;;) {
		struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_ACCEPT } }, resp;
		struct off_acc got = { 0 };

		/* share=P: the host's own listener and tcpserverd's take turns (then the other). */
		if (o->kfd >= 0 && (o->k_first = !o->k_first) && (rc = off_share_accept(o, a, alen, flags)) != -EAGAIN)
			return rc;
		if (eager && (rc = sock_off_watch(ls, POLLIN)) < 0) /* (starts taking them ahead) */
			return rc;
		LOCK();
		if (eager) {
			off_pump_locked();
			pthread_mutex_lock(&ls->lock);
			rc = -EAGAIN;
			if (o->acq_n) {
				got = o->acq[o->acq_head];
				o->acq_head = (o->acq_head + 1) % o->acq_cap;
				o->acq_n--;
				rc = 0;
			}
			pthread_mutex_unlock(&ls->lock);
		} else {
			req.u.accept.flags = ESOCK_TSP_NONBLOCK | ESOCK_TSP_MSG_DONTWAIT;
			rc = call_locked(ls, &req, &resp);
			if (rc > 0) {
				got.peer = resp.u.accepted.peer;
				got.local = resp.u.accepted.local;
				/* Known before any event of it is taken (eager receive pushes at once). */
				if (!(got.o = off_new((uint32_t)rc, o->family)) || off_register(got.o) < 0) {
					struct esock_tsp_msg c = { .h = { .op = ESOCK_TSP_CLOSE, .sock = (uint32_t)rc } };

					off_free(got.o);
					(void)off_call(&c, &resp);
					UNLOCK();
					return -ENOMEM;
				}
				got.o->eager_rx = granted(ESOCK_TSP_F_EAGER_RECV);
				got.o->connected = got.o->accepted = true;
				rc = 0;
			}
			settle_locked(ls, rc == -EAGAIN ? POLLIN : 0, false);
		}
		if (rc == 0) {
			struct sock_off *c = got.o;
			int fd;

			c->peer = got.peer;
			c->have_peer = got.peer.family != 0;
			c->local = got.local;
			c->have_local = got.local.family != 0;
			if ((fd = adopt(c, flags)) < 0) {
				struct esock_tsp_msg cl = { .h = { .op = ESOCK_TSP_CLOSE, .sock = c->handle } };

				off_unregister(c->handle);
				off_free(c);
				(void)off_call(&cl, &resp);
			} else if (a && alen) {
				from_tsp(&c->peer, a, alen);
			}
			UNLOCK();
			return fd;
		}
		UNLOCK();
		if (rc != -EAGAIN)
			return rc;
		if (o->kfd >= 0 && !o->k_first && (rc = off_share_accept(o, a, alen, flags)) != -EAGAIN)
			return rc;
		if (ls->nonblock)
			return -EAGAIN;
		if ((rc = wait_for(ls, POLLIN, sock_timeo_deadline(ls->rcvtimeo_ms))) < 0)
			return rc;
	}
}

/* ---- data ---- */

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copies |len| octets between |p| and |iov| (from octet |at| of it on): |out| into |iov|. */
static void iov_copy(const struct iovec *iov, int n, size_t at, uint8_t *p, size_t len, bool out)
{
	for (int i = 0; i < n && len; i++) {
		size_t l = iov[i].iov_len;

		if (at >= l) {
			at -= l;
			continue;
		}
		size_t c = l - at < len ? l - at : len;
		uint8_t *v = (uint8_t *)iov[i].iov_base + at;

		memcpy(out ? v : p, out ? p : v, c);
		p += c;
		len -= c;
		at = 0;
	}
}

/* Eager receive: octets from the buffer; -EAGAIN none yet; at the end, how it ended. */
static ssize_t rx_take(struct esock_sock *s, const struct iovec *iov, int n, size_t at, size_t want,
		       bool peek)
{
	struct sock_off *o = s->off;
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_RECV } }, resp;
	size_t c;
	uint32_t owed = 0;
	int rc;

	pthread_mutex_lock(&s->lock);
	c = o->rx_len - o->rx_off;
	if (!c) {
		bool end = o->rx_end, eager = o->eager_rx;
		int err = o->err;

		pthread_mutex_unlock(&s->lock);
		if (!eager)
			return -ENODATA; /* (octets taken in before a fork, all read: RECV from now on) */
		if (!end)
			return -EAGAIN;
		if (err)
			return -err;
		/* How the stream ended: tcpserverd's answer (0 for a FIN). */
		req.u.recv.flags = ESOCK_TSP_MSG_DONTWAIT;
		rc = call_simple(s, &req);
		return rc == -EINVAL ? 0 : rc;
	}
	if (c > want)
		c = want;
	iov_copy(iov, n, at, o->rx + o->rx_off, c, true);
	if (!peek) {
		o->rx_off += c;
		o->rx_owed += o->eager_rx ? (uint32_t)c : 0;
		if (o->rx_owed >= RX_CREDIT_BATCH && !o->rx_end) {
			owed = o->rx_owed;
			o->rx_owed = 0;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (owed) { /* (posted: nothing to wait for) */
		req.u.recv.max = owed;
		req.u.recv.flags = ESOCK_TSP_MSG_CREDIT;
		req.h.sock = o->handle;
		LOCK();
		if (o->orphan || off_post(&req) < 0)
			(void)call_locked(s, &req, &resp);
		off_pump_locked();
		UNLOCK();
	}
	return (ssize_t)c;
}

/* A RECV call: octets into |iov| at |at|, 0 at the end, or -errno. */
static ssize_t rx_call(struct esock_sock *s, const struct iovec *iov, int n, size_t at, size_t want,
		       bool peek)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_RECV } }, resp;
	uint32_t region = 0;
	int rc;

	req.u.recv.max = want < ESOCK_TSP_BODY_MAX ? (uint32_t)want : ESOCK_TSP_BODY_MAX;
	req.u.recv.flags = ESOCK_TSP_MSG_DONTWAIT | (peek ? ESOCK_TSP_MSG_PEEK : 0);
	LOCK();
	/* Into registered memory: tcpserverd writes the octets there itself (RECV_REG). */
	if (n == 1 && !s->off->eager_rx && granted(ESOCK_TSP_F_REG_BUFFERS) &&
	    (region = off_reg_find((uint8_t *)iov[0].iov_base + at, req.u.recv.max, true))) {
		uint32_t max = req.u.recv.max, fl = req.u.recv.flags;

		req.h.op = ESOCK_TSP_RECV_REG;
		req.u.xfer.flags = fl;
		req.u.xfer.region = region;
		req.u.xfer.len = max;
		req.u.xfer.addr = (uintptr_t)iov[0].iov_base + at;
	}
	rc = call_locked(s, &req, &resp);
	if (region) {
		if (rc > (int)req.u.xfer.len)
			rc = -EPROTO;
	} else if (rc > 0) {
		if ((uint32_t)rc != resp.data_len || resp.data_len > req.u.recv.max)
			rc = -EPROTO;
		else
			iov_copy(iov, n, at, (uint8_t *)(uintptr_t)resp.data, resp.data_len, true); /* (before the pump reuses the buffer) */
	}
	/* Drained (tcpserverd says the same of a short read: its next octets come as READY). */
	settle_locked(s, rc == -EAGAIN || (rc > 0 && (uint32_t)rc < (region ? req.u.xfer.len : req.u.recv.max) &&
					    !peek) ? POLLIN : 0,
		      false);
	UNLOCK();
	return rc;
}

ssize_t sock_off_recv(struct esock_sock *s, const struct iovec *iov, int n, int flags, int *mflags)
{
	size_t want = iov_total(iov, n), got = 0;
	bool nb = s->nonblock || (flags & MSG_DONTWAIT), peek = flags & MSG_PEEK;
	int64_t end = -2;

	if (mflags)
		*mflags = 0;
	if (flags & MSG_OOB)
		return -EOPNOTSUPP; /* (urgent data does not travel: docs/tcpserver.md) */
	if (s->off->listening)
		return -ENOTCONN;
	if (!want)
		return 0;
	for (;;) {
		struct sock_off *o = s->off;
		/* Pushed octets (eager receive, or taken in before a fork) first. */
		ssize_t r = o->eager_rx || o->rx_len > o->rx_off ? rx_take(s, iov, n, got, want - got, peek)
								 : -ENODATA;

		if (r == -ENODATA)
			r = rx_call(s, iov, n, got, want - got, peek);

		if (r > 0) {
			got += (size_t)r;
			if (!(flags & MSG_WAITALL) || got == want || peek)
				return (ssize_t)got;
			continue;
		}
		if (r == 0 || (r != -EAGAIN && got))
			return (ssize_t)got;
		if (r != -EAGAIN || nb)
			return got ? (ssize_t)got : r;
		if (end == -2)
			end = sock_timeo_deadline(s->rcvtimeo_ms);
		if ((r = wait_for(s, POLLIN, end)) < 0)
			return got ? (ssize_t)got : r;
	}
}

/* The gather buffer of a send of several pieces (channel lock held). */
static uint8_t gather[ESOCK_TSP_BODY_MAX];

ssize_t sock_off_send(struct esock_sock *s, const struct iovec *iov, int n, int flags)
{
	struct sock_off *o = s->off;
	size_t total = iov_total(iov, n), done = 0;
	bool nb = s->nonblock || (flags & MSG_DONTWAIT), async = granted(ESOCK_TSP_F_ASYNC_SEND);
	int64_t end = -2;
	int rc = 0;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	if (o->listening)
		return -ENOTCONN;
	if (o->err) { /* (a posted send failed: said now) */
		pthread_mutex_lock(&s->lock);
		rc = -o->err;
		o->err = 0;
		pthread_mutex_unlock(&s->lock);
		if (rc == -EPIPE && !(flags & MSG_NOSIGNAL))
			pthread_kill(pthread_self(), SIGPIPE);
		if (rc)
			return rc;
	}
	while (done < total) {
		struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_SEND } }, resp;
		size_t piece = total - done < ESOCK_TSP_BODY_MAX ? total - done : ESOCK_TSP_BODY_MAX;
		uint32_t region;
		bool full = false;

		if (async) {
			pthread_mutex_lock(&s->lock);
			uint32_t room = ESOCK_TSP_CREDIT_WINDOW - o->tx_out;

			pthread_mutex_unlock(&s->lock);
			if (piece > room)
				piece = room;
		}
		if (piece) {
			req.u.send.flags = ESOCK_TSP_MSG_DONTWAIT |
					   ((flags & MSG_MORE) || done + piece < total ? ESOCK_TSP_MSG_MORE : 0);
			req.data_len = (uint32_t)piece;
			LOCK();
			if (n == 1) {
				req.data = (const uint8_t *)iov[0].iov_base + done;
			} else {
				iov_copy(iov, n, done, gather, piece, false);
				req.data = gather;
			}
			/* From registered memory: tcpserverd reads the octets there itself (SEND_REG). */
			region = n == 1 && granted(ESOCK_TSP_F_REG_BUFFERS) ? off_reg_find(req.data, piece, false) : 0;
			if (region) {
				uint32_t fl = req.u.send.flags;

				req.h.op = ESOCK_TSP_SEND_REG;
				req.u.xfer.flags = fl;
				req.u.xfer.region = region;
				req.u.xfer.len = (uint32_t)piece;
				req.u.xfer.addr = (uintptr_t)req.data;
				req.data = NULL;
				req.data_len = 0;
			}
			/*
			 * Asynchronous send: posted, taken once queued (the credit
			 * says it fits); a failure comes back later, for the next call.
			 * Not from registered memory: that is the program's again
			 * only once tcpserverd has read it (the answer).
			 */
			req.h.sock = o->handle;
			if (async && !region && o->connected && !o->orphan && off_post(&req) == 0)
				rc = (int)piece; /* (until it is known connected, a call: ENOTCONN and the like at once) */
			else
				rc = call_locked(s, &req, &resp);
			if (rc > 0 && async) {
				pthread_mutex_lock(&s->lock);
				o->tx_out += (uint32_t)rc;
				o->connected = true;
				pthread_mutex_unlock(&s->lock);
			}
			full = rc == -EAGAIN || (rc >= 0 && rc < (int)piece);
			settle_locked(s, full && !async ? POLLOUT : 0, full);
			UNLOCK();
			if (rc > (int)piece)
				rc = -EPROTO;
			if (rc < 0 && rc != -EAGAIN)
				break;
			if (rc > 0)
				done += (size_t)rc;
		} else {
			full = true;
			pthread_mutex_lock(&s->lock);
			s->out_full++;
			pthread_mutex_unlock(&s->lock);
		}
		if (!full)
			continue;
		if (nb) {
			rc = -EAGAIN;
			break;
		}
		if (end == -2)
			end = sock_timeo_deadline(s->sndtimeo_ms);
		if ((rc = wait_for(s, POLLOUT, end)) < 0)
			break;
	}
	if (done)
		return (ssize_t)done;
	if (rc == -EPIPE && !(flags & MSG_NOSIGNAL))
		pthread_kill(pthread_self(), SIGPIPE); /* (as the kernel's send) */
	return rc;
}

int sock_off_shutdown(struct esock_sock *s, int how)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_SHUTDOWN } };

	req.u.shutdown.how = how;
	return call_simple(s, &req);
}

/* ---- options and names ---- */

static int timeo_ms(const void *val, socklen_t len)
{
	struct timeval tv;

	if (!val || len < (socklen_t)sizeof(tv))
		return -EINVAL;
	memcpy(&tv, val, sizeof(tv));
	if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000)
		return -EDOM;
	return tv.tv_sec > 2000000 ? 0x7fffffff : (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
}

int sock_off_setopt(struct esock_sock *s, int level, int name, const void *val, socklen_t len)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_SETSOCKOPT } };
	int ms;

	if (level == SOL_ESOCK)
		return -EOPNOTSUPP; /* (an offloaded socket is tcpserverd's: no DDPMODE) */
	if (level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO)) {
		/* Waiting is ours (the kernel file is shared by accepted sockets). */
		if ((ms = timeo_ms(val, len)) < 0)
			return ms;
		pthread_mutex_lock(&s->lock);
		*(name == SO_RCVTIMEO ? &s->rcvtimeo_ms : &s->sndtimeo_ms) = ms;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	if (len > ESOCK_TSP_OPT_MAX || (len && !val))
		return -EINVAL;
	req.u.opt.level = level;
	req.u.opt.name = name;
	req.data = val;
	req.data_len = len;
	/*
	 * Options the kernel takes from any TCP socket whatever their value
	 * (an int) are posted, not waited for: nginx corks and uncorks each
	 * response (tcp_nopush) and sets TCP_NODELAY on each keep-alive
	 * connection, two round trips a request otherwise.  In the queue
	 * they keep their place among the socket's sends.
	 */
	if (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_CORK || name == TCP_QUICKACK) &&
	    len >= (socklen_t)sizeof(int)) {
		int rc = -EPIPE;

		req.h.sock = s->off->handle;
		LOCK();
		if (!s->off->orphan)
			rc = off_post(&req);
		UNLOCK();
		if (rc == 0)
			return 0;
	}
	return call_simple(s, &req);
}

int sock_off_getopt(struct esock_sock *s, int level, int name, void *val, socklen_t *len)
{
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_GETSOCKOPT } }, resp;
	int rc;

	if (!val || !len)
		return -EFAULT;
	if (level == SOL_ESOCK) {
		if (name == ESOCK_DDPMODE && *len >= (socklen_t)sizeof(int)) {
			memset(val, 0, sizeof(int));
			*len = sizeof(int);
			return 0;
		}
		return -ENOPROTOOPT;
	}
	if (level == SOL_SOCKET) {
		int v;

		switch (name) {
		case SO_TYPE:
		case SO_DOMAIN:
		case SO_PROTOCOL: /* (the kernel file is one of its kind) */
			return REAL(getsockopt)(s->fd, level, name, val, len) < 0 ? -errno : 0;
		case SO_ACCEPTCONN:
			v = s->off->listening;
			goto local_int;
		case SO_RCVTIMEO:
		case SO_SNDTIMEO: {
			int ms = name == SO_RCVTIMEO ? s->rcvtimeo_ms : s->sndtimeo_ms;
			struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

			if (*len < (socklen_t)sizeof(tv))
				return -EINVAL;
			memcpy(val, &tv, sizeof(tv));
			*len = sizeof(tv);
			return 0;
		}
		case SO_ERROR:
			if ((v = s->off->err)) {
				s->off->err = 0;
				goto local_int;
			}
			break;
		default:
			break;
		}
		if (0) {
		local_int:
			if (*len < (socklen_t)sizeof(int))
				return -EINVAL;
			memcpy(val, &v, sizeof(int));
			*len = sizeof(int);
			return 0;
		}
	}
	req.u.getopt.level = level;
	req.u.getopt.name = name;
	req.u.getopt.len = *len < ESOCK_TSP_OPT_MAX ? (uint32_t)*len : ESOCK_TSP_OPT_MAX;
	LOCK();
	rc = call_locked(s, &req, &resp);
	if (rc >= 0) {
		uint32_t n = resp.data_len < (uint32_t)*len ? resp.data_len : (uint32_t)*len;

		memcpy(val, resp.data, n);
		*len = n;
		rc = 0;
	}
	off_pump_locked();
	UNLOCK();
	if (rc == 0 && level == SOL_SOCKET && name == SO_ERROR && *len >= (socklen_t)sizeof(int)) {
		int v;

		memcpy(&v, val, sizeof(v));
		if (!v && (bits(s) & POLLOUT))
			s->off->connected = true;
	}
	return rc;
}

int sock_off_name(struct esock_sock *s, bool peer, struct sockaddr *a, socklen_t *len)
{
	struct esock_tsp_msg req = { .h = { .op = peer ? ESOCK_TSP_GETPEERNAME : ESOCK_TSP_GETSOCKNAME } },
			     resp;
	struct sock_off *o = s->off;
	int rc;

	if (!len)
		return -EFAULT;
	if (peer ? o->have_peer : o->have_local) {
		from_tsp(peer ? &o->peer : &o->local, a, len);
		return 0;
	}
	LOCK();
	rc = call_locked(s, &req, &resp);
	if (rc == 0)
		from_tsp(&resp.u.addr, a, len);
	off_pump_locked();
	UNLOCK();
	if (rc == 0 && (o->connected || o->listening)) { /* (fixed from now on: kept) */
		pthread_mutex_lock(&s->lock);
		if (peer) {
			o->peer = resp.u.addr;
			o->have_peer = true;
		} else if (o->connected) {
			o->local = resp.u.addr;
			o->have_local = true;
		}
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

int sock_off_fionread(struct esock_sock *s, int *n)
{
	struct sock_off *o = s->off;

	sock_off_pump();
	pthread_mutex_lock(&s->lock);
	/* Without eager receive the count is not known here: 1 when something waits. */
	*n = o->eager_rx ? (int)(o->rx_len - o->rx_off > 0x7fffffff ? 0x7fffffff : o->rx_len - o->rx_off)
			 : (o->kready & POLLIN) != 0;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* ---- readiness ---- */

unsigned sock_off_ready(struct esock_sock *s, unsigned events)
{
	unsigned r;

	(void)sock_off_watch(s, events);
	sock_off_pump();
	r = bits(s) & (events | POLLERR | POLLHUP);
	if ((events & POLLIN) && !(r & POLLIN) && s->off && off_share_pending(s->off))
		r |= POLLIN; /* (the host's own share of a listener's connections) */
	return r;
}

uint64_t sock_off_rx_gen(struct esock_sock *s)
{
	struct sock_off *o = s->off;

	return o->rx_gen + o->acq_n + o->k_news + (o->rx_end ? 1ull << 40 : 0);
}

/* ---- the end ---- */

void sock_off_release(struct esock_sock *s)
{
	struct sock_off *o = s->off;
	struct esock_tsp_msg req = { .h = { .op = ESOCK_TSP_CLOSE } }, resp;

	if (!o)
		return;
	LOCK();
	if (!o->orphan) {
		off_unregister(o->handle);
		req.h.sock = o->handle; /* (posted: a close has nothing to say) */
		if (off_post(&req) < 0)
			(void)call_locked(s, &req, &resp);
		/* Connections taken ahead that nobody accepted go too. */
		for (unsigned i = 0; i < o->acq_n; i++) {
			struct sock_off *c = o->acq[(o->acq_head + i) % o->acq_cap].o;
			struct esock_tsp_msg cl = { .h = { .op = ESOCK_TSP_CLOSE, .sock = c->handle } };

			off_unregister(c->handle);
			(void)off_call(&cl, &resp);
			off_free(c);
		}
	} else {
		for (unsigned i = 0; i < o->acq_n; i++)
			off_free(o->acq[(o->acq_head + i) % o->acq_cap].o);
	}
	off_pump_locked();
	pthread_mutex_lock(&s->lock);
	s->off = NULL;
	pthread_mutex_unlock(&s->lock);
	UNLOCK();
	off_free(o);
}
