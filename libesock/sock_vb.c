/* SPDX-License-Identifier: MIT */
/*
 * DDPMODE sockets on the verbs backend (sock_vb.h).  Everything here runs
 * under the sock's lock but the sleeps, which let go of it: a sleep arms the
 * CQ and polls its completion channel, in slices, so that a close from
 * another thread is noticed.
 */
#include "config.h"

#include "libesock/sock_vb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "iwarp/backend.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "util/byteorder.h"
#include "util/env.h"
#include "util/log.h"

#define VB_TX_SLOTS 16     /* Sends in flight per connection, each from its own slot */
#define VB_SQ_CREDIT 2     /* send-queue entries kept for a credit Write and its wake-up Send */
#define VB_SQ_USER 32      /* the extended API's operations in flight (sock_api.c) */
#define VB_SQ_DEPTH (VB_TX_SLOTS + VB_SQ_CREDIT + VB_SQ_USER)
#define VB_SLICE_MS 100    /* a sleep's longest slice (a close elsewhere is seen then) */
#define VB_CREDIT_SLICE_MS 2 /* a slice waiting for credits that no completion announces */
#define VB_WAKE_SLICE_MS 20  /* ... that a wake-up Send announces (unless the peer had none to send) */
/* The application's private data and the announcement fit siw's 252 octets. */
#define VB_PRIVDATA_MAX (252 - SOCK_ANNOUNCED)
/* The credit page: our credit word (the peer writes it) at 0, the source of our Writes at 64. */
#define VB_CW_LEN 4096
#define VB_CW_SRC 64

struct sock_vb {
	const struct esock_backend *be;
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_listener *lst;
	struct esock_conn_req *req;     /* a listener's Request taken by a readiness look */
	uint8_t *rx, *tx;               /* registered: receive buffers, send slots */
	size_t rx_len, tx_len;
	struct esock_mr *rx_mr, *tx_mr;
	uint32_t chunk;                 /* octets per Send: the peer's receive size, a slot at most */
	uint32_t tx_free[VB_TX_SLOTS], ntx_free;
	/*
	 * Flow control (docs/libesock.md): a kernel QP cannot stop reading, so
	 * it writes how many receives it posted again into the sender's credit
	 * word (|returns|; |wakes|: an empty Send behind each Write, for a
	 * verbs sender whose waits hear only completions); a sender facing
	 * such a peer keeps |sent| within cr_limit of the peer's count.
	 */
	uint8_t *cw;                    /* registered, remote write: the credit page */
	struct esock_mr *cw_mr;
	uint64_t sent;                  /* Sends posted */
	uint64_t reposted, written;     /* receives posted again; the count last written */
	uint32_t cr_limit;              /* 0: the peer stops reading by itself, no credits */
	unsigned cr_inflight;           /* credit WRs not complete (a Write, its wake-up) */
	bool returns, wakes, cr_urgent;
	uint64_t requests;              /* a listener's Requests taken (epoll's edges) */
	bool forked;                    /* a copy made by fork: the parent's objects */
	struct sockaddr_storage local, remote;
};

/*
 * An iWARP device on this host, from sysfs (node type 4, RNIC: siw too): no
 * library is loaded to tell, so a host without one pays a directory look
 * once per process, and "auto" stays the user-level backend there.
 */
static bool device_here(void)
{
	static int known = -1; /* (a race only looks twice) */
	DIR *d;
	struct dirent *de;
	bool found = false;

	if (known >= 0)
		return known;
	if ((d = opendir("/sys/class/infiniband"))) {
		while (!found && (de = readdir(d))) {
			char path[300], type[4] = "";
			FILE *f;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type", de->d_name);
			if ((f = fopen(path, "re"))) {
				found = fgets(type, sizeof(type), f) && type[0] == '4';
				fclose(f);
			}
		}
		closedir(d);
	}
	known = found;
	return found;
}

static int wanted = -1;

static void wanted_read(void)
{
	const char *e = getenv("ESOCK_BACKEND");

#ifdef ESOCK_HAVE_VERBS
	if (e && !strcmp(e, "verbs"))
		wanted = esock_backend_default() == &esock_verbs_backend ? 2 : 0;
	else /* auto (the default): per connection, where this host has an iWARP device at all */
		wanted = (!e || !*e || !strcmp(e, "auto")) && device_here() ? 1 : 0;
#else
	(void)e;
	(void)device_here;
	wanted = 0;
#endif
}

int sock_vb_wanted(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	/* ($ESOCK_BACKEND read once, as for the endpoint's objects: iwarp/choose.c) */
	pthread_once(&once, wanted_read);
	return wanted;
}

/* A loopback address: auto keeps it on the user-level backend (an RNIC never sees that traffic). */
static bool loopback(const struct sockaddr *a)
{
	return (a->sa_family == AF_INET &&
		(ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127) ||
	       (a->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr));
}

bool sock_vb_for_connect(const struct sockaddr *addr, socklen_t len)
{
	int w = sock_vb_wanted();

#ifdef ESOCK_HAVE_VERBS
	if (w == 1 && addr && !loopback(addr) && esock_verbs_backend.reaches(addr, len) == 1) {
		log_debug("auto: the verbs backend's device reaches the peer");
		return true;
	}
#else
	(void)addr;
	(void)len;
#endif
	return w == 2;
}

