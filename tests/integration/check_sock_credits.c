/* SPDX-License-Identifier: MIT */
/*
 * Flow control towards a reader that cannot stop reading (a kernel QP on the
 * verbs backend, siw or an RNIC): a Send that finds no receive posted ends
 * the connection with a Terminate (RFC 5040), so a DDPMODE sender must stay
 * within the receives the reader has posted, by the credits it RDMA-Writes
 * into the sender's credit word (docs/libesock.md, "Flow control").
 *
 * The reader here is an endpoint QP of the test's own, made to behave like a
 * kernel QP: no wait for receives, KR_DEPTH posted, its announcement and
 * credit Writes built by hand from the documented format, so the wire
 * contract is checked, not only our two halves agreeing in code.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <esock/esock.h>
#include <esock/iwarp.h>

#include "tests/integration/sock_util.h"
#include "util/byteorder.h"

#define KR_DEPTH 4
#define KR_SIZE 65536
#define KR_TOTAL (2u << 20) /* 32 Sends of 64 KiB: eight times the receives posted */

struct kreader {
	struct esock_listener *l;
	struct sockaddr_in sa;
	pthread_t th;
	bool credits;            /* announce credits and return them (else: a pre-credit peer) */
	atomic_bool writer_done; /* the client's send returned */
	size_t got;              /* octets received, in order and as sent */
	bool mismatch;
	bool failed;             /* its QP ended in error (a Send found no receive) */
	uint32_t cw_stag;        /* the client's credit word, from its private data */
	uint64_t cw_addr;
	bool cw_seen;
};

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i ^ (i >> 11) ^ 0x5a);
}

/*
 * The client's credit block: 16 octets before its 12-octet announcement at
 * the end of its private data ('eSoC', STag, address, big-endian).
 */
static void heard(struct kreader *k, const struct esock_conn_info *ci)
{
	const uint8_t *p = ci->private_data + ci->private_data_len - 28;

	ck_assert_uint_ge(ci->private_data_len, 28);
	ck_assert_int_eq(memcmp(p + 16, "eSoK", 4), 0);
	ck_assert_int_eq(p[16 + 5] & 1, 1); /* a user-level socket stops reading by itself */
	ck_assert_int_eq(memcmp(p, "eSoC", 4), 0);
	k->cw_stag = esock_get_be32(p + 4);
	k->cw_addr = esock_get_be64(p + 8);
	k->cw_seen = true;
}

/* Ours: a credit block (we take none: STag 0), then the announcement: flags, depth, size. */
static void announce(uint8_t *pd, bool credits)
{
	memcpy(pd, "eSoC", 4);
	memset(pd + 4, 0, 12);
	memcpy(pd + 16, "eSoK", 4);
	pd[20] = 1;
	pd[21] = credits ? 2 : 0; /* SOCK_ANN_CREDITS: cannot stop reading, returns credits */
	esock_put_be16(pd + 22, KR_DEPTH);
	esock_put_be32(pd + 24, KR_SIZE);
}

static void post_recv(struct esock_qp *qp, struct esock_mr *mr, uint8_t *bufs, uint32_t i)
{
	struct esock_sge sge = { .addr = (uintptr_t)(bufs + (size_t)i * KR_SIZE), .length = KR_SIZE,
				 .lkey = esock_mr_stag(mr) };
	struct esock_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };

	ck_assert_int_eq(esock_post_recv(qp, &wr, NULL), 0);
}

/* RDMA-Writes |count| into the client's credit word and waits for the Write's completion. */
static void write_credit(struct kreader *k, struct esock_qp *qp, struct esock_cq *scq,
			 struct esock_mr *src_mr, uint8_t *src, uint64_t count)
{
	struct esock_sge sge = { .addr = (uintptr_t)src, .length = 8,
				 .lkey = esock_mr_stag(src_mr) };
	struct esock_send_wr wr = { .wr_id = 99, .opcode = ESOCK_WR_RDMA_WRITE, .sg_list = &sge,
				    .num_sge = 1, .remote_addr = k->cw_addr, .rkey = k->cw_stag };
	struct esock_wc wc;

