/* SPDX-License-Identifier: MIT */
/*
 * Protection domains and memory registration: the process-wide STag table
 * (STag = 24-bit index << 8 | consumer key), local SGE checks, local and
 * remote (Send with Invalidate, RFC 5040 §5.1) invalidation.
 *
 * The table is read on every placed segment and every posted SGE, so reads
 * take no lock: two levels (pages of slots allocated once, never freed or
 * moved) and a sequence count per slot that a reader checks before and after
 * copying the slot (a seqlock).  Writers (registration, deregistration,
 * invalidation, rekeying) serialise on one mutex; none is on the data path.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint/ep.h"
#include "iwarp/backend.h"
#include "util/atfork.h"

#define STAG_INDEX_MAX 0xffffffu /* 24 bits */
#define PAGE_SHIFT 10
#define PAGE_SLOTS (1u << PAGE_SHIFT)
#define NPAGES ((STAG_INDEX_MAX + 1) / PAGE_SLOTS)

struct slot {
	atomic_uint seq;         /* odd while a writer changes the slot */
	_Atomic uint32_t stag;   /* 0: free */
	atomic_bool valid;
	_Atomic uint64_t base, len;
	_Atomic uint32_t access, pd;
	struct esock_mr *mr;     /* writers only */
};

static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *_Atomic pages[NPAGES];
static uint32_t mr_hint = 1, mr_slots; /* under mr_lock: next index to try, slots in pages */
static atomic_uint pd_ids;

/* fork() while another thread holds mr_lock must not leave it locked in the child. */
static void fork_lock(void)
{
	pthread_mutex_lock(&mr_lock);
}

static void fork_unlock(void)
{
	pthread_mutex_unlock(&mr_lock);
}

static void mr_atfork(void)
{
	esock_atfork(ESOCK_FORK_LEAVES, fork_lock, fork_unlock, fork_unlock);
}

int user_pd_alloc(struct esock_pd **pd)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct esock_pd *p = calloc(1, sizeof(*p));

	pthread_once(&once, mr_atfork);
	if (!p)
		return -ENOMEM;
	p->id = atomic_fetch_add(&pd_ids, 1) + 1;
	p->be = &esock_user_backend;
	*pd = p;
	return 0;
}

static struct slot *slot_at(uint32_t idx)
{
	struct slot *pg = atomic_load_explicit(&pages[idx >> PAGE_SHIFT], memory_order_acquire);

	return pg ? &pg[idx & (PAGE_SLOTS - 1)] : NULL;
}

/* Rewrites slot |s| from |m| (NULL frees it); under mr_lock. */
static void slot_write(struct slot *s, struct esock_mr *m)
{
	unsigned q = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->stag, m ? m->stag : 0, memory_order_relaxed);
	atomic_store_explicit(&s->valid, m && m->valid, memory_order_relaxed);
	atomic_store_explicit(&s->base, m ? (uint64_t)(uintptr_t)m->addr : 0, memory_order_relaxed);
	atomic_store_explicit(&s->len, m ? m->len : 0, memory_order_relaxed);
	atomic_store_explicit(&s->access, m ? m->access : 0, memory_order_relaxed);
	atomic_store_explicit(&s->pd, m ? m->pd->id : 0, memory_order_relaxed);
	s->mr = m;
	atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

/* A free index, adding a page when all are taken; under mr_lock.  0 when full. */
static uint32_t index_alloc(void)
{
	for (uint32_t n = 0; n < mr_slots; n++) {
		uint32_t i = (mr_hint + n) % mr_slots;

		if (i && !slot_at(i)->mr) {
			mr_hint = i + 1;
			return i;
		}
	}
	if (mr_slots >= STAG_INDEX_MAX + 1)
		return 0;
	struct slot *pg = calloc(PAGE_SLOTS, sizeof(*pg));

	if (!pg)
		return 0;
	atomic_store_explicit(&pages[mr_slots >> PAGE_SHIFT], pg, memory_order_release);
	uint32_t i = mr_slots ? mr_slots : 1;

	mr_slots += PAGE_SLOTS;
	mr_hint = i + 1;
	return i;
}

int user_pd_free(struct esock_pd *pd)
{
	if (!pd)
		return -EINVAL;
	if (atomic_load(&pd->refs))
		return -EBUSY;
	free(pd);
	return 0;
}

