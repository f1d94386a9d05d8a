/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: a lock-free ring (QPs progressed by several threads
 * complete into one CQ, several threads may poll it), notifications only
 * when somebody sleeps or asked for one (no syscall per completion
 * otherwise; who hears of them: ep.h), and the waiting call that makes the
 * bound QPs progress in the caller's thread.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "endpoint/ep_mem.h"
#include "endpoint/ep_spin.h"
#include "iwarp/backend.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "util/atfork.h"
#include "util/log.h"
#include "util/tls.h"

#define WAIT_FDS 32 /* QPs a waiter drives and watches at once */
int user_cq_create(int depth, struct esock_cq **cq)
{
	struct esock_cq *c;

	if (depth <= 0 || depth > (1 << 24) || !cq)
		return -EINVAL;
	if (!(c = ep_calloc(1, sizeof(*c))))
		return -ENOMEM;
	if (ep_ring_init(&c->ring, (uint32_t)depth) < 0 ||
	    !(c->wc = ep_calloc(c->ring.size, sizeof(*c->wc)))) {
		ep_ring_fini(&c->ring);
		ep_free(c);
		return -ENOMEM;
	}
	atomic_init(&c->efd, -1); /* made when asked for (esock_cq_fd) */
	ep_spin_window_init(&c->spin_us);
	pthread_mutex_init(&c->lock, NULL);
	c->be = &esock_user_backend;
	*cq = c;
	return 0;
}

int user_cq_destroy(struct esock_cq *cq)
{
	if (!cq)
		return -EINVAL;
	if (atomic_load(&cq->refs))
		return -EBUSY;
	if (atomic_load(&cq->efd) >= 0)
		esock_fd_close(atomic_load(&cq->efd));
	pthread_mutex_destroy(&cq->lock);
	ep_ring_fini(&cq->ring);
	free(cq->qps);
	free(cq->watch);
	free(cq->sleep_efd);
	ep_free(cq->wc);
	ep_free(cq);
	return 0;
}

static void kick_fd(int fd)
{
	uint64_t one = 1;

	(void)!REAL(write)(fd, &one, sizeof(one));
}

/* Tells everybody who listens (ep.h). */
static void notify(struct esock_cq *cq)
{
	int efd = atomic_load(&cq->efd);

	atomic_fetch_add_explicit(&cq->kicks, 1, memory_order_relaxed);
	if (efd >= 0) {
		kick_fd(efd);
		/* After the write: a reader that sees the flag finds the count (ep_cq_poll_begin). */
		atomic_store(&cq->efd_kicked, true);
	}
	pthread_mutex_lock(&cq->lock);
	for (int i = 0; i < cq->nwatch; i++)
		cq->watch[i].fn(cq->watch[i].arg, cq->watch[i].key);
	for (int i = 0; i < cq->nsleep; i++)
		kick_fd(cq->sleep_efd[i]);
	pthread_mutex_unlock(&cq->lock);
}

/*
 * Wake-ups after the token.  Completions made while this thread serves a QP
 * (ep_cq_hold_wakes .. ep_cq_wake_now, around the progress token) wake their
 * waiters once the token is let go, one kick per CQ for the whole turn.
 * Woken at once, a waiter on the same CPU runs before the holder lets go,
 * finds the token taken and its socket readable, and polls in a loop until
 * the scheduler runs the holder again (seen: runs of up to 5 ms, 7 % of a
 * one-CPU 64 KiB stream); and a batch of 16 completions cost 16 writes.
 */
#define HELD_MAX 4
static ESOCK_TLS unsigned hold_depth;
static ESOCK_TLS int nheld;
static ESOCK_TLS struct esock_cq *held[HELD_MAX];

static void wake(struct esock_cq *cq)
{
	if (hold_depth) {
		for (int i = 0; i < nheld; i++)
			if (held[i] == cq)
				return;
		if (nheld < HELD_MAX) {
			held[nheld++] = cq;
			return;
		}
	}
	notify(cq);
}

void ep_cq_hold_wakes(void)
{
	hold_depth++;
}

