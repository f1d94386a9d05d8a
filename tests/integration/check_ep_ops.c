/* SPDX-License-Identifier: MIT */
/*
 * Endpoint operations on loopback, both ends in this process: Send/Recv,
 * RDMA Write and RDMA Read for sizes from 0 octets to 16 MiB, data verified
 * byte for byte, completions checked for id, opcode, length and status.
 */
#include "config.h"

#include <check.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <esock/mpa.h>

#include "endpoint/ep.h"
#include "tests/integration/ep_pair.h"
#include "tests/unit/testutil.h"

static const size_t sizes[] = { 0, 1, 3, 64, 1000, 4096, 65536, 1 << 20, 16 << 20 };
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 8));
	return p;
}

/* One test's world: a connected pair, a source and a sink buffer registered. */
struct ops {
	struct ep_pair p;
	size_t len;
	uint8_t *src, *dst;
	struct esock_mr *ms, *md;
};

/*
 * Opens the pair and registers |len| pattern octets on side |src_a| (a or b)
 * with |src_acc|, and a zeroed sink of |len + slack| octets on the other side
 * with |dst_acc|.
 */
static void ops_open(struct ops *o, size_t len, unsigned seed, bool src_a, unsigned src_acc,
		     size_t slack, unsigned dst_acc)
{
	o->len = len;
	o->src = pattern(len, seed);
	o->dst = calloc(1, len + slack);
	ck_assert_int_eq(ep_pair_open(&o->p, NULL, NULL), 0);
	ck_assert_int_eq(o->p.accept_rc, 0);
	o->ms = ep_reg(src_a ? &o->p.a : &o->p.b, o->src, len, src_acc);
	o->md = ep_reg(src_a ? &o->p.b : &o->p.a, o->dst, len + slack, dst_acc);
}

static void ops_close(struct ops *o)
{
	esock_mr_dereg(o->ms);
	esock_mr_dereg(o->md);
	ep_pair_close(&o->p);
	free(o->src);
	free(o->dst);
}

