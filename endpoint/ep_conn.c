/* SPDX-License-Identifier: MIT */
/*
 * Connection setup (RFC 5044 §7.1, RFC 6581): TCP connect / accept, then the
 * MPA Request and Reply exchanged in the caller's thread under the MPA
 * timeout, negotiated by the pure code in mpa/ with a policy made of the
 * caller's parameters and the peer profile.  Exactly one start frame is read
 * from the socket: what follows belongs to the FPDU stream.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "util/env.h"
#include "util/log.h"


int ep_mpa_timeout_ms(void)
{
	int v = esock_env_int("ESOCK_MPA_TIMEOUT_MS", EP_TIMEOUT_DEFAULT_MS, -1, 3600000);

	return v ? v : EP_TIMEOUT_DEFAULT_MS;
}

/* The MPA deadline; a caller's 0 means the environment's (or the default) timeout. */
static int64_t deadline_of(int timeout_ms)
{
	if (timeout_ms == 0)
		timeout_ms = ep_mpa_timeout_ms();
	return timeout_ms < 0 ? -1 : ep_now_ms() + timeout_ms;
}

/* Waits for |ev| on |fd| until |deadline| (-1: none).  0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };

	for (;;) {
		int left = deadline < 0 ? -1 : (int)(deadline - ep_now_ms());
		int rc;

		if (deadline >= 0 && left < 0)
			return -ETIMEDOUT;
		rc = REAL(poll)(&p, 1, left);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int write_all(int fd, const uint8_t *p, size_t n, int64_t deadline)
{
	while (n) {
		ssize_t k = REAL(send)(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		int rc;

		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			return -errno;
		} else if ((rc = wait_fd(fd, POLLOUT, deadline)) < 0) {
			return rc;
		}
	}
	return 0;
}

int ep_frame_read(int fd, uint8_t *buf, size_t *have, bool request)
{
	size_t need = esock_mpa_frame_need(buf, *have);

	while (*have < need) {
		/* (A Request in one read: the header, then its length, would be two.) */
		size_t ask = (request ? ESOCK_MPA_FRAME_MAX : need) - *have;
		ssize_t k = REAL(recv)(fd, buf + *have, ask, MSG_DONTWAIT);

		if (k == 0)
			return -ECONNRESET;
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		}
		*have += (size_t)k;
		/* Not a start frame: say so at once, not after the MPA timeout. */
		if (memcmp(buf, "MPA ID Re", *have < 9 ? *have : 9) != 0)
			return -EPROTO;
		need = esock_mpa_frame_need(buf, *have);
		if (need > ESOCK_MPA_FRAME_MAX)
			return -EMSGSIZE;
		if (*have > need) /* RFC 5044: no FPDU before the Reply */
			return -EPROTO;
	}
	return 1;
}

