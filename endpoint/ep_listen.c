/* SPDX-License-Identifier: MIT */
/*
 * The passive side's listener: it accepts TCP connections and reads their
 * MPA Requests all at once, never waiting on any one of them.  A client that
 * connects and says nothing (or half a Request) must not delay the others:
 * each new connection waits in a pending set, watched by the listener's own
 * epoll instance (the listening socket, every pending connection, and a
 * timerfd at the earliest MPA deadline), and moves to the ready queue once
 * its Request is whole.  A bad start frame or a passed deadline resets it.
 *
 * The epoll instance is also the listener's poll descriptor: it is readable
 * exactly when there is work (a connection, octets, a deadline), so poll and
 * epoll callers sleep on it and the work is done in their thread.
 *
 * fork: a child inherits the listening socket, not the pending connections
 * (the parent goes on reading them): the child handler drops its copies and
 * the child makes its own epoll instance at its first call.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "iwarp/backend.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "util/atfork.h"
#include "util/env.h"
#include "util/log.h"

#define BATCH 64                 /* events or accepts per round */
#define KEY_LISTEN 0u            /* epoll data of the listening socket */
#define KEY_TIMER 1u             /* ... of the timerfd; else a struct esock_conn_req * */
#define PENDING_MAX_DEFAULT 4096

struct esock_listener {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	int fd;                  /* the listening TCP socket */
	bool own;                /* made by esock_listen: closed with the listener */
	pthread_mutex_t lock;    /* everything below */
	struct esock_listener *next; /* all listeners, for fork */
	int epfd, tfd;           /* -1 until the first call (and in a forked child) */
	struct esock_conn_req **pend; /* Requests being read */
	size_t npend, cappend;
	struct esock_conn_req **done; /* ready to take, oldest first */
	size_t ndone, capdone;
	int64_t next_deadline;   /* earliest pending deadline, or -1 */
	int64_t armed_deadline;  /* what the timer is set for, or -1 (not set, or it fired) */
	int timeout_ms, sniff_ms, max_pending;
	uint64_t completed;
	uint64_t adopted, drops;  /* connections accepted from the backlog; closed by drop() */
};

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct esock_listener *all;

/* ---- fork: the child drops the parent's pending connections ---- */

static void drop_all(struct esock_listener *l, bool reset);

static void fork_prepare(void)
{
	pthread_mutex_lock(&all_lock);
	for (struct esock_listener *l = all; l; l = l->next)
		pthread_mutex_lock(&l->lock);
}

static void fork_parent(void)
{
	for (struct esock_listener *l = all; l; l = l->next)
		pthread_mutex_unlock(&l->lock);
	pthread_mutex_unlock(&all_lock);
}

static void fork_child(void)
{
	for (struct esock_listener *l = all; l; l = l->next) {
		int epfd = l->epfd, tfd = l->tfd;

		/*
		 * The epoll instance is the parent's too: no epoll_ctl on it from
		 * here.  Plain closes: the parent's copies keep the connections.
		 */
		l->epfd = l->tfd = -1;
		drop_all(l, false);
		if (epfd >= 0)
			esock_fd_close(epfd);
		if (tfd >= 0)
			esock_fd_close(tfd);
		pthread_mutex_init(&l->lock, NULL);
	}
	pthread_mutex_init(&all_lock, NULL);
}

static void atfork_once(void)
{
	esock_atfork(ESOCK_FORK_TABLES, fork_prepare, fork_parent, fork_child);
}

/* ---- the pending set and the ready queue ---- */

static void unwatch(struct esock_listener *l, struct esock_conn_req *r)
{
	if (r->watched && l->epfd >= 0)
		REAL(epoll_ctl)(l->epfd, EPOLL_CTL_DEL, r->fd, NULL);
	r->watched = false;
}

static void pend_remove(struct esock_listener *l, size_t i)
{
	l->pend[i] = l->pend[--l->npend];
}

static int push(struct esock_conn_req ***v, size_t *n, size_t *cap, struct esock_conn_req *r)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct esock_conn_req **nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = r;
	return 0;
}

/* Forgets pending request |i|: reset (a bad or silent peer) or a plain close (fork). */
static void drop(struct esock_listener *l, size_t i, bool reset, const char *why)
{
	struct esock_conn_req *r = l->pend[i];

	unwatch(l, r);
	if (why)
		log_info("listener fd %d: connection fd %d dropped: %s", l->fd, r->fd, why);
	if (reset)
		ep_close_reset(r->fd);
	else
		esock_fd_close(r->fd);
	l->drops++;
	free(r);
	pend_remove(l, i);
}

