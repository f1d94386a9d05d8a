/* SPDX-License-Identifier: MIT */
/*
 * ddpdump connection tracking: a flow table keyed by the TCP 4-tuple, MPA
 * start-frame detection per direction (Request, then Reply, which fixes CRC
 * and markers per direction), decode-as for captures without start frames,
 * and the full-operation path: FPDUs through the project's MPA parser in
 * tolerant mode, RDMAP/DDP decoding, statistics.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ddpdump/ddpdump.h"

#define NBUCKET 4096
#define HOLD_MAX (256u << 10)

static struct flow *table[NBUCKET];
static unsigned nflows;

static unsigned hash_key(const struct tcp_seg *s)
{
	unsigned h = (unsigned)(s->sport ^ s->dport) * 2654435761u;

	for (int i = 0; i < 16; i++)
		h ^= (unsigned)(s->src[i] ^ s->dst[i]) << (i % 4 * 8);
	return (h ^ (h >> 16)) % NBUCKET;
}

static bool is_port(int port)
{
	for (int i = 0; i < opt.nports; i++)
		if (opt.ports[i] == port)
			return true;
	return false;
}

static void deliver(void *ctx, const uint8_t *data, size_t len, bool seg_start);

static void dir_init(struct flow *f, int idx)
{
	struct dir_state *d = &f->d[idx];

	d->flow = f;
	d->idx = idx;
	d->mode = D_START;
	reasm_init(&d->reasm, deliver, d);
}

static struct flow *flow_new(const struct tcp_seg *s, unsigned b)
{
	struct flow *f = calloc(1, sizeof(*f));
	bool swap;

	if (!f)
		return NULL;
	/* Endpoint 0 is the one that opened the connection, when we can tell. */
	swap = ((s->flags & TCPF_SYN) && (s->flags & 0x10)) || (!(s->flags & TCPF_SYN) && is_port(s->sport));
	f->id = nflows++;
	f->af = s->af;
	memcpy(f->addr[swap], s->src, 16);
	memcpy(f->addr[!swap], s->dst, 16);
	f->port[swap] = s->sport;
	f->port[!swap] = s->dport;
	f->initiator = -1;
	dir_init(f, 0);
	dir_init(f, 1);
	f->next = table[b];
	table[b] = f;
	return f;
}

static struct flow *flow_find(const struct tcp_seg *s, int *dir)
{
	unsigned b = hash_key(s);

	for (struct flow *f = table[b]; f; f = f->next) {
		if (f->af != s->af)
			continue;
		if (f->port[0] == s->sport && f->port[1] == s->dport && !memcmp(f->addr[0], s->src, 16) &&
		    !memcmp(f->addr[1], s->dst, 16)) {
			*dir = 0;
			return f;
		}
		if (f->port[1] == s->sport && f->port[0] == s->dport && !memcmp(f->addr[1], s->src, 16) &&
		    !memcmp(f->addr[0], s->dst, 16)) {
			*dir = 1;
			return f;
		}
	}
	return NULL;
}

void hold_append(struct dir_state *d, const uint8_t *p, size_t len)
{
	uint8_t *n;

	if (d->hold_len + len > HOLD_MAX) { /* keep the newest octets only */
		out_note(d, "dropping %zu held octets (no start frames yet)", d->hold_len);
		d->hold_len = 0;
		if (len > HOLD_MAX)
			return;
	}
	n = realloc(d->hold, d->hold_len + len);
	if (!n)
		return;
	d->hold = n;
	memcpy(d->hold + d->hold_len, p, len);
	d->hold_len += len;
}

/* Both start frames seen: fix CRC/markers per direction and go. */
static void flow_established(struct flow *f)
{
	int ini = f->initiator;

	for (int i = 0; i < 2; i++) {
		struct dir_state *d = &f->d[i];

		d->crc = f->req.crc || f->rep.crc;
		/* M in a frame asks the *other* side to send markers. */
		d->markers = i == ini ? f->rep.markers : f->req.markers;
		if (f->rep.reject) {
			d->mode = D_IGNORE;
			continue;
		}
		if (d->mode == D_WAIT_REPLY || d->mode == D_START) {
			uint8_t *held = d->hold;
			size_t n = d->hold_len;

			d->hold = NULL;
			d->hold_len = 0;
			dir_start_full(d, 0);
			if (n)
				dir_feed_full(d, held, n);
			free(held);
		}
	}
}

