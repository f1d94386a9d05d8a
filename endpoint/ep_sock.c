/* SPDX-License-Identifier: MIT */
/* A QP's and a CQ's state as the socket layer sees it (see ep_sock.h). */
#include "config.h"

#include "endpoint/ep.h"
#include "endpoint/ep_sock.h"

int ep_sock_pd_alloc(struct esock_pd **pd)
{
	return user_pd_alloc(pd);
}

int ep_sock_cq_create(int depth, struct esock_cq **cq)
{
	return user_cq_create(depth, cq);
}

int ep_sock_listener_from_fd(int fd, struct esock_listener **l)
{
	return user_listener_from_fd(fd, l);
}

int ep_qp_fd(const struct esock_qp *qp)
{
	return qp->fd;
}

void ep_qp_set_fd(struct esock_qp *qp, int fd, bool borrowed)
{
	qp->fd = fd;
	qp->fd_borrowed = borrowed;
	qp->fd_of_sock = true; /* (its flags are the application's: ep_qp_sleep_input) */
}

bool ep_qp_fd_borrowed(const struct esock_qp *qp)
{
	return qp->fd_borrowed;
}

bool ep_qp_lazy(const struct esock_qp *qp)
{
	return qp->lazy;
}

void ep_qp_set_lazy(struct esock_qp *qp, bool lazy)
{
	qp->lazy = lazy;
}

bool ep_qp_rx_eof(const struct esock_qp *qp)
{
	return atomic_load(&qp->rx_eof);
}

bool ep_qp_input_ended(const struct esock_qp *qp)
{
	return atomic_load(&qp->rx_eof) || atomic_load(&qp->state) == ESOCK_QPS_ERROR;
}

bool ep_qp_rx_paused(const struct esock_qp *qp)
{
	return atomic_load(&qp->rx_paused);
}

bool ep_qp_pollout(const struct esock_qp *qp)
{
	return qp->pollout;
}

bool ep_qp_want_room(const struct esock_qp *qp)
{
	return atomic_load(&qp->want_room);
}

void ep_qp_set_want_room(struct esock_qp *qp, bool on)
{
	atomic_store(&qp->want_room, on);
}

const struct esock_conn_info *ep_qp_info(const struct esock_qp *qp)
{
	return &qp->info;
}

void ep_qp_set_rtr_cork(struct esock_qp *qp, bool cork)
{
	qp->rtr_cork = cork;
}

void ep_qp_set_pack_one(struct esock_qp *qp, bool one)
{
	qp->tx_pack_one = one;
}

void ep_qp_set_credits(struct esock_qp *qp, uint32_t depth)
{
	qp->cr_word = 0;
	qp->cr_sent = 0;
	qp->cr_limit = depth > 1 ? depth - 1 : 1;
}

void ep_qp_set_rq_refill(struct esock_qp *qp, int (*refill)(void *arg), void *arg)
{
	qp->rq_refill_arg = arg;
	qp->rq_refill = refill;
}

void ep_qp_set_linger(struct esock_qp *qp, bool abort)
{
	qp->linger_known = true;
	qp->linger_abort = abort;
}

void ep_qp_serve(struct esock_qp *qp)
{
	if (atomic_load_explicit(&qp->want, memory_order_relaxed))
		ep_qp_progress(qp, 0);
}

bool ep_cq_armed(const struct esock_cq *cq)
{
	return atomic_load(&cq->armed);
}

void ep_cq_disarm(struct esock_cq *cq)
{
	atomic_store(&cq->armed, 0);
}

uint32_t ep_cq_count(const struct esock_cq *cq)
{
	return ep_ring_count(&cq->ring);
}

bool ep_cq_quiet(const struct esock_cq *cq)
{
	return !ep_ring_count(&cq->ring) && !atomic_load_explicit(&cq->overflow, memory_order_relaxed);
}

uint32_t ep_cq_size(const struct esock_cq *cq)
{
	return cq->ring.size;
}

void ep_conn_req_keep_fd(struct esock_conn_req *r)
{
	r->keep_fd = true;
}

const uint8_t *ep_conn_req_private_data(const struct esock_conn_req *r, size_t *len)
{
	*len = r->req.pd_len;
	return r->req.pd;
}