static void drop_all(struct esock_listener *l, bool reset)
{
	while (l->npend)
		drop(l, l->npend - 1, reset, NULL);
	for (size_t i = 0; i < l->ndone; i++) {
		if (reset)
			ep_close_reset(l->done[i]->fd);
		else
			esock_fd_close(l->done[i]->fd);
		free(l->done[i]);
	}
	l->ndone = 0;
}

/* Pending request |i| is whole (or plain): to the ready queue. */
static void ready(struct esock_listener *l, size_t i)
{
	struct esock_conn_req *r = l->pend[i];

	if (push(&l->done, &l->ndone, &l->capdone, r) < 0) {
		drop(l, i, true, "out of memory");
		return;
	}
	unwatch(l, r);
	pend_remove(l, i);
	/* (The peer's address came with accept4; ours is asked when needed: ep_qp_addrs.) */
	l->completed++;
}

/* ESOCK_ACCEPT=both: does the connection start like an MPA Request?  Peeks only. */
static int sniff(struct esock_listener *l, struct esock_conn_req *r)
{
	static const char key[] = "MPA ID Req Frame";
	char buf[sizeof(key) - 1];
	ssize_t n = REAL(recv)(r->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n == (ssize_t)sizeof(buf) && memcmp(buf, key, sizeof(buf)) == 0) {
		r->sniffing = false; /* an MPA client: its Request gets the MPA timeout */
		r->deadline = ep_now_ms() + l->timeout_ms;
		return 1;
	}
	if (n > 0 && memcmp(buf, key, (size_t)n) == 0)
		return 0; /* a prefix so far: wait for more (or the sniff time) */
	r->plain = true; /* other octets, EOF or an error: the application's to see */
	return -1;
}

/* Reads pending request |i|'s octets; it may leave the pending set. */
static void feed(struct esock_listener *l, size_t i)
{
	struct esock_conn_req *r = l->pend[i];
	struct esock_term t = { 0 };
	int rc;

	if (r->sniffing && (rc = sniff(l, r)) <= 0) {
		if (rc < 0)
			ready(l, i);
		return;
	}
	rc = ep_frame_read(r->fd, r->frame, &r->have, true);
	if (rc == 0)
		return;
	if (rc < 0) {
		drop(l, i, true, rc == -EPROTO ? "not an MPA Request" : strerror(-rc));
		return;
	}
	if (esock_mpa_frame_decode(&r->req, false, r->frame, r->have, 0, &t) < 0) {
		drop(l, i, true, esock_term_str(t.layer, t.etype, t.ecode));
		return;
	}
	ready(l, i);
}

static size_t find(const struct esock_listener *l, const struct esock_conn_req *r)
{
	for (size_t i = 0; i < l->npend; i++)
		if (l->pend[i] == r)
			return i;
	return (size_t)-1;
}

/*
 * A new connection joins the pending set (the oldest goes when it is full).
 * Its Request is usually in already (TCP_DEFER_ACCEPT, below): then it goes
 * straight to the ready queue, never watched (two epoll_ctl calls less).
 */
static void adopt(struct esock_listener *l, int fd, const struct sockaddr_storage *peer)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };
	struct esock_conn_req *r;
	size_t before;

	if (l->npend >= (size_t)l->max_pending) {
		size_t old = 0;

		for (size_t i = 1; i < l->npend; i++)
			if (l->pend[i]->deadline < l->pend[old]->deadline)
				old = i;
		drop(l, old, true, "too many connections without a Request");
	}
	ep_tune_socket(fd);
	if (!(r = calloc(1, sizeof(*r))) || push(&l->pend, &l->npend, &l->cappend, r) < 0) {
		free(r);
		ep_close_reset(fd);
		return;
	}
	r->be = &esock_user_backend;
	r->fd = fd;
	r->own_fd = true;
	r->seq = ++l->adopted;
	r->drops_at = l->drops;
	r->remote = *peer;
	r->sniffing = l->sniff_ms > 0;
	r->deadline = ep_now_ms() + (r->sniffing ? l->sniff_ms : l->timeout_ms);
	before = l->npend;
	feed(l, l->npend - 1); /* its octets may be in already */
	if (l->npend < before)
		return; /* whole (ready) or bad (dropped) */
	r->watched = true;
	ev.data.ptr = r;
	if (REAL(epoll_ctl)(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		drop(l, l->npend - 1, true, strerror(errno));
		return;
	}
	if (l->next_deadline < 0 || r->deadline < l->next_deadline)
		l->next_deadline = r->deadline;
	/* (Edge-triggered: octets that came between the read and the ADD are reported by it.) */
}

