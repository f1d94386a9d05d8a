/* SPDX-License-Identifier: MIT */
/*
 * Lifetime of DDPMODE sockets: creation, references, dup, close, fork.
 * Socks are recycled through a free list and never returned to malloc, so a
 * reference taken by a call that raced with close() stays harmless (sock.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep_mem.h"
#include "endpoint/ep_sock.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/fdtab.h"
#include "libesock/sock.h"
#include "libesock/sock_vb.h"
#include "util/atfork.h"
#include "util/env.h"
#include "util/log.h"
#include "util/tls.h"

static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct esock_sock *free_list;

/* Every live sock, for fork handling. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct esock_sock **live;
static size_t nlive, caplive;

atomic_int sock_count;

static void live_add(struct esock_sock *s)
{
	atomic_fetch_add(&sock_count, 1);
	pthread_mutex_lock(&live_lock);
	if (nlive == caplive) {
		size_t nc = caplive ? caplive * 2 : 64;
		struct esock_sock **n = realloc(live, nc * sizeof(*n));

		if (n) {
			live = n;
			caplive = nc;
		}
	}
	if (nlive < caplive)
		live[nlive++] = s;
	pthread_mutex_unlock(&live_lock);
}

static void live_del(struct esock_sock *s)
{
	atomic_fetch_sub(&sock_count, 1);
	pthread_mutex_lock(&live_lock);
	for (size_t i = 0; i < nlive; i++)
		if (live[i] == s) {
			live[i] = live[--nlive];
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

/*
 * The socks this thread's calls hold (a few deep at most): a signal handler
 * that closes a socket the call it interrupted is using must not wait for
 * that call to leave (sock_release_fd).
 */
#define HELD_MAX 8
static ESOCK_TLS struct esock_sock *held[HELD_MAX];
static ESOCK_TLS unsigned nheld;

static void hold(struct esock_sock *s)
{
	if (nheld < HELD_MAX)
		held[nheld] = s;
	nheld++;
}

static unsigned held_here(const struct esock_sock *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nheld && i < HELD_MAX; i++)
		n += held[i] == s;
	return n;
}

struct esock_sock *sock_get(int fd)
{
	struct esock_sock *s = esock_fdtab_get(fd);

	if (!s)
		return NULL;
	atomic_fetch_add(&s->refs, 1);
	/* closed meanwhile (the sock may be recycled), or fell back to plain TCP */
	if (esock_fdtab_get(fd) != s || s->st == SOCK_PLAIN) {
		atomic_fetch_sub(&s->refs, 1);
		return NULL;
	}
	hold(s);
	return s;
}

struct esock_sock *sock_get_any(int fd)
{
	struct esock_sock *s = esock_fdtab_get(fd);

	if (!s)
		return NULL;
	atomic_fetch_add(&s->refs, 1);
	if (esock_fdtab_get(fd) != s) {
		atomic_fetch_sub(&s->refs, 1);
		return NULL;
	}
	hold(s);
	return s;
}

static void release_now(struct esock_sock *s);
static void release_free(struct esock_sock *s);

/*
 * As many connections as half of this CPU's L2 cache holds the lines of
 * (a socket and its QP: about 2 KiB read per message): under that they stay
 * cached between calls and prefetching them only costs instructions (about
 * 130 per request at 20-50 connections); over it their misses are what the
 * prefetches overlap.  From the cache's size, read once; 128 without it.
 */
static int prefetch_from(void)
{
	static atomic_int from;
	int f = atomic_load_explicit(&from, memory_order_relaxed);

	if (!f) {
		long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

		f = l2 > 0 ? (int)(l2 / 2 / 2048) : 128;
		if (f < 16)
			f = 16;
		atomic_store_explicit(&from, f, memory_order_relaxed);
	}
	return f;
}

bool sock_prefetch_pays(void)
{
	return atomic_load_explicit(&sock_count, memory_order_relaxed) >= prefetch_from();
}

/*
 * A read or write is about to visit |s| and its connection: their lines are
 * asked for all at once, so that over many connections the misses overlap
 * instead of following one another (ep_qp_prefetch).
 */