static bool key_prefix_ok(const uint8_t *p, size_t n)
{
	static const char req[] = "MPA ID Req Frame", rep[] = "MPA ID Rep Frame";

	if (n > ESOCK_MPA_KEY_LEN)
		n = ESOCK_MPA_KEY_LEN;
	return !memcmp(p, req, n) || !memcmp(p, rep, n);
}

/* Records a decoded start frame; the Reply completes the setup. */
static void got_start_frame(struct dir_state *d, const struct esock_mpa_frame *fr)
{
	struct flow *f = d->flow;

	out_start_frame(d, fr);
	d->mode = D_WAIT_REPLY;
	if (!fr->reply) {
		f->req = *fr;
		f->req.pd = NULL;
		f->have_req = true;
		f->initiator = d->idx;
		return;
	}
	f->rep = *fr;
	f->rep.pd = NULL;
	f->have_rep = true;
	if (f->initiator < 0)
		f->initiator = !d->idx;
	flow_established(f);
}

/*
 * Collects a start frame in |d|; returns octets used, or -1 when not MPA (then
 * d->sf holds only octets of earlier calls).
 */
static long take_start_frame(struct dir_state *d, const uint8_t *p, size_t len)
{
	size_t want = d->sf_len < ESOCK_MPA_HDR_LEN ? ESOCK_MPA_HDR_LEN : esock_mpa_frame_need(d->sf, d->sf_len);
	size_t n = want - d->sf_len < len ? want - d->sf_len : len;
	struct esock_mpa_frame fr;
	bool reply = d->flow->have_req && d->flow->initiator != d->idx;

	memcpy(d->sf + d->sf_len, p, n);
	d->sf_len += n;
	if (!key_prefix_ok(d->sf, d->sf_len))
		goto not_mpa;
	if (d->sf_len < ESOCK_MPA_HDR_LEN)
		return (long)n;
	want = esock_mpa_frame_need(d->sf, d->sf_len);
	if (want > sizeof(d->sf))
		goto not_mpa;
	if (d->sf_len < want)
		return (long)n;
	if (esock_mpa_frame_decode(&fr, reply, d->sf, d->sf_len, 0, NULL) < 0 &&
	    (reply || esock_mpa_frame_decode(&fr, true, d->sf, d->sf_len, 0, NULL) < 0))
		goto not_mpa;
	got_start_frame(d, &fr);
	return (long)n;
not_mpa:
	d->sf_len -= n; /* this call's octets stay with the caller */
	return -1;
}

/* Decides what a flow whose first octets are not a start frame is. */
static void not_start_frame(struct dir_state *d)
{
	struct flow *f = d->flow;

	if (!is_port(f->port[0]) && !is_port(f->port[1])) {
		d->mode = D_IGNORE;
		return;
	}
	/* Decode-as: full operation with the assumed options; find an FPDU start. */
	d->crc = opt.assume_crc == 1;
	d->markers = opt.assume_markers == 1;
	/* A stream seen from its SYN starts at position 0; otherwise find the phase. */
	d->phase_known = d->reasm.from_syn;
	d->mode = D_RESYNC;
	out_note(d, "no MPA start frame: decoding as MPA (CRC %s, markers %s), looking for an FPDU",
		 d->crc ? "on" : "off", d->markers ? "on" : "off");
}

