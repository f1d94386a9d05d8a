/* SPDX-License-Identifier: MIT */
/* The verbs backend's queue pairs and work requests (see vb.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwarp/backend.h"
#include "kpatch/verbs/vb.h"
#include "util/log.h"

#define DEPTH_DEFAULT 128
#define SGE_DEFAULT 4
#define SGE_MAX 15

int vb_qp_create(const struct esock_qp_attr *a, struct esock_qp **out)
{
	struct vb_qp *qp;
	int fl;

	if (!a || !out || a->max_sge > SGE_MAX || a->max_recv_sge > SGE_MAX)
		return -EINVAL;
	if (!(qp = calloc(1, sizeof(*qp))))
		return -ENOMEM;
	qp->be = &esock_verbs_backend;
	qp->pd = (struct vb_pd *)a->pd;
	qp->scq = (struct vb_cq *)a->send_cq;
	qp->rcq = (struct vb_cq *)a->recv_cq;
	qp->attr = *a;
	qp->attr.sq_depth = a->sq_depth ? a->sq_depth : DEPTH_DEFAULT;
	qp->attr.rq_depth = a->rq_depth ? a->rq_depth : DEPTH_DEFAULT;
	qp->attr.max_sge = a->max_sge ? a->max_sge : SGE_DEFAULT;
	qp->attr.max_recv_sge = a->max_recv_sge ? a->max_recv_sge : qp->attr.max_sge;
	if (!(qp->ech = rdma_create_event_channel())) {
		free(qp);
		return -errno;
	}
	/* Its events are read without blocking (vb_qp_events) or after a poll (vb_event_wait). */
	if ((fl = fcntl(qp->ech->fd, F_GETFL)) < 0 ||
	    fcntl(qp->ech->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rdma_destroy_event_channel(qp->ech);
		free(qp);
		return -errno;
	}
	pthread_mutex_init(&qp->lock, NULL);
	qp->pending_tail = &qp->pending;
	atomic_store(&qp->state, ESOCK_QPS_IDLE);
	atomic_fetch_add(&qp->pd->refs, 1);
	atomic_fetch_add(&qp->scq->users, 1);
	atomic_fetch_add(&qp->rcq->users, 1);
	*out = (struct esock_qp *)qp;
	return 0;
}

int vb_qp_destroy(struct esock_qp *q)
{
	struct vb_qp *qp = (struct vb_qp *)q;

	if (qp->id) {
		if (atomic_load(&qp->state) == ESOCK_QPS_RTS)
			rdma_disconnect(qp->id);
		if (qp->id->qp)
			rdma_destroy_qp(qp->id);
		rdma_destroy_id(qp->id);
	}
	rdma_destroy_event_channel(qp->ech);
	while (qp->pending) {
		struct vb_pending_recv *p = qp->pending;

		qp->pending = p->next;
		free(p);
	}
	atomic_fetch_sub(&qp->pd->refs, 1);
	atomic_fetch_sub(&qp->scq->users, 1);
	atomic_fetch_sub(&qp->rcq->users, 1);
	pthread_mutex_destroy(&qp->lock);
	free(qp);
	return 0;
}

void vb_qp_set_error(struct vb_qp *qp, int err, bool sent)
{
	if (!qp->has_err) {
		qp->has_err = true;
		qp->err.err = err;
		qp->err.sent = sent;
	}
}

/* What a connection event means for an established QP. */
static void on_event(struct vb_qp *qp, const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * Ours or the peer's orderly close (an abort comes as an error
		 * event or completion); the kernel moved the QP to error and
		 * flushes what is posted.
		 */
		vb_qp_set_error(qp, -ESHUTDOWN, false);
		atomic_store(&qp->state, ESOCK_QPS_ERROR);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		vb_qp_set_error(qp, -ECONNABORTED, false);
		atomic_store(&qp->state, ESOCK_QPS_ERROR);
		break;
	default:
		log_debug("verbs qp %u: event %s", qp->id && qp->id->qp ? qp->id->qp->qp_num : 0,
			  rdma_event_str(ev->event));
	}
}