void sock_prefetch(const struct esock_sock *s)
{
	/* Hints only, read without the lock: a prefetch of a stale address does no harm. */
	struct esock_qp *qp = __atomic_load_n(&s->qp, __ATOMIC_RELAXED);

	if (!sock_prefetch_pays())
		return;

	__builtin_prefetch((const char *)s + 64);
	__builtin_prefetch(__atomic_load_n(&s->stats, __ATOMIC_RELAXED));
	__builtin_prefetch(__atomic_load_n(&s->cq, __ATOMIC_RELAXED));
	if (qp)
		ep_qp_prefetch(qp);
}

void sock_put(struct esock_sock *s)
{
	/* (Calls nest, so this thread's latest hold of |s| is the one that ends.) */
	if (nheld) {
		unsigned top = nheld < HELD_MAX ? nheld : HELD_MAX;

		for (unsigned i = top; i-- > 0;)
			if (held[i] == s) {
				held[i] = held[top - 1];
				break;
			}
		nheld--;
	}
	if (atomic_fetch_sub(&s->refs, 1) == 1 && atomic_load(&s->release_deferred))
		release_now(s);
}

static struct sock_opts defaults;

static void sock_defaults_env(void)
{
	struct sock_opts *o = &defaults;

	o->mpa_rev = esock_env_int("ESOCK_MPA_REV", 2, 1, 2);
	o->crc = esock_env_int("ESOCK_CRC", 1, 0, 1);
	o->markers = esock_env_int("ESOCK_MARKERS", 0, 0, 1);
	o->rdepth = esock_env_int("ESOCK_RCVDEPTH", 64, 0, 4096);
	o->rsize = esock_env_int("ESOCK_RCVSIZE", 65536, 64, 16 << 20);
	o->msgmode = esock_env_int("ESOCK_MSGMODE", 0, 0, 1);
	o->timeout_ms = esock_env_int("ESOCK_MPA_TIMEOUT_MS", 10000, -1, 3600000);
	if (o->mpa_rev != 2 || !o->crc || o->markers || o->rdepth != 64 || o->rsize != 65536 ||
	    o->msgmode || o->timeout_ms != 10000)
		log_info("socket defaults: MPA rev %d, CRC %s, markers %s, receive pool %d x %d, %s mode, "
			 "MPA timeout %d ms", o->mpa_rev, o->crc ? "on" : "off", o->markers ? "on" : "off",
			 o->rdepth, o->rsize, o->msgmode ? "message" : "stream", o->timeout_ms);
}

void sock_defaults(struct sock_opts *o)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, sock_defaults_env);
	*o = defaults;
}

/*
 * SO_LINGER {1, 0}: close aborts (the peer sees a reset), as with libc.
 * Read once when the socket becomes DDPMODE, then followed as the
 * application sets it (setsockopt: preload.c), so that a close asks nothing.
 */
static bool linger_abort_of(int fd)
{
	struct linger l = { 0 };
	socklen_t len = sizeof(l);

	/* (Restricted: no socket options any more; a linger set before is not seen.) */
	return ep_getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff &&
	       l.l_linger == 0;
}

void sock_linger_set(struct esock_sock *s, const void *val, socklen_t len)
{
	struct linger l = { 0 };

	if (val && len >= (socklen_t)sizeof(l)) {
		memcpy(&l, val, sizeof(l));
		pthread_mutex_lock(&s->lock);
		s->linger_abort = l.l_onoff && l.l_linger == 0;
		if (s->qp)
			ep_qp_set_linger(s->qp, s->linger_abort);
		pthread_mutex_unlock(&s->lock);
	}
}

