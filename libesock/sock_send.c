/* SPDX-License-Identifier: MIT */
/*
 * Writing a DDPMODE socket: writes become RDMA Sends, from the caller's
 * memory for a blocking write, else through the process's send slots;
 * sendfile reads the file straight into the slots.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"
#include "libesock/sock_stat.h"
#include "util/log.h"

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

/* Finds octet |off| of |iov|: piece *vi, offset *vo. */
static void seek(const struct iovec *iov, int iovcnt, size_t off, int *vi, size_t *vo)
{
	for (*vi = 0; *vi < iovcnt && off >= iov[*vi].iov_len; (*vi)++)
		off -= iov[*vi].iov_len;
	*vo = off;
}

/*
 * The |len| octets of |iov| from octet |from| on as at most |max| pieces in
 * |out|: their count, or 0 when they need more.
 */
static int slice(const struct iovec *iov, int iovcnt, size_t from, size_t len, struct iovec *out,
		 int max)
{
	int vi, n = 0;
	size_t vo;

	seek(iov, iovcnt, from, &vi, &vo);
	for (; len && vi < iovcnt; vi++, vo = 0) {
		size_t take = iov[vi].iov_len - vo < len ? iov[vi].iov_len - vo : len;

		if (!take)
			continue;
		if (n == max)
			return 0;
		out[n++] = (struct iovec){ (uint8_t *)iov[vi].iov_base + vo, take };
		len -= take;
	}
	return n;
}

/*
 * Sends of up to |step| octets each, in this call, while each goes whole
 * (ep_qp_send_now: nothing queued before it, TCP takes it or the endpoint
 * keeps what it did not): no send WR, no completion, and the caller's
 * memory is not copied.  Octets sent so, or -EPIPE when none were and the
 * connection failed.
 */
static ssize_t send_now_chunks(struct esock_sock *s, const struct iovec *iov, int iovcnt,
			       size_t total, size_t step)
{
	size_t done = 0;

	while (done < total) {
		struct iovec part[EP_SEND_NOW_PIECES];
		size_t len = total - done < step ? total - done : step;
		int n = slice(iov, iovcnt, done, len, part, EP_SEND_NOW_PIECES), rc;

		if (!n || (rc = ep_qp_send_now(s->qp, part, n, len)) == -EAGAIN)
			break;
		if (rc < 0)
			return done ? (ssize_t)done : rc;
		s->stats->tx_msgs++;
		s->stats->tx_now++;
		s->stats->tx_bytes += len;
		done += len;
	}
	return (ssize_t)done;
}

#define DIRECT_LIST 16 /* Sends posted as one list: towards an esock peer one sendmsg (ep_tx.c) */

/*
 * Blocking send from the caller's memory: each chunk one Send, posted in
 * lists, then wait until the endpoint has handed all of it to TCP (the
 * caller may reuse the buffer when write returns, as with TCP).  Signals
 * cannot cut the wait short: the queue still points into the caller's memory.
 */