bool sock_vb_for_listen(const struct esock_sock *s)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);
	int w = sock_vb_wanted();

	if (w != 1)
		return w == 2;
	/*
	 * auto: a listener on an address of the device only.  On the wildcard
	 * address the kernel's iWARP would take only its own device's
	 * addresses (loopback and other interfaces refused), where the
	 * user-level listener takes every one.
	 */
	if (REAL(getsockname)(s->fd, (struct sockaddr *)&ss, &len) < 0)
		return false;
	if ((ss.ss_family == AF_INET && ((struct sockaddr_in *)&ss)->sin_addr.s_addr == htonl(INADDR_ANY)) ||
	    (ss.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr)) ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) || loopback((struct sockaddr *)&ss))
		return false;
#ifdef ESOCK_HAVE_VERBS
	if (esock_verbs_backend.owns((struct sockaddr *)&ss, len) == 1) {
		log_debug("auto: the listening address is the verbs backend's device's");
		return true;
	}
#endif
	return false;
}

const char *sock_vb_backend_name(void)
{
	return "verbs";
}

static struct sock_vb *vb_new(struct esock_sock *s)
{
	struct sock_vb *v = NULL;

#ifdef ESOCK_HAVE_VERBS
	if ((v = calloc(1, sizeof(*v))))
		v->be = &esock_verbs_backend;
#endif
	s->vb = v;
	s->verbs = v != NULL;
	return v;
}

/* Everything of |v| goes (lock held); nothing verbs is called in a copy made by fork. */
static void vb_free(struct esock_sock *s)
{
	struct sock_vb *v = s->vb;

	if (!v)
		return;
	if (!v->forked) {
		if (v->qp)
			esock_qp_destroy(v->qp);
		if (v->req)
			esock_reject(v->req, NULL, 0);
		if (v->lst)
			esock_listener_close(v->lst);
		if (v->rx_mr)
			esock_mr_dereg(v->rx_mr);
		if (v->tx_mr)
			esock_mr_dereg(v->tx_mr);
		if (v->cw_mr)
			esock_mr_dereg(v->cw_mr);
		if (v->cq)
			esock_cq_destroy(v->cq);
		if (v->pd)
			esock_pd_free(v->pd);
	}
	/* The receive buffers are ours, not the process's pool (sock_pool_free must not take them). */
	for (uint32_t i = 0; s->rbufs && i < (uint32_t)s->o.rdepth; i++)
		s->rbufs[i] = NULL;
	s->rcount = s->rhead = s->roff = 0;
	s->rready = 0;
	if (v->rx)
		sock_region_free(v->rx, v->rx_len);
	if (v->tx)
		sock_region_free(v->tx, v->tx_len);
	if (v->cw)
		sock_region_free(v->cw, VB_CW_LEN);
	free(v);
	s->vb = NULL;
	s->verbs = false;
}

static int post_recv(struct esock_sock *s, uint32_t idx)
{
	struct sock_vb *v = s->vb;
	struct esock_sge sge = { .addr = (uintptr_t)s->rbufs[idx], .length = (uint32_t)s->o.rsize,
				 .lkey = esock_mr_stag(v->rx_mr) };
	struct esock_recv_wr wr = { .wr_id = SOCK_WR_RECV | idx, .sg_list = &sge, .num_sge = 1 };

	return esock_post_recv(v->qp, &wr, NULL);
}

/* The peer's count of our receives it may fill, as its last credit Write left it. */
static uint64_t peer_reposts(const struct sock_vb *v)
{
	const volatile uint8_t *w = v->cw;
	uint64_t a, b;

	/* (The kernel places the Write while we look: read until two looks agree.) */
	do {
		a = b = 0;
		for (int i = 0; i < 8; i++)
			a = a << 8 | w[i];
		for (int i = 0; i < 8; i++)
			b = b << 8 | w[i];
	} while (a != b);
	return a;
}

/* A Send may go: the peer stops reading by itself, or its receives leave room. */
static bool credit_ok(const struct sock_vb *v)
{
	return !v->cr_limit || v->sent - peer_reposts(v) < v->cr_limit;
}

/*
 * How long a sender short of credits may sleep before it looks at its credit
 * word again (ms).  Credits come as a Write, which completes nothing here;
 * the peer's wake-up Send behind it does, but only when we asked for one (not
 * in message mode) and the peer had a credit of its own to send it with: two
 * sides that both write and have both run out wake each other only so.
 */
static int credit_slice(const struct esock_sock *s)
{
	return s->o.msgmode ? VB_CREDIT_SLICE_MS : VB_WAKE_SLICE_MS;
}

/*
 * Tells the peer how many receives we posted again: an RDMA Write of the
 * count into its credit word, every quarter of the depth or (|urgent|) as
 * soon as the application has read all there was, one at a time; behind it
 * an empty Send when the peer asked (its own reposting of that receive is
 * counted, never answered at once: no ping-pong).
 */
