/* SPDX-License-Identifier: MIT */
/*
 * The extended calls (struct esock_api, found with ESOCK_GET_API): memory
 * registration on a socket's protection domain, asynchronous Send/Recv and
 * one-sided RDMA Write/Read with caller tags, and event queues.
 *
 * An event queue is an epoll instance over the CQ eventfds of the sockets
 * bound to it (so eq_fd works with poll/epoll while nobody calls in) plus a
 * ring of events: eq_poll takes the sockets' completions (routing each to
 * the queue bound for its operation type) and hands out the events.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_vb.h"
#include "util/log.h"
#include "util/range.h"

#define MAX_EQ 256
#define USER_OPS 1024 /* user operations in flight per socket */

struct sock_eq {
	pthread_mutex_t lock;
	struct esock_event *ev;
	uint32_t cap, head, n;
	int epfd;
	bool overflow;
	struct esock_sock **bound;
	int nbound, capbound;
};

/* Per-socket records of user operations: wr_id carries the index. */
struct user_op {
	uint64_t tag;
	int op;
	bool used;
};

static pthread_mutex_t eq_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sock_eq *eqs[MAX_EQ];

static struct sock_eq *eq_of(int h)
{
	struct sock_eq *q;

	if (h < 0 || h >= MAX_EQ)
		return NULL;
	pthread_mutex_lock(&eq_lock);
	q = eqs[h];
	pthread_mutex_unlock(&eq_lock);
	return q;
}

static int api_eq_create(int depth)
{
	struct sock_eq *q;
	int h;

	if (depth <= 0 || depth > (1 << 20))
		return -EINVAL;
	if (!(q = calloc(1, sizeof(*q))) || !(q->ev = calloc((size_t)depth, sizeof(*q->ev)))) {
		free(q);
		return -ENOMEM;
	}
	q->cap = (uint32_t)depth;
	pthread_mutex_init(&q->lock, NULL);
	if ((q->epfd = REAL(epoll_create1)(EPOLL_CLOEXEC)) < 0) {
		free(q->ev);
		free(q);
		return -EMFILE;
	}
	esock_fd_own(q->epfd);
	pthread_mutex_lock(&eq_lock);
	for (h = 0; h < MAX_EQ && eqs[h]; h++)
		;
	if (h < MAX_EQ)
		eqs[h] = q;
	pthread_mutex_unlock(&eq_lock);
	if (h == MAX_EQ) {
		esock_fd_close(q->epfd);
		free(q->ev);
		free(q);
		return -ENFILE;
	}
	return h;
}

static int api_eq_fd(int h)
{
	struct sock_eq *q = eq_of(h);

	return q ? q->epfd : -EINVAL;
}

