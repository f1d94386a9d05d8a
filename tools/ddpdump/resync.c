/* SPDX-License-Identifier: MIT */
/*
 * ddpdump resynchronisation: after a gap in the capture, a framing error, or
 * for a decode-as flow that starts mid-stream, find where the next FPDU
 * begins.  With markers, candidates come from the markers' FPDUPTRs (RFC 5044
 * §4.3 exists for exactly this); without, from octets that look like an FPDU
 * header (ULPDU_Length, DDP version 1, RDMAP version 1, a known opcode in the
 * right buffer model).  A candidate is confirmed by parsing ahead: one FPDU
 * whose CRC verifies when CRC is on, otherwise two FPDUs that decode.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tools/ddpdump/ddpdump.h"
#include "util/byteorder.h"

#define SCAN_KEEP (64u << 10) /* octets kept when a long scan finds nothing */

/* Cheap test of the four octets at |b|: could an FPDU header start here? */
static bool looks_like_header(const uint8_t *b)
{
	uint16_t ulen = esock_get_be16(b);
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(b[3] & ESOCK_RDMAP_CTRL_OPCODE);
	bool tagged = b[2] & ESOCK_DDP_CTRL_T;

	return (b[2] & 0x3f) == ESOCK_DDP_VERSION && (b[3] & 0xf0) == (ESOCK_RDMAP_VERSION << 6) && oi &&
	       oi->tagged == tagged && ulen >= esock_ddp_hdr_len(b[2]) + oi->hlen;
}

/* Parses ahead from hold[start]: 1 confirmed, 0 rejected, -1 needs more octets. */
static int trial(const struct dir_state *d, size_t start)
{
	static uint8_t buf[65536];
	struct esock_mpa_rx_cfg cfg = { .crc = d->crc, .markers = d->markers, .pos = d->pos + (uint32_t)start,
					.buf = buf, .buf_len = sizeof(buf) };
	struct esock_mpa_rx rx;
	size_t off = start;
	int good = 0;

	if (esock_mpa_rx_init(&rx, &cfg) < 0)
		return 0;
	while (off < d->hold_len) {
		struct esock_mpa_ev ev;
		struct esock_rdmap_msg m;
		ssize_t n = esock_mpa_rx_feed(&rx, d->hold + off, d->hold_len - off, &ev);

		if (n < 0)
			return 0;
		off += (size_t)n;
		if (ev.type != ESOCK_MPA_EV_ULPDU)
			continue;
		if (esock_rdmap_decode(&m, ev.data, ev.len, NULL, NULL) < 0)
			return 0;
		if (++good >= (d->crc ? 1 : 2))
			return 1;
	}
	return -1;
}

/* The next candidate start at or after |from|, or hold_len when none. */
static size_t next_candidate(const struct dir_state *d, size_t from)
{
	if (d->markers) {
		/* The first marker position at or after |from|, then every 512. */
		size_t m = from + ((ESOCK_MPA_MARKER_INTERVAL - ((d->pos + from) % ESOCK_MPA_MARKER_INTERVAL)) %
				   ESOCK_MPA_MARKER_INTERVAL);

		for (; m + ESOCK_MPA_MARKER_LEN <= d->hold_len; m += ESOCK_MPA_MARKER_INTERVAL) {
			uint16_t back = esock_get_be16(d->hold + m + 2);

			if (back == 0)
				return m; /* a leading marker: its FPDU starts here */
			if (back <= m && m - back >= from) {
				size_t hdr = m - back;

				/* Start at the FPDU's own leading marker when it has one. */
				return (hdr >= 4 && (d->pos + hdr - 4) % ESOCK_MPA_MARKER_INTERVAL == 0) ? hdr - 4 : hdr;
			}
		}
		return d->hold_len;
	}
	for (size_t i = from; i + 4 <= d->hold_len; i++)
		if (looks_like_header(d->hold + i))
			return i;
	return d->hold_len;
}

/*
 * Decode-as with markers on a stream joined mid-way: the marker phase is
 * unknown.  A phase is taken when, at every 512th octet from it, four octets
 * look like a marker (reserved octets zero, FPDUPTR a multiple of 4) and at
 * least two of the FPDU headers they point at look like headers.
 */
static bool phase_fits(const struct dir_state *d, size_t ph)
{
	unsigned headers = 0;

	for (size_t m = ph; m + ESOCK_MPA_MARKER_LEN <= d->hold_len; m += ESOCK_MPA_MARKER_INTERVAL) {
		uint16_t back = esock_get_be16(d->hold + m + 2);
		size_t hdr = back ? m - back : m + ESOCK_MPA_MARKER_LEN;

		if (d->hold[m] || d->hold[m + 1] || (back & 3) || back > m + ESOCK_MPA_MARKER_INTERVAL)
			return false;
		if (back > m || hdr + 4 > d->hold_len)
			continue; /* the header is before the capture or not here yet */
		/* The header it points at must look like one (no marker inside it). */
		if ((hdr - ph) % ESOCK_MPA_MARKER_INTERVAL > ESOCK_MPA_MARKER_INTERVAL - 4)
			continue;
		if (!looks_like_header(d->hold + hdr))
			return false;
		headers++;
	}
	return headers >= 2;
}

static bool find_marker_phase(struct dir_state *d)
{
	if (d->hold_len < 3 * ESOCK_MPA_MARKER_INTERVAL)
		return false;
	for (size_t ph = 0; ph < ESOCK_MPA_MARKER_INTERVAL; ph++) {
		if (!phase_fits(d, ph))
			continue;
		/* Positions are only used modulo 512: put hold[ph] on a marker. */
		d->pos = (uint32_t)(ESOCK_MPA_MARKER_INTERVAL - ph) % ESOCK_MPA_MARKER_INTERVAL;
		d->phase_known = true;
		out_note(d, "marker phase found at stream offset %zu", ph);
		return true;
	}
	return false;
}

static void resume_at(struct dir_state *d, size_t start)
{
	size_t n = d->hold_len - start;
	uint8_t *rest = malloc(n ? n : 1);

	if (!rest)
		return;
	memcpy(rest, d->hold + start, n);
	out_note(d, "resynchronised %s: skipped %zu octets", d->markers ? "by marker" :
		 d->crc ? "(header found, CRC verified)" : "(header heuristic: two FPDUs decode)", start);
	d->st.resyncs++;
	d->hold_len = 0;
	d->chunk_seg_start = false;
	dir_start_full(d, d->pos + (uint32_t)start);
	dir_feed_full(d, rest, n);
	free(rest);
}

void resync_feed(struct dir_state *d, const uint8_t *p, size_t len)
{
	size_t i;

	if (!d->hold_len)
		d->scan_from = 0;
	hold_append(d, p, len);
	if (d->markers && !d->phase_known && !find_marker_phase(d))
		return;
	for (i = next_candidate(d, d->scan_from); i < d->hold_len; i = next_candidate(d, i + 1)) {
		int t = trial(d, i);

		if (t == 1) {
			resume_at(d, i);
			return;
		}
		if (t < 0)
			break; /* wait for more octets */
	}
	d->scan_from = i;
	if (d->hold_len > (256u << 10) - SCAN_KEEP) { /* give up on the oldest octets */
		size_t drop = d->hold_len - SCAN_KEEP;

		memmove(d->hold, d->hold + drop, SCAN_KEEP);
		d->hold_len = SCAN_KEEP;
		d->pos += (uint32_t)drop;
		d->scan_from = d->scan_from > drop ? d->scan_from - drop : 0;
	}
}
