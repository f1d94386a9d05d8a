/* SPDX-License-Identifier: MIT */
/*
 * Connection setup of DDPMODE sockets: connect (blocking and non-blocking),
 * listen, accept (with ESOCK_ACCEPT=both sniffing), the announcement that
 * tells two esock socket layers apart from a plain RDMA peer, and teardown.
 *
 * The endpoint gets its own descriptor for the socket (a close-on-exec dup):
 * the application's number stays the application's, so dup/close/dup2 on it
 * never pull the socket from under the QP.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"
#include "util/byteorder.h"
#include "util/env.h"
#include "util/log.h"

/*
 * The announcement, appended to the application's private data: a credit
 * block (magic, the STag and address of our credit word), then magic,
 * version, flags (SOCK_ANN_*), receive depth and size, all big-endian.  A
 * peer without it is a plain RDMA peer and RDMA rules apply; an esock peer
 * of before the credit block sends the last part only.
 */
static const uint8_t magic[4] = { 'e', 'S', 'o', 'K' };
static const uint8_t credit_magic[4] = { 'e', 'S', 'o', 'C' };

void sock_announce(const struct esock_sock *s, uint8_t *p, unsigned flags, uint32_t cw_stag,
		   uint64_t cw_addr)
{
	memcpy(p, credit_magic, 4);
	esock_put_be32(p + 4, cw_stag);
	esock_put_be64(p + 8, cw_addr);
	p += ESOCK_CREDIT_LEN;
	memcpy(p, magic, 4);
	p[4] = 1;
	p[5] = (uint8_t)(s->o.rdepth > 0 ? flags : flags & ~SOCK_ANN_PAUSES);
	esock_put_be16(p + 6, (uint16_t)s->o.rdepth);
	esock_put_be32(p + 8, (uint32_t)s->o.rsize);
}

void sock_heard(struct esock_sock *s, const uint8_t *pd, uint16_t len)
{
	const uint8_t *p;

	s->peer_esock = false;
	s->peer_ann = 0;
	s->peer_ann_len = 0;
	s->peer_rdepth = 0;
	s->peer_cw_stag = 0;
	s->peer_cw_addr = 0;
	s->peer_msg_max = (uint32_t)s->o.rsize; /* plain peer: our size, RDMA rules */
	if (len < ESOCK_ANNOUNCE_LEN)
		return;
	p = pd + len - ESOCK_ANNOUNCE_LEN;
	if (memcmp(p, magic, 4) != 0 || p[4] != 1)
		return;
	s->peer_esock = true;
	s->peer_ann = p[5];
	s->peer_ann_len = ESOCK_ANNOUNCE_LEN;
	s->peer_rdepth = esock_get_be16(p + 6);
	if (s->peer_rdepth)
		s->peer_msg_max = esock_get_be32(p + 8);
	p -= ESOCK_CREDIT_LEN;
	if (len >= SOCK_ANNOUNCED && memcmp(p, credit_magic, 4) == 0) {
		s->peer_ann_len = SOCK_ANNOUNCED;
		s->peer_cw_stag = esock_get_be32(p + 4);
		s->peer_cw_addr = esock_get_be64(p + 8);
	}
	/* (Credits bind a sender only with a depth to count them against.) */
	if (!s->peer_rdepth)
		s->peer_ann &= (uint8_t)~(SOCK_ANN_CREDITS | SOCK_ANN_WAKE);
}

/* A peer that returns credits bounds our Sends by them (before the first Send). */
static void credits_heard(struct esock_sock *s)
{
	if ((s->peer_ann & SOCK_ANN_CREDITS) && s->qp) {
		ep_qp_set_credits(s->qp, s->peer_rdepth);
		log_debug("fd %d: the peer cannot stop reading: Sends within its %u receives", s->fd,
			  s->peer_rdepth);
	}
}

/*
 * The endpoint asks before the QP receives anything: an esock peer takes
 * FPDUs packed in segments, waits for receives and half-closes as TCP does;
 * a plain RDMA peer gets RDMA rules.
 */
static bool peer_agrees(void *arg, const struct esock_conn_info *info)
{
	struct esock_sock *s = arg;

	sock_heard(s, info->private_data, info->private_data_len);
	return s->peer_esock; /* (a plain peer's Sends find receives: posted as they come) */
}

