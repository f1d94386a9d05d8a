/* SPDX-License-Identifier: MIT */
/* The verbs backend's STag -> MR map (vb_keys.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "kpatch/verbs/vb_keys.h"

/* (STags differ in their upper 24 bits: a multiplicative hash spreads them.) */
static uint32_t home(uint32_t key, uint32_t cap)
{
	return (key * 2654435761u) & (cap - 1);
}

void vb_keys_init(struct vb_keys *k)
{
	pthread_rwlock_init(&k->lock, NULL);
	k->slot = NULL;
	k->cap = k->n = 0;
}

void vb_keys_fini(struct vb_keys *k)
{
	free(k->slot);
	k->slot = NULL;
	k->cap = k->n = 0;
	pthread_rwlock_destroy(&k->lock);
}

/* (Write lock held.)  The slot of |key|, or the empty one where it would go. */
static struct vb_key_slot *find(struct vb_key_slot *slot, uint32_t cap, uint32_t key)
{
	uint32_t i = home(key, cap);

	while (slot[i].val && slot[i].key != key)
		i = (i + 1) & (cap - 1);
	return &slot[i];
}

static int grow(struct vb_keys *k)
{
	uint32_t cap = k->cap ? k->cap * 2 : 16;
	struct vb_key_slot *s;

	if (cap < k->cap || !(s = calloc(cap, sizeof(*s))))
		return -ENOMEM;
	for (uint32_t i = 0; i < k->cap; i++)
		if (k->slot[i].val)
			*find(s, cap, k->slot[i].key) = k->slot[i];
	free(k->slot);
	k->slot = s;
	k->cap = cap;
	return 0;
}

int vb_keys_put(struct vb_keys *k, uint32_t key, void *val)
{
	struct vb_key_slot *s;
	int rc = 0;

	if (!val)
		return -EINVAL;
	pthread_rwlock_wrlock(&k->lock);
	if ((k->n + 1) * 2 > k->cap && (rc = grow(k)) < 0) {
		pthread_rwlock_unlock(&k->lock);
		return rc;
	}
	s = find(k->slot, k->cap, key);
	if (!s->val)
		k->n++;
	s->key = key;
	s->val = val;
	pthread_rwlock_unlock(&k->lock);
	return 0;
}

void vb_keys_del(struct vb_keys *k, uint32_t key)
{
	struct vb_key_slot *s;
	uint32_t i, j;

	pthread_rwlock_wrlock(&k->lock);
	if (!k->cap || !(s = find(k->slot, k->cap, key))->val) {
		pthread_rwlock_unlock(&k->lock);
		return;
	}
	/* Backward shift: later members of the probe run move up into the hole. */
	i = (uint32_t)(s - k->slot);
	k->slot[i].val = NULL;
	k->n--;
	for (j = (i + 1) & (k->cap - 1); k->slot[j].val; j = (j + 1) & (k->cap - 1)) {
		uint32_t h = home(k->slot[j].key, k->cap);

		/* Stays if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		k->slot[i] = k->slot[j];
		k->slot[j].val = NULL;
		i = j;
	}
	pthread_rwlock_unlock(&k->lock);
}

void *vb_keys_get(struct vb_keys *k, uint32_t key)
{
	void *v = NULL;

	pthread_rwlock_rdlock(&k->lock);
	if (k->cap) {
		uint32_t i = home(key, k->cap);

		for (; k->slot[i].val; i = (i + 1) & (k->cap - 1))
			if (k->slot[i].key == key) {
				v = k->slot[i].val;
				break;
			}
	}
	pthread_rwlock_unlock(&k->lock);
	return v;
}