/* Accepts what the backlog holds (up to |max|); 0 or an accept(2) error worth reporting. */
static int accept_some(struct esock_listener *l, int max)
{
	for (int k = 0; k < max; k++) {
		struct sockaddr_storage peer = { 0 };
		socklen_t len = sizeof(peer);
		int fd = REAL(accept4)(l->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			adopt(l, fd, &peer);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		return -errno; /* EMFILE, ENFILE, ENOBUFS, ...: the caller's to know */
	}
	return 0;
}

/* Deadlines: a silent sniffed connection is plain TCP, any other one is reset. */
static void expire(struct esock_listener *l)
{
	int64_t now = ep_now_ms(), next = -1;

	if (l->next_deadline < 0 || now < l->next_deadline)
		return;
	for (size_t i = 0; i < l->npend;) {
		struct esock_conn_req *r = l->pend[i];

		if (r->deadline > now) {
			if (next < 0 || r->deadline < next)
				next = r->deadline;
			i++;
		} else if (r->sniffing) {
			r->plain = true;
			ready(l, i);
		} else {
			drop(l, i, true, "no MPA Request within the MPA timeout");
		}
	}
	l->next_deadline = next;
}

/*
 * The timer is set only for a deadline earlier than the one it is set for
 * (a connection after another comes 10 s out, later than the one before):
 * one system call per connection less.  Firing early costs one look (expire).
 */
static void arm_timer(struct esock_listener *l)
{
	struct itimerspec it = { 0 };

	if (l->next_deadline < 0 || (l->armed_deadline >= 0 && l->armed_deadline <= l->next_deadline))
		return;
	l->armed_deadline = l->next_deadline;
	{
		int64_t left = l->next_deadline - ep_now_ms();

		if (left < 1)
			left = 1;
		it.it_value.tv_sec = left / 1000;
		it.it_value.tv_nsec = (left % 1000) * 1000000L;
	}
	timerfd_settime(l->tfd, 0, &it, NULL);
}

/* The epoll instance and the timer, made by the process that uses them. */
static int setup(struct esock_listener *l)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (l->epfd >= 0)
		return 0;
	if ((l->epfd = REAL(epoll_create1)(EPOLL_CLOEXEC)) < 0)
		return -errno;
	esock_fd_own(l->epfd);
	if ((l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0)
		goto fail;
	esock_fd_own(l->tfd);
	l->armed_deadline = -1; /* a new timer (a forked child's) is not set */
	ev.data.u64 = KEY_LISTEN;
	if (REAL(epoll_ctl)(l->epfd, EPOLL_CTL_ADD, l->fd, &ev) < 0)
		goto fail;
	ev.data.u64 = KEY_TIMER;
	if (REAL(epoll_ctl)(l->epfd, EPOLL_CTL_ADD, l->tfd, &ev) < 0)
		goto fail;
	return 0;
fail:;
	int rc = -errno;

	if (l->tfd >= 0)
		esock_fd_close(l->tfd);
	esock_fd_close(l->epfd);
	l->epfd = l->tfd = -1;
	return rc;
}

/* One round of the listener's work (lock held).  0 or an accept(2) error. */
static int progress(struct esock_listener *l)
{
	struct epoll_event ev[BATCH];
	int n, rc = 0;

	if ((rc = setup(l)) < 0)
		return rc;
	if (!l->npend && l->armed_deadline < 0) {
		/*
		 * Nothing but the listening socket to look at (no connection
		 * waits for its Request, no timer runs): its backlog at once,
		 * without asking the epoll set first.
		 */
		rc = l->ndone < (size_t)l->max_pending ? accept_some(l, 1) : 0; /* (as accept4 does) */
		arm_timer(l); /* (one that came without its Request waits for it from now on) */
		return rc;
	}
	n = REAL(epoll_wait)(l->epfd, ev, BATCH, 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == KEY_LISTEN) {
			/* Requests nobody takes stay bounded: the rest waits in the kernel's backlog. */
			int e = l->ndone < (size_t)l->max_pending ? accept_some(l, BATCH) : 0;

			rc = rc ? rc : e;
		} else if (ev[i].data.u64 == KEY_TIMER) {
			uint64_t v;

			(void)!REAL(read)(l->tfd, &v, sizeof(v));
			l->armed_deadline = -1;
		} else {
			size_t k = find(l, ev[i].data.ptr);

			if (k != (size_t)-1)
				feed(l, k);
		}
	}
	expire(l);
	arm_timer(l);
	return rc;
}

