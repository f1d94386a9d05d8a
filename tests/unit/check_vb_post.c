/* SPDX-License-Identifier: MIT */
/*
 * kpatch/verbs/vb_qp.c's posting of work requests, against a provider of our
 * own (the ops of a fake ibv_context) that behaves as rdma-core's siw does:
 * errors returned negated (-ENOMEM for a full queue, -EINVAL), receives
 * without SGEs refused.  A full send queue must read as -ENOMEM with the
 * work request that did not go, never as success; a receive without SGEs
 * (a doorbell for zero-length Sends) must be taken, connected or before.
 * No device, no rdma-core library: ibv_post_send/recv are the header's
 * inline calls through the context's ops, rdma_cm's calls go through vb_lib.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwarp/backend.h"
#include "kpatch/verbs/vb.h"
#include "tests/unit/testutil.h"

/* What vb_qp.c needs from the rest of the backend, reduced to what these cases use. */
const struct esock_backend esock_verbs_backend;
struct vb_lib vb_lib;

bool vb_lkey(struct vb_pd *pd, uint32_t stag, uint32_t *lkey)
{
	(void)pd;
	*lkey = stag ^ 0x5a5a;
	return stag != 0xdead;
}

/* The fake provider: a queue of |room| sends; receives need an SGE; errors negated, as siw's. */
static struct {
	int room, sent, sign; /* sign: -1 as siw, +1 as the verbs convention */
	int recvs, recv_room, last_recv_nsge;
	uint32_t last_recv_len;
	int last_send_nsge;
	struct ibv_sge last_send_sge[2];
} prov;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	for (; wr; wr = wr->next) {
		if (prov.sent == prov.room) {
			*bad = wr;
			return prov.sign * ENOMEM;
		}
		prov.sent++;
		prov.last_send_nsge = wr->num_sge;
		for (int i = 0; i < wr->num_sge && i < 2; i++)
			prov.last_send_sge[i] = wr->sg_list[i];
	}
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 1) {
			*bad = wr;
			return prov.sign * EINVAL;
		}
		if (prov.recvs == prov.recv_room) {
			*bad = wr;
			return prov.sign * ENOMEM;
		}
		prov.recvs++;
		prov.last_recv_nsge = wr->num_sge;
		prov.last_recv_len = wr->sg_list[0].length;
	}
	return 0;
}

static struct ibv_context ctx;
static struct ibv_qp kqp;
static struct rdma_cm_id cm_id;

static int fake_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	(void)pd;
	(void)a;
	id->qp = &kqp;
	return 0;
}

static int fake_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	(void)ch;
	(void)ev;
	errno = EAGAIN;
	return -1;
}

static struct vb_pd pd;
static struct vb_cq cq;
static struct rdma_event_channel ech = { .fd = -1 };

/* A QP of the backend on the fake device; connected (its id and QP there) or not yet. */
static struct vb_qp *qp_new(bool connected, int sign, int room)
{
	struct vb_qp *qp = calloc(1, sizeof(*qp));

	memset(&prov, 0, sizeof(prov));
	prov.sign = sign;
	prov.room = room;
	prov.recv_room = 64;
	ctx.ops.post_send = fake_post_send;
	ctx.ops.post_recv = fake_post_recv;
	kqp.context = &ctx;
	cm_id.verbs = &ctx;
	cm_id.qp = NULL;
	pd.ctx = &ctx;
	vb_lib.f_rdma_create_qp = fake_create_qp;
	vb_lib.f_rdma_get_cm_event = fake_get_cm_event;
	ck_assert_ptr_nonnull(qp);
	qp->pd = &pd;
	qp->scq = qp->rcq = &cq;
	qp->ech = &ech;
	qp->attr.sq_depth = qp->attr.rq_depth = 16;
	qp->attr.max_sge = qp->attr.max_recv_sge = 2;
	pthread_mutex_init(&qp->lock, NULL);
	qp->pending_tail = &qp->pending;
	if (connected) {
		ck_assert_int_eq(vb_qp_make(qp, &cm_id), 0);
		atomic_store(&qp->state, ESOCK_QPS_RTS);
	}
	return qp;
}

static void qp_free(struct vb_qp *qp)
{
	while (qp->pending) { /* (what a failed vb_qp_make left) */
		struct vb_pending_recv *p = qp->pending;

		qp->pending = p->next;
		free(p);
	}
	pthread_mutex_destroy(&qp->lock);
	free(qp);
}

static void send_until_full(int sign)
{
	struct vb_qp *qp = qp_new(true, sign, 3);
	uint8_t b[8];
	struct esock_sge sge = { .addr = (uintptr_t)b, .length = sizeof(b), .lkey = 7 };
	struct esock_send_wr wr[5], *bad = NULL;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 5; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].opcode = ESOCK_WR_SEND;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	/* Three go, the fourth finds the queue full: -ENOMEM and it is the one named. */
	ck_assert_int_eq(vb_post_send((struct esock_qp *)qp, &wr[0], &bad), -ENOMEM);
	ck_assert_ptr_eq(bad, &wr[3]);
	ck_assert_int_eq(prov.sent, 3);
	qp_free(qp);
}

/* rdma-core's siw returns -ENOMEM: read the other way it would pass for success. */
START_TEST(full_send_queue_negated_error)
{
	send_until_full(-1);
}
END_TEST

/* A provider that follows the verbs convention (a positive errno) reads the same. */
START_TEST(full_send_queue_positive_error)
{
	send_until_full(+1);
}
END_TEST

