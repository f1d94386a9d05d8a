/* SPDX-License-Identifier: MIT */
/* TCP reassembly for one direction (see tcp_reasm.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tools/ddpdump/tcp_reasm.h"

struct reasm_seg {
	struct reasm_seg *next;
	uint32_t seq;
	size_t len;
	uint8_t data[];
};

static bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

void reasm_init(struct reasm *r, reasm_deliver_fn fn, void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->deliver = fn;
	r->ctx = ctx;
}

/* Delivers the part of [seq, seq+len) at or after r->next; drops the rest. */
static void deliver_from(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len)
{
	uint32_t skip = r->next - seq;

	if (seq_lt(seq, r->next)) {
		if (skip >= len) {
			r->dup_bytes += len;
			return;
		}
		r->dup_bytes += skip;
		data += skip;
		len -= skip;
		skip = 0;
	}
	r->deliver(r->ctx, data, len, skip == 0 && seq == r->next);
	r->next += (uint32_t)len;
}

/* Delivers held segments that have become contiguous. */
static void drain(struct reasm *r)
{
	while (r->held && !seq_lt(r->next, r->held->seq)) {
		struct reasm_seg *s = r->held;

		r->held = s->next;
		r->held_bytes -= s->len;
		deliver_from(r, s->seq, s->data, s->len);
		free(s);
	}
}

/* Gives up on the hole before the first held segment. */
static void skip_hole(struct reasm *r)
{
	uint32_t hole = r->held->seq - r->next;

	r->gaps++;
	r->gap_bytes += hole;
	r->deliver(r->ctx, NULL, hole, false);
	r->next = r->held->seq;
	drain(r);
}

static void hold(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len)
{
	struct reasm_seg *s = malloc(sizeof(*s) + len), **pp = &r->held;

	if (!s) /* out of memory: the octets count as lost */
		return;
	s->seq = seq;
	s->len = len;
	memcpy(s->data, data, len);
	while (*pp && seq_lt((*pp)->seq, seq))
		pp = &(*pp)->next;
	s->next = *pp;
	*pp = s;
	r->held_bytes += len;
	r->ooo_segs++;
	while (r->held && r->held_bytes > REASM_HOLD_MAX)
		skip_hole(r);
}

void reasm_segment(struct reasm *r, uint32_t seq, const uint8_t *data, size_t len, bool syn)
{
	if (syn) {
		if (!r->started) {
			r->started = true;
			r->from_syn = true;
			r->next = seq + 1;
		}
		seq++;
	}
	if (len == 0)
		return;
	if (!r->started) { /* capture began mid-stream */
		r->started = true;
		r->next = seq;
	}
	if (seq_lt(r->next, seq)) {
		hold(r, seq, data, len);
		return;
	}
	deliver_from(r, seq, data, len);
	drain(r);
}

void reasm_flush(struct reasm *r)
{
	while (r->held)
		skip_hole(r);
}

void reasm_free(struct reasm *r)
{
	while (r->held) {
		struct reasm_seg *s = r->held;

		r->held = s->next;
		free(s);
	}
	r->held_bytes = 0;
}