/* Waits for one completion on |cq| and checks it. */
static void expect_wc(struct esock_cq *cq, uint64_t id, enum esock_wc_opcode op)
{
	struct esock_wc wc;

	ck_assert_int_eq(ep_wait1(cq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, op);
	ck_assert_uint_eq(wc.wr_id, id);
}

START_TEST(send_recv_sizes)
{
	struct ops o;
	struct esock_wc wc;

	ops_open(&o, sizes[_i], 1, true, 0, 16, ESOCK_ACCESS_LOCAL_WRITE);
	ep_post_recv1(&o.p.b, 77, o.dst, (uint32_t)o.len + 16, esock_mr_stag(o.md));
	ck_assert_int_eq(ep_post_send1(&o.p.a, 11, ESOCK_WR_SEND, o.src, (uint32_t)o.len,
				       esock_mr_stag(o.ms), 0, 0), 0);
	ck_assert_int_eq(ep_wait1(o.p.b.rcq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, ESOCK_WC_RECV);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_uint_eq(wc.byte_len, o.len);
	ck_assert_int_eq(memcmp(o.src, o.dst, o.len), 0);
	expect_wc(o.p.a.scq, 11, ESOCK_WC_SEND);
	ops_close(&o);
}
END_TEST

START_TEST(write_sizes)
{
	struct ops o;
	uint8_t flag = 0;
	struct esock_mr *mf;

	ops_open(&o, sizes[_i], 2, true, 0, 64, ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(ep_post_send1(&o.p.a, 5, ESOCK_WR_RDMA_WRITE, o.src, (uint32_t)o.len,
				       esock_mr_stag(o.ms), (uint64_t)(uintptr_t)o.dst + 32,
				       esock_mr_stag(o.md)), 0);
	expect_wc(o.p.a.scq, 5, ESOCK_WC_RDMA_WRITE);
	/* The Write is placed by the target's engine; a Send behind it orders it. */
	mf = ep_reg(&o.p.b, &flag, 1, ESOCK_ACCESS_LOCAL_WRITE);
	ep_post_recv1(&o.p.b, 1, &flag, 1, esock_mr_stag(mf));
	ck_assert_int_eq(ep_post_send1(&o.p.a, 6, ESOCK_WR_SEND, o.src, o.len ? 1 : 0,
				       esock_mr_stag(o.ms), 0, 0), 0);
	expect_wc(o.p.b.rcq, 1, ESOCK_WC_RECV);
	ck_assert_int_eq(memcmp(o.src, o.dst + 32, o.len), 0);
	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(o.dst[i], 0);
	ck_assert_int_eq(o.dst[32 + o.len], 0);
	esock_mr_dereg(mf);
	ops_close(&o);
}
END_TEST

START_TEST(read_sizes)
{
	struct ops o;

	/* b's memory is read by a; b's application does nothing meanwhile. */
	ops_open(&o, sizes[_i], 3, false, ESOCK_ACCESS_REMOTE_READ, 8, ESOCK_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(ep_post_send1(&o.p.a, 9, ESOCK_WR_RDMA_READ, o.dst, (uint32_t)o.len,
				       esock_mr_stag(o.md), (uint64_t)(uintptr_t)o.src,
				       esock_mr_stag(o.ms)), 0);
	expect_wc(o.p.a.scq, 9, ESOCK_WC_RDMA_READ);
	ck_assert_int_eq(memcmp(o.src, o.dst, o.len), 0);
	ck_assert_int_eq(o.dst[o.len], 0);
	ops_close(&o);
}
END_TEST

/*
 * FPDUs follow the MSS as the TCP window opens, also after the first burst:
 * on loopback the MSS grows (32 KiB, 46 KiB, 64 KiB) over some MiB, and a
 * stream left at a smaller MULPDU pays more FPDUs (receive calls) per
 * message.  The sender re-reads the MSS at every 32nd long message.  (How
 * late the MSS grows depends on the traffic: the benchmark's stream saw it
 * after the first 16 checks, this test's bursts usually before.)
 */
START_TEST(mulpdu_follows_mss)
{
	struct ops o;
	struct esock_conn_info ci;
	bool follows = false;

	ops_open(&o, 128 * 1024, 1, true, 0, 16, ESOCK_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 100 && !follows; i++) {
		int mss = 0;
		socklen_t l = sizeof(mss);

		/* In bursts, as a stream: the window opens wider than for one at a time. */
		for (int k = 0; k < 8; k++)
			ep_post_recv1(&o.p.b, 1, o.dst, (uint32_t)o.len, esock_mr_stag(o.md));
		for (int k = 0; k < 8; k++)
			ck_assert_int_eq(ep_post_send1(&o.p.a, 2, ESOCK_WR_SEND, o.src, (uint32_t)o.len,
						       esock_mr_stag(o.ms), 0, 0), 0);
		for (int k = 0; k < 8; k++) {
			expect_wc(o.p.b.rcq, 1, ESOCK_WC_RECV);
			expect_wc(o.p.a.scq, 2, ESOCK_WC_SEND);
		}
		ck_assert_int_eq(esock_qp_conn_info(o.p.a.qp, &ci), 0);
		ck_assert_int_eq(getsockopt(o.p.a.qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l), 0);
		/* Past the first checks, the MULPDU is the one of the MSS now. */
		follows = i > 8 && ci.mulpdu == esock_mpa_mulpdu((uint32_t)mss, false);
	}
	ck_assert_msg(follows, "MULPDU %u stayed behind the MSS", ci.mulpdu);
	ops_close(&o);
}
END_TEST

/*
 * A waiter whose message is already in its socket takes it with one read,
 * without sleeping in poll() first.  b's QP is lazy (its callers read its
 * input, as a socket's), so nobody else reads it; spinning is off for this
 * program (main), so only the look ahead of the sleep can find it.
 */
START_TEST(waiting_message_without_sleep)
{
	struct ep_pair p;
	struct esock_mr *ms, *md;
	uint8_t *src = pattern(4096, 5), *dst = calloc(1, 4096);
	struct esock_wc wc;
	unsigned before = 0;
	int queued = 0;

	ep_side_init(&p.a);
	ep_side_init(&p.b);
	ep_qp_set_lazy(p.b.qp, true);
	ck_assert_int_eq(ep_pair_open_sides(&p, NULL, NULL), 0);
	ck_assert_int_eq(p.accept_rc, 0);
	ms = ep_reg(&p.a, src, 4096, 0);
	md = ep_reg(&p.b, dst, 4096, ESOCK_ACCESS_LOCAL_WRITE);
	for (int round = 0; round < 3; round++) {
		ep_post_recv1(&p.b, 70 + (uint64_t)round, dst, 4096, esock_mr_stag(md));
		ck_assert_int_eq(ep_post_send1(&p.a, 7, ESOCK_WR_SEND, src, 4096, esock_mr_stag(ms), 0, 0), 0);
		expect_wc(p.a.scq, 7, ESOCK_WC_SEND);
		if (round == 2) { /* on loopback in b's socket once a's send completed: unread */
			ck_assert_int_eq(ioctl(p.b.qp->fd, FIONREAD, &queued), 0);
			ck_assert_int_ge(queued, 4096 + 24);
			before = atomic_load(&p.b.rcq->sleeps);
		}
		ck_assert_int_eq(esock_cq_wait(p.b.rcq, 1, &wc, 5000), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 70 + (uint64_t)round);
		ck_assert_int_eq(memcmp(src, dst, 4096), 0);
		memset(dst, 0, 4096);
	}
	ck_assert_msg(atomic_load(&p.b.rcq->sleeps) == before,
		      "the message was in the socket, the waiter slept in poll() first");
	esock_mr_dereg(ms);
	esock_mr_dereg(md);
	ep_pair_close(&p);
	free(src);
	free(dst);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("endpoint operations");
	TCase *tc = tcase_create("sizes");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, send_recv_sizes, 0, NSIZES);
	tcase_add_loop_test(tc, write_sizes, 0, NSIZES);
	tcase_add_loop_test(tc, read_sizes, 0, NSIZES);
	tcase_add_test(tc, mulpdu_follows_mss);
	tcase_add_test(tc, waiting_message_without_sleep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	setenv("ESOCK_SPIN_US", "0", 1); /* (waiting_message_without_sleep: sleep or read, no yield) */
	return tu_run(suite());
}