/* A bad key is the caller's error, not the provider's: -EINVAL, nothing posted. */
START_TEST(unknown_key_refused)
{
	struct vb_qp *qp = qp_new(true, -1, 3);
	uint8_t b[8];
	struct esock_sge sge = { .addr = (uintptr_t)b, .length = sizeof(b), .lkey = 0xdead };
	struct esock_send_wr wr = { .opcode = ESOCK_WR_SEND, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	struct esock_recv_wr r = { .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;

	ck_assert_int_eq(vb_post_send((struct esock_qp *)qp, &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, &rbad), -EINVAL);
	ck_assert_ptr_eq(rbad, &r);
	ck_assert_int_eq(prov.sent + prov.recvs, 0);
	qp_free(qp);
}
END_TEST

/* A receive without SGEs, on a connected QP: taken as one empty SGE. */
START_TEST(receive_without_sge_connected)
{
	struct vb_qp *qp = qp_new(true, -1, 3);
	struct esock_recv_wr r = { .wr_id = 1 }, *bad = NULL;

	ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, &bad), 0);
	ck_assert_int_eq(prov.recvs, 1);
	ck_assert_int_eq(prov.last_recv_nsge, 1);
	ck_assert_uint_eq(prov.last_recv_len, 0);
	qp_free(qp);
}
END_TEST

/* Receives without SGEs posted before the connection: all of them there once the QP is made. */
START_TEST(receive_without_sge_before_connecting)
{
	struct vb_qp *qp = qp_new(false, -1, 3);

	for (int i = 0; i < 10; i++) {
		struct esock_recv_wr r = { .wr_id = (uint64_t)i };

		ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, NULL), 0);
	}
	ck_assert_int_eq(prov.recvs, 0);
	ck_assert_int_eq(vb_qp_make(qp, &cm_id), 0);
	ck_assert_int_eq(prov.recvs, 10);
	ck_assert_ptr_null(qp->pending);
	qp_free(qp);
}
END_TEST

/* A full receive queue, connected and when the QP is made: -ENOMEM, never success. */
START_TEST(full_receive_queue_is_an_error)
{
	struct vb_qp *qp = qp_new(true, -1, 3);
	struct esock_recv_wr r = { .wr_id = 1 }, *bad = NULL;

	prov.recv_room = 2;
	ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, &bad), 0);
	ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, &bad), 0);
	ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, &bad), -ENOMEM);
	ck_assert_ptr_eq(bad, &r);
	qp_free(qp);

	qp = qp_new(false, -1, 3);
	prov.recv_room = 2;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(vb_post_recv((struct esock_qp *)qp, &r, NULL), 0);
	ck_assert_int_eq(vb_qp_make(qp, &cm_id), -ENOMEM);
	qp_free(qp);
}
END_TEST

/* One SGE of |len| octets at |at|, posted as |op|; the SGEs the provider got. */
static int post_one(struct vb_qp *qp, enum esock_wr_opcode op, uint8_t *at, uint32_t len)
{
	struct esock_sge sge = { .addr = (uintptr_t)at, .length = len, .lkey = 7 };
	struct esock_send_wr wr = { .opcode = op, .sg_list = &sge, .num_sge = 1 };

	ck_assert_int_eq(vb_post_send((struct esock_qp *)qp, &wr, NULL), 0);
	return prov.last_send_nsge;
}

/*
 * On siw (a PD that says so), a payload of a few octets in one SGE that
 * crosses a page goes as two SGEs split at the page (siw copies it wrongly
 * otherwise: kpatch/linux 0007); within a page, longer, a Read, or another
 * device: as posted.
 */
START_TEST(short_payload_across_a_page_split)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *b = aligned_alloc((size_t)page, 2 * (size_t)page);
	struct vb_qp *qp;

	ck_assert_ptr_nonnull(b);
	pd.split_short = true;
	qp = qp_new(true, -1, 16);
	ck_assert_int_eq(post_one(qp, ESOCK_WR_RDMA_WRITE, b + page - 16, 24), 2);
	ck_assert_uint_eq(prov.last_send_sge[0].addr, (uintptr_t)b + (uintptr_t)page - 16);
	ck_assert_uint_eq(prov.last_send_sge[0].length, 16);
	ck_assert_uint_eq(prov.last_send_sge[1].addr, (uintptr_t)b + (uintptr_t)page);
	ck_assert_uint_eq(prov.last_send_sge[1].length, 8);
	ck_assert_uint_eq(prov.last_send_sge[1].lkey, prov.last_send_sge[0].lkey);
	ck_assert_int_eq(post_one(qp, ESOCK_WR_SEND, b + page - 1, 2), 2);
	ck_assert_uint_eq(prov.last_send_sge[0].length, 1);
	ck_assert_uint_eq(prov.last_send_sge[1].length, 1);
	ck_assert_int_eq(post_one(qp, ESOCK_WR_RDMA_WRITE, b + page - 24, 24), 1); /* (ends at the page) */
	ck_assert_int_eq(post_one(qp, ESOCK_WR_RDMA_WRITE, b + page - 16, 100), 1);
	ck_assert_int_eq(post_one(qp, ESOCK_WR_RDMA_READ, b + page - 16, 24), 1);
	qp_free(qp);
	pd.split_short = false;
	qp = qp_new(true, -1, 16);
	ck_assert_int_eq(post_one(qp, ESOCK_WR_RDMA_WRITE, b + page - 16, 24), 1);
	qp_free(qp);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vb_post");
	TCase *tc = tcase_create("post");

	tcase_add_test(tc, full_send_queue_negated_error);
	tcase_add_test(tc, full_send_queue_positive_error);
	tcase_add_test(tc, unknown_key_refused);
	tcase_add_test(tc, receive_without_sge_connected);
	tcase_add_test(tc, receive_without_sge_before_connecting);
	tcase_add_test(tc, full_receive_queue_is_an_error);
	tcase_add_test(tc, short_payload_across_a_page_split);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
