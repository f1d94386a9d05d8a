/* SPDX-License-Identifier: MIT */
/* The verbs backend's device, protection domains and memory regions (see vb.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/backend.h"
#include "kpatch/verbs/vb.h"
#include "util/env.h"
#include "util/log.h"

static struct ibv_context *device;
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

/*
 * rdma_get_devices gives the contexts rdma_cm's ids use: a PD or CQ made on
 * one of them can carry a connection rdma_cm routes through that device.
 */
static void device_pick(void)
{
	const char *want = getenv("ESOCK_VERBS_DEVICE");
	struct ibv_context **all;
	int n = 0;

	if (vb_lib_load() < 0)
		return;
	if (!(all = rdma_get_devices(&n)) || n == 0) {
		log_warn("verbs backend: no RDMA device");
		if (all)
			rdma_free_devices(all);
		return;
	}
	for (int i = 0; i < n && !device; i++) {
		const struct ibv_device *d = all[i]->device;

		if (want && *want ? !strcmp(ibv_get_device_name(all[i]->device), want)
				  : d->transport_type == IBV_TRANSPORT_IWARP)
			device = all[i];
	}
	if (device)
		log_info("verbs backend: device %s", ibv_get_device_name(device->device));
	else
		log_warn("verbs backend: no %s device%s%s", want && *want ? "RDMA" : "iWARP",
			 want && *want ? " named " : "", want && *want ? want : "");
	/* (the list stays: its contexts are rdma_cm's for the life of the process) */
}

struct ibv_context *vb_device(void)
{
	pthread_once(&device_once, device_pick);
	return device;
}

bool vb_have_iwarp_device(void)
{
	struct ibv_context **all;
	bool found = false;
	int n = 0;

	if (vb_lib_load() < 0 || !(all = rdma_get_devices(&n)))
		return false;
	for (int i = 0; i < n; i++)
		found |= all[i]->device->transport_type == IBV_TRANSPORT_IWARP;
	rdma_free_devices(all);
	return found;
}

int vb_pd_alloc(struct esock_pd **out)
{
	struct ibv_context *ctx = vb_device();
	struct vb_pd *p;

	if (!out)
		return -EINVAL;
	if (!ctx)
		return -ENODEV;
	if (!(p = calloc(1, sizeof(*p))))
		return -ENOMEM;
	/*
	 * Kernel siw sends a short payload that crosses a page from the wrong
	 * places (vb_qp.c, split_short).  ESOCK_VERBS_SPLIT_SHORT=0: not split,
	 * to show that defect (tests/interop/siw-patches.sh).
	 */
	p->split_short = !strncmp(ctx->device->name, "siw", 3) && esock_env_int("ESOCK_VERBS_SPLIT_SHORT", 1, 0, 1);
	if (!(p->pd = ibv_alloc_pd(ctx))) {
		free(p);
		return -ENOMEM;
	}
	p->be = &esock_verbs_backend;
	p->ctx = ctx;
	vb_keys_init(&p->keys);
	*out = (struct esock_pd *)p;
	return 0;
}

int vb_pd_free(struct esock_pd *pd)
{
	struct vb_pd *p = (struct vb_pd *)pd;
	int rc;

	if (atomic_load(&p->refs))
		return -EBUSY;
	if ((rc = ibv_dealloc_pd(p->pd)) != 0)
		return -rc;
	vb_keys_fini(&p->keys);
	free(p);
	return 0;
}

static int access_of(unsigned access)
{
	int a = 0;

	if (access & ESOCK_ACCESS_LOCAL_WRITE)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (access & ESOCK_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & ESOCK_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	return a;
}

/*
 * The consumer key is not applied: the kernel gives the STag (rkey) at
 * registration and plain verbs cannot choose its low octet (kpatch/README.md).
 */
int vb_mr_reg(struct esock_pd *pd, void *addr, size_t len, unsigned access, uint8_t key,
	      struct esock_mr **out)
{
	const unsigned all = ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE |
			     ESOCK_ACCESS_REMOTE_READ;
	struct vb_pd *p = (struct vb_pd *)pd;
	struct vb_mr *m;

	(void)key;
	if (!out || (access & ~all) || (!addr && len) ||
	    ((access & ESOCK_ACCESS_REMOTE_WRITE) && !(access & ESOCK_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	if (!(m->mr = ibv_reg_mr(p->pd, addr, len, access_of(access)))) {
		int err = errno ? errno : ENOMEM;

		free(m);
		return -err;
	}
	m->be = &esock_verbs_backend;
	m->pd = p;
	if (vb_keys_put(&p->keys, m->mr->rkey, m) < 0 ||
	    (m->mr->lkey != m->mr->rkey && vb_keys_put(&p->keys, m->mr->lkey, m) < 0)) {
		vb_keys_del(&p->keys, m->mr->rkey);
		ibv_dereg_mr(m->mr);
		free(m);
		return -ENOMEM;
	}
	atomic_fetch_add(&p->refs, 1);
	*out = (struct esock_mr *)m;
	return 0;
}

uint32_t vb_mr_stag(const struct esock_mr *mr)
{
	return ((const struct vb_mr *)mr)->mr->rkey;
}

int vb_mr_dereg(struct esock_mr *mr)
{
	struct vb_mr *m = (struct vb_mr *)mr;
	struct vb_pd *p = m->pd;
	uint32_t rkey = m->mr->rkey, lkey = m->mr->lkey;
	int rc;

	if ((rc = ibv_dereg_mr(m->mr)) != 0)
		return -rc;
	vb_keys_del(&p->keys, rkey);
	vb_keys_del(&p->keys, lkey);
	atomic_fetch_sub(&p->refs, 1);
	free(m);
	return 0;
}

bool vb_mr_valid(const struct esock_mr *mr)
{
	return mr != NULL; /* (no local invalidation through plain verbs) */
}

/*
 * SGEs name MRs by STag, as everywhere in esock; the kernel wants the lkey,
 * which on an iWARP device is the same number: the map says so for sure.
 */
bool vb_lkey(struct vb_pd *pd, uint32_t stag, uint32_t *lkey)
{
	struct vb_mr *m = vb_keys_get(&pd->keys, stag);

	if (m)
		*lkey = m->mr->lkey;
	return m != NULL;
}
