/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: creation, the work-request rings, the progress token (a
 * combining handoff: whoever holds it does everybody's pending work), in-order
 * send completions, the error state and flushing (every outstanding work
 * request completes with an error status, RFC 5040 §6.3 / verbs semantics).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "endpoint/ep_mem.h"
#include "endpoint/ep_ops.h"
#include "iwarp/backend.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "util/log.h"
#include "util/tls.h"

static void qp_free(struct esock_qp *qp)
{
	ep_ring_fini(&qp->sqr);
	ep_ring_fini(&qp->rqr);
	ep_free(qp->sq);
	ep_free(qp->rq);
	free(qp->stage);
	if (qp->txw) /* left with unwritten octets by a failure */
		ep_batch_reset(&qp->txw->batch); /* (its spill) */
	free(qp->txw);
	ep_free(qp->orq);
	ep_free(qp->irq);
	ep_free(qp);
}

int user_qp_create(const struct esock_qp_attr *a, struct esock_qp **out)
{
	struct esock_qp *qp;
	uint32_t sqd, rqd;

	if (!a || !out || !a->pd || !a->send_cq || !a->recv_cq || a->max_sge > EP_SGE_MAX ||
	    a->max_recv_sge > EP_SGE_MAX)
		return -EINVAL;
	sqd = a->sq_depth ? a->sq_depth : EP_DEPTH_DEFAULT;
	rqd = a->rq_depth ? a->rq_depth : EP_DEPTH_DEFAULT;
	if (sqd > (1u << 20) || rqd > (1u << 20))
		return -EINVAL;
	if (!(qp = ep_calloc(1, sizeof(*qp))))
		return -ENOMEM;
	qp->be = &esock_user_backend;
	qp->max_sge = a->max_sge ? a->max_sge : 4;
	qp->max_recv_sge = a->max_recv_sge ? a->max_recv_sge : qp->max_sge;
	qp->sq_stride = (uint32_t)(sizeof(struct ep_sqe) + qp->max_sge * sizeof(struct esock_sge));
	qp->rq_stride = (uint32_t)(sizeof(struct ep_rqe) + qp->max_recv_sge * sizeof(struct esock_sge));
	if (ep_ring_init(&qp->sqr, sqd) < 0 || ep_ring_init(&qp->rqr, rqd) < 0 ||
	    !(qp->sq = ep_calloc(qp->sqr.size, qp->sq_stride)) ||
	    !(qp->rq = ep_calloc(qp->rqr.size, qp->rq_stride)) || ep_qpn_alloc(qp) < 0) {
		qp_free(qp);
		return -ENOMEM;
	}
	qp->pd = a->pd;
	qp->scq = a->send_cq;
	qp->rcq = a->recv_cq;
	qp->sig_all = a->sq_sig_all;
	qp->fd = -1;
	pthread_mutex_init(&qp->eng_lock, NULL);
	atomic_store(&qp->state, ESOCK_QPS_IDLE);
	atomic_fetch_add(&qp->pd->refs, 1);
	ep_cq_bind(qp->scq, qp);
	if (qp->rcq != qp->scq)
		ep_cq_bind(qp->rcq, qp);
	*out = qp;
	return 0;
}

int user_qp_destroy(struct esock_qp *qp)
{
	if (!qp)
		return -EINVAL;
	ep_engine_del(qp);
	ep_cq_unbind(qp->scq, qp);
	if (qp->rcq != qp->scq)
		ep_cq_unbind(qp->rcq, qp);
	ep_qpn_free(qp);
	/*
	 * A thread may still sleep in esock_cq_wait on this QP's socket: shutting
	 * the socket down wakes it (POLLHUP), so waiting out its reference and
	 * the engine's cannot hang.
	 */
	/* (Failed: ep_qp_fail shut the socket down already.) */
	if (qp->fd >= 0 && atomic_load(&qp->state) != ESOCK_QPS_ERROR) {
		struct linger l = { 0 };
		socklen_t ll = sizeof(l);

		/*
		 * The owner asked for an abort (SO_LINGER {1, 0}: the close resets):
		 * SHUT_RD wakes the sleepers without the FIN SHUT_RDWR would send
		 * before the reset.
		 */
		bool abort = qp->linger_known ? qp->linger_abort :
			     ep_getsockopt(qp->fd, SOL_SOCKET, SO_LINGER, &l, &ll) == 0 &&
				     l.l_onoff && l.l_linger == 0;

		REAL(shutdown)(qp->fd, abort ? SHUT_RD : SHUT_RDWR);
	}
	while (atomic_load(&qp->refs) || atomic_load(&qp->busy))
		sched_yield();
	if (qp->fd >= 0 && !qp->fd_borrowed)
		esock_fd_close(qp->fd);
	free(qp->connecting); /* an exchange left half-way (its socket is the caller's) */
	atomic_fetch_sub(&qp->pd->refs, 1);
	pthread_mutex_destroy(&qp->eng_lock);
	qp_free(qp);
	return 0;
}

enum esock_qp_state user_qp_state(const struct esock_qp *qp)
{
	return (enum esock_qp_state)atomic_load(&qp->state);
}

uint32_t user_qp_num(const struct esock_qp *qp)
{
	return qp->num;
}

int user_qp_conn_info(const struct esock_qp *qp, struct esock_conn_info *info)
{
	if (!qp->info_valid)
		return -ENOTCONN;
	*info = qp->info;
	if (!qp->addrs_known && qp->fd >= 0)
		ep_sockaddrs(qp->fd, info); /* (asked now: ep_qp_addrs) */
	return 0;
}

int user_qp_last_error(const struct esock_qp *qp, struct esock_qp_error *e)
{
	if (!qp->has_err)
		return -ENOENT;
	*e = qp->err;
	return 0;
}

/*
 * The progress token.  Work is left in qp->want; the loop re-checks after
 * letting go, so a wish made while another thread held the token is never
 * lost, and nobody ever sleeps on the token.  The engine's wishes wait apart
 * (want_eng): once it let go of the QP (a fork suspended it, or it is being
 * torn down) they are void, an application thread's left beside them not.
 */
/* Quiesces this thread holds: its own wishes wait for it, they cannot wait it out. */
static ESOCK_TLS unsigned quiescing;

void ep_qp_fork_child_thread(void)
{
	quiescing = 0; /* (the child's copies were let go: ep_engine.c's fork handler) */
}

/* Takes the token if nobody holds it (then token_release lets go). */
static bool token_try(struct esock_qp *qp)
{
	bool f = false;

	return atomic_compare_exchange_strong(&qp->busy, &f, true);
}

/* The token holder's work for the wishes |w|. */
static void serve(struct esock_qp *qp, unsigned w)
{
	int st = atomic_load(&qp->state);

	if (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING) {
		if (w & EP_WANT_RX)
			ep_rx_progress(qp, w & EP_WANT_DRAIN);
		if (w & (EP_WANT_TX | EP_WANT_RX))
			ep_tx_progress(qp);
	}
	if (atomic_load(&qp->state) == ESOCK_QPS_ERROR)
		ep_qp_flush(qp);
	else if (atomic_load(&qp->rx_eof))
		ep_qp_flush_rq(qp); /* half-closed: receives posted since end at once */
}

void ep_qp_progress(struct esock_qp *qp, unsigned want)
{
	if (want & EP_WANT_ENGINE)
		atomic_fetch_or(&qp->want_eng, want & ~(unsigned)EP_WANT_ENGINE);
	else
		atomic_fetch_or(&qp->want, want);
	while (atomic_load(&qp->want) || atomic_load(&qp->want_eng)) {
		if (!token_try(qp)) {
			/*
			 * A quiesce (a fork, a move, an exec's snapshot) serves no
			 * wish: an application thread waits it out and goes on itself
			 * (seen: a send posted during a fork stayed unsent while its
			 * thread slept in poll for the echo of it).  The engine's
			 * wishes need no wait: they are void after a fork anyway.
			 */
			if (!atomic_load(&qp->quiesced) || (want & EP_WANT_ENGINE) || quiescing)
				return; /* the holder will see our wish (or it is this thread) */
			while (atomic_load(&qp->quiesced))
				nanosleep(&(struct timespec){ 0, 20000 }, NULL);
			continue;
		}
		unsigned w = atomic_exchange(&qp->want, 0), e = atomic_exchange(&qp->want_eng, 0);

		/*
		 * An event the engine took before it let go of the QP is not
		 * served: in a pre-fork server the socket's octets belong to the
		 * child now.  (The engine's DRAIN only ever comes with its RX.)
		 */
		if (atomic_load(&qp->in_engine))
			w |= e;
		else
			w |= e & ~(unsigned)(EP_WANT_RX | EP_WANT_TX | EP_WANT_DRAIN);

		ep_cq_hold_wakes();
		serve(qp, w);
		atomic_store(&qp->busy, false);
		ep_cq_wake_now();
	}
}

/* Lets go of the token taken without ep_qp_progress; wishes left meanwhile are served. */
static void token_release(struct esock_qp *qp)
{
	atomic_store(&qp->busy, false);
	if (atomic_load(&qp->want) || atomic_load(&qp->want_eng))
		ep_qp_progress(qp, 0);
}

/*
 * Lets the token go after a turn that held its completions' wake-ups
 * (ep_cq_hold_wakes), then wakes their waiters once: a waiter woken before,
 * on this CPU, would find the token still taken.
 */
static void token_release_waking(struct esock_qp *qp)
{
	token_release(qp);
	ep_cq_wake_now();
}

/*
 * Takes the token, waiting a little for a holder that is at work (a send,
 * the engine's look); never for a quiesce, which may last (a fork, an exec).
 */
static bool token_wait(struct esock_qp *qp)
{
	for (int i = 0; i < 1000; i++) {
		if (token_try(qp))
			return true;
		if (atomic_load(&qp->quiesced))
			return false;
		sched_yield();
	}
	return false;
}

/*
 * A message is open in the caller's buffer (some of its FPDUs came, not
 * all): its writer is sending the rest now, as one write on its side, so
 * the reader yields (ep_spin: on one CPU the writer runs, across CPUs the
 * rest lands in microseconds) and reads on, within the spin's bounds.
 */
static void finish_open(struct esock_qp *qp)
{
	int64_t spin_end = 0;

	while (qp->rxt.open && atomic_load(&qp->state) == ESOCK_QPS_RTS && ep_spin(&spin_end)) {
		serve(qp, EP_WANT_RX);
		/* (A long yield that let the writer end the message paid; one that did not, lost.) */
		ep_spin_found(qp->rxt.open ? 0 : EP_SPIN_PAID);
	}
}

/* ep_qp_recv_now's work, the token held. */
static ssize_t recv_into(struct esock_qp *qp, void *buf, size_t len, unsigned flags, uint32_t *msgs)
{
	int st = atomic_load(&qp->state);

	/* Completions not yet taken come first: the caller reads them, then calls again. */
	if ((st != ESOCK_QPS_RTS && st != ESOCK_QPS_CLOSING) || ep_cq_count(qp->rcq))
		return -EAGAIN;
	qp->rxt.buf = buf;
	qp->rxt.room = len;
	qp->rxt.promised = qp->rxt.filled = 0;
	qp->rxt.msgs = 0;
	qp->rxt.pooled = false;
	qp->rxt.one = flags & EP_NOW_ONE;
	qp->rxt.open = false;
	qp->rxt.on = len > 0;
	qp->rxt.in_call = true;
	qp->rxt.stay = flags & EP_NOW_STAY;
	serve(qp, EP_WANT_RX);
	/*
	 * (Still the call's: what comes behind the message it finishes may stay
	 * for the next call, ep_rx.c leave_for_next_call.  Outside it, that went
	 * to receives.)
	 */
	if (flags & EP_NOW_FINISH)
		finish_open(qp);
	qp->rxt.in_call = qp->rxt.stay = false;
	qp->rxt.on = false;
	ep_rx_lend_back(qp); /* (a message half-way in |buf|: moved to a posted receive) */
	*msgs = qp->rxt.msgs;
	return (ssize_t)qp->rxt.filled;
}

ssize_t ep_qp_recv_now(struct esock_qp *qp, void *buf, size_t len, unsigned flags, uint32_t *msgs)
{
	ssize_t n;

	*msgs = 0;
	if (!(flags & EP_NOW_WAIT ? token_wait(qp) : token_try(qp)))
		return -EAGAIN;
	ep_cq_hold_wakes();
	n = recv_into(qp, buf, len, flags, msgs);
	token_release_waking(qp);
	return n;
}

/* Running, no octets held, no FPDU half parsed, no completion waiting (token held). */
static bool rx_idle(struct esock_qp *qp)
{
	return atomic_load(&qp->state) == ESOCK_QPS_RTS && !qp->stage && esock_mpa_rx_idle(&qp->rx) &&
	       !ep_cq_count(qp->rcq);
}

/* Whether a thread may sleep in the socket's receive now, as far as input goes (token held). */
static bool rx_may_sleep(struct esock_qp *qp)
{
	return rx_idle(qp) && qp->fd >= 0 && !qp->tx_hold && !qp->no_sleep_recv &&
	       !qp->term_pending && !atomic_load(&qp->rx_paused) && !atomic_load(&qp->rx_eof) &&
	       !atomic_load(&ep_restricted);
}

/* The socket layer's reader (ep_qp_sleep_recv): its QP is lazy (the engine leaves it alone). */
static bool may_sleep(struct esock_qp *qp)
{
	return qp->lazy && rx_may_sleep(qp);
}

/*
 * With the token and an empty stage: takes the right to read, lets the token
 * go, sleeps in the socket's receive, and is back with the token and what
 * the read took in the stage.  The read's result.
 */
static ssize_t sleep_read(struct esock_qp *qp)
{
	size_t asked;
	ssize_t n;

	atomic_store_explicit(&qp->rx_sleeper, true, memory_order_release);
	token_release(qp); /* (senders go on meanwhile; nobody reads) */
	n = ep_rx_sleep_read(qp, &asked);
	/*
	 * A holder at work lets go soon.  A quiesce (fork, exec) did not wait
	 * for this sleep, which may last: what the read took is this process's,
	 * as a TCP read's would be, and is fed once the quiesce ends.
	 */
	while (!token_try(qp)) {
		if (atomic_load(&qp->quiesced))
			nanosleep(&(struct timespec){ 0, 20000 }, NULL);
		else
			sched_yield();
	}
	atomic_store_explicit(&qp->rx_sleeper, false, memory_order_release);
	ep_rx_sleep_took(qp, n, asked);
	return n;
}

ssize_t ep_qp_sleep_recv(struct esock_qp *qp, void *buf, size_t len, unsigned flags, uint32_t *msgs)
{
	ssize_t n, placed;

	*msgs = 0;
	if (!token_try(qp))
		return -EAGAIN;
	if (!may_sleep(qp) || !ep_rx_sleep_stage(qp)) {
		token_release(qp);
		return -EAGAIN;
	}
	n = sleep_read(qp);
	/* (The file is non-blocking after all: poll() from now on.  Else an SO_RCVTIMEO set meanwhile.) */
	if ((n == -EAGAIN || n == -EWOULDBLOCK) && (REAL(fcntl)(qp->fd, F_GETFL) & O_NONBLOCK))
		qp->no_sleep_recv = true;
	ep_cq_hold_wakes();
	placed = recv_into(qp, buf, len, flags, msgs);
	if (placed < 0)
		serve(qp, EP_WANT_RX); /* (completions wait: what came goes behind them) */
	token_release_waking(qp);
	if (placed > 0)
		return placed;
	return n == -EINTR ? -EINTR : n == -EAGAIN || n == -EWOULDBLOCK ? -ETIMEDOUT : 0;
}

/* A per-thread address: the thread's identity, without a system call. */
static ESOCK_TLS char thread_tag;

bool ep_qp_one_thread(struct esock_qp *qp)
{
	uintptr_t me = (uintptr_t)&thread_tag;
	uintptr_t was = atomic_load_explicit(&qp->user_thread, memory_order_relaxed);

	if (was == me)
		return true;
	if (was == 0 && atomic_compare_exchange_strong(&qp->user_thread, &was, me))
		return true;
	atomic_store_explicit(&qp->threads_many, true, memory_order_relaxed);
	return false;
}

/*
 * Nothing but input can complete work of |qp| on |cq| (token held): no send
 * work request or Read Response waits to go out or is half written, and the
 * receive side is idle and may take a message.  Sends that went out and
 * wait for their completion only wait for input too (a Read's Response).
 */
static bool only_input_completes(struct esock_qp *qp, const struct esock_cq *cq)
{
	return rx_may_sleep(qp) && qp->rcq == cq && !ep_ring_ready(&qp->sqr, qp->sq_tx) &&
	       !qp->txw && !qp->pollout && !qp->irq_n && !qp->rtr_pending &&
	       !(atomic_load(&qp->fin_wanted) && !atomic_load(&qp->fin_sent));
}

/*
 * The QP's own file blocking, its receive bounded (once per QP; token held):
 * the sleep ends at least every EP_SLEEP_INPUT_MS, for what it cannot hear
 * (a first send of another thread, a QP bound to the CQ meanwhile).
 */
static bool make_blocking(struct esock_qp *qp)
{
	struct timeval tv = { 0, EP_SLEEP_INPUT_MS * 1000 };
	int fl;

	if (atomic_load(&qp->fd_blocking))
		return true;
	if (REAL(setsockopt)(qp->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    (fl = REAL(fcntl)(qp->fd, F_GETFL)) < 0 || REAL(fcntl)(qp->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		qp->no_sleep_recv = true;
		return false;
	}
	atomic_store(&qp->fd_blocking, true);
	return true;
}

/*
 * A QP of the endpoint's API (its own file: not a socket layer's, whose
 * flags are the application's and whose reader has ep_qp_sleep_recv), used
 * by one thread only, in a wait with time for a whole sleep.  poll() on the
 * socket and the CQ's eventfd, then the read, is two system calls and two
 * wait queues per message where TCP's blocking read is one (the 64-octet
 * round trip on one CPU: 1.25-1.36x TCP with poll, docs/benchmarks.md).
 * What a receive cannot hear: a send of
 * another thread (its completion kicks the eventfd), a QP bound to the CQ
 * meanwhile, a local disconnect (it shuts the socket down: that wakes it).
 * The first of those marks the QP (threads_many) or the CQ (m > 1) and is
 * heard within EP_SLEEP_INPUT_MS; later waits poll.
 */
int ep_qp_sleep_input(struct esock_qp *qp, const struct esock_cq *cq)
{
	ssize_t n;

	if (!qp->fd_own || qp->fd_of_sock || qp->fd < 0 || atomic_load(&ep_restricted) ||
	    atomic_load_explicit(&qp->threads_many, memory_order_relaxed) || !ep_qp_one_thread(qp))
		return -EAGAIN;
	if (!token_try(qp))
		return -EAGAIN;
	if (!only_input_completes(qp, cq) || !make_blocking(qp) ||
	    !ep_rx_sleep_stage(qp)) {
		token_release(qp);
		return -EAGAIN;
	}
	n = sleep_read(qp);
	ep_cq_hold_wakes();
	serve(qp, EP_WANT_RX); /* (feeds the stage; answers a Read Request that came) */
	token_release_waking(qp);
	return n == -EINTR ? -EINTR : 0;
}

void ep_qp_nonblocking(struct esock_qp *qp)
{
	int fl;

	if (atomic_exchange(&qp->fd_blocking, false) && qp->fd >= 0 &&
	    (fl = REAL(fcntl)(qp->fd, F_GETFL)) >= 0)
		(void)REAL(fcntl)(qp->fd, F_SETFL, fl | O_NONBLOCK);
}

/*
 * The cache lines a message's read or write visits (the head, down to
 * info's flags; the MPA receive state; the DDP queue; the two cursors),
 * asked for all at once: over a thousand connections each is a miss, and
 * reached one after another by the code they cost a memory latency each;
 * asked for together they cost about one (docs/benchmarks.md).  A line
 * already cached costs next to nothing.
 */
void ep_qp_prefetch(const struct esock_qp *qp)
{
	static const size_t more[] = {
		offsetof(struct esock_qp, rx), offsetof(struct esock_qp, rx) + 64,
		offsetof(struct esock_qp, place), offsetof(struct esock_qp, txc),
		offsetof(struct esock_qp, rxc),
	};
	const char *p = (const char *)qp;

	for (size_t o = 0; o <= offsetof(struct esock_qp, info) + 8; o += 64)
		__builtin_prefetch(p + o);
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		__builtin_prefetch(p + more[i]);
}

bool ep_qp_rx_seen_empty(struct esock_qp *qp)
{
	bool yes;

	if (!token_try(qp))
		return false;
	yes = qp->rx_empty && rx_idle(qp);
	qp->rx_empty = false; /* (once: the next look asks the kernel) */
	token_release(qp);
	return yes;
}

bool ep_qp_rx_staged(const struct esock_qp *qp)
{
	return atomic_load(&qp->rx_staged); /* (seq_cst: a waiter's side of rx_progress's handshake) */
}

bool ep_qp_rx_untouched(struct esock_qp *qp)
{
	bool yes;

	if (!token_try(qp))
		return false;
	yes = rx_idle(qp) && qp->rq_next == qp->rq_done && !qp->info.markers_rx && !qp->tx_hold &&
	      !atomic_load(&qp->rx_paused) && !atomic_load(&qp->rx_eof);
	token_release(qp);
	return yes;
}

int ep_qp_send_now(struct esock_qp *qp, const struct iovec *iov, int iovcnt, size_t len)
{
	int rc;

	/* Taken (by the engine, a reader, a quiesce): the queued path serves it in turn. */
	if (!token_try(qp))
		return -EAGAIN;
	ep_cq_hold_wakes();
	rc = ep_tx_send_now(qp, iov, iovcnt, len);
	token_release_waking(qp);
	return rc;
}

void ep_qp_uncork(struct esock_qp *qp)
{
	int one = 1;

	/* Setting TCP_NODELAY pushes what TCP holds (Linux: tcp_push_pending_frames). */
	if (atomic_load(&qp->rtr_corked) && atomic_exchange(&qp->rtr_corked, false) && qp->fd >= 0)
		REAL(setsockopt)(qp->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void ep_qp_quiesce(struct esock_qp *qp)
{
	for (;;) {
		if (token_try(qp)) {
			atomic_store(&qp->quiesced, true);
			quiescing++;
			return;
		}
		sched_yield();
	}
}

void ep_qp_unquiesce(struct esock_qp *qp)
{
	if (quiescing)
		quiescing--;
	atomic_store(&qp->quiesced, false);
	atomic_store(&qp->busy, false);
}

static void push_sq_wc(struct esock_qp *qp, const struct ep_sqe *e)
{
	struct esock_wc wc = { .wr_id = e->wr_id, .status = e->status,
			       .opcode = ep_wr_op(e->opcode)->wc,
			       .byte_len = (uint32_t)e->len, .qp_num = qp->num };

	if (e->status == ESOCK_WC_SUCCESS && (e->flags & EP_SEND_QUIET) &&
	    !atomic_load(&qp->want_room))
		ep_cq_push_quiet(qp->scq, &wc);
	else if (e->status != ESOCK_WC_SUCCESS || qp->sig_all || (e->flags & ESOCK_SEND_SIGNALED))
		ep_cq_push(qp->scq, &wc, false);
}

/* Completes finished send WRs in posting order (token holder). */
void ep_qp_complete_sq(struct esock_qp *qp)
{
	while (qp->sq_done != qp->sq_tx) {
		struct ep_sqe *e = EP_SQE(qp, qp->sq_done);

		if (!e->done)
			break;
		push_sq_wc(qp, e);
		ep_ring_release(&qp->sqr, qp->sq_done++);
	}
}

/*
 * Every outstanding WR completes with an error (token holder, QP in error).
 * A WR still being written by its poster is flushed by the poster's own
 * progress call right after it publishes.
 */
void ep_qp_flush(struct esock_qp *qp)
{
	for (; ep_ring_ready(&qp->sqr, qp->sq_done); qp->sq_done++) {
		struct ep_sqe *e = EP_SQE(qp, qp->sq_done);

		if (!e->done)
			e->status = ESOCK_WC_WR_FLUSH_ERR;
		push_sq_wc(qp, e);
		ep_ring_release(&qp->sqr, qp->sq_done);
	}
	qp->sq_tx = qp->sq_done;
	ep_qp_flush_rq(qp);
	qp->orq_n = 0;
	qp->irq_n = 0;
}

/* Every posted receive completes with a flush error (token holder). */
void ep_qp_flush_rq(struct esock_qp *qp)
{
	for (; ep_ring_ready(&qp->rqr, qp->rq_done); qp->rq_done++) {
		struct esock_wc wc = { .wr_id = EP_RQE(qp, qp->rq_done)->wr_id,
				       .status = ESOCK_WC_WR_FLUSH_ERR, .opcode = ESOCK_WC_RECV,
				       .qp_num = qp->num };

		ep_cq_push(qp->rcq, &wc, false);
		ep_ring_release(&qp->rqr, qp->rq_done);
	}
	qp->rq_next = qp->rq_done;
}

/*
 * Puts the QP in error (token holder).  |t| is the reason (sent to the peer
 * in a Terminate when |send_term|); the oldest unfinished send WR completes
 * with |first_status|, the rest are flushed.
 */
void ep_qp_fail(struct esock_qp *qp, const struct esock_term *t, bool send_term, int err,
		enum esock_wc_status first_status)
{
	if (atomic_load(&qp->state) == ESOCK_QPS_ERROR)
		return;
	if (!qp->has_err) {
		qp->has_err = true;
		qp->err.sent = send_term;
		qp->err.err = err;
		if (t)
			qp->err.term = *t;
	}
	if (t && t->valid)
		log_info("[qp %u fd %d] error: %s (%s)", qp->num, qp->fd,
			 esock_term_str(t->layer, t->etype, t->ecode), send_term ? "sent" : "received");
	if (ep_ring_ready(&qp->sqr, qp->sq_done)) {
		struct ep_sqe *e = EP_SQE(qp, qp->sq_done);

		if (!e->done && first_status != ESOCK_WC_WR_FLUSH_ERR) {
			e->done = true;
			e->status = first_status;
		}
	}
	atomic_store(&qp->state, ESOCK_QPS_ERROR);
	if (qp->fd >= 0)
		REAL(shutdown)(qp->fd, SHUT_RDWR);
	ep_engine_del(qp);
	ep_qp_flush(qp);
	ep_cq_kick(qp->rcq);
	if (qp->scq != qp->rcq)
		ep_cq_kick(qp->scq);
}

int ep_qp_reads_init(struct esock_qp *qp)
{
	qp->orq_cap = qp->info.ord ? qp->info.ord : 1;
	qp->irq_cap = qp->info.ird ? qp->info.ird : 1;
	ep_free(qp->orq);
	ep_free(qp->irq);
	qp->orq = ep_calloc(qp->orq_cap, sizeof(*qp->orq));
	qp->irq = ep_calloc(qp->irq_cap, sizeof(*qp->irq));
	return qp->orq && qp->irq ? 0 : -ENOMEM;
}

/* ---- posting ---- */

/* !|keys|: the socket layer's own memory (EP_SEND_LOCAL), no key to look up. */
static int check_sges(struct esock_qp *qp, const struct esock_sge *sg, int n, uint32_t max,
		      unsigned need, bool keys, uint64_t *len)
{
	uint64_t total = 0;

	if (n < 0 || (uint32_t)n > max || (n && !sg))
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (keys && ep_mr_check_sge(qp->pd, &sg[i], need) < 0)
			return -EACCES;
		total += sg[i].length;
	}
	if (total > UINT32_MAX)
		return -EMSGSIZE;
	*len = total;
	return 0;
}

static int queue_send(struct esock_qp *qp, const struct esock_send_wr *wr)
{
	uint32_t pos;
	struct ep_sqe *e;
	uint64_t len;
	const struct ep_wr_op *op = ep_wr_op(wr->opcode);
	int rc;

	if (!op || (op->sge_max && wr->num_sge > op->sge_max))
		return -EINVAL;
	if ((rc = check_sges(qp, wr->sg_list, wr->num_sge, qp->max_sge, op->sge_access,
			      !(wr->send_flags & EP_SEND_LOCAL) || op->read, &len)) < 0)
		return rc;
	if (!ep_ring_claim(&qp->sqr, &pos))
		return -ENOMEM;
	e = EP_SQE(qp, pos);
	memset(e, 0, sizeof(*e));
	e->wr_id = wr->wr_id;
	e->opcode = wr->opcode;
	e->flags = wr->send_flags;
	e->inval_stag = wr->invalidate_stag;
	e->remote_addr = wr->remote_addr;
	e->rkey = wr->rkey;
	e->num_sge = wr->num_sge;
	if (wr->num_sge)
		memcpy(e->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(e->sge[0]));
	e->len = len;
	ep_ring_publish(&qp->sqr, pos);
	return 0;
}

int user_post_send(struct esock_qp *qp, struct esock_send_wr *wr,
				 struct esock_send_wr **bad_wr)
{
	int rc = 0, st = atomic_load(&qp->state);

	if (st == ESOCK_QPS_IDLE || st == ESOCK_QPS_CONNECTING) {
		if (bad_wr)
			*bad_wr = wr;
		return -ENOTCONN;
	}
	(void)ep_qp_one_thread(qp); /* (ep_qp_sleep_input: a second thread's sends mark it) */
	for (; wr; wr = wr->next)
		if ((rc = queue_send(qp, wr)) < 0)
			break;
	if (rc < 0 && bad_wr)
		*bad_wr = wr;
	/* Send inline: the calling thread puts its FPDUs on the wire itself. */
	ep_qp_progress(qp, EP_WANT_TX);
	return rc;
}

static int queue_recv(struct esock_qp *qp, const struct esock_recv_wr *wr)
{
	uint32_t pos;
	struct ep_rqe *r;
	uint64_t len;
	int rc;

	if ((rc = check_sges(qp, wr->sg_list, wr->num_sge, qp->max_recv_sge, ESOCK_ACCESS_LOCAL_WRITE,
			      true, &len)) < 0)
		return rc;
	if (!ep_ring_claim(&qp->rqr, &pos))
		return -ENOMEM;
	r = EP_RQE(qp, pos);
	r->wr_id = wr->wr_id;
	r->num_sge = wr->num_sge;
	if (wr->num_sge)
		memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(r->sge[0]));
	r->len = len;
	ep_ring_publish(&qp->rqr, pos);
	return 0;
}

/* Receives were posted: flushed at once on a dead QP, or a Send that waited for one goes on. */
static void recv_posted(struct esock_qp *qp)
{
	if (atomic_load(&qp->state) == ESOCK_QPS_ERROR || atomic_load(&qp->rx_eof))
		ep_qp_progress(qp, EP_WANT_FLUSH);
	else if (atomic_load(&qp->rx_paused)) /* a Send was waiting for this buffer */
		ep_qp_progress(qp, EP_WANT_RX | EP_WANT_DRAIN);
}

int user_post_recv(struct esock_qp *qp, struct esock_recv_wr *wr,
				 struct esock_recv_wr **bad_wr)
{
	int rc = 0;

	for (; wr; wr = wr->next)
		if ((rc = queue_recv(qp, wr)) < 0)
			break;
	if (rc < 0 && bad_wr)
		*bad_wr = wr;
	recv_posted(qp);
	return rc;
}

int ep_qp_post_recv_local(struct esock_qp *qp, void *addr, uint32_t len, uint64_t wr_id)
{
	uint32_t pos;
	struct ep_rqe *r;

	if (qp->max_recv_sge < 1 || !ep_ring_claim(&qp->rqr, &pos))
		return -ENOMEM;
	r = EP_RQE(qp, pos);
	r->wr_id = wr_id;
	r->num_sge = 1;
	r->sge[0] = (struct esock_sge){ .addr = (uintptr_t)addr, .length = len };
	r->len = len;
	ep_ring_publish(&qp->rqr, pos);
	recv_posted(qp);
	return 0;
}

void ep_qp_close_send(struct esock_qp *qp)
{
	atomic_store(&qp->fin_wanted, true);
	ep_qp_progress(qp, EP_WANT_TX);
}

bool ep_qp_send_pending(const struct esock_qp *qp)
{
	return qp->pollout || (atomic_load(&qp->fin_wanted) && !atomic_load(&qp->fin_sent));
}

int user_qp_disconnect(struct esock_qp *qp)
{
	int st = atomic_load(&qp->state);

	if (st != ESOCK_QPS_RTS)
		return st == ESOCK_QPS_IDLE ? -ENOTCONN : 0;
	atomic_store(&qp->state, ESOCK_QPS_CLOSING);
	ep_qp_progress(qp, EP_WANT_TX);
	return 0;
}
