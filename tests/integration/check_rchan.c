/* SPDX-License-Identifier: MIT */
/*
 * tcpserver/rchan.c, the TCP Server's channel across the network: a host
 * and a "tcpserverd" side in one process, joined by an esock QP on loopback
 * (the user-level backend).  Records cross whole and in order both ways,
 * across the queues' ends, by RDMA Write into the peer's copies; a full
 * queue frees as the consumer's position comes back; a consumer that sleeps
 * on the bell is woken by the producer's ring; a peer without the hello is
 * refused; a host that goes away breaks the link on the other side.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <esock/iwarp.h>

#include "tcpserver/rchan.h"
#include "tests/unit/testutil.h"

#define CAP 8192u

struct host_side {
	struct sockaddr_in sa;
	struct tsp_rchan *c;
	int rc;
	pthread_t th;
};

static void *host_main(void *arg)
{
	struct host_side *h = arg;

	h->rc = tsp_rchan_connect(&h->c, (struct sockaddr *)&h->sa, sizeof(h->sa), CAP);
	return NULL;
}

/* A listener on loopback, a host connected to it, the server's side accepted. */
static void pair(struct esock_listener **l, struct tsp_rchan **host, struct tsp_rchan **srv)
{
	struct host_side h = { .sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) } };
	struct sockaddr_storage ss;
	struct esock_conn_req *r;

	ck_assert_int_eq(esock_listen((struct sockaddr *)&h.sa, sizeof(h.sa), 4, l), 0);
	ck_assert_int_eq(esock_listener_addr(*l, &ss), 0);
	h.sa.sin_port = ((struct sockaddr_in *)&ss)->sin_port;
	ck_assert_int_eq(pthread_create(&h.th, NULL, host_main, &h), 0);
	ck_assert_int_eq(esock_get_request(*l, &r, 5000), 0);
	ck_assert_int_eq(tsp_rchan_accept(srv, r), 0);
	pthread_join(h.th, NULL);
	ck_assert_int_eq(h.rc, 0);
	*host = h.c;
}

static void put(struct esock_shmq *q, uint32_t len, uint8_t fill)
{
	int rc = 1;
	uint8_t *p = esock_shmq_reserve(q, len, &rc);

	ck_assert_msg(p != NULL, "reserve %u: %d", len, rc);
	memset(p, fill, len);
	esock_shmq_commit(q, len);
}

/* The next record, waited for (RDMA Writes are placed as the peer's QP reads them): its checks. */
static void take(struct esock_shmq *q, uint32_t want, uint8_t fill)
{
	const uint8_t *p;
	uint32_t len = 0;
	int rc = -EAGAIN;

	for (int i = 0; i < 50000 && !(p = esock_shmq_peek(q, &len, &rc)) && rc == -EAGAIN; i++)
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	ck_assert_msg(p != NULL, "no record: %d", rc);
	ck_assert_uint_eq(len, want);
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != fill)
			ck_abort_msg("octet %u of a %u-octet record: %u, not %u", i, len, p[i], fill);
	esock_shmq_release(q);
}

START_TEST(records_cross_both_ways)
{
	struct esock_listener *l;
	struct tsp_rchan *host, *srv;
	unsigned seed = 3;
	int rc, n = 0;

	alarm(120);
	pair(&l, &host, &srv);
	/* Sizes that do not divide the queues: records meet their ends at every offset. */
	for (int round = 0; round < 3000; round++) {
		uint32_t k = (uint32_t)rand_r(&seed) % 900;

		put(tsp_rchan_req(host), k, (uint8_t)round);
		take(tsp_rchan_req(srv), k, (uint8_t)round);
		put(tsp_rchan_resp(srv), k / 2, (uint8_t)~round);
		take(tsp_rchan_resp(host), k / 2, (uint8_t)~round);
	}
	/* Full, then room again once the consumer's position came back. */
	for (uint8_t *r; (r = esock_shmq_reserve(tsp_rchan_req(host), 200, &rc)); n++) {
		memset(r, 7, 200);
		esock_shmq_commit(tsp_rchan_req(host), 200);
	}
	ck_assert_int_eq(rc, -EAGAIN);
	ck_assert_int_gt(n, 20);
	for (int i = 0; i < n; i++)
		take(tsp_rchan_req(srv), 200, 7);
	{
		void *r = NULL;

		for (int i = 0; i < 50000 && !(r = esock_shmq_reserve(tsp_rchan_req(host), 200, &rc)); i++)
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
		ck_assert_ptr_nonnull(r);
		memset(r, 8, 200);
		esock_shmq_commit(tsp_rchan_req(host), 200);
		take(tsp_rchan_req(srv), 200, 8);
	}
	tsp_rchan_close(host);
	tsp_rchan_close(srv);
	esock_listener_close(l);
	alarm(0);
}
END_TEST

/*
 * The server's side sleeps on its bell with the request queue empty; the
 * host's next request rings it awake; the record is there.  Then the host
 * goes away: the server's side learns it from its bell.
 */