int user_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access,
			      uint8_t key, struct esock_mr **mr)
{
	const unsigned all = ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE |
			     ESOCK_ACCESS_REMOTE_READ;
	struct esock_mr *m;
	uint32_t idx;

	if (!pd || !mr || (access & ~all) || (!addr && len) ||
	    ((access & ESOCK_ACCESS_REMOTE_WRITE) && !(access & ESOCK_ACCESS_LOCAL_WRITE)) ||
	    (uintptr_t)addr > UINT64_MAX - len)
		return -EINVAL;
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	m->be = &esock_user_backend;
	m->pd = pd;
	m->addr = addr;
	m->len = len;
	m->access = access;
	m->valid = true;
	pthread_mutex_lock(&mr_lock);
	idx = index_alloc();
	if (idx) {
		m->stag = idx << 8 | key;
		slot_write(slot_at(idx), m);
	}
	pthread_mutex_unlock(&mr_lock);
	if (!idx) {
		free(m);
		return -ENOMEM;
	}
	atomic_fetch_add(&pd->refs, 1);
	*mr = m;
	return 0;
}

uint32_t user_mr_stag(const struct esock_mr *mr)
{
	return mr->stag;
}

int user_mr_dereg(struct esock_mr *mr)
{
	if (!mr)
		return -EINVAL;
	pthread_mutex_lock(&mr_lock);
	slot_write(slot_at(mr->stag >> 8), NULL);
	pthread_mutex_unlock(&mr_lock);
	atomic_fetch_sub(&mr->pd->refs, 1);
	free(mr);
	return 0;
}

/* The MR of |stag| (index and key must match); under mr_lock. */
static struct esock_mr *find(uint32_t stag)
{
	struct slot *s = slot_at(stag >> 8);

	return s && s->mr && s->mr->stag == stag ? s->mr : NULL;
}

/*
 * Invalidation (local, or remote when |remote|: only STags with a remote
 * right may be invalidated by the peer).  0, -ENOENT, -EINVAL (already).
 */
static int invalidate(const struct esock_pd *pd, uint32_t stag, bool remote)
{
	const unsigned rights = ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE;
	int rc = 0;

	pthread_mutex_lock(&mr_lock);
	struct esock_mr *m = find(stag);

	if (!m || m->pd != pd || (remote && !(m->access & rights))) {
		rc = -ENOENT;
	} else if (!m->valid) {
		rc = -EINVAL;
	} else {
		m->valid = false;
		slot_write(slot_at(stag >> 8), m);
	}
	pthread_mutex_unlock(&mr_lock);
	return rc;
}

int user_mr_invalidate(struct esock_pd *pd, uint32_t stag)
{
	return invalidate(pd, stag, false);
}

int ep_mr_invalidate_remote(const struct esock_pd *pd, uint32_t stag)
{
	return invalidate(pd, stag, true);
}

int user_mr_rekey(struct esock_mr *mr, uint8_t key)
{
	pthread_mutex_lock(&mr_lock);
	mr->stag = (mr->stag & ~0xffu) | key;
	mr->valid = true;
	slot_write(slot_at(mr->stag >> 8), mr);
	pthread_mutex_unlock(&mr_lock);
	return 0;
}

bool user_mr_valid(const struct esock_mr *mr)
{
	struct esock_ddp_region r;

	return ep_mr_region(mr->stag, &r) == 0;
}

/* The DDP lookup: a valid STag's region, read without a lock (seqlock). */
int ep_mr_region(uint32_t stag, struct esock_ddp_region *out)
{
	struct slot *s = slot_at(stag >> 8);
	unsigned q;
	uint32_t st;
	bool valid;

	if (!s)
		return -ENOENT;
	do {
		while ((q = atomic_load_explicit(&s->seq, memory_order_acquire)) & 1)
			;
		st = atomic_load_explicit(&s->stag, memory_order_relaxed);
		valid = atomic_load_explicit(&s->valid, memory_order_relaxed);
		out->base = atomic_load_explicit(&s->base, memory_order_relaxed);
		out->len = atomic_load_explicit(&s->len, memory_order_relaxed);
		/* esock_access and the DDP access bits are the same values. */
		out->access = atomic_load_explicit(&s->access, memory_order_relaxed);
		out->pd = atomic_load_explicit(&s->pd, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&s->seq, memory_order_relaxed) != q);
	out->addr = (uint8_t *)(uintptr_t)out->base;
	return st == stag && st && valid ? 0 : -ENOENT;
}

int ep_mr_check_sge(const struct esock_pd *pd, const struct esock_sge *sge, unsigned need)
{
	struct esock_ddp_region r;

	if (sge->length == 0)
		return 0;
	if (ep_mr_region(sge->lkey, &r) < 0 || r.pd != pd->id || (r.access & need) != need)
		return -EACCES;
	if (sge->addr < r.base || sge->addr - r.base > r.len || sge->length > r.len - (sge->addr - r.base))
		return -EACCES;
	return 0;
}
