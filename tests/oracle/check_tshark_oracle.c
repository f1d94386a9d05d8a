/* SPDX-License-Identifier: MIT */
/*
 * Independent oracle: FPDU streams produced by our encoders (MPA v2 start
 * frames, then every RDMAP opcode tshark knows, with CRC on/off and markers
 * on/off, multi-segment messages, FPDUs spanning TCP segments) are written to
 * a pcap and decoded by tshark's iWARP dissectors.  tshark must report the
 * same start-frame flags, ULPDU lengths, CRCs (all "Good"), marker pointers,
 * DDP/RDMAP fields and Terminate reasons.  A negative control (one corrupted
 * CRC) must be reported "Bad".  Exits 77 without tshark unless
 * ESOCK_REQUIRE_TSHARK is set.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <esock/wire.h>

#include "tests/oracle/pcap_synth.h"
#include "tests/oracle/tshark_run.h"
#include "util/byteorder.h"

#define MAXE 512
#define MSS 1448

/* What one FPDU should decode to. */
struct expect {
	unsigned stream;
	uint32_t ulen;
	uint32_t crc_wire;      /* the 4 CRC octets read big-endian (tshark's view) */
	bool crc;
	int tagged, last, opcode;
	uint32_t qn, msn, mo, stag;
	uint64_t to;
	int term_layer, term_etype, term_ecode;
	char markers[64];       /* FPDUPTR values, comma-separated */
};

static struct expect ex[MAXE];
static size_t nex;
static unsigned ngood_crc;

struct side {
	struct esock_mpa_tx tx;
	uint32_t msn[4];
};

struct conn {
	struct synth_conn sc;
	struct side side[2];
	unsigned id;
	bool crc, markers;
	size_t mulpdu;
};

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
static void send_msg(struct conn *c, enum synth_dir dir, struct esock_rdmap_msg *m,
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

static void open_conn(struct synth *cap, struct conn *c, unsigned id, bool crc, bool markers)
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
static void run_conn(struct synth *cap, unsigned id, bool crc, bool markers)
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
	open_conn(cap, &c, id, crc, markers);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	send_msg(&c, SYNTH_C2S, &m, (const uint8_t *)"Hello, iWARP!", 13, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_SE);
	send_msg(&c, SYNTH_C2S, &m, data, 3000, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_INV);
	m.inval_stag = 0x00abcd01;
	send_msg(&c, SYNTH_C2S, &m, data, 100, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_SE_INV);
	m.inval_stag = 0x00abcd02;
	send_msg(&c, SYNTH_C2S, &m, data, 0, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
	m.ddp.stag = 0x1234567;
	m.ddp.to = 0x00007f0000001000ull;
	send_msg(&c, SYNTH_C2S, &m, data, 5000, 500); /* FPDUs span TCP segments */
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_REQ);
	m.u.read_req = (struct esock_rdmap_read_req){ 0x111, 0x2000, 4000, 0x222, 0x3000 };
	send_msg(&c, SYNTH_C2S, &m, NULL, 0, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_RESP);
	m.ddp.stag = 0x111;
	m.ddp.to = 0x2000;
	send_msg(&c, SYNTH_S2C, &m, data, 4000, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	send_msg(&c, SYNTH_S2C, &m, data, 700, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_ATOMIC_REQ);
	m.u.atomic_req = (struct esock_rdmap_atomic_req){ .op = ESOCK_RDMAP_ATOMIC_FETCH_ADD, .req_id = 9,
							  .stag = 0x333, .to = 0x4000, .swap_add = 5 };
	send_msg(&c, SYNTH_C2S, &m, NULL, 0, MSS);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_ATOMIC_RESP);
	m.u.atomic_resp = (struct esock_rdmap_atomic_resp){ 9, 42 };
	send_msg(&c, SYNTH_S2C, &m, NULL, 0, MSS);
	/* The responder terminates: DDP untagged "no buffer" with the header copied. */
	bad_seg[13] = 3;
	esock_rdmap_term_build(&tm, &t, bad_seg, sizeof(bad_seg));
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_TERMINATE);
	m.u.term = tm;
	send_msg(&c, SYNTH_S2C, &m, NULL, 0, MSS);
	synth_conn_close(&c.sc);
}

static uint64_t num(const char *s)
{
	return (s && *s) ? strtoull(s, NULL, 0) : UINT64_MAX;
}

