/* SPDX-License-Identifier: MIT */
/*
 * The seam between the endpoint API (include/esock/iwarp.h) and what carries
 * it out: one table of operations per backend, as an rdma-core provider's
 * ops.  "user" is the user-level endpoint over kernel TCP (endpoint/); a
 * verbs backend over rdma-core (kpatch/) fills the same table.
 *
 * Every PD, MR, CQ, QP, listener and connection request of every backend
 * begins with a pointer to its backend (struct esock_obj), set by the
 * backend when it makes the object: iwarp/dispatch.c reads that and nothing
 * else, so a backend's objects are its own business.  A QP's PD and CQs and
 * an MR's PD must be of one backend (-EINVAL otherwise).  An operation a
 * backend cannot do is NULL in its table: -EOPNOTSUPP.
 */
#ifndef ESOCK_IWARP_BACKEND_H
#define ESOCK_IWARP_BACKEND_H

#include "esock/iwarp.h"

struct esock_backend;

/* The first member of every object of every backend. */
struct esock_obj {
	const struct esock_backend *be;
};

static inline const struct esock_backend *esock_be_of(const void *obj)
{
	return ((const struct esock_obj *)obj)->be;
}

struct esock_backend {
	const char *name;
	/* protection domains and memory regions */
	int (*pd_alloc)(struct esock_pd **pd);
	int (*pd_free)(struct esock_pd *pd);
	int (*mr_reg)(struct esock_pd *pd, void *addr, size_t len, unsigned access, uint8_t key,
		      struct esock_mr **mr);
	uint32_t (*mr_stag)(const struct esock_mr *mr);
	int (*mr_dereg)(struct esock_mr *mr);
	int (*mr_invalidate)(struct esock_pd *pd, uint32_t stag);
	int (*mr_rekey)(struct esock_mr *mr, uint8_t key);
	bool (*mr_valid)(const struct esock_mr *mr);
	/* completion queues */
	int (*cq_create)(int depth, struct esock_cq **cq);
	int (*cq_destroy)(struct esock_cq *cq);
	int (*cq_poll)(struct esock_cq *cq, int n, struct esock_wc *wc);
	int (*cq_wait)(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms);
	int (*cq_fd)(struct esock_cq *cq);
	int (*cq_arm)(struct esock_cq *cq, bool solicited_only);
	/* queue pairs */
	int (*qp_create)(const struct esock_qp_attr *attr, struct esock_qp **qp);
	int (*qp_destroy)(struct esock_qp *qp);
	enum esock_qp_state (*qp_state)(const struct esock_qp *qp);
	uint32_t (*qp_num)(const struct esock_qp *qp);
	int (*qp_connect)(struct esock_qp *qp, const struct sockaddr *addr, socklen_t addrlen,
			  const struct esock_conn_param *param);
	int (*qp_connect_fd)(struct esock_qp *qp, int fd, const struct esock_conn_param *param);
	int (*qp_connect_start)(struct esock_qp *qp, int fd, const struct esock_conn_param *param);
	int (*qp_connect_continue)(struct esock_qp *qp);
	int (*qp_connect_wait_ms)(const struct esock_qp *qp);
	int (*qp_conn_info)(const struct esock_qp *qp, struct esock_conn_info *info);
	int (*qp_disconnect)(struct esock_qp *qp);
	int (*qp_last_error)(const struct esock_qp *qp, struct esock_qp_error *e);
	int (*post_send)(struct esock_qp *qp, struct esock_send_wr *wr, struct esock_send_wr **bad);
	int (*post_recv)(struct esock_qp *qp, struct esock_recv_wr *wr, struct esock_recv_wr **bad);
	/* listeners and connection requests */
	int (*listen)(const struct sockaddr *addr, socklen_t addrlen, int backlog,
		      struct esock_listener **l);
	int (*listener_from_fd)(int fd, struct esock_listener **l);
	int (*listener_addr)(const struct esock_listener *l, struct sockaddr_storage *ss);
	int (*listener_fd)(const struct esock_listener *l);
	int (*listener_close)(struct esock_listener *l);
	int (*listener_configure)(struct esock_listener *l, const struct esock_listen_param *p);
	int (*listener_poll_fd)(struct esock_listener *l);
	int (*listener_ready)(struct esock_listener *l);
	int (*get_request)(struct esock_listener *l, struct esock_conn_req **req, int timeout_ms);
	int (*request_from_fd)(int fd, struct esock_conn_req **req);
	int (*conn_req_fd)(const struct esock_conn_req *req);
	int (*conn_req_take_plain)(struct esock_conn_req *req);
	int (*conn_req_info)(const struct esock_conn_req *req, struct esock_conn_info *info);
	int (*accept)(struct esock_conn_req *req, struct esock_qp *qp,
		      const struct esock_conn_param *param);
	int (*reject)(struct esock_conn_req *req, const void *pd, uint16_t pd_len);
	/*
	 * For ESOCK_BACKEND=auto, per connection (NULL: always): whether this
	 * backend's device routes to |addr| (reaches), or owns |addr|, a local
	 * address to listen on (owns).  1 yes, 0 no.
	 */
	int (*reaches)(const struct sockaddr *addr, socklen_t addrlen);
	int (*owns)(const struct sockaddr *addr, socklen_t addrlen);
};

/* The user-level endpoint (endpoint/ep_backend.c). */
extern const struct esock_backend esock_user_backend;
/* rdma-core verbs (kpatch/verbs/vb_backend.c), where built (ESOCK_HAVE_VERBS). */
extern const struct esock_backend esock_verbs_backend;

/*
 * The backend new PDs, CQs and listeners get: $ESOCK_BACKEND (user, verbs,
 * auto; default auto), read once.  NULL when the one asked for is not built
 * into this library (the creating call fails with -ENODEV).
 */
const struct esock_backend *esock_backend_default(void);

#endif /* ESOCK_IWARP_BACKEND_H */
