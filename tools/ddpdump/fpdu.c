/* SPDX-License-Identifier: MIT */
/*
 * ddpdump full-operation path: octets of one direction go through the
 * project's MPA receive parser (tolerant: CRC and marker errors are reported
 * per FPDU and decoding goes on), each ULPDU through the RDMAP/DDP decoder,
 * then to the output and the statistics (opcodes, messages, MSN gaps, Read
 * latency, FPDUs aligned to TCP segments).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tools/ddpdump/ddpdump.h"

void dir_start_full(struct dir_state *d, uint32_t pos)
{
	struct esock_mpa_rx_cfg cfg = { .crc = d->crc, .markers = d->markers, .pos = pos,
					.tolerant = true };

	if (!d->ulpdu)
		d->ulpdu = malloc(65536);
	cfg.buf = d->ulpdu;
	cfg.buf_len = d->ulpdu ? 65536 : 0;
	d->pos = pos;
	d->phase_known = true;
	d->mode = d->ulpdu && esock_mpa_rx_init(&d->rx, &cfg) == 0 ? D_FULL : D_IGNORE;
}

static void track_msn(struct dir_state *d, const struct esock_rdmap_msg *m)
{
	uint32_t qn = m->ddp.qn;

	if (m->ddp.tagged || qn > 3 || m->ddp.mo != 0)
		return;
	if (d->next_msn[qn] && m->ddp.msn != d->next_msn[qn])
		d->st.msn_gaps++;
	d->next_msn[qn] = m->ddp.msn + 1;
	if (!d->next_msn[qn])
		d->next_msn[qn] = 1; /* keep 0 for "unknown" */
}

/* Read Request in one direction, last Read Response segment in the other. */
static void track_reads(struct dir_state *d, const struct esock_rdmap_msg *m)
{
	struct dir_state *peer = &d->flow->d[!d->idx];

	if (m->opcode == ESOCK_RDMAP_READ_REQ) {
		d->rd_ts[(d->rd_head + d->rd_pending) % READ_TRACK] = d->ts;
		if (d->rd_pending < READ_TRACK)
			d->rd_pending++;
	} else if (m->opcode == ESOCK_RDMAP_READ_RESP && m->ddp.last && peer->rd_pending) {
		double lat = d->ts - peer->rd_ts[peer->rd_head];

		peer->rd_head = (peer->rd_head + 1) % READ_TRACK;
		peer->rd_pending--;
		d->st.reads_matched++;
		d->st.read_lat_sum += lat;
		if (lat > d->st.read_lat_max)
			d->st.read_lat_max = lat;
	}
}

static void on_fpdu(struct dir_state *d, const struct esock_mpa_ev *ev, bool aligned)
{
	struct esock_rdmap_decode_opts o = { false, opt.term_order };
	struct esock_rdmap_msg m;
	struct esock_term why = { 0 };
	ssize_t rc = esock_rdmap_decode(&m, ev->data, ev->len, &o, &why);
	int op = rc < 0 ? NOPC - 1 : m.opcode;

	d->st.fpdus++;
	d->st.bytes += ev->len;
	d->st.opc_fpdus[op]++;
	d->st.opc_bytes[op] += ev->len;
	d->st.aligned += aligned;
	d->st.crc_errors += (ev->flags & ESOCK_MPA_EVF_CRC_BAD) != 0;
	d->st.marker_errors += (ev->flags & ESOCK_MPA_EVF_MARKER_BAD) != 0;
	if (rc < 0) {
		d->st.decode_errors++;
	} else {
		d->st.messages += m.ddp.last;
		d->st.terminates += m.opcode == ESOCK_RDMAP_TERMINATE;
		track_msn(d, &m);
		track_reads(d, &m);
	}
	out_fpdu(d, ev, &m, (int)rc, &why, aligned);
}

void dir_feed_full(struct dir_state *d, const uint8_t *p, size_t len)
{
	bool at_seg_start = d->chunk_seg_start;

	while (len > 0 && d->mode == D_FULL) {
		struct esock_mpa_ev ev;
		uint32_t before = d->rx.pos;
		ssize_t n;

		if (esock_mpa_rx_idle(&d->rx)) /* an FPDU starts here */
			d->cur_aligned = at_seg_start;
		n = esock_mpa_rx_feed(&d->rx, p, len, &ev);
		if (n < 0) { /* framing lost (impossible length): look for the next FPDU */
			size_t used = d->rx.pos - before;

			out_note(d, "framing lost (ULPDU_Length %u too large), resynchronising",
				 d->rx.ulpdu_len);
			d->pos = d->rx.pos;
			d->mode = D_RESYNC;
			d->hold_len = 0;
			d->st.resyncs++;
			if (used < len)
				resync_feed(d, p + used, len - used);
			return;
		}
		if (ev.type == ESOCK_MPA_EV_ULPDU)
			on_fpdu(d, &ev, d->cur_aligned);
		at_seg_start = false;
		p += n;
		len -= (size_t)n;
	}
}
