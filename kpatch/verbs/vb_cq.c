/* SPDX-License-Identifier: MIT */
/*
 * The verbs backend's completion queues: an ibv_cq with a completion
 * channel behind esock_cq_fd and esock_cq_arm.  The channel's descriptor is
 * non-blocking; its events are taken and acknowledged whenever the CQ is
 * armed or waited on, so that it is readable only for news.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/backend.h"
#include "kpatch/verbs/vb.h"
#include "util/log.h"

int vb_cq_create(int depth, struct esock_cq **out)
{
	struct ibv_context *ctx = vb_device();
	struct vb_cq *c;
	int fl;

	if (!out || depth <= 0)
		return -EINVAL;
	if (!ctx)
		return -ENODEV;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->be = &esock_verbs_backend;
	c->ctx = ctx;
	if (!(c->ch = ibv_create_comp_channel(ctx)) ||
	    !(c->cq = ibv_create_cq(ctx, depth, c, c->ch, 0))) {
		if (c->ch)
			ibv_destroy_comp_channel(c->ch);
		free(c);
		return -ENOMEM;
	}
	if ((fl = fcntl(c->ch->fd, F_GETFL)) < 0 || fcntl(c->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		ibv_destroy_cq(c->cq);
		ibv_destroy_comp_channel(c->ch);
		free(c);
		return -errno;
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = (struct esock_cq *)c;
	return 0;
}

int vb_cq_destroy(struct esock_cq *cq)
{
	struct vb_cq *c = (struct vb_cq *)cq;

	if (atomic_load(&c->users))
		return -EBUSY;
	if (ibv_destroy_cq(c->cq) != 0)
		return -EBUSY; /* (unacknowledged events: cannot happen, all are acked) */
	ibv_destroy_comp_channel(c->ch);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

static enum esock_wc_status wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return ESOCK_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return ESOCK_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_MW_BIND_ERR:
		return ESOCK_WC_LOC_PROT_ERR;
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
		return ESOCK_WC_LOC_QP_OP_ERR;
	case IBV_WC_WR_FLUSH_ERR:
		return ESOCK_WC_WR_FLUSH_ERR;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return ESOCK_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
		return ESOCK_WC_REM_OP_ERR;
	default:
		return ESOCK_WC_FATAL_ERR;
	}
}

static void wc_of(const struct ibv_wc *w, struct esock_wc *e)
{
	memset(e, 0, sizeof(*e));
	e->wr_id = w->wr_id;
	e->status = wc_status(w->status);
	e->qp_num = w->qp_num;
	if (e->status == ESOCK_WC_FATAL_ERR)
		/* (the raw status says more than "fatal": e.g. IBV_WC_GENERAL_ERR from siw) */
		log_warn("verbs: QP %u WR %llu completed with ibverbs status %d, vendor error %u: "
			 "a fatal error", w->qp_num, (unsigned long long)w->wr_id, (int)w->status,
			 w->vendor_err);
	/* (the opcode of an error completion is undefined in verbs: the WR said it) */
	switch (w->opcode) {
	case IBV_WC_RDMA_WRITE:
		e->opcode = ESOCK_WC_RDMA_WRITE;
		break;
	case IBV_WC_RDMA_READ:
		e->opcode = ESOCK_WC_RDMA_READ;
		break;
	case IBV_WC_RECV:
	case IBV_WC_RECV_RDMA_WITH_IMM:
		e->opcode = ESOCK_WC_RECV;
		break;
	default:
		e->opcode = ESOCK_WC_SEND;
	}
	if (w->status == IBV_WC_SUCCESS && (w->opcode & IBV_WC_RECV)) {
		e->byte_len = w->byte_len;
		if (w->wc_flags & IBV_WC_WITH_INV) {
			e->flags |= ESOCK_WC_WITH_INV;
			e->invalidated_stag = w->invalidated_rkey;
		}
	} else if (w->opcode == IBV_WC_RDMA_READ) {
		e->byte_len = w->byte_len;
	}
}

/* Stashed first (esock_cq_arm polled them ahead), then the kernel's CQ.  Lock held. */
static int take(struct vb_cq *c, int n, struct esock_wc *wc)
{
	struct ibv_wc w[16];
	int got = 0, k;

	while (got < n && c->nstash) {
		wc_of(&c->stash[0], &wc[got++]);
		memmove(c->stash, c->stash + 1, (size_t)--c->nstash * sizeof(c->stash[0]));
	}
	while (got < n) {
		int want = n - got < 16 ? n - got : 16;

		if ((k = ibv_poll_cq(c->cq, want, w)) < 0)
			return got ? got : -EIO;
		for (int i = 0; i < k; i++)
			wc_of(&w[i], &wc[got++]);
		if (k < want)
			break;
	}
	return got;
}

int vb_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc)
{
	struct vb_cq *c = (struct vb_cq *)cq;
	int got;

	if (n < 0 || (n && !wc))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	got = take(c, n, wc);
	pthread_mutex_unlock(&c->lock);
	return got;
}

/* Takes and acknowledges what the channel holds (it stays readable otherwise). */
static void drain_channel(struct vb_cq *c)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	while (ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx) == 0)
		ibv_ack_cq_events(ev_cq, 1);
}

int vb_cq_arm(struct esock_cq *cq, bool solicited_only)
{
	struct vb_cq *c = (struct vb_cq *)cq;
	int rc, k;

	pthread_mutex_lock(&c->lock);
	drain_channel(c);
	if ((rc = ibv_req_notify_cq(c->cq, solicited_only)) != 0) {
		pthread_mutex_unlock(&c->lock);
		return -rc;
	}
	/* What came before the arm makes no event: look (keeping it for the next poll). */
	if (c->nstash < (int)(sizeof(c->stash) / sizeof(c->stash[0])) &&
	    (k = ibv_poll_cq(c->cq, (int)(sizeof(c->stash) / sizeof(c->stash[0])) - c->nstash,
			     c->stash + c->nstash)) > 0)
		c->nstash += k;
	rc = c->nstash > 0;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int vb_cq_fd(struct esock_cq *cq)
{
	return ((struct vb_cq *)cq)->ch->fd;
}

int vb_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms)
{
	struct vb_cq *c = (struct vb_cq *)cq;
	int64_t end = timeout_ms < 0 ? -1 : vb_now_ms() + timeout_ms;

	if (n <= 0 || !wc)
		return -EINVAL;
	for (;;) {
		struct pollfd p = { .fd = c->ch->fd, .events = POLLIN };
		int got, left;

		if ((got = vb_cq_poll(cq, n, wc)) != 0)
			return got;
		if ((got = vb_cq_arm(cq, false)) < 0)
			return got;
		if (got > 0)
			continue; /* it came between the poll and the arm */
		left = end < 0 ? -1 : (int)(end - vb_now_ms() > 0 ? end - vb_now_ms() : 0);
		if (left == 0)
			return 0;
		if (poll(&p, 1, left) < 0 && errno == EINTR)
			return -EINTR;
	}
}