/* The kernel keeps SO_RCVTIMEO / SO_SNDTIMEO (setsockopt passes through); cached here. */
void sock_timeo_read(struct esock_sock *s)
{
	int *dst[2] = { &s->rcvtimeo_ms, &s->sndtimeo_ms };
	int names[2] = { SO_RCVTIMEO, SO_SNDTIMEO };

	for (int i = 0; i < 2; i++) {
		struct timeval tv = { 0 };
		socklen_t len = sizeof(tv);

		*dst[i] = REAL(getsockopt)(s->fd, SOL_SOCKET, names[i], &tv, &len) < 0 ? 0 :
			  (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
	}
}

static void atfork_init(void);

static struct esock_sock *sock_make(int fd, const struct esock_sock *ls, int born_type);

struct esock_sock *sock_new(int fd)
{
	return sock_make(fd, NULL, -1);
}

struct esock_sock *sock_new_accepted(int fd, const struct esock_sock *ls)
{
	return sock_make(fd, ls, -1);
}

struct esock_sock *sock_new_born(int fd, int type)
{
	return sock_make(fd, NULL, type);
}

/*
 * |ls|: the listener |fd| was accepted from (flags and timeouts known: no
 * system calls); |born_type| >= 0: socket()'s type argument this moment (the
 * kernel's defaults: nothing to ask either).
 */
static struct esock_sock *sock_make(int fd, const struct esock_sock *ls, int born_type)
{
	struct esock_sock *s;

	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (esock_fdtab_init() < 0)
		return NULL;
	pthread_once(&once, atfork_init);
	pthread_mutex_lock(&free_lock);
	if ((s = free_list))
		free_list = s->next_free;
	pthread_mutex_unlock(&free_lock);
	if (!s) {
		if (!(s = ep_calloc(1, sizeof(*s)))) /* (never freed: recycled through free_list) */
			return NULL;
		pthread_mutex_init(&s->lock, NULL);
	} else {
		pthread_mutex_t keep = s->lock;
		int refs = atomic_load(&s->refs); /* late callers backing off */

		memset(s, 0, sizeof(*s));
		s->lock = keep;
		atomic_store(&s->refs, refs);
	}
	pthread_mutex_init(&s->pool_lock, NULL); /* (never held by a recycled one) */
	s->fd = fd;
	s->cloexec_fd = -1;
	if (ls) {
		/* Accepted: the caller set the flag; the kernel copied the listener's options. */
		s->rcvtimeo_ms = ls->rcvtimeo_ms;
		s->sndtimeo_ms = ls->sndtimeo_ms;
		s->linger_abort = ls->linger_abort;
	} else if (born_type >= 0) { /* no timeouts, no linger yet; the flags as socket() was told */
		s->nonblock = (born_type & SOCK_NONBLOCK) != 0;
		s->cloexec_fd = fd;
		s->cloexec = (born_type & SOCK_CLOEXEC) != 0;
	} else { /* SOCK_NONBLOCK or O_NONBLOCK set before DDPMODE: the file's flag is the truth */
		int fl = REAL(fcntl)(fd, F_GETFL);

		s->nonblock = fl > 0 && (fl & O_NONBLOCK);
		sock_timeo_read(s);
		s->linger_abort = linger_abort_of(fd);
	}
	atomic_store(&s->nfds, 1);
	sock_defaults(&s->o);
	if (esock_fdtab_set(fd, s) < 0) {
		pthread_mutex_lock(&free_lock);
		s->next_free = free_list;
		free_list = s;
		pthread_mutex_unlock(&free_lock);
		return NULL;
	}
	live_add(s);
	sock_stat_attach(s);
	return s;
}

static void sock_recycle(struct esock_sock *s)
{
	live_del(s);
	pthread_mutex_lock(&free_lock);
	s->next_free = free_list;
	free_list = s;
	pthread_mutex_unlock(&free_lock);
}

/*
 * sock_release_fd forgets |fd| (close, dup2 over it, a stale entry); the last descriptor of a sock tears it down (the QP
 * disconnects gracefully, sends still queued drain first, bounded by the
 * linger time), then the application's descriptor is closed.
 */
/*
 * The application closes the descriptor the QP runs on but keeps a dup of
 * it (dup2 onto 0 and 1, then close: inetd style): the QP moves to a
 * private copy of its own, the socket's one extra descriptor from then on.
 */
static void fd_gone(struct esock_sock *s, int fd)
{
	struct esock_qp *qp;
	int nfd;

	pthread_mutex_lock(&s->lock);
	if (s->fd != fd) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	if ((nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 3)) >= 0)
		esock_fd_own(nfd);
	if (nfd < 0) {
		log_error("fd %d: cannot keep the connection past this close: %s", fd, strerror(errno));
	} else if ((qp = s->qp) && ep_qp_fd(qp) == fd && ep_qp_fd_borrowed(qp)) {
		/*
		 * A copy from fork nobody used here (suspended) is not driven: the
		 * other process may be the one using the connection (git daemon
		 * --serve closes its 0 and 1 while upload-pack, its child, speaks).
		 */
		if (ep_engine_move(qp, nfd, !s->suspended) == 0) {
			ep_qp_set_fd(qp, nfd, false);
			s->fd = nfd;
		} else {
			log_error("fd %d: cannot move the connection to fd %d", fd, nfd);
			esock_fd_close(nfd);
		}
	} else if (!s->qp && !s->lst) {
		/* Not connected yet: the copy is the library's (the QP borrows it later). */
		s->fd = nfd;
		s->fd_private = true;
	} else {
		esock_fd_close(nfd);
	}
	pthread_mutex_unlock(&s->lock);
}