static void conn_param(struct esock_sock *s, struct esock_conn_param *p, uint8_t *pd)
{
	memset(p, 0, sizeof(*p));
	memcpy(pd, s->o.privdata, s->o.privdata_len);
	sock_announce(s, pd + s->o.privdata_len, SOCK_ANN_PAUSES, EP_CREDIT_STAG, 0);
	p->private_data = pd;
	p->private_data_len = (uint16_t)(s->o.privdata_len + SOCK_ANNOUNCED);
	p->mpa_rev = (uint8_t)s->o.mpa_rev;
	p->crc = s->o.crc ? 1 : -1;
	p->markers = s->o.markers;
	p->ird = (uint16_t)s->o.ird;
	p->ord = (uint16_t)s->o.ord;
	p->timeout_ms = s->o.timeout_ms;
	p->peer = s->o.peer[0] ? s->o.peer : NULL;
	p->wait_for_recv = s->o.rdepth > 0;
	p->pack = true; /* (withdrawn by peer_agrees for a plain RDMA peer) */
	p->half_close = true;
	p->peer_agrees = peer_agrees;
	p->peer_agrees_arg = s;
	/*
	 * A responder may not send before the initiator's first FPDU (RFC 5044);
	 * servers that speak first (SMTP, SSH, a greeting) need that FPDU at
	 * once: an RFC 6581 RTR, or (connected() below) an empty Send.  Under
	 * revision 1 there is no RTR; a revision 1 server takes us without one.
	 */
	p->p2p = s->o.mpa_rev == 1 ? -1 : 1;
	p->rtr_optional = true;
}

/* The QP, its CQ and the receive pool, before the MPA exchange. */
static int new_qp(struct esock_sock *s)
{
	struct esock_qp_attr qa = { 0 };
	int rc;

	if (!s->pd && (rc = ep_sock_pd_alloc(&s->pd)) < 0)
		return rc;
	if (!s->cq && (rc = ep_sock_cq_create(sock_cq_depth(s->o.rdepth), &s->cq)) < 0)
		return rc;
	/* (Reads and writes need no key: EP_SEND_LOCAL, ep_qp_post_recv_local; sock_api.c's ops do.) */
	qa.pd = s->pd;
	qa.send_cq = qa.recv_cq = s->cq;
	qa.sq_depth = SOCK_SQ_DEPTH;
	qa.rq_depth = (uint32_t)sock_rq_depth(s->o.rdepth);
	qa.max_sge = SOCK_MAX_SGE;
	qa.max_recv_sge = 1; /* pool buffers and the extended API's receives are one piece */
	qa.sq_sig_all = true;
	if ((rc = esock_qp_create(&qa, &s->qp)) < 0)
		return rc;
	ep_qp_set_fd(s->qp, -1, true); /* it will run on the application's descriptor */
	ep_qp_set_linger(s->qp, s->linger_abort); /* (followed by sock_linger_set) */
	ep_qp_set_lazy(s->qp, ep_engine_lazy_ok() && !s->async_api);
	ep_qp_set_rq_refill(s->qp, sock_pool_refill, s); /* receives as Sends come (sock_pool.c) */
	/* Our RTR goes with the first message (ep_sock.h): every wait for input here pushes it. */
	ep_qp_set_rtr_cork(s->qp, !s->async_api);
	ep_qp_set_pack_one(s->qp, true); /* its 64 KiB messages stay aligned (ep_sock.h) */
	s->quick_step = s->quick_skip = QUICK_SPAN_MAX; /* (trusted until a look finds input) */
	return 0;
}

static int make_qp(struct esock_sock *s)
{
	int rc = new_qp(s);

	return rc < 0 ? rc : sock_pool_setup(s);
}

static void ended_setup(struct esock_sock *s, int err)
{
	s->st = SOCK_FAILED;
	sock_stat_describe(s);
	s->err = -err;
	s->last_error.err = -err;
	if (s->qp) {
		esock_qp_destroy(s->qp);
		s->qp = NULL;
	}
}