static const char *first_of(const struct tshark_row *r, int from, int to)
{
	for (int i = from; i <= to && i < r->ncol; i++)
		if (*r->col[i])
			return r->col[i];
	return "";
}

static const char *const fields[] = {
	"tcp.stream", "iwarp_mpa.ulpdulength", "iwarp_mpa.crc_check", "iwarp_mpa.crc",
	"iwarp_ddp.tagged_flag", "iwarp_ddp.last_flag", "iwarp_rdma.opcode", "iwarp_ddp.qn",
	"iwarp_ddp.msn", "iwarp_ddp.mo", "iwarp_ddp.stag", "iwarp_ddp.tagged_offset",
	"iwarp_rdma.term_layer", "iwarp_rdma.term_etype_rdma", "iwarp_rdma.term_etype_ddp",
	"iwarp_rdma.term_etype_llp", "iwarp_rdma.term_errcode_rdma", "iwarp_rdma.term_errcode_ddp_tagged",
	"iwarp_rdma.term_errcode_ddp_untagged", "iwarp_rdma.term_errcode_llp",
	"iwarp_mpa.marker_fpduptr", NULL
};

static void compare_row(const struct expect *e, const struct tshark_row *r, size_t i)
{
	char what[64];

	snprintf(what, sizeof(what), "FPDU %zu (stream %u opcode %d)", i, e->stream, e->opcode);
	ck_assert_msg(num(r->col[0]) == e->stream, "%s: tcp.stream %s", what, r->col[0]);
	ck_assert_msg(num(r->col[1]) == e->ulen, "%s: ulpdulength %s want %u", what, r->col[1], e->ulen);
	if (e->crc)
		ck_assert_msg(num(r->col[2]) == e->crc_wire, "%s: crc_check %s want 0x%08x", what, r->col[2], e->crc_wire);
	ck_assert_msg((int)num(r->col[4]) == e->tagged, "%s: tagged %s", what, r->col[4]);
	ck_assert_msg((int)num(r->col[5]) == e->last, "%s: last %s", what, r->col[5]);
	ck_assert_msg((int)num(r->col[6]) == e->opcode, "%s: opcode %s", what, r->col[6]);
	if (e->tagged) {
		ck_assert_msg(num(r->col[10]) == e->stag, "%s: stag %s", what, r->col[10]);
		ck_assert_msg(num(r->col[11]) == e->to, "%s: to %s", what, r->col[11]);
	} else {
		ck_assert_msg(num(r->col[7]) == e->qn, "%s: qn %s", what, r->col[7]);
		ck_assert_msg(num(r->col[8]) == e->msn, "%s: msn %s want %u", what, r->col[8], e->msn);
		ck_assert_msg(num(r->col[9]) == e->mo, "%s: mo %s want %u", what, r->col[9], e->mo);
	}
	if (e->term_layer >= 0) {
		ck_assert_msg((int)num(r->col[12]) == e->term_layer, "%s: term layer %s", what, r->col[12]);
		ck_assert_msg((int)num(first_of(r, 13, 15)) == e->term_etype, "%s: term etype", what);
		ck_assert_msg((int)num(first_of(r, 16, 19)) == e->term_ecode, "%s: term code", what);
	}
	if (e->markers[0])
		ck_assert_msg(strcmp(r->col[20], e->markers) == 0, "%s: markers '%s' want '%s'", what,
			      r->col[20], e->markers);
}

static char pcap_path[256], bad_path[256];

static void require_tshark(void)
{
	if (!tshark_path()) {
		fprintf(stderr, "tshark not found: install the Debian package tshark\n");
		exit(getenv("ESOCK_REQUIRE_TSHARK") ? EXIT_FAILURE : 77);
	}
}

START_TEST(test_fields_agree)
{
	struct synth *cap = synth_open(pcap_path);
	struct tshark_out out;
	size_t k = 0;

	ck_assert_ptr_nonnull(cap);
	nex = ngood_crc = 0;
	for (unsigned id = 0; id < 4; id++)
		run_conn(cap, id, id & 1, id & 2);
	ck_assert_int_eq(synth_close(cap), 0);
	ck_assert_int_eq(tshark_run(pcap_path, "iwarp_mpa.fpdu", fields, &out), 0);
	for (size_t i = 0; i < out.nrows; i++) {
		ck_assert_msg(k < nex, "tshark shows more FPDUs than sent");
		ck_assert_msg(!strchr(out.rows[i].col[1], ','), "one FPDU per frame expected");
		compare_row(&ex[k], &out.rows[i], k);
		k++;
	}
	ck_assert_msg(k == nex, "tshark decoded %zu of %zu FPDUs", k, nex);
	tshark_out_free(&out);
}
END_TEST