int sock_release_fd(int fd)
{
	struct esock_sock *s = esock_fdtab_take(fd);

	if (!s)
		return 0;
	sock_note_inherit(fd, false);
	if (atomic_fetch_sub(&s->nfds, 1) > 1) {
		fd_gone(s, fd);
		return 0;
	}
	atomic_store(&s->closing, true);
	s->release_graceful = !s->linger_abort;
	if (held_here(s)) {
		/*
		 * A signal handler closes a socket that the call it interrupted
		 * (in this thread) is using: postgres's postmaster leaves from
		 * its handler while in select.  That call cannot leave first;
		 * its last reference ends the socket (if the handler returns at
		 * all).  The descriptor is closed now: the connection lets go
		 * of it (no engine watch, no further use of the number).
		 */
		if (s->qp && ep_qp_fd(s->qp) == fd) {
			ep_engine_del(s->qp);
			ep_qp_set_fd(s->qp, -1, ep_qp_fd_borrowed(s->qp));
		}
		atomic_store(&s->release_deferred, true);
		return 0;
	}
	if (s->epregs)
		sock_epoll_forget(s);
	sock_teardown(s, s->release_graceful);
	/* Calls still inside (a read blocked in another thread, woken by the teardown) leave first. */
	while (atomic_load(&s->refs))
		sched_yield();
	release_free(s);
	return 0;
}

/* A release deferred by sock_release_fd, by the last reference. */
static void release_now(struct esock_sock *s)
{
	atomic_store(&s->release_deferred, false);
	if (s->epregs)
		sock_epoll_forget(s);
	sock_teardown(s, s->release_graceful);
	release_free(s);
}

/* The last descriptor's end, once no call is inside: free and recycle. */
static void release_free(struct esock_sock *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->cq && esock_cq_destroy(s->cq) == 0)
		s->cq = NULL;
	if (s->pd && esock_pd_free(s->pd) == 0)
		s->pd = NULL;
	sock_pool_free(s);
	sock_slots_release(s);
	sock_stat_detach(s);
	if (s->fd_private) /* the application's descriptors are all closed: ours goes too */
		esock_fd_close(s->fd);
	s->fd_private = false;
	pthread_mutex_unlock(&s->lock);
	sock_recycle(s);
}

int sock_close_fd(int fd)
{
	sock_release_fd(fd);
	return esock_fd_close(fd);
}

/*
 * A connection in DDPMODE survives exec only by the library's handoff
 * (sock_handoff.c): every descriptor naming it stays close-on-exec in the
 * kernel, and what the application asked for is noted; a descriptor it
 * keeps across exec is cleared just before, for a connection that can be
 * carried into an image that preloads this library.  (So a dup2 onto 0 or 1
 * before an exec without it leaves the new image without the descriptor
 * instead of handing it raw MPA octets.)
 */
