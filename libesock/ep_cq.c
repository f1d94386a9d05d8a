/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: a lock-free ring (QPs progressed by several threads
 * complete into one CQ, several threads may poll it), an eventfd written only
 * when somebody sleeps or asked for a notification (no syscall per
 * completion otherwise), and the waiting call that makes the bound QPs
 * progress in the caller's thread.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "libesock/ep.h"
#include "libesock/real.h"
#include "util/env.h"
#include "util/log.h"

#define WAIT_FDS 32 /* QPs a waiter drives and watches at once */

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ep_now_ms(void)
{
	return now_us() / 1000;
}

/* How long a waiter polls before it sleeps: $ESOCK_SPIN_US, default 50 µs. */
static int spin_us(void)
{
	static atomic_int v = -1;
	int s = atomic_load_explicit(&v, memory_order_relaxed);

	if (s < 0) {
		s = esock_env_int("ESOCK_SPIN_US", 50, 0, 1000000);
		atomic_store(&v, s);
	}
	return s;
}

ESOCK_EXPORT int esock_cq_create(int depth, struct esock_cq **cq)
{
	struct esock_cq *c;

	if (depth <= 0 || depth > (1 << 24) || !cq)
		return -EINVAL;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	if (ep_ring_init(&c->ring, (uint32_t)depth) < 0 ||
	    !(c->wc = calloc(c->ring.size, sizeof(*c->wc)))) {
		ep_ring_fini(&c->ring);
		free(c);
		return -ENOMEM;
	}
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0) {
		int e = errno;

		ep_ring_fini(&c->ring);
		free(c->wc);
		free(c);
		return -e;
	}
	pthread_mutex_init(&c->lock, NULL);
	*cq = c;
	return 0;
}

ESOCK_EXPORT int esock_cq_destroy(struct esock_cq *cq)
{
	if (!cq)
		return -EINVAL;
	if (atomic_load(&cq->refs))
		return -EBUSY;
	REAL(close)(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	ep_ring_fini(&cq->ring);
	free(cq->qps);
	free(cq->wc);
	free(cq);
	return 0;
}

static void kick_fd(int fd)
{
	uint64_t one = 1;

	(void)!REAL(write)(fd, &one, sizeof(one));
}

void ep_cq_push(struct esock_cq *cq, const struct esock_wc *wc, bool solicited)
{
	uint32_t pos;
	int armed;

	if (ep_ring_claim(&cq->ring, &pos)) {
		cq->wc[ep_ring_idx(&cq->ring, pos)] = *wc;
		ep_ring_publish(&cq->ring, pos);
	} else if (!atomic_exchange(&cq->overflow, true)) {
		/* A completion is lost: the CQ is too small for what was posted. */
		log_error("CQ %p overflowed (depth %u): completions lost", (void *)cq, cq->ring.size);
	}
	/* The publish must be visible before we look for sleepers (see esock_cq_wait). */
	atomic_thread_fence(memory_order_seq_cst);
	armed = atomic_load(&cq->armed);
	if (armed && (armed == 1 || solicited || wc->status != ESOCK_WC_SUCCESS) &&
	    atomic_compare_exchange_strong(&cq->armed, &armed, 0))
		kick_fd(cq->efd);
	else if (atomic_load(&cq->sleepers))
		kick_fd(cq->efd);
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
	    atomic_load(&cq->sleepers))
		kick_fd(cq->efd);
}

ESOCK_EXPORT int esock_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc)
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

ESOCK_EXPORT int esock_cq_fd(struct esock_cq *cq)
{
	return cq->efd;
}

