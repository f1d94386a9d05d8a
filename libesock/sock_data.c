/* SPDX-License-Identifier: MIT */
/*
 * The data path of DDPMODE sockets (see sock.h): writes become RDMA Sends,
 * reads copy out of the receive pool.  Completions are taken from the
 * socket's CQ under its lock (sock_drain); a thread that must wait lets go
 * of the lock and drives the QP itself in esock_cq_wait, in slices, so that
 * close() and other threads' completions are noticed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <esock/rdmap.h>

#include "endpoint/ep.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_stat.h"
#include "util/log.h"

#define WAIT_SLICE_MS 100

/* ---- receive pool ---- */

/*
 * Regions of connections that closed are kept for the next ones (a few, per
 * process): an mmap and a munmap per connection cost a mapping change and,
 * with other threads running, a TLB shootdown across CPUs each time, which
 * a server that takes a connection per request pays at its request rate.
 * What a kept region holds is this process's own memory (as malloc's reuse).
 */
#define REGION_KEEP 32

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t len;
} kept_regions[REGION_KEEP];
static int nkept_regions;

/* A thread of the parent may have held the lock at a fork: the child's copy starts free. */
static void region_fork_child(void)
{
	pthread_mutex_init(&region_lock, NULL);
}

static void region_once(void)
{
	pthread_atfork(NULL, NULL, region_fork_child);
}

void *sock_region_alloc(size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	void *p = NULL;

	pthread_once(&once, region_once);
	pthread_mutex_lock(&region_lock);
	for (int i = nkept_regions - 1; i >= 0; i--)
		if (kept_regions[i].len == len) {
			p = kept_regions[i].p;
			kept_regions[i] = kept_regions[--nkept_regions];
			break;
		}
	pthread_mutex_unlock(&region_lock);
	if (p)
		return p;
	/* MAP_NORESERVE: thousands of idle pools need no swap reserved for pages never touched. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0);
	return p == MAP_FAILED ? NULL : p;
}

void sock_region_free(void *p, size_t len)
{
	if (!p)
		return;
	pthread_mutex_lock(&region_lock);
	if (nkept_regions < REGION_KEEP) {
		kept_regions[nkept_regions].p = p;
		kept_regions[nkept_regions++].len = len;
		p = NULL;
	}
	pthread_mutex_unlock(&region_lock);
	if (p)
		munmap(p, len);
}

/*
 * Consumed buffers go back in batches of a quarter of the posted target (or
 * all it lacks once nothing is left to read).  Between two esock peers a
 * pool with nothing posted stops the QP reading TCP; reposting one buffer at
 * a time would resume it for one message at a time: a small read and a TCP
 * window update for every message (measured: 1000-octet writes at 0.1x TCP
 * on one CPU).
 *
 * Only rtarget buffers are posted, taken from the top of the stack of free
 * ones (the most recently consumed, still in cache): posting all rdepth
 * made small messages cycle through every buffer of the pool, one first
 * touch per buffer (64 pages, 256 KiB of resident memory per connection,
 * and 30 000 page faults a second over 1000 busy connections).  The target
 * starts small and doubles whenever the QP found nothing posted (it paused
 * reading: rx_paused), up to rdepth; towards a plain RDMA peer, whose Send
 * without a posted receive is fatal, all are posted from the start.
 */
static void repost_flush(struct esock_sock *s)
{
	struct esock_recv_wr wr[64];
	struct esock_sge sge[64];

	if (s->qp && atomic_load(&s->qp->rx_paused) && s->rtarget < (uint32_t)s->o.rdepth) {
		s->rtarget *= 2;
		if (s->rtarget > (uint32_t)s->o.rdepth)
			s->rtarget = (uint32_t)s->o.rdepth;
	}
	while (s->nrepost && s->rposted < s->rtarget && s->qp) {
		uint32_t n = s->rtarget - s->rposted;

		if (n > s->nrepost)
			n = s->nrepost;
		if (n > 64)
			n = 64;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = s->repost[s->nrepost - 1 - k];

			sge[k] = (struct esock_sge){
				.addr = (uintptr_t)(s->rbuf + (size_t)i * (size_t)s->o.rsize),
				.length = (uint32_t)s->o.rsize, .lkey = esock_mr_stag(s->rmr) };
			wr[k] = (struct esock_recv_wr){ .wr_id = SOCK_WR_RECV | i, .sg_list = &sge[k],
							.num_sge = 1, .next = k + 1 < n ? &wr[k + 1] : NULL };
		}
		if (esock_post_recv(s->qp, wr, NULL) < 0)
			break;
		s->nrepost -= n;
		s->rposted += n;
	}
}

