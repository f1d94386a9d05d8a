/* SPDX-License-Identifier: MIT */
/*
 * A DDPMODE socket's completions (see sock.h): taken from its CQ under its
 * lock (sock_drain); a thread that must wait lets go of the lock and drives
 * the QP itself in esock_cq_wait, in slices, so that close() and other
 * threads' completions are noticed.  Also what every data call checks
 * first (sock_usable) and the resumption of a connection after a fork.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include <esock/rdmap.h>
#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_stat.h"
#include "libesock/sock_vb.h"
#include "util/log.h"

#define WAIT_SLICE_MS 100

/* The connection ended: decide between EOF and an error, once. */
static void ended(struct esock_sock *s, const struct esock_wc *wc)
{
	struct esock_qp_error e;
	struct esock_sock_error *le = &s->last_error;

	if (s->eof || s->err)
		return;
	if (s->qp && esock_qp_last_error(s->qp, &e) == 0) {
		le->term_sent = e.sent;
		if (e.term.valid) {
			le->layer = e.term.layer;
			le->etype = e.term.etype;
			le->ecode = e.term.ecode;
		}
		/*
		 * A FIN between FPDUs and nothing else is the peer's close: EOF, as
		 * on TCP.  A FIN inside an FPDU (a message cut short) or a reset is
		 * ECONNRESET: a truncated transfer must not look complete.
		 */
		if (!e.sent && e.term.layer == ESOCK_TERM_LAYER_LLP &&
		    e.term.ecode == ESOCK_TERM_LLP_CONN_LOST && e.err == -ESHUTDOWN) {
			s->eof = true;
			snprintf(le->reason, sizeof(le->reason), "closed by the peer");
			return;
		}
		snprintf(le->reason, sizeof(le->reason), "%s: %s (%s)", esock_term_layer_name(e.term.layer),
			 esock_term_etype_name(e.term.layer, e.term.etype), e.sent ? "sent" : "received");
		s->stats->terminates += e.term.valid;
		if (s->slot && e.term.valid && e.term.layer == ESOCK_TERM_LAYER_LLP &&
		    e.term.ecode == ESOCK_TERM_LLP_CRC)
			s->slot->crc_errors++;
	} else if (wc->status == ESOCK_WC_WR_FLUSH_ERR) {
		s->eof = true; /* our own disconnect */
		return;
	} else {
		snprintf(le->reason, sizeof(le->reason), "%s", esock_wc_status_str(wc->status));
	}
	s->err = ECONNRESET;
	le->err = ECONNRESET;
	log_warn("fd %d: connection reset: %s", s->fd, le->reason);
}

void sock_handle_wc(struct esock_sock *s, const struct esock_wc *wc)
{
	uint64_t kind = SOCK_WR_KIND(wc->wr_id);
	uint32_t idx = (uint32_t)wc->wr_id;

	switch (kind) {
	case SOCK_WR_RECV:
		if (wc->status != ESOCK_WC_SUCCESS) {
			ended(s, wc);
			break;
		}
		if (wc->byte_len == 0 && !s->o.msgmode) { /* nothing to read: reuse it */
			sock_pool_return(s, idx, false);
			break;
		}
		sock_ring_push(s, idx, wc->byte_len);
		break;
	case SOCK_WR_SLOT:
	case SOCK_WR_DIRECT:
		if (kind == SOCK_WR_SLOT)
			sock_slot_done(s, idx);
		else
			s->direct_done++;
		s->inflight--;
		if (wc->status != ESOCK_WC_SUCCESS) {
			s->tx_failed = true;
			ended(s, wc);
		}
		break;
	default:
		sock_api_event(s, wc);
	}
}

void sock_pull(struct esock_sock *s)
{
	struct esock_qp *qp = s->qp;

	if (qp && ep_qp_lazy(qp) && !s->suspended) {
		int st = esock_qp_state(qp);

		s->rx_hint = false; /* (what epoll left in the socket is read now) */
		if (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING)
			ep_qp_progress(qp, EP_WANT_RX);
	}
	sock_drain(s);
}

/* Completions were lost (a bug: the socket bounds what it posts): nobody may wait for one. */
static void cq_overflowed(struct esock_sock *s)
{
	if (s->cq_lost)
		return;
	s->cq_lost = true;
	if (!s->err)
		s->err = EIO;
	log_error("fd %d: completion queue overflow", s->fd);
}