void sock_keep_cloexec(struct esock_sock *s, int fd)
{
	int fl;

	if (s->st != SOCK_CONNECTED && s->st != SOCK_TCP_CONNECTING && s->st != SOCK_MPA_CONNECTING)
		return;
	if (s->cloexec_fd == fd) /* known since socket() (sock_new_born), once */
		fl = s->cloexec ? FD_CLOEXEC : 0;
	else if ((fl = REAL(fcntl)(fd, F_GETFD)) < 0)
		return;
	s->cloexec_fd = -1;
	sock_note_inherit(fd, !(fl & FD_CLOEXEC));
	if (!(fl & FD_CLOEXEC))
		REAL(fcntl)(fd, F_SETFD, fl | FD_CLOEXEC);
}

int sock_dup_fd(int oldfd, int newfd)
{
	struct esock_sock *s = sock_get(oldfd);
	int rc;

	if (!s)
		return 0;
	atomic_fetch_add(&s->nfds, 1);
	rc = esock_fdtab_set(newfd, s);
	if (rc < 0)
		atomic_fetch_sub(&s->nfds, 1);
	else
		sock_keep_cloexec(s, newfd);
	sock_put(s);
	if (rc >= 0 && newfd <= 2)
		sock_stdio_adopt_std(newfd); /* (dup2 onto 0, 1 or 2: inetd style) */
	return rc;
}

/*
 * fork: a connected DDPMODE socket now exists in two processes, whose
 * engines must not both read it.  Both copies are suspended: the parent's
 * engine lets go of it, the child's never had it.  The first process that
 * makes a call on the socket resumes it there (the pre-fork server: the
 * child serves, the parent closes its copy).  Closing a suspended copy does
 * not shut the connection down: the other process may be using it.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&live_lock);
	/*
	 * No thread of ours may be half-way through a QP's receive when the
	 * child's copy is taken: octets read from the socket but not yet placed
	 * would be lost to the process that serves the connection (seen: a
	 * pre-fork server's child waited for good on a request the parent's
	 * engine was taking in at the fork).
	 */
	for (size_t i = 0; i < nlive; i++)
		if (live[i]->qp) {
			ep_qp_quiesce(live[i]->qp);
			sock_share_fork_prepare(live[i]);
		}
}

static void fork_parent(void)
{
	for (size_t i = 0; i < nlive; i++) {
		struct esock_sock *s = live[i];

		if (!s->qp)
			continue;
		if (!s->suspended) {
			s->suspended = true;
			ep_engine_del(s->qp);
		}
		ep_qp_unquiesce(s->qp);
	}
	pthread_mutex_unlock(&live_lock);
}

void sock_fork_child(void)
{
	/*
	 * Only the forking thread exists here: references and locks held by
	 * the parent's other threads are meaningless; start clean.  The QPs
	 * (locks, the token fork_prepare took, engine flags) are reset by the
	 * endpoint's own fork handler (ep_engine.c, registered with the first
	 * QP), which leaves the parent's epoll set alone.
	 */
	for (size_t i = 0; i < nlive; i++) {
		struct esock_sock *s = live[i];

		pthread_mutex_init(&s->lock, NULL);
		pthread_mutex_init(&s->pool_lock, NULL);
		atomic_store(&s->refs, 0);
		s->waiters = 0;
		sock_vb_fork_child(s);
		if (s->qp)
			s->suspended = true; /* its token: released by the endpoint's handler */
	}
	sock_stat_fork_child(live, nlive);
	pthread_mutex_unlock(&live_lock);
}

/*
 * The process ends (exit, or main returned): a connection it drives that
 * other processes hold is left to them with its state (sock_share.c); one
 * of its own sends what it has queued first (sock_flush_at_exit).
 */
__attribute__((destructor)) static void sock_at_exit(void)
{
	int64_t since = 0;

	pthread_mutex_lock(&live_lock);
	for (size_t i = 0; i < nlive; i++) {
		struct esock_sock *s = live[i];
		struct timespec until;

		/*
		 * (A thread that keeps the socket's lock past half a second is
		 * stuck, or exiting too: its socket is left as it is.)
		 */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 500000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (pthread_mutex_timedlock(&s->lock, &until) != 0)
			continue;
		if (s->share)
			sock_share_exit(s);
		else
			sock_flush_at_exit(s, &since);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&live_lock);
}

static void atfork_init(void)
{
	esock_atfork(ESOCK_FORK_QUIESCE, fork_prepare, fork_parent, sock_fork_child);
}
