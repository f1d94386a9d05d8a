/* SPDX-License-Identifier: MIT */
/*
 * A DDPMODE socket's receive pool (registered buffers the peer's Sends land
 * in, posted as the reader needs them) and the bookkeeping of its send
 * slots' completions.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "endpoint/ep_sock.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_stat.h"
#include "util/log.h"

/*
 * Regions of connections that closed are kept for the next ones (a few, per
 * process): an mmap and a munmap per connection cost a mapping change and,
 * with other threads running, a TLB shootdown across CPUs each time, which
 * a server that takes a connection per request pays at its request rate.
 * What a kept region holds is this process's own memory (as malloc's reuse).
 */
#define REGION_KEEP 32

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t len;
} kept_regions[REGION_KEEP];
static int nkept_regions;

/* A thread of the parent may have held the lock at a fork: the child's copy starts free. */
static void region_fork_child(void)
{
	pthread_mutex_init(&region_lock, NULL);
}

static void region_once(void)
{
	pthread_atfork(NULL, NULL, region_fork_child);
}

void *sock_region_alloc(size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	void *p = NULL;

	pthread_once(&once, region_once);
	pthread_mutex_lock(&region_lock);
	for (int i = nkept_regions - 1; i >= 0; i--)
		if (kept_regions[i].len == len) {
			p = kept_regions[i].p;
			kept_regions[i] = kept_regions[--nkept_regions];
			break;
		}
	pthread_mutex_unlock(&region_lock);
	if (p)
		return p;
	/* MAP_NORESERVE: thousands of idle pools need no swap reserved for pages never touched. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0);
	return p == MAP_FAILED ? NULL : p;
}

void sock_region_free(void *p, size_t len)
{
	if (!p)
		return;
	pthread_mutex_lock(&region_lock);
	if (nkept_regions < REGION_KEEP) {
		kept_regions[nkept_regions].p = p;
		kept_regions[nkept_regions++].len = len;
		p = NULL;
	}
	pthread_mutex_unlock(&region_lock);
	if (p)
		munmap(p, len);
}

/*
 * Consumed buffers go back in batches of a quarter of the posted target (or
 * all it lacks once nothing is left to read).  Between two esock peers a
 * pool with nothing posted stops the QP reading TCP; reposting one buffer at
 * a time would resume it for one message at a time: a small read and a TCP
 * window update for every message (measured: 1000-octet writes at 0.1x TCP
 * on one CPU).
 *
 * Only rtarget buffers are posted, taken from the top of the stack of free
 * ones (the most recently consumed, still in cache): posting all rdepth
 * made small messages cycle through every buffer of the pool, one first
 * touch per buffer (64 pages, 256 KiB of resident memory per connection,
 * and 30 000 page faults a second over 1000 busy connections).  The target
 * starts small and doubles whenever the QP found nothing posted (it paused
 * reading: rx_paused), up to rdepth; towards a plain RDMA peer, whose Send
 * without a posted receive is fatal, all are posted from the start.
 */
void sock_pool_open(struct esock_sock *s)
{
	struct esock_recv_wr wr[64];
	struct esock_sge sge[64];

	if (s->qp && ep_qp_rx_paused(s->qp) && s->rtarget < (uint32_t)s->o.rdepth) {
		s->rtarget *= 2;
		if (s->rtarget > (uint32_t)s->o.rdepth)
			s->rtarget = (uint32_t)s->o.rdepth;
	}
	while (s->nrepost && s->rposted < s->rtarget && s->qp) {
		uint32_t n = s->rtarget - s->rposted;

		if (n > s->nrepost)
			n = s->nrepost;
		if (n > 64)
			n = 64;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = s->repost[s->nrepost - 1 - k];

			sge[k] = (struct esock_sge){
				.addr = (uintptr_t)(s->rbuf + (size_t)i * (size_t)s->o.rsize),
				.length = (uint32_t)s->o.rsize, .lkey = esock_mr_stag(s->rmr) };
			wr[k] = (struct esock_recv_wr){ .wr_id = SOCK_WR_RECV | i, .sg_list = &sge[k],
							.num_sge = 1, .next = k + 1 < n ? &wr[k + 1] : NULL };
		}
		if (esock_post_recv(s->qp, wr, NULL) < 0)
			break;
		s->nrepost -= n;
		s->rposted += n;
	}
}

