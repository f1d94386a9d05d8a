/* SPDX-License-Identifier: MIT */
/*
 * The verbs backend: esock/iwarp.h over rdma-core (librdmacm for the
 * connection, libibverbs for PDs, MRs, CQs and work requests), so that a
 * program on a host with kernel siw or an iWARP RNIC uses the kernel's
 * iWARP through the same API as the user-level endpoint.  The kernel does
 * MPA, DDP and RDMAP; this backend only translates.
 *
 * Devices: a PD and a CQ open the device named by $ESOCK_VERBS_DEVICE, else
 * the first iWARP device rdma_cm knows (rdma_get_devices: the contexts its
 * connection ids use).  A QP's connection must go through that device
 * (-EXDEV otherwise).  The QP itself is made when it connects or accepts
 * (rdma_cm makes it on the connection's id); receives posted before wait in
 * a list and are posted then.
 *
 * Connection events come on an event channel per QP (and per listener);
 * the backend reads them without blocking whenever the QP's state is asked
 * or work is posted, and blocks on them only inside connect and accept.
 */
#ifndef ESOCK_KPATCH_VERBS_VB_H
#define ESOCK_KPATCH_VERBS_VB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <esock/iwarp.h>

#include "kpatch/verbs/vb_keys.h"
#include "kpatch/verbs/vb_lib.h"

struct esock_backend;

/* rdma_cm carries at most 255 octets of private data (its length is one octet). */
#define VB_PRIVDATA_MAX 255
/* How long connect and accept wait for the connection (0 in the parameters). */
#define VB_TIMEOUT_DEFAULT_MS 10000

struct vb_mr;

struct vb_pd {
	const struct esock_backend *be; /* first: iwarp/backend.h */
	struct ibv_context *ctx;        /* rdma_cm's context of the device (not ours to close) */
	struct ibv_pd *pd;
	atomic_int refs;                /* MRs and QPs */
	struct vb_keys keys;            /* STag (rkey and lkey) -> struct vb_mr, for SGEs */
	bool split_short;               /* siw: its QPs split a short payload across a page (vb_qp.c) */
};

struct vb_mr {
	const struct esock_backend *be;
	struct vb_pd *pd;
	struct ibv_mr *mr;
};

struct vb_cq {
	const struct esock_backend *be;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	atomic_int users;               /* QPs on it */
	pthread_mutex_t lock;           /* the stash below */
	struct ibv_wc stash[16];        /* polled ahead by esock_cq_arm (it must tell what waits) */
	int nstash;
};

/* A receive posted before the QP exists: kept, with its SGEs. */
struct vb_pending_recv {
	struct vb_pending_recv *next;
	struct ibv_recv_wr wr;
	struct ibv_sge sge[];
};

struct vb_qp {
	const struct esock_backend *be;
	struct vb_pd *pd;
	struct vb_cq *scq, *rcq;
	struct esock_qp_attr attr;
	struct rdma_event_channel *ech; /* this QP's connection events */
	struct rdma_cm_id *id;          /* with a QP once connected or accepted */
	atomic_int state;               /* enum esock_qp_state */
	pthread_mutex_t lock;
	struct vb_pending_recv *pending, **pending_tail;
	bool info_valid;
	struct esock_conn_info info;
	bool has_err;
	struct esock_qp_error err;
};

struct vb_listener {
	const struct esock_backend *be;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	int timeout_ms;                 /* what a request may wait for its accept */
};

struct vb_req {
	const struct esock_backend *be;
	struct rdma_cm_id *id;          /* the new connection's id (on the listener's channel) */
	struct esock_conn_info info;    /* the peer's private data and Read depths */
	struct vb_listener *l;
};

