/* SPDX-License-Identifier: MIT */
/*
 * Writing a DDPMODE socket: writes become RDMA Sends, from the caller's
 * memory for a blocking write, else through the process's send slots.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
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

#define DIRECT_LIST 16 /* Sends posted as one list: towards an esock peer one sendmsg (ep_tx.c) */

/*
 * Blocking send from the caller's memory: each chunk one Send, posted in
 * lists, then wait until the endpoint has handed all of it to TCP (the
 * caller may reuse the buffer when write returns, as with TCP).  Signals
 * cannot cut the wait short: the queue still points into the caller's memory.
 */
static ssize_t send_direct(struct esock_sock *s, const struct iovec *iov, int iovcnt,
			   size_t total, size_t chunk)
{
	int vi = 0;
	size_t vo = 0, posted = 0;
	uint64_t last = s->direct_seq;
	uint32_t lkey = esock_mr_stag(s->all_mr);
	int rc = 0;

	while (posted < total) {
		struct esock_sge sge[DIRECT_LIST][SOCK_MAX_SGE];
		struct esock_send_wr wr[DIRECT_LIST], *bad = NULL;
		size_t glen[DIRECT_LIST], listed = 0;
		int k = 0, ok;

		for (; k < DIRECT_LIST && posted + listed < total; k++) {
			size_t len = total - posted - listed < chunk ? total - posted - listed : chunk;
			int n = gather(iov, iovcnt, &vi, &vo, len, sge[k], SOCK_MAX_SGE, lkey);

			glen[k] = 0;
			for (int i = 0; i < n; i++)
				glen[k] += sge[k][i].length;
			listed += glen[k];
			wr[k] = (struct esock_send_wr){
				.wr_id = SOCK_WR_DIRECT | ((s->direct_seq + (uint64_t)k + 1) & 0xffffffffu),
				.sg_list = sge[k], .num_sge = n, .opcode = ESOCK_WR_SEND,
				.send_flags = ESOCK_SEND_SIGNALED | EP_SEND_QUIET };
			if (k)
				wr[k - 1].next = &wr[k];
		}
		rc = esock_post_send(s->qp, wr, &bad);
		ok = rc == 0 ? k : (int)(bad - wr); /* the ones before |bad| are queued */
		for (int i = 0; i < ok; i++)
			posted += glen[i];
		s->inflight += (uint32_t)ok;
		s->direct_seq += (uint64_t)ok;
		last = s->direct_seq;
		if (rc < 0) {
			seek(iov, iovcnt, posted, &vi, &vo);
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
	while (s->direct_done < last)
		if (sock_wait_some(s, -1) == -EBADF)
			return -EBADF;
	if (rc < 0 && !posted)
		return rc;
	if (s->tx_failed) /* some of it was flushed: the connection is gone */
		return -EPIPE;
	s->stats->tx_bytes += posted;
	return (ssize_t)posted;
}

/* Copies |len| octets of |iov| from (*vi, *vo) on to |dst|. */
static void copy_in(uint8_t *dst, const struct iovec *iov, int *vi, size_t *vo, size_t len)
{
	size_t done = 0;

	while (done < len) {
		size_t take = iov[*vi].iov_len - *vo;

		if (take > len - done)
			take = len - done;
		memcpy(dst + done, (const uint8_t *)iov[*vi].iov_base + *vo, take);
		done += take;
		*vo += take;
		if (*vo == iov[*vi].iov_len) {
			(*vi)++;
			*vo = 0;
		}
	}
}

/*
 * Non-blocking (or timed) send: copies into send slots, whose Sends are
 * posted in lists (towards an esock peer, one sendmsg each).
 */
static ssize_t send_slots(struct esock_sock *s, const struct iovec *iov, int iovcnt, size_t total,
			  size_t chunk, bool block, int64_t end)
{
	uint32_t lkey = esock_mr_stag(s->all_mr); /* (the whole address space, local access) */
	int vi = 0, rc = 0;
	size_t vo = 0, sent = 0;

	if (chunk > SOCK_SLOT_SIZE)
		chunk = SOCK_SLOT_SIZE;
	while (sent < total) {
		struct esock_sge sge[SOCK_SLOTS_MAX];
		struct esock_send_wr wr[SOCK_SLOTS_MAX], *bad = NULL;
		uint32_t slot[SOCK_SLOTS_MAX];
		size_t listed = 0;
		int k = 0, ok;

		sock_drain(s);
		if (s->err || s->tx_failed)
			break;
		for (rc = 0; s->nslots < SOCK_SLOTS_MAX && sent + listed < total; k++) {
			size_t len = total - sent - listed < chunk ? total - sent - listed : chunk;
			uint8_t *dst;

			if ((rc = sock_slot_get(&slot[k])) < 0)
				break;
			s->slots[s->nslots++] = slot[k];
			dst = sock_slot_addr(slot[k]);
			copy_in(dst, iov, &vi, &vo, len);
			sge[k] = (struct esock_sge){ (uintptr_t)dst, (uint32_t)len, lkey };
			wr[k] = (struct esock_send_wr){ .wr_id = SOCK_WR_SLOT | slot[k], .sg_list = &sge[k],
							.num_sge = 1, .opcode = ESOCK_WR_SEND,
							.send_flags = ESOCK_SEND_SIGNALED | EP_SEND_QUIET };
			if (k)
				wr[k - 1].next = &wr[k];
			listed += len;
		}
		if (k == 0) {
			if (rc < 0) { /* no slot memory */
				if (sent)
					break;
				return rc;
			}
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
		for (int i = ok; i < k; i++)
			sock_slot_done(s, slot[i]);
		if (rc < 0) {
			seek(iov, iovcnt, sent, &vi, &vo);
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
	return -EAGAIN;
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

ssize_t sock_send_ex(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		     bool all)
{
	size_t total = 0, chunk;
	bool block;
	ssize_t rc;

	if (s->off)
		return sock_off_send(s, iov, iovcnt, flags);
	if (flags & MSG_OOB)
		return -EOPNOTSUPP; /* no urgent data over RDMA Sends */
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	pthread_mutex_lock(&s->lock);
	if ((rc = sock_usable(s)) < 0)
		goto out;
	if (rc == SOCK_FELL_BACK)
		return sock_plain_io(s, iov, iovcnt, flags, true, NULL);
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
		rc = send_slots(s, iov, iovcnt, total, chunk, block, block ? sock_timeo_deadline(s->sndtimeo_ms) : -1);
	if (block && !s->o.msgmode && rc > 0)
		s->stats->tx_msgs += (total + chunk - 1) / chunk;
	if (rc == -EAGAIN || (rc >= 0 && (size_t)rc < total)) {
		s->out_full++; /* the next room is a new EPOLLOUT edge */
		sock_room_wanted(s, true);
	} else if (rc >= 0) {
		sock_room_wanted(s, false);
	}
out:
	pthread_mutex_unlock(&s->lock);
	if (rc == -EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return rc;
}
