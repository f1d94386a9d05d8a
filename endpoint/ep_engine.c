/* SPDX-License-Identifier: MIT */
/*
 * The progress engine: one thread per process, blocking in epoll (or
 * spinning with ESOCK_POLL=spin, pinned with ESOCK_ENGINE_CPU=n), that makes
 * a QP progress when nobody else does: RDMA Write targets, Read Responses,
 * Terminates, socket drain after a blocked send.  Its thread starts only
 * when a QP is first registered with it (engine_need_thread): until then a
 * socket program's process stays single-threaded, which the kernel and libc
 * reward on every call (fdget without a file reference, malloc and stdio
 * without locks).  Edge-triggered: the token holder always reads until EAGAIN.  Events carry the QP number, looked up
 * with a reference under the table lock, so an event for a QP destroyed
 * meanwhile finds nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "util/atfork.h"
#include "util/env.h"
#include "util/log.h"

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct esock_qp **tab;
static uint32_t tab_cap;
static pthread_once_t started = PTHREAD_ONCE_INIT;        /* epfd and doorbell */
static pthread_once_t thread_started = PTHREAD_ONCE_INIT; /* engine_main's thread */
static int epfd = -1;
static bool spin;
static int doorbell = -1;       /* eventfd: wakes the engine to start its reattach timer */
static atomic_int ndetached;    /* QPs whose input the engine does not watch */
/*
 * Numbers of the detached QPs (some may be stale: reattach_idle drops them),
 * so that taking them back costs per detached QP, not per QP; and free QP
 * numbers, so that a new QP's costs O(1), not a scan of the table.
 */
static pthread_mutex_t det_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *det, ndet, capdet;
static uint32_t *freenums, nfree, capfree;
static uint32_t tab_next = 1;   /* first number never handed out */

/* Appends |v| to the array |*a| (|*n| used of |*cap|); false without memory. */
static bool push_u32(uint32_t **a, uint32_t *n, uint32_t *cap, uint32_t v)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 64;
		uint32_t *na = realloc(*a, nc * sizeof(*na));

		if (!na)
			return false;
		*a = na;
		*cap = nc;
	}
	(*a)[(*n)++] = v;
	return true;
}

static void fork_handlers(void);
static void modify(struct esock_qp *qp);

int ep_qpn_alloc(struct esock_qp *qp)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	uint32_t i;

	pthread_once(&once, fork_handlers);
	pthread_mutex_lock(&tab_lock);
	i = nfree ? freenums[--nfree] : tab_next;
	if (i >= tab_cap) {
		uint32_t ncap = tab_cap ? tab_cap * 2 : 64;
		struct esock_qp **t = realloc(tab, ncap * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&tab_lock);
			return -ENOMEM;
		}
		memset(t + tab_cap, 0, (ncap - tab_cap) * sizeof(*t));
		tab = t;
		tab_cap = ncap;
	}
	if (i == tab_next)
		tab_next++;
	tab[i] = qp;
	qp->num = i;
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

void ep_qpn_free(struct esock_qp *qp)
{
	pthread_mutex_lock(&tab_lock);
	if (qp->num < tab_cap && tab[qp->num] == qp) {
		tab[qp->num] = NULL;
		if (!push_u32(&freenums, &nfree, &capfree, qp->num) && qp->num + 1 == tab_next)
			tab_next--; /* (no memory to remember it: only the last one comes back) */
	}
	pthread_mutex_unlock(&tab_lock);
}

static struct esock_qp *qp_get(uint32_t num)
{
	struct esock_qp *qp = NULL;

	pthread_mutex_lock(&tab_lock);
	if (num < tab_cap && (qp = tab[num]))
		atomic_fetch_add(&qp->refs, 1);
	pthread_mutex_unlock(&tab_lock);
	return qp;
}

/*
 * Corked RTRs (ep.h, rtr_cork), by QP number: a thread about to sleep
 * pushes them all, since what it waits for may be a server's answer that
 * only such an RTR lets out.  The list lives between a connect and the
 * first message or wait, so it is short, and empty almost always.
 */
