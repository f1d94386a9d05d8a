/* SPDX-License-Identifier: MIT */
/*
 * The verbs backend's table (iwarp/backend.h).  What it leaves out: objects
 * made from a TCP descriptor (the kernel owns the connection's socket), the
 * asynchronous connect of the socket layer, and local invalidation and
 * rekeying of STags (no fast-register through plain verbs): -EOPNOTSUPP.
 */
#include "config.h"

#include "iwarp/backend.h"
#include "kpatch/verbs/vb.h"

const struct esock_backend esock_verbs_backend = {
	.name = "verbs",
	.pd_alloc = vb_pd_alloc,
	.pd_free = vb_pd_free,
	.mr_reg = vb_mr_reg,
	.mr_stag = vb_mr_stag,
	.mr_dereg = vb_mr_dereg,
	.mr_valid = vb_mr_valid,
	.cq_create = vb_cq_create,
	.cq_destroy = vb_cq_destroy,
	.cq_poll = vb_cq_poll,
	.cq_wait = vb_cq_wait,
	.cq_fd = vb_cq_fd,
	.cq_arm = vb_cq_arm,
	.qp_create = vb_qp_create,
	.qp_destroy = vb_qp_destroy,
	.qp_state = vb_qp_state,
	.qp_num = vb_qp_num,
	.qp_connect = vb_qp_connect,
	.qp_conn_info = vb_qp_conn_info,
	.qp_disconnect = vb_qp_disconnect,
	.qp_last_error = vb_qp_last_error,
	.post_send = vb_post_send,
	.post_recv = vb_post_recv,
	.listen = vb_listen,
	.listener_addr = vb_listener_addr,
	.listener_fd = vb_listener_fd,
	.listener_close = vb_listener_close,
	.listener_configure = vb_listener_configure,
	.listener_poll_fd = vb_listener_poll_fd,
	.get_request = vb_get_request,
	.conn_req_info = vb_conn_req_info,
	.accept = vb_accept,
	.reject = vb_reject,
	.reaches = vb_reaches,
	.owns = vb_owns,
};