static void repost(struct esock_sock *s, uint32_t idx, bool now)
{
	uint32_t batch = s->rtarget / 4;

	s->repost[s->nrepost++] = idx;
	if (now || s->rtarget - s->rposted >= (batch ? batch : 1))
		repost_flush(s);
}

/*
 * A message read before an exec, not yet by the application (sock_handoff.c):
 * into a buffer that is not posted, ahead of anything the QP receives here.
 */
int sock_pool_inject(struct esock_sock *s, const void *data, uint32_t len)
{
	uint32_t idx;

	if (!s->nrepost || len > (uint32_t)s->o.rsize || !len)
		return len ? -ENOBUFS : 0;
	idx = s->repost[--s->nrepost];
	memcpy(s->rbuf + (size_t)idx * (size_t)s->o.rsize, data, len);
	s->rdone[(s->rhead + s->rcount) % (uint32_t)s->o.rdepth] = idx;
	s->rlen[idx] = len;
	s->rcount++;
	s->rready += len;
	return 0;
}

/*
 * A stale copy's pool (sock_conn_resume): its QP is gone, so are its posted
 * receives, its completions, its sends in flight; its unread messages were
 * read by the process that went on with the connection.  All free again.
 */
void sock_pool_forget(struct esock_sock *s)
{
	struct esock_wc wc[32];
	uint32_t n = (uint32_t)s->o.rdepth;

	while (s->cq && esock_cq_poll(s->cq, 32, wc) > 0)
		;
	for (uint32_t i = 0; s->repost && i < n; i++)
		s->repost[i] = n - 1 - i;
	s->nrepost = s->repost ? n : 0;
	s->rposted = s->rhead = s->rcount = s->roff = 0;
	s->rready = 0;
	sock_slots_release(s);
	s->inflight = 0;
	s->direct_done = s->direct_seq;
}

/* The first receives of a fresh QP on a pool (sock_pool_forget'd). */
void sock_pool_repost(struct esock_sock *s)
{
	s->rtarget = s->o.rdepth < SOCK_RPOST_START ? (uint32_t)s->o.rdepth : SOCK_RPOST_START;
	repost_flush(s);
}

/* Towards a plain RDMA peer every buffer is posted (called before the QP receives). */
void sock_pool_post_all(struct esock_sock *s)
{
	s->rtarget = (uint32_t)s->o.rdepth;
	repost_flush(s);
}

int sock_pool_setup(struct esock_sock *s)
{
	size_t n = (size_t)s->o.rdepth, sz = (size_t)s->o.rsize;
	int rc;

	if (n == 0)
		return 0;
	s->rbuf_len = n * sz;
	s->rbuf = sock_region_alloc(s->rbuf_len);
	s->rdone = calloc(n, sizeof(*s->rdone));
	s->rlen = calloc(n, sizeof(*s->rlen));
	s->repost = calloc(n, sizeof(*s->repost));
	if (!s->rbuf || !s->rdone || !s->rlen || !s->repost)
		return -ENOMEM;
	if ((rc = esock_mr_reg(s->pd, s->rbuf, n * sz, ESOCK_ACCESS_LOCAL_WRITE, 0, &s->rmr)) < 0)
		return rc;
	/* All free, buffer 0 on top; the first rtarget go out now. */
	for (uint32_t i = 0; i < n; i++)
		s->repost[i] = (uint32_t)n - 1 - i;
	s->nrepost = (uint32_t)n;
	s->rposted = 0;
	s->rtarget = n < SOCK_RPOST_START ? (uint32_t)n : SOCK_RPOST_START;
	repost_flush(s);
	return s->rposted == s->rtarget ? 0 : -ENOMEM;
}

