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
#include "tests/oracle/streams.h"
#include "tests/oracle/tshark_run.h"
#include "util/byteorder.h"

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
		streams_run_conn(cap, id, id & 1, id & 2);
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
	streams_open_conn(cap, &c, 9, true, false);
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
