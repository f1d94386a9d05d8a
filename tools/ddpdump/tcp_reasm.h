/* SPDX-License-Identifier: MIT */
/*
 * One direction of a TCP connection put back in order: retransmitted and
 * duplicate octets are dropped, out-of-order segments are held (bounded) until
 * the hole fills, and a hole that does not fill is reported as a gap so that
 * decoding can resynchronise.  Sequence numbers wrap (32-bit arithmetic).
 */
#ifndef DDPDUMP_TCP_REASM_H
#define DDPDUMP_TCP_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REASM_HOLD_MAX (4u << 20) /* octets held out of order per direction */

struct reasm_seg;

/* Receives in-order data (|data| NULL and |len| > 0 for a gap of |len| octets). */
typedef void (*reasm_deliver_fn)(void *ctx, const uint8_t *data, size_t len, bool seg_start);

struct reasm {
	bool started;
	bool from_syn;           /* started at the SYN: the first octet is stream octet 0 */
	uint32_t next;           /* next expected sequence number */
	struct reasm_seg *held;  /* out-of-order segments, sorted by seq */
	size_t held_bytes;
	uint64_t dup_bytes, gaps, gap_bytes, ooo_segs;
	reasm_deliver_fn deliver;
	void *ctx;
};

void reasm_init(struct reasm *r, reasm_deliver_fn fn, void *ctx);
/* Feeds one segment (SYN sets the initial sequence number). */
void reasm_segment(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len, bool syn);
/* Flushes held segments (end of capture or FIN), reporting holes as gaps. */
void reasm_flush(struct reasm *r);
void reasm_free(struct reasm *r);

#endif