void vb_qp_events(struct vb_qp *qp)
{
	struct rdma_cm_event *ev;

	if (!qp->id)
		return;
	while (rdma_get_cm_event(qp->ech, &ev) == 0) {
		on_event(qp, ev);
		rdma_ack_cm_event(ev);
	}
}

int vb_event_wait(struct rdma_event_channel *ech, int timeout_ms, struct rdma_cm_event **ev)
{
	for (;;) {
		struct pollfd p = { .fd = ech->fd, .events = POLLIN };
		int n;

		if (rdma_get_cm_event(ech, ev) == 0)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if ((n = poll(&p, 1, timeout_ms)) < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
	}
}

enum esock_qp_state vb_qp_state(const struct esock_qp *q)
{
	struct vb_qp *qp = (struct vb_qp *)(uintptr_t)q;

	vb_qp_events(qp);
	return (enum esock_qp_state)atomic_load(&qp->state);
}

uint32_t vb_qp_num(const struct esock_qp *q)
{
	const struct vb_qp *qp = (const struct vb_qp *)q;

	return qp->id && qp->id->qp ? qp->id->qp->qp_num : 0;
}

/*
 * A provider's post_send/post_recv error as -errno.  The verbs convention is
 * a positive errno, but some providers return it negated (rdma-core's siw:
 * -EINVAL, -ENOMEM), which read the other way would pass for success.
 */
static int post_err(int rc)
{
	return rc > 0 ? -rc : rc;
}

/*
 * Posts one receive.  A receive without SGEs (for zero-length Sends: a
 * doorbell) is legal verbs, but rdma-core's siw provider refuses it with
 * -EINVAL: then it goes again as one empty SGE, which siw skips without
 * looking at its key (nothing is placed through it).
 */
static int post_recv_wr(struct ibv_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad, w;
	struct ibv_sge none = { 0 };
	int rc = post_err(ibv_post_recv(qp, wr, &bad));

	if (rc != -EINVAL || wr->num_sge != 0)
		return rc;
	w = *wr;
	w.next = NULL;
	w.sg_list = &none;
	w.num_sge = 1;
	return post_err(ibv_post_recv(qp, &w, &bad));
}

/* SGEs by STag, as esock has them, into the kernel's (lkeys).  0 or -EINVAL. */
static int sges(struct vb_qp *qp, const struct esock_sge *in, int n, struct ibv_sge *out)
{
	for (int i = 0; i < n; i++) {
		out[i].addr = in[i].addr;
		out[i].length = in[i].length;
		if (!vb_lkey(qp->pd, in[i].lkey, &out[i].lkey))
			return -EINVAL;
	}
	return 0;
}

static int post_one_recv(struct vb_qp *qp, const struct esock_recv_wr *wr)
{
	struct vb_pending_recv *p;
	int rc;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->attr.max_recv_sge)
		return -EINVAL;
	if (!(p = calloc(1, sizeof(*p) + (size_t)wr->num_sge * sizeof(p->sge[0]))))
		return -ENOMEM;
	if ((rc = sges(qp, wr->sg_list, wr->num_sge, p->sge)) < 0) {
		free(p);
		return rc;
	}
	p->wr.wr_id = wr->wr_id;
	p->wr.sg_list = p->sge;
	p->wr.num_sge = wr->num_sge;
	if (qp->id && qp->id->qp) {
		rc = post_recv_wr(qp->id->qp, &p->wr);
		free(p);
		return rc;
	}
	/* Not connected yet: posted when the QP is made (vb_qp_make). */
	*qp->pending_tail = p;
	qp->pending_tail = &p->next;
	return 0;
}

int vb_post_recv(struct esock_qp *q, struct esock_recv_wr *wr, struct esock_recv_wr **bad)
{
	struct vb_qp *qp = (struct vb_qp *)q;
	int rc = 0;

	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next)
		if ((rc = post_one_recv(qp, wr)) < 0)
			break;
	pthread_mutex_unlock(&qp->lock);
	if (rc < 0 && bad)
		*bad = wr;
	return rc;
}

