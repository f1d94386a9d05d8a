/* SPDX-License-Identifier: MIT */
/* Text rendering of start frames and DDP/RDMAP segments (see fpdu_print.h). */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "tools/fpdu_print.h"

static const char *rtr_names(uint8_t rtr)
{
	static const char *const names[8] = { "-", "Send", "Write", "Send+Write", "Read",
					      "Send+Read", "Write+Read", "Send+Write+Read" };

	return names[rtr & 7];
}

void fpdu_print_frame(FILE *f, const struct esock_mpa_frame *fr)
{
	fprintf(f, "MPA %s rev %u M=%d C=%d R=%d S=%d", fr->reply ? "Reply  " : "Request", fr->rev,
		fr->markers, fr->crc, fr->reject, fr->enhanced);
	if (esock_mpa_frame_has_ird_ord(fr))
		fprintf(f, " | IRD %u ORD %u P2P=%d RTR %s", fr->ird, fr->ord, fr->p2p, rtr_names(fr->rtr));
	fprintf(f, " | private data %u octets\n", fr->pd_len);
}

static void print_term(FILE *f, const struct esock_rdmap_term *t)
{
	fprintf(f, " | %s / %s / 0x%02x: %s", esock_term_layer_name(t->t.layer),
		esock_term_etype_name(t->t.layer, t->t.etype), t->t.ecode,
		esock_term_str(t->t.layer, t->t.etype, t->t.ecode));
	if (t->t.hdrct)
		fprintf(f, " | copied:%s%s%s", (t->t.hdrct & ESOCK_TERM_HDRCT_M) ? " seglen" : "",
			(t->t.hdrct & ESOCK_TERM_HDRCT_D) ? " DDP-hdr" : "",
			(t->t.hdrct & ESOCK_TERM_HDRCT_R) ? " ReadReq-hdr" : "");
	if (t->order == ESOCK_RDMAP_TERM_SIW)
		fprintf(f, " (siw bit order)");
}

void fpdu_print_term_copies(FILE *f, const struct esock_rdmap_term *t)
{
	struct esock_ddp_hdr h;
	struct esock_rdmap_msg rr;

	if (t->t.hdrct & ESOCK_TERM_HDRCT_M)
		fprintf(f, "\tterminated segment: DDP Segment Length %u\n", t->ddp_seg_len);
	if ((t->t.hdrct & ESOCK_TERM_HDRCT_D) && esock_ddp_hdr_decode(&h, t->ddp_hdr, t->ddp_hdr_len) > 0) {
		if (h.tagged)
			fprintf(f, "\tterminated DDP header: T=1 L=%d DV=%u STag 0x%08" PRIx32 " TO 0x%016" PRIx64
				   " (%s)\n", h.last, h.dv, h.stag, h.to, esock_rdmap_opcode_name(h.ulp_ctrl & 0xf));
		else
			fprintf(f, "\tterminated DDP header: T=0 L=%d DV=%u QN %" PRIu32 " MSN %" PRIu32 " MO %" PRIu32
				   " (%s)\n", h.last, h.dv, h.qn, h.msn, h.mo, esock_rdmap_opcode_name(h.ulp_ctrl & 0xf));
	}
	if (t->t.hdrct & ESOCK_TERM_HDRCT_R) {
		uint8_t seg[ESOCK_DDP_UNTAGGED_HLEN + ESOCK_RDMAP_READ_REQ_HLEN] = { 0x41, 0x41 };

		seg[9] = ESOCK_DDP_QN_READ_REQ;
		memcpy(seg + ESOCK_DDP_UNTAGGED_HLEN, t->rdmap_hdr, ESOCK_RDMAP_READ_REQ_HLEN);
		if (esock_rdmap_decode(&rr, seg, sizeof(seg), NULL, NULL) > 0)
			fprintf(f, "\tterminated Read Request: sink 0x%08" PRIx32 "/0x%" PRIx64 " size %" PRIu32
				   " source 0x%08" PRIx32 "/0x%" PRIx64 "\n",
				rr.u.read_req.sink_stag, rr.u.read_req.sink_to, rr.u.read_req.size,
				rr.u.read_req.src_stag, rr.u.read_req.src_to);
	}
}

void fpdu_print_msg(FILE *f, const struct esock_rdmap_msg *m)
{
	const struct esock_ddp_hdr *d = &m->ddp;

	if (d->tagged)
		fprintf(f, "DDP T=1 L=%d STag 0x%08" PRIx32 " TO 0x%016" PRIx64, d->last, d->stag, d->to);
	else
		fprintf(f, "DDP T=0 L=%d QN %" PRIu32 " MSN %" PRIu32 " MO %" PRIu32, d->last, d->qn,
			d->msn, d->mo);
	fprintf(f, " | %s", esock_rdmap_opcode_name(m->opcode));
	switch (m->opcode) {
	case ESOCK_RDMAP_SEND_INV:
	case ESOCK_RDMAP_SEND_SE_INV:
		fprintf(f, " (invalidate 0x%08" PRIx32 ")", m->inval_stag);
		break;
	case ESOCK_RDMAP_READ_REQ:
		fprintf(f, " | sink 0x%08" PRIx32 "/0x%" PRIx64 " size %" PRIu32 " source 0x%08" PRIx32
			   "/0x%" PRIx64,
			m->u.read_req.sink_stag, m->u.read_req.sink_to, m->u.read_req.size,
			m->u.read_req.src_stag, m->u.read_req.src_to);
		break;
	case ESOCK_RDMAP_TERMINATE:
		print_term(f, &m->u.term);
		break;
	case ESOCK_RDMAP_ATOMIC_REQ:
		fprintf(f, " | %s id %" PRIu32 " STag 0x%08" PRIx32 " TO 0x%" PRIx64,
			esock_rdmap_atomic_name(m->u.atomic_req.op), m->u.atomic_req.req_id,
			m->u.atomic_req.stag, m->u.atomic_req.to);
		break;
	case ESOCK_RDMAP_ATOMIC_RESP:
		fprintf(f, " | id %" PRIu32 " original 0x%" PRIx64, m->u.atomic_resp.req_id,
			m->u.atomic_resp.orig);
		break;
	case ESOCK_RDMAP_IMM_DATA:
	case ESOCK_RDMAP_IMM_DATA_SE:
		fprintf(f, " | 0x%016" PRIx64, m->u.imm);
		break;
	default:
		break;
	}
	if (m->payload_len)
		fprintf(f, " | payload %zu", m->payload_len);
	fputc('\n', f);
}