/*
 * A producer that never sleeps posts thousands of Writes without looking at
 * its send completions: they may not pile up beyond its completion queue
 * (an overflow drops them, a Read's among them, and the next sleeper's look
 * would wait for ever).  Then each side's look before sleeping still answers
 * at once and the link is whole.
 */
START_TEST(busy_producer_keeps_its_completions)
{
	struct esock_listener *l;
	struct tsp_rchan *host, *srv;
	struct timespec t0, t1;

	alarm(120);
	pair(&l, &host, &srv);
	for (int round = 0; round < 4000; round++) {
		put(tsp_rchan_req(host), 64, (uint8_t)round);
		take(tsp_rchan_req(srv), 64, (uint8_t)round);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(esock_shmq_sleep_begin(tsp_rchan_resp(host)), 0); /* (a pull: a Read) */
	esock_shmq_sleep_end(tsp_rchan_resp(host));
	ck_assert_int_eq(esock_shmq_sleep_begin(tsp_rchan_req(srv)), 0);
	esock_shmq_sleep_end(tsp_rchan_req(srv));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_msg(t1.tv_sec - t0.tv_sec < 3, "the looks took %ld s", (long)(t1.tv_sec - t0.tv_sec));
	ck_assert_int_eq(tsp_rchan_drain(host), 0);
	ck_assert_int_eq(tsp_rchan_drain(srv), 0);
	put(tsp_rchan_req(host), 8, 1);
	take(tsp_rchan_req(srv), 8, 1);
	tsp_rchan_close(host);
	tsp_rchan_close(srv);
	esock_listener_close(l);
	alarm(0);
}
END_TEST

START_TEST(sleeper_woken_by_ring)
{
	struct esock_listener *l;
	struct tsp_rchan *host, *srv;
	struct pollfd p;

	alarm(60);
	pair(&l, &host, &srv);
	ck_assert_int_eq(tsp_rchan_drain(srv), 0);
	ck_assert_int_eq(esock_shmq_sleep_begin(tsp_rchan_req(srv)), 0); /* empty: it may sleep */
	p = (struct pollfd){ .fd = tsp_rchan_bell(srv), .events = POLLIN };
	ck_assert_int_ge(p.fd, 0);
	ck_assert_int_eq(poll(&p, 1, 200), 0); /* nothing yet */
	put(tsp_rchan_req(host), 33, 0x5a);
	ck_assert_int_eq(poll(&p, 1, 5000), 1); /* rung */
	ck_assert_int_eq(tsp_rchan_drain(srv), 0);
	esock_shmq_sleep_end(tsp_rchan_req(srv));
	take(tsp_rchan_req(srv), 33, 0x5a);
	/* The host goes: the bell tells, the link says so. */
	tsp_rchan_close(host);
	{
		int rc = 0;

		for (int i = 0; i < 100 && !rc; i++) {
			(void)poll(&p, 1, 100);
			rc = tsp_rchan_drain(srv);
		}
		ck_assert_int_lt(rc, 0);
	}
	tsp_rchan_close(srv);
	esock_listener_close(l);
	alarm(0);
}
END_TEST

static void *plain_client(void *arg)
{
	struct host_side *h = arg;
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_qp_attr qa = { 0 };
	struct esock_conn_param p = { .timeout_ms = 5000 };

	ck_assert_int_eq(esock_pd_alloc(&pd), 0);
	ck_assert_int_eq(esock_cq_create(16, &cq), 0);
	qa.pd = pd;
	qa.send_cq = qa.recv_cq = cq;
	ck_assert_int_eq(esock_qp_create(&qa, &qp), 0);
	h->rc = esock_qp_connect(qp, (struct sockaddr *)&h->sa, sizeof(h->sa), &p);
	esock_qp_destroy(qp);
	esock_cq_destroy(cq);
	esock_pd_free(pd);
	return NULL;
}

/* A peer without the hello (a plain RDMA client) is refused. */
START_TEST(peer_without_hello_refused)
{
	struct host_side h = { .sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) } };
	struct esock_listener *l;
	struct sockaddr_storage ss;
	struct esock_conn_req *r;
	struct tsp_rchan *srv = (struct tsp_rchan *)&h;

	alarm(30);
	ck_assert_int_eq(esock_listen((struct sockaddr *)&h.sa, sizeof(h.sa), 4, &l), 0);
	ck_assert_int_eq(esock_listener_addr(l, &ss), 0);
	h.sa.sin_port = ((struct sockaddr_in *)&ss)->sin_port;
	ck_assert_int_eq(pthread_create(&h.th, NULL, plain_client, &h), 0);
	ck_assert_int_eq(esock_get_request(l, &r, 5000), 0);
	ck_assert_int_eq(tsp_rchan_accept(&srv, r), -EPROTO);
	ck_assert_ptr_null(srv);
	pthread_join(h.th, NULL);
	ck_assert_int_lt(h.rc, 0); /* (rejected) */
	esock_listener_close(l);
	alarm(0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rchan");
	TCase *tc = tcase_create("rchan");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, records_cross_both_ways);
	tcase_add_test(tc, sleeper_woken_by_ring);
	tcase_add_test(tc, busy_producer_keeps_its_completions);
	tcase_add_test(tc, peer_without_hello_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