ESOCK_EXPORT int esock_cq_arm(struct esock_cq *cq, bool solicited_only)
{
	uint64_t v;

	(void)!REAL(read)(cq->efd, &v, sizeof(v));
	atomic_store(&cq->armed, solicited_only ? 2 : 1);
	return ep_ring_count(&cq->ring) > 0;
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

/* Sleeps until a socket of |qps| is readable or a completion is kicked in. */
static int sleep_on(struct esock_cq *cq, struct esock_qp **qps, int m, int left)
{
	struct pollfd pfd[WAIT_FDS + 1];
	int nfd = 0, rc;

	for (int i = 0; i < m; i++) {
		int st = atomic_load(&qps[i]->state);

		/* A QP waiting for a receive buffer reads nothing: do not spin on it. */
		if (qps[i]->fd >= 0 && (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING) &&
		    !atomic_load(&qps[i]->rx_paused) && !atomic_load(&qps[i]->rx_eof)) {
			pfd[nfd].fd = qps[i]->fd;
			pfd[nfd].events = POLLIN;
			pfd[nfd++].revents = 0;
		}
	}
	pfd[nfd].fd = cq->efd;
	pfd[nfd].events = POLLIN;
	pfd[nfd].revents = 0;
	rc = REAL(poll)(pfd, (nfds_t)nfd + 1, left);
	if (pfd[nfd].revents & POLLIN) {
		uint64_t v;

		(void)!REAL(read)(cq->efd, &v, sizeof(v));
	}
	return rc < 0 ? -errno : rc;
}

/*
 * Drives every pinned QP once and lets go of the ones that are not connected
 * any more (nothing left to read; esock_qp_destroy may be waiting for the
 * reference).  Returns completions found, if any.
 */
static int progress_pinned(struct esock_cq *cq, struct esock_qp **qps, int *m, int n,
			   struct esock_wc *wc)
{
	for (int i = 0; i < *m; i++) {
		int st;

		ep_qp_progress(qps[i], EP_WANT_RX | EP_WANT_TX);
		st = atomic_load(&qps[i]->state);
		if (st != ESOCK_QPS_RTS && st != ESOCK_QPS_CLOSING) {
			unpin(qps + i, 1, ep_now_ms());
			qps[i--] = qps[--*m];
		}
	}
	return esock_cq_poll(cq, n, wc);
}

/*
 * The caller's thread does the receiving: the engine leaves the bound QPs'
 * input alone meanwhile (detached), so one message never wakes two threads.
 * First it polls for a while, yielding the CPU between rounds: on one CPU
 * the yield runs the peer at once, across CPUs the answer is caught without
 * a wake-up (~26 µs here).  Then it sleeps in poll() on the sockets and the
 * CQ's eventfd, reads what arrived, and returns at the first completion.
 */
ESOCK_EXPORT int esock_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms)
{
	struct esock_qp *qps[WAIT_FDS];
	int64_t t, end, spin_end;
	int m, got, rc;

	if ((got = esock_cq_poll(cq, n, wc)))
		return got;
	/* One clock read per round: a 64-octet round trip is only ~15 µs. */
	t = now_us();
	end = timeout_ms >= 0 ? t + (int64_t)timeout_ms * 1000 : INT64_MAX;
	spin_end = t + spin_us();
	m = pin_bound(cq, qps);
	for (int i = 0; i < m; i++)
		ep_engine_detach(qps[i]);
	/* Yield first: on one CPU the peer runs and answers before we look. */
	for (; t < spin_end && t < end; t = now_us()) {
		sched_yield();
		if ((got = progress_pinned(cq, qps, &m, n, wc)))
			goto out;
	}
	for (;;) {
		int left = -1;

		if (timeout_ms >= 0) {
			t = now_us();
			left = t >= end ? 0 : (int)((end - t + 999) / 1000);
		}
		/* A responder still waiting for the first FPDU fails at its deadline: wake for it. */
		for (int i = 0; i < m; i++)
			if (qps[i]->tx_hold && qps[i]->hold_until) {
				int64_t l = qps[i]->hold_until - now_us() / 1000 + 1;

				l = l < 0 ? 0 : l;
				if (left < 0 || l < left)
					left = (int)l;
			}
		atomic_fetch_add(&cq->sleepers, 1);
		if ((got = esock_cq_poll(cq, n, wc))) {
			atomic_fetch_sub(&cq->sleepers, 1);
			break;
		}
		rc = sleep_on(cq, qps, m, left);
		atomic_fetch_sub(&cq->sleepers, 1);
		t = now_us();
		if ((got = progress_pinned(cq, qps, &m, n, wc)))
			break;
		if (rc == -EINTR) {
			got = -EINTR;
			break;
		}
		if (rc == 0 && timeout_ms >= 0 && t >= end)
			break;
	}
out:
	unpin(qps, m, t / 1000);
	return got;
}