static void credit_return(struct esock_sock *s, bool urgent)
{
	struct sock_vb *v = s->vb;
	uint32_t quarter = (uint32_t)s->o.rdepth / 4;
	struct esock_sge sge;
	struct esock_send_wr wr[2], *bad = NULL;
	int rc;

	if (!v->returns || v->forked || !v->qp || s->err || s->eof || v->reposted == v->written)
		return;
	if (v->cr_inflight) {
		v->cr_urgent |= urgent;
		return;
	}
	if (!urgent && v->reposted - v->written < (quarter ? quarter : 1))
		return;
	esock_put_be64(v->cw + VB_CW_SRC, v->reposted);
	sge = (struct esock_sge){ .addr = (uintptr_t)(v->cw + VB_CW_SRC), .length = 8,
				  .lkey = esock_mr_stag(v->cw_mr) };
	wr[0] = (struct esock_send_wr){ .wr_id = SOCK_WR_CREDIT | 0, .opcode = ESOCK_WR_RDMA_WRITE,
					.sg_list = &sge, .num_sge = 1, .remote_addr = s->peer_cw_addr,
					.rkey = s->peer_cw_stag };
	wr[1] = (struct esock_send_wr){ .wr_id = SOCK_WR_CREDIT | 1, .opcode = ESOCK_WR_SEND };
	if (v->wakes && credit_ok(v))
		wr[0].next = &wr[1];
	if ((rc = esock_post_send(v->qp, wr, &bad)) < 0 && bad == wr) {
		log_debug("fd %d: verbs: credit Write not posted: %s", s->fd, strerror(-rc));
		return;
	}
	v->cr_inflight = rc < 0 || !wr[0].next ? 1 : 2;
	v->sent += v->cr_inflight - 1;
	v->written = v->reposted;
	v->cr_urgent = false;
}

void sock_vb_repost(struct esock_sock *s, uint32_t idx)
{
	struct sock_vb *v = s->vb;

	if (!v || v->forked || !v->qp || s->eof || s->err)
		return;
	if (post_recv(s, idx) < 0) {
		log_debug("fd %d: verbs: a receive could not be posted again", s->fd);
		return;
	}
	v->reposted++;
	credit_return(s, false);
}

/*
 * The connection's PD, CQ, QP and registered regions, every receive posted
 * (a kernel QP Terminates a Send that finds none: the peer may send rdepth
 * messages ahead of the reader).  0 or -errno.
 */
static int conn_objects(struct esock_sock *s)
{
	struct sock_vb *v = s->vb;
	uint32_t n = (uint32_t)s->o.rdepth;
	struct esock_qp_attr qa = { 0 };
	int rc;

	if (n == 0)
		return -EOPNOTSUPP; /* (no receive pool: the extended API's own receives; not on verbs) */
	if ((rc = v->be->pd_alloc(&v->pd)) < 0 ||
	    (rc = v->be->cq_create((int)n + VB_SQ_DEPTH, &v->cq)) < 0)
		return rc;
	qa.pd = v->pd;
	qa.send_cq = qa.recv_cq = v->cq;
	qa.sq_depth = VB_SQ_DEPTH;
	qa.rq_depth = n;
	qa.max_sge = 1;
	qa.max_recv_sge = 1;
	qa.sq_sig_all = true;
	if ((rc = esock_qp_create(&qa, &v->qp)) < 0)
		return rc;
	v->rx_len = (size_t)n * (size_t)s->o.rsize;
	v->tx_len = (size_t)VB_TX_SLOTS * SOCK_SLOT_SIZE;
	if (!(v->rx = sock_region_alloc(v->rx_len)) || !(v->tx = sock_region_alloc(v->tx_len)) ||
	    !(v->cw = sock_region_alloc(VB_CW_LEN)))
		return -ENOMEM;
	memset(v->cw, 0, VB_CW_LEN);
	if ((rc = esock_mr_reg(v->pd, v->rx, v->rx_len, ESOCK_ACCESS_LOCAL_WRITE, 0, &v->rx_mr)) < 0 ||
	    (rc = esock_mr_reg(v->pd, v->tx, v->tx_len, 0, 0, &v->tx_mr)) < 0 ||
	    (rc = esock_mr_reg(v->pd, v->cw, VB_CW_LEN,
			       ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE, 0, &v->cw_mr)) < 0)
		return rc;
	if (!s->rbufs && (rc = sock_pool_setup(s)) < 0)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		s->rbufs[i] = v->rx + (size_t)i * (size_t)s->o.rsize;
		if ((rc = post_recv(s, i)) < 0)
			return rc;
	}
	for (uint32_t i = 0; i < VB_TX_SLOTS; i++)
		v->tx_free[i] = VB_TX_SLOTS - 1 - i;
	v->ntx_free = VB_TX_SLOTS;
	return 0;
}

static void conn_param(struct esock_sock *s, struct esock_conn_param *p, uint8_t *pd)
{
	uint16_t app = s->o.privdata_len > VB_PRIVDATA_MAX ? VB_PRIVDATA_MAX : s->o.privdata_len;

	memset(p, 0, sizeof(*p));
	memcpy(pd, s->o.privdata, app);
	/* A kernel QP cannot stop reading: it returns credits instead. */
	sock_announce(s, pd + app, SOCK_ANN_CREDITS | (s->o.msgmode ? 0 : SOCK_ANN_WAKE),
		      esock_mr_stag(s->vb->cw_mr), (uintptr_t)s->vb->cw);
	p->private_data = pd;
	p->private_data_len = (uint16_t)(app + SOCK_ANNOUNCED);
	p->ird = (uint16_t)s->o.ird;
	p->ord = (uint16_t)s->o.ord;
	p->timeout_ms = s->o.timeout_ms;
}