static pthread_mutex_t cork_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *corked, ncork, capcork;
atomic_int ep_ncorked;

void ep_cork_note(struct esock_qp *qp)
{
	pthread_mutex_lock(&cork_lock);
	bool kept = push_u32(&corked, &ncork, &capcork, qp->num);

	atomic_store(&ep_ncorked, (int)ncork);
	pthread_mutex_unlock(&cork_lock);
	if (!kept)
		ep_qp_uncork(qp); /* no memory to remember it: it goes now */
}

void ep_uncork_all_slow(void)
{
	uint32_t small[16], *nums = small, n;

	pthread_mutex_lock(&cork_lock);
	n = ncork;
	if (n > 16 && !(nums = malloc(n * sizeof(*nums)))) {
		nums = small;
		n = 16; /* the rest at the next sleep */
	}
	memcpy(nums, corked, n * sizeof(*nums));
	memmove(corked, corked + n, (ncork - n) * sizeof(*corked));
	ncork -= n;
	atomic_store(&ep_ncorked, (int)ncork);
	pthread_mutex_unlock(&cork_lock);
	for (uint32_t k = 0; k < n; k++) {
		struct esock_qp *qp = qp_get(nums[k]);

		if (qp) {
			ep_qp_uncork(qp);
			atomic_fetch_sub(&qp->refs, 1);
		}
	}
	if (nums != small)
		free(nums);
}

/*
 * Takes back every detached QP that nobody has waited on for EP_REATTACH_MS
 * (its application went off doing something else: one-sided operations
 * aimed at it must progress again), and drives it once.
 */
static void reattach_idle(void)
{
	int64_t now = ep_now_ms();
	uint32_t *nums, n;

	pthread_mutex_lock(&det_lock); /* a snapshot: detaching threads append meanwhile */
	n = ndet;
	nums = n ? malloc(n * sizeof(*nums)) : NULL;
	if (nums)
		memcpy(nums, det, n * sizeof(*nums));
	pthread_mutex_unlock(&det_lock);
	if (!nums)
		return;
	for (uint32_t k = 0; k < n; k++) {
		struct esock_qp *qp = qp_get(nums[k]);

		nums[k] = 0; /* 0: drop it from the list (no QP has number 0) */
		if (!qp)
			continue;
		if (atomic_load(&qp->detached) &&
		    (atomic_load(&qp->attended) || now - atomic_load(&qp->left_ms) < EP_REATTACH_MS)) {
			nums[k] = qp->num; /* still waited on: keep it */
		} else if (atomic_load(&qp->detached)) {
			pthread_mutex_lock(&qp->eng_lock);
			if (atomic_load(&qp->detached) && !atomic_load(&qp->attended) &&
			    atomic_load(&qp->in_engine)) {
				atomic_store(&qp->detached, false);
				modify(qp);
				atomic_fetch_sub(&ndetached, 1);
			}
			pthread_mutex_unlock(&qp->eng_lock);
			if (atomic_load(&qp->detached))
				nums[k] = qp->num; /* a waiter came meanwhile: later */
			ep_qp_progress(qp, EP_WANT_RX | EP_WANT_DRAIN | EP_WANT_TX | EP_WANT_ENGINE);
		}
		atomic_fetch_sub(&qp->refs, 1);
	}
	/* The list: what is kept, then what was appended since the snapshot. */
	pthread_mutex_lock(&det_lock);
	{
		uint32_t m = 0;

		for (uint32_t k = 0; k < n; k++)
			if (nums[k])
				det[m++] = nums[k];
		memmove(det + m, det + n, (ndet - n) * sizeof(*det));
		ndet = m + (ndet - n);
	}
	pthread_mutex_unlock(&det_lock);
	free(nums);
}

static atomic_bool engine_quit, engine_running;

