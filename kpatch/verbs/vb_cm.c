/* SPDX-License-Identifier: MIT */
/*
 * The verbs backend's connections through rdma_cm: connect (resolve the
 * address and route, make the QP, connect with the MPA private data and
 * the Read depths), listeners, connection requests, accept and reject.
 * The kernel's iw_cm carries the private data in the MPA Request and Reply.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/backend.h"
#include "kpatch/verbs/vb.h"
#include "util/log.h"

static int left_ms(int64_t end)
{
	int64_t l;

	if (end < 0)
		return -1;
	l = end - vb_now_ms();
	return l > 0 ? (int)l : 0;
}

/* The connection parameters rdma_cm takes, from esock's.  0 or -EINVAL. */
static int conn_param_of(const struct esock_conn_param *p, struct rdma_conn_param *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->responder_resources = p && p->ird ? (uint8_t)(p->ird > 255 ? 255 : p->ird) : 8;
	cp->initiator_depth = p && p->ord ? (uint8_t)(p->ord > 255 ? 255 : p->ord) : 8;
	if (p && p->private_data_len) {
		if (p->private_data_len > VB_PRIVDATA_MAX || !p->private_data)
			return -EINVAL;
		cp->private_data = p->private_data;
		cp->private_data_len = (uint8_t)p->private_data_len;
	}
	/*
	 * What esock's own MPA exchange negotiates (revision, CRC, markers,
	 * RTR, peer profile, waiting Sends, half-close) is the kernel's here.
	 */
	return 0;
}

static int timeout_of(const struct esock_conn_param *p)
{
	if (p && p->timeout_ms < 0)
		return -1;
	return p && p->timeout_ms ? p->timeout_ms : VB_TIMEOUT_DEFAULT_MS;
}

/* Waits for event |want| on the QP's channel; any other ends it with an error. */
static int expect(struct vb_qp *qp, enum rdma_cm_event_type want, int64_t end,
		  struct rdma_conn_param *out, uint8_t *pd_buf)
{
	struct rdma_cm_event *ev;
	int rc;

	if ((rc = vb_event_wait(qp->ech, left_ms(end), &ev)) < 0)
		return rc;
	if (ev->event == want) {
		if (out) {
			*out = ev->param.conn;
			if (ev->param.conn.private_data_len) {
				memcpy(pd_buf, ev->param.conn.private_data, ev->param.conn.private_data_len);
				out->private_data = pd_buf;
			}
		}
		rdma_ack_cm_event(ev);
		return 0;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		rc = -ECONNREFUSED;
		if (ev->param.conn.private_data_len) { /* the peer's reason, for conn_info */
			memcpy(qp->info.private_data, ev->param.conn.private_data,
			       ev->param.conn.private_data_len);
			qp->info.private_data_len = ev->param.conn.private_data_len;
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		rc = -EHOSTUNREACH;
		break;
	default:
		rc = -ECONNABORTED;
	}
	log_debug("verbs: %s while waiting for %s (status %d)", rdma_event_str(ev->event),
		  rdma_event_str(want), ev->status);
	rdma_ack_cm_event(ev);
	return rc;
}

int vb_qp_connect(struct esock_qp *q, const struct sockaddr *addr, socklen_t addrlen,
		  const struct esock_conn_param *param)
{
	struct vb_qp *qp = (struct vb_qp *)q;
	int timeout = timeout_of(param), rc;
	int64_t end = timeout < 0 ? -1 : vb_now_ms() + timeout;
	struct rdma_conn_param cp, got;
	static __thread uint8_t pd_buf[256];
	struct rdma_cm_id *id;

	if (!addr || addrlen < sizeof(struct sockaddr_in))
		return -EINVAL;
	if (atomic_load(&qp->state) != ESOCK_QPS_IDLE)
		return -EISCONN;
	if ((rc = conn_param_of(param, &cp)) < 0)
		return rc;
	if (rdma_create_id(qp->ech, &id, qp, RDMA_PS_TCP) != 0)
		return -errno;
	atomic_store(&qp->state, ESOCK_QPS_CONNECTING);
	/* (rdma_cm's own timeouts: at most the MPA timeout, at least a second) */
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)(uintptr_t)addr,
			      timeout < 0 || timeout > 2000 ? 2000 : (timeout < 1000 ? 1000 : timeout)) != 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = expect(qp, RDMA_CM_EVENT_ADDR_RESOLVED, end, NULL, NULL)) < 0)
		goto fail;
	if (rdma_resolve_route(id, 2000) != 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = expect(qp, RDMA_CM_EVENT_ROUTE_RESOLVED, end, NULL, NULL)) < 0)
		goto fail;
	if ((rc = vb_qp_make(qp, id)) < 0)
		goto fail;
	if (rdma_connect(id, &cp) != 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = expect(qp, RDMA_CM_EVENT_ESTABLISHED, end, &got, pd_buf)) < 0)
		goto fail;
	vb_qp_established(qp, &got);
	return 0;