static void connected(struct esock_sock *s, bool initiator)
{
	const struct esock_conn_info *info = ep_qp_info(s->qp); /* (no copy, no addresses asked) */

	s->st = SOCK_CONNECTED;
	if (initiator)
		credits_heard(s);
	if (initiator && !info->p2p && s->peer_esock) {
		/* No RTR negotiated (MPA revision 1): an empty Send unblocks the responder. */
		struct esock_send_wr wr = { .wr_id = SOCK_WR_DIRECT | 0, .opcode = ESOCK_WR_SEND };

		if (esock_post_send(s->qp, &wr, NULL) == 0) {
			s->inflight++;
			s->direct_seq++;
		}
	}
	/*
	 * DDP state survives exec only by the handoff (sock_handoff.c): close-
	 * on-exec in the kernel, the application's wish noted.  (An accepted
	 * one is close-on-exec from the listener on: hand_mpa notes the wish.)
	 */
	if (initiator)
		sock_keep_cloexec(s, s->fd);
	sock_stat_describe(s);
	log_info("fd %d: DDPMODE connected (peer %s, messages up to %u octets, CRC %s)", s->fd,
		 s->peer_esock ? "esock" : "plain RDMA", s->peer_msg_max, info->crc ? "on" : "off");
}

/*
 * A connection carried from another process (sock_carry.c): a QP on |s|'s
 * descriptor goes on where the other process's left off (lock held).
 * After exec |s| is new; after fork it holds a stale copy (another process
 * went on with the connection since), which goes without a word on the
 * wire: its pool's messages and queued sends were that process's.
 */
int sock_conn_resume(struct esock_sock *s, const struct ep_qp_snap *sn, const uint8_t *stage)
{
	bool borrowed = true;
	int rc, fd = s->fd;

	if (s->qp) {
		fd = ep_qp_fd(s->qp);
		borrowed = ep_qp_fd_borrowed(s->qp);
		ep_engine_del(s->qp);
		ep_qp_set_fd(s->qp, -1, borrowed); /* (its destruction must not touch the socket) */
		esock_qp_destroy(s->qp);
		s->qp = NULL;
		sock_pool_forget(s);
		if ((rc = new_qp(s)) < 0)
			return rc;
	} else if ((rc = make_qp(s)) < 0) {
		return rc;
	}
	if ((rc = ep_qp_resume(s->qp, fd, sn, stage)) < 0)
		return rc;
	ep_qp_set_fd(s->qp, ep_qp_fd(s->qp), borrowed);
	s->st = SOCK_CONNECTED;
	s->suspended = true; /* as a forked copy: started by the first call here (sock_resume) */
	sock_stat_describe(s);
	return 0;
}

/* $ESOCK_FALLBACK=tcp: a client whose peer does not speak MPA goes on in plain TCP. */
static bool fallback_tcp(void)
{
	const char *e = getenv("ESOCK_FALLBACK"); /* read when needed: a rare path */

	return e && strcmp(e, "tcp") == 0;
}

/*
 * The MPA octets already went over this connection, so the fallback is a
 * new plain TCP connection to the same peer, put under the application's
 * descriptor number (dup3 replaces the old socket, flags as they were).
 */