/* ---- the API ---- */

static int listener_new(int fd, bool own, struct esock_listener **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct esock_listener *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	pthread_once(&once, atfork_once);
	l->be = &esock_user_backend;
	l->fd = fd;
	l->own = own;
	l->epfd = l->tfd = -1;
	l->next_deadline = l->armed_deadline = -1;
	pthread_mutex_init(&l->lock, NULL);
	user_listener_configure(l, NULL);
	pthread_mutex_lock(&all_lock);
	l->next = all;
	all = l;
	pthread_mutex_unlock(&all_lock);
	*out = l;
	return 0;
}

int user_listen(const struct sockaddr *addr, socklen_t addrlen, int backlog,
			      struct esock_listener **out)
{
	int one = 1, fd, rc;

	if (!addr || !out)
		return -EINVAL;
	fd = REAL(socket)(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || REAL(setsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    REAL(bind)(fd, addr, addrlen) < 0 || REAL(listen)(fd, backlog > 0 ? backlog : 128) < 0) {
		rc = -errno;
		if (fd >= 0)
			esock_fd_close(fd);
		return rc;
	}
	esock_fd_own(fd);
	if ((rc = listener_new(fd, true, out)) < 0)
		esock_fd_close(fd);
	return rc;
}

int user_listener_from_fd(int fd, struct esock_listener **out)
{
	if (fd < 0 || !out)
		return -EINVAL;
	return listener_new(fd, false, out);
}

int user_listener_configure(struct esock_listener *l, const struct esock_listen_param *p)
{
	static const struct esock_listen_param none;

	if (!l)
		return -EINVAL;
	if (!p)
		p = &none;
	pthread_mutex_lock(&l->lock);
	l->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : ep_mpa_timeout_ms();
	if (l->timeout_ms < 0) /* "none" still gets a guard: a silent peer must not stay for good */
		l->timeout_ms = EP_TIMEOUT_DEFAULT_MS;
	l->sniff_ms = p->sniff_ms > 0 ? p->sniff_ms : 0;
	{
		/*
		 * An MPA client speaks first: the kernel hands a connection over
		 * once its Request's first octets are in, so the server wakes once
		 * per connection, not once for TCP and again for the Request, and a
		 * client that stays silent waits in the kernel first (about 1 s,
		 * then the MPA timeout here).  Not while sniffing: a plain client
		 * may wait for the server's greeting.
		 */
		int secs = l->sniff_ms ? 0 : 1;

		if (REAL(setsockopt)(l->fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs)) < 0)
			log_debug("listener fd %d: TCP_DEFER_ACCEPT: %s", l->fd, strerror(errno));
	}
	l->max_pending = p->max_pending > 0 ? p->max_pending
					    : esock_env_int("ESOCK_LISTEN_PENDING", PENDING_MAX_DEFAULT,
							    1, 1 << 20);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int user_listener_addr(const struct esock_listener *l, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	return REAL(getsockname)(l->fd, (struct sockaddr *)ss, &len) < 0 ? -errno : 0;
}

int user_listener_fd(const struct esock_listener *l)
{
	return l->fd;
}

int user_listener_poll_fd(struct esock_listener *l)
{
	int rc;

	pthread_mutex_lock(&l->lock);
	rc = setup(l);
	pthread_mutex_unlock(&l->lock);
	return rc < 0 ? rc : l->epfd;
}

int user_listener_ready(struct esock_listener *l)
{
	int rc;

	pthread_mutex_lock(&l->lock);
	rc = l->ndone ? 0 : progress(l); /* (something to hand out already: no look needed) */
	if (l->ndone)
		rc = (int)l->ndone;
	pthread_mutex_unlock(&l->lock);
	return rc;
}

size_t ep_listener_pending(struct esock_listener *l)
{
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = l->ndone;
	pthread_mutex_unlock(&l->lock);
	return n;
}

uint64_t ep_listener_completed(const struct esock_listener *l)
{
	return l->completed;
}

int user_listener_close(struct esock_listener *l)
{
	struct esock_listener **pp;

	if (!l)
		return -EINVAL;
	pthread_mutex_lock(&all_lock);
	for (pp = &all; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	drop_all(l, true);
	if (l->epfd >= 0)
		esock_fd_close(l->epfd);
	if (l->tfd >= 0)
		esock_fd_close(l->tfd);
	if (l->own)
		esock_fd_close(l->fd);
	pthread_mutex_destroy(&l->lock);
	free(l->pend);
	free(l->done);
	free(l);
	return 0;
}

int user_get_request(struct esock_listener *l, struct esock_conn_req **out,
				   int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : ep_now_ms() + timeout_ms;

	if (!l || !out)
		return -EINVAL;
	for (;;) {
		struct pollfd p = { .events = POLLIN };
		int rc, left;
		uint64_t mark;

		pthread_mutex_lock(&l->lock);
		mark = l->adopted;
		rc = l->ndone ? 0 : progress(l);
		if (l->ndone) {
			struct esock_conn_req *r = l->done[0];

			memmove(l->done, l->done + 1, --l->ndone * sizeof(*l->done));
			/*
			 * Accepted from the backlog just now, and no descriptor
			 * of ours closed since: the kernel gave it the lowest
			 * free number then, as accept would (only another
			 * thread's close can have freed a lower one, as with
			 * accept itself).
			 */
			r->lowest = r->seq > mark && r->drops_at == l->drops;
			*out = r;
			rc = 1;
		}
		p.fd = l->epfd;
		pthread_mutex_unlock(&l->lock);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		left = deadline < 0 ? -1 : (int)(deadline - ep_now_ms());
		if (deadline >= 0 && left <= 0)
			return -ETIMEDOUT;
		if (REAL(poll)(&p, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
}

int user_request_from_fd(int fd, struct esock_conn_req **out)
{
	struct esock_conn_req *r;
	struct esock_term t = { 0 };
	int64_t deadline;
	int guard_ms = ep_mpa_timeout_ms(), rc;
	socklen_t len;

	if (fd < 0 || !out)
		return -EINVAL;
	ep_tune_socket(fd);
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->be = &esock_user_backend;
	r->fd = fd;
	/* A timeout guards the Request, whatever the caller's wait (and even with "none"). */
	deadline = ep_now_ms() + (guard_ms < 0 ? EP_TIMEOUT_DEFAULT_MS : guard_ms);
	while ((rc = ep_frame_read(fd, r->frame, &r->have, true)) == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(deadline - ep_now_ms());

		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (REAL(poll)(&p, 1, left) < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
	}
	if (rc < 0 || esock_mpa_frame_decode(&r->req, false, r->frame, r->have, 0, &t) < 0) {
		log_info("listener: connection without a valid MPA Request (%s)",
			 rc < 0 ? strerror(-rc) : "bad frame");
		free(r);
		return -EPROTO;
	}
	len = sizeof(r->local);
	REAL(getsockname)(fd, (struct sockaddr *)&r->local, &len);
	len = sizeof(r->remote);
	REAL(getpeername)(fd, (struct sockaddr *)&r->remote, &len);
	*out = r;
	return 0;
}

int user_conn_req_fd(const struct esock_conn_req *r)
{
	return r ? r->fd : -EINVAL;
}

int ep_conn_req_lowest_fd(struct esock_conn_req *r)
{
	int fd;

	if (r->lowest) /* (two system calls a connection less) */
		return r->fd;
	fd = REAL(fcntl)(r->fd, F_DUPFD_CLOEXEC, 0); /* (close-on-exec, as accepted: sock_conn.c) */
	if (fd < 0)
		return -errno;
	if (fd > r->fd) { /* none lower is free */
		esock_fd_close(fd);
		return r->fd;
	}
	esock_fd_close(r->fd);
	return r->fd = fd;
}

int user_conn_req_take_plain(struct esock_conn_req *r)
{
	int fd;

	if (!r || !r->plain)
		return -EINVAL;
	fd = r->fd;
	free(r);
	return fd;
}

int user_conn_req_info(const struct esock_conn_req *r, struct esock_conn_info *i)
{
	memset(i, 0, sizeof(*i));
	i->mpa_rev = r->req.rev;
	i->enhanced = esock_mpa_frame_has_ird_ord(&r->req);
	i->crc = r->req.crc;
	i->markers_tx = r->req.markers;
	i->p2p = r->req.p2p;
	i->rtr = r->req.rtr;
	i->peer_ird = r->req.ird;
	i->peer_ord = r->req.ord;
	i->private_data_len = r->req.pd_len;
	if (r->req.pd_len)
		memcpy(i->private_data, r->req.pd, r->req.pd_len);
	i->local = r->local;
	i->remote = r->remote;
	if (r->fd >= 0)
		ep_sockaddrs(r->fd, i); /* (what the listener did not ask yet) */
	return 0;
}