static int opcode_of(enum esock_wr_opcode op, unsigned *flags)
{
	switch (op) {
	case ESOCK_WR_SEND_SE:
		*flags |= IBV_SEND_SOLICITED;
		/* fall through */
	case ESOCK_WR_SEND:
		return IBV_WR_SEND;
	case ESOCK_WR_SEND_SE_INV:
		*flags |= IBV_SEND_SOLICITED;
		/* fall through */
	case ESOCK_WR_SEND_INV:
		return IBV_WR_SEND_WITH_INV;
	case ESOCK_WR_RDMA_WRITE:
		return IBV_WR_RDMA_WRITE;
	case ESOCK_WR_RDMA_READ:
		return IBV_WR_RDMA_READ;
	}
	return -1;
}

/*
 * Kernel siw copies a payload short enough for the FPDU's header buffer
 * (siw_try_1seg: one SGE of up to 24 octets) wrongly when it crosses a page
 * and the transmit thread, not the posting system call, sends it: it takes
 * as many octets from the first page as lie on the second and looks the
 * second up at the wrong address (kpatch/linux 0007; Linux 6.1 as checked,
 * the lines as old as the driver).  Seen on the wire as a TCP Server request
 * whose id and socket were a malloc chunk header.  Such a payload goes as
 * two SGEs split at the page, which siw sends through its general path.
 * SHORT_SPLIT_MAX is above any header buffer siw has had.
 */
#define SHORT_SPLIT_MAX 64

static void split_short(struct ibv_send_wr *w, struct ibv_sge *sg)
{
	static uint64_t page;
	uint64_t end, edge;

	if (w->num_sge != 1 || sg[0].length > SHORT_SPLIT_MAX)
		return;
	if (!page) {
		long p = sysconf(_SC_PAGESIZE);

		page = p > 0 ? (uint64_t)p : 4096;
	}
	end = sg[0].addr + sg[0].length;
	edge = (sg[0].addr | (page - 1)) + 1;
	if (end <= edge)
		return;
	sg[1] = (struct ibv_sge){ .addr = edge, .length = (uint32_t)(end - edge), .lkey = sg[0].lkey };
	sg[0].length = (uint32_t)(edge - sg[0].addr);
	w->num_sge = 2;
}

int vb_post_send(struct esock_qp *q, struct esock_send_wr *wr, struct esock_send_wr **bad)
{
	struct vb_qp *qp = (struct vb_qp *)q;
	int rc = 0;

	vb_qp_events(qp);
	if (atomic_load(&qp->state) != ESOCK_QPS_RTS || !qp->id || !qp->id->qp) {
		if (bad)
			*bad = wr;
		return -ENOTCONN;
	}
	for (; wr; wr = wr->next) {
		struct ibv_sge sg[SGE_MAX];
		struct ibv_send_wr w = { .wr_id = wr->wr_id, .sg_list = sg, .num_sge = wr->num_sge }, *b;
		unsigned flags = 0;
		int op = opcode_of(wr->opcode, &flags);

		if (op < 0 || wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->attr.max_sge ||
		    (wr->opcode == ESOCK_WR_RDMA_READ && wr->num_sge > 1)) {
			rc = -EINVAL;
			break;
		}
		if ((rc = sges(qp, wr->sg_list, wr->num_sge, sg)) < 0)
			break;
		w.opcode = (enum ibv_wr_opcode)op;
		if (wr->send_flags & ESOCK_SEND_SIGNALED)
			flags |= IBV_SEND_SIGNALED;
		if (wr->send_flags & ESOCK_SEND_FENCE)
			flags |= IBV_SEND_FENCE;
		w.send_flags = flags;
		if (op == IBV_WR_SEND_WITH_INV)
			w.invalidate_rkey = wr->invalidate_stag;
		if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ) {
			w.wr.rdma.remote_addr = wr->remote_addr;
			w.wr.rdma.rkey = wr->rkey;
		}
		if (qp->pd->split_short && op != IBV_WR_RDMA_READ)
			split_short(&w, sg);
		if ((rc = post_err(ibv_post_send(qp->id->qp, &w, &b))) != 0)
			break;
	}
	if (rc < 0 && bad)
		*bad = wr;
	return rc;
}

