/* SPDX-License-Identifier: MIT */
/*
 * The endpoint API (esock/iwarp.h) handed to the backend of the object it
 * is called on (iwarp/backend.h).  New PDs, CQs and listeners, and objects
 * made from a descriptor, belong to the default backend; a QP to its PD's.
 * A NULL object is -EINVAL (or the type's "none": 0, false, -1, ERROR)
 * whatever the backend, and an operation the backend lacks -EOPNOTSUPP.
 */
#include "config.h"

#include <errno.h>

#include "iwarp/backend.h"

/* |obj|'s backend does |op| with |...|; |none| for a NULL object, |nosup| without the op. */
#define DISPATCH(obj, op, none, nosup, ...)                                      \
	do {                                                                     \
		const struct esock_backend *be_;                                 \
		if (!(obj))                                                      \
			return none;                                             \
		be_ = esock_be_of(obj);                                          \
		return be_->op ? be_->op(__VA_ARGS__) : nosup;                  \
	} while (0)
#define CALL(obj, op, ...) DISPATCH(obj, op, -EINVAL, -EOPNOTSUPP, __VA_ARGS__)

/* The default backend does |op| with |...|. */
#define CALL_DEFAULT(op, ...)                                                    \
	do {                                                                     \
		const struct esock_backend *be_ = esock_backend_default();       \
		if (!be_)                                                        \
			return -ENODEV;                                          \
		return be_->op ? be_->op(__VA_ARGS__) : -EOPNOTSUPP;            \
	} while (0)

/* ---- protection domains and memory regions ---- */

ESOCK_EXPORT int esock_pd_alloc(struct esock_pd **pd)
{
	CALL_DEFAULT(pd_alloc, pd);
}

ESOCK_EXPORT int esock_pd_free(struct esock_pd *pd)
{
	CALL(pd, pd_free, pd);
}

ESOCK_EXPORT int esock_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access,
			      uint8_t key, struct esock_mr **mr)
{
	CALL(pd, mr_reg, pd, addr, len, access, key, mr);
}

ESOCK_EXPORT uint32_t esock_mr_stag(const struct esock_mr *mr)
{
	DISPATCH(mr, mr_stag, 0, 0, mr);
}

ESOCK_EXPORT int esock_mr_dereg(struct esock_mr *mr)
{
	CALL(mr, mr_dereg, mr);
}

ESOCK_EXPORT int esock_mr_invalidate(struct esock_pd *pd, uint32_t stag)
{
	CALL(pd, mr_invalidate, pd, stag);
}

ESOCK_EXPORT int esock_mr_rekey(struct esock_mr *mr, uint8_t key)
{
	CALL(mr, mr_rekey, mr, key);
}

ESOCK_EXPORT bool esock_mr_valid(const struct esock_mr *mr)
{
	DISPATCH(mr, mr_valid, false, false, mr);
}

/* ---- completion queues ---- */

ESOCK_EXPORT int esock_cq_create(int depth, struct esock_cq **cq)
{
	CALL_DEFAULT(cq_create, depth, cq);
}

ESOCK_EXPORT int esock_cq_destroy(struct esock_cq *cq)
{
	CALL(cq, cq_destroy, cq);
}

ESOCK_EXPORT int esock_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc)
{
	CALL(cq, cq_poll, cq, n, wc);
}

ESOCK_EXPORT int esock_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms)
{
	CALL(cq, cq_wait, cq, n, wc, timeout_ms);
}

ESOCK_EXPORT int esock_cq_fd(struct esock_cq *cq)
{
	CALL(cq, cq_fd, cq);
}

ESOCK_EXPORT int esock_cq_arm(struct esock_cq *cq, bool solicited_only)
{
	CALL(cq, cq_arm, cq, solicited_only);
}

/* ---- queue pairs ---- */