void ep_tune_socket(int fd)
{
	int one = 1;

	REAL(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void ep_close_reset(int fd)
{
	struct linger l = { 1, 0 };

	REAL(setsockopt)(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	esock_fd_close(fd);
}

static int make_policy(const struct esock_conn_param *p, const struct ep_profile *prof,
		       struct esock_mpa_policy *pol, bool initiator)
{
	static const struct esock_conn_param none;

	if (!p)
		p = &none;
	memset(pol, 0, sizeof(*pol));
	pol->rev = p->mpa_rev ? p->mpa_rev : prof->mpa_rev;
	pol->crc = p->crc ? p->crc > 0 : prof->crc;
	pol->markers_rx = p->markers;
	pol->markers_tx = true; /* we always accept (and so send) markers */
	/*
	 * A profile's p2p says whether we ask for an RTR; as the responder we
	 * accept one by default (RFC 6581: A is echoed; siw does the same), and
	 * refuse only when told to (p2p = -1).
	 */
	pol->p2p = p->p2p ? p->p2p > 0 : initiator ? prof->p2p : prof->rtr_accept != 0;
	pol->rtr = initiator ? prof->rtr_offer : prof->rtr_accept;
	pol->ird = p->ird ? p->ird : EP_IRD_DEFAULT;
	pol->ord = p->ord ? p->ord : EP_ORD_DEFAULT;
	pol->pd = p->private_data;
	pol->pd_len = p->private_data_len;
	pol->pd_max = prof->pd_max;
	pol->siw_compat = prof->siw_compat;
	pol->p2p_optional = p->rtr_optional;
	if (pol->rev < 1 || pol->rev > 2 || pol->ird > EP_IRD_MAX || pol->ord > EP_IRD_MAX ||
	    (pol->pd_len && !pol->pd) ||
	    pol->pd_len + (pol->rev == 2 ? ESOCK_MPA_IRD_ORD_LEN : 0) > prof->pd_max)
		return -EINVAL;
	if (initiator && pol->p2p && !pol->rtr)
		return -EINVAL;
	return 0;
}

void ep_sockaddrs(int fd, struct esock_conn_info *info)
{
	socklen_t l = sizeof(info->local);

	if (!info->local.ss_family)
		REAL(getsockname)(fd, (struct sockaddr *)&info->local, &l);
	l = sizeof(info->remote);
	if (!info->remote.ss_family)
		REAL(getpeername)(fd, (struct sockaddr *)&info->remote, &l);
}

/*
 * Addresses are asked of the kernel only when somebody needs them (the
 * socket buffer bounds, a snapshot, the API's connection info): two system
 * calls a connection less for those that never ask.
 */
void ep_qp_addrs(struct esock_qp *qp)
{
	if (qp->addrs_known || qp->fd < 0)
		return;
	ep_sockaddrs(qp->fd, &qp->info);
	qp->addrs_known = true;
}

/* Fills qp->info from the negotiation and the peer's frame. */
static void set_info(struct esock_qp *qp, const struct esock_mpa_params *mp,
		     const struct esock_mpa_frame *peer, const struct ep_profile *prof)
{
	struct esock_conn_info *i = &qp->info;

	i->mpa_rev = mp->rev ? mp->rev : peer->rev; /* a reject negotiates nothing */
	i->enhanced = mp->enhanced;
	i->crc = mp->crc;
	i->markers_tx = mp->markers_tx;
	i->markers_rx = mp->markers_rx;
	i->p2p = mp->p2p;
	i->rtr = mp->rtr;
	i->ird = mp->ird;
	i->ord = mp->ord;
	i->peer_ird = mp->peer_ird;
	i->peer_ord = mp->peer_ord;
	i->private_data_len = peer->pd_len;
	if (peer->pd_len)
		memcpy(i->private_data, peer->pd, peer->pd_len);
	i->peer = prof->name;
	qp->info_valid = true;
}

/* What the caller asked of the peer's FIN, of Sends without a receive and of segments. */
static void take_param(struct esock_qp *qp, const struct esock_conn_param *param)
{
	qp->rx_wait = param && param->wait_for_recv;
	qp->half_close = param && param->half_close;
	qp->tx_pack = param && param->pack;
}

/*
 * The peer's frame is in: the addresses (|r|'s when it has them: the
 * listener asked for them already), then the caller's verdict, before the QP reads.
 */
static void peer_known(struct esock_qp *qp, int fd, const struct esock_conn_req *r,
		       const struct esock_conn_param *param)
{
	(void)fd;
	memset(&qp->info.local, 0, sizeof(qp->info.local));
	memset(&qp->info.remote, 0, sizeof(qp->info.remote));
	if (r) { /* what the listener knows (accept4 gave the peer's) */
		qp->info.local = r->local;
		qp->info.remote = r->remote;
	}
	qp->addrs_known = qp->info.local.ss_family && qp->info.remote.ss_family;
	if (param && param->peer_agrees && !param->peer_agrees(param->peer_agrees_arg, &qp->info))
		qp->rx_wait = qp->half_close = qp->tx_pack = false;
}

static int tcp_connect(const struct sockaddr *addr, socklen_t len, int64_t deadline)
{
	int fd = REAL(socket)(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc, err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -errno;
	ep_tune_socket(fd);
	if (REAL(connect)(fd, addr, len) < 0 && errno != EINPROGRESS) {
		rc = -errno;
		esock_fd_close(fd);
		return rc;
	}
	if ((rc = wait_fd(fd, POLLOUT, deadline)) < 0 ||
	    (REAL(getsockopt)(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err && (rc = -err))) {
		esock_fd_close(fd);
		return rc;
	}
	return fd;
}

/* Best effort: a Terminate about a start-up failure (the caller closes). */
static void refuse(int fd, const struct esock_term *t, bool crc)
{
	struct esock_rdmap_term tm;
	struct esock_mpa_tx tx;
	uint8_t buf[96];
	struct iovec iov;
	ssize_t n;

	esock_rdmap_term_build(&tm, t, NULL, 0);
	if ((n = esock_rdmap_term_msg(&tm, 1, buf, sizeof(buf))) > 0) {
		uint8_t out[160];

		iov.iov_base = buf;
		iov.iov_len = (size_t)n;
		esock_mpa_tx_init(&tx, crc, false, 0);
		if (esock_mpa_tx_build(&tx, &iov, 1) > 0 &&
		    (n = esock_mpa_tx_flatten(&tx, out, sizeof(out))) > 0)
			(void)!REAL(send)(fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

/*
 * The initiator's exchange in two steps, so that a non-blocking caller never
 * waits for the Reply: connect_begin sends the Request (a fresh socket's
 * buffer takes it whole), connect_step reads what the Reply has so far.
 */
struct ep_connecting {
	struct esock_mpa_policy pol;
	struct esock_mpa_frame req;
	uint8_t pd[ESOCK_MPA_PD_MAX];  /* the caller's private data, kept for the check */
	uint8_t in[ESOCK_MPA_FRAME_MAX];
	size_t have;
	int fd;
	int64_t deadline;
	int64_t settle_until;          /* Reply taken: first FPDU not before this (profile) */
	bool (*peer_agrees)(void *arg, const struct esock_conn_info *info);
	void *peer_agrees_arg;
};

static void connecting_end(struct esock_qp *qp, int rc)
{
	if (rc < 0) {
		if (atomic_load(&qp->state) == ESOCK_QPS_RTS)
			ep_engine_del(qp);
		qp->fd = -1;
		atomic_store(&qp->state, ESOCK_QPS_IDLE);
	}
	free(qp->connecting);
	qp->connecting = NULL;
}

static int connect_begin(struct esock_qp *qp, int fd, const struct esock_mpa_policy *pol,
			 const struct esock_conn_param *param, int64_t deadline)
{
	struct ep_connecting *c = calloc(1, sizeof(*c));
	uint8_t out[ESOCK_MPA_FRAME_MAX];
	ssize_t n;
	int rc;

	if (!c) {
		atomic_store(&qp->state, ESOCK_QPS_IDLE);
		return -ENOMEM;
	}
	c->pol = *pol;
	if (pol->pd_len) {
		memcpy(c->pd, pol->pd, pol->pd_len);
		c->pol.pd = c->pd;
	}
	c->fd = fd;
	c->deadline = deadline;
	if (param) {
		c->peer_agrees = param->peer_agrees;
		c->peer_agrees_arg = param->peer_agrees_arg;
	}
	qp->connecting = c;
	if ((rc = esock_mpa_request_build(&c->pol, &c->req)) < 0 ||
	    (n = esock_mpa_frame_encode(&c->req, out, sizeof(out))) < 0 ||
	    (rc = write_all(fd, out, (size_t)n, deadline)) < 0) {
		rc = rc < 0 ? rc : -EINVAL;
		connecting_end(qp, rc);
		return rc;
	}
	return 0;
}

/* Reads what the Reply has; 0 in RTS, -EINPROGRESS for more, else failed (QP idle). */
static int connect_step(struct esock_qp *qp)
{
	struct ep_connecting *c = qp->connecting;
	struct esock_mpa_frame rep;
	struct esock_mpa_params mp;
	struct esock_term t = { 0 };
	int rc;

	if (!c)
		return -EINVAL;
	if (c->settle_until) {
		/* The Reply was taken; the peer gets time before our first FPDU. */
		if (ep_now_ms() < c->settle_until)
			return -EINPROGRESS;
		rc = ep_qp_start(qp, c->fd, true);
		connecting_end(qp, rc);
		return rc;
	}
	rc = ep_frame_read(c->fd, c->in, &c->have, false);
	if (rc == 0) {
		if (c->deadline < 0 || ep_now_ms() < c->deadline)
			return -EINPROGRESS;
		rc = -ETIMEDOUT;
	} else if (rc > 0 &&
		   esock_mpa_frame_decode(&rep, true, c->in, c->have, c->pol.pd_max, &t) < 0) {
		refuse(c->fd, &t, c->req.crc);
		rc = -EPROTO;
	} else if (rc > 0) {
		rc = esock_mpa_reply_check(&c->pol, &c->req, &rep, &mp, &t);
		set_info(qp, &mp, &rep, qp->prof);
		if (rc == -EPROTO)
			refuse(c->fd, &t, mp.crc || c->req.crc);
	}
	if (rc == 0) {
		struct esock_conn_param hook = { .peer_agrees = c->peer_agrees,
						 .peer_agrees_arg = c->peer_agrees_arg };

		peer_known(qp, c->fd, NULL, &hook);
		if (qp->prof->first_fpdu_delay_ms > 0) {
			/*
			 * siw 6.1 as responder may not be ready for our first FPDU
			 * (the RTR included) right after its Reply: one arriving
			 * then can make it close before telling its CM of the
			 * connection, a kernel BUG in iw_cm.  Wait, not blocking.
			 */
			c->settle_until = ep_now_ms() + qp->prof->first_fpdu_delay_ms;
			return -EINPROGRESS;
		}
		rc = ep_qp_start(qp, c->fd, true);
	}
	connecting_end(qp, rc);
	return rc;
}

bool ep_connect_settling(const struct esock_qp *qp)
{
	return qp && qp->connecting && qp->connecting->settle_until;
}

/* The whole exchange, waiting (esock_qp_connect, esock_qp_connect_fd); takes |fd| on success. */
static int connect_on(struct esock_qp *qp, int fd, const struct esock_mpa_policy *pol,
		      const struct esock_conn_param *param, int64_t deadline)
{
	int rc = connect_begin(qp, fd, pol, param, deadline);

	while (rc == 0 && (rc = connect_step(qp)) == -EINPROGRESS) {
		if (ep_connect_settling(qp)) {
			int ms = user_qp_connect_wait_ms(qp);
			struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
			rc = 0;
		} else if ((rc = wait_fd(fd, POLLIN, deadline)) < 0)
			connecting_end(qp, rc);
	}
	return rc;
}

int user_qp_connect(struct esock_qp *qp, const struct sockaddr *addr,
				  socklen_t addrlen, const struct esock_conn_param *param)
{
	struct esock_mpa_policy pol;
	int64_t deadline = deadline_of(param ? param->timeout_ms : 0);
	int expect = ESOCK_QPS_IDLE, fd, rc;

	if (!qp || !addr || !(qp->prof = ep_profile_pick(param ? param->peer : NULL)) ||
	    make_policy(param, qp->prof, &pol, true) < 0)
		return -EINVAL;
	take_param(qp, param);
	if (!atomic_compare_exchange_strong(&qp->state, &expect, ESOCK_QPS_CONNECTING))
		return -EINVAL;
	if ((fd = tcp_connect(addr, addrlen, deadline)) < 0) {
		atomic_store(&qp->state, ESOCK_QPS_IDLE);
		return fd;
	}
	esock_fd_own(fd);
	qp->fd_own = true; /* (before it runs: the flag is read by its waiters) */
	if ((rc = connect_on(qp, fd, &pol, param, deadline)) < 0) {
		qp->fd_own = false;
		esock_fd_close(fd);
	}
	return rc;
}

/* Checks and takes the parameters of an exchange over the caller's |fd|. */
static int connect_fd_prepare(struct esock_qp *qp, int fd, const struct esock_conn_param *param,
			      struct esock_mpa_policy *pol)
{
	int expect = ESOCK_QPS_IDLE;

	if (!qp || fd < 0 || !(qp->prof = ep_profile_pick(param ? param->peer : NULL)) ||
	    make_policy(param, qp->prof, pol, true) < 0)
		return -EINVAL;
	take_param(qp, param);
	if (!atomic_compare_exchange_strong(&qp->state, &expect, ESOCK_QPS_CONNECTING))
		return -EINVAL;
	qp->fd_own = false; /* (the caller's flags stay as they are) */
	ep_tune_socket(fd);
	return 0;
}

int user_qp_connect_fd(struct esock_qp *qp, int fd, const struct esock_conn_param *param)
{
	struct esock_mpa_policy pol;
	int64_t deadline = deadline_of(param ? param->timeout_ms : 0);
	int rc = connect_fd_prepare(qp, fd, param, &pol);

	return rc < 0 ? rc : connect_on(qp, fd, &pol, param, deadline);
}

int user_qp_connect_start(struct esock_qp *qp, int fd,
					const struct esock_conn_param *param)
{
	struct esock_mpa_policy pol;
	int64_t deadline = deadline_of(param ? param->timeout_ms : 0);
	int rc = connect_fd_prepare(qp, fd, param, &pol);

	return rc < 0 ? rc : connect_begin(qp, fd, &pol, param, deadline);
}

void ep_conn_move_fd(struct esock_qp *qp, int nfd)
{
	if (qp->connecting)
		qp->connecting->fd = nfd;
}

int user_qp_connect_continue(struct esock_qp *qp)
{
	return qp ? connect_step(qp) : -EINVAL;
}

int user_qp_connect_wait_ms(const struct esock_qp *qp)
{
	int64_t left;

	if (!qp || !qp->connecting)
		return -1;
	if (qp->connecting->settle_until)
		left = qp->connecting->settle_until - ep_now_ms();
	else if (qp->connecting->deadline < 0)
		return -1;
	else
		left = qp->connecting->deadline - ep_now_ms();
	return left < 0 ? 0 : left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* ---- passive side (the listener and its requests: ep_listen.c) ---- */

static int send_reply(struct esock_conn_req *r, const struct esock_mpa_frame *rep)
{
	uint8_t out[ESOCK_MPA_FRAME_MAX];
	ssize_t n = esock_mpa_frame_encode(rep, out, sizeof(out));

	return n < 0 ? (int)n : write_all(r->fd, out, (size_t)n, deadline_of(0));
}

/* Bad arguments: the request stays the caller's, unless it asked to keep only its fd. */
static int bad_accept(struct esock_conn_req *r)
{
	if (r->keep_fd)
		free(r);
	return -EINVAL;
}

int user_accept(struct esock_conn_req *r, struct esock_qp *qp,
			      const struct esock_conn_param *param)
{
	struct esock_mpa_policy pol;
	struct esock_mpa_frame rep;
	struct esock_mpa_params mp;
	struct esock_term t = { 0 };
	int expect = ESOCK_QPS_IDLE, rc;

	if (!r || !qp)
		return -EINVAL;
	if (!(qp->prof = ep_profile_pick(param ? param->peer : NULL)) ||
	    make_policy(param, qp->prof, &pol, false) < 0)
		return bad_accept(r);
	take_param(qp, param);
	if (!atomic_compare_exchange_strong(&qp->state, &expect, ESOCK_QPS_CONNECTING))
		return bad_accept(r);
	rc = esock_mpa_reply_build(&pol, &r->req, &rep, &mp, &t);
	if (rc == 0 || rc == -ECONNREFUSED) {
		int wrc = send_reply(r, &rep);

		rc = rc ? rc : wrc;
	}
	if (rc == 0) {
		set_info(qp, &mp, &r->req, qp->prof);
		peer_known(qp, r->fd, r, param);
		qp->fd_own = r->own_fd && !r->keep_fd;
		rc = ep_qp_start(qp, r->fd, false);
	}
	if (rc < 0) {
		log_info("accept: %s", rc == -ECONNREFUSED ? esock_term_str(t.layer, t.etype, t.ecode)
							  : strerror(-rc));
		ep_engine_del(qp);
		if (!r->keep_fd)
			esock_fd_close(r->fd);
		qp->fd = -1;
		qp->fd_own = false;
		atomic_store(&qp->state, ESOCK_QPS_IDLE);
	}
	free(r);
	return rc;
}

int user_reject(struct esock_conn_req *r, const void *pd, uint16_t pd_len)
{
	struct esock_mpa_frame rep = { .reply = true, .reject = true, .rev = r->req.rev,
				       .crc = r->req.crc, .pd = pd, .pd_len = pd_len };
	int rc;

	if (esock_mpa_frame_has_ird_ord(&r->req)) {
		rep.enhanced = true;
		rep.p2p = r->req.p2p;
	}
	rc = send_reply(r, &rep);
	esock_fd_close(r->fd);
	free(r);
	return rc;
}
