/* SPDX-License-Identifier: MIT */
/* FPDU streams for oracle and ddpdump tests (see streams.h). */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tests/oracle/streams.h"
#include "util/byteorder.h"


struct expect ex[MAXE];
size_t nex;
unsigned ngood_crc;

static void record_markers(struct expect *e, const uint8_t *w, size_t n, uint32_t pos)
{
	size_t o = 0;

	e->markers[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (((pos + (uint32_t)i) & 511) == 0)
			o += (size_t)snprintf(e->markers + o, sizeof(e->markers) - o, "%s%u", o ? "," : "",
					      esock_get_be16(w + i + 2));
	}
}

/* Frames one DDP segment (header octets + payload) and sends it. */
static void send_fpdu(struct conn *c, enum synth_dir dir, const uint8_t *hdr, size_t hl,
		      const uint8_t *pl, size_t plen, uint16_t mss)
{
	struct side *s = &c->side[dir];
	struct iovec v[2] = { { (void *)(uintptr_t)hdr, hl }, { (void *)(uintptr_t)pl, plen } };
	static uint8_t wire[70000];
	uint32_t pos = s->tx.pos;
	struct expect *e = &ex[nex];
	struct esock_rdmap_msg m;
	ssize_t n = esock_mpa_tx_build(&s->tx, v, 2);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(esock_mpa_tx_flatten(&s->tx, wire, sizeof(wire)), n);
	esock_mpa_tx_advance(&s->tx, (size_t)n);
	ck_assert_int_ge(esock_rdmap_decode(&m, hdr, hl, NULL, NULL), 0);
	ck_assert_uint_lt(nex, MAXE);
	memset(e, 0, sizeof(*e));
	e->stream = c->id;
	e->ulen = (uint32_t)(hl + plen);
	e->crc = c->crc;
	e->crc_wire = esock_get_be32(wire + n - 4);
	e->tagged = m.ddp.tagged;
	e->last = m.ddp.last;
	e->opcode = m.opcode;
	e->qn = m.ddp.qn;
	e->msn = m.ddp.msn;
	e->mo = m.ddp.mo;
	e->stag = m.ddp.stag;
	e->to = m.ddp.to;
	e->term_layer = m.opcode == ESOCK_RDMAP_TERMINATE ? m.u.term.t.layer : -1;
	e->term_etype = m.opcode == ESOCK_RDMAP_TERMINATE ? m.u.term.t.etype : -1;
	e->term_ecode = m.opcode == ESOCK_RDMAP_TERMINATE ? m.u.term.t.ecode : -1;
	if (c->markers)
		record_markers(e, wire, (size_t)n, pos);
	nex++;
	if (c->crc)
		ngood_crc++;
	c->sc.mss = mss;
	synth_send(&c->sc, dir, wire, (size_t)n);
	c->sc.mss = MSS;
}

/* Sends one RDMAP message, segmented at the connection's MULPDU. */
void streams_send_msg(struct conn *c, enum synth_dir dir, struct esock_rdmap_msg *m,
		     const uint8_t *payload, size_t len, uint16_t mss)
{
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(m->opcode);
	struct esock_ddp_seg seg;
	struct esock_ddp_hdr h;
	size_t off, n;

	if (!oi->tagged)
		m->ddp.msn = ++c->side[dir].msn[oi->qn];
	ck_assert_int_eq(esock_ddp_seg_init(&seg, &m->ddp, len, c->mulpdu - oi->hlen), 0);
	while (esock_ddp_seg_next(&seg, &h, &off, &n)) {
		struct esock_rdmap_msg s = *m;
		uint8_t hdr[ESOCK_RDMAP_HDR_MAX + 64];
		ssize_t hl;

		s.ddp = h;
		hl = esock_rdmap_hdr_encode(&s, hdr, sizeof(hdr));
		ck_assert_int_gt(hl, 0);
		send_fpdu(c, dir, hdr, (size_t)hl, payload + off, n, mss);
	}
}