/* A peer announcing a receive size below the floor is refused (SOCK_PEER_RSIZE_MIN). */
static bool size_refused(const struct esock_sock *s)
{
	if (s->peer_msg_max >= SOCK_PEER_RSIZE_MIN)
		return false;
	log_warn("fd %d: the peer's receive size %u is below %u: connection refused", s->fd,
		 s->peer_msg_max, SOCK_PEER_RSIZE_MIN);
	return true;
}

static void connected(struct esock_sock *s)
{
	struct sock_vb *v = s->vb;
	struct esock_conn_info info;

	if (esock_qp_conn_info(v->qp, &info) == 0) {
		v->local = info.local;
		v->remote = info.remote;
	}
	v->chunk = s->peer_msg_max < SOCK_SLOT_SIZE ? s->peer_msg_max : SOCK_SLOT_SIZE;
	/* Credits: ours go to a peer that gave a word; its bound ours if it cannot stop reading. */
	v->returns = s->peer_cw_stag != 0;
	v->wakes = v->returns && (s->peer_ann & SOCK_ANN_WAKE);
	if (s->peer_ann & SOCK_ANN_CREDITS)
		v->cr_limit = s->peer_rdepth > 1 ? s->peer_rdepth - 1 : 1;
	s->st = SOCK_CONNECTED;
	sock_stat_describe(s);
	log_info("fd %d: DDPMODE connected on the verbs backend (peer %s, messages up to %u octets, "
		 "credits: %s)",
		 s->fd, s->peer_esock ? "esock" : "plain RDMA", v->chunk,
		 v->cr_limit ? "bound by the peer's" : v->returns ? "returned" : "none");
}

/*
 * A responder may not send before the initiator's first FPDU (RFC 5044), and
 * the kernel's initiator sends none of its own unless its MPA peer-to-peer
 * mode is on (siw's is off): towards an esock server that speaks first (a
 * greeting), an empty Send goes at once, as the user-level initiator sends
 * under MPA revision 1; the server's socket layer posts that receive again.
 */
static void first_fpdu(struct esock_sock *s)
{
	struct esock_send_wr wr = { .wr_id = SOCK_WR_DIRECT, .opcode = ESOCK_WR_SEND };

	if (s->peer_esock && esock_post_send(s->vb->qp, &wr, NULL) == 0)
		s->vb->sent++;
}

int sock_vb_connect(struct esock_sock *s, const struct sockaddr *addr, socklen_t len)
{
	struct esock_conn_param p;
	struct esock_conn_info info;
	uint8_t pd[256];
	int rc;

	if (!device_here())
		return -ENODEV; /* (ESOCK_BACKEND=verbs on a host without an iWARP device) */
	if (!vb_new(s))
		return -ENOMEM;
	if ((rc = conn_objects(s)) < 0)
		goto failed;
	conn_param(s, &p, pd);
	/* (The kernel's connect: blocking, the MPA timeout at most, even for a non-blocking socket.) */
	if ((rc = esock_qp_connect(s->vb->qp, addr, len, &p)) < 0)
		goto failed;
	if ((rc = esock_qp_conn_info(s->vb->qp, &info)) < 0)
		goto failed;
	sock_heard(s, info.private_data, info.private_data_len);
	if (size_refused(s)) {
		rc = -EPROTO;
		goto failed;
	}
	connected(s);
	first_fpdu(s);
	return 0;
failed:
	log_info("fd %d: DDPMODE connect on the verbs backend failed: %s", s->fd, strerror(-rc));
	vb_free(s);
	s->st = SOCK_FAILED;
	s->err = -rc;
	s->last_error.err = -rc;
	sock_stat_describe(s);
	return rc;
}

/*
 * The kernel's iWARP listens on the port itself (iw_cm's own TCP listener):
 * the application's socket, bound to it, is replaced by a fresh one of the
 * same kind, never bound, on the same descriptor (its flags kept).
 */
static int replace_placeholder(struct esock_sock *s, int family)
{
	int fdfl = REAL(fcntl)(s->fd, F_GETFD), fl = REAL(fcntl)(s->fd, F_GETFL), nfd, rc = 0;

	if (fdfl < 0 || fl < 0 || (nfd = REAL(socket)(family, SOCK_STREAM, 0)) < 0)
		return -errno;
	if (REAL(dup3)(nfd, s->fd, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0) < 0 ||
	    REAL(fcntl)(s->fd, F_SETFL, fl) < 0)
		rc = -errno;
	REAL(close)(nfd);
	return rc;
}

