/* SPDX-License-Identifier: MIT */
/*
 * ddpdump output: one line per FPDU (default), a verbose tree (-v), or JSON
 * lines (-T json; field names are stable and listed in ddpdump.1), plus
 * notes (gaps, resynchronisation, truncation) and the --stats tables.
 */
#include "config.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "tools/ddpdump/ddpdump.h"
#include "tools/fpdu_print.h"

void endpoint_str(const struct dir_state *d, bool dst, char *buf, size_t cap)
{
	const struct flow *f = d->flow;
	int e = dst ? !d->idx : d->idx;
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(f->af, f->addr[e], ip, sizeof(ip));
	snprintf(buf, cap, f->af == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, f->port[e]);
}

static void ts_str(double ts, char *buf, size_t cap)
{
	time_t t = (time_t)ts;
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, cap, "%02d:%02d:%02d.%06d", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (int)((ts - (double)t) * 1e6));
}

static void prefix(const struct dir_state *d)
{
	char t[32], a[64], b[64];

	ts_str(d->ts, t, sizeof(t));
	endpoint_str(d, false, a, sizeof(a));
	endpoint_str(d, true, b, sizeof(b));
	fprintf(opt.out, "%s %s > %s ", t, a, b);
}

static void json_head(const struct dir_state *d, const char *type)
{
	char a[64], b[64];

	endpoint_str(d, false, a, sizeof(a));
	endpoint_str(d, true, b, sizeof(b));
	fprintf(opt.out, "{\"ts\":%.6f,\"conn\":%u,\"src\":\"%s\",\"dst\":\"%s\",\"type\":\"%s\"", d->ts,
		d->flow->id, a, b, type);
}

void out_note(const struct dir_state *d, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (opt.quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (opt.format == OUT_JSON) {
		json_head(d, "note");
		fprintf(opt.out, ",\"note\":\"%s\"}\n", msg);
		return;
	}
	prefix(d);
	fprintf(opt.out, "-- %s\n", msg);
}

void out_start_frame(const struct dir_state *d, const struct esock_mpa_frame *f)
{
	if (opt.quiet)
		return;
	if (opt.format == OUT_JSON) {
		json_head(d, f->reply ? "mpa_reply" : "mpa_request");
		fprintf(opt.out, ",\"rev\":%u,\"m\":%d,\"c\":%d,\"r\":%d,\"s\":%d,\"pd_len\":%u", f->rev,
			f->markers, f->crc, f->reject, f->enhanced, f->pd_len);
		if (esock_mpa_frame_has_ird_ord(f))
			fprintf(opt.out, ",\"ird\":%u,\"ord\":%u,\"p2p\":%d,\"rtr\":%u", f->ird, f->ord, f->p2p,
				f->rtr);
		fputs("}\n", opt.out);
		return;
	}
	prefix(d);
	fpdu_print_frame(opt.out, f);
}

static const char *crc_word(const struct dir_state *d, const struct esock_mpa_ev *ev)
{
	if (!d->crc)
		return "off";
	return (ev->flags & ESOCK_MPA_EVF_CRC_BAD) ? "BAD" : "ok";
}

static void json_fpdu(const struct dir_state *d, const struct esock_mpa_ev *ev,
		      const struct esock_rdmap_msg *m, int rc, const struct esock_term *why, bool aligned)
{
	json_head(d, "fpdu");
	fprintf(opt.out, ",\"ulpdu_len\":%zu,\"pad\":%zu,\"crc\":\"%s\",\"crc_rx\":\"0x%08" PRIx32
		"\",\"crc_calc\":\"0x%08" PRIx32 "\",\"markers\":%u,\"marker_error\":%d,\"aligned\":%d",
		ev->len, esock_mpa_pad_len(ev->len), crc_word(d, ev), ev->crc_rx, ev->crc_calc, ev->markers,
		(ev->flags & ESOCK_MPA_EVF_MARKER_BAD) != 0, aligned);
	if (rc < 0) {
		fprintf(opt.out, ",\"error\":\"%s\"}\n", esock_term_str(why->layer, why->etype, why->ecode));
		return;
	}
	fprintf(opt.out, ",\"t\":%d,\"l\":%d,\"opcode\":%u,\"op\":\"%s\"", m->ddp.tagged, m->ddp.last, m->opcode,
		esock_rdmap_opcode_name(m->opcode));
	if (m->ddp.tagged)
		fprintf(opt.out, ",\"stag\":%" PRIu32 ",\"to\":%" PRIu64, m->ddp.stag, m->ddp.to);
	else
		fprintf(opt.out, ",\"qn\":%" PRIu32 ",\"msn\":%" PRIu32 ",\"mo\":%" PRIu32, m->ddp.qn, m->ddp.msn,
			m->ddp.mo);
	if (m->opcode == ESOCK_RDMAP_SEND_INV || m->opcode == ESOCK_RDMAP_SEND_SE_INV)
		fprintf(opt.out, ",\"inval_stag\":%" PRIu32, m->inval_stag);
	if (m->opcode == ESOCK_RDMAP_READ_REQ)
		fprintf(opt.out, ",\"sink_stag\":%" PRIu32 ",\"sink_to\":%" PRIu64 ",\"size\":%" PRIu32
			",\"src_stag\":%" PRIu32 ",\"src_to\":%" PRIu64, m->u.read_req.sink_stag,
			m->u.read_req.sink_to, m->u.read_req.size, m->u.read_req.src_stag, m->u.read_req.src_to);
	if (m->opcode == ESOCK_RDMAP_TERMINATE)
		fprintf(opt.out, ",\"term_layer\":%u,\"term_etype\":%u,\"term_ecode\":%u,\"term_hdrct\":%u,"
			"\"term_order\":\"%s\",\"term_reason\":\"%s\"", m->u.term.t.layer, m->u.term.t.etype,
			m->u.term.t.ecode, m->u.term.t.hdrct, m->u.term.order == ESOCK_RDMAP_TERM_SIW ? "siw" : "rfc",
			esock_term_str(m->u.term.t.layer, m->u.term.t.etype, m->u.term.t.ecode));
	if (m->opcode == ESOCK_RDMAP_ATOMIC_REQ)
		fprintf(opt.out, ",\"atomic_op\":%u,\"req_id\":%" PRIu32 ",\"remote_stag\":%" PRIu32
			",\"remote_to\":%" PRIu64, m->u.atomic_req.op, m->u.atomic_req.req_id, m->u.atomic_req.stag,
			m->u.atomic_req.to);
	if (m->opcode == ESOCK_RDMAP_ATOMIC_RESP)
		fprintf(opt.out, ",\"req_id\":%" PRIu32 ",\"orig\":%" PRIu64, m->u.atomic_resp.req_id,
			m->u.atomic_resp.orig);
	fprintf(opt.out, ",\"payload_len\":%zu}\n", m->payload_len);
}

static void hexdump(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		fprintf(opt.out, "\t0x%04zx:", i);
		for (size_t k = i; k < i + 16 && k < n; k++)
			fprintf(opt.out, "%s%02x", (k % 2) ? "" : " ", p[k]);
		fputc('\n', opt.out);
	}
}