/* A Send from slot |id| completed: the slot goes back to the pool. */
static void slot_done(struct esock_sock *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->nslots; i++)
		if (s->slots[i] == id) {
			s->slots[i] = s->slots[--s->nslots];
			sock_slot_put(id);
			return;
		}
}

void sock_slots_release(struct esock_sock *s)
{
	while (s->nslots)
		sock_slot_put(s->slots[--s->nslots]);
}

/* ---- completions ---- */

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
		if (s->rposted)
			s->rposted--;
		if (wc->status != ESOCK_WC_SUCCESS) {
			ended(s, wc);
			break;
		}
		if (wc->byte_len == 0 && !s->o.msgmode) { /* nothing to read: reuse it */
			repost(s, idx, false);
			break;
		}
		s->rdone[(s->rhead + s->rcount) % (uint32_t)s->o.rdepth] = idx;
		s->rlen[idx] = wc->byte_len;
		s->rcount++;
		s->rready += wc->byte_len;
		s->stats->rx_msgs++;
		s->stats->rx_bytes += wc->byte_len;
		break;
	case SOCK_WR_SLOT:
	case SOCK_WR_DIRECT:
		if (kind == SOCK_WR_SLOT)
			slot_done(s, idx);
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

	if (qp && qp->lazy && !s->suspended) {
		int st = esock_qp_state(qp);

		if (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING)
			ep_qp_progress(qp, EP_WANT_RX);
	}
	sock_drain(s);
}