static int api_eq_destroy(int h)
{
	struct sock_eq *q = eq_of(h);

	if (!q)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	if (q->nbound) {
		pthread_mutex_unlock(&q->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&q->lock);
	pthread_mutex_lock(&eq_lock);
	eqs[h] = NULL;
	pthread_mutex_unlock(&eq_lock);
	esock_fd_close(q->epfd);
	free(q->bound);
	free(q->ev);
	free(q);
	return 0;
}

/* The CQ of |s|'s connection on either backend (NULL: not connected). */
static struct esock_cq *cq_of(const struct esock_sock *s)
{
	return s->verbs ? sock_vb_cq(s) : s->cq;
}

static void eq_push(struct sock_eq *q, const struct esock_event *e)
{
	pthread_mutex_lock(&q->lock);
	if (q->n < q->cap)
		q->ev[(q->head + q->n++) % q->cap] = *e;
	else if (!q->overflow) {
		q->overflow = true;
		log_error("event queue overflow: events lost");
	}
	pthread_mutex_unlock(&q->lock);
}

static bool eq_has(struct sock_eq *q, struct esock_sock *s)
{
	for (int i = 0; i < q->nbound; i++)
		if (q->bound[i] == s)
			return true;
	return false;
}

static int eq_attach(struct sock_eq *q, struct esock_sock *s)
{
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	if (!eq_has(q, s)) {
		if (q->nbound == q->capbound) {
			int nc = q->capbound ? q->capbound * 2 : 8;
			struct esock_sock **b = realloc(q->bound, (size_t)nc * sizeof(*b));

			if (!b) {
				pthread_mutex_unlock(&q->lock);
				return -ENOMEM;
			}
			q->bound = b;
			q->capbound = nc;
		}
		q->bound[q->nbound++] = s;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };

		if (cq_of(s) && REAL(epoll_ctl)(q->epfd, EPOLL_CTL_ADD, esock_cq_fd(cq_of(s)), &ev) < 0)
			rc = -errno;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

static void eq_detach(struct sock_eq *q, struct esock_sock *s)
{
	pthread_mutex_lock(&q->lock);
	for (int i = 0; i < q->nbound; i++)
		if (q->bound[i] == s) {
			q->bound[i] = q->bound[--q->nbound];
			if (cq_of(s))
				REAL(epoll_ctl)(q->epfd, EPOLL_CTL_DEL, esock_cq_fd(cq_of(s)), NULL);
			break;
		}
	pthread_mutex_unlock(&q->lock);
}

static int api_bind_eq(int fd, unsigned ops, int h)
{
	struct esock_sock *s = sock_get(fd);
	struct sock_eq *q = eq_of(h);
	int rc = 0;

	if (!s)
		return -ENOTSOCK;
	if (!q || (ops & ~(ESOCK_OP_BIT(ESOCK_OP_SEND) | ESOCK_OP_BIT(ESOCK_OP_RECV) |
			   ESOCK_OP_BIT(ESOCK_OP_WRITE) | ESOCK_OP_BIT(ESOCK_OP_READ)))) {
		sock_put(s);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	sock_api_async(s);
	if (s->off)
		rc = -EOPNOTSUPP;
	else if (!cq_of(s))
		rc = -ENOTCONN;
	else if ((rc = eq_attach(q, s)) == 0)
		for (int op = ESOCK_OP_SEND; op <= ESOCK_OP_READ; op++)
			if (ops & ESOCK_OP_BIT(op))
				s->eq[op] = q;
	pthread_mutex_unlock(&s->lock);
	sock_put(s);
	return rc;
}

void sock_api_event(struct esock_sock *s, const struct esock_wc *wc)
{
	struct user_op *u = s->user_ops;
	uint32_t i = (uint32_t)(wc->wr_id & 0xffffffffu);
	struct esock_event e;

	if (!u || i >= USER_OPS || !u[i].used)
		return;
	e.tag = u[i].tag;
	e.fd = s->fd;
	e.op = u[i].op;
	e.len = wc->byte_len;
	e.status = wc->status == ESOCK_WC_SUCCESS ? 0
		   : wc->status == ESOCK_WC_WR_FLUSH_ERR ? -ECANCELED
		   : wc->status == ESOCK_WC_REM_ACCESS_ERR || wc->status == ESOCK_WC_LOC_PROT_ERR ? -EACCES
		   : wc->status == ESOCK_WC_LOC_LEN_ERR ? -EMSGSIZE : -ECONNRESET;
	u[i].used = false;
	if (s->eq[e.op])
		eq_push(s->eq[e.op], &e);
}

/* A free user-op record; -EAGAIN when USER_OPS are in flight. */
static int user_op(struct esock_sock *s, int op, uint64_t tag)
{
	struct user_op *u;

	if (!s->user_ops && !(s->user_ops = calloc(USER_OPS, sizeof(struct user_op))))
		return -ENOMEM;
	u = s->user_ops;
	for (uint32_t n = 0; n < USER_OPS; n++) {
		uint32_t i = (s->user_next + n) % USER_OPS;

		if (!u[i].used) {
			u[i] = (struct user_op){ .tag = tag, .op = op, .used = true };
			s->user_next = i + 1;
			return (int)i;
		}
	}
	return -EAGAIN;
}

/* The registration of |s| that holds [buf, buf + len) with |access|, or NULL. */
static const struct sock_mr *mr_holding(const struct esock_sock *s, const void *buf, size_t len,
					unsigned access)
{
	uintptr_t a = (uintptr_t)buf;

	for (int i = 0; i < s->nmrs; i++) {
		const struct sock_mr *m = &s->mrs[i];

		if (esock_range_within(m->addr, m->len, a, len) &&
		    (m->access & access) == access)
			return m;
	}
	return NULL;
}

/*
 * An operation on a socket of the verbs backend (lock held): the kernel
 * reaches registered memory only, so |buf| must lie in a region this
 * socket registered (-EFAULT otherwise; a Read's sink with local write).
 */
static int post_verbs(struct esock_sock *s, int op, void *buf, size_t len, uint64_t raddr,
		      uint32_t rkey, uint64_t tag)
{
	const struct sock_mr *m = NULL;
	struct esock_sge sge;
	int i, rc;

	if (!sock_vb_qp(s))
		return -ENOTCONN;
	if (!s->eq[op])
		return -ENXIO;
	if (op == ESOCK_OP_RECV)
		return -EBUSY; /* (the receive pool takes every message: a kernel QP needs it) */
	if (len && !(m = mr_holding(s, buf, len, op == ESOCK_OP_READ ? ESOCK_ACCESS_LOCAL_WRITE : 0)))
		return -EFAULT;
	if ((i = user_op(s, op, tag)) < 0)
		return i;
	sge = (struct esock_sge){ .addr = (uintptr_t)buf, .length = (uint32_t)len,
				  .lkey = m ? esock_mr_stag(m->mr) : 0 };
	struct esock_send_wr wr = {
		.wr_id = SOCK_WR_USER | (uint64_t)i, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op == ESOCK_OP_SEND ? ESOCK_WR_SEND
			  : op == ESOCK_OP_WRITE ? ESOCK_WR_RDMA_WRITE : ESOCK_WR_RDMA_READ,
		.send_flags = ESOCK_SEND_SIGNALED, .remote_addr = raddr, .rkey = rkey,
	};

	if ((rc = sock_vb_post_user(s, &wr)) < 0)
		s->user_ops[i].used = false;
	return rc;
}

static int post(int fd, int op, void *buf, size_t len, uint64_t raddr, uint32_t rkey, uint64_t tag)
{
	struct esock_sock *s = sock_get(fd);
	struct esock_sge sge;
	int i, rc;

	if (!s)
		return -ENOTSOCK;
	if (len > UINT32_MAX) {
		sock_put(s);
		return -EMSGSIZE;
	}
	pthread_mutex_lock(&s->lock);
	if (s->off) {
		/* (offloaded: registered memory goes through send/recv themselves, sock_off_reg.c) */
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (s->verbs) {
		rc = post_verbs(s, op, buf, len, raddr, rkey, tag);
		goto out;
	}
	sock_api_async(s);
	if (s->st != SOCK_CONNECTED || !s->qp) {
		rc = -ENOTCONN;
		goto out;
	}
	if (!s->eq[op]) {
		rc = -ENXIO; /* no event queue bound for this operation type */
		goto out;
	}
	if (op == ESOCK_OP_RECV && s->o.rdepth) {
		rc = -EBUSY; /* the receive pool takes the messages: ESOCK_RCVDEPTH 0 first */
		goto out;
	}
	if (s->suspended)
		sock_resume(s);
	if ((i = user_op(s, op, tag)) < 0) {
		rc = i;
		goto out;
	}
	/* A local-only key for the operations' buffers, whatever memory they are in. */
	if (!s->all_mr && (rc = esock_mr_reg(s->pd, (void *)(uintptr_t)4096, ((size_t)1 << 47) - 4096,
					     ESOCK_ACCESS_LOCAL_WRITE, 0, &s->all_mr)) < 0) {
		s->user_ops[i].used = false;
		goto out;
	}
	sge.addr = (uintptr_t)buf;
	sge.length = (uint32_t)len;
	sge.lkey = esock_mr_stag(s->all_mr);
	if (op == ESOCK_OP_RECV) {
		struct esock_recv_wr wr = { .wr_id = SOCK_WR_USER | (uint64_t)i, .sg_list = &sge,
					    .num_sge = 1 };

		rc = esock_post_recv(s->qp, &wr, NULL);
	} else {
		struct esock_send_wr wr = {
			.wr_id = SOCK_WR_USER | (uint64_t)i, .sg_list = &sge, .num_sge = len ? 1 : 0,
			.opcode = op == ESOCK_OP_SEND ? ESOCK_WR_SEND
				  : op == ESOCK_OP_WRITE ? ESOCK_WR_RDMA_WRITE : ESOCK_WR_RDMA_READ,
			.send_flags = ESOCK_SEND_SIGNALED, .remote_addr = raddr, .rkey = rkey,
		};

		rc = esock_post_send(s->qp, &wr, NULL);
	}
	if (rc < 0)
		s->user_ops[i].used = false;
	if (rc == -ENOMEM) /* the queue is full (SOCK_SQ_DEPTH): again once events came */
		rc = -EAGAIN;
out:
	pthread_mutex_unlock(&s->lock);
	sock_put(s);
	return rc;
}

static int api_send(int fd, const void *buf, size_t len, uint64_t tag)
{
	return post(fd, ESOCK_OP_SEND, (void *)(uintptr_t)buf, len, 0, 0, tag);
}

static int api_recv(int fd, void *buf, size_t len, uint64_t tag)
{
	return post(fd, ESOCK_OP_RECV, buf, len, 0, 0, tag);
}

static int api_write(int fd, const void *buf, size_t len, uint64_t raddr, uint32_t rkey,
		     uint64_t tag)
{
	return post(fd, ESOCK_OP_WRITE, (void *)(uintptr_t)buf, len, raddr, rkey, tag);
}

static int api_read(int fd, void *buf, size_t len, uint64_t raddr, uint32_t rkey, uint64_t tag)
{
	return post(fd, ESOCK_OP_READ, buf, len, raddr, rkey, tag);
}

static int eq_take(struct sock_eq *q, struct esock_event *ev, int n)
{
	int got = 0;

	pthread_mutex_lock(&q->lock);
	while (got < n && q->n) {
		ev[got++] = q->ev[q->head];
		q->head = (q->head + 1) % q->cap;
		q->n--;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

/* Takes every bound socket's completions (routing them) and re-arms its CQ. */
static bool eq_collect(struct sock_eq *q)
{
	bool more = false;

	pthread_mutex_lock(&q->lock);
	for (int i = 0; i < q->nbound; i++) {
		struct esock_sock *s = q->bound[i];

		/* Lock order: socket before queue; the bound set changes only under q->lock. */
		pthread_mutex_unlock(&q->lock);
		pthread_mutex_lock(&s->lock);
		sock_drain(s);
		if (cq_of(s) && esock_cq_arm(cq_of(s), false) > 0)
			more = true;
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return more;
}

static int api_eq_poll(int h, struct esock_event *ev, int n, int timeout_ms)
{
	struct sock_eq *q = eq_of(h);
	int64_t end = timeout_ms > 0 ? ep_now_ms() + timeout_ms : 0;

	if (!q || n <= 0 || !ev)
		return -EINVAL;
	for (;;) {
		bool more = eq_collect(q);
		int got = eq_take(q, ev, n), left = -1;
		struct epoll_event e[16];

		if (got)
			return got;
		if (more)
			continue;
		if (timeout_ms == 0)
			return 0;
		if (timeout_ms > 0 && (left = (int)(end - ep_now_ms())) <= 0)
			return 0;
		/* Sleep until a bound CQ signals (the engine drives the QPs meanwhile). */
		if (REAL(epoll_wait)(q->epfd, e, 16, left < 0 || left > 100 ? 100 : left) < 0 &&
		    errno == EINTR)
			return -EINTR;
	}
}

void sock_api_async(struct esock_sock *s)
{
	s->async_api = true;
	if (s->qp && ep_qp_lazy(s->qp)) {
		ep_qp_set_lazy(s->qp, false);
		ep_engine_refresh(s->qp);
		ep_qp_progress(s->qp, EP_WANT_RX | EP_WANT_DRAIN); /* what came while it was lazy */
	}
}

static int api_reg(int fd, void *addr, size_t len, unsigned access, uint32_t *stag)
{
	struct esock_sock *s = sock_get(fd);
	struct esock_pd *pd;
	struct esock_mr *mr;
	int rc;

	if (!s)
		return -ENOTSOCK;
	if (s->off) { /* (tcpserverd's registration: the process's, made without the socket's lock) */
		sock_put(s);
		return sock_off_reg(addr, len, access, stag);
	}
	pthread_mutex_lock(&s->lock);
	if (s->verbs || (sock_vb_wanted() == 2 && s->st != SOCK_CONNECTED)) {
		/* The verbs backend's PD is the connection's: from connect or accept on. */
		if (!(pd = sock_vb_pd(s))) {
			rc = -ENOTCONN;
			goto out;
		}
	} else {
		sock_api_async(s);
		if (!s->pd && (rc = ep_sock_pd_alloc(&s->pd)) < 0)
			goto out;
		pd = s->pd;
	}
	if ((rc = esock_mr_reg(pd, addr, len, access, 0, &mr)) < 0)
		goto out;
	if (s->nmrs == s->capmrs) {
		int nc = s->capmrs ? s->capmrs * 2 : 8;
		struct sock_mr *m = realloc(s->mrs, (size_t)nc * sizeof(*m));

		if (!m) {
			esock_mr_dereg(mr);
			rc = -ENOMEM;
			goto out;
		}
		s->mrs = m;
		s->capmrs = nc;
	}
	s->mrs[s->nmrs++] = (struct sock_mr){ .mr = mr, .addr = (uintptr_t)addr, .len = len,
					      .access = access };
	if (stag)
		*stag = esock_mr_stag(mr);
out:
	pthread_mutex_unlock(&s->lock);
	sock_put(s);
	return rc;
}

static int api_dereg(int fd, uint32_t stag)
{
	struct esock_sock *s = sock_get(fd);
	int rc = -ENOENT;

	if (!s)
		return -ENOTSOCK;
	if (s->off) {
		sock_put(s);
		return sock_off_dereg(stag);
	}
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->nmrs; i++)
		if (esock_mr_stag(s->mrs[i].mr) == stag) {
			esock_mr_dereg(s->mrs[i].mr);
			s->mrs[i] = s->mrs[--s->nmrs];
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	sock_put(s);
	return rc;
}

static struct esock_qp *api_qp(int fd)
{
	struct esock_sock *s = sock_get(fd);
	struct esock_qp *qp;

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	qp = s->verbs ? sock_vb_qp(s) : s->st == SOCK_CONNECTED ? s->qp : NULL;
	pthread_mutex_unlock(&s->lock);
	sock_put(s);
	return qp;
}

void sock_api_release(struct esock_sock *s)
{
	for (int op = ESOCK_OP_SEND; op <= ESOCK_OP_READ; op++)
		if (s->eq[op]) {
			eq_detach(s->eq[op], s);
			s->eq[op] = NULL;
		}
	for (int i = 0; i < s->nmrs; i++)
		esock_mr_dereg(s->mrs[i].mr);
	free(s->mrs);
	s->mrs = NULL;
	s->nmrs = s->capmrs = 0;
	free(s->user_ops);
	s->user_ops = NULL;
}

static const struct esock_api api = {
	.version = ESOCK_API_VERSION,
	.size = sizeof(struct esock_api),
	.reg = api_reg,
	.dereg = api_dereg,
	.eq_create = api_eq_create,
	.eq_fd = api_eq_fd,
	.eq_destroy = api_eq_destroy,
	.bind_eq = api_bind_eq,
	.eq_poll = api_eq_poll,
	.send = api_send,
	.recv = api_recv,
	.write = api_write,
	.read = api_read,
	.qp = api_qp,
};

const struct esock_api *sock_api(void)
{
	return &api;
}