static inline int64_t vb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* vb_dev.c: the device new PDs and CQs use (rdma_cm's context), or NULL. */
struct ibv_context *vb_device(void);
/* Whether this host has an iWARP device (rdma-core loadable and rdma_cm lists one). */
bool vb_have_iwarp_device(void);
/* The lkey of the MR of |pd| whose STag is |stag|, or false. */
bool vb_lkey(struct vb_pd *pd, uint32_t stag, uint32_t *lkey);

/* vb_qp.c */
void vb_qp_set_error(struct vb_qp *qp, int err, bool sent);
/* Reads the QP's pending connection events without blocking (state changes). */
void vb_qp_events(struct vb_qp *qp);
/* Makes the kernel's QP on |id| and posts the receives that waited.  0 or -errno. */
int vb_qp_make(struct vb_qp *qp, struct rdma_cm_id *id);
/* Fills qp->info from an ESTABLISHED event's parameters and the id's addresses. */
void vb_qp_established(struct vb_qp *qp, const struct rdma_conn_param *p);
/* Waits (poll) for the next event on |ech|, at most |timeout_ms| (-1: forever); 0 or -errno. */
int vb_event_wait(struct rdma_event_channel *ech, int timeout_ms, struct rdma_cm_event **ev);

/* Every operation of the table (vb_backend.c), in esock/iwarp.h's order. */
int vb_pd_alloc(struct esock_pd **pd);
int vb_pd_free(struct esock_pd *pd);
int vb_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access, uint8_t key,
	      struct esock_mr **mr);
uint32_t vb_mr_stag(const struct esock_mr *mr);
int vb_mr_dereg(struct esock_mr *mr);
bool vb_mr_valid(const struct esock_mr *mr);
int vb_cq_create(int depth, struct esock_cq **cq);
int vb_cq_destroy(struct esock_cq *cq);
int vb_cq_poll(struct esock_cq *cq, int n, struct esock_wc *wc);
int vb_cq_wait(struct esock_cq *cq, int n, struct esock_wc *wc, int timeout_ms);
int vb_cq_fd(struct esock_cq *cq);
int vb_cq_arm(struct esock_cq *cq, bool solicited_only);
int vb_qp_create(const struct esock_qp_attr *attr, struct esock_qp **qp);
int vb_qp_destroy(struct esock_qp *qp);
enum esock_qp_state vb_qp_state(const struct esock_qp *qp);
uint32_t vb_qp_num(const struct esock_qp *qp);
int vb_qp_connect(struct esock_qp *qp, const struct sockaddr *addr, socklen_t addrlen,
		  const struct esock_conn_param *param);
int vb_qp_conn_info(const struct esock_qp *qp, struct esock_conn_info *info);
int vb_qp_disconnect(struct esock_qp *qp);
int vb_qp_last_error(const struct esock_qp *qp, struct esock_qp_error *e);
int vb_post_send(struct esock_qp *qp, struct esock_send_wr *wr, struct esock_send_wr **bad);
int vb_post_recv(struct esock_qp *qp, struct esock_recv_wr *wr, struct esock_recv_wr **bad);
int vb_listen(const struct sockaddr *addr, socklen_t addrlen, int backlog,
	      struct esock_listener **l);
int vb_listener_addr(const struct esock_listener *l, struct sockaddr_storage *ss);
int vb_listener_fd(const struct esock_listener *l);
int vb_listener_poll_fd(struct esock_listener *l);
int vb_listener_close(struct esock_listener *l);
int vb_listener_configure(struct esock_listener *l, const struct esock_listen_param *p);
int vb_get_request(struct esock_listener *l, struct esock_conn_req **req, int timeout_ms);
int vb_conn_req_info(const struct esock_conn_req *req, struct esock_conn_info *info);
int vb_accept(struct esock_conn_req *req, struct esock_qp *qp, const struct esock_conn_param *param);
int vb_reject(struct esock_conn_req *req, const void *pd, uint16_t pd_len);
int vb_reaches(const struct sockaddr *addr, socklen_t addrlen);
int vb_owns(const struct sockaddr *addr, socklen_t addrlen);

#endif /* ESOCK_KPATCH_VERBS_VB_H */