void sock_drain(struct esock_sock *s)
{
	struct esock_wc wc[32];
	int n;

	if (!s->cq)
		return;
	while ((n = esock_cq_poll(s->cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++)
			sock_handle_wc(s, &wc[i]);
	/*
	 * The QP may end with no receive posted (all consumed, waiting to be
	 * reposted): no flush completion then tells us.  Its data completions
	 * all came before the state changed, so the end can be taken now.
	 */
	if (!s->eof && !s->err && s->qp &&
	    (esock_qp_state(s->qp) == ESOCK_QPS_ERROR || atomic_load(&s->qp->rx_eof))) {
		struct esock_wc end = { .status = ESOCK_WC_WR_FLUSH_ERR };

		while ((n = esock_cq_poll(s->cq, 32, wc)) > 0) /* what came before the change */
			for (int i = 0; i < n; i++)
				sock_handle_wc(s, &wc[i]);
		ended(s, &end);
	}
	if (n == -EOVERFLOW && !s->err) {
		s->err = EIO;
		log_error("fd %d: completion queue overflow", s->fd);
	}
}

/*
 * Waits (lock held on entry and exit) up to one slice for completions,
 * driving the QP in this thread.  Returns 0, -EINTR, or -EBADF when the
 * socket was closed meanwhile (its QP is gone: touch nothing but the lock).
 */
static int wait_some(struct esock_sock *s, int64_t end)
{
	struct esock_wc wc[32];
	int n, slice = s->waiters ? 10 : WAIT_SLICE_MS; /* others may take ours */

	if (end >= 0 && end - ep_now_ms() < slice) /* SO_RCVTIMEO / SO_SNDTIMEO */
		slice = end - ep_now_ms() > 0 ? (int)(end - ep_now_ms()) : 0;
	s->waiters++;
	pthread_mutex_unlock(&s->lock);
	n = esock_cq_wait(s->cq, 32, wc, slice);
	pthread_mutex_lock(&s->lock);
	s->waiters--;
	if (atomic_load(&s->closing) || !s->qp)
		return -EBADF;
	for (int i = 0; i < n; i++)
		sock_handle_wc(s, &wc[i]);
	return n == -EINTR ? -EINTR : 0;
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
	if (s->qp && s->qp->fd >= 0) {
		int st = esock_qp_state(s->qp);

		/* (No engine, as in a sandbox: the callers drive it.) */
		if (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING)
			(void)ep_engine_add(s->qp);
	}
	return 0;
}

/* usable(): the connect fell back to plain TCP while the call waited for it. */
#define SOCK_FELL_BACK 1

static int usable(struct esock_sock *s)
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

/* ---- reading ---- */

/*
 * Copies ready octets into |iov| from |*skip| on; consumes them unless
 * |peek|.  In message mode, one message at most (the rest of it is dropped,
 * *trunc tells).  Returns octets copied.
 */
static size_t copy_out(struct esock_sock *s, const struct iovec *iov, int iovcnt, bool peek,
		       size_t *skip, bool *trunc)
{
	size_t got = 0;
	uint32_t q = 0, off = s->roff;
	int vi = 0;
	size_t vo = *skip;

	while (vi < iovcnt && vo >= iov[vi].iov_len)
		vo -= iov[vi++].iov_len;
	while (q < s->rcount && vi < iovcnt) {
		uint32_t idx = s->rdone[(s->rhead + q) % (uint32_t)s->o.rdepth];
		const uint8_t *m = s->rbuf + (size_t)idx * (size_t)s->o.rsize;
		size_t n = s->rlen[idx] - off, room = iov[vi].iov_len - vo;

		if (n > room)
			n = room;
		memcpy((uint8_t *)iov[vi].iov_base + vo, m + off, n);
		got += n;
		off += (uint32_t)n;
		vo += n;
		if (vo == iov[vi].iov_len) {
			vi++;
			vo = 0;
		}
		if (off == s->rlen[idx] || (s->o.msgmode && vi == iovcnt)) {
			if (s->o.msgmode && off < s->rlen[idx])
				*trunc = true;
			if (!peek) {
				s->rready -= s->rlen[idx] - s->roff;
				s->rhead = (s->rhead + 1) % (uint32_t)s->o.rdepth;
				s->rcount--;
				s->roff = 0;
				repost(s, idx, false);
			} else {
				q++;
			}
			off = 0;
			if (s->o.msgmode)
				break;
		} else if (!peek) {
			s->rready -= n;
			s->roff = off;
		}
	}
	*skip += got;
	return got;
}

/* The call on a connection that fell back to plain TCP (ESOCK_FALLBACK=tcp) goes to the kernel. */
static ssize_t plain_io(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
			bool out, int *msg_flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = (size_t)iovcnt };
	int fd = s->fd;
	ssize_t n;

	pthread_mutex_unlock(&s->lock);
	n = out ? REAL(sendmsg)(fd, &m, flags) : REAL(recvmsg)(fd, &m, flags);
	if (n >= 0 && msg_flags)
		*msg_flags = m.msg_flags;
	return n < 0 ? -errno : n;
}

/* SO_RCVTIMEO or SO_SNDTIMEO (sock_timeo_ms) as a deadline in ep_now_ms() time, or -1. */
static int64_t timeo_deadline(int ms)
{
	return ms > 0 ? ep_now_ms() + ms : -1;
}

ssize_t sock_recv(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		  int *msg_flags)
{
	size_t want = 0, got = 0;
	bool trunc = false, block, pulled = false;
	int64_t end = -2; /* SO_RCVTIMEO, read when a wait begins */
	ssize_t rc;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP; /* no urgent data over RDMA Sends */
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	pthread_mutex_lock(&s->lock);
	if ((rc = usable(s)) < 0)
		goto out;
	if (rc == SOCK_FELL_BACK)
		return plain_io(s, iov, iovcnt, flags, false, msg_flags);
	block = !s->nonblock && !(flags & MSG_DONTWAIT);
	for (;;) {
		sock_drain(s);
		if (s->rcount && want) {
			size_t skip = got;

			copy_out(s, iov, iovcnt, flags & MSG_PEEK, &skip, &trunc);
			got = skip;
			if (got == want || !(flags & MSG_WAITALL) || s->o.msgmode || (flags & MSG_PEEK))
				break;
			continue;
		}
		if (want == 0 || s->eof || s->shut_rd)
			break;
		if (s->err) {
			if (!got)
				rc = -s->err;
			break;
		}
		/* Nothing left to read: every consumed buffer goes back before we stop. */
		repost_flush(s);
		if (end == -2)
			end = timeo_deadline(s->rcvtimeo_ms);
		if (!block || (end >= 0 && ep_now_ms() >= end)) {
			if (!pulled && s->qp && s->qp->lazy) {
				/* Its input is ours to read (lazy): look at the socket once before EAGAIN. */
				pulled = true;
				sock_pull(s);
				continue;
			}
			if (!got) {
				rc = -EAGAIN;
				if (s->qp)
					ep_qp_uncork(s->qp); /* it will wait for input somehow */
			}
			break;
		}
		if ((rc = wait_some(s, end)) < 0) {
			if (got && rc == -EINTR)
				rc = 0;
			break;
		}
	}
	if (rc == 0)
		rc = (ssize_t)got;
	if (trunc && msg_flags)
		*msg_flags |= MSG_TRUNC;
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---- writing ---- */

/* Gathers up to |len| octets of |iov| from (*vi, *vo) into |sge|; returns SGEs used. */
static int gather(const struct iovec *iov, int iovcnt, int *vi, size_t *vo, size_t len,
		  struct esock_sge *sge, int max, uint32_t lkey)
{
	int n = 0;

	while (len && *vi < iovcnt && n < max) {
		size_t take = iov[*vi].iov_len - *vo;

		if (take > len)
			take = len;
		if (take) {
			sge[n].addr = (uintptr_t)iov[*vi].iov_base + *vo;
			sge[n].length = (uint32_t)take;
			sge[n++].lkey = lkey;
		}
		len -= take;
		*vo += take;
		if (*vo == iov[*vi].iov_len) {
			(*vi)++;
			*vo = 0;
		}
	}
	return n;
}

static int post_send(struct esock_sock *s, uint64_t wr_id, struct esock_sge *sge, int n)
{
	struct esock_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = n, .opcode = ESOCK_WR_SEND,
		.send_flags = ESOCK_SEND_SIGNALED | EP_SEND_QUIET, /* (see room_wanted) */
	};
	int rc = esock_post_send(s->qp, &wr, NULL);

	if (rc == 0)
		s->inflight++;
	return rc;
}

/*
 * Blocking send from the caller's memory: each chunk one Send, then wait
 * until the endpoint has handed all of it to TCP (the caller may reuse the
 * buffer when write returns, as with TCP).  Signals cannot cut the wait
 * short: the queue still points into the caller's memory.
 */
static ssize_t send_direct(struct esock_sock *s, const struct iovec *iov, int iovcnt,
			   size_t total, size_t chunk)
{
	int vi = 0;
	size_t vo = 0, posted = 0;
	uint64_t last = s->direct_seq;
	int rc = 0;

	while (posted < total) {
		struct esock_sge sge[SOCK_MAX_SGE];
		size_t len = total - posted < chunk ? total - posted : chunk;
		int save_vi = vi;
		size_t save_vo = vo, glen = 0;
		int n = gather(iov, iovcnt, &vi, &vo, len, sge, SOCK_MAX_SGE, esock_mr_stag(s->all_mr));

		for (int i = 0; i < n; i++)
			glen += sge[i].length;
		if ((rc = post_send(s, SOCK_WR_DIRECT | (++s->direct_seq & 0xffffffffu), sge, n)) < 0) {
			s->direct_seq--;
			vi = save_vi;
			vo = save_vo;
			if (rc != -ENOMEM)
				break;
			if ((rc = wait_some(s, -1)) == -EBADF) /* send queue full: let some complete */
				return rc;
			rc = 0;
			continue;
		}
		last = s->direct_seq;
		posted += glen;
	}
	/*
	 * Sends flushed by an error complete too: wait for every one of them.
	 * Usually the poster's inline send completed them already: look first.
	 */
	sock_drain(s);
	while (s->direct_done < last)
		if (wait_some(s, -1) == -EBADF)
			return -EBADF;
	if (rc < 0 && !posted)
		return rc;
	if (s->tx_failed) /* some of it was flushed: the connection is gone */
		return -EPIPE;
	s->stats->tx_bytes += posted;
	return (ssize_t)posted;
}

/* Finds octet |off| of |iov|: piece *vi, offset *vo. */
static void seek(const struct iovec *iov, int iovcnt, size_t off, int *vi, size_t *vo)
{
	for (*vi = 0; *vi < iovcnt && off >= iov[*vi].iov_len; (*vi)++)
		off -= iov[*vi].iov_len;
	*vo = off;
}

/* Non-blocking (or many-piece) send: copies into send slots. */
static ssize_t send_slots(struct esock_sock *s, const struct iovec *iov, int iovcnt, size_t total,
			  size_t chunk, bool block, int64_t end)
{
	int vi = 0, rc;
	size_t vo = 0, sent = 0;

	if (chunk > SOCK_SLOT_SIZE)
		chunk = SOCK_SLOT_SIZE;
	while (sent < total) {
		size_t len = total - sent < chunk ? total - sent : chunk, done = 0;
		struct esock_sge sge;
		uint32_t slot;
		uint8_t *dst;

		sock_drain(s);
		if (s->err || s->tx_failed)
			break;
		if (s->nslots == SOCK_SLOTS_MAX) {
			if (!block || (end >= 0 && ep_now_ms() >= end)) /* (SO_SNDTIMEO) */
				break;
			if (wait_some(s, end) == -EBADF)
				return -EBADF;
			continue;
		}
		if ((rc = sock_slot_get(&slot)) < 0) {
			if (sent)
				break;
			return rc;
		}
		s->slots[s->nslots++] = slot;
		dst = sock_slot_addr(slot);
		while (done < len) {
			size_t take = iov[vi].iov_len - vo;

			if (take > len - done)
				take = len - done;
			memcpy(dst + done, (const uint8_t *)iov[vi].iov_base + vo, take);
			done += take;
			vo += take;
			if (vo == iov[vi].iov_len) {
				vi++;
				vo = 0;
			}
		}
		sge.addr = (uintptr_t)dst;
		sge.length = (uint32_t)len;
		sge.lkey = esock_mr_stag(s->all_mr); /* (the whole address space, local access) */
		if ((rc = post_send(s, SOCK_WR_SLOT | slot, &sge, 1)) < 0) {
			slot_done(s, slot);
			if (rc == -ENOMEM && block && (end < 0 || ep_now_ms() < end)) {
				/* send queue full: retry this chunk */
				if (wait_some(s, end) == -EBADF)
					return -EBADF;
				seek(iov, iovcnt, sent, &vi, &vo);
				continue;
			}
			break;
		}
		sent += len;
		s->stats->tx_msgs++;
	}
	s->stats->tx_bytes += sent;
	if (sent)
		return (ssize_t)sent;
	if (s->err || s->tx_failed)
		return -EPIPE;
	return -EAGAIN;
}

/*
 * The completions of our own sends free room (send slots, queue entries),
 * news only for a writer that found none: until one did, they wake no
 * poll or epoll caller (EP_SEND_QUIET).  Once one did, they are heard
 * again; one that came just before is told now (the CQ's own kick).
 */
static void room_wanted(struct esock_sock *s, bool on)
{
	if (!s->qp || atomic_load(&s->qp->want_room) == on)
		return;
	atomic_store(&s->qp->want_room, on);
	if (on && s->cq) {
		atomic_thread_fence(memory_order_seq_cst);
		if (ep_ring_count(&s->cq->ring) > 0)
			ep_cq_kick(s->cq);
	}
}

ssize_t sock_send(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	return sock_send_ex(s, iov, iovcnt, flags, false);
}

ssize_t sock_send_ex(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		     bool all)
{
	size_t total = 0, chunk;
	bool block;
	ssize_t rc;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP; /* no urgent data over RDMA Sends */
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	pthread_mutex_lock(&s->lock);
	if ((rc = usable(s)) < 0)
		goto out;
	if (rc == SOCK_FELL_BACK)
		return plain_io(s, iov, iovcnt, flags, true, NULL);
	sock_drain(s);
	/* After the peer's FIN we may still send (half-close), unless the QP ended. */
	if (s->shut_wr || s->err || s->tx_failed || esock_qp_state(s->qp) != ESOCK_QPS_RTS) {
		rc = -EPIPE;
		goto out;
	}
	if (total == 0)
		goto out;
	chunk = s->peer_msg_max ? s->peer_msg_max : 65536;
	if (s->o.msgmode && total > chunk) {
		rc = -EMSGSIZE;
		goto out;
	}
	block = all || (!s->nonblock && !(flags & MSG_DONTWAIT));
	/*
	 * A blocking write sends from the caller's memory and returns once all
	 * of it is handed to TCP; with SO_SNDTIMEO it may return early, so it
	 * copies into the send slots instead (its memory is free at once).
	 */
	if (block && !s->o.msgmode && s->sndtimeo_ms <= 0)
		rc = send_direct(s, iov, iovcnt, total, chunk);
	else
		rc = send_slots(s, iov, iovcnt, total, chunk, block, block ? timeo_deadline(s->sndtimeo_ms) : -1);
	if (block && !s->o.msgmode && rc > 0)
		s->stats->tx_msgs += (total + chunk - 1) / chunk;
	if (rc == -EAGAIN || (rc >= 0 && (size_t)rc < total)) {
		s->out_full++; /* the next room is a new EPOLLOUT edge */
		room_wanted(s, true);
	} else if (rc >= 0) {
		room_wanted(s, false);
	}
out:
	pthread_mutex_unlock(&s->lock);
	if (rc == -EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return rc;
}

/* ---- readiness, shutdown ---- */

unsigned sock_ready(struct esock_sock *s, unsigned events)
{
	unsigned r = 0;

	if (s->st == SOCK_LISTENING)
		return sock_listen_ready(s, events);
	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING)
		return sock_connect_ready(s, events);
	pthread_mutex_lock(&s->lock);
	if (s->st == SOCK_CONNECTED && s->suspended && sock_resume(s) < 0) {
		r = POLLERR | POLLHUP; /* (sock_share.c said why) */
	} else if (s->st == SOCK_CONNECTED) {
		if (s->qp)
			ep_qp_serve(s->qp);
		sock_drain(s);
		if (!s->rcount)
			repost_flush(s); /* about to sleep: the pool must be open */
		if (s->rcount || s->eof || s->err || s->shut_rd)
			r |= POLLIN | POLLRDNORM;
		if (s->eof)
			r |= POLLRDHUP;
		if (s->err)
			r |= POLLERR | POLLHUP;
		else if (s->eof && (s->shut_wr || s->tx_failed || !s->qp ||
				    esock_qp_state(s->qp) != ESOCK_QPS_RTS))
			r |= POLLHUP;
		if (!s->err && !s->tx_failed && !s->shut_wr && s->qp &&
		    esock_qp_state(s->qp) == ESOCK_QPS_RTS && s->nslots < SOCK_SLOTS_MAX)
			r |= POLLOUT | POLLWRNORM;
		else if ((events & (POLLOUT | POLLWRNORM)) && !s->err && !s->tx_failed && !s->shut_wr)
			room_wanted(s, true); /* a caller waits for room: our sends' completions are news */
	} else if (s->st == SOCK_FAILED) {
		r = POLLERR | POLLHUP | POLLOUT;
	}
	pthread_mutex_unlock(&s->lock);
	return r & (events | POLLERR | POLLHUP);
}

int sock_shutdown(struct esock_sock *s, int how)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (s->st != SOCK_CONNECTED) {
		pthread_mutex_unlock(&s->lock);
		return s->st == SOCK_LISTENING || s->st == SOCK_MARKED ? -ENOTCONN : 0;
	}
	if (how == SHUT_RD || how == SHUT_RDWR)
		s->shut_rd = true;
	if ((how == SHUT_WR || how == SHUT_RDWR) && !s->shut_wr) {
		s->shut_wr = true;
		if (s->qp && esock_qp_state(s->qp) == ESOCK_QPS_RTS && s->peer_esock) {
			/*
			 * Towards an esock peer, TCP's half-close: what is queued
			 * leaves, then our FIN; the peer reads EOF and may still send.
			 */
			while (s->inflight && !s->err)
				if (wait_some(s, -1) == -EBADF)
					break;
			if (s->qp && REAL(shutdown)(s->qp->fd, SHUT_WR) < 0)
				rc = -errno;
		} else if (s->qp && esock_qp_state(s->qp) == ESOCK_QPS_RTS) {
			/* RDMA has no half-close: send what is queued, then end the connection. */
			rc = esock_qp_disconnect(s->qp);
		}
	}
	/* Readiness changed without a completion: epoll waiters look again (sock_epoll.c). */
	if (s->cq)
		ep_cq_kick(s->cq);
	pthread_mutex_unlock(&s->lock);
	return rc;
}