fail:
	if (rc == -ETIMEDOUT)
		log_warn("verbs: connect timed out");
	vb_qp_set_error(qp, rc, false);
	if (qp->id) { /* (the QP was made: keep the id for destroy) */
		atomic_store(&qp->state, ESOCK_QPS_ERROR);
	} else {
		rdma_destroy_id(id);
		atomic_store(&qp->state, ESOCK_QPS_IDLE);
	}
	return rc;
}

int vb_listen(const struct sockaddr *addr, socklen_t addrlen, int backlog,
	      struct esock_listener **out)
{
	struct vb_listener *l;
	int rc, fl;

	if (!addr || !out || addrlen < sizeof(struct sockaddr_in))
		return -EINVAL;
	if (!vb_device())
		return -ENODEV;
	if (!(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	l->be = &esock_verbs_backend;
	l->timeout_ms = VB_TIMEOUT_DEFAULT_MS;
	if (!(l->ech = rdma_create_event_channel())) {
		free(l);
		return -errno;
	}
	/*
	 * Read without blocking, as a QP's (vb_event_wait polls for the wait):
	 * a blocking channel made esock_get_request(l, &r, 0) sleep until the
	 * next connection came (a DDPMODE server in epoll looks at its listener
	 * between its connections' reads, and stalled there).
	 */
	if ((fl = fcntl(l->ech->fd, F_GETFL)) < 0 || fcntl(l->ech->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rc = -errno;
		rdma_destroy_event_channel(l->ech);
		free(l);
		return rc;
	}
	if (rdma_create_id(l->ech, &l->id, l, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(l->id, (struct sockaddr *)(uintptr_t)addr) != 0 ||
	    rdma_listen(l->id, backlog > 0 ? backlog : 128) != 0) {
		rc = -errno;
		if (l->id)
			rdma_destroy_id(l->id);
		rdma_destroy_event_channel(l->ech);
		free(l);
		return rc;
	}
	*out = (struct esock_listener *)l;
	return 0;
}

int vb_listener_addr(const struct esock_listener *el, struct sockaddr_storage *ss)
{
	const struct vb_listener *l = (const struct vb_listener *)el;
	struct sockaddr *a = rdma_get_local_addr(l->id);

	if (!ss)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, a, a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	return 0;
}

int vb_listener_fd(const struct esock_listener *el)
{
	return ((const struct vb_listener *)el)->ech->fd;
}

/* Readable when a connection request (or another listener event) waits. */
int vb_listener_poll_fd(struct esock_listener *el)
{
	return vb_listener_fd(el);
}

int vb_listener_close(struct esock_listener *el)
{
	struct vb_listener *l = (struct vb_listener *)el;

	rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->ech);
	free(l);
	return 0;
}

int vb_listener_configure(struct esock_listener *el, const struct esock_listen_param *p)
{
	struct vb_listener *l = (struct vb_listener *)el;

	if (!p)
		return -EINVAL;
	if (p->sniff_ms > 0)
		return -EOPNOTSUPP; /* (plain TCP never reaches an rdma_cm listener) */
	l->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : VB_TIMEOUT_DEFAULT_MS;
	return 0;
}

int vb_get_request(struct esock_listener *el, struct esock_conn_req **out, int timeout_ms)
{
	struct vb_listener *l = (struct vb_listener *)el;
	int64_t end = timeout_ms < 0 ? -1 : vb_now_ms() + timeout_ms;
	struct rdma_cm_event *ev;
	struct vb_req *r;
	int rc;

	if (!out)
		return -EINVAL;
	for (;;) {
		if ((rc = vb_event_wait(l->ech, left_ms(end), &ev)) < 0)
			return rc == -ETIMEDOUT ? -ETIMEDOUT : rc;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		log_debug("verbs listener: %s", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
	if (!(r = calloc(1, sizeof(*r)))) {
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		rdma_ack_cm_event(ev);
		return -ENOMEM;
	}
	r->be = &esock_verbs_backend;
	r->id = ev->id;
	r->l = l;
	r->info.mpa_rev = 2;
	r->info.enhanced = true;
	r->info.peer_ird = ev->param.conn.responder_resources;
	r->info.peer_ord = ev->param.conn.initiator_depth;
	r->info.peer = "verbs";
	if (ev->param.conn.private_data_len) {
		r->info.private_data_len = ev->param.conn.private_data_len;
		memcpy(r->info.private_data, ev->param.conn.private_data, ev->param.conn.private_data_len);
	}
	rdma_ack_cm_event(ev);
	{
		struct sockaddr *la = rdma_get_local_addr(r->id), *ra = rdma_get_peer_addr(r->id);

		if (la)
			memcpy(&r->info.local, la, la->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
									   : sizeof(struct sockaddr_in));
		if (ra)
			memcpy(&r->info.remote, ra, ra->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
									    : sizeof(struct sockaddr_in));
	}
	*out = (struct esock_conn_req *)r;
	return 0;
}

int vb_conn_req_info(const struct esock_conn_req *req, struct esock_conn_info *info)
{
	if (!info)
		return -EINVAL;
	*info = ((const struct vb_req *)req)->info;
	return 0;
}

int vb_accept(struct esock_conn_req *req, struct esock_qp *q, const struct esock_conn_param *param)
{
	struct vb_req *r = (struct vb_req *)req;
	struct vb_qp *qp = (struct vb_qp *)q;
	int timeout = param && param->timeout_ms ? timeout_of(param) : r->l->timeout_ms, rc;
	int64_t end = timeout < 0 ? -1 : vb_now_ms() + timeout;
	struct rdma_conn_param cp, got;
	static __thread uint8_t pd_buf[256];

	if (!qp)
		return -EINVAL;
	if (atomic_load(&qp->state) != ESOCK_QPS_IDLE)
		return -EISCONN;
	if ((rc = conn_param_of(param, &cp)) < 0)
		goto refuse;
	/* Its events (ESTABLISHED, DISCONNECTED) come on the QP's channel from now on. */
	if (rdma_migrate_id(r->id, qp->ech) != 0) {
		rc = -errno;
		goto refuse;
	}
	if ((rc = vb_qp_make(qp, r->id)) < 0)
		goto refuse;
	atomic_store(&qp->state, ESOCK_QPS_CONNECTING);
	if (rdma_accept(r->id, &cp) != 0) {
		rc = -errno;
		goto failed;
	}
	memset(&got, 0, sizeof(got));
	if ((rc = expect(qp, RDMA_CM_EVENT_ESTABLISHED, end, &got, pd_buf)) < 0)
		goto failed;
	/* (the Request's private data and depths are the ones to keep) */
	vb_qp_established(qp, &got);
	memcpy(qp->info.private_data, r->info.private_data, r->info.private_data_len);
	qp->info.private_data_len = r->info.private_data_len;
	qp->info.peer_ird = r->info.peer_ird;
	qp->info.peer_ord = r->info.peer_ord;
	qp->info.ird = cp.responder_resources;
	qp->info.ord = cp.initiator_depth;
	free(r);
	return 0;
refuse:
	rdma_reject(r->id, NULL, 0);
	rdma_destroy_id(r->id);
	free(r);
	return rc;
failed: /* the id is the QP's now: destroyed with it */
	vb_qp_set_error(qp, rc, false);
	atomic_store(&qp->state, ESOCK_QPS_ERROR);
	free(r);
	return rc;
}

int vb_reject(struct esock_conn_req *req, const void *pd, uint16_t pd_len)
{
	struct vb_req *r = (struct vb_req *)req;
	int rc = 0;

	if (pd_len > VB_PRIVDATA_MAX)
		pd_len = VB_PRIVDATA_MAX;
	if (rdma_reject(r->id, pd, (uint8_t)pd_len) != 0)
		rc = -errno;
	rdma_destroy_id(r->id);
	free(r);
	return rc;
}

/* How long auto's look at a route may take (rdma_cm resolves it from the kernel's tables). */
#define VB_ROUTE_MS 2000

/* A throw-away id on a channel of its own, for a look; 0 or -errno. */
static int look_id(struct rdma_event_channel **ech, struct rdma_cm_id **id)
{
	if (!vb_device())
		return -ENODEV;
	int fl;

	if (!(*ech = rdma_create_event_channel()))
		return -errno;
	/* (vb_event_wait reads without blocking, then polls) */
	if ((fl = fcntl((*ech)->fd, F_GETFL)) < 0 || fcntl((*ech)->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    rdma_create_id(*ech, id, NULL, RDMA_PS_TCP) != 0) {
		int rc = -errno;

		rdma_destroy_event_channel(*ech);
		return rc;
	}
	return 0;
}

static bool on_our_device(const struct rdma_cm_id *id)
{
	return id->verbs && id->verbs->device == vb_device()->device;
}

/* rdma_cm resolves |addr| to our iWARP device: the connection can go that way. */
int vb_reaches(const struct sockaddr *addr, socklen_t addrlen)
{
	struct rdma_event_channel *ech;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int yes = 0;

	if (!addr || addrlen < sizeof(struct sockaddr_in) || look_id(&ech, &id) < 0)
		return 0;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)(uintptr_t)addr, VB_ROUTE_MS) == 0 &&
	    vb_event_wait(ech, VB_ROUTE_MS + 500, &ev) == 0) {
		yes = ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && on_our_device(id);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ech);
	return yes;
}

/* |addr| (its port aside) is an address of our iWARP device: a listener there takes its connections. */
int vb_owns(const struct sockaddr *addr, socklen_t addrlen)
{
	struct sockaddr_storage ss = { 0 };
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	int yes;

	if (!addr || addrlen < sizeof(struct sockaddr_in) || addrlen > sizeof(ss) || look_id(&ech, &id) < 0)
		return 0;
	memcpy(&ss, addr, addrlen);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	yes = rdma_bind_addr(id, (struct sockaddr *)&ss) == 0 && on_our_device(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ech);
	return yes;
}