static void deliver(void *ctx, const uint8_t *data, size_t len, bool seg_start)
{
	struct dir_state *d = ctx;

	if (!data) { /* a hole that did not fill */
		d->st.gaps++;
		d->st.gap_bytes += len;
		out_note(d, "gap: %zu octets missing from the capture", len);
		if (d->mode == D_FULL || d->mode == D_RESYNC) {
			/* d->pos is the stream position of hold[0] in resync mode. */
			d->pos = d->mode == D_FULL ? d->rx.pos + (uint32_t)len
						   : d->pos + (uint32_t)(d->hold_len + len);
			d->mode = D_RESYNC;
			d->hold_len = 0;
			d->scan_from = 0;
		}
		return;
	}
	d->chunk_seg_start = seg_start;
	while (len > 0 && d->mode == D_START) {
		long n = take_start_frame(d, data, len);

		if (n < 0) {
			uint8_t tmp[ESOCK_MPA_FRAME_MAX];
			size_t k = d->sf_len;

			memcpy(tmp, d->sf, k);
			d->sf_len = 0;
			not_start_frame(d);
			if (d->mode == D_RESYNC)
				resync_feed(d, tmp, k);
			break;
		}
		data += n;
		len -= (size_t)n;
		d->chunk_seg_start = false;
	}
	if (len == 0)
		return;
	switch (d->mode) {
	case D_WAIT_REPLY:
		hold_append(d, data, len);
		break;
	case D_FULL:
		dir_feed_full(d, data, len);
		break;
	case D_RESYNC:
		resync_feed(d, data, len);
		break;
	default:
		break;
	}
}

void flows_segment(const struct tcp_seg *s)
{
	int dir = 0;
	struct flow *f = flow_find(s, &dir);
	struct dir_state *d;

	if (!f) {
		f = flow_new(s, hash_key(s));
		if (!f || flow_find(s, &dir) != f)
			return;
	}
	d = &f->d[dir];
	d->ts = s->ts;
	if (s->len < s->wire_len)
		out_note(d, "segment cut by the snaplen: %u of %u payload octets captured", s->len, s->wire_len);
	reasm_segment(&d->reasm, s->seq, s->data, s->len, s->flags & TCPF_SYN);
	if (s->len < s->wire_len) /* the rest is missing: a gap the reassembler will see */
		d->reasm.next += s->wire_len - s->len;
	if (s->flags & (TCPF_FIN | TCPF_RST))
		reasm_flush(&d->reasm);
}

static void add_stats(struct stats *t, const struct stats *s)
{
	const uint64_t *a = (const uint64_t *)s;
	uint64_t *b = (uint64_t *)t;

	for (size_t i = 0; i < offsetof(struct stats, read_lat_sum) / sizeof(uint64_t); i++)
		b[i] += a[i];
	t->read_lat_sum += s->read_lat_sum;
	if (s->read_lat_max > t->read_lat_max)
		t->read_lat_max = s->read_lat_max;
}

void flows_finish(void)
{
	for (unsigned b = 0; b < NBUCKET; b++)
		for (struct flow *f = table[b]; f; f = f->next)
			for (int i = 0; i < 2; i++)
				reasm_flush(&f->d[i].reasm);
}

void flows_print_stats(void)
{
	struct stats total = { 0 };

	for (unsigned b = 0; b < NBUCKET; b++) {
		for (struct flow *f = table[b]; f; f = f->next) {
			for (int i = 0; i < 2; i++) {
				struct dir_state *d = &f->d[i];
				char src[64], dst[64], label[160];

				d->st.dup_bytes = d->reasm.dup_bytes;
				if (d->mode == D_IGNORE && !d->st.fpdus)
					continue;
				endpoint_str(d, false, src, sizeof(src));
				endpoint_str(d, true, dst, sizeof(dst));
				snprintf(label, sizeof(label), "%s > %s", src, dst);
				out_stats(label, &d->st);
				add_stats(&total, &d->st);
			}
		}
	}
	out_stats("total", &total);
}

void flows_free_all(void)
{
	for (unsigned b = 0; b < NBUCKET; b++) {
		while (table[b]) {
			struct flow *f = table[b];

			table[b] = f->next;
			for (int i = 0; i < 2; i++) {
				reasm_free(&f->d[i].reasm);
				free(f->d[i].hold);
				free(f->d[i].ulpdu);
			}
			free(f);
		}
	}
	nflows = 0;
}