static int reconnect_plain(struct esock_sock *s)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	int nfd, fdflags = REAL(fcntl)(s->fd, F_GETFD), rc = 0;

	if (REAL(getpeername)(s->fd, (struct sockaddr *)&peer, &len) < 0)
		return -errno;
	if ((nfd = REAL(socket)(peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (REAL(connect)(nfd, (struct sockaddr *)&peer, len) < 0 ||
	    (s->nonblock && REAL(fcntl)(nfd, F_SETFL, O_NONBLOCK) < 0) ||
	    REAL(dup3)(nfd, s->fd, fdflags > 0 && (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
		rc = -errno;
	esock_fd_close(nfd);
	return rc;
}

/* The MPA exchange failed: the socket fails, or goes on in plain TCP (ESOCK_FALLBACK=tcp). */
static int mpa_failed(struct esock_sock *s, int rc)
{
	log_warn("fd %d: MPA exchange failed: %s", s->fd, strerror(-rc));
	ended_setup(s, rc);
	if (fallback_tcp() && (rc == -ETIMEDOUT || rc == -EPROTO || rc == -ECONNRESET) &&
	    reconnect_plain(s) == 0) {
		s->stats->fallbacks++;
		s->st = SOCK_PLAIN;
		s->err = 0;
		sock_stat_describe(s);
		log_warn("fd %d: the peer does not speak MPA: plain TCP (ESOCK_FALLBACK=tcp)", s->fd);
		return 0;
	}
	/* The stream carried MPA octets: no plain TCP on it any more. */
	REAL(shutdown)(s->fd, SHUT_RDWR);
	return rc;
}

/* TCP is up: the MPA Request goes out; the Reply is read by mpa_step, never waited for here. */
static int mpa_begin(struct esock_sock *s)
{
	struct esock_conn_param p;
	uint8_t pd[256 + SOCK_ANNOUNCED];
	int rc;

	if ((rc = new_qp(s)) < 0) {
		ended_setup(s, rc);
		return rc;
	}
	conn_param(s, &p, pd);
	/*
	 * On the application's own descriptor: one per connection, as with
	 * plain TCP.  The receive pool is made while the Request travels and
	 * the server answers (nothing can come before the Reply is read, here).
	 */
	if ((rc = esock_qp_connect_start(s->qp, s->fd, &p)) < 0 || (rc = sock_pool_setup(s)) < 0)
		return mpa_failed(s, rc);
	s->st = SOCK_MPA_CONNECTING;
	sock_stat_describe(s);
	return 0;
}

/* A peer announcing a receive size below the floor is refused (SOCK_PEER_RSIZE_MIN). */
static bool size_refused(const struct esock_sock *s)
{
	if (!s->peer_esock || s->peer_msg_max >= SOCK_PEER_RSIZE_MIN)
		return false;
	log_warn("fd %d: the peer announces receives of %u octets (at least %d): refused", s->fd,
		 s->peer_msg_max, SOCK_PEER_RSIZE_MIN);
	return true;
}

/* One look at the Reply: 0 connected (or fallen back), -EINPROGRESS, -errno. */
static int mpa_step(struct esock_sock *s)
{
	int rc = esock_qp_connect_continue(s->qp);

	if (rc == -EINPROGRESS)
		return rc;
	if (rc == 0 && size_refused(s)) {
		ended_setup(s, -EPROTO);
		REAL(shutdown)(s->fd, SHUT_RDWR);
		return -EPROTO;
	}
	if (rc == 0) {
		connected(s, true);
		return 0;
	}
	return mpa_failed(s, rc);
}

/*
 * A non-blocking connect stays non-blocking through the MPA exchange: TCP
 * first (the kernel's), then the Request, then the Reply as it comes; a
 * caller that waits (|wait_ms| -1: until done, bounded by the MPA timeout;
 * else at most that long for the Reply) waits for each.  Lock held.
 */
int sock_connect_progress(struct esock_sock *s, int wait_ms)
{
	int64_t end = wait_ms > 0 ? ep_now_ms() + wait_ms : 0;
	int rc = 0;

	if (s->st == SOCK_TCP_CONNECTING) {
		struct pollfd p = { .fd = s->fd, .events = POLLOUT };

		if (REAL(poll)(&p, 1, wait_ms) <= 0 || !(p.revents & (POLLOUT | POLLERR | POLLHUP)))
			return -EAGAIN;
		if ((rc = mpa_begin(s)) < 0)
			return rc;
	}
	while (s->st == SOCK_MPA_CONNECTING) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		int64_t spin_end = 0;
		int t;

		if ((rc = mpa_step(s)) != -EINPROGRESS)
			return rc;
		if (!wait_ms || (end && ep_now_ms() >= end))
			return -EAGAIN;
		/* The Reply is one server round trip away: spin a little first, as a waiter for data does. */
		while (ep_spin(&spin_end))
			if ((rc = mpa_step(s)) != -EINPROGRESS)
				return rc;
		if (ep_connect_settling(s->qp))
			p.events = 0; /* the Reply is in: only the profile's pause is left */
		t = esock_qp_connect_wait_ms(s->qp);
		if (end && (t < 0 || t > end - ep_now_ms()))
			t = end - ep_now_ms() > 0 ? (int)(end - ep_now_ms()) : 0;
		if (REAL(poll)(&p, 1, t) < 0 && errno != EINTR)
			return -errno;
	}
	return s->st == SOCK_FAILED ? (s->err ? -s->err : -ENOTCONN) : 0;
}

int sock_connect_watch(struct esock_sock *s, int *fd, short *events)
{
	if (s->st == SOCK_MPA_CONNECTING) {
		*fd = s->fd;
		*events = ep_connect_settling(s->qp) ? 0 : POLLIN;
		return esock_qp_connect_wait_ms(s->qp);
	}
	*fd = s->fd;
	*events = POLLOUT;
	return -1;
}

unsigned sock_connect_ready(struct esock_sock *s, unsigned events)
{
	pthread_mutex_lock(&s->lock);
	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING)
		(void)sock_connect_progress(s, 0);
	pthread_mutex_unlock(&s->lock);
	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING)
		return 0;
	if (s->st == SOCK_PLAIN) { /* fell back: the kernel's readiness from now on */
		struct pollfd p = { .fd = s->fd, .events = (short)events };

		return REAL(poll)(&p, 1, 0) == 1 ? (unsigned)p.revents : 0;
	}
	return sock_ready(s, events);
}

int sock_connect(struct esock_sock *s, const struct sockaddr *addr, socklen_t len)
{
	int rc;

	if (s->st == SOCK_TCP_CONNECTING || s->st == SOCK_MPA_CONNECTING)
		return -EALREADY;
	if (s->st == SOCK_CONNECTED)
		return -EISCONN;
	if (s->st != SOCK_MARKED)
		return s->err ? -s->err : -EINVAL;
	/* (Regions registered before connect are the user-level PD's: such a socket stays there.) */
	if (!s->nmrs && sock_vb_for_connect(addr, len))
		return sock_vb_connect(s, addr, len);
	if (REAL(connect)(s->fd, addr, len) < 0) {
		rc = -errno;
		if (rc == -EINPROGRESS)
			s->st = SOCK_TCP_CONNECTING;
		return rc;
	}
	if ((rc = mpa_begin(s)) < 0 || s->st != SOCK_MPA_CONNECTING)
		return rc;
	/* (The flag as set before DDPMODE, or since through fcntl or ioctl: sock.c, preload.c.) */
	if (s->nonblock) {
		rc = sock_connect_progress(s, 0);
		return rc == -EAGAIN ? -EINPROGRESS : rc;
	}
	/*
	 * Blocking: TCP's connect returns once the server's kernel took the
	 * connection (its listen backlog), before the server accepts; ours
	 * needs the server's MPA Reply, sent from its accept.  So it waits a
	 * server's round trip and a prompt accept (SOCK_CONNECT_GRACE_MS: a
	 * refusal still fails the connect), then returns connected as far as
	 * the application knows; the first call that needs the connection
	 * (a read, a write, a negotiated option) waits for the Reply, up to the
	 * MPA timeout (a client that connects to a listener of its own thread
	 * before accepting, a server slow to accept).
	 */
	rc = sock_connect_progress(s, SOCK_CONNECT_GRACE_MS);
	return rc == -EAGAIN ? 0 : rc;
}

/* Read at each listen (rare): a program may set it before its own listen. */
static int accept_mode_both(void)
{
	const char *e = getenv("ESOCK_ACCEPT");

	return e && strcmp(e, "both") == 0;
}

/*
 * The listener reads the MPA Requests of all new connections without
 * blocking on any (ep_listen.c): a silent client delays nobody, and the
 * socket is readable only when a connection's Request is in.  With
 * ESOCK_ACCEPT=both it also hands out plain TCP connections: other first
 * octets, or silence for ESOCK_SNIFF_MS (default 200; a client that waits
 * for the server's greeting, as SSH and SMTP do).
 */
int sock_listen(struct esock_sock *s, int backlog)
{
	struct esock_listen_param lp = { .timeout_ms = s->o.timeout_ms };
	int rc;

	if (s->verbs || (s->st == SOCK_MARKED && sock_vb_for_listen(s)))
		return sock_vb_listen(s, backlog);
	if (s->st != SOCK_MARKED && s->st != SOCK_LISTENING)
		return -EINVAL;
	if (REAL(listen)(s->fd, backlog) < 0)
		return -errno;
	if (accept_mode_both())
		lp.sniff_ms = esock_env_int("ESOCK_SNIFF_MS", 200, 1, 60000);
	if (!s->lst) {
		/*
		 * The listener accepts without waiting, so the file becomes
		 * non-blocking; the application keeps its own view of the flag
		 * (fcntl and FIONBIO on a DDPMODE listener: preload.c).
		 */
		int fl = REAL(fcntl)(s->fd, F_GETFL);

		if (fl < 0 || (!(fl & O_NONBLOCK) && REAL(fcntl)(s->fd, F_SETFL, fl | O_NONBLOCK) < 0))
			return -errno;
		s->nonblock = (fl & O_NONBLOCK) != 0;
		if ((rc = ep_sock_listener_from_fd(s->fd, &s->lst)) < 0)
			return rc;
	}
	esock_listener_configure(s->lst, &lp);
	s->st = SOCK_LISTENING;
	sock_stat_describe(s);
	return 0;
}

/*
 * |look|: its poll descriptor said something came (or nobody knows), so the
 * backlog and the Requests under way are looked at (system calls); else only
 * the connections it has ready to hand out count.
 */
unsigned sock_listen_ready(struct esock_sock *ls, unsigned events, bool look)
{
	struct esock_listener *l = ls->lst;

	if (!(events & (POLLIN | POLLRDNORM)) || !l)
		return 0;
	if (look ? esock_listener_ready(l) > 0 : ep_listener_pending(l) > 0)
		return (POLLIN | POLLRDNORM) & events;
	return 0;
}

/* Applies accept4's SOCK_NONBLOCK to the file (the listener accepts non-blocking). */
static int set_nonblock(int fd, bool on)
{
	int fl = REAL(fcntl)(fd, F_GETFL);

	if (fl < 0 || REAL(fcntl)(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* A plain TCP connection (ESOCK_ACCEPT=both) to the application, as accept4 would. */
static int hand_plain(struct esock_sock *ls, int fd, int flags)
{
	int rc;

	if ((rc = set_nonblock(fd, flags & SOCK_NONBLOCK)) < 0 ||
	    (!(flags & SOCK_CLOEXEC) && REAL(fcntl)(fd, F_SETFD, 0) < 0 && (rc = -errno))) {
		esock_fd_close(fd);
		return rc;
	}
	ls->stats->fallbacks++;
	log_info("fd %d: accepted as plain TCP (no MPA Request; ESOCK_ACCEPT=both)", fd);
	return fd;
}

/*
 * The passive MPA exchange of a connection whose Request is in.  The
 * application and the QP share one descriptor, the lowest free (as accept
 * gives); close-on-exec whatever |flags| say (connected()).  A failed
 * exchange closes it (esock_reject, esock_accept).  Returns it or -errno.
 */
static int hand_mpa(struct esock_sock *ls, struct esock_conn_req *req, int flags)
{
	struct esock_conn_param p;
	uint8_t pd[256 + SOCK_ANNOUNCED];
	struct esock_sock *s;
	int fd, rc;

	if ((fd = ep_conn_req_lowest_fd(req)) < 0) {
		esock_reject(req, NULL, 0);
		return fd;
	}
	/* The listener's accepted connections are non-blocking; the application's may not be. */
	if ((!(flags & SOCK_NONBLOCK) && REAL(fcntl)(fd, F_SETFL, 0) < 0 && (rc = -errno)) ||
	    !(s = sock_new_accepted(fd, ls))) {
		esock_reject(req, NULL, 0);
		return rc < 0 ? rc : -ENOMEM;
	}
	s->nonblock = (flags & SOCK_NONBLOCK) != 0;
	s->o = ls->o;
	{
		size_t pd_len;
		const uint8_t *pd_in = ep_conn_req_private_data(req, &pd_len);

		sock_heard(s, pd_in, pd_len);
	}
	/* Failing, the descriptor leaves the table before it is closed: its number is free then. */
	if (size_refused(s)) {
		sock_release_fd(fd);
		esock_reject(req, NULL, 0);
		return -EPROTO;
	}
	/*
	 * An esock peer's Sends wait for a receive (it said so): the pool is
	 * made after our Reply left, while the client reads it.  A plain RDMA
	 * peer's first Send must find receives posted.
	 */
	if ((rc = s->peer_esock ? new_qp(s) : make_qp(s)) < 0) {
		sock_release_fd(fd);
		esock_reject(req, NULL, 0);
		return rc;
	}
	credits_heard(s);
	conn_param(s, &p, pd);
	ep_conn_req_keep_fd(req);
	if ((rc = esock_accept(req, s->qp, &p)) < 0 || (s->peer_esock && (rc = sock_pool_setup(s)) < 0)) {
		log_warn("fd %d: MPA accept failed (%s); connection closed", fd, strerror(-rc));
		sock_close_fd(fd);
		return rc;
	}
	connected(s, false);
	sock_note_inherit(fd, !(flags & SOCK_CLOEXEC));
	return fd;
}

/*
 * accept on a DDPMODE listener: the oldest connection whose Request is in.
 * A non-blocking listener (the application's flag) never waits;
 * a blocking one sleeps on the listener's poll descriptor, in slices so
 * that a close from another thread is noticed, and honours SO_RCVTIMEO.
 */
int sock_accept(struct esock_sock *ls, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct timeval tv = { 0 };
	socklen_t tl = sizeof(tv);
	bool nonblock = ls->nonblock;
	struct sock_sig_seen seen;
	int64_t end = -1;

	sock_sig_seen_begin(&seen);
	if (!nonblock && REAL(getsockopt)(ls->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tl) == 0 &&
	    (tv.tv_sec || tv.tv_usec))
		end = ep_now_ms() + tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
	for (;;) {
		struct esock_conn_req *req;
		struct pollfd p = { .events = POLLIN };
		int rc = esock_get_request(ls->lst, &req, 0), fd;

		if (rc == 0) {
			fd = esock_conn_req_take_plain(req);
			fd = fd >= 0 ? hand_plain(ls, fd, flags) : hand_mpa(ls, req, flags);
			if (fd >= 0 && addr && alen && REAL(getpeername)(fd, addr, alen) < 0)
				*alen = 0;
			if (fd >= 0 || fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM)
				return fd;
			continue; /* that one failed its exchange: the next */
		}
		if (rc != -ETIMEDOUT)
			return rc;
		if (nonblock)
			return -EAGAIN;
		if (atomic_load(&ls->closing))
			return -EBADF;
		if (end >= 0 && ep_now_ms() >= end)
			return -EAGAIN;
		p.fd = esock_listener_poll_fd(ls->lst);
		/* (EINTR: unless every handler that ran has SA_RESTART and no timeout is set, signal(7)) */
		if (REAL(poll)(&p, 1, end >= 0 && end - ep_now_ms() < 500 ? (int)(end - ep_now_ms()) : 500) < 0 &&
		    errno == EINTR && !(end < 0 && sock_sig_restarts(&seen)))
			return -EINTR;
	}
}

/* How long close waits for queued sends to leave: $ESOCK_LINGER_MS, default 5000. */
static int linger_ms(void)
{
	return esock_env_int("ESOCK_LINGER_MS", 5000, 0, 3600000);
}

/*
 * A close whose queued sends did not drain within the linger time: what is
 * left would be lost, and a FIN between FPDUs would make the stream look
 * complete to the peer.  The connection is reset instead (SO_LINGER {1, 0}
 * on the socket the application closes next): the peer sees an error.
 */
static void stalled_close(struct esock_sock *s, struct esock_qp *qp, int fd)
{
	struct linger l = { 1, 0 };

	log_info("fd %d: close: queued sends did not drain in %d ms: the connection is reset", s->fd,
		 linger_ms());
	if (fd >= 0)
		REAL(setsockopt)(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	ep_qp_set_linger(qp, true);
}

/*
 * The linger time counts from the last progress (the kernel's send queue
 * moved: ACKs came), not from the close: over a lossy path a drain may take
 * longer than the linger time and still be going well.
 */
struct linger_clock {
	int fd, outq; /* (outq -2: not read yet; the first reading is no progress) */
	int64_t since;
};

static void linger_start(struct linger_clock *c, int fd)
{
	*c = (struct linger_clock){ .fd = fd, .outq = -2, .since = ep_now_ms() };
}

static bool linger_over(struct linger_clock *c)
{
	int64_t now = ep_now_ms();
	int q = -1;

	/* (Restricted: no ioctl; the time counts from the start then.) */
	if (c->fd >= 0 && !atomic_load(&ep_restricted) && REAL(ioctl)(c->fd, SIOCOUTQ, &q) == 0 &&
	    q != c->outq) {
		if (c->outq != -2)
			c->since = now;
		c->outq = q;
	}
	return now - c->since > linger_ms();
}

/*
 * The process ends without closing |s| (exit, main returned; lock held): as
 * the kernel still sends what TCP holds, what the connection has queued goes
 * first, then the FIN the kernel sends as the file closes.  What cannot go
 * within the linger time resets the connection instead, so that the peer
 * does not take a stream cut short for a whole one.  (_exit and fatal
 * signals run no destructor: what is queued is lost then, and the peer
 * sees the FIN between FPDUs, or a cut FPDU, as the kernel sent it.)
 * |*since|: the last progress of any connection so far (0: none yet), so
 * that many stalled connections cost one linger time, not one each.
 */
void sock_flush_at_exit(struct esock_sock *s, int64_t *since)
{
	struct linger_clock c;
	struct esock_qp *qp = s->qp;

	if (s->verbs) {
		sock_vb_flush(s);
		return;
	}
	if (s->off || !qp || s->suspended || s->linger_abort || ep_qp_fd(qp) < 0 ||
	    esock_qp_state(qp) != ESOCK_QPS_RTS)
		return;
	linger_start(&c, ep_qp_fd(qp));
	if (*since)
		c.since = *since;
	while ((s->inflight || ep_qp_send_pending(qp)) && !s->err && !s->tx_failed &&
	       esock_qp_state(qp) == ESOCK_QPS_RTS) {
		if (linger_over(&c)) {
			stalled_close(s, qp, ep_qp_fd(qp));
			break;
		}
		if (sock_wait_some(s, ep_now_ms() + 10) == -EBADF)
			break;
	}
	*since = c.since;
}

void sock_teardown(struct esock_sock *s, bool graceful)
{
	struct esock_qp *qp;
	bool others, quiesced;

	if (s->off) {
		sock_off_release(s);
		return;
	}
	if (s->verbs) {
		sock_vb_release(s, graceful);
		return;
	}
	pthread_mutex_lock(&s->lock);
	/* Held by other processes too: left to them, with its state if it is ours. */
	others = sock_share_leave(s, &quiesced);
	if ((qp = s->qp)) {
		if (others || s->suspended) {
			/* A copy from fork: the other process may own the connection. */
			ep_engine_del(qp);
			if (ep_qp_fd(qp) >= 0 && !ep_qp_fd_borrowed(qp))
				esock_fd_close(ep_qp_fd(qp));
			ep_qp_set_fd(qp, -1, ep_qp_fd_borrowed(qp));
			if (quiesced)
				ep_qp_unquiesce(qp); /* (its destruction waits for the token) */
		} else if (graceful && esock_qp_state(qp) == ESOCK_QPS_RTS) {
			struct linger_clock c;

			linger_start(&c, ep_qp_fd(qp));
			esock_qp_disconnect(qp);
			while (esock_qp_state(qp) == ESOCK_QPS_CLOSING) {
				struct esock_wc wc[16];

				if (linger_over(&c)) {
					stalled_close(s, qp, c.fd);
					break;
				}
				(void)esock_cq_wait(s->cq, 16, wc, 50);
			}
		}
		esock_qp_destroy(qp);
		s->qp = NULL;
	}
	if (s->lst) {
		esock_listener_close(s->lst); /* resets connections whose Request was not taken */
		s->lst = NULL;
	}
	sock_api_release(s);
	if (s->all_mr)
		esock_mr_dereg(s->all_mr);
	s->all_mr = NULL;
	pthread_mutex_unlock(&s->lock);
}

int sock_shutdown(struct esock_sock *s, int how)
{
	int rc = 0;

	if (s->off)
		return sock_off_shutdown(s, how);
	pthread_mutex_lock(&s->lock);
	if (s->st != SOCK_CONNECTED) {
		pthread_mutex_unlock(&s->lock);
		return s->st == SOCK_LISTENING || s->st == SOCK_MARKED ? -ENOTCONN : 0;
	}
	if (how == SHUT_RD || how == SHUT_RDWR)
		s->shut_rd = true;
	if ((how == SHUT_WR || how == SHUT_RDWR) && !s->shut_wr) {
		s->shut_wr = true;
		if (s->verbs) {
			rc = sock_vb_close_send(s); /* (no half-close in the kernel's RDMA) */
		} else if (s->qp && esock_qp_state(s->qp) == ESOCK_QPS_RTS && s->peer_esock) {
			/*
			 * Towards an esock peer, TCP's half-close: the peer reads EOF
			 * and may still send.  Our FIN follows what is queued: the
			 * send WRs, and the rest of a message written in a call that
			 * TCP did not take whole (no WR: the QP waits for room).  A
			 * FIN before that rest ended the stream a message early where
			 * the peer saw it complete (5 % loss: 8 MiB less 8192 octets,
			 * both ends content).  The endpoint sends it once the last of
			 * that is out; the call does not wait (TCP's does not).
			 */
			ep_qp_close_send(s->qp);
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