static void *engine_main(void *arg)
{
	struct epoll_event ev[64];

	(void)arg;
	atomic_store(&engine_running, true);
	for (;;) {
		int tmo = spin ? 0 : atomic_load(&ndetached) ? EP_REATTACH_MS : -1;
		int n = REAL(epoll_wait)(epfd, ev, 64, tmo);

		if (atomic_load(&engine_quit))
			break;

		for (int i = 0; i < n; i++) {
			struct esock_qp *qp;
			unsigned w = EP_WANT_ENGINE;

			if (ev[i].data.u32 == 0) { /* the doorbell */
				uint64_t v;

				(void)!REAL(read)(doorbell, &v, sizeof(v));
				continue;
			}
			if (!(qp = qp_get(ev[i].data.u32)))
				continue;
			/*
			 * A read that comes back short emptied the socket: what comes
			 * later is a new edge.  Only a FIN (or an error) may have come
			 * with the last data in one edge: then read on to EAGAIN, where
			 * it shows.  (Draining always cost a passive RDMA Read responder
			 * an empty recvfrom per request.)
			 */
			if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
				w |= EP_WANT_RX;
			if (ev[i].events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
				w |= EP_WANT_DRAIN;
			if (ev[i].events & EPOLLOUT)
				w |= EP_WANT_TX;
			ep_qp_progress(qp, w);
			atomic_fetch_sub(&qp->refs, 1);
		}
		if (atomic_load(&ndetached))
			reattach_idle();
	}
	atomic_store(&engine_running, false);
	return NULL;
}

/*
 * Restricted system calls from now on (ep_restrict, before the filter is
 * installed): this process's engine, if it has one, ends (its epoll_wait
 * would meet the filter) and its QPs are the application's calls' to drive.
 */
void ep_engine_stop(void)
{
	if (epfd < 0)
		return;
	atomic_store(&engine_quit, true);
	(void)!REAL(write)(doorbell, &(uint64_t){ 1 }, sizeof(uint64_t));
	for (int i = 0; i < 2000 && atomic_load(&engine_running); i++)
		nanosleep(&(struct timespec){ 0, 500000 }, NULL);
	pthread_mutex_lock(&tab_lock);
	for (uint32_t i = 0; i < tab_cap; i++)
		if (tab[i]) {
			atomic_store(&tab[i]->in_engine, false);
			tab[i]->eng_reg = false;
			ep_qp_nonblocking(tab[i]); /* (restricted writes must not block) */
			if (atomic_exchange(&tab[i]->detached, false))
				atomic_fetch_sub(&ndetached, 1);
		}
	pthread_mutex_unlock(&tab_lock);
	log_info("engine: stopped%s", atomic_load(&engine_running) ? " (its thread did not answer)" : "");
}

/*
 * A forked child has no engine thread: forget the parent's, so that the
 * child's first connected QP starts its own.  QPs copied from the parent
 * keep sharing the parent's sockets and are not driven in the child.
 * Registered with the first QP (not the engine's start), so that every QP
 * of a child is reset; in the tables' phase (util/atfork.h): after the
 * sockets' quiesce, so no QP's receive is under way while tab_lock is held.
 */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&tab_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&tab_lock);
}

/*
 * A copy of a parent's QP in the child: the parent's other threads (its
 * engine above all) may have held eng_lock, the progress token, references
 * or the CQ locks at the fork, and are gone; nothing of the parent's epoll
 * set is touched (the child shares that epoll instance, and a DEL from here
 * would remove the parent's own registration of the same socket).
 */
