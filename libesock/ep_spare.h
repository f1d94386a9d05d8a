/* SPDX-License-Identifier: MIT */
/*
 * Per-thread spares of the memory a QP needs only while it moves data: the
 * transmit work area and the receive stage.  A QP takes one when it starts
 * to send or read and gives it back when nothing is left in it, so an idle
 * connection holds neither; a thread that serves QP after QP (the engine, an
 * application thread) takes and gives back the same block, no allocation.
 */
#ifndef ESOCK_LIBESOCK_EP_SPARE_H
#define ESOCK_LIBESOCK_EP_SPARE_H
#include <stdbool.h>
#include <stddef.h>

enum ep_spare_kind {
	EP_SPARE_TX,    /* struct ep_txwork */
	EP_SPARE_STAGE, /* EP_STAGE_LEN octets */
	EP_SPARE_KINDS
};

/*
 * A block of |size| octets of |kind| (always the same size per kind):
 * the thread's spare, or a new one (*fresh set; NULL when out of memory).
 */
void *ep_spare_get(enum ep_spare_kind kind, size_t size, bool *fresh);
/* Keeps |p| as the thread's spare of |kind| (freed when the thread ends), or frees it. */
void ep_spare_put(enum ep_spare_kind kind, void *p);
#endif /* ESOCK_LIBESOCK_EP_SPARE_H */