void ep_cq_wake_now(void)
{
	/* (The holder keeps its QP referenced until after this: its CQs stay.) */
	if (--hold_depth)
		return;
	while (nheld)
		notify(held[--nheld]);
}

/* Grows |*arr| (|*cap| entries of |size|) to hold one more.  0 or -ENOMEM. */
static int room(void **arr, int *cap, int n, size_t size)
{
	void *a;
	int nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 4;
	if (!(a = realloc(*arr, (size_t)nc * size)))
		return -ENOMEM;
	*arr = a;
	*cap = nc;
	return 0;
}

int ep_cq_watch(struct esock_cq *cq, void (*fn)(void *arg, int key), void *arg, int key)
{
	int rc;

	pthread_mutex_lock(&cq->lock);
	if ((rc = room((void **)&cq->watch, &cq->capwatch, cq->nwatch, sizeof(*cq->watch))) == 0)
		cq->watch[cq->nwatch++] = (struct ep_cq_watch){ fn, arg, key };
	pthread_mutex_unlock(&cq->lock);
	return rc;
}

void ep_cq_unwatch(struct esock_cq *cq, void *arg, int key)
{
	pthread_mutex_lock(&cq->lock);
	for (int i = 0; i < cq->nwatch; i++)
		if (cq->watch[i].arg == arg && cq->watch[i].key == key) {
			cq->watch[i] = cq->watch[--cq->nwatch];
			break;
		}
	pthread_mutex_unlock(&cq->lock);
}

/* Puts |wc| into the ring (or notes the overflow); then the publish is visible to all. */
static void publish(struct esock_cq *cq, const struct esock_wc *wc)
{
	uint32_t pos;

	if (ep_ring_claim(&cq->ring, &pos)) {
		cq->wc[ep_ring_idx(&cq->ring, pos)] = *wc;
		ep_ring_publish(&cq->ring, pos);
	} else if (!atomic_exchange(&cq->overflow, true)) {
		/* A completion is lost: the CQ is too small for what was posted. */
		log_error("CQ %p overflowed (depth %u): completions lost", (void *)cq, cq->ring.size);
	}
	/* The publish must be visible before we look for sleepers (see esock_cq_wait). */
	atomic_thread_fence(memory_order_seq_cst);
}

void ep_cq_push(struct esock_cq *cq, const struct esock_wc *wc, bool solicited)
{
	int armed;

	publish(cq, wc);
	armed = atomic_load(&cq->armed);
	if (armed && (armed == 1 || solicited || wc->status != ESOCK_WC_SUCCESS) &&
	    atomic_compare_exchange_strong(&cq->armed, &armed, 0))
		wake(cq);
	else if (atomic_load(&cq->sleepers) || atomic_load(&cq->pollers))
		wake(cq);
}

void ep_cq_push_quiet(struct esock_cq *cq, const struct esock_wc *wc)
{
	publish(cq, wc);
	if (atomic_load(&cq->sleepers))
		wake(cq);
}

/*
 * A QP changed state without a completion to show for it (it failed or was
 * half-closed with no receive posted): wake whoever waits on the CQ anyway,
 * so that they look at the QP.
 */
void ep_cq_kick(struct esock_cq *cq)
{
	int armed = atomic_load(&cq->armed);

	atomic_thread_fence(memory_order_seq_cst);
	if ((armed && atomic_compare_exchange_strong(&cq->armed, &armed, 0)) ||
	    atomic_load(&cq->sleepers) || atomic_load(&cq->pollers))
		wake(cq);
}

int user_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc)
{
	uint32_t pos;
	int got = 0;

	while (got < n && ep_ring_take(&cq->ring, &pos)) {
		wc[got++] = cq->wc[ep_ring_idx(&cq->ring, pos)];
		ep_ring_release(&cq->ring, pos);
	}
	/* Once drained, a CQ that lost completions says so (verbs: a CQ error event). */
	return got || !atomic_load_explicit(&cq->overflow, memory_order_relaxed) ? got : -EOVERFLOW;
}