ESOCK_EXPORT int esock_qp_create(const struct esock_qp_attr *attr, struct esock_qp **qp)
{
	const struct esock_backend *be;

	if (!attr || !attr->pd || !attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	be = esock_be_of(attr->pd);
	if (esock_be_of(attr->send_cq) != be || esock_be_of(attr->recv_cq) != be)
		return -EINVAL; /* one backend's PD with another's CQ */
	return be->qp_create ? be->qp_create(attr, qp) : -EOPNOTSUPP;
}

ESOCK_EXPORT int esock_qp_destroy(struct esock_qp *qp)
{
	CALL(qp, qp_destroy, qp);
}

ESOCK_EXPORT enum esock_qp_state esock_qp_state(const struct esock_qp *qp)
{
	DISPATCH(qp, qp_state, ESOCK_QPS_ERROR, ESOCK_QPS_ERROR, qp);
}

ESOCK_EXPORT uint32_t esock_qp_num(const struct esock_qp *qp)
{
	DISPATCH(qp, qp_num, 0, 0, qp);
}

ESOCK_EXPORT int esock_qp_connect(struct esock_qp *qp, const struct sockaddr *addr,
				  socklen_t addrlen, const struct esock_conn_param *param)
{
	CALL(qp, qp_connect, qp, addr, addrlen, param);
}

ESOCK_EXPORT int esock_qp_connect_fd(struct esock_qp *qp, int fd,
				     const struct esock_conn_param *param)
{
	CALL(qp, qp_connect_fd, qp, fd, param);
}

ESOCK_EXPORT int esock_qp_connect_start(struct esock_qp *qp, int fd,
					const struct esock_conn_param *param)
{
	CALL(qp, qp_connect_start, qp, fd, param);
}

ESOCK_EXPORT int esock_qp_connect_continue(struct esock_qp *qp)
{
	CALL(qp, qp_connect_continue, qp);
}

ESOCK_EXPORT int esock_qp_connect_wait_ms(const struct esock_qp *qp)
{
	DISPATCH(qp, qp_connect_wait_ms, -1, -1, qp);
}

ESOCK_EXPORT int esock_qp_conn_info(const struct esock_qp *qp, struct esock_conn_info *info)
{
	CALL(qp, qp_conn_info, qp, info);
}

ESOCK_EXPORT int esock_qp_disconnect(struct esock_qp *qp)
{
	CALL(qp, qp_disconnect, qp);
}

ESOCK_EXPORT int esock_qp_last_error(const struct esock_qp *qp, struct esock_qp_error *e)
{
	CALL(qp, qp_last_error, qp, e);
}

ESOCK_EXPORT int esock_post_send(struct esock_qp *qp, struct esock_send_wr *wr,
				 struct esock_send_wr **bad_wr)
{
	CALL(qp, post_send, qp, wr, bad_wr);
}

ESOCK_EXPORT int esock_post_recv(struct esock_qp *qp, struct esock_recv_wr *wr,
				 struct esock_recv_wr **bad_wr)
{
	CALL(qp, post_recv, qp, wr, bad_wr);
}

/* ---- listeners and connection requests ---- */

ESOCK_EXPORT int esock_listen(const struct sockaddr *addr, socklen_t addrlen, int backlog,
			      struct esock_listener **l)
{
	CALL_DEFAULT(listen, addr, addrlen, backlog, l);
}

ESOCK_EXPORT int esock_listener_from_fd(int fd, struct esock_listener **l)
{
	CALL_DEFAULT(listener_from_fd, fd, l);
}

ESOCK_EXPORT int esock_listener_addr(const struct esock_listener *l, struct sockaddr_storage *ss)
{
	CALL(l, listener_addr, l, ss);
}

ESOCK_EXPORT int esock_listener_fd(const struct esock_listener *l)
{
	CALL(l, listener_fd, l);
}

ESOCK_EXPORT int esock_listener_close(struct esock_listener *l)
{
	CALL(l, listener_close, l);
}

ESOCK_EXPORT int esock_listener_configure(struct esock_listener *l, const struct esock_listen_param *p)
{
	CALL(l, listener_configure, l, p);
}

ESOCK_EXPORT int esock_listener_poll_fd(struct esock_listener *l)
{
	CALL(l, listener_poll_fd, l);
}

ESOCK_EXPORT int esock_listener_ready(struct esock_listener *l)
{
	CALL(l, listener_ready, l);
}

ESOCK_EXPORT int esock_get_request(struct esock_listener *l, struct esock_conn_req **req,
				   int timeout_ms)
{
	CALL(l, get_request, l, req, timeout_ms);
}

ESOCK_EXPORT int esock_request_from_fd(int fd, struct esock_conn_req **req)
{
	CALL_DEFAULT(request_from_fd, fd, req);
}

ESOCK_EXPORT int esock_conn_req_fd(const struct esock_conn_req *req)
{
	CALL(req, conn_req_fd, req);
}

ESOCK_EXPORT int esock_conn_req_take_plain(struct esock_conn_req *req)
{
	CALL(req, conn_req_take_plain, req);
}

ESOCK_EXPORT int esock_conn_req_info(const struct esock_conn_req *req, struct esock_conn_info *info)
{
	CALL(req, conn_req_info, req, info);
}

ESOCK_EXPORT int esock_accept(struct esock_conn_req *req, struct esock_qp *qp,
			      const struct esock_conn_param *param)
{
	if (req && qp && esock_be_of(req) != esock_be_of(qp))
		return -EINVAL; /* a request of one backend for another's QP */
	CALL(req, accept, req, qp, param);
}

ESOCK_EXPORT int esock_reject(struct esock_conn_req *req, const void *pd, uint16_t pd_len)
{
	CALL(req, reject, req, pd, pd_len);
}

/* ---- the same for every backend ---- */

ESOCK_EXPORT const char *esock_wc_status_str(enum esock_wc_status st)
{
	static const char *const names[] = {
		"success", "local length error", "local protection error",
		"local QP operation error", "flush error", "remote access error",
		"remote operation error", "fatal error",
	};

	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "unknown status";
}

ESOCK_EXPORT const char *esock_qp_backend(const struct esock_qp *qp)
{
	return qp ? esock_be_of(qp)->name : NULL;
}

ESOCK_EXPORT const char *esock_listener_backend(const struct esock_listener *l)
{
	return l ? esock_be_of(l)->name : NULL;
}
