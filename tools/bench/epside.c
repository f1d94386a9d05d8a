/* SPDX-License-Identifier: MIT */
/*
 * The esock side of a measurement: one registered region per process (made
 * once, touched up front so that page faults stay out of the figures), and
 * per measurement a fresh CQ and QP, so that receives or completions left
 * over from one test can never disturb the next.  One CQ serves both queues:
 * a single esock_cq_wait then sees sends, receives and credits alike.  Any
 * failure is fatal: a benchmark that carries on after an error measures
 * nothing.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"

#define CQ_DEPTH 2048
#define SQ_DEPTH 512
#define RQ_DEPTH 512
#define WAIT_MS 10000 /* a stalled endpoint fails the run instead of hanging it */

static void check(int rc, const char *what)
{
	if (rc < 0)
		bench_die("%s: %s", what, strerror(-rc));
}

void bm_init(struct bench_mem *m, size_t max_size)
{
	unsigned acc = ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE | ESOCK_ACCESS_REMOTE_READ;

	m->half = (max_size + 4095) & ~(size_t)4095;
	if (m->half < 4096)
		m->half = 4096;
	if (!(m->base = aligned_alloc(4096, 2 * m->half)))
		bench_die("cannot allocate %zu octets", 2 * m->half);
	memset(m->base, 0, 2 * m->half);
	check(esock_pd_alloc(&m->pd), "esock_pd_alloc");
	check(esock_mr_reg(m->pd, m->base, 2 * m->half, acc, 0x42, &m->mr), "esock_mr_reg");
	m->stag = esock_mr_stag(m->mr);
}

void bs_create(struct bside *s, struct bench_mem *m)
{
	struct esock_qp_attr a = { 0 };

	memset(s, 0, sizeof(*s));
	s->m = m;
	check(esock_cq_create(CQ_DEPTH, &s->cq), "esock_cq_create");
	a.pd = m->pd;
	a.send_cq = s->cq;
	a.recv_cq = s->cq;
	a.sq_depth = SQ_DEPTH;
	a.rq_depth = RQ_DEPTH;
	a.max_sge = 1;
	check(esock_qp_create(&a, &s->qp), "esock_qp_create");
}

void bs_destroy(struct bside *s)
{
	check(esock_qp_destroy(s->qp), "esock_qp_destroy");
	check(esock_cq_destroy(s->cq), "esock_cq_destroy");
	s->qp = NULL;
	s->cq = NULL;
}

/* Both sides ask for the same: CRC must be off on both to be off; markers both ways. */
struct in_addr bench_ep_addr; /* (0: 127.0.0.1) */

static in_addr_t ep_addr(void)
{
	return bench_ep_addr.s_addr ? bench_ep_addr.s_addr : htonl(INADDR_LOOPBACK);
}

/*
 * Both ends announce themselves in their private data; packing is agreed
 * only when the peer's frame carries the same words.
 */
static const char announce[] = "esock-bench pack";

static bool peer_packs(void *arg, const struct esock_conn_info *info)
{
	(void)arg;
	return info->private_data_len == sizeof(announce) &&
	       memcmp(info->private_data, announce, sizeof(announce)) == 0;
}

void bs_param(const struct bench_job *j, struct esock_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	if (j->pack) {
		p->private_data = announce;
		p->private_data_len = sizeof(announce);
		p->pack = true;
		p->peer_agrees = peer_packs;
	}
	p->crc = j->crc ? 1 : -1;
	p->markers = j->markers != 0;
	/* Reads in flight up to the window (the default ORD of 8 would cap it). */
	p->ird = p->ord = (uint16_t)(j->window > 8 ? (j->window < 128 ? j->window : 128) : 8);
}

void bs_connect(struct bside *s, uint16_t port, const struct bench_job *j)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = ep_addr() };
	struct esock_conn_param p;

	bs_param(j, &p);
	check(esock_qp_connect(s->qp, (struct sockaddr *)&sin, sizeof(sin), &p), "esock_qp_connect");
}

