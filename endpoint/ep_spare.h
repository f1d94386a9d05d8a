/* SPDX-License-Identifier: MIT */
/*
 * Spares of the memory a QP needs only while it moves data: the transmit
 * work area and the receive stage.  A QP takes one when it starts to send
 * or read and gives it back when nothing is left in it, so an idle
 * connection holds neither; threads that serve QP after QP (the engine,
 * application threads) take and give back the same few blocks, no allocation.
 */
#ifndef ESOCK_ENDPOINT_EP_SPARE_H
#define ESOCK_ENDPOINT_EP_SPARE_H
#include <stdbool.h>
#include <stddef.h>

enum ep_spare_kind {
	EP_SPARE_TX,    /* struct ep_txwork */
	EP_SPARE_STAGE, /* EP_STAGE_LEN octets */
	EP_SPARE_SPILL, /* EP_SEND_NOW_BIG octets: what TCP did not take of a message sent now */
	EP_SPARE_KINDS
};

/*
 * A block of |size| octets of |kind| (always the same size per kind):
 * a spare, or a new one (*fresh set; NULL when out of memory).
 */
void *ep_spare_get(enum ep_spare_kind kind, size_t size, bool *fresh);
/* Keeps |p| as a spare of |kind|, or frees it when there are enough. */
void ep_spare_put(enum ep_spare_kind kind, void *p);
#endif /* ESOCK_ENDPOINT_EP_SPARE_H */