static void qp_fork_child(struct esock_qp *qp)
{
	pthread_mutex_init(&qp->eng_lock, NULL);
	atomic_store(&qp->in_engine, false);
	qp->eng_reg = false;
	atomic_store(&qp->detached, false);
	atomic_store(&qp->refs, 0);
	atomic_store(&qp->busy, false);
	atomic_store(&qp->quiesced, false);
	atomic_store(&qp->rx_sleeper, false); /* (the parent's reader, asleep in its receive) */
	atomic_store(&qp->attended, 0);
	atomic_store(&qp->want_eng, 0); /* the parent's engine's, not ours */
	/*
	 * The bound-QP lists: waiters of the parent pinned them under these
	 * (NULL: a QP being made); its sleeping threads are not the child's.
	 */
	for (int k = 0; k < 2; k++) {
		struct esock_cq *cq = k ? qp->rcq : qp->scq;

		if (!cq)
			continue;
		pthread_mutex_init(&cq->lock, NULL);
		cq->nsleep = 0;
		atomic_store(&cq->sleepers, 0);
		atomic_store(&cq->pollers, 0);
	}
}

static void atfork_child(void)
{
	static const pthread_once_t fresh = PTHREAD_ONCE_INIT;

	pthread_mutex_unlock(&tab_lock);
	if (epfd >= 0)
		esock_fd_close(epfd);
	if (doorbell >= 0)
		esock_fd_close(doorbell);
	epfd = doorbell = -1;
	atomic_store(&ndetached, 0);
	atomic_store(&engine_running, false);
	pthread_mutex_init(&det_lock, NULL); /* another thread may have held it at the fork */
	ndet = 0;
	pthread_mutex_init(&cork_lock, NULL);
	memcpy(&started, &fresh, sizeof(started));
	memcpy(&thread_started, &fresh, sizeof(thread_started));
	for (uint32_t i = 0; i < tab_cap; i++)
		if (tab[i])
			qp_fork_child(tab[i]);
	ep_qp_fork_child_thread();
}

static void fork_handlers(void)
{
	if (esock_atfork(ESOCK_FORK_TABLES, atfork_prepare, atfork_parent, atfork_child) != 0)
		log_error("engine: cannot register fork handlers");
}

/*
 * The kernel grows a process's descriptor table by doubling, and once the
 * table is shared by threads every growth waits for an RCU grace period
 * (expand_fdtable: synchronize_rcu when the files are shared): 5-25 ms here,
 * during which the thread that asked for a descriptor (an accept, a connect's
 * socket) sleeps.  Our engine thread makes every DDPMODE process
 * multi-threaded, so a server going to 8000 connections stalled seven times
 * (measured: steps of 1000 connections that crossed a power of two took
 * 70-100 ms against 49).  Grown once before the thread exists, the table
 * costs no grace period: to the soft descriptor limit, at most
 * ESOCK_FD_RESERVE entries (default 65536: 512 KiB of kernel memory; 0
 * turns it off).  F_DUPFD finds the lowest free number at or above the
 * target, so no descriptor of the application is touched.
 */
static void reserve_fd_table(int some_fd)
{
	int cap = esock_env_int("ESOCK_FD_RESERVE", 65536, 0, 1 << 24), fd;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)cap)
		cap = (int)rl.rlim_cur;
	/* (A limit of 256 or less: two growths at most past the first table of 64.) */
	if (cap > 256 && (fd = REAL(fcntl)(some_fd, F_DUPFD_CLOEXEC, cap - 1)) >= 0)
		REAL(close)(fd);
}

static void thread_start(void)
{
	const char *cpu = getenv("ESOCK_ENGINE_CPU");
	pthread_attr_t at;
	pthread_t th;
	sigset_t all, old;

	if (epfd < 0)
		return;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* The engine takes no signals: they belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&th, &at, engine_main, NULL) != 0) {
		log_error("engine: cannot start its thread");
		epfd = -1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (epfd >= 0 && cpu && *cpu) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(atoi(cpu), &set);
		if (pthread_setaffinity_np(th, sizeof(set), &set) != 0)
			log_warn("engine: cannot pin to CPU %s", cpu);
	}
	log_info("engine: started (%s%s%s)", spin ? "busy-poll" : "epoll",
		 cpu ? ", CPU " : "", cpu ? cpu : "");
}