void sock_pool_return(struct esock_sock *s, uint32_t idx, bool now)
{
	uint32_t batch = s->rtarget / 4;

	s->repost[s->nrepost++] = idx;
	if (now || s->rtarget - s->rposted >= (batch ? batch : 1))
		sock_pool_open(s);
}

/*
 * A message read before an exec, not yet by the application (sock_handoff.c):
 * into a buffer that is not posted, ahead of anything the QP receives here.
 */
int sock_pool_inject(struct esock_sock *s, const void *data, uint32_t len)
{
	uint32_t idx;

	if (!s->nrepost || len > (uint32_t)s->o.rsize || !len)
		return len ? -ENOBUFS : 0;
	idx = s->repost[--s->nrepost];
	memcpy(s->rbuf + (size_t)idx * (size_t)s->o.rsize, data, len);
	s->rdone[(s->rhead + s->rcount) % (uint32_t)s->o.rdepth] = idx;
	s->rlen[idx] = len;
	s->rcount++;
	s->rready += len;
	return 0;
}

/*
 * A stale copy's pool (sock_conn_resume): its QP is gone, so are its posted
 * receives, its completions, its sends in flight; its unread messages were
 * read by the process that went on with the connection.  All free again.
 */
void sock_pool_forget(struct esock_sock *s)
{
	struct esock_wc wc[32];
	uint32_t n = (uint32_t)s->o.rdepth;

	while (s->cq && esock_cq_poll(s->cq, 32, wc) > 0)
		;
	for (uint32_t i = 0; s->repost && i < n; i++)
		s->repost[i] = n - 1 - i;
	s->nrepost = s->repost ? n : 0;
	s->rposted = s->rhead = s->rcount = s->roff = 0;
	s->rready = 0;
	sock_slots_release(s);
	s->inflight = 0;
	s->direct_done = s->direct_seq;
}

/* The first receives of a fresh QP on a pool (sock_pool_forget'd). */
void sock_pool_repost(struct esock_sock *s)
{
	s->rtarget = s->o.rdepth < SOCK_RPOST_START ? (uint32_t)s->o.rdepth : SOCK_RPOST_START;
	sock_pool_open(s);
}

/* Towards a plain RDMA peer every buffer is posted (called before the QP receives). */
void sock_pool_post_all(struct esock_sock *s)
{
	s->rtarget = (uint32_t)s->o.rdepth;
	sock_pool_open(s);
}

int sock_pool_setup(struct esock_sock *s)
{
	size_t n = (size_t)s->o.rdepth, sz = (size_t)s->o.rsize;
	int rc;

	if (n == 0)
		return 0;
	s->rbuf_len = n * sz;
	s->rbuf = sock_region_alloc(s->rbuf_len);
	s->rdone = calloc(n, sizeof(*s->rdone));
	s->rlen = calloc(n, sizeof(*s->rlen));
	s->repost = calloc(n, sizeof(*s->repost));
	if (!s->rbuf || !s->rdone || !s->rlen || !s->repost)
		return -ENOMEM;
	if ((rc = esock_mr_reg(s->pd, s->rbuf, n * sz, ESOCK_ACCESS_LOCAL_WRITE, 0, &s->rmr)) < 0)
		return rc;
	/* All free, buffer 0 on top; the first rtarget go out now. */
	for (uint32_t i = 0; i < n; i++)
		s->repost[i] = (uint32_t)n - 1 - i;
	s->nrepost = (uint32_t)n;
	s->rposted = 0;
	s->rtarget = n < SOCK_RPOST_START ? (uint32_t)n : SOCK_RPOST_START;
	sock_pool_open(s);
	return s->rposted == s->rtarget ? 0 : -ENOMEM;
}

/* A Send from slot |id| completed: the slot goes back to the pool. */
void sock_slot_done(struct esock_sock *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->nslots; i++)
		if (s->slots[i] == id) {
			s->slots[i] = s->slots[--s->nslots];
			sock_slot_put(id);
			return;
		}
}

void sock_slots_release(struct esock_sock *s)
{
	while (s->nslots)
		sock_slot_put(s->slots[--s->nslots]);
}