	esock_put_be64(src, count);
	ck_assert_int_eq(esock_post_send(qp, &wr, NULL), 0);
	ck_assert_int_eq(esock_cq_wait(scq, 1, &wc, 5000), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
}

static void *kreader_main(void *arg)
{
	struct kreader *k = arg;
	struct esock_conn_req *req;
	struct esock_conn_info ci;
	struct esock_pd *pd;
	struct esock_cq *scq, *rcq;
	struct esock_qp *qp;
	struct esock_qp_attr qa = { 0 };
	struct esock_conn_param p = { .p2p = 1, .timeout_ms = 5000 };
	struct esock_mr *mr, *src_mr;
	uint8_t *bufs = malloc((size_t)KR_DEPTH * KR_SIZE), src[8], ann[28];
	uint64_t reposted = 0;

	ck_assert_int_eq(esock_get_request(k->l, &req, 5000), 0);
	ck_assert_int_eq(esock_conn_req_info(req, &ci), 0);
	heard(k, &ci);
	ck_assert_int_eq(esock_pd_alloc(&pd), 0);
	ck_assert_int_eq(esock_cq_create(16, &scq), 0);
	ck_assert_int_eq(esock_cq_create(16, &rcq), 0);
	qa.pd = pd;
	qa.send_cq = scq;
	qa.recv_cq = rcq;
	qa.sq_depth = 4;
	qa.rq_depth = KR_DEPTH;
	qa.max_sge = 1;
	qa.sq_sig_all = true;
	ck_assert_int_eq(esock_qp_create(&qa, &qp), 0);
	ck_assert_int_eq(esock_mr_reg(pd, bufs, (size_t)KR_DEPTH * KR_SIZE,
				      ESOCK_ACCESS_LOCAL_WRITE, 0, &mr), 0);
	ck_assert_int_eq(esock_mr_reg(pd, src, sizeof(src), 0, 0, &src_mr), 0);
	for (uint32_t i = 0; i < KR_DEPTH; i++)
		post_recv(qp, mr, bufs, i);
	announce(ann, k->credits);
	p.private_data = ann;
	p.private_data_len = sizeof(ann);
	/* (wait_for_recv off: a Send without a receive is a Terminate, as a kernel QP's) */
	ck_assert_int_eq(esock_accept(req, qp, &p), 0);
	if (!k->credits) /* a reader that reposts only once the writer is done: overrun */
		for (int i = 0; i < 1000 && !atomic_load(&k->writer_done); i++)
			usleep(10000);
	while (k->got < KR_TOTAL) {
		struct esock_wc wc;
		uint32_t i;

		if (esock_cq_wait(rcq, 1, &wc, 10000) != 1)
			break;
		if (wc.status != ESOCK_WC_SUCCESS) {
			k->failed = true;
			break;
		}
		i = (uint32_t)wc.wr_id;
		for (uint32_t j = 0; j < wc.byte_len; j++)
			k->mismatch |= bufs[(size_t)i * KR_SIZE + j] != pattern(k->got + j);
		k->got += wc.byte_len;
		usleep(2000); /* a slow reader: the writer runs ahead */
		post_recv(qp, mr, bufs, i);
		reposted++;
		if (k->credits)
			write_credit(k, qp, scq, src_mr, src, reposted);
	}
	k->failed |= esock_qp_state(qp) == ESOCK_QPS_ERROR;
	ck_assert_int_eq(esock_qp_destroy(qp), 0);
	ck_assert_int_eq(esock_mr_dereg(mr), 0);
	ck_assert_int_eq(esock_mr_dereg(src_mr), 0);
	ck_assert_int_eq(esock_cq_destroy(scq), 0);
	ck_assert_int_eq(esock_cq_destroy(rcq), 0);
	ck_assert_int_eq(esock_pd_free(pd), 0);
	free(bufs);
	return NULL;
}

static void kreader_start(struct kreader *k, bool credits)
{
	struct sockaddr_storage ss;

	memset(k, 0, sizeof(*k));
	k->credits = credits;
	k->sa = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(esock_listen((struct sockaddr *)&k->sa, sizeof(k->sa), 4, &k->l), 0);
	ck_assert_int_eq(esock_listener_addr(k->l, &ss), 0);
	k->sa.sin_port = ((struct sockaddr_in *)&ss)->sin_port;
	ck_assert_int_eq(pthread_create(&k->th, NULL, kreader_main, k), 0);
}

/*
 * Non-blocking writes of 256 KiB, waiting only for room: in poll (|ep| < 0)
 * or epoll, POLLOUT alone, so that nothing but the wait for room may read
 * the credits in.  Octets written, or -1.
 */
static ssize_t send_waiting_for_room(int fd, const uint8_t *out, int ep)
{
	size_t done = 0;

	ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	while (done < KR_TOTAL) {
		size_t n = KR_TOTAL - done < (256u << 10) ? KR_TOTAL - done : 256u << 10;
		ssize_t w = send(fd, out + done, n, MSG_NOSIGNAL);

		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN)
			return -1;
		if (ep >= 0) {
			struct epoll_event ev;

			if (epoll_wait(ep, &ev, 1, 10000) != 1)
				return -1;
		} else {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, 10000) != 1)
				return -1;
		}
	}
	return (ssize_t)done;
}