/*
 * The engine's thread, from the moment a QP is registered with its epoll
 * set (what was ready before is reported by its first epoll_wait).  False
 * when it cannot run.
 */
static bool engine_need_thread(void)
{
	pthread_once(&thread_started, thread_start);
	return epfd >= 0;
}

static void engine_start(void)
{
	const char *poll = getenv("ESOCK_POLL");

	spin = poll && strcmp(poll, "spin") == 0;
	if ((epfd = REAL(epoll_create1)(EPOLL_CLOEXEC)) >= 0)
		reserve_fd_table(epfd);
	if (epfd < 0 ||
	    (doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, doorbell,
		      &(struct epoll_event){ .events = EPOLLIN, .data.u32 = 0 }) < 0) {
		log_error("engine: cannot set up epoll: %s", strerror(errno));
		epfd = -1;
		return;
	}
	esock_fd_own(epfd);
	esock_fd_own(doorbell);
	if (spin) /* (it polls whatever is registered, from the start) */
		engine_need_thread();
}

/*
 * A lazy QP whose input the engine reads all the same: sends wait for what
 * only input brings (the initiator's first FPDU, credits), and its callers
 * may wait for nothing (a writer done, a server that spoke first).
 */
static bool lazy_watched(const struct esock_qp *qp)
{
	return (qp->tx_hold && qp->hold_watch) || qp->cr_watch;
}

/* Input: unless a waiter reads it (detached) or its callers do (lazy_watched aside). */
static bool watch_in(const struct esock_qp *qp)
{
	return !atomic_load(&qp->detached) && (!qp->lazy || lazy_watched(qp));
}

/* (Edge-triggered always: a hang-up, reported whatever the mask, must not repeat.) */
static uint32_t events_of(const struct esock_qp *qp)
{
	return EPOLLET | (watch_in(qp) ? EPOLLIN | EPOLLRDHUP : 0) | (qp->pollout ? EPOLLOUT : 0);
}

/* Whether the engine's epoll set holds it (ep.h: eng_reg): a lazy QP only for input or room. */
static bool watched(const struct esock_qp *qp, uint32_t events)
{
	return !qp->lazy || (events & (EPOLLIN | EPOLLOUT));
}

bool ep_engine_reads(struct esock_qp *qp)
{
	bool r;

	pthread_mutex_lock(&qp->eng_lock);
	r = qp->eng_reg && watch_in(qp);
	pthread_mutex_unlock(&qp->eng_lock);
	return r;
}

bool ep_engine_lazy_ok(void)
{
	if (atomic_load(&ep_restricted))
		return true;
	pthread_once(&started, engine_start);
	return !spin;
}

void (*ep_engine_add_gap)(struct esock_qp *qp);

/*
 * Under eng_lock, so that nobody changes the interest set between the ADD and
 * in_engine: once added, the engine may already read the QP (data waiting
 * behind the start frame), send, find the socket full and ask for EPOLLOUT;
 * that wish must wait for the ADD to be known, or it is dropped and the QP
 * never sends again (seen: a Read responder stalled for good).
 */
atomic_bool ep_restricted;

int ep_engine_add(struct esock_qp *qp)
{
	struct epoll_event ev = { .data.u32 = qp->num };
	int rc = 0;

	if (atomic_load(&ep_restricted))
		return 0; /* no engine: the application's calls drive its connections */
	pthread_once(&started, engine_start);
	if (epfd < 0)
		return -ENOSYS;
	pthread_mutex_lock(&qp->eng_lock);
	ev.events = events_of(qp);
	if (watched(qp, ev.events) && !engine_need_thread()) {
		rc = -ENOSYS;
	} else if (watched(qp, ev.events) && REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, qp->fd, &ev) < 0) {
		rc = -errno;
	} else {
		qp->eng_reg = watched(qp, ev.events);
		if (ep_engine_add_gap)
			ep_engine_add_gap(qp);
		atomic_store(&qp->in_engine, true);
	}
	pthread_mutex_unlock(&qp->eng_lock);
	return rc;
}

