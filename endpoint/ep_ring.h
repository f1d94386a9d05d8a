/* SPDX-License-Identifier: MIT */
/*
 * Bounded lock-free rings (Dmitry Vyukov's sequence-per-slot scheme, written
 * for this project).  Slot i carries a sequence number that says whose turn
 * it is: pos (free for the producer of lap pos), pos + 1 (published, for the
 * consumer), pos + size (released, free for the next lap).  Producers claim a
 * position with one CAS and publish with one release store; a consumer
 * reads published slots in order.  Send and receive queues are consumed in
 * place (the slot is released only when its work request completes); the
 * CQ is taken by copy, by any number of consumers.
 */
#ifndef ESOCK_ENDPOINT_EP_RING_H
#define ESOCK_ENDPOINT_EP_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct ep_ring {
	_Atomic uint32_t head;  /* next position to claim (producers) */
	_Atomic uint32_t tail;  /* next position to take (copying consumers) */
	uint32_t size;          /* a power of two */
	_Atomic uint32_t *seq;
};

/* Sets up a ring of at least |n| slots.  Returns 0 or -ENOMEM. */
static inline int ep_ring_init(struct ep_ring *r, uint32_t n)
{
	uint32_t size = 1;

	while (size < n)
		size <<= 1;
	r->seq = malloc(size * sizeof(*r->seq));
	if (!r->seq)
		return -ENOMEM;
	for (uint32_t i = 0; i < size; i++)
		atomic_init(&r->seq[i], i);
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->size = size;
	return 0;
}

static inline void ep_ring_fini(struct ep_ring *r)
{
	free(r->seq);
	r->seq = NULL;
}

static inline uint32_t ep_ring_idx(const struct ep_ring *r, uint32_t pos)
{
	return pos & (r->size - 1);
}

/*
 * Moves |ctr| (head or tail) one slot on when the slot there is in the state
 * |lag| says (0: free, for a producer; 1: published, for a consumer).  False
 * when it is not (ring full, or nothing published).
 */
static inline bool ep_ring_step(struct ep_ring *r, _Atomic uint32_t *ctr, uint32_t lag,
				uint32_t *pos)
{
	uint32_t p = atomic_load_explicit(ctr, memory_order_relaxed);

	for (;;) {
		uint32_t s = atomic_load_explicit(&r->seq[ep_ring_idx(r, p)], memory_order_acquire);
		int32_t d = (int32_t)(s - (p + lag));

		if (d == 0) {
			if (atomic_compare_exchange_weak_explicit(ctr, &p, p + 1, memory_order_relaxed,
								  memory_order_relaxed)) {
				*pos = p;
				return true;
			}
		} else if (d < 0) {
			return false;
		} else {
			p = atomic_load_explicit(ctr, memory_order_relaxed);
		}
	}
}

/* Claims the next position for a producer; false when the ring is full. */
static inline bool ep_ring_claim(struct ep_ring *r, uint32_t *pos)
{
	return ep_ring_step(r, &r->head, 0, pos);
}

/* Makes the slot of |pos| visible to the consumer. */
static inline void ep_ring_publish(struct ep_ring *r, uint32_t pos)
{
	atomic_store_explicit(&r->seq[ep_ring_idx(r, pos)], pos + 1, memory_order_release);
}

/* True when the slot of |pos| has been published (in-place consumers). */
static inline bool ep_ring_ready(const struct ep_ring *r, uint32_t pos)
{
	return atomic_load_explicit(&((struct ep_ring *)r)->seq[ep_ring_idx(r, pos)],
				    memory_order_acquire) == pos + 1;
}

/* Hands the slot of |pos| back to producers (after its use is over). */
static inline void ep_ring_release(struct ep_ring *r, uint32_t pos)
{
	atomic_store_explicit(&r->seq[ep_ring_idx(r, pos)], pos + r->size, memory_order_release);
}

/*
 * For copying consumers: claims the next published position; false when
 * none is.  The caller copies the slot out, then calls ep_ring_release.
 */
static inline bool ep_ring_take(struct ep_ring *r, uint32_t *pos)
{
	return ep_ring_step(r, &r->tail, 1, pos);
}

/* Published and not yet taken (an estimate while producers run). */
static inline uint32_t ep_ring_count(const struct ep_ring *r)
{
	return atomic_load(&((struct ep_ring *)r)->head) - atomic_load(&((struct ep_ring *)r)->tail);
}

#endif /* ESOCK_ENDPOINT_EP_RING_H */