void out_fpdu(const struct dir_state *d, const struct esock_mpa_ev *ev, const struct esock_rdmap_msg *m,
	      int rc, const struct esock_term *why, bool aligned)
{
	if (opt.quiet)
		return;
	if (opt.format == OUT_JSON) {
		json_fpdu(d, ev, m, rc, why, aligned);
		return;
	}
	prefix(d);
	fprintf(opt.out, "FPDU %zu crc %s", ev->len, crc_word(d, ev));
	if (ev->flags & ESOCK_MPA_EVF_CRC_BAD)
		fprintf(opt.out, " (got 0x%08" PRIx32 " want 0x%08" PRIx32 ")", ev->crc_rx, ev->crc_calc);
	if (ev->markers)
		fprintf(opt.out, " markers %u%s", ev->markers,
			(ev->flags & ESOCK_MPA_EVF_MARKER_BAD) ? " (BAD FPDUPTR)" : "");
	fputs(" | ", opt.out);
	if (rc < 0)
		fprintf(opt.out, "undecodable: %s\n", esock_term_str(why->layer, why->etype, why->ecode));
	else
		fpdu_print_msg(opt.out, m);
	if (opt.format == OUT_VERBOSE) {
		fprintf(opt.out, "\tpad %zu, CRC field 0x%08" PRIx32 ", computed 0x%08" PRIx32 ", %s\n",
			esock_mpa_pad_len(ev->len), ev->crc_rx, ev->crc_calc,
			aligned ? "FPDU starts a TCP segment" : "FPDU does not start a TCP segment");
		if (rc >= 0 && m->opcode == ESOCK_RDMAP_TERMINATE)
			fpdu_print_term_copies(opt.out, &m->u.term);
	}
	if (opt.hex)
		hexdump(ev->data, ev->len);
}

void out_stats(const char *label, const struct stats *s)
{
	fprintf(opt.out, "%s: %" PRIu64 " FPDUs, %" PRIu64 " ULPDU octets, %" PRIu64 " messages\n", label,
		s->fpdus, s->bytes, s->messages);
	for (int op = 0; op < NOPC; op++)
		if (s->opc_fpdus[op])
			fprintf(opt.out, "  %-42s %8" PRIu64 " FPDUs %12" PRIu64 " octets\n",
				op == NOPC - 1 ? "undecodable" : esock_rdmap_opcode_name((uint8_t)op),
				s->opc_fpdus[op], s->opc_bytes[op]);
	fprintf(opt.out, "  CRC errors %" PRIu64 ", marker errors %" PRIu64 ", Terminates %" PRIu64
		", gaps %" PRIu64 " (%" PRIu64 " octets), resyncs %" PRIu64 ", MSN gaps %" PRIu64
		", duplicate octets %" PRIu64 "\n",
		s->crc_errors, s->marker_errors, s->terminates, s->gaps, s->gap_bytes, s->resyncs, s->msn_gaps,
		s->dup_bytes);
	fprintf(opt.out, "  FPDUs starting a TCP segment: %" PRIu64 " of %" PRIu64, s->aligned, s->fpdus);
	if (s->reads_matched)
		fprintf(opt.out, "; RDMA Read latency: %" PRIu64 " reads, mean %.1f us, max %.1f us",
			s->reads_matched, s->read_lat_sum / (double)s->reads_matched * 1e6, s->read_lat_max * 1e6);
	fputc('\n', opt.out);
}
