/* SPDX-License-Identifier: MIT */
/*
 * A PD's STag -> MR map for the verbs backend: every SGE names its MR by
 * STag and the kernel wants the lkey, so each posted SGE is one lookup.
 * Open addressing with linear probing (a lookup touches a line or two,
 * whatever the number of MRs), under a reader-writer lock: posts from many
 * threads look up at once, registrations write.
 */
#ifndef ESOCK_KPATCH_VERBS_VB_KEYS_H
#define ESOCK_KPATCH_VERBS_VB_KEYS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct vb_keys {
	pthread_rwlock_t lock;
	struct vb_key_slot {
		uint32_t key;
		void *val; /* NULL: empty */
	} *slot;
	uint32_t cap, n; /* cap a power of two (or 0), n <= cap / 2 */
};

void vb_keys_init(struct vb_keys *k);
void vb_keys_fini(struct vb_keys *k);
/* Maps |key| to |val| (not NULL; an earlier value of |key| is replaced).  0 or -ENOMEM. */
int vb_keys_put(struct vb_keys *k, uint32_t key, void *val);
/* Forgets |key| (nothing when it is not there). */
void vb_keys_del(struct vb_keys *k, uint32_t key);
/* The value of |key|, or NULL. */
void *vb_keys_get(struct vb_keys *k, uint32_t key);

#endif /* ESOCK_KPATCH_VERBS_VB_KEYS_H */