int vb_qp_make(struct vb_qp *qp, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr init = {
		.send_cq = qp->scq->cq,
		.recv_cq = qp->rcq->cq,
		.cap = { .max_send_wr = qp->attr.sq_depth, .max_recv_wr = qp->attr.rq_depth,
			 .max_send_sge = qp->attr.max_sge, .max_recv_sge = qp->attr.max_recv_sge },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = qp->attr.sq_sig_all,
	};
	struct vb_pending_recv *p;
	unsigned n = 0;

	if (id->verbs != qp->pd->ctx)
		return -EXDEV; /* the connection goes through another device than the PD's */
	if (qp->pd->split_short && init.cap.max_send_sge < 2)
		init.cap.max_send_sge = 2; /* (see split_short: two SGEs at least) */
	if (rdma_create_qp(id, qp->pd->pd, &init) != 0)
		return -errno;
	pthread_mutex_lock(&qp->lock);
	qp->id = id;
	while ((p = qp->pending)) {
		int rc = post_recv_wr(id->qp, &p->wr);

		qp->pending = p->next;
		free(p);
		if (rc) {
			pthread_mutex_unlock(&qp->lock);
			log_warn("verbs qp %u: a receive posted before connecting failed: %s", id->qp->qp_num,
				 strerror(-rc));
			return rc;
		}
		n++;
	}
	qp->pending_tail = &qp->pending;
	pthread_mutex_unlock(&qp->lock);
	log_debug("verbs qp %u: made, %u receives posted before connecting", id->qp->qp_num, n);
	return 0;
}

void vb_qp_established(struct vb_qp *qp, const struct rdma_conn_param *p)
{
	struct esock_conn_info *i = &qp->info;
	struct sockaddr *la = rdma_get_local_addr(qp->id), *ra = rdma_get_peer_addr(qp->id);

	memset(i, 0, sizeof(*i));
	/* The kernel's MPA: revision 2 with RFC 6581 is what siw and RNICs speak today. */
	i->mpa_rev = 2;
	i->enhanced = true;
	i->ird = p ? p->responder_resources : 0;
	i->ord = p ? p->initiator_depth : 0;
	if (p && p->private_data && p->private_data_len) {
		i->private_data_len = p->private_data_len;
		memcpy(i->private_data, p->private_data, p->private_data_len);
	}
	i->peer = "verbs";
	if (la)
		memcpy(&i->local, la, la->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								 : sizeof(struct sockaddr_in));
	if (ra)
		memcpy(&i->remote, ra, ra->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								  : sizeof(struct sockaddr_in));
	qp->info_valid = true;
	atomic_store(&qp->state, ESOCK_QPS_RTS);
}

int vb_qp_conn_info(const struct esock_qp *q, struct esock_conn_info *info)
{
	const struct vb_qp *qp = (const struct vb_qp *)q;

	if (!info)
		return -EINVAL;
	if (!qp->info_valid)
		return -ENOTCONN;
	*info = qp->info;
	return 0;
}

int vb_qp_disconnect(struct esock_qp *q)
{
	struct vb_qp *qp = (struct vb_qp *)q;
	int st;

	vb_qp_events(qp);
	st = atomic_load(&qp->state);
	if (st != ESOCK_QPS_RTS)
		return st == ESOCK_QPS_IDLE ? -ENOTCONN : 0;
	atomic_store(&qp->state, ESOCK_QPS_CLOSING);
	if (rdma_disconnect(qp->id) != 0)
		return -errno;
	return 0;
}

int vb_qp_last_error(const struct esock_qp *q, struct esock_qp_error *e)
{
	const struct vb_qp *qp = (const struct vb_qp *)q;

	if (!e)
		return -EINVAL;
	if (!qp->has_err)
		return -ENOENT;
	*e = qp->err;
	return 0;
}