int user_cq_fd(struct esock_cq *cq)
{
	int fd = atomic_load(&cq->efd), none = -1;

	if (fd >= 0)
		return fd;
	if (atomic_load(&ep_restricted))
		return -EPERM; /* no new descriptors in a sandbox (ep.h) */
	if ((fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -errno;
	esock_fd_own(fd);
	if (!atomic_compare_exchange_strong(&cq->efd, &none, fd)) { /* another thread was first */
		esock_fd_close(fd);
		fd = none;
	}
	return fd;
}

/* Empties the CQ's eventfd (|fd|): nothing written to it is waiting any more. */
static void efd_drain(struct esock_cq *cq, int fd)
{
	uint64_t v;

	atomic_store(&cq->efd_kicked, false);
	(void)!REAL(read)(fd, &v, sizeof(v));
}

bool ep_cq_arm(struct esock_cq *cq, bool solicited_only)
{
	int fd = atomic_load(&cq->efd);

	if (fd >= 0)
		efd_drain(cq, fd);
	atomic_store(&cq->armed, solicited_only ? 2 : 1);
	/* The arm must be visible before we look (ep_cq_push publishes, then looks at armed). */
	atomic_thread_fence(memory_order_seq_cst);
	return ep_ring_count(&cq->ring) > 0;
}

/*
 * A poll() emulation (sock_ready.c) sleeps on the eventfd while it counts as
 * a poller: every completion kicks it, as an arm's first would.  Unlike an
 * arm it ends with the sleep (ep_cq_poll_end), so the completions its own
 * thread makes after waking (it reads the socket) cost no eventfd write,
 * and the next sleep no read: the eventfd is read only when it was
 * written (efd_kicked) or poll said it was readable (|fired|).
 */
bool ep_cq_poll_begin(struct esock_cq *cq, bool fired)
{
	int fd = atomic_load(&cq->efd);

	atomic_fetch_add(&cq->pollers, 1);
	/* Counted before we look (ep_cq_push publishes, then looks at pollers). */
	atomic_thread_fence(memory_order_seq_cst);
	if (fd >= 0 && (atomic_load(&cq->efd_kicked) || fired))
		efd_drain(cq, fd);
	return ep_ring_count(&cq->ring) > 0;
}

void ep_cq_poll_end(struct esock_cq *cq)
{
	atomic_fetch_sub(&cq->pollers, 1);
}

int user_cq_arm(struct esock_cq *cq, bool solicited_only)
{
	int fd = user_cq_fd(cq); /* arming asks for a notification: its eventfd */

	if (fd < 0)
		return fd;
	return ep_cq_arm(cq, solicited_only);
}

int ep_cq_bind(struct esock_cq *cq, struct esock_qp *qp)
{
	int rc = 0;

	pthread_mutex_lock(&cq->lock);
	if (cq->nqps == cq->qcap) {
		int ncap = cq->qcap ? cq->qcap * 2 : 8;
		struct esock_qp **q = realloc(cq->qps, (size_t)ncap * sizeof(*q));

		if (!q)
			rc = -ENOMEM;
		else {
			cq->qps = q;
			cq->qcap = ncap;
		}
	}
	if (rc == 0) {
		cq->qps[cq->nqps++] = qp;
		atomic_fetch_add(&cq->refs, 1);
	}
	pthread_mutex_unlock(&cq->lock);
	return rc;
}

void ep_cq_unbind(struct esock_cq *cq, struct esock_qp *qp)
{
	pthread_mutex_lock(&cq->lock);
	for (int i = 0; i < cq->nqps; i++)
		if (cq->qps[i] == qp) {
			cq->qps[i] = cq->qps[--cq->nqps];
			atomic_fetch_sub(&cq->refs, 1);
			break;
		}
	pthread_mutex_unlock(&cq->lock);
}

/*
 * Pins up to WAIT_FDS bound QPs for a waiter: a reference keeps each alive
 * (not the CQ lock: progress completes into this very CQ), and "attended"
 * tells the engine that this thread reads them.  Returns how many.
 */
static int pin_bound(struct esock_cq *cq, struct esock_qp **qps)
{
	int m = 0;

	pthread_mutex_lock(&cq->lock);
	for (int i = 0; i < cq->nqps && m < WAIT_FDS; i++) {
		atomic_fetch_add(&cq->qps[i]->refs, 1);
		atomic_fetch_add(&cq->qps[i]->attended, 1);
		qps[m++] = cq->qps[i];
	}
	pthread_mutex_unlock(&cq->lock);
	return m;
}

/* |now_ms|: the waiter's last clock reading (it reads one per round anyway). */
static void unpin(struct esock_qp **qps, int m, int64_t now_ms)
{
	for (int i = 0; i < m; i++) {
		/* Ordered before the attended count drops by that locked decrement. */
		atomic_store_explicit(&qps[i]->left_ms, now_ms, memory_order_release);
		atomic_fetch_sub(&qps[i]->attended, 1);
		atomic_fetch_sub(&qps[i]->refs, 1);
	}
}

/*
 * The calling thread's eventfd for sleeping on CQs (closed when the thread
 * ends): one per thread, not one per CQ.
 */
static ESOCK_TLS int my_efd = -1;
static pthread_key_t efd_key;
static pthread_once_t efd_once = PTHREAD_ONCE_INIT;

static void efd_close(void *arg)
{
	int *fd = arg;

	if (*fd >= 0)
		esock_fd_close(*fd);
	*fd = -1;
}

/* A forked child's thread must not share its eventfd with the parent's (kicks would be stolen). */
static void efd_fork_child(void)
{
	efd_close(&my_efd);
}

static void efd_key_init(void)
{
	pthread_key_create(&efd_key, efd_close);
	esock_atfork(ESOCK_FORK_LEAVES, NULL, NULL, efd_fork_child);
}

static int thread_efd(void)
{
	/* (Restricted: no new eventfd; one made before still works, by read and write.) */
	if (my_efd < 0 && !atomic_load(&ep_restricted) &&
	    (my_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) >= 0) {
		esock_fd_own(my_efd);
		pthread_once(&efd_once, efd_key_init);
		pthread_setspecific(efd_key, &my_efd);
	}
	return my_efd;
}

/* Counts the caller as sleeping on |cq| (its eventfd kicked by every notification). */
static void sleeper_add(struct esock_cq *cq, int efd)
{
	pthread_mutex_lock(&cq->lock);
	if (efd >= 0 && room((void **)&cq->sleep_efd, &cq->capsleep, cq->nsleep, sizeof(int)) == 0)
		cq->sleep_efd[cq->nsleep++] = efd;
	pthread_mutex_unlock(&cq->lock);
	atomic_fetch_add(&cq->sleepers, 1);
}

static void sleeper_del(struct esock_cq *cq, int efd)
{
	atomic_fetch_sub(&cq->sleepers, 1);
	pthread_mutex_lock(&cq->lock);
	for (int i = 0; i < cq->nsleep; i++)
		if (cq->sleep_efd[i] == efd) {
			cq->sleep_efd[i] = cq->sleep_efd[--cq->nsleep];
			break;
		}
	pthread_mutex_unlock(&cq->lock);
}

/* Sleeps until a socket of |qps| is readable or a completion is kicked in. */
static int sleep_on(struct esock_cq *cq, struct esock_qp **qps, int m, int left, int efd)
{
	struct pollfd pfd[WAIT_FDS + 1];
	int nfd = 0, rc;

	for (int i = 0; i < m; i++) {
		int st = atomic_load(&qps[i]->state);

		/* A QP waiting for a receive buffer reads nothing: do not spin on it. */
		/* (Nor on one whose reader sleeps in its receive: that reader takes what comes.) */
		if (qps[i]->fd >= 0 && (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING) &&
		    !atomic_load(&qps[i]->rx_paused) && !atomic_load(&qps[i]->rx_eof) &&
		    !atomic_load(&qps[i]->rx_sleeper)) {
			pfd[nfd].fd = qps[i]->fd;
			/* No engine in a restricted process: the waiter drives its sends too. */
			pfd[nfd].events = POLLIN | (atomic_load(&ep_restricted) && qps[i]->pollout ? POLLOUT : 0);
			pfd[nfd++].revents = 0;
		}
	}
	(void)cq;
	pfd[nfd].fd = efd; /* (-1 without one: then the sockets and the timeout only) */
	pfd[nfd].events = POLLIN;
	pfd[nfd].revents = 0;
	if (left)
		ep_uncork_all(); /* what we wait for may need a corked RTR out first (ep.h) */
	/* (Without a descriptor: not even an empty entry; a sandbox may allow one.) */
	rc = REAL(poll)(pfd, (nfds_t)nfd + (efd >= 0), left < 0 && efd < 0 ? 10 : left);
	if (efd >= 0 && (pfd[nfd].revents & POLLIN)) {
		uint64_t v;

		(void)!REAL(read)(efd, &v, sizeof(v));
	}
	return rc < 0 ? -errno : rc;
}

/* A waiting reader's buffer (ep_cq_wait_recv): its QP's input goes there first. */
struct rx_into {
	struct esock_qp *qp;
	void *buf;
	size_t len;
	unsigned flags; /* EP_NOW_ONE, EP_NOW_SLEEP */
	size_t placed;
	uint32_t msgs;
};

/* The flags of a reader's look at its QP (ep_qp_recv_now, ep_qp_sleep_recv). */
static unsigned now_flags(const struct rx_into *into)
{
	return EP_NOW_FINISH | (into->flags & (EP_NOW_ONE | EP_NOW_STAY));
}

/*
 * Drives every pinned QP once and lets go of the ones that are not connected
 * any more (nothing left to read; esock_qp_destroy may be waiting for the
 * reference).  The reader's QP (|into|) is read into its buffer, unless
 * something stops that (the token is taken, completions wait): then as the
 * others.  Returns completions found, if any.
 */
static int progress_pinned(struct esock_cq *cq, struct esock_qp **qps, int *m, int n,
			   struct esock_wc *wc, struct rx_into *into)
{
	for (int i = 0; i < *m; i++) {
		unsigned want = EP_WANT_RX | EP_WANT_TX;
		int st;

		/*
		 * The reader's own QP is read only into its buffer (what does not
		 * fit goes to receives within that call).  Not when the call could
		 * not (another thread held the token, completions waited): read
		 * here, the next messages would go to receives, to be copied out
		 * after (a loaded machine: a third of a 64 KiB stream); the next
		 * round tries again.
		 */
		if (into && qps[i] == into->qp) {
			uint32_t msgs;
			ssize_t got = into->placed ? 0 : ep_qp_recv_now(qps[i], into->buf, into->len,
									now_flags(into), &msgs);

			want = EP_WANT_TX;
			if (got > 0) {
				into->placed = (size_t)got;
				into->msgs = msgs;
			}
		}
		ep_qp_progress(qps[i], want);
		st = atomic_load(&qps[i]->state);
		if (st != ESOCK_QPS_RTS && st != ESOCK_QPS_CLOSING) {
			unpin(qps + i, 1, ep_now_ms());
			qps[i--] = qps[--*m];
		}
	}
	return user_cq_poll(cq, n, wc);
}

/*
 * The reader sleeps in its socket's receive (ep_qp_sleep_recv), its only
 * pinned QP: what wakes it is what it waits for, read in the same call.
 * -EAGAIN when it cannot (then poll() as ever), -EINTR, else 0.
 */
static int sleep_in_recv(struct rx_into *into, int left)
{
	uint32_t msgs;
	ssize_t got;

	if (left)
		ep_uncork_all(); /* (as sleep_on) */
	got = ep_qp_sleep_recv(into->qp, into->buf, into->len, now_flags(into), &msgs);
	if (got == -EAGAIN || got == -EINTR)
		return (int)got;
	if (got > 0) {
		into->placed = (size_t)got;
		into->msgs = msgs;
	}
	return 0;
}

/* ep_qp_sleep_input, after what sleep_on does first (a corked RTR goes out). */
static int sleep_for_input(struct esock_cq *cq, struct esock_qp *qp, int left)
{
	int rc;

	if (left)
		ep_uncork_all();
	if ((rc = ep_qp_sleep_input(qp, cq)) != -EAGAIN)
		atomic_fetch_add_explicit(&cq->sleeps, 1, memory_order_relaxed);
	return rc;
}

/* Another thread holds the progress token of a pinned QP. */
static bool any_taken(struct esock_qp **qps, int m)
{
	for (int i = 0; i < m; i++)
		if (atomic_load_explicit(&qps[i]->busy, memory_order_relaxed))
			return true;
	return false;
}

/*
 * A call left whole messages in a QP's stage (EP_NOW_STAY): nothing in its
 * socket would wake a sleeper for them, so the wait takes them first.
 */
static bool any_staged(struct esock_qp **qps, int m)
{
	for (int i = 0; i < m; i++)
		if (atomic_load(&qps[i]->rx_staged)) /* (seq_cst: see rx_progress) */
			return true;
	return false;
}

/* A wait ends with completions, or with octets in the reader's buffer. */
static bool found(int got, const struct rx_into *into)
{
	return got || (into && into->placed);
}

/*
 * Whether a waiter should read its sockets once before it spins or sleeps.
 * A reader that comes back after the answer arrived (a client that writes
 * to many connections, then reads them in turn) finds its message there:
 * one read, where poll() then read is two system calls (plain TCP's
 * blocking read is one).  A ping-pong reader comes back before the answer:
 * the look is an EAGAIN for nothing.  So the CQ learns: a look that found
 * nothing skips the next 1, 3, 7, then 15 waits' looks; one that found
 * something makes the next wait look again.
 */
static bool look_first(struct esock_cq *cq)
{
	uint8_t k = atomic_load_explicit(&cq->look_skip, memory_order_relaxed);

	if (k == 0)
		return true;
	atomic_store_explicit(&cq->look_skip, (uint8_t)(k - 1), memory_order_relaxed);
	return false;
}

static void look_found(struct esock_cq *cq, bool found)
{
	uint8_t step = atomic_load_explicit(&cq->look_step, memory_order_relaxed);

	step = found ? 0 : (uint8_t)(step >= 15 ? 15 : step * 2 + 1);
	atomic_store_explicit(&cq->look_step, step, memory_order_relaxed);
	atomic_store_explicit(&cq->look_skip, step, memory_order_relaxed);
}

/*
 * The caller's thread does the receiving: the engine leaves the bound QPs'
 * input alone meanwhile (detached), so one message never wakes two threads.
 * First it polls for a while, yielding the CPU between rounds: on one CPU
 * the yield runs the peer at once, across CPUs the answer is caught without
 * a wake-up (~26 µs here).  Then it sleeps in poll() on the sockets and the
 * CQ's eventfd, reads what arrived, and returns at the first completion.
 */
static int cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms,
		   struct rx_into *into)
{
	struct esock_qp *qps[WAIT_FDS];
	int64_t t, t0, end, spin_end;
	int m, got, rc, efd, window;

	if ((got = user_cq_poll(cq, n, wc)))
		return got;
	/* One clock read per round: a 64-octet round trip is only ~15 µs. */
	t0 = t = ep_now_us();
	end = timeout_ms >= 0 ? t + (int64_t)timeout_ms * 1000 : INT64_MAX;
	spin_end = 0;
	m = pin_bound(cq, qps);
	for (int i = 0; i < m; i++)
		ep_engine_detach(qps[i]);
	if (m && (any_staged(qps, m) || look_first(cq))) {
		got = progress_pinned(cq, qps, &m, n, wc, into);
		look_found(cq, found(got, into));
		if (found(got, into))
			goto out; /* (no lesson for the spin: it was there before) */
	}
	/*
	 * Yield first: on one CPU the peer runs and answers before we look.
	 * For as long as this CQ's answers have shown to be worth it.
	 */
	window = ep_spin_window(&cq->spin_us);
	while (t < end && ep_spin_for(&spin_end, window)) {
		int small = 0;

		got = progress_pinned(cq, qps, &m, n, wc, into);
		for (int i = 0; i < got; i++) /* (messages the peer sent us, not our sends' ends) */
			small += wc[i].opcode == ESOCK_WC_RECV && wc[i].byte_len < EP_SPIN_SMALL;
		if (into && into->placed && into->placed < EP_SPIN_SMALL * into->msgs)
			small += (int)into->msgs;
		ep_spin_found(small);
		if (found(got, into))
			goto out; /* (caught spinning: the window stays as it is) */
		t = ep_now_us();
	}
	efd = thread_efd();
	for (;;) {
		int left = -1;

		if (timeout_ms >= 0) {
			t = ep_now_us();
			left = t >= end ? 0 : (int)((end - t + 999) / 1000);
		}
		/* A responder still waiting for the first FPDU fails at its deadline: wake for it. */
		for (int i = 0; i < m; i++)
			if (qps[i]->tx_hold && qps[i]->hold_until) {
				int64_t l = qps[i]->hold_until - ep_now_us() / 1000 + 1;

				l = l < 0 ? 0 : l;
				if (left < 0 || l < left)
					left = (int)l;
			}
		/*
		 * One QP whose input is all the wait is for: asleep in its
		 * socket's receive (a socket's reader, with its buffer; or a
		 * wait of the endpoint's API with time for a whole sleep).
		 */
		rc = -EAGAIN;
		if (m == 1 && into && (into->flags & EP_NOW_SLEEP) && qps[0] == into->qp)
			rc = sleep_in_recv(into, left);
		else if (m == 1 && !into && (left < 0 || left >= EP_SLEEP_INPUT_MS))
			rc = sleep_for_input(cq, qps[0], left);
		if (rc != -EAGAIN) {
			t = ep_now_us();
			got = user_cq_poll(cq, n, wc);
			if (found(got, into))
				break;
			if (rc == -EINTR) {
				got = -EINTR;
				break;
			}
			if (timeout_ms >= 0 && t >= end)
				break;
			continue;
		}
		sleeper_add(cq, efd);
		if ((got = user_cq_poll(cq, n, wc)) || any_staged(qps, m)) {
			sleeper_del(cq, efd);
			if (got)
				break;
			/* (A read in another thread left messages in a stage: take them.) */
			got = progress_pinned(cq, qps, &m, n, wc, into);
			if (found(got, into) || (timeout_ms >= 0 && ep_now_us() >= end))
				break;
			continue;
		}
		atomic_fetch_add_explicit(&cq->sleeps, 1, memory_order_relaxed);
		rc = sleep_on(cq, qps, m, left, efd);
		sleeper_del(cq, efd);
		t = ep_now_us();
		got = progress_pinned(cq, qps, &m, n, wc, into);
		if (found(got, into))
			break;
		if (rc == -EINTR) {
			got = -EINTR;
			break;
		}
		if (rc == 0 && timeout_ms >= 0 && t >= end)
			break;
		/*
		 * Input there, but another thread holds the QP's token: it serves
		 * our wish when it lets go.  If it was put off this CPU holding
		 * it, poll() says ready again at once: let it run first.
		 */
		if (rc > 0 && any_taken(qps, m))
			sched_yield();
	}
	/* Slept: for an answer, or for nothing longer than the spin (not a signal's end). */
	if (got >= 0 && (found(got, into) || t - t0 > window))
		ep_spin_learn(&cq->spin_us, found(got, into) ? t - t0 : INT64_MAX);
out:
	unpin(qps, m, t / 1000);
	return got;
}

int user_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms)
{
	return cq_wait(cq, n, wc, timeout_ms, NULL);
}

int ep_cq_wait_recv(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms,
		    struct esock_qp *qp, void *buf, size_t len, unsigned flags, size_t *placed,
		    uint32_t *msgs)
{
	struct rx_into into = { .qp = qp, .buf = buf, .len = len, .flags = flags };
	int got = cq_wait(cq, n, wc, timeout_ms, len ? &into : NULL);

	*placed = into.placed;
	*msgs = into.msgs;
	return got;
}