void ep_engine_del(struct esock_qp *qp)
{
	pthread_mutex_lock(&qp->eng_lock);
	if (atomic_exchange(&qp->in_engine, false) && qp->eng_reg)
		REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, qp->fd, NULL);
	qp->eng_reg = false;
	if (atomic_exchange(&qp->detached, false))
		atomic_fetch_sub(&ndetached, 1);
	pthread_mutex_unlock(&qp->eng_lock);
}

int ep_engine_move(struct esock_qp *qp, int nfd, bool drive)
{
	int rc = 0;

	ep_qp_quiesce(qp); /* nobody reads or writes the old descriptor meanwhile */
	pthread_mutex_lock(&qp->eng_lock);
	if (atomic_load(&qp->in_engine) && qp->eng_reg) {
		/* ADD first: an edge-triggered ADD reports what is already waiting. */
		struct epoll_event ev = { .events = events_of(qp), .data.u32 = qp->num };

		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, nfd, &ev) < 0)
			rc = -errno;
		else
			REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, qp->fd, NULL);
	}
	if (rc == 0) {
		qp->fd = nfd;
		ep_conn_move_fd(qp, nfd);
	}
	pthread_mutex_unlock(&qp->eng_lock);
	ep_qp_unquiesce(qp);
	if (rc == 0 && drive) /* wishes left while the token was held */
		ep_qp_progress(qp, EP_WANT_RX | EP_WANT_DRAIN | EP_WANT_TX);
	return rc;
}

/* Rewrites the QP's interest set (in, out of or within the epoll set); under eng_lock. */
static void modify(struct esock_qp *qp)
{
	struct epoll_event ev = { .events = events_of(qp), .data.u32 = qp->num };
	bool want = watched(qp, ev.events);
	int op = want ? (qp->eng_reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD) : EPOLL_CTL_DEL;

	if (!atomic_load(&qp->in_engine) || (!want && !qp->eng_reg))
		return;
	if (op == EPOLL_CTL_ADD && !engine_need_thread())
		log_error("[qp %u fd %d] engine: no thread to watch it", qp->num, qp->fd);
	else if (REAL(epoll_ctl)(epfd, op, qp->fd, &ev) < 0)
		log_error("[qp %u fd %d] engine: epoll_ctl %d: %s", qp->num, qp->fd, op, strerror(errno));
	else
		qp->eng_reg = want;
}

void ep_engine_refresh(struct esock_qp *qp)
{
	pthread_mutex_lock(&qp->eng_lock);
	modify(qp);
	pthread_mutex_unlock(&qp->eng_lock);
}

void ep_engine_want_out(struct esock_qp *qp, bool on)
{
	pthread_mutex_lock(&qp->eng_lock);
	qp->pollout = on;
	modify(qp);
	pthread_mutex_unlock(&qp->eng_lock);
}

void ep_engine_detach(struct esock_qp *qp)
{
	/* (A lazy QP past its hold: the engine does not watch its input anyway.) */
	if (atomic_load(&qp->detached) || !atomic_load(&qp->in_engine) ||
	    (qp->lazy && !lazy_watched(qp)))
		return;
	pthread_mutex_lock(&qp->eng_lock);
	if (!atomic_load(&qp->detached) && atomic_load(&qp->in_engine)) {
		atomic_store(&qp->detached, true);
		modify(qp);
		pthread_mutex_lock(&det_lock);
		push_u32(&det, &ndet, &capdet, qp->num); /* (without memory: taken back at its next wait) */
		pthread_mutex_unlock(&det_lock);
		/* The engine may sleep without a timeout: the first detached QP wakes it. */
		if (atomic_fetch_add(&ndetached, 1) == 0 && engine_need_thread())
			(void)!REAL(write)(doorbell, &(uint64_t){ 1 }, sizeof(uint64_t));
	}
	pthread_mutex_unlock(&qp->eng_lock);
}
