/* SPDX-License-Identifier: MIT */
/*
 * ddpdump against known captures: our own FPDU streams (every opcode, CRC and
 * markers on/off, FPDUs spanning segments) decoded field by field as the
 * encoders meant and as tshark decodes them; damaged captures (flipped bit,
 * lost segment with and without markers, duplicates, reordering, snaplen cut,
 * truncated file, garbage) decoded as far as possible without a crash;
 * decode-as without start frames; gzip input; clear errors.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <pcap/pcap.h>

#include "tests/oracle/pcap_synth.h"
#include "tests/oracle/streams.h"
#include "tests/oracle/tshark_run.h"

struct rec {
	char type[16];
	unsigned conn, ulen, opcode, t, l, qn, msn, mo, stag, markers, term_layer, term_etype, term_ecode,
		term_hdrct;
	char term_order[8];
	unsigned sink_stag, size, src_stag;
	unsigned long long sink_to, src_to;
	unsigned long long to;
	char crc[8];
	bool has_op;
};

/* Every FPDU of the last run, however long the capture (a fixed cap failed long ones). */
static struct rec *recs;
static size_t nrec, caprec;

/* Start frames as ddpdump shows them (JSON). */
struct sf {
	bool reply;
	unsigned rev, m, c, r, s, pd_len;
};
static struct sf sfs[64];
static size_t nsf;
static char out[1 << 22];
static int exit_status;
static unsigned gaps, resyncs, snap_notes, phase_notes;

static const char *ddpdump(void)
{
	static char path[512];
	const char *b = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/tools/ddpdump/ddpdump", b ? b : ".");
	return path;
}

static unsigned long long field(const char *line, const char *key, bool *found)
{
	char k[40];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(line, k);
	if (found)
		*found = p != NULL;
	if (!p)
		return 0;
	p += strlen(k);
	if (*p == '"')
		p++;
	return strtoull(p, NULL, 0);
}

static void sfield(const char *line, const char *key, char *dst, size_t cap)
{
	char k[40];
	const char *p;
	size_t n = 0;

	snprintf(k, sizeof(k), "\"%s\":\"", key);
	dst[0] = '\0';
	p = strstr(line, k);
	if (!p)
		return;
	for (p += strlen(k); *p && *p != '"' && n + 1 < cap; p++)
		dst[n++] = *p;
	dst[n] = '\0';
}

/* Runs ddpdump -T json on |pcap| with |args|; fills recs[]. */
static void run_json(const char *pcap, const char *args)
{
	char cmd[1024];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s -T json %s -r %s", ddpdump(), args, pcap);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	exit_status = pclose(p);
	ck_assert_msg(WIFEXITED(exit_status), "ddpdump died: %s", cmd);
	nrec = gaps = resyncs = snap_notes = phase_notes = 0;
	nsf = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct rec *r;

		if (nrec == caprec) {
			caprec = caprec ? 2 * caprec : 1024;
			recs = realloc(recs, caprec * sizeof(*recs));
			ck_assert_ptr_nonnull(recs);
		}
		r = &recs[nrec];

		if (strstr(line, "\"note\":\"gap"))
			gaps++;
		if (strstr(line, "\"note\":\"resynchronised"))
			resyncs++;
		if (strstr(line, "snaplen"))
			snap_notes++;
		if (strstr(line, "marker phase found"))
			phase_notes++;
		if ((strstr(line, "\"type\":\"mpa_request\"") || strstr(line, "\"type\":\"mpa_reply\"")) && nsf < 64) {
			struct sf *f = &sfs[nsf++];

			f->reply = strstr(line, "mpa_reply") != NULL;
			f->rev = (unsigned)field(line, "rev", NULL);
			f->m = (unsigned)field(line, "m", NULL);
			f->c = (unsigned)field(line, "c", NULL);
			f->r = (unsigned)field(line, "r", NULL);
			f->s = (unsigned)field(line, "s", NULL);
			f->pd_len = (unsigned)field(line, "pd_len", NULL);
		}
		if (!strstr(line, "\"type\":\"fpdu\""))
			continue;
		memset(r, 0, sizeof(*r));
		r->conn = (unsigned)field(line, "conn", NULL);
		r->ulen = (unsigned)field(line, "ulpdu_len", NULL);
		r->opcode = (unsigned)field(line, "opcode", &r->has_op);
		r->t = (unsigned)field(line, "t", NULL);
		r->l = (unsigned)field(line, "l", NULL);
		r->qn = (unsigned)field(line, "qn", NULL);
		r->msn = (unsigned)field(line, "msn", NULL);
		r->mo = (unsigned)field(line, "mo", NULL);
		r->stag = (unsigned)field(line, "stag", NULL);
		r->to = field(line, "to", NULL);
		r->markers = (unsigned)field(line, "markers", NULL);
		r->term_layer = (unsigned)field(line, "term_layer", NULL);
		r->term_etype = (unsigned)field(line, "term_etype", NULL);
		r->term_ecode = (unsigned)field(line, "term_ecode", NULL);
		r->term_hdrct = (unsigned)field(line, "term_hdrct", NULL);
		sfield(line, "term_order", r->term_order, sizeof(r->term_order));
		r->sink_stag = (unsigned)field(line, "sink_stag", NULL);
		r->sink_to = field(line, "sink_to", NULL);
		r->size = (unsigned)field(line, "size", NULL);
		r->src_stag = (unsigned)field(line, "src_stag", NULL);
		r->src_to = field(line, "src_to", NULL);
		sfield(line, "crc", r->crc, sizeof(r->crc));
		nrec++;
	}
}