struct esock_listener *bs_listen(uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = ep_addr() };
	struct sockaddr_storage ss;
	struct esock_listener *l;

	check(esock_listen((struct sockaddr *)&sin, sizeof(sin), 16, &l), "esock_listen");
	check(esock_listener_addr(l, &ss), "esock_listener_addr");
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return l;
}

void bs_accept(struct bside *s, struct esock_listener *l, const struct bench_job *j)
{
	struct esock_conn_req *req;
	struct esock_conn_param p;

	bs_param(j, &p);
	check(esock_get_request(l, &req, WAIT_MS), "esock_get_request");
	check(esock_accept(req, s->qp, &p), "esock_accept");
}

void bs_post_recv(struct bside *s, uint64_t id, uint8_t *buf, size_t len)
{
	struct esock_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, s->m->stag };
	struct esock_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	check(esock_post_recv(s->qp, &wr, NULL), "esock_post_recv");
}

/* Posts one signalled send WR; the completion is counted by bs_wait. */
void bs_post(struct bside *s, enum esock_wr_opcode op, uint8_t *buf, size_t len, uint64_t raddr,
	     uint32_t rkey)
{
	struct esock_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, s->m->stag };
	struct esock_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				    .send_flags = ESOCK_SEND_SIGNALED, .remote_addr = raddr,
				    .rkey = rkey };

	check(esock_post_send(s->qp, &wr, NULL), "esock_post_send");
	s->sq_out++;
}

/*
 * Posts |n| such WRs as one list (as RDMA benchmarks post their window's free
 * slots): the endpoint queues them all before it writes, so it knows more
 * follows each one (towards an esock peer they then share segments).
 */
void bs_post_list(struct bside *s, enum esock_wr_opcode op, uint8_t *buf, size_t len, uint64_t raddr,
		  uint32_t rkey, int n)
{
	struct esock_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, s->m->stag };
	struct esock_send_wr wr[32];

	while (n > 0) {
		int k = n < 32 ? n : 32;

		for (int i = 0; i < k; i++)
			wr[i] = (struct esock_send_wr){ .sg_list = &sge, .num_sge = 1, .opcode = op,
							.send_flags = ESOCK_SEND_SIGNALED,
							.remote_addr = raddr, .rkey = rkey,
							.next = i + 1 < k ? &wr[i + 1] : NULL };
		check(esock_post_send(s->qp, wr, NULL), "esock_post_send");
		s->sq_out += (uint64_t)k;
		n -= k;
	}
}

static int take(struct bside *s, const struct esock_wc *wc, int n)
{
	for (int i = 0; i < n; i++) {
		if (wc[i].status != ESOCK_WC_SUCCESS)
			bench_die("completion error: %s (opcode %d)", esock_wc_status_str(wc[i].status),
				  (int)wc[i].opcode);
		if (wc[i].opcode == ESOCK_WC_RECV) {
			s->rq_done++;
			if (s->nfresh < (int)(sizeof(s->fresh) / sizeof(s->fresh[0])))
				s->fresh[s->nfresh++] = wc[i].wr_id;
		} else {
			s->sq_out--;
			s->sq_done++;
		}
	}
	return n;
}

/* Waits (driving progress, as esock_cq_wait does) for at least one completion. */
void bs_wait(struct bside *s)
{
	struct esock_wc wc[32];
	int n = esock_cq_wait(s->cq, 32, wc, WAIT_MS);

	if (n < 0)
		bench_die("esock_cq_wait: %s", strerror(-n));
	if (n == 0)
		bench_die("no completion within %d ms (endpoint stalled)", WAIT_MS);
	take(s, wc, n);
}

/* Takes what is there without waiting, then waits while more than |max_out| are open. */
void bs_reap(struct bside *s, uint64_t max_out)
{
	struct esock_wc wc[32];

	while (take(s, wc, esock_cq_poll(s->cq, 32, wc)) == 32)
		;
	while (s->sq_out > max_out)
		bs_wait(s);
}