/*
 * The client writes KR_TOTAL octets of the pattern: |how| 0 in one blocking
 * send, 1 non-blocking waiting in poll, 2 in epoll (edge-triggered).  Its result.
 */
static ssize_t client_send(struct kreader *k, int how)
{
	uint8_t *out = malloc(KR_TOTAL);
	int fd = ddp_socket(0), ep = -1;
	ssize_t n;

	for (size_t i = 0; i < KR_TOTAL; i++)
		out[i] = pattern(i);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&k->sa, sizeof(k->sa)), 0);
	if (how == 2) {
		struct epoll_event ev = { .events = EPOLLOUT | EPOLLET, .data.fd = fd };

		ck_assert_int_ge(ep = epoll_create1(0), 0);
		ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	}
	n = how == 0 ? send(fd, out, KR_TOTAL, MSG_NOSIGNAL) : send_waiting_for_room(fd, out, ep);
	atomic_store(&k->writer_done, true);
	pthread_join(k->th, NULL);
	if (ep >= 0)
		close(ep);
	close(fd);
	esock_listener_close(k->l);
	free(out);
	return n;
}

/*
 * A reader that returns credits: the 2 MiB arrive whole, in order, with
 * four receives posted at a time and no Terminate, whether the writer
 * blocks (_i 0) or waits for room in poll (1) or epoll (2).
 */
START_TEST(sender_keeps_within_credits)
{
	struct kreader k;

	alarm(60);
	kreader_start(&k, true);
	ck_assert_int_eq(client_send(&k, _i), (ssize_t)KR_TOTAL);
	ck_assert(k.cw_seen);
	ck_assert(!k.failed);
	ck_assert(!k.mismatch);
	ck_assert_uint_eq(k.got, KR_TOTAL);
	alarm(0);
}
END_TEST

/*
 * The control: the same reader announcing no credits (an esock peer of
 * before them) is overrun, as a kernel QP was: its QP fails.  Shows that
 * the test above can fail.
 */
START_TEST(reader_without_credits_is_overrun)
{
	struct kreader k;

	alarm(60);
	kreader_start(&k, false);
	(void)client_send(&k, 0);
	ck_assert(k.failed);
	ck_assert_uint_lt(k.got, KR_TOTAL);
	alarm(0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sock credits");
	TCase *tc = tcase_create("credits");

	tcase_set_timeout(tc, 90);
	tcase_add_loop_test(tc, sender_keeps_within_credits, 0, 3);
	tcase_add_test(tc, reader_without_credits_is_overrun);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK); /* (settings are read once per process) */
	signal(SIGPIPE, SIG_IGN);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