static ssize_t send_direct(struct esock_sock *s, const struct iovec *iov, int iovcnt,
			   size_t from, size_t total, size_t chunk)
{
	int vi = 0;
	size_t vo = 0, posted = 0;
	uint64_t last = s->direct_seq;
	uint32_t lkey = 0; /* (EP_SEND_LOCAL: no key) */
	int rc = 0;

	seek(iov, iovcnt, from, &vi, &vo);
	while (posted < total) {
		struct esock_sge sge[DIRECT_LIST][SOCK_MAX_SGE];
		struct esock_send_wr wr[DIRECT_LIST], *bad = NULL;
		size_t glen[DIRECT_LIST], listed = 0;
		int k = 0, ok, room;

		/*
		 * A send queue entry is free again once its completion is in the
		 * CQ, not once we took it: take them as we go, and never have
		 * more Sends out than the send queue holds, or the CQ (sized for
		 * both queues) overflows when TCP takes everything at once (a
		 * fast reader: 70 of 96 entries seen waiting) and a completion
		 * this write waits for is lost.  (send_begin has just looked.)
		 */
		if (posted)
			sock_drain(s);
		if (s->err || s->tx_failed) {
			rc = -EPIPE;
			break;
		}
		if ((room = SOCK_SQ_DEPTH - (int)s->inflight) <= 0) {
			if ((rc = sock_wait_some(s, -1)) == -EBADF)
				return rc;
			rc = 0;
			continue;
		}
		for (; k < DIRECT_LIST && k < room && posted + listed < total; k++) {
			size_t len = total - posted - listed < chunk ? total - posted - listed : chunk;
			int n = gather(iov, iovcnt, &vi, &vo, len, sge[k], SOCK_MAX_SGE, lkey);

			glen[k] = 0;
			for (int i = 0; i < n; i++)
				glen[k] += sge[k][i].length;
			listed += glen[k];
			wr[k] = (struct esock_send_wr){
				.wr_id = SOCK_WR_DIRECT | ((s->direct_seq + (uint64_t)k + 1) & 0xffffffffu),
				.sg_list = sge[k], .num_sge = n, .opcode = ESOCK_WR_SEND,
				.send_flags = ESOCK_SEND_SIGNALED | EP_SEND_QUIET | EP_SEND_LOCAL };
			if (k)
				wr[k - 1].next = &wr[k];
		}
		rc = esock_post_send(s->qp, wr, &bad);
		ok = rc == 0 ? k : (int)(bad - wr); /* the ones before |bad| are queued */
		for (int i = 0; i < ok; i++)
			posted += glen[i];
		s->inflight += (uint32_t)ok;
		s->stats->tx_msgs += (uint64_t)ok;
		s->direct_seq += (uint64_t)ok;
		last = s->direct_seq;
		if (rc < 0) {
			seek(iov, iovcnt, from + posted, &vi, &vo);
			if (rc != -ENOMEM)
				break;
			if ((rc = sock_wait_some(s, -1)) == -EBADF) /* send queue full: let some complete */
				return rc;
			rc = 0;
		}
	}
	/*
	 * Sends flushed by an error complete too: wait for every one of them.
	 * Usually the poster's inline send completed them already: look first.
	 */
	sock_drain(s);
	while (s->direct_done < last && !s->cq_lost)
		if (sock_wait_some(s, -1) == -EBADF)
			return -EBADF;
	if (rc < 0 && !posted)
		return rc;
	if (s->tx_failed || s->direct_done < last) /* the connection is gone */
		return -EPIPE;
	s->stats->tx_bytes += posted;
	return (ssize_t)posted;
}

/*
 * Where the octets of a send through the slots come from: the caller's
 * iovec (copied), or a file (read straight into the slots: sendfile).
 */
struct src {
	/* Up to |len| octets from octet |at| on into |dst|: octets, 0 at the end, or -errno. */
	ssize_t (*fill)(struct src *src, uint8_t *dst, size_t len, size_t at);
	/* |n| octets read beyond what was sent go back (a file: its position); NULL: nothing to do. */
	void (*unread)(struct src *src, size_t n);
	const struct iovec *iov;
	int iovcnt, vi;
	size_t vo, pos;
	size_t skip; /* octets of |iov| already sent another way */
	int fd;
	const off_t *off;
};

static ssize_t iov_fill(struct src *src, uint8_t *dst, size_t len, size_t at)
{
	size_t done = 0;

	at += src->skip;
	if (at != src->pos) /* (after a list was not taken whole, or past the skipped octets) */
		seek(src->iov, src->iovcnt, at, &src->vi, &src->vo);
	while (done < len) {
		size_t take = src->iov[src->vi].iov_len - src->vo;

		if (take > len - done)
			take = len - done;
		memcpy(dst + done, (const uint8_t *)src->iov[src->vi].iov_base + src->vo, take);
		done += take;
		src->vo += take;
		if (src->vo == src->iov[src->vi].iov_len) {
			src->vi++;
			src->vo = 0;
		}
	}
	src->pos = at + len;
	return (ssize_t)len;
}