int sock_vb_listen(struct esock_sock *s, int backlog)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);
	int rc;

	if (s->st == SOCK_LISTENING && s->vb)
		return 0; /* (listen again: the backlog stays) */
	if (s->st != SOCK_MARKED)
		return -EINVAL;
	/* (Before the placeholder is replaced: the application's bind stays when this fails.) */
	if (!device_here())
		return -ENODEV;
	if (REAL(getsockname)(s->fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	if ((rc = replace_placeholder(s, ss.ss_family)) < 0)
		return rc;
	if (!vb_new(s))
		return -ENOMEM;
	if ((rc = s->vb->be->listen((struct sockaddr *)&ss, len, backlog, &s->vb->lst)) < 0) {
		log_info("fd %d: DDPMODE listen on the verbs backend failed: %s", s->fd, strerror(-rc));
		vb_free(s);
		return rc;
	}
	esock_listener_addr(s->vb->lst, &s->vb->local);
	s->st = SOCK_LISTENING;
	sock_stat_describe(s);
	log_info("fd %d: DDPMODE listening on the verbs backend", s->fd);
	return 0;
}

/* The connection of Request |req| on a new descriptor, as accept4 gives it.  It or -errno. */
static int hand(struct esock_sock *ls, struct esock_conn_req *req, int flags)
{
	struct esock_conn_param p;
	struct esock_conn_info info;
	struct esock_sock *s;
	uint8_t pd[256];
	int fd, rc = -ENOMEM;

	if ((fd = REAL(socket)(ls->vb->local.ss_family, SOCK_STREAM | (flags & (SOCK_NONBLOCK | SOCK_CLOEXEC)),
			       0)) < 0) {
		rc = -errno;
		esock_reject(req, NULL, 0);
		return rc;
	}
	if (!(s = sock_new_accepted(fd, ls))) {
		REAL(close)(fd);
		esock_reject(req, NULL, 0);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->lock);
	s->nonblock = (flags & SOCK_NONBLOCK) != 0;
	s->o = ls->o;
	if (!vb_new(s) || (rc = esock_conn_req_info(req, &info)) < 0)
		goto failed; /* (-ENOMEM without its state) */
	sock_heard(s, info.private_data, info.private_data_len);
	if (size_refused(s)) {
		rc = -EPROTO;
		goto failed;
	}
	if ((rc = conn_objects(s)) < 0)
		goto failed;
	conn_param(s, &p, pd);
	rc = esock_accept(req, s->vb->qp, &p); /* (it takes |req|, failing too) */
	req = NULL;
	if (rc < 0)
		goto failed;
	connected(s);
	pthread_mutex_unlock(&s->lock);
	return fd;
failed:
	log_warn("fd %d: accept on the verbs backend failed (%s); connection closed", fd, strerror(-rc));
	if (req)
		esock_reject(req, NULL, 0);
	pthread_mutex_unlock(&s->lock);
	sock_close_fd(fd);
	return rc;
}

/* A Request waiting on |ls|'s channel (lock held): kept in vb->req.  True if there is one. */
static bool request_ready(struct esock_sock *ls)
{
	struct sock_vb *v = ls->vb;

	if (!v->req && !v->forked && esock_get_request(v->lst, &v->req, 0) == 0)
		v->requests++;
	return v->req != NULL;
}

int sock_vb_accept(struct esock_sock *ls, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct sock_sig_seen seen;
	int64_t end = sock_timeo_deadline(ls->rcvtimeo_ms);

	sock_sig_seen_begin(&seen);
	for (;;) {
		struct esock_conn_req *req = NULL;
		struct pollfd p = { .events = POLLIN };
		int fd;

		pthread_mutex_lock(&ls->lock);
		if (ls->vb && ls->st == SOCK_LISTENING && request_ready(ls)) {
			req = ls->vb->req;
			ls->vb->req = NULL;
		}
		p.fd = ls->vb && !ls->vb->forked ? esock_listener_poll_fd(ls->vb->lst) : -1;
		pthread_mutex_unlock(&ls->lock);
		if (req) {
			if ((fd = hand(ls, req, flags)) >= 0) {
				struct esock_sock *ns = addr && alen ? sock_get(fd) : NULL;

				if (ns && sock_vb_name(ns, true, addr, alen) < 0)
					*alen = 0;
				if (ns)
					sock_put(ns);
				return fd;
			}
			if (fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM)
				return fd;
			continue; /* that one failed: the next */
		}
		if (p.fd < 0)
			return -EINVAL;
		if (ls->nonblock)
			return -EAGAIN;
		if (atomic_load(&ls->closing))
			return -EBADF;
		if (end >= 0 && ep_now_ms() >= end)
			return -EAGAIN;
		if (REAL(poll)(&p, 1, end >= 0 && end - ep_now_ms() < 500 ? (int)(end - ep_now_ms()) : 500) < 0 &&
		    errno == EINTR && !(end < 0 && sock_sig_restarts(&seen)))
			return -EINTR;
	}
}

/* The connection ended (a receive or Send completed in error): EOF or an error, once. */
static void ended(struct esock_sock *s, const struct esock_wc *wc)
{
	struct esock_qp_error e;

	if (s->eof || s->err)
		return;
	/*
	 * The kernel tells an orderly disconnect (-ESHUTDOWN, the peer's close
	 * or ours) from a connection error (-ECONNABORTED: a Terminate, a
	 * reset); flushed receives without a recorded error are the former.
	 */
	if ((esock_qp_last_error(s->vb->qp, &e) == 0 && e.err != -ESHUTDOWN) ||
	    (wc->status != ESOCK_WC_WR_FLUSH_ERR && wc->status != ESOCK_WC_SUCCESS)) {
		s->err = ECONNRESET;
		s->last_error.err = ECONNRESET;
		snprintf(s->last_error.reason, sizeof(s->last_error.reason), "%s",
			 wc->status == ESOCK_WC_WR_FLUSH_ERR ? "connection error" : esock_wc_status_str(wc->status));
		log_warn("fd %d: connection reset: %s", s->fd, s->last_error.reason);
		return;
	}
	s->eof = true;
	snprintf(s->last_error.reason, sizeof(s->last_error.reason), "closed");
}

static void handle(struct esock_sock *s, const struct esock_wc *wc)
{
	struct sock_vb *v = s->vb;
	uint32_t idx = (uint32_t)wc->wr_id;

	switch (SOCK_WR_KIND(wc->wr_id)) {
	case SOCK_WR_RECV:
		if (idx >= (uint32_t)s->o.rdepth)
			break;
		if (wc->status != ESOCK_WC_SUCCESS) {
			ended(s, wc);
			break;
		}
		if (wc->byte_len == 0 && !s->o.msgmode) { /* nothing to read: post it again */
			sock_vb_repost(s, idx);
			break;
		}
		sock_ring_push(s, idx, wc->byte_len);
		break;
	case SOCK_WR_CREDIT:
		if (v->cr_inflight)
			v->cr_inflight--;
		if (wc->status != ESOCK_WC_SUCCESS)
			ended(s, wc);
		else if (!v->cr_inflight)
			credit_return(s, v->cr_urgent);
		break;
	case SOCK_WR_DIRECT: /* the initiator's empty first Send (first_fpdu) */
		if (wc->status != ESOCK_WC_SUCCESS)
			ended(s, wc);
		break;
	case SOCK_WR_USER: /* the extended API's (sock_api.c) */
		sock_api_event(s, wc);
		if (wc->status != ESOCK_WC_SUCCESS)
			ended(s, wc);
		break;
	case SOCK_WR_SLOT:
		if (idx < VB_TX_SLOTS && v->ntx_free < VB_TX_SLOTS)
			v->tx_free[v->ntx_free++] = idx;
		if (s->inflight)
			s->inflight--;
		if (wc->status != ESOCK_WC_SUCCESS) {
			s->tx_failed = true;
			ended(s, wc);
		}
		break;
	default:
		break;
	}
}

void sock_vb_drain(struct esock_sock *s)
{
	struct sock_vb *v = s->vb;
	struct esock_wc wc[32];
	int n;

	if (!v || !v->cq || v->forked)
		return;
	while ((n = esock_cq_poll(v->cq, 32, wc)) > 0)
		for (int i = 0; i < n; i++)
			handle(s, &wc[i]);
}

/*
 * Sleeps (lock held on entry and exit) until a completion, |end| or a
 * slice (|slice| ms): 0, -EINTR, or -EBADF (closed meanwhile).
 */
static int sleep_slice(struct esock_sock *s, int64_t end, int slice)
{
	struct pollfd p = { .events = POLLIN };
	int64_t left;
	int rc;

	if (!s->vb || s->vb->forked)
		return -EBADF;
	if ((rc = esock_cq_arm(s->vb->cq, false)) != 0)
		return rc < 0 ? rc : 0; /* (completions wait) */
	p.fd = esock_cq_fd(s->vb->cq);
	left = end < 0 ? slice : end - ep_now_ms();
	if (left > slice)
		left = slice;
	if (left < 0)
		left = 0;
	pthread_mutex_unlock(&s->lock);
	rc = REAL(poll)(&p, 1, (int)left);
	pthread_mutex_lock(&s->lock);
	if (atomic_load(&s->closing) || !s->vb)
		return -EBADF;
	return rc < 0 && errno == EINTR ? -EINTR : 0;
}

static int sleep_some(struct esock_sock *s, int64_t end)
{
	return sleep_slice(s, end, VB_SLICE_MS);
}

ssize_t sock_vb_recv(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		     int *msg_flags)
{
	size_t want = 0, got = 0;
	bool trunc = false, block;
	int64_t end = -2;
	struct sock_sig_seen seen;
	ssize_t rc = 0;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	pthread_mutex_lock(&s->lock);
	if (s->st != SOCK_CONNECTED || !s->vb || s->vb->forked) {
		rc = s->st == SOCK_FAILED && s->err ? -s->err : -ENOTCONN;
		goto out;
	}
	block = !s->nonblock && !(flags & MSG_DONTWAIT);
	sock_sig_seen_begin(&seen);
	for (;;) {
		sock_vb_drain(s);
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
		if (!block) {
			if (!got)
				rc = -EAGAIN;
			break;
		}
		if (end == -2)
			end = sock_timeo_deadline(s->rcvtimeo_ms);
		if (end >= 0 && ep_now_ms() >= end) {
			if (!got)
				rc = -EAGAIN;
			break;
		}
		if ((rc = sleep_some(s, end)) == -EINTR && (end >= 0 || !sock_sig_restarts(&seen))) {
			if (got)
				rc = 0;
			break;
		}
		if (rc == -EBADF) {
			if (got)
				rc = 0;
			break;
		}
		rc = 0;
	}
	if (got && !s->rcount && s->vb)
		credit_return(s, true); /* (all read: the peer may send a full window again) */
out:
	pthread_mutex_unlock(&s->lock);
	if (msg_flags && trunc)
		*msg_flags |= MSG_TRUNC;
	return got ? (ssize_t)got : rc;
}

/* Gathers |n| octets of |iov| from octet |at| on into |dst|. */
static void gather(const struct iovec *iov, int iovcnt, size_t at, uint8_t *dst, size_t n)
{
	int i = 0;

	while (i < iovcnt && at >= iov[i].iov_len)
		at -= iov[i++].iov_len;
	while (n && i < iovcnt) {
		size_t k = iov[i].iov_len - at < n ? iov[i].iov_len - at : n;

		memcpy(dst, (const uint8_t *)iov[i].iov_base + at, k);
		dst += k;
		n -= k;
		at = 0;
		i++;
	}
}

static int write_error(const struct esock_sock *s)
{
	if (s->err)
		return -s->err;
	if (s->shut_wr || s->eof || s->tx_failed)
		return -EPIPE;
	return 0;
}

ssize_t sock_vb_send(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = 0, done = 0;
	int64_t end = -2;
	struct sock_sig_seen seen;
	ssize_t rc = 0;
	bool block;

	if (flags & MSG_OOB)
		return -EOPNOTSUPP;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	pthread_mutex_lock(&s->lock);
	if (s->st != SOCK_CONNECTED || !s->vb || s->vb->forked) {
		rc = s->st == SOCK_FAILED && s->err ? -s->err : -ENOTCONN;
		goto out;
	}
	if (s->o.msgmode && total > s->vb->chunk) {
		rc = -EMSGSIZE;
		goto out;
	}
	block = !s->nonblock && !(flags & MSG_DONTWAIT);
	sock_sig_seen_begin(&seen);
	while (done < total) {
		struct sock_vb *v = s->vb;
		struct esock_sge sge;
		struct esock_send_wr wr = { .opcode = ESOCK_WR_SEND, .sg_list = &sge, .num_sge = 1 };
		uint32_t idx;
		size_t n;

		sock_vb_drain(s);
		if ((rc = write_error(s)) < 0)
			break;
		if (!v->ntx_free || !credit_ok(v)) {
			/*
			 * Credits come as a Write, which completes nothing here; the
			 * peer's wake-up Send behind it does (we asked for one unless
			 * in message mode), or it skipped it for want of credits.
			 */
			int slice = !v->ntx_free ? VB_SLICE_MS : credit_slice(s);

			if (!block) {
				rc = -EAGAIN;
				break;
			}
			if (end == -2)
				end = sock_timeo_deadline(s->sndtimeo_ms);
			if (end >= 0 && ep_now_ms() >= end) {
				rc = -EAGAIN;
				break;
			}
			if ((rc = sleep_slice(s, end, slice)) == -EBADF ||
			    (rc == -EINTR && (end >= 0 || !sock_sig_restarts(&seen))))
				break;
			rc = 0;
			continue;
		}
		idx = v->tx_free[--v->ntx_free];
		n = total - done < v->chunk ? total - done : v->chunk;
		gather(iov, iovcnt, done, v->tx + (size_t)idx * SOCK_SLOT_SIZE, n);
		sge = (struct esock_sge){ .addr = (uintptr_t)(v->tx + (size_t)idx * SOCK_SLOT_SIZE),
					  .length = (uint32_t)n, .lkey = esock_mr_stag(v->tx_mr) };
		wr.wr_id = SOCK_WR_SLOT | idx;
		if ((rc = esock_post_send(v->qp, &wr, NULL)) < 0) {
			v->tx_free[v->ntx_free++] = idx;
			rc = write_error(s) < 0 ? write_error(s) : -EPIPE;
			break;
		}
		s->inflight++;
		v->sent++;
		done += n;
		s->stats->tx_msgs++;
		s->stats->tx_bytes += n;
	}
out:
	if (rc == -EAGAIN || (done && done < total))
		s->out_full++; /* the next room is a new EPOLLOUT edge */
	pthread_mutex_unlock(&s->lock);
	if (done)
		return (ssize_t)done;
	if (rc == -EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return rc;
}

/* Waits (lock held) for the Sends in flight to complete, at most $ESOCK_LINGER_MS. */
static void flush_sends(struct esock_sock *s)
{
	int64_t end = ep_now_ms() + esock_env_int("ESOCK_LINGER_MS", 5000, 0, 3600000);

	for (;;) {
		sock_vb_drain(s);
		if (!s->vb || !s->inflight || s->err || s->eof || s->tx_failed)
			return;
		if (ep_now_ms() >= end) {
			log_info("fd %d: Sends in flight did not complete in time: the connection ends", s->fd);
			return;
		}
		if (sleep_some(s, end) == -EBADF)
			return;
	}
}

void sock_vb_flush(struct esock_sock *s)
{
	if (s->vb && !s->vb->forked && !s->linger_abort)
		flush_sends(s);
}

int sock_vb_close_send(struct esock_sock *s)
{
	/* What is queued goes, then the connection ends (reads then see EOF). */
	if (!s->vb || s->vb->forked || esock_qp_state(s->vb->qp) != ESOCK_QPS_RTS)
		return 0;
	flush_sends(s);
	return s->vb ? esock_qp_disconnect(s->vb->qp) : 0;
}

void sock_vb_release(struct esock_sock *s, bool graceful)
{
	pthread_mutex_lock(&s->lock);
	if (s->vb && !s->vb->forked && s->vb->qp && esock_qp_state(s->vb->qp) == ESOCK_QPS_RTS) {
		if (graceful && !s->linger_abort)
			flush_sends(s);
		if (s->vb)
			esock_qp_disconnect(s->vb->qp);
	}
	vb_free(s);
	pthread_mutex_unlock(&s->lock);
}

struct esock_pd *sock_vb_pd(const struct esock_sock *s)
{
	return s->vb && !s->vb->forked && s->vb->qp ? s->vb->pd : NULL;
}

struct esock_cq *sock_vb_cq(const struct esock_sock *s)
{
	return s->vb && !s->vb->forked && s->vb->qp ? s->vb->cq : NULL;
}

struct esock_qp *sock_vb_qp(const struct esock_sock *s)
{
	return s->vb && !s->vb->forked && s->st == SOCK_CONNECTED ? s->vb->qp : NULL;
}

int sock_vb_post_user(struct esock_sock *s, struct esock_send_wr *wr)
{
	struct sock_vb *v = s->vb;
	bool send = wr->opcode == ESOCK_WR_SEND || wr->opcode == ESOCK_WR_SEND_SE ||
		    wr->opcode == ESOCK_WR_SEND_INV || wr->opcode == ESOCK_WR_SEND_SE_INV;
	int rc;

	if (!sock_vb_qp(s))
		return -ENOTCONN;
	sock_vb_drain(s);
	if (s->err)
		return -s->err;
	if (send && !credit_ok(v))
		return -EAGAIN;
	if ((rc = esock_post_send(v->qp, wr, NULL)) == -ENOMEM)
		return -EAGAIN;
	if (rc == 0 && send)
		v->sent++;
	return rc;
}

void sock_vb_fork_child(struct esock_sock *s)
{
	if (s->vb)
		s->vb->forked = true;
}

const struct sockaddr_storage *sock_vb_addr(const struct esock_sock *s, bool peer)
{
	return s->vb ? peer ? &s->vb->remote : &s->vb->local : NULL;
}

int sock_vb_name(struct esock_sock *s, bool peer, struct sockaddr *addr, socklen_t *len)
{
	const struct sockaddr_storage *ss;
	socklen_t n;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (!s->vb) {
		rc = peer ? -ENOTCONN : -EINVAL;
	} else if (peer && s->st != SOCK_CONNECTED) {
		rc = -ENOTCONN;
	} else if (!addr || !len) {
		rc = -EFAULT;
	} else {
		ss = peer ? &s->vb->remote : &s->vb->local;
		n = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
		memcpy(addr, ss, *len < n ? *len : n);
		*len = n;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static unsigned ready_locked(struct esock_sock *s)
{
	struct sock_vb *v = s->vb;
	unsigned r = 0;

	if (!v || v->forked)
		return POLLNVAL;
	if (s->st == SOCK_LISTENING)
		return request_ready(s) ? POLLIN | POLLRDNORM : 0;
	if (s->st != SOCK_CONNECTED)
		return s->err ? POLLERR | POLLHUP : 0;
	sock_vb_drain(s);
	if (s->rcount || s->shut_rd)
		r |= POLLIN | POLLRDNORM;
	if (v->ntx_free && credit_ok(v) && !s->shut_wr)
		r |= POLLOUT | POLLWRNORM;
	if (s->eof) /* the connection is over (no half-close): reads end, writes fail */
		r |= POLLIN | POLLRDNORM | POLLRDHUP | POLLHUP | POLLOUT | POLLWRNORM;
	if (s->err)
		r |= POLLIN | POLLRDNORM | POLLERR | POLLHUP | POLLOUT | POLLWRNORM;
	return r;
}

int sock_vb_out_slice(struct esock_sock *s, unsigned events)
{
	struct sock_vb *v;
	int slice = -1;

	if (!(events & POLLOUT))
		return -1;
	pthread_mutex_lock(&s->lock);
	v = s->vb;
	if (v && !v->forked && v->qp && s->st == SOCK_CONNECTED && !s->err && !s->eof &&
	    !s->shut_wr && v->ntx_free && !credit_ok(v))
		slice = credit_slice(s);
	pthread_mutex_unlock(&s->lock);
	return slice;
}

unsigned sock_vb_ready(struct esock_sock *s, unsigned events)
{
	unsigned r;

	pthread_mutex_lock(&s->lock);
	/*
	 * The channel is emptied and armed at every look, so that a sleeper on
	 * it (poll, or epoll's kernel set, level-triggered) wakes only for what
	 * comes after this look.
	 */
	if (s->vb && !s->vb->forked && s->vb->cq && s->st == SOCK_CONNECTED)
		(void)esock_cq_arm(s->vb->cq, false);
	r = ready_locked(s);
	pthread_mutex_unlock(&s->lock);
	log_trace("fd %d: verbs readiness %#x (asked %#x)", s->fd, r, events);
	return r & (events | POLLERR | POLLHUP | POLLNVAL);
}

int sock_vb_fd(struct esock_sock *s)
{
	struct sock_vb *v = s->vb;

	if (!v || v->forked)
		return -1;
	if (v->lst)
		return esock_listener_poll_fd(v->lst);
	return v->cq ? esock_cq_fd(v->cq) : -1;
}

uint64_t sock_vb_requests(const struct esock_sock *s)
{
	return s->vb ? s->vb->requests : 0;
}
