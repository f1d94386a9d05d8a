/* SPDX-License-Identifier: MIT */
/*
 * Reading a DDPMODE socket: octets copied out of the receive pool, message
 * by message, buffers handed back as they empty.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"
#include "libesock/sock_stat.h"
#include "util/log.h"

/*
 * Copies ready octets into |iov| from |*skip| on; consumes them unless
 * |peek|.  In message mode, one message at most (the rest of it is dropped,
 * *trunc tells).  Returns octets copied.
 */
size_t sock_copy_out(struct esock_sock *s, const struct iovec *iov, int iovcnt, bool peek,
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
		const uint8_t *m = s->rbufs[idx];
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
				sock_pool_return(s, idx, false);
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
ssize_t sock_plain_io(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
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
int64_t sock_timeo_deadline(int ms)
{
	return ms > 0 ? ep_now_ms() + ms : -1;
}

/* Where octet |got| on of |iov| lies: the rest of that segment (false: |iov| is full). */
static bool target(const struct iovec *iov, int iovcnt, size_t got, void **buf, size_t *len)
{
	int vi = 0;

	while (vi < iovcnt && got >= iov[vi].iov_len)
		got -= iov[vi++].iov_len;
	if (vi == iovcnt)
		return false;
	*buf = (uint8_t *)iov[vi].iov_base + got;
	*len = iov[vi].iov_len - got;
	return true;
}

/* |n| octets in |msgs| messages went straight into the caller's buffer. */
static void placed_now(struct esock_sock *s, size_t n, uint32_t msgs, size_t *got)
{
	*got += n;
	s->stats->rx_msgs += msgs;
	s->stats->rx_now += msgs;
	s->stats->rx_bytes += (uint64_t)n;
}

/*
 * Nothing waits in the pool: a lazy QP's input is read now, and whole
 * messages go straight into the caller's buffer from octet |*got| on (one
 * copy, no receive buffer, no completion; ep_qp_recv_now).  Returns what it
 * placed, 0 when it looked and placed nothing (what came may be in the
 * pool), -EAGAIN when it could not look.
 */
static ssize_t recv_now(struct esock_sock *s, const struct iovec *iov, int iovcnt, bool block,
			size_t *got)
{
	unsigned flags = (s->o.msgmode ? EP_NOW_ONE : 0) | (s->rx_hint ? EP_NOW_WAIT : 0) |
			 (block ? EP_NOW_FINISH : 0) | (sock_may_stay(s) ? EP_NOW_STAY : 0);
	uint32_t msgs;
	size_t len;
	void *buf;
	ssize_t n;

	if (!target(iov, iovcnt, *got, &buf, &len))
		return -EAGAIN;
	n = ep_qp_recv_now(s->qp, buf, len, flags, &msgs);
	if (n >= 0)
		s->rx_hint = false; /* (it read the socket) */
	if (n > 0)
		placed_now(s, (size_t)n, msgs, got);
	return n;
}

/*
 * A quick EAGAIN (sock_recv) is right when nothing comes between a read
 * that emptied the kernel's queue and the next one: an event-driven server
 * over many connections.  A server whose client answers while it still
 * works on the last request (PostgreSQL's backend under pgbench found the
 * next query waiting 95 times in 100) pays for a wrong one with a trip
 * through epoll_wait, three system calls where plain TCP's read is one.
 * So the socket learns, as the blocking reader's look does (ep_cq.c
 * look_first): a real look that found nothing trusts the next 1, 3, 7,
 * then 15 quick EAGAINs; one that found input makes the next read look.
 */
static bool quick_trusted(struct esock_sock *s)
{
	if (!s->quick_skip)
		return false;
	s->quick_skip--;
	return true;
}

static void quick_learn(struct esock_sock *s, bool found)
{
	s->quick_step = found ? 0
			      : s->quick_step >= QUICK_SPAN_MAX ? QUICK_SPAN_MAX
								 : (uint8_t)(s->quick_step * 2 + 1);
	s->quick_skip = s->quick_step;
}

/* Whether wait_input reads the QP's input into the caller's buffer. */
static bool wait_reads(const struct esock_sock *s, int flags)
{
	return !(flags & MSG_PEEK) && s->qp && ep_qp_lazy(s->qp);
}

/*
 * A blocking reader waits.  A lazy QP's input is then read into the
 * caller's buffer while it waits, as recv_now does (a large Send that
 * arrives meanwhile goes there, not through the pool: one copy less).
 * Returns what it placed, or -errno.
 */
static ssize_t wait_input(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
			  int64_t end, size_t *got)
{
	size_t len = 0, n = 0;
	uint32_t msgs = 0;
	void *buf = NULL;
	int rc;

	if (wait_reads(s, flags) && target(iov, iovcnt, *got, &buf, &len))
		rc = sock_wait_recv(s, end, buf, len, &n, &msgs);
	else
		rc = sock_wait_some(s, end);
	if (rc == -EBADF)
		return rc; /* (the socket is gone: its stats too) */
	if (n) {
		s->rx_hint = false;
		placed_now(s, n, msgs, got);
	}
	return rc < 0 ? rc : (ssize_t)n;
}

/*
 * Octets went straight into the caller's buffer (up to *got): whether the
 * call is done with them (a message in message mode, the buffer full, or
 * no MSG_WAITALL).  If so, what came behind them and went to the pool is
 * copied after them, in order, as far as the buffer goes.
 */
static bool direct_done(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
			size_t want, size_t *got, bool *trunc)
{
	if (!s->o.msgmode && *got < want && (flags & MSG_WAITALL))
		return false;
	sock_drain(s);
	if (s->rcount && !s->o.msgmode)
		sock_copy_out(s, iov, iovcnt, false, got, trunc);
	return true;
}

ssize_t sock_recv(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		  int *msg_flags)
{
	size_t want = 0, got = 0;
	bool trunc = false, block, pulled = false, now_done = false;
	int64_t end = -2; /* SO_RCVTIMEO, read when a wait begins */
	struct sock_sig_seen seen; /* (handlers that run while this call waits) */
	ssize_t rc;

	if (s->off)
		return sock_off_recv(s, iov, iovcnt, flags, msg_flags);
	if (s->verbs)
		return sock_vb_recv(s, iov, iovcnt, flags, msg_flags);

	if (flags & MSG_OOB)
		return -EOPNOTSUPP; /* no urgent data over RDMA Sends */
	sock_prefetch(s);
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	pthread_mutex_lock(&s->lock);
	if ((rc = sock_usable(s)) < 0)
		goto out;
	if (rc == SOCK_FELL_BACK)
		return sock_plain_io(s, iov, iovcnt, flags, false, msg_flags);
	block = !s->nonblock && !(flags & MSG_DONTWAIT);
	sock_sig_seen_begin(&seen);
	for (;;) {
		sock_drain(s);
		if (s->rcount && want) {
			size_t skip = got;

			sock_copy_out(s, iov, iovcnt, flags & MSG_PEEK, &skip, &trunc);
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
		if (!now_done && !(flags & MSG_PEEK) && s->qp && ep_qp_lazy(s->qp)) {
			ssize_t n;

			/*
			 * An event-driven reader reads to EAGAIN: when the last read
			 * emptied the kernel's queue, that EAGAIN needs no system call.
			 * Whatever came since made the kernel's epoll mark the socket
			 * (our registration in every set that holds it is
			 * edge-triggered, and an edge is a callback per arrival), so the
			 * application's next epoll_wait reports it; a poll looks at the
			 * socket itself.  Only while a set holds it for the application
			 * (a parked registration reports nothing).  Not after epoll promised input (rx_hint).
			 */
			bool sampled = false;

			if (!block && !got && !s->rx_hint && s->nepregs > s->epparked &&
			    ep_qp_rx_seen_empty(s->qp)) {
				if (quick_trusted(s)) {
					now_done = pulled = true;
					s->stats->rx_eagain_quick++;
					continue;
				}
				sampled = true; /* this time the kernel is asked: was it right? */
			}
			/*
			 * A blocking reader's wait looks at the socket first itself,
			 * as a predictor says (ep_cq.c look_first: a ping-pong reader
			 * comes back before the answer, and that look would be an
			 * EAGAIN for nothing), then sleeps in its receive.
			 */
			if (block && !got && !s->rx_hint && wait_reads(s, flags) &&
			    !ep_qp_rx_staged(s->qp)) {
				now_done = pulled = true;
				continue;
			}
			n = recv_now(s, iov, iovcnt, block, &got);
			if (sampled) {
				sock_drain(s); /* (what did not fit went to the pool) */
				quick_learn(s, n > 0 || s->rcount);
			}
			now_done = true;
			if (n >= 0)
				pulled = true; /* (it looked at the socket) */
			if (n > 0 && direct_done(s, iov, iovcnt, flags, want, &got, &trunc))
				break;
			if (n >= 0)
				continue; /* what did not fit is in the pool now */
		}
		/* Nothing left to read: every consumed buffer goes back before we stop. */
		sock_pool_open(s);
		if (end == -2)
			end = sock_timeo_deadline(s->rcvtimeo_ms);
		if (!block || (end >= 0 && ep_now_ms() >= end)) {
			if (!pulled && s->qp && ep_qp_lazy(s->qp)) {
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
		if ((rc = wait_input(s, iov, iovcnt, flags, end, &got)) < 0) {
			/* SA_RESTART, and no SO_RCVTIMEO: the kernel would have restarted it (signal(7)). */
			if (rc == -EINTR && !got && end < 0 && sock_sig_restarts(&seen))
				continue;
			if (got && rc == -EINTR)
				rc = 0;
			break;
		}
		if (rc > 0) {
			rc = 0;
			if (direct_done(s, iov, iovcnt, flags, want, &got, &trunc))
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
