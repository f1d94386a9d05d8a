/* SPDX-License-Identifier: MIT */
/* Endpoint test helpers (see ep_pair.h). */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include "tests/integration/ep_pair.h"

void ep_side_init(struct ep_side *s)
{
	struct esock_qp_attr a = { 0 };

	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(esock_pd_alloc(&s->pd), 0);
	ck_assert_int_eq(esock_cq_create(256, &s->scq), 0);
	ck_assert_int_eq(esock_cq_create(256, &s->rcq), 0);
	a.pd = s->pd;
	a.send_cq = s->scq;
	a.recv_cq = s->rcq;
	a.max_sge = 8;
	ck_assert_int_eq(esock_qp_create(&a, &s->qp), 0);
}

void ep_side_fini(struct ep_side *s)
{
	if (s->qp)
		ck_assert_int_eq(esock_qp_destroy(s->qp), 0);
	ck_assert_int_eq(esock_cq_destroy(s->scq), 0);
	ck_assert_int_eq(esock_cq_destroy(s->rcq), 0);
	s->qp = NULL;
}

int ep_listen_any(struct esock_listener **l)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;

	ck_assert_int_eq(esock_listen((struct sockaddr *)&sin, sizeof(sin), 16, l), 0);
	ck_assert_int_eq(esock_listener_addr(*l, &ss), 0);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

struct srv_args {
	struct ep_pair *p;
	const struct esock_conn_param *cb;
};

static void *server(void *arg)
{
	struct srv_args *sa = arg;
	struct esock_conn_req *req;
	int rc = esock_get_request(sa->p->l, &req, 5000);

	if (rc == 0)
		rc = esock_accept(req, sa->p->b.qp, sa->cb);
	sa->p->accept_rc = rc;
	return NULL;
}

int ep_pair_open(struct ep_pair *p, const struct esock_conn_param *ca,
		 const struct esock_conn_param *cb)
{
	memset(p, 0, sizeof(*p));
	ep_side_init(&p->a);
	ep_side_init(&p->b);
	return ep_pair_open_sides(p, ca, cb);
}

int ep_pair_open_sides(struct ep_pair *p, const struct esock_conn_param *ca,
		       const struct esock_conn_param *cb)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct srv_args sa = { p, cb };
	pthread_t th;
	int rc;

	sin.sin_port = htons((uint16_t)ep_listen_any(&p->l));
	ck_assert_int_eq(pthread_create(&th, NULL, server, &sa), 0);
	rc = esock_qp_connect(p->a.qp, (struct sockaddr *)&sin, sizeof(sin), ca);
	pthread_join(th, NULL);
	return rc;
}

void ep_pair_close(struct ep_pair *p)
{
	ep_side_fini(&p->a);
	ep_side_fini(&p->b);
	esock_pd_free(p->a.pd);
	esock_pd_free(p->b.pd);
	esock_listener_close(p->l);
}

struct esock_mr *ep_reg(struct ep_side *s, void *buf, size_t len, unsigned access)
{
	struct esock_mr *mr;

	ck_assert_int_eq(esock_mr_reg(s->pd, buf, len, access, 0x5a, &mr), 0);
	return mr;
}

int ep_wait1(struct esock_cq *cq, struct esock_wc *wc)
{
	return esock_cq_wait(cq, 1, wc, 5000);
}

void ep_post_recv1(struct ep_side *s, uint64_t id, void *buf, uint32_t len, uint32_t lkey)
{
	struct esock_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
	struct esock_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	ck_assert_int_eq(esock_post_recv(s->qp, &wr, NULL), 0);
}

int ep_post_send1(struct ep_side *s, uint64_t id, enum esock_wr_opcode op, void *buf,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct esock_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
	struct esock_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				    .send_flags = ESOCK_SEND_SIGNALED, .remote_addr = raddr,
				    .rkey = rkey, .invalidate_stag = rkey };

	return esock_post_send(s->qp, &wr, NULL);
}