START_TEST(test_start_frames)
{
	static const char *const f[] = { "tcp.stream", "iwarp_mpa.marker_flag", "iwarp_mpa.crc_flag",
					 "iwarp_mpa.rej_flag", "iwarp_mpa.rev", "iwarp_mpa.pdlength", NULL };
	struct tshark_out out;

	ck_assert_int_eq(tshark_run(pcap_path, "iwarp_mpa.req || iwarp_mpa.rep", f, &out), 0);
	ck_assert_uint_eq(out.nrows, 8);
	for (size_t i = 0; i < out.nrows; i++) {
		unsigned id = (unsigned)num(out.rows[i].col[0]);

		ck_assert_uint_eq(num(out.rows[i].col[1]), (id & 2) ? 1 : 0);
		ck_assert_uint_eq(num(out.rows[i].col[2]), (id & 1) ? 1 : 0);
		ck_assert_uint_eq(num(out.rows[i].col[3]), 0);
		ck_assert_uint_eq(num(out.rows[i].col[4]), 2);
		/* Request: IRD/ORD word + "esock-oracle"; Reply: the word only. */
		ck_assert_uint_eq(num(out.rows[i].col[5]), (i % 2 == 0) ? 16 : 4);
	}
	tshark_out_free(&out);
}
END_TEST

START_TEST(test_crc_verdicts)
{
	struct tshark_out out;
	unsigned good = 0;
	const char *p;

	ck_assert_int_eq(tshark_run(pcap_path, "iwarp_mpa", NULL, &out), 0);
	for (p = out.text; (p = strstr(p, "(Good CRC32)")); p++)
		good++;
	ck_assert_ptr_null(strstr(out.text, "Bad CRC32"));
	ck_assert_ptr_null(strstr(out.text, "Malformed"));
	ck_assert_uint_eq(good, ngood_crc);
	ck_assert_uint_gt(good, 0);
	tshark_out_free(&out);
}
END_TEST

START_TEST(test_negative_control)
{
	/* One flipped CRC octet must be caught by tshark: the check can fail. */
	struct synth *cap = synth_open(bad_path);
	struct conn c;
	struct esock_rdmap_msg m;
	uint8_t hdr[32];
	ssize_t hl;
	struct tshark_out out;

	ck_assert_ptr_nonnull(cap);
	open_conn(cap, &c, 9, true, false);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	m.ddp.msn = 1;
	hl = esock_rdmap_hdr_encode(&m, hdr, sizeof(hdr));
	{
		struct iovec v[2] = { { hdr, (size_t)hl }, { (void *)"corrupt", 7 } };
		uint8_t wire[64];
		ssize_t n = esock_mpa_tx_build(&c.side[0].tx, v, 2);

		esock_mpa_tx_flatten(&c.side[0].tx, wire, sizeof(wire));
		wire[n - 1] ^= 0x20;
		synth_send(&c.sc, SYNTH_C2S, wire, (size_t)n);
	}
	synth_conn_close(&c.sc);
	ck_assert_int_eq(synth_close(cap), 0);
	ck_assert_int_eq(tshark_run(bad_path, "iwarp_mpa", NULL, &out), 0);
	ck_assert_ptr_nonnull(strstr(out.text, "Bad CRC32"));
	tshark_out_free(&out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tshark_oracle");
	TCase *tc = tcase_create("oracle");
	SRunner *sr;
	int failed;

	require_tshark();
	snprintf(pcap_path, sizeof(pcap_path), "oracle-%d.pcap", (int)getpid());
	snprintf(bad_path, sizeof(bad_path), "oracle-bad-%d.pcap", (int)getpid());
	tcase_add_test(tc, test_fields_agree);
	tcase_add_test(tc, test_start_frames);
	tcase_add_test(tc, test_crc_verdicts);
	tcase_add_test(tc, test_negative_control);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK); /* tests share the capture */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (!failed && !getenv("ESOCK_KEEP_PCAP")) {
		unlink(pcap_path);
		unlink(bad_path);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