void streams_open_conn(struct synth *cap, struct conn *c, unsigned id, bool crc, bool markers)
{
	static const uint8_t pd[] = "esock-oracle";
	struct esock_mpa_policy ini = { .rev = 2, .crc = crc, .markers_rx = markers, .markers_tx = true,
					.ird = 8, .ord = 8, .pd = pd, .pd_len = sizeof(pd) - 1 };
	struct esock_mpa_policy resp = { .rev = 2, .crc = crc, .markers_rx = markers, .markers_tx = true,
					 .ird = 4, .ord = 4 };
	struct esock_mpa_frame req, rep;
	struct esock_mpa_params pi, pr;
	uint8_t buf[ESOCK_MPA_FRAME_MAX];
	ssize_t n;

	memset(c, 0, sizeof(*c));
	c->id = id;
	c->crc = crc;
	c->markers = markers;
	synth_conn_open(cap, &c->sc, id, MSS);
	ck_assert_int_eq(esock_mpa_request_build(&ini, &req), 0);
	n = esock_mpa_frame_encode(&req, buf, sizeof(buf));
	synth_send(&c->sc, SYNTH_C2S, buf, (size_t)n);
	ck_assert_int_eq(esock_mpa_reply_build(&resp, &req, &rep, &pr, NULL), 0);
	n = esock_mpa_frame_encode(&rep, buf, sizeof(buf));
	synth_send(&c->sc, SYNTH_S2C, buf, (size_t)n);
	ck_assert_int_eq(esock_mpa_reply_check(&ini, &req, &rep, &pi, NULL), 0);
	ck_assert(pi.crc == crc && pi.markers_tx == markers && pr.markers_tx == markers);
	esock_mpa_tx_init(&c->side[SYNTH_C2S].tx, pi.crc, pi.markers_tx, 0);
	esock_mpa_tx_init(&c->side[SYNTH_S2C].tx, pr.crc, pr.markers_tx, 0);
	c->mulpdu = esock_mpa_mulpdu(MSS, markers);
}

/* Every opcode tshark 4.0 decodes, in both directions. */
void streams_run_conn(struct synth *cap, unsigned id, bool crc, bool markers)
{
	static uint8_t data[9000];
	struct conn c;
	struct esock_rdmap_msg m;
	struct esock_rdmap_term tm;
	struct esock_term t = { true, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED,
				ESOCK_TERM_DDP_U_NO_BUF, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D };
	uint8_t bad_seg[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + id);
	streams_open_conn(cap, &c, id, crc, markers);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	streams_send_msg(&c, SYNTH_C2S, &m, (const uint8_t *)"Hello, iWARP!", 13, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_SE);
	streams_send_msg(&c, SYNTH_C2S, &m, data, 3000, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_INV);
	m.inval_stag = 0x00abcd01;
	streams_send_msg(&c, SYNTH_C2S, &m, data, 100, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_SE_INV);
	m.inval_stag = 0x00abcd02;
	streams_send_msg(&c, SYNTH_C2S, &m, data, 0, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
	m.ddp.stag = 0x1234567;
	m.ddp.to = 0x00007f0000001000ull;
	streams_send_msg(&c, SYNTH_C2S, &m, data, 5000, 500); /* FPDUs span TCP segments */
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_REQ);
	m.u.read_req = (struct esock_rdmap_read_req){ 0x111, 0x2000, 4000, 0x222, 0x3000 };
	streams_send_msg(&c, SYNTH_C2S, &m, NULL, 0, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_RESP);
	m.ddp.stag = 0x111;
	m.ddp.to = 0x2000;
	streams_send_msg(&c, SYNTH_S2C, &m, data, 4000, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	streams_send_msg(&c, SYNTH_S2C, &m, data, 700, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_ATOMIC_REQ);
	m.u.atomic_req = (struct esock_rdmap_atomic_req){ .op = ESOCK_RDMAP_ATOMIC_FETCH_ADD, .req_id = 9,
							  .stag = 0x333, .to = 0x4000, .swap_add = 5 };
	streams_send_msg(&c, SYNTH_C2S, &m, NULL, 0, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_ATOMIC_RESP);
	m.u.atomic_resp = (struct esock_rdmap_atomic_resp){ 9, 42 };
	streams_send_msg(&c, SYNTH_S2C, &m, NULL, 0, MSS);
	/* The responder terminates: DDP untagged "no buffer" with the header copied. */
	bad_seg[13] = 3;
	esock_rdmap_term_build(&tm, &t, bad_seg, sizeof(bad_seg));
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_TERMINATE);
	m.u.term = tm;
	streams_send_msg(&c, SYNTH_S2C, &m, NULL, 0, MSS);
	synth_conn_close(&c.sc);
}