/* Handles every completion in the CQ; the last poll's result (0, or -EOVERFLOW). */
static int take_all(struct esock_sock *s)
{
	struct esock_wc wc[32];
	int n;

	while ((n = esock_cq_poll(s->cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++)
			sock_handle_wc(s, &wc[i]);
	return n;
}

void sock_drain(struct esock_sock *s)
{
	int n = 0;

	if (!s->cq) {
		if (s->verbs)
			sock_vb_drain(s); /* (its CQ is the verbs state's) */
		return;
	}
	/* (Called several times per message, mostly with nothing to take: one look at the ring.) */
	if (!ep_cq_quiet(s->cq))
		n = take_all(s);
	/*
	 * The QP may end with no receive posted (all consumed, waiting to be
	 * reposted): no flush completion then tells us.  Its data completions
	 * all came before the state changed, so the end can be taken now.
	 */
	if (!s->eof && !s->err && s->qp && ep_qp_input_ended(s->qp)) {
		struct esock_wc end = { .status = ESOCK_WC_WR_FLUSH_ERR };

		n = take_all(s); /* what came before the change */
		ended(s, &end);
	}
	if (n == -EOVERFLOW)
		cq_overflowed(s);
}

/*
 * Waits (lock held on entry and exit) up to one slice for completions,
 * driving the QP in this thread; with a reader's buffer (|buf|, |len|
 * octets), its input is read there while it waits (*placed octets, *msgs
 * messages).  Returns 0, -EINTR, or -EBADF when the socket was closed
 * meanwhile (its QP is gone: touch nothing but the lock).
 */
static int wait_slice(struct esock_sock *s, int64_t end, void *buf, size_t len, unsigned flags,
		      size_t *placed, uint32_t *msgs)
{
	struct esock_wc wc[32];
	int n, slice = s->waiters ? 10 : WAIT_SLICE_MS; /* others may take ours */

	if (end >= 0 && end - ep_now_ms() < slice) /* SO_RCVTIMEO / SO_SNDTIMEO */
		slice = end - ep_now_ms() > 0 ? (int)(end - ep_now_ms()) : 0;
	s->waiters++;
	pthread_mutex_unlock(&s->lock);
	if (len)
		n = ep_cq_wait_recv(s->cq, 32, wc, slice, s->qp, buf, len, flags, placed, msgs);
	else
		n = esock_cq_wait(s->cq, 32, wc, slice);
	pthread_mutex_lock(&s->lock);
	s->waiters--;
	if (atomic_load(&s->closing) || !s->qp)
		return -EBADF;
	for (int i = 0; i < n; i++)
		sock_handle_wc(s, &wc[i]);
	if (n == -EOVERFLOW)
		cq_overflowed(s);
	return n == -EINTR ? -EINTR : 0;
}

int sock_wait_some(struct esock_sock *s, int64_t end)
{
	return wait_slice(s, end, NULL, 0, 0, NULL, NULL);
}

int sock_wait_recv(struct esock_sock *s, int64_t end, void *buf, size_t len, size_t *placed,
		   uint32_t *msgs)
{
	/*
	 * A blocking file with no SO_RCVTIMEO, whose connection no other
	 * process holds: the reader may sleep in the socket's own receive
	 * (ep_qp_sleep_recv), as TCP's reader does, until input comes or the
	 * connection ends.  (Held by others after a fork, the last close here
	 * could not end the connection to wake it: sock_teardown.)
	 */
	unsigned flags = (s->o.msgmode ? EP_NOW_ONE : 0) |
			 (!s->nonblock && s->rcvtimeo_ms == 0 && !s->share ? EP_NOW_SLEEP : 0) |
			 (sock_may_stay(s) ? EP_NOW_STAY : 0);

	*placed = 0;
	*msgs = 0;
	return wait_slice(s, end, buf, len, flags, placed, msgs);
}

int sock_resume(struct esock_sock *s)
{
	int rc;

	if (!s->suspended)
		return 0;
	/* Another process may have gone on with it since the fork (sock_share.c). */
	if ((rc = sock_share_claim(s)) < 0) {
		if (rc != -EBUSY)
			s->err = -rc; /* its state is gone for good */
		return rc;
	}
	s->suspended = false;
	if (s->qp && ep_qp_fd(s->qp) >= 0) {
		int st = esock_qp_state(s->qp);

		/* (No engine, as in a sandbox: the callers drive it.) */
		if (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING)
			(void)ep_engine_add(s->qp);
	}
	return 0;
}

/* sock_usable(): the connect fell back to plain TCP while the call waited for it. */
#define SOCK_FELL_BACK 1

int sock_usable(struct esock_sock *s)
{
	int rc;

	if (atomic_load(&s->closing))
		return -EBADF;
	switch (s->st) {
	case SOCK_CONNECTED:
		if (s->suspended && (rc = sock_resume(s)) < 0)
			return rc;
		if (s->qp)
			ep_qp_serve(s->qp);
		return 0;
	case SOCK_TCP_CONNECTING:
	case SOCK_MPA_CONNECTING:
		/* TCP, then MPA; a non-blocking socket (the file's flag) gets EAGAIN until both are done. */
		rc = sock_connect_progress(s, REAL(fcntl)(s->fd, F_GETFL) & O_NONBLOCK ? 0 : -1);
		return rc == 0 && s->st == SOCK_PLAIN ? SOCK_FELL_BACK : rc;
	case SOCK_FAILED:
		return s->err ? -s->err : -ENOTCONN;
	default:
		return -ENOTCONN;
	}
}