static ssize_t file_fill(struct src *src, uint8_t *dst, size_t len, size_t at)
{
	ssize_t n;

	do
		n = src->off ? pread(src->fd, dst, len, *src->off + (off_t)at) : REAL(read)(src->fd, dst, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static void file_unread(struct src *src, size_t n)
{
	if (!src->off && n)
		lseek(src->fd, -(off_t)n, SEEK_CUR);
}

/*
 * Send through the send slots (non-blocking or timed writes, sendfile): the
 * octets are put into slots, whose Sends are posted in lists (towards an
 * esock peer, one sendmsg each).  Octets sent, or -errno when none were.
 */
static ssize_t send_slots(struct esock_sock *s, struct src *src, size_t total, size_t chunk,
			  bool block, int64_t end)
{
	uint32_t lkey = 0; /* (EP_SEND_LOCAL: the process's memory, no key) */
	size_t sent = 0;
	bool at_end = false;
	int rc = 0;

	if (chunk > SOCK_SLOT_SIZE)
		chunk = SOCK_SLOT_SIZE;
	while (sent < total && !at_end) {
		struct esock_sge sge[SOCK_SLOTS_MAX];
		struct esock_send_wr wr[SOCK_SLOTS_MAX], *bad = NULL;
		uint32_t slot[SOCK_SLOTS_MAX];
		size_t listed = 0;
		int k = 0, ok;

		sock_drain(s);
		if (s->err || s->tx_failed)
			break;
		for (rc = 0; s->nslots < SOCK_SLOTS_MAX && sent + listed < total && !at_end; k++) {
			size_t len = total - sent - listed < chunk ? total - sent - listed : chunk;
			uint8_t *dst;
			ssize_t n;

			if ((rc = sock_slot_get(&slot[k])) < 0)
				break;
			dst = sock_slot_addr(slot[k]);
			if ((n = src->fill(src, dst, len, sent + listed)) <= 0) {
				sock_slot_put(slot[k]);
				rc = (int)n;
				at_end = true;
				break;
			}
			at_end = (size_t)n < len; /* (a file ended) */
			s->slots[s->nslots++] = slot[k];
			sge[k] = (struct esock_sge){ (uintptr_t)dst, (uint32_t)n, lkey };
			wr[k] = (struct esock_send_wr){ .wr_id = SOCK_WR_SLOT | slot[k], .sg_list = &sge[k],
							.num_sge = 1, .opcode = ESOCK_WR_SEND,
							.send_flags = ESOCK_SEND_SIGNALED | EP_SEND_QUIET |
								      EP_SEND_LOCAL };
			if (k)
				wr[k - 1].next = &wr[k];
			listed += (size_t)n;
		}
		if (k == 0) {
			if (rc < 0) { /* no slot memory, or the file cannot be read */
				if (sent)
					break;
				return rc;
			}
			if (at_end)
				break;
			/* This socket's slots are all in flight: its send buffer is full. */
			if (!block || (end >= 0 && ep_now_ms() >= end)) /* (SO_SNDTIMEO) */
				break;
			if (sock_wait_some(s, end) == -EBADF)
				return -EBADF;
			continue;
		}
		rc = esock_post_send(s->qp, wr, &bad);
		ok = rc == 0 ? k : (int)(bad - wr); /* the ones before |bad| are queued */
		for (int i = 0; i < ok; i++)
			sent += sge[i].length;
		s->inflight += (uint32_t)ok;
		s->stats->tx_msgs += (uint64_t)ok;
		if (ok < k) {
			size_t back = 0;

			for (int i = ok; i < k; i++) {
				back += sge[i].length;
				sock_slot_done(s, slot[i]);
			}
			if (src->unread)
				src->unread(src, back);
			at_end = false; /* (what was read is read again) */
		}
		if (rc < 0) {
			if (rc == -ENOMEM && block && (end < 0 || ep_now_ms() < end)) {
				/* send queue full: wait, then the rest */
				if (sock_wait_some(s, end) == -EBADF)
					return -EBADF;
				continue;
			}
			break;
		}
	}
	s->stats->tx_bytes += sent;
	if (sent)
		return (ssize_t)sent;
	if (s->err || s->tx_failed)
		return -EPIPE;
	return at_end ? 0 : -EAGAIN; /* (a file at its end: nothing to send) */
}

/*
 * The completions of our own sends free room (send slots, queue entries),
 * news only for a writer that found none: until one did, they wake no
 * poll or epoll caller (EP_SEND_QUIET).  Once one did, they are heard
 * again; one that came just before is told now (the CQ's own kick).
 */
void sock_room_wanted(struct esock_sock *s, bool on)
{
	if (!s->qp || ep_qp_want_room(s->qp) == on)
		return;
	ep_qp_set_want_room(s->qp, on);
	if (on && s->cq) {
		atomic_thread_fence(memory_order_seq_cst);
		if (ep_cq_count(s->cq) > 0)
			ep_cq_kick(s->cq);
	}
}

ssize_t sock_send(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	return sock_send_ex(s, iov, iovcnt, flags, false);
}

/*
 * What every send checks first, the lock taken: 0 to go on, SOCK_FELL_BACK
 * (the lock dropped: plain TCP now), or -errno (lock still held).
 */
static int send_begin(struct esock_sock *s)
{
	int rc;

	sock_prefetch(s);
	pthread_mutex_lock(&s->lock);
	if ((rc = sock_usable(s)) != 0)
		return rc;
	sock_drain(s);
	/* After the peer's FIN we may still send (half-close), unless the QP ended. */
	if (s->shut_wr || s->err || s->tx_failed || esock_qp_state(s->qp) != ESOCK_QPS_RTS)
		return -EPIPE;
	return 0;
}

/* Notes a send's outcome (room wanted when it did not all go), drops the lock. */
static ssize_t send_end(struct esock_sock *s, ssize_t rc, size_t total, int flags)
{
	if (rc == -EAGAIN || (rc >= 0 && (size_t)rc < total)) {
		s->out_full++; /* the next room is a new EPOLLOUT edge */
		sock_room_wanted(s, true);
	} else if (rc >= 0) {
		sock_room_wanted(s, false);
	}
	pthread_mutex_unlock(&s->lock);
	if (rc == -EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return rc;
}

ssize_t sock_send_ex(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		     bool all)
{
	size_t total = 0, chunk, done = 0;
	bool block;
	ssize_t rc;

	if (s->off)
		return sock_off_send(s, iov, iovcnt, flags);
	if (s->verbs)
		return sock_vb_send(s, iov, iovcnt, flags);
	if (flags & MSG_OOB)
		return -EOPNOTSUPP; /* no urgent data over RDMA Sends */
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if ((rc = send_begin(s)) == SOCK_FELL_BACK)
		return sock_plain_io(s, iov, iovcnt, flags, true, NULL);
	if (rc < 0 || total == 0)
		return send_end(s, rc, total, flags);
	chunk = s->peer_msg_max ? s->peer_msg_max : 65536;
	if (s->o.msgmode && total > chunk)
		return send_end(s, -EMSGSIZE, total, flags);
	block = all || (!s->nonblock && !(flags & MSG_DONTWAIT));
	/*
	 * Messages with nothing queued before them go in this call: no send
	 * WR, no completion to collect, no copy into a slot (but for what TCP
	 * does not take at once).  A longer write goes so message by message
	 * (iperf3 writes 128 KiB); what is left goes the queued way.
	 */
	if (!s->o.msgmode || total <= EP_SEND_NOW_BIG) {
		/* (a message of a message-mode socket is never cut: one Send or none) */
		size_t step = s->o.msgmode ? total : chunk < EP_SEND_NOW_BIG ? chunk : EP_SEND_NOW_BIG;

		if ((rc = send_now_chunks(s, iov, iovcnt, total, step)) < 0 || (size_t)rc == total)
			return send_end(s, rc, total, flags);
		done = (size_t)rc;
	}
	/*
	 * A blocking write sends from the caller's memory and returns once all
	 * of it is handed to TCP; with SO_SNDTIMEO it may return early, so it
	 * copies into the send slots instead (its memory is free at once).
	 */
	if (block && !s->o.msgmode && s->sndtimeo_ms <= 0) {
		rc = send_direct(s, iov, iovcnt, done, total - done, chunk);
	} else {
		struct src src = { .fill = iov_fill, .iov = iov, .iovcnt = iovcnt, .skip = done };

		rc = send_slots(s, &src, total - done, chunk, block,
				block ? sock_timeo_deadline(s->sndtimeo_ms) : -1);
	}
	if (done)
		rc = rc > 0 ? (ssize_t)done + rc : (ssize_t)done;
	return send_end(s, rc, total, flags);
}

ssize_t sock_sendfile(struct esock_sock *s, int in, off_t *off, size_t count)
{
	struct src src = { .fill = file_fill, .unread = file_unread, .fd = in, .off = off };
	size_t chunk;
	ssize_t rc;

	if ((rc = send_begin(s)) == SOCK_FELL_BACK) {
		int fd = s->fd;

		pthread_mutex_unlock(&s->lock);
		rc = REAL(sendfile)(fd, in, off, count);
		return rc < 0 ? -errno : rc;
	}
	if (rc < 0 || count == 0)
		return send_end(s, rc, count, 0);
	chunk = s->peer_msg_max ? s->peer_msg_max : 65536;
	rc = send_slots(s, &src, count, chunk, !s->nonblock,
			!s->nonblock ? sock_timeo_deadline(s->sndtimeo_ms) : -1);
	if (rc > 0 && off)
		*off += rc;
	return send_end(s, rc, count, 0);
}