static unsigned count_markers(const char *list)
{
	unsigned n = *list ? 1 : 0;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

static void same_as_expected(const struct rec *r, const struct expect *e, size_t i)
{
	ck_assert_msg(r->has_op, "record %zu undecoded", i);
	/* ddpdump numbers connections in order of appearance; make_all's ids match. */
	ck_assert_msg((r->conn == e->stream || e->stream >= 4) && r->ulen == e->ulen &&
			      (int)r->opcode == e->opcode,
		      "record %zu: conn %u len %u op %u, want %u %u %d", i, r->conn, r->ulen, r->opcode,
		      e->stream, e->ulen, e->opcode);
	ck_assert_int_eq((int)r->t, e->tagged);
	ck_assert_int_eq((int)r->l, e->last);
	if (e->tagged) {
		ck_assert_uint_eq(r->stag, e->stag);
		ck_assert(r->to == e->to);
	} else {
		ck_assert_uint_eq(r->qn, e->qn);
		ck_assert_uint_eq(r->msn, e->msn);
		ck_assert_uint_eq(r->mo, e->mo);
	}
	ck_assert_str_eq(r->crc, e->crc ? "ok" : "off");
	ck_assert_uint_eq(r->markers, count_markers(e->markers));
	if (e->term_layer >= 0) {
		ck_assert_int_eq((int)r->term_layer, e->term_layer);
		ck_assert_int_eq((int)r->term_ecode, e->term_ecode);
	}
}

static char cap_path[256];

static void make_all(const char *path)
{
	struct synth *cap = synth_open(path);

	ck_assert_ptr_nonnull(cap);
	nex = ngood_crc = 0;
	for (unsigned id = 0; id < 4; id++)
		streams_run_conn(cap, id, id & 1, id & 2);
	ck_assert_int_eq(synth_close(cap), 0);
}

START_TEST(test_matches_encoders)
{
	make_all(cap_path);
	run_json(cap_path, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_uint_eq(nrec, nex);
	for (size_t i = 0; i < nex; i++)
		same_as_expected(&recs[i], &ex[i], i);
}
END_TEST

static const char *first_nonempty(char **c, int from, int to)
{
	for (int i = from; i <= to; i++)
		if (c[i] && *c[i])
			return c[i];
	return "";
}

/* How many comma-separated items |col| holds (tshark's aggregator). */
static unsigned items(const char *col)
{
	unsigned n = 1;

	for (; *col; col++)
		n += *col == ',';
	return n;
}

/* Item |k| of a comma-separated tshark column, as a number (0 when absent). */
static unsigned long long item_ull(const char *col, unsigned k)
{
	while (k-- && col)
		if ((col = strchr(col, ',')))
			col++;
	return col ? strtoull(col, NULL, 0) : 0;
}

static unsigned long item_ul(const char *col, unsigned k)
{
	return (unsigned long)item_ull(col, k);
}

/*
 * ddpdump and tshark must agree on every FPDU of |pcap| for every field both
 * show, and on the CRC verdicts.  Returns the number of FPDUs compared.
 */
static size_t compare_with_tshark(const char *pcap)
{
	static const char *const f[] = { "iwarp_mpa.ulpdulength", "iwarp_rdma.opcode", "iwarp_ddp.tagged_flag",
					 "iwarp_ddp.last_flag", "iwarp_ddp.msn", "iwarp_ddp.mo", "iwarp_ddp.stag",
					 "iwarp_ddp.tagged_offset", "iwarp_ddp.qn", "iwarp_rdma.term_layer",
					 "iwarp_rdma.term_etype_rdma", "iwarp_rdma.term_etype_ddp",
					 "iwarp_rdma.term_etype_llp", "iwarp_rdma.term_errcode_rdma",
					 "iwarp_rdma.term_errcode_ddp_tagged", "iwarp_rdma.term_errcode_ddp_untagged",
					 "iwarp_rdma.term_errcode_llp", "iwarp_rdma.sinkstag", "iwarp_rdma.sinkto",
					 "iwarp_rdma.rdmardsz", "iwarp_rdma.srcstag", "iwarp_rdma.srcto", NULL };
	static const char *const fs[] = { "iwarp_mpa.rep", "iwarp_mpa.rev", "iwarp_mpa.marker_flag",
					  "iwarp_mpa.crc_flag", "iwarp_mpa.rej_flag", "iwarp_mpa.pdlength", NULL };
	struct tshark_out t, v, sft;
	size_t good_ddpdump = 0, good_tshark = 0;
	const char *p;

	run_json(pcap, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_int_eq(tshark_run(pcap, "iwarp_mpa.fpdu", f, &t), 0);
	/*
	 * One tshark row per frame; a TCP segment carrying several FPDUs gives
	 * comma-separated values, one per FPDU for the fields every FPDU has, one
	 * per tagged (untagged, Terminate, Read Request) FPDU for the others.
	 */
	size_t n = 0;
	for (size_t row = 0; row < t.nrows; row++) {
		char **c = t.rows[row].col;
		unsigned nf = items(c[0]), ti = 0, ui = 0, termi = 0, rri = 0;

		for (unsigned j = 0; j < nf; j++, n++) {
			ck_assert_msg(n < nrec, "%s: tshark has more FPDUs than ddpdump's %zu", pcap, nrec);
			const struct rec *r = &recs[n];

			ck_assert_msg(r->has_op, "%s: FPDU %zu undecoded", pcap, n);
			ck_assert_uint_eq(item_ul(c[0], j), r->ulen);
			ck_assert_uint_eq(item_ul(c[1], j), r->opcode);
			ck_assert_uint_eq(item_ul(c[2], j), r->t);
			ck_assert_uint_eq(item_ul(c[3], j), r->l);
			if (r->t) {
				ck_assert_uint_eq(item_ul(c[6], ti), r->stag);
				ck_assert(item_ull(c[7], ti) == r->to);
				ti++;
			} else {
				ck_assert_uint_eq(item_ul(c[4], ui), r->msn);
				ck_assert_uint_eq(item_ul(c[5], ui), r->mo);
				ck_assert_uint_eq(item_ul(c[8], ui), r->qn);
				ui++;
			}
			/* Terminate reason: both tools must agree (siw's bit order puts Layer
			 * and EType where both readings coincide for the codes seen). */
			if (r->opcode == ESOCK_RDMAP_TERMINATE && r->term_layer == item_ul(c[9], termi)) {
				ck_assert_uint_eq(item_ul(first_nonempty(c, 10, 12), termi), r->term_etype);
				ck_assert_uint_eq(item_ul(first_nonempty(c, 13, 16), termi), r->term_ecode);
			}
			if (r->opcode == ESOCK_RDMAP_TERMINATE)
				termi++;
			if (r->opcode == ESOCK_RDMAP_READ_REQ) {
				ck_assert_uint_eq(item_ul(c[17], rri), r->sink_stag);
				ck_assert(item_ull(c[18], rri) == r->sink_to);
				ck_assert_uint_eq(item_ul(c[19], rri), r->size);
				ck_assert_uint_eq(item_ul(c[20], rri), r->src_stag);
				ck_assert(item_ull(c[21], rri) == r->src_to);
				rri++;
			}
			good_ddpdump += !strcmp(r->crc, "ok");
		}
	}
	ck_assert_msg(n == nrec, "%s: tshark %zu FPDUs, ddpdump %zu", pcap, n, nrec);
	tshark_out_free(&t);
	/* Start frames: same order, flags, revision and PD_Length (the RFC 6581
	 * word counts in tshark's PD_Length, not in ddpdump's ULP private data). */
	ck_assert_int_eq(tshark_run(pcap, "iwarp_mpa.req || iwarp_mpa.rep", fs, &sft), 0);
	ck_assert_uint_eq(sft.nrows, nsf);
	for (size_t i = 0; i < nsf; i++) {
		char **c = sft.rows[i].col;

		ck_assert_int_eq(*c[0] != '\0', sfs[i].reply);
		ck_assert_uint_eq(strtoul(c[1], NULL, 0), sfs[i].rev);
		ck_assert_uint_eq(strtoul(c[2], NULL, 0), sfs[i].m);
		ck_assert_uint_eq(strtoul(c[3], NULL, 0), sfs[i].c);
		ck_assert_uint_eq(strtoul(c[4], NULL, 0), sfs[i].r);
		ck_assert_uint_eq(strtoul(c[5], NULL, 0), sfs[i].pd_len + ((sfs[i].s && sfs[i].rev == 2) ? 4 : 0));
	}
	tshark_out_free(&sft);
	ck_assert_int_eq(tshark_run(pcap, "iwarp_mpa", NULL, &v), 0);
	for (p = v.text; (p = strstr(p, "(Good CRC32)")); p++)
		good_tshark++;
	ck_assert_ptr_null(strstr(v.text, "Bad CRC32"));
	ck_assert_uint_eq(good_tshark, good_ddpdump);
	tshark_out_free(&v);
	return nrec;
}

static bool have_tshark(void)
{
	if (tshark_path())
		return true;
	ck_assert_msg(!getenv("ESOCK_REQUIRE_TSHARK"), "tshark required but not found");
	return false;
}

START_TEST(test_matches_tshark)
{
	if (!have_tshark())
		return;
	make_all(cap_path);
	ck_assert_uint_eq(compare_with_tshark(cap_path), nex);
}
END_TEST

/* Real kernel siw captures (tests/data, made with tests/interop/siw-rig.sh). */
static void siw_path(char *buf, size_t cap, const char *name)
{
	const char *src = getenv("srcdir");

	snprintf(buf, cap, "%s/tests/data/%s", src ? src : ".", name);
}

START_TEST(test_siw_rping)
{
	char path[512];
	unsigned n[16] = { 0 };

	siw_path(path, sizeof(path), "siw-rping.pcap");
	run_json(path, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	for (size_t i = 0; i < nrec; i++) {
		ck_assert(recs[i].has_op);
		ck_assert_str_eq(recs[i].crc, "off"); /* siw's default */
		n[recs[i].opcode & 15]++;
	}
	/* rping, 3 iterations: per iteration 4 Sends, a Read Request/Response, a Write. */
	ck_assert_uint_eq(n[ESOCK_RDMAP_SEND], 12);
	ck_assert_uint_eq(n[ESOCK_RDMAP_READ_REQ], 3);
	ck_assert_uint_eq(n[ESOCK_RDMAP_READ_RESP], 3);
	ck_assert_uint_eq(n[ESOCK_RDMAP_WRITE], 3);
	if (have_tshark())
		compare_with_tshark(path);
}
END_TEST

/* perftest over rdma_cm (-R): parameter exchange by Sends, then the test QP. */
START_TEST(test_siw_perftest)
{
	static const struct { const char *file; uint8_t op, op2; } c[] = {
		{ "siw-perftest-send.pcap", ESOCK_RDMAP_SEND, ESOCK_RDMAP_SEND },
		{ "siw-perftest-write.pcap", ESOCK_RDMAP_WRITE, ESOCK_RDMAP_WRITE },
		{ "siw-perftest-read.pcap", ESOCK_RDMAP_READ_REQ, ESOCK_RDMAP_READ_RESP },
	};
	char path[512];
	unsigned n[16] = { 0 };

	siw_path(path, sizeof(path), c[_i].file);
	run_json(path, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_uint_gt(nrec, 10);
	for (size_t i = 0; i < nrec; i++) {
		ck_assert(recs[i].has_op);
		n[recs[i].opcode & 15]++;
	}
	ck_assert_uint_ge(n[c[_i].op], 5);
	ck_assert_uint_ge(n[c[_i].op2], 5);
	if (have_tshark())
		compare_with_tshark(path);
}
END_TEST

START_TEST(test_siw_crc)
{
	char path[512];

	siw_path(path, sizeof(path), "siw-rping-crc.pcap");
	run_json(path, "");
	ck_assert_uint_eq(nrec, 21);
	for (size_t i = 0; i < nrec; i++)
		ck_assert_str_eq(recs[i].crc, "ok"); /* our CRC32C agrees with the kernel's */
	if (have_tshark())
		compare_with_tshark(path);
}
END_TEST

START_TEST(test_siw_terminate)
{
	char path[512];
	const struct rec *t;

	siw_path(path, sizeof(path), "siw-rping-term.pcap");
	run_json(path, "");
	ck_assert_uint_gt(nrec, 0);
	t = &recs[nrec - 1];
	ck_assert_uint_eq(t->opcode, ESOCK_RDMAP_TERMINATE);
	/* siw's bit-field order: M and D at 0x01/0x02 of octet 22; the length
	 * (18 + 4 + 2 + 14 = 38) proves the copied tagged header is there. */
	ck_assert_str_eq(t->term_order, "siw");
	ck_assert_uint_eq(t->ulen, 38);
	ck_assert_uint_eq(t->term_layer, ESOCK_TERM_LAYER_DDP);
	ck_assert_uint_eq(t->term_etype, ESOCK_TERM_DDP_ETYPE_TAGGED);
	ck_assert_uint_eq(t->term_ecode, ESOCK_TERM_DDP_T_BASE_BOUNDS);
	ck_assert_uint_eq(t->term_hdrct, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
	if (have_tshark())
		compare_with_tshark(path);
}
END_TEST

/* Every link type ddpdump reads, IPv4 and IPv6: same decoding. */
START_TEST(test_link_types)
{
	enum synth_link link = (enum synth_link)(_i / 2);
	int ipv6 = _i % 2;
	struct synth *cap = synth_open_link(cap_path, link, ipv6);

	ck_assert_ptr_nonnull(cap);
	nex = ngood_crc = 0;
	streams_run_conn(cap, 5, true, true);
	ck_assert_int_eq(synth_close(cap), 0);
	run_json(cap_path, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_msg(nrec == nex, "link %d ipv6 %d: %zu of %zu FPDUs", link, ipv6, nrec, nex);
	for (size_t i = 0; i < nex; i++)
		same_as_expected(&recs[i], &ex[i], i);
	if (ipv6)
		ck_assert_ptr_nonnull(strstr(out, "[2001:db8::1]:40005"));
}
END_TEST

/* One connection (CRC on, markers as given) with a fault on data segment |at|. */
static void make_faulty(const char *path, bool markers, enum synth_fault fault, unsigned at)
{
	struct synth *cap = synth_open(path);
	struct conn c;
	struct esock_rdmap_msg m;
	static uint8_t data[9000];

	ck_assert_ptr_nonnull(cap);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	nex = ngood_crc = 0;
	streams_open_conn(cap, &c, 5, true, markers);
	synth_fault(&c.sc, fault, at);
	for (int i = 0; i < 6; i++) {
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
		m.ddp.stag = 0x77;
		m.ddp.to = 0x1000u * (unsigned)i;
		streams_send_msg(&c, SYNTH_C2S, &m, data, 3000, 500);
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
		streams_send_msg(&c, SYNTH_C2S, &m, data, 100 + (size_t)i, MSS);
	}
	synth_conn_close(&c.sc);
	ck_assert_int_eq(synth_close(cap), 0);
}

START_TEST(test_flipped_bit)
{
	make_faulty(cap_path, false, SYNTH_FLIP, 4);
	run_json(cap_path, "");
	ck_assert_uint_eq(nrec, nex);
	for (size_t i = 0, bad = 0; i < nrec; i++) {
		bad += !strcmp(recs[i].crc, "BAD");
		ck_assert_uint_le(bad, 1);
		if (i == nrec - 1)
			ck_assert_uint_eq(bad, 1);
	}
}
END_TEST

/* _i: 0 without markers (resync by header + CRC), 1 with markers. */
START_TEST(test_lost_segment)
{
	bool markers = _i;

	make_faulty(cap_path, markers, SYNTH_DROP, 7);
	run_json(cap_path, "");
	ck_assert_uint_eq(gaps, 1);
	ck_assert_uint_eq(resyncs, 1);
	/* Decoding goes on: the tail after the loss decodes exactly as sent. */
	ck_assert_uint_ge(nrec, nex - 3);
	ck_assert_uint_lt(nrec, nex);
	for (size_t k = 1; k <= 10; k++)
		same_as_expected(&recs[nrec - k], &ex[nex - k], nrec - k);
}
END_TEST

START_TEST(test_dup_and_swap)
{
	size_t n0;

	make_faulty(cap_path, true, SYNTH_NONE, 0);
	run_json(cap_path, "");
	n0 = nrec;
	for (int f = SYNTH_DUP; f <= SYNTH_SWAP; f++) {
		make_faulty(cap_path, true, (enum synth_fault)f, 5);
		run_json(cap_path, "");
		ck_assert_uint_eq(nrec, n0);
		ck_assert_uint_eq(gaps, 0);
		for (size_t i = 0; i < nrec; i++)
			same_as_expected(&recs[i], &ex[i], i);
	}
}
END_TEST

START_TEST(test_snaplen_and_truncated_file)
{
	struct synth *cap = synth_open(cap_path);
	FILE *f;
	long size;

	/* Frames cut to 300 octets: noted, decoded as far as possible. */
	synth_set_snaplen(cap, 300);
	nex = 0;
	streams_run_conn(cap, 6, true, false);
	ck_assert_int_eq(synth_close(cap), 0);
	run_json(cap_path, "");
	ck_assert_uint_gt(snap_notes, 0);
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	/* A file cut in the middle: what precedes decodes, exit status 1. */
	make_all(cap_path);
	f = fopen(cap_path, "r+");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	ck_assert_int_eq(ftruncate(fileno(f), size / 2 + 7), 0);
	fclose(f);
	run_json(cap_path, "");
	ck_assert_uint_gt(nrec, 10);
	ck_assert_uint_lt(nrec, nex);
	ck_assert_int_eq(WEXITSTATUS(exit_status), 1);
}
END_TEST

START_TEST(test_decode_as_and_garbage)
{
	struct synth *cap = synth_open(cap_path);
	struct conn c;
	struct esock_rdmap_msg m;
	uint8_t junk[3000];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + (i >> 3));
	/* A connection whose start frames are missing. */
	memset(&c, 0, sizeof(c));
	c.id = 7;
	c.crc = true;
	c.mulpdu = esock_mpa_mulpdu(MSS, false);
	synth_conn_open(cap, &c.sc, 7, MSS);
	esock_mpa_tx_init(&c.side[0].tx, true, false, 0);
	esock_mpa_tx_init(&c.side[1].tx, true, false, 0);
	nex = 0;
	for (int i = 0; i < 5; i++) {
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
		streams_send_msg(&c, SYNTH_C2S, &m, junk, 200, MSS);
	}
	synth_conn_close(&c.sc);
	/* And a connection of garbage on the same decode-as port range. */
	synth_conn_open(cap, &c.sc, 8, MSS);
	synth_send(&c.sc, SYNTH_C2S, junk, sizeof(junk));
	synth_conn_close(&c.sc);
	ck_assert_int_eq(synth_close(cap), 0);
	run_json(cap_path, "");
	ck_assert_uint_eq(nrec, 0); /* no start frames, no -p: not MPA */
	run_json(cap_path, "-p 20007 -p 20008 --crc");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_uint_eq(nrec, 5);
	for (size_t i = 0; i < 5; i++)
		same_as_expected(&recs[i], &ex[i], i);
}
END_TEST

/* Copies |in| to |dst| without its first |skip| frames: a capture joined mid-way. */
static void drop_frames(const char *in, const char *dst, unsigned skip)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(in, err);
	pcap_dumper_t *d;
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned i = 0;

	ck_assert_ptr_nonnull(p);
	d = pcap_dump_open(p, dst);
	ck_assert_ptr_nonnull(d);
	while (pcap_next_ex(p, &h, &data) == 1)
		if (i++ >= skip)
			pcap_dump((u_char *)d, h, data);
	pcap_dump_close(d);
	pcap_close(p);
}

/* Decode-as on a marked stream joined mid-way: the marker phase is found. */
START_TEST(test_decode_as_markers_midstream)
{
	char mid[300];
	size_t k = 0;

	make_faulty(cap_path, true, SYNTH_NONE, 0);
	snprintf(mid, sizeof(mid), "%s.mid", cap_path);
	drop_frames(cap_path, mid, 20); /* handshake, start frames and a few FPDUs gone */
	run_json(mid, "-p 20005 --crc --markers");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_uint_gt(nrec, nex / 2);
	ck_assert_uint_eq(phase_notes, 1);
	/* Whatever decodes is exactly the tail of what was sent, CRCs good. */
	for (size_t i = nrec; i > 0; i--, k++)
		same_as_expected(&recs[i - 1], &ex[nex - 1 - k], i - 1);
	unlink(mid);
}
END_TEST

START_TEST(test_gzip_and_errors)
{
	char gz_path[300], cmd[1024];
	gzFile gz;
	FILE *f;
	char buf[65536];
	size_t n, plain;

	make_all(cap_path);
	run_json(cap_path, "");
	plain = nrec;
	snprintf(gz_path, sizeof(gz_path), "%s.gz", cap_path);
	f = fopen(cap_path, "rb");
	gz = gzopen(gz_path, "wb");
	ck_assert(f && gz);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		ck_assert_int_eq(gzwrite(gz, buf, (unsigned)n), (int)n);
	fclose(f);
	gzclose(gz);
	run_json(gz_path, "");
	ck_assert_uint_eq(nrec, plain);
	unlink(gz_path);
	snprintf(cmd, sizeof(cmd), "%s -r /nonexistent/capture.pcap 2>&1", ddpdump());
	f = popen(cmd, "r");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	ck_assert_int_eq(WEXITSTATUS(pclose(f)), 1);
	ck_assert_ptr_nonnull(strstr(buf, "ddpdump:"));
	snprintf(cmd, sizeof(cmd), "%s -T xml -r x 2>/dev/null", ddpdump());
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
	/* A link type ddpdump does not parse: a clear message, exit status 1. */
	{
		pcap_t *dead = pcap_open_dead(DLT_IEEE802_11, 65535);
		pcap_dumper_t *d = pcap_dump_open(dead, cap_path);
		struct pcap_pkthdr h = { .caplen = 4, .len = 4 };

		pcap_dump((u_char *)d, &h, (const u_char *)"abcd");
		pcap_dump_close(d);
		pcap_close(dead);
	}
	snprintf(cmd, sizeof(cmd), "%s -r %s 2>&1", ddpdump(), cap_path);
	f = popen(cmd, "r");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	ck_assert_int_eq(WEXITSTATUS(pclose(f)), 1);
	ck_assert_ptr_nonnull(strstr(buf, "unsupported link type"));
}
END_TEST

/* pcapng input (converted with editcap, which comes with tshark). */
START_TEST(test_pcapng)
{
	char ng[300], cmd[700];
	size_t plain;

	if (system("command -v editcap >/dev/null 2>&1") != 0) {
		ck_assert_msg(!getenv("ESOCK_REQUIRE_TSHARK"), "editcap (tshark's package) not found");
		return;
	}
	make_all(cap_path);
	run_json(cap_path, "");
	plain = nrec;
	snprintf(ng, sizeof(ng), "%s.pcapng", cap_path);
	snprintf(cmd, sizeof(cmd), "editcap -F pcapng %s %s", cap_path, ng);
	ck_assert_int_eq(system(cmd), 0);
	run_json(ng, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_uint_eq(nrec, plain);
	for (size_t i = 0; i < nex; i++)
		same_as_expected(&recs[i], &ex[i], i);
	unlink(ng);
}
END_TEST

/*
 * A long capture: every one of its FPDUs is read and compared, not just the
 * first thousand (a fixed table of 1024 made tshark "have more FPDUs" on any
 * longer capture, ESOCK_CAPTURES's from the interop stage among them).
 */
START_TEST(test_long_capture)
{
	enum { MSGS = 3000 };
	struct synth *cap = synth_open(cap_path);
	struct esock_rdmap_msg m;
	struct conn c;
	uint8_t data[64];

	ck_assert_ptr_nonnull(cap);
	memset(data, 0x5a, sizeof(data));
	nex = 0;
	streams_open_conn(cap, &c, 9, true, false);
	for (int i = 0; i < MSGS; i++) {
		if (nex > MAXE - 8)
			nex = 0; /* (the expectations are not what this test compares) */
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
		streams_send_msg(&c, SYNTH_C2S, &m, data, sizeof(data), MSS);
	}
	synth_conn_close(&c.sc);
	ck_assert_int_eq(synth_close(cap), 0);
	run_json(cap_path, "");
	ck_assert_int_eq(WEXITSTATUS(exit_status), 0);
	ck_assert_uint_eq(nrec, MSGS);
	ck_assert_uint_eq(recs[MSGS - 1].msn, MSGS);
	if (have_tshark())
		ck_assert_uint_eq(compare_with_tshark(cap_path), MSGS);
}
END_TEST

/* ESOCK_CAPTURES="a.pcap b.pcap": compare each with tshark (interop stage). */
START_TEST(test_given_captures)
{
	char list[4096], *save = NULL;

	snprintf(list, sizeof(list), "%s", getenv("ESOCK_CAPTURES"));
	ck_assert(have_tshark());
	for (char *p = strtok_r(list, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
		size_t n = compare_with_tshark(p);

		printf("%s: %zu FPDUs agree with tshark\n", p, n);
		ck_assert_uint_gt(n, 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ddpdump");
	TCase *tc = tcase_create("captures");
	SRunner *sr;
	int failed;

	snprintf(cap_path, sizeof(cap_path), "ddpdump-test-%d.pcap", (int)getpid());
	if (getenv("ESOCK_CAPTURES")) {
		tcase_add_test(tc, test_given_captures);
		goto run;
	}
	tcase_add_test(tc, test_matches_encoders);
	tcase_add_test(tc, test_matches_tshark);
	tcase_add_test(tc, test_siw_rping);
	tcase_add_test(tc, test_siw_crc);
	tcase_add_loop_test(tc, test_siw_perftest, 0, 3);
	tcase_add_test(tc, test_siw_terminate);
	tcase_add_loop_test(tc, test_link_types, 0, 12);
	tcase_add_test(tc, test_flipped_bit);
	tcase_add_loop_test(tc, test_lost_segment, 0, 2);
	tcase_add_test(tc, test_dup_and_swap);
	tcase_add_test(tc, test_long_capture);
	tcase_add_test(tc, test_snaplen_and_truncated_file);
	tcase_add_test(tc, test_decode_as_and_garbage);
	tcase_add_test(tc, test_decode_as_markers_midstream);
	tcase_add_test(tc, test_gzip_and_errors);
	tcase_add_test(tc, test_pcapng);
run:
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	unlink(cap_path);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
