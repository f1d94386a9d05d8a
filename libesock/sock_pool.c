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
#include "libesock/sock_vb.h"
#include "libesock/sock_rxbuf.h"
#include "libesock/sock_stat.h"
#include "util/atfork.h"
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
	esock_atfork(ESOCK_FORK_LEAVES, NULL, NULL, region_fork_child);
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
 * Receives are posted as Sends arrive (sock_pool_refill, the QP's hook), a
 * buffer taken from the process's shared ones for each (sock_rxbuf.c), and
 * the buffer goes back as soon as the application has read the message:
 * whatever the number of connections, messages land in the few buffers
 * freed last, still in cache, and an idle connection holds none.  (Posted
 * ahead, a buffer per connection waited with its page for the next
 * message: a page fault for every new connection's first message, and over
 * 1000 busy connections their pages fell out of the caches: 0.56x plain
 * TCP's throughput there against 0.84x over ten.)
 *
 * A slot stays taken until its message is read, so at most rdepth messages
 * wait per connection.  Between two esock peers a Send that finds every
 * slot taken stops the QP reading TCP (it waits for a receive); it reads
 * on once a quarter of the slots are free again, or at once when nothing
 * is left to read: resumed for one message at a time it would make a
 * small read and a TCP window update for every message (measured:
 * 1000-octet writes at 0.1x TCP on one CPU).  A plain RDMA peer's Send
 * without a receive is its error, as with posted buffers.
 */
static void slot_push(struct esock_sock *s, uint32_t idx)
{
	pthread_mutex_lock(&s->pool_lock);
	s->repost[s->nrepost++] = idx;
	pthread_mutex_unlock(&s->pool_lock);
}

/* A free slot with a buffer of the process's in it; false when none (no pool yet, all taken). */
static bool slot_take(struct esock_sock *s, uint32_t *idx)
{
	uint8_t *b;

	pthread_mutex_lock(&s->pool_lock);
	if (!s->repost || !s->nrepost) {
		pthread_mutex_unlock(&s->pool_lock);
		return false;
	}
	*idx = s->repost[--s->nrepost];
	pthread_mutex_unlock(&s->pool_lock);
	if (!(b = sock_rxbuf_get((size_t)s->o.rsize))) {
		slot_push(s, *idx);
		return false;
	}
	s->rbufs[*idx] = b;
	return true;
}

int sock_pool_refill(void *arg)
{
	struct esock_sock *s = arg;
	uint32_t idx;
	uint8_t *b;

	if (!s->qp || !slot_take(s, &idx))
		return 0;
	b = s->rbufs[idx];
	if (ep_qp_post_recv_local(s->qp, b, (uint32_t)s->o.rsize, SOCK_WR_RECV | idx) < 0) {
		s->rbufs[idx] = NULL;
		sock_rxbuf_put(b, (size_t)s->o.rsize);
		slot_push(s, idx);
		return 0;
	}
	return 1;
}

void sock_pool_open(struct esock_sock *s)
{
	if (s->qp && ep_qp_rx_paused(s->qp))
		sock_pool_refill(s); /* (posting resumes the QP's reading: user_post_recv) */
}

void sock_pool_return(struct esock_sock *s, uint32_t idx, bool now)
{
	uint32_t quarter = (uint32_t)s->o.rdepth / 4, free_now;

	if (s->verbs) { /* (its buffers are its own, posted again at once) */
		sock_vb_repost(s, idx);
		return;
	}
	sock_rxbuf_put(s->rbufs[idx], (size_t)s->o.rsize);
	s->rbufs[idx] = NULL;
	pthread_mutex_lock(&s->pool_lock);
	s->repost[s->nrepost++] = idx;
	free_now = s->nrepost;
	pthread_mutex_unlock(&s->pool_lock);
	if (now || free_now >= (quarter ? quarter : 1))
		sock_pool_open(s);
}

/*
 * A message read before an exec, not yet by the application (sock_handoff.c):
 * into a slot that is not posted, ahead of anything the QP receives here.
 */
int sock_pool_inject(struct esock_sock *s, const void *data, uint32_t len)
{
	uint32_t idx;

	if (!len)
		return 0;
	if (len > (uint32_t)s->o.rsize || !slot_take(s, &idx))
		return -ENOBUFS;
	memcpy(s->rbufs[idx], data, len);
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
	for (uint32_t i = 0; s->rbufs && i < n; i++)
		if (s->rbufs[i]) {
			sock_rxbuf_put(s->rbufs[i], (size_t)s->o.rsize);
			s->rbufs[i] = NULL;
		}
	for (uint32_t i = 0; s->repost && i < n; i++)
		s->repost[i] = n - 1 - i;
	s->nrepost = s->repost ? n : 0;
	s->rhead = s->rcount = s->roff = 0;
	s->rready = 0;
	sock_slots_release(s);
	s->inflight = 0;
	s->direct_done = s->direct_seq;
}

int sock_pool_setup(struct esock_sock *s)
{
	size_t n = (size_t)s->o.rdepth;

	if (n == 0)
		return 0;
	s->rbufs = calloc(n, sizeof(*s->rbufs));
	s->rdone = calloc(n, sizeof(*s->rdone));
	s->rlen = calloc(n, sizeof(*s->rlen));
	s->repost = calloc(n, sizeof(*s->repost));
	if (!s->rbufs || !s->rdone || !s->rlen || !s->repost)
		return -ENOMEM;
	/* All free, slot 0 on top. */
	pthread_mutex_lock(&s->pool_lock);
	for (uint32_t i = 0; i < n; i++)
		s->repost[i] = (uint32_t)n - 1 - i;
	s->nrepost = (uint32_t)n;
	pthread_mutex_unlock(&s->pool_lock);
	sock_pool_open(s); /* (a Send that came before the pool waits for it) */
	return 0;
}

/* The pool's memory back, its buffers to the process's (the socket is recycled). */
void sock_pool_free(struct esock_sock *s)
{
	for (uint32_t i = 0; s->rbufs && i < (uint32_t)s->o.rdepth; i++)
		sock_rxbuf_put(s->rbufs[i], (size_t)s->o.rsize);
	free(s->rbufs);
	free(s->rdone);
	free(s->rlen);
	free(s->repost);
	s->rbufs = NULL;
	s->rdone = s->rlen = s->repost = NULL;
	s->nrepost = 0;
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
