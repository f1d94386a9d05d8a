/* SPDX-License-Identifier: MIT */
/*
 * Endpoint bandwidth: |count| messages of |size| with up to |window| send
 * WRs outstanding, timed from the first post until the data is known to be
 * at the peer (so that it compares with a TCP stream timed the same way):
 *
 *   send   the server keeps RECV_CREDITS receives posted and returns a
 *          credit (a small Send carrying how many it has received) every
 *          CREDIT_EVERY messages.  iWARP has no receiver-not-ready retry:
 *          a Send without a posted receive kills the connection, so the
 *          client never runs further ahead than the credits allow.  The
 *          clock stops at the credit for the last message;
 *   write  the writes, then a one-octet Send that the server answers: DDP
 *          places in order, so the answer proves every write landed;
 *   read   Reads of the server's buffer; the last completion stops the clock.
 */
#include "config.h"

#include <string.h>

#include "tools/bench/bench.h"

#define RECV_CREDITS 256
#define CREDIT_EVERY 64
#define CLIENT_RECVS 8  /* credits in flight: at most RECV_CREDITS / CREDIT_EVERY + 1 */
#define SLOT 64         /* credit messages: one slot each, never shared while in use */

static uint64_t credit_at(const uint8_t *slot)
{
	uint64_t v;

	memcpy(&v, slot, sizeof(v));
	return v;
}

/* Client: credits received since the last call; each receive is posted again. */
static void take_credits(struct bside *s, uint64_t *acked)
{
	uint8_t *rbuf = s->m->base;

	for (int i = 0; i < s->nfresh; i++) {
		uint64_t slot = s->fresh[i], v = credit_at(rbuf + slot * SLOT);

		if (v > *acked)
			*acked = v;
		bs_post_recv(s, slot, rbuf + slot * SLOT, SLOT);
	}
	s->nfresh = 0;
}

static bool may_post(const struct bside *s, const struct bench_job *j, uint64_t posted,
		     uint64_t acked)
{
	if (posted >= j->count || s->sq_out >= (uint64_t)j->window)
		return false;
	return j->op != OP_SEND || posted < acked + RECV_CREDITS;
}

/* Posts |n| messages as one list. */
static void post_some(struct bside *s, const struct bench_job *j, const struct bench_hello *h, int n)
{
	uint8_t *rbuf = s->m->base, *sbuf = s->m->base + s->m->half;

	if (j->op == OP_SEND)
		bs_post_list(s, ESOCK_WR_SEND, sbuf, j->size, 0, 0, n);
	else if (j->op == OP_WRITE)
		bs_post_list(s, ESOCK_WR_RDMA_WRITE, sbuf, j->size, h->addr, h->stag, n);
	else
		bs_post_list(s, ESOCK_WR_RDMA_READ, rbuf, j->size, h->addr + s->m->half, h->stag, n);
}

/* The client's receives (credits, or the answer to the final Send) are posted before connecting. */
double ep_bw_client(struct bside *s, const struct bench_job *j, const struct bench_hello *h)
{
	uint64_t posted = 0, acked = 0, base = s->sq_done;
	double t0 = bench_now();

	while (s->sq_done - base < j->count) {
		int n = 0;

		while (may_post(s, j, posted + (uint64_t)n, acked) && s->sq_out + (uint64_t)n < (uint64_t)j->window)
			n++;
		if (n)
			post_some(s, j, h, n);
		posted += (uint64_t)n;
		bs_wait(s);
		if (j->op == OP_SEND)
			take_credits(s, &acked);
	}
	if (j->op == OP_WRITE) {
		bs_post(s, ESOCK_WR_SEND, s->m->base + s->m->half, 1, 0, 0);
		while (s->rq_done < 1)
			bs_wait(s);
	}
	while (j->op == OP_SEND && acked < j->count) {
		bs_wait(s);
		take_credits(s, &acked);
	}
	return (double)j->count * (double)j->size / (bench_now() - t0) / 1e6;
}

void ep_bw_client_prepare(struct bside *s, const struct bench_job *j)
{
	for (int i = 0; i < (j->op == OP_SEND ? CLIENT_RECVS : j->op == OP_WRITE); i++)
		bs_post_recv(s, (uint64_t)i, s->m->base + (size_t)i * SLOT, SLOT);
}

/* Server, Send: repost every receive at once, return a credit every CREDIT_EVERY. */
static void send_bw_server(struct bside *s, const struct bench_job *j)
{
	uint8_t *rbuf = s->m->base, *sbuf = s->m->base + s->m->half;
	uint64_t credited = 0, ncredit = 0, reposted = 0;

	while (credited < j->count) {
		bs_wait(s);
		/* Counted, not listed: a burst may exceed what fresh[] holds. */
		for (; reposted < s->rq_done; reposted++)
			bs_post_recv(s, 0, rbuf, j->size);
		s->nfresh = 0;
		if (s->rq_done - credited >= CREDIT_EVERY || s->rq_done == j->count) {
			uint8_t *slot = sbuf + (ncredit++ % 64) * SLOT;

			credited = s->rq_done;
			memcpy(slot, &credited, sizeof(credited));
			bs_post(s, ESOCK_WR_SEND, slot, sizeof(credited), 0, 0);
		}
	}
}

/* The server's receives are posted by ep_bw_server_prepare before it accepts. */
void ep_bw_server(struct bside *s, const struct bench_job *j)
{
	if (j->op == OP_SEND) {
		send_bw_server(s, j);
	} else if (j->op == OP_WRITE) {
		while (s->rq_done < 1)
			bs_wait(s);
		bs_post(s, ESOCK_WR_SEND, s->m->base + s->m->half, 1, 0, 0);
	}
	bs_reap(s, 0);
}

void ep_bw_server_prepare(struct bside *s, const struct bench_job *j)
{
	int n = j->op == OP_SEND ? RECV_CREDITS : j->op == OP_WRITE ? 1 : 0;

	for (int i = 0; i < n; i++)
		bs_post_recv(s, 0, s->m->base, j->op == OP_SEND ? j->size : SLOT);
}
