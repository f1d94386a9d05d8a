/* SPDX-License-Identifier: MIT */
/*
 * Endpoint latency, one round trip per iteration, as perftest measures it:
 *
 *   send   ping-pong: each side keeps one receive posted, sends, and waits
 *          for the peer's message with esock_cq_wait (ib_send_lat);
 *   write  ping-pong of RDMA Writes: each side polls the last octet of its
 *          own target buffer, which the peer's Write sets to the iteration's
 *          tag, then writes back (ib_write_lat).  Nobody waits on a CQ for
 *          the incoming data: the library's engine thread places it;
 *   read   post an RDMA Read of the peer's buffer and wait for its
 *          completion (ib_read_lat); the peer's application does nothing.
 *
 * The client times every iteration; the first tenth are warm-up and dropped
 * by the caller.  Send completions are reaped as they come, without waiting.
 */
#include "config.h"

#include <sched.h>

#include "tools/bench/bench.h"

/*
 * Waits until |*p| holds |v|.  Yields now and then: on a shared CPU the
 * engine thread that places the data must get to run.
 */
static void spin_for(const volatile uint8_t *p, uint8_t v)
{
	for (unsigned n = 1; *p != v; n++)
		if ((n & 31) == 0)
			sched_yield();
}

static uint8_t tag_of(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);
}

static void send_lat_client(struct bside *s, const struct bench_job *j, double *rtt)
{
	uint8_t *rbuf = s->m->base, *sbuf = s->m->base + s->m->half;

	for (uint64_t i = 0; i < j->count; i++) {
		double t0 = bench_now();

		bs_post(s, ESOCK_WR_SEND, sbuf, j->size, 0, 0);
		while (s->rq_done < i + 1)
			bs_wait(s);
		rtt[i] = (bench_now() - t0) * 1e6;
		/* Posted after the clock stops, before the next ping can be answered. */
		bs_post_recv(s, i + 1, rbuf, j->size);
		bs_reap(s, 64);
		s->nfresh = 0;
	}
}

static void write_lat_client(struct bside *s, const struct bench_job *j,
			     const struct bench_hello *h, double *rtt)
{
	uint8_t *rbuf = s->m->base, *sbuf = s->m->base + s->m->half;

	for (uint64_t i = 0; i < j->count; i++) {
		double t0 = bench_now();

		sbuf[j->size - 1] = tag_of(i);
		bs_post(s, ESOCK_WR_RDMA_WRITE, sbuf, j->size, h->addr, h->stag);
		spin_for(&rbuf[j->size - 1], tag_of(i));
		rtt[i] = (bench_now() - t0) * 1e6;
		bs_reap(s, 64);
	}
}

static void read_lat_client(struct bside *s, const struct bench_job *j,
			    const struct bench_hello *h, double *rtt)
{
	uint8_t *rbuf = s->m->base;
	uint64_t peer_sbuf = h->addr + s->m->half;

	for (uint64_t i = 0; i < j->count; i++) {
		double t0 = bench_now();

		bs_post(s, ESOCK_WR_RDMA_READ, rbuf, j->size, peer_sbuf, h->stag);
		while (s->sq_out)
			bs_wait(s);
		rtt[i] = (bench_now() - t0) * 1e6;
	}
}

/* The first receive is posted by the caller before connecting (a reply may come at once). */
void ep_lat_client(struct bside *s, const struct bench_job *j, const struct bench_hello *h,
		   double *rtt_us)
{
	if (j->op == OP_SEND)
		send_lat_client(s, j, rtt_us);
	else if (j->op == OP_WRITE)
		write_lat_client(s, j, h, rtt_us);
	else
		read_lat_client(s, j, h, rtt_us);
	bs_reap(s, 0);
}

void ep_lat_server(struct bside *s, const struct bench_job *j)
{
	uint8_t *rbuf = s->m->base, *sbuf = s->m->base + s->m->half;

	for (uint64_t i = 0; i < j->count && j->op != OP_READ; i++) {
		if (j->op == OP_SEND) {
			while (s->rq_done < i + 1)
				bs_wait(s);
			bs_post_recv(s, i + 1, rbuf, j->size);
			bench_think(j->think_us);
			bs_post(s, ESOCK_WR_SEND, sbuf, j->size, 0, 0);
		} else {
			spin_for(&rbuf[j->size - 1], tag_of(i));
			bench_think(j->think_us);
			sbuf[j->size - 1] = tag_of(i);
			bs_post(s, ESOCK_WR_RDMA_WRITE, sbuf, j->size, j->peer_addr, j->peer_stag);
		}
		bs_reap(s, 64);
		s->nfresh = 0;
	}
	bs_reap(s, 0);
}
