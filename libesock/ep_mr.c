/* SPDX-License-Identifier: MIT */
/*
 * Protection domains and memory registration: the process-wide STag table
 * (STag = 24-bit index << 8 | consumer key), local SGE checks, local and
 * remote (Send with Invalidate, RFC 5040 §5.1) invalidation.  Lookups copy
 * the region under one mutex, so a concurrent deregistration never leaves
 * the engine with a dangling entry.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libesock/ep.h"

#define STAG_INDEX_MAX 0xffffffu /* 24 bits */

static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct esock_mr **mr_tab; /* by index; 0 unused */
static uint32_t mr_cap, mr_hint = 1;
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
	pthread_atfork(fork_lock, fork_unlock, fork_unlock);
}

ESOCK_EXPORT int esock_pd_alloc(struct esock_pd **pd)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct esock_pd *p = calloc(1, sizeof(*p));

	pthread_once(&once, mr_atfork);
	if (!p)
		return -ENOMEM;
	p->id = atomic_fetch_add(&pd_ids, 1) + 1;
	*pd = p;
	return 0;
}

ESOCK_EXPORT int esock_pd_free(struct esock_pd *pd)
{
	if (!pd)
		return -EINVAL;
	if (atomic_load(&pd->refs))
		return -EBUSY;
	free(pd);
	return 0;
}

/* A free index, growing the table; under mr_lock.  0 when full. */
static uint32_t index_alloc(void)
{
	for (uint32_t n = 0; n < mr_cap; n++) {
		uint32_t i = (mr_hint + n) % mr_cap;

		if (i && !mr_tab[i]) {
			mr_hint = i + 1;
			return i;
		}
	}
	if (mr_cap > STAG_INDEX_MAX)
		return 0;
	uint32_t ncap = mr_cap ? mr_cap * 2 : 64;
	struct esock_mr **t = realloc(mr_tab, ncap * sizeof(*t));

	if (!t)
		return 0;
	memset(t + mr_cap, 0, (ncap - mr_cap) * sizeof(*t));
	mr_tab = t;
	uint32_t i = mr_cap ? mr_cap : 1;
	mr_cap = ncap;
	mr_hint = i + 1;
	return i;
}

ESOCK_EXPORT int esock_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access,
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
	pthread_mutex_lock(&mr_lock);
	idx = index_alloc();
	if (idx)
		mr_tab[idx] = m;
	pthread_mutex_unlock(&mr_lock);
	if (!idx) {
		free(m);
		return -ENOMEM;
	}
	m->pd = pd;
	m->addr = addr;
	m->len = len;
	m->access = access;
	m->stag = idx << 8 | key;
	m->valid = true;
	atomic_fetch_add(&pd->refs, 1);
	*mr = m;
	return 0;
}

ESOCK_EXPORT uint32_t esock_mr_stag(const struct esock_mr *mr)
{
	return mr->stag;
}

ESOCK_EXPORT int esock_mr_dereg(struct esock_mr *mr)
{
	if (!mr)
		return -EINVAL;
	pthread_mutex_lock(&mr_lock);
	mr_tab[mr->stag >> 8] = NULL;
	pthread_mutex_unlock(&mr_lock);
	atomic_fetch_sub(&mr->pd->refs, 1);
	free(mr);
	return 0;
}

/* The MR of |stag| (index and key must match); under mr_lock. */
static struct esock_mr *find(uint32_t stag)
{
	uint32_t i = stag >> 8;
	struct esock_mr *m = i < mr_cap ? mr_tab[i] : NULL;

	return m && m->stag == stag ? m : NULL;
}

ESOCK_EXPORT int esock_mr_invalidate(struct esock_pd *pd, uint32_t stag)
{
	int rc = 0;

	pthread_mutex_lock(&mr_lock);
	struct esock_mr *m = find(stag);

	if (!m || m->pd != pd)
		rc = -ENOENT;
	else if (!m->valid)
		rc = -EINVAL;
	else
		m->valid = false;
	pthread_mutex_unlock(&mr_lock);
	return rc;
}

int ep_mr_invalidate_remote(const struct esock_pd *pd, uint32_t stag)
{
	int rc = 0;

	pthread_mutex_lock(&mr_lock);
	struct esock_mr *m = find(stag);

	/* Only STags with a remote right may be invalidated by the peer. */
	if (!m || m->pd != pd || !(m->access & (ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE)))
		rc = -ENOENT;
	else if (!m->valid)
		rc = -EINVAL;
	else
		m->valid = false;
	pthread_mutex_unlock(&mr_lock);
	return rc;
}

ESOCK_EXPORT int esock_mr_rekey(struct esock_mr *mr, uint8_t key)
{
	pthread_mutex_lock(&mr_lock);
	mr->stag = (mr->stag & ~0xffu) | key;
	mr->valid = true;
	pthread_mutex_unlock(&mr_lock);
	return 0;
}

ESOCK_EXPORT bool esock_mr_valid(const struct esock_mr *mr)
{
	bool v;

	pthread_mutex_lock(&mr_lock);
	v = mr->valid;
	pthread_mutex_unlock(&mr_lock);
	return v;
}

/* The DDP lookup: a valid STag's region, as the placement checks need it. */
int ep_mr_region(uint32_t stag, struct esock_ddp_region *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&mr_lock);
	struct esock_mr *m = find(stag);

	if (m && m->valid) {
		out->base = (uint64_t)(uintptr_t)m->addr;
		out->len = m->len;
		out->addr = m->addr;
		/* esock_access and the DDP access bits are the same values. */
		out->access = m->access;
		out->pd = m->pd->id;
		rc = 0;
	}
	pthread_mutex_unlock(&mr_lock);
	return rc;
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
