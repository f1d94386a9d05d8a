/* SPDX-License-Identifier: MIT */
/*
 * Receive progress of one QP (token holder only): kernel TCP -> MPA (header
 * first) -> DDP/RDMAP checks -> payload straight into place.  The first
 * octets of each FPDU are read into a small stage; once the header has been
 * checked and its target found (registered region for tagged data, posted
 * buffer for untagged), the rest of a large payload is read from the socket
 * directly into the target and only run through the CRC (RFC 5044 §4.4)
 * there.  Read Requests and Terminates are small: gathered whole, decoded,
 * acted upon.  Every error ends in a Terminate with the RFC code.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "endpoint/ep.h"
#include "endpoint/ep_ops.h"
#include "endpoint/ep_sock.h"
#include "endpoint/ep_spare.h"
#include "libc/real.h"
#include "util/byteorder.h"
#include "util/log.h"

/*
 * Octets read when the next FPDU's size is unknown.  After a large FPDU: a
 * 4 KiB message's FPDU (4122 octets) whole, so a page-sized ping-pong costs
 * one receive call, not two, and the rest of a large payload goes straight
 * into place (EP_DIRECT_MIN).  After a small one: as much as the stage
 * holds, so that a stream of small FPDUs costs one receive call per 64 KiB
 * instead of one each.  Reading more than is there costs nothing: the call
 * returns what the socket holds.
 */
#define STAGE_READ (4096 + 64)
#define STAGE_READ_SMALL (EP_STAGE_LEN - 512)
#define STAGE_TAIL 64   /* read behind a payload: CRC, next header, a little more */
#define TAIL_SMALL_MAX 4096 /* a small FPDU behind a large one this long is read with it */
_Static_assert(STAGE_READ + 256 <= EP_STAGE_LEN, "a read fits behind a partial header");
_Static_assert(STAGE_READ_SMALL >= 65536, "a stage read takes 64 KiB of small FPDUs");

static bool rx_alive(struct esock_qp *qp);

static void term_at(struct esock_qp *qp, uint8_t layer, uint8_t etype, uint8_t ecode,
		    uint8_t hdrct, const uint8_t *seg, size_t len)
{
	struct esock_term t = { 0 };

	esock_term_set(&t, layer, etype, ecode, hdrct);
	ep_tx_terminate(qp, &t, seg, len);
}

/* ---- DDP lookups (called back by the placement code) ---- */

static int lookup_stag(void *ctx, uint32_t stag, struct esock_ddp_region *out)
{
	struct esock_qp *qp = ctx;

	if (stag == EP_CREDIT_STAG && qp->cr_limit) { /* the QP's credit word (ep_sock.h) */
		*out = (struct esock_ddp_region){ .len = sizeof(qp->cr_word),
						  .addr = (uint8_t *)&qp->cr_word,
						  .access = ESOCK_DDP_ACCESS_REMOTE_WRITE,
						  .pd = qp->pd->id };
		return 0;
	}
	return ep_mr_region(stag, out);
}

/* A receive is posted for the next Send (or one was posted now: ep_qp_set_rq_refill). */
static bool rq_ready(struct esock_qp *qp)
{
	return ep_ring_ready(&qp->rqr, qp->rq_next) ||
	       (qp->rq_refill && qp->rq_refill(qp->rq_refill_arg) > 0 &&
		ep_ring_ready(&qp->rqr, qp->rq_next));
}

#define RX_NOW_COOKIE (1ull << 63) /* the buffer of ep_qp_recv_now, not an RQ position */

/* The next posted receive (rq_ready said there is one) becomes a message's buffer. */
static struct ep_rqe *rq_take(struct esock_qp *qp, struct esock_ddp_buf *out)
{
	struct ep_rqe *r = EP_RQE(qp, qp->rq_next);

	out->addr = r->num_sge ? (uint8_t *)(uintptr_t)r->sge[0].addr : NULL;
	out->len = (size_t)r->len;
	out->cookie = qp->rq_next++;
	return r;
}

/*
 * The caller's buffer (ep_qp_recv_now) takes a message when no posted
 * receive is being filled before it: one that came whole when it has room
 * for it; one of several FPDUs (or not yet all read) when it has room for
 * all of the posted receive the message would otherwise take, which bounds
 * the message as before (a longer one is Terminated, too long) and takes it
 * back if the call ends first (ep_rx_lend_back).  A posted one still empty
 * stays for later messages (the socket layer's own, posted as Sends came).
 * The first message that goes elsewhere or completes elsewhere ends it
 * (deliver_recvs), so that the caller reads them in order.
 */
/* |len| octets of the caller's buffer are claimed for the message of |msn|: where they start. */
static uint8_t *rxt_claim(struct esock_qp *qp, size_t len, uint32_t msn)
{
	uint8_t *at = qp->rxt.buf + qp->rxt.promised;

	qp->rxt.promised += len;
	qp->rxt.open = true;
	qp->rxt.open_msn = msn;
	if (qp->rxt.one)
		qp->rxt.on = false;
	return at;
}

/* The message in the caller's buffer is done: |len| octets (the next one starts behind them). */
static void rxt_filled(struct esock_qp *qp, size_t len)
{
	qp->rxt.filled += len;
	qp->rxt.promised = qp->rxt.filled;
	qp->rxt.open = false;
	qp->rxt.msgs++;
}

static bool take_now(struct esock_qp *qp, struct esock_ddp_buf *out)
{
	const struct ep_rx_cur *c = &qp->rxc; /* (the segment being placed: on_place_hdr) */
	size_t len = c->payload_len, room = qp->rxt.room - qp->rxt.promised;

	if (!qp->rxt.on)
		return false;
	if (qp->rq_next != qp->rq_done || c->m.ddp.mo != 0 || len == 0)
		goto off;
	if (!(qp->rx_in_whole && c->m.ddp.last)) { /* (may outlast the call: lent, to be taken back) */
		uint64_t cap;

		if (!rq_ready(qp))
			goto off;
		cap = EP_RQE(qp, qp->rq_next)->len;
		if (!c->m.ddp.last)
			len = cap > SIZE_MAX ? SIZE_MAX : (size_t)cap;
		if (len > cap)
			goto off; /* (too long for the receive: placement says so) */
	}
	if (len > room)
		goto off;
	out->addr = rxt_claim(qp, len, c->m.ddp.msn);
	out->len = len;
	out->cookie = RX_NOW_COOKIE;
	return true;
off:
	qp->rxt.on = false;
	return false;
}

/* Copies |n| octets from |p| to the start of the posted receive |r|. */
static void rqe_fill(const struct ep_rqe *r, const uint8_t *p, size_t n)
{
	for (int i = 0; i < r->num_sge && n; i++) {
		size_t k = r->sge[i].length < n ? (size_t)r->sge[i].length : n;

		memcpy((uint8_t *)(uintptr_t)r->sge[i].addr, p, k);
		p += k;
		n -= k;
	}
}

static void slice_sges(struct ep_rx_cur *c, const struct ep_rqe *r, uint64_t mo, size_t len);

/*
 * ep_qp_recv_now ends with a message still open in the caller's buffer (its
 * next FPDU, or the rest of one, not read yet): what came of it is copied to
 * the posted receive it would have taken, which holds the rest; the caller
 * gets only whole messages.  Usually one message of a call's many.
 */
void ep_rx_lend_back(struct esock_qp *qp)
{
	struct ep_rx_cur *c = &qp->rxc;
	struct esock_ddp_buf nb;
	struct ep_rqe *r;
	bool mid;
	size_t have;

	if (!qp->rxt.open)
		return;
	qp->rxt.open = false;
	qp->rxt.promised = qp->rxt.filled;
	if (!rx_alive(qp))
		return; /* (nothing is placed any more) */
	if (!ep_ring_ready(&qp->rqr, qp->rq_next))
		goto lost;
	r = rq_take(qp, &nb);
	if (esock_ddp_place_rebuf(&qp->place, ESOCK_DDP_QN_SEND, qp->rxt.open_msn, &nb) < 0)
		goto lost;
	/* In the middle of one of its FPDUs, or between two (then mo_rx is what came). */
	mid = c->kind == EP_RX_PLACE && !c->m.ddp.tagged && c->m.ddp.msn == qp->rxt.open_msn;
	have = mid ? c->m.ddp.mo + c->got : qp->mo_rx;
	rqe_fill(r, qp->rxt.buf + qp->rxt.filled, have);
	if (mid)
		slice_sges(c, r, c->m.ddp.mo, c->payload_len);
	return;
lost: /* cannot happen: the receive was there when lent, and it bounded the message */
	term_at(qp, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_CATASTROPHIC,
		ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, 0, NULL, 0);
}

static int lookup_untagged(void *ctx, uint32_t qn, uint32_t msn, struct esock_ddp_buf *out)
{
	struct esock_qp *qp = ctx;

	(void)msn;
	if (qn != ESOCK_DDP_QN_SEND)
		return -ENOENT;
	if (take_now(qp, out))
		return 0;
	if (!rq_ready(qp))
		return -ENOENT;
	rq_take(qp, out);
	return 0;
}

int ep_rx_init(struct esock_qp *qp)
{
	struct esock_mpa_rx_cfg rc = { .crc = qp->info.crc, .markers = qp->info.markers_rx,
				       .peek = ESOCK_DDP_UNTAGGED_HLEN, .whole = true };
	struct esock_ddp_place_cfg pc = {
		.lookup = { lookup_stag, lookup_untagged, qp },
		.pd = qp->pd->id,
		.qn_mask = 1u << ESOCK_DDP_QN_SEND, /* QN 1 and 2 are handled here */
		.msn_window = ESOCK_DDP_MSG_SLOTS,
	};
	int rc2 = esock_mpa_rx_init(&qp->rx, &rc);

	return rc2 < 0 ? rc2 : esock_ddp_place_init(&qp->place, &pc);
}

/* ---- the target of the payload ---- */

/* Fills cur->iov with [mo, mo + len) of the posted buffer |r|. */
static void slice_sges(struct ep_rx_cur *c, const struct ep_rqe *r, uint64_t mo, size_t len)
{
	c->iovcnt = 0;
	for (int i = 0; i < r->num_sge && len; i++) {
		uint64_t l = r->sge[i].length;

		if (mo >= l) {
			mo -= l;
			continue;
		}
		size_t n = (size_t)(l - mo) < len ? (size_t)(l - mo) : len;

		c->iov[c->iovcnt].iov_base = (uint8_t *)(uintptr_t)r->sge[i].addr + mo;
		c->iov[c->iovcnt++].iov_len = n;
		len -= n;
		mo = 0;
	}
}

/* Where payload octet |off| of the current segment goes, and how many fit there. */
static uint8_t *target_at(struct ep_rx_cur *c, size_t off, size_t *room)
{
	for (int i = 0; i < c->iovcnt; i++) {
		if (off < c->iov[i].iov_len) {
			*room = c->iov[i].iov_len - off;
			return (uint8_t *)c->iov[i].iov_base + off;
		}
		off -= c->iov[i].iov_len;
	}
	*room = 0;
	return NULL;
}

static void put_payload(struct ep_rx_cur *c, const uint8_t *p, size_t n)
{
	while (n) {
		size_t room;
		uint8_t *dst = target_at(c, c->got, &room);

		if (!dst)
			return; /* cannot happen: placement checked the length */
		if (room > n)
			room = n;
		if (dst != p) /* already there when read straight into place */
			memcpy(dst, p, room);
		c->got += room;
		p += room;
		n -= room;
	}
}

/* ---- segment header ---- */

static const struct esock_rdmap_decode_opts dec_opts = { true, ESOCK_RDMAP_TERM_AUTO };

/*
 * A Read Response must fill the sink of the oldest Read in flight exactly:
 * its STag, each segment at the next octet (TCP keeps them in order), and in
 * all the Read's length, no more and, at the last segment, no less.  As siw
 * does (RFC 5040 has no code of its own for it): a wrong STag is "invalid
 * STag", a wrong offset or total "base or bounds".  Returns the DDP tagged
 * error code, or -1 when the segment is what was expected.
 */
static int resp_check(struct esock_qp *qp, const struct esock_ddp_hdr *h, size_t len)
{
	const struct ep_sqe *e;

	if (qp->orq_n == 0)
		return qp->rtr_read_out && len == 0 ? -1 : ESOCK_TERM_DDP_T_INV_STAG;
	e = EP_SQE(qp, qp->orq[qp->orq_head % qp->orq_cap]);
	if (e->len == 0)
		return len == 0 && h->last ? -1 : ESOCK_TERM_DDP_T_BASE_BOUNDS;
	if (e->num_sge != 1 || h->stag != e->sge[0].lkey)
		return ESOCK_TERM_DDP_T_INV_STAG;
	if (h->to != e->sge[0].addr + qp->resp_got || len > e->len - qp->resp_got ||
	    (h->last && qp->resp_got + len != e->len))
		return ESOCK_TERM_DDP_T_BASE_BOUNDS;
	return -1;
}

/*
 * Over an in-order LLP a Send segment carries the MSN expected next and the
 * MO of the octets of its message so far; anything else is a peer error
 * (RFC 5041 §7.2, as siw Terminates it).  Returns the DDP untagged error
 * code, or -1.
 */
static int send_check(const struct esock_qp *qp, const struct esock_ddp_hdr *h)
{
	if (h->msn != qp->msn_rx[ESOCK_DDP_QN_SEND])
		return ESOCK_TERM_DDP_U_MSN_RANGE;
	if (h->mo != qp->mo_rx)
		return ESOCK_TERM_DDP_U_INV_MO;
	return -1;
}

static void on_place_hdr(struct esock_qp *qp, const uint8_t *peek, size_t n, size_t hl)
{
	struct ep_rx_cur *c = &qp->rxc;
	const struct ep_rx_op *op = ep_rx_op(c->m.opcode);
	struct esock_ddp_placed pl;
	uint8_t *dst;
	int rc;

	c->kind = EP_RX_PLACE;
	c->payload_len = c->ulpdu_len - hl;
	if (op->kind == EP_RXK_READ_RESP) {
		if ((rc = resp_check(qp, &c->m.ddp, c->payload_len)) >= 0)
			return term_at(qp, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_TAGGED, (uint8_t)rc,
				       ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D, peek, c->ulpdu_len);
	} else if (op->kind != EP_RXK_WRITE && !c->m.ddp.tagged &&
		   (rc = send_check(qp, &c->m.ddp)) >= 0) {
		return term_at(qp, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED, (uint8_t)rc,
			       ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D, peek, c->ulpdu_len);
	}
	rc = esock_ddp_place_prepare(&qp->place, &c->m.ddp, c->payload_len, op->place_access, &dst,
				     &pl);
	if (rc < 0)
		return ep_tx_terminate(qp, esock_ddp_place_term(&qp->place), peek, c->ulpdu_len);
	if (op->kind == EP_RXK_READ_RESP) {
		qp->resp_got += c->payload_len;
	} else if (!c->m.ddp.tagged) {
		qp->mo_rx = c->m.ddp.last ? 0 : qp->mo_rx + (uint32_t)c->payload_len;
		if (c->m.ddp.last)
			qp->msn_rx[ESOCK_DDP_QN_SEND]++;
	}
	if (c->m.ddp.tagged) {
		c->iovcnt = dst ? 1 : 0;
		c->iov[0].iov_base = dst;
		c->iov[0].iov_len = c->payload_len;
	} else {
		/* The buffer was consumed for this MSN: its cookie is the RQ position. */
		const struct esock_ddp_buf *b = esock_ddp_place_msg_buf(&qp->place, c->m.ddp.qn,
									 c->m.ddp.msn);

		if (b && b->cookie == RX_NOW_COOKIE) {
			c->iovcnt = 1;
			c->iov[0].iov_base = b->addr + c->m.ddp.mo;
			c->iov[0].iov_len = c->payload_len;
		} else if (b) {
			slice_sges(c, EP_RQE(qp, (uint32_t)b->cookie), c->m.ddp.mo, c->payload_len);
		}
	}
	put_payload(c, peek + hl, n - hl);
}

static void on_hdr(struct esock_qp *qp, const struct esock_mpa_ev *ev)
{
	struct ep_rx_cur *c = &qp->rxc;
	const struct esock_rdmap_opinfo *oi;
	struct esock_term t = { 0 };
	ssize_t hl;

	memset(c, 0, offsetof(struct ep_rx_cur, iov)); /* iov is filled as iovcnt says */
	c->ctrl_len = 0;
	c->ulpdu_len = ev->ulpdu_len;
	/*
	 * The next stage read's size follows a message's first FPDU: the short
	 * last one of a large message (65536 octets make 65458 + 78 on
	 * loopback) says nothing of the next message, and a large stage read
	 * after it would take that message's payload into the stage, one copy
	 * more, instead of straight into place.
	 */
	if (!qp->rx_cont)
		qp->rx_small = ev->ulpdu_len < EP_DIRECT_MIN;
	/*
	 * Behind a payload read straight into place: a small FPDU there (the
	 * short last one of a large message: 78 octets behind 65458 for 64 KiB
	 * on loopback) is read with the payload that ends at the same message
	 * offset next time (messages of one size repeat), CRC and the header
	 * after it included, so such a message costs one receive call, not two.
	 * Behind the others a short tail: what a tail takes of a large payload
	 * is copied out of the stage.
	 */
	if (qp->rx_was_direct) {
		size_t whole = ESOCK_MPA_LEN_LEN + ev->ulpdu_len + esock_mpa_pad_len(ev->ulpdu_len) +
			       ESOCK_MPA_CRC_LEN;

		qp->rx_was_direct = false;
		if (whole <= TAIL_SMALL_MAX) {
			qp->rx_tail = (uint16_t)(whole + STAGE_TAIL);
			qp->rx_tail_at = qp->rx_direct_end;
		} else if (qp->rx_tail_at == qp->rx_direct_end) {
			qp->rx_tail = 0; /* (that size of message is over) */
		}
	}
	qp->rx_cont = ev->len && !(ev->data[0] & ESOCK_DDP_CTRL_L);
	memcpy(c->hdr, ev->data, ev->len);
	oi = ev->len ? esock_rdmap_opinfo(ev->data[1] & ESOCK_RDMAP_CTRL_OPCODE) : NULL;
	if (oi && oi->payload && oi->hlen == 0) {
		size_t dl = esock_ddp_hdr_len(ev->data[0]);

		hl = esock_rdmap_decode(&c->m, ev->data, ev->len < dl ? ev->len : dl, &dec_opts, &t);
		if (hl < 0)
			return ep_tx_terminate(qp, &t, ev->data, ev->ulpdu_len);
		return on_place_hdr(qp, ev->data, ev->len, (size_t)hl);
	}
	/* Control message: gather it whole, or judge what we have. */
	if (ev->ulpdu_len > EP_CTRL_MAX) {
		hl = esock_rdmap_decode(&c->m, ev->data, ev->len, &dec_opts, &t);
		if (hl >= 0 || hl == -EBADMSG) {
			t.valid = false;
			esock_term_set(&t, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
				       ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM,
				       ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D);
		}
		return ep_tx_terminate(qp, &t, ev->data, ev->ulpdu_len);
	}
	c->kind = EP_RX_CTRL;
	memcpy(c->ctrl, ev->data, ev->len);
	c->ctrl_len = ev->len;
}

static void on_data(struct esock_qp *qp, const uint8_t *p, size_t n)
{
	struct ep_rx_cur *c = &qp->rxc;

	if (c->kind == EP_RX_PLACE) {
		put_payload(c, p, n);
	} else if (c->kind == EP_RX_CTRL && c->ctrl_len + n <= EP_CTRL_MAX) {
		memcpy(c->ctrl + c->ctrl_len, p, n);
		c->ctrl_len += n;
	}
}

/* ---- end of segment ---- */

static void deliver_recvs(struct esock_qp *qp, unsigned flags, uint32_t inval)
{
	struct esock_ddp_completion dc;

	while (esock_ddp_place_poll(&qp->place, &dc) == 1) {
		if (dc.buf.cookie == RX_NOW_COOKIE) { /* in the caller's buffer: no completion */
			rxt_filled(qp, dc.len);
			continue;
		}
		qp->rxt.on = false; /* (a message in a posted receive: those behind it follow it) */
		qp->rxt.pooled = true; /* (or stay for the caller's next call: leave_for_next_call) */
		struct esock_wc wc = { .wr_id = EP_RQE(qp, (uint32_t)dc.buf.cookie)->wr_id,
				       .status = ESOCK_WC_SUCCESS, .opcode = ESOCK_WC_RECV,
				       .byte_len = (uint32_t)dc.len, .qp_num = qp->num,
				       .flags = flags, .invalidated_stag = inval };

		ep_ring_release(&qp->rqr, qp->rq_done++);
		ep_cq_push(qp->rcq, &wc, flags & ESOCK_WC_SOLICITED);
	}
}

static void end_send(struct esock_qp *qp)
{
	const struct esock_rdmap_msg *m = &qp->rxc.m;
	const struct ep_rx_op *op = ep_rx_op(m->opcode);
	unsigned flags = op->wc_flags;

	if (!m->ddp.last)
		return;
	if (op->inval) {
		if (ep_mr_invalidate_remote(qp->pd, m->inval_stag) < 0)
			return term_at(qp, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_PROTECTION,
				       ESOCK_TERM_RDMAP_CANT_INVALIDATE,
				       ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D, qp->rxc.hdr,
				       qp->rxc.ulpdu_len);
		flags |= ESOCK_WC_WITH_INV;
	}
	deliver_recvs(qp, flags, m->inval_stag);
}

static void end_read_resp(struct esock_qp *qp)
{
	struct ep_sqe *e;

	if (!qp->rxc.m.ddp.last)
		return;
	if (qp->orq_n == 0) {
		qp->rtr_read_out = false;
		return;
	}
	e = EP_SQE(qp, qp->orq[qp->orq_head % qp->orq_cap]);
	qp->resp_got = 0; /* the next Read's Response starts */
	qp->orq_head++;
	qp->orq_n--;
	e->done = true;
	e->status = ESOCK_WC_SUCCESS;
	ep_qp_complete_sq(qp);
}

/* RFC 5040 §4.4: checks at the Data Source, then queue the response. */
static void on_read_req(struct esock_qp *qp, const struct esock_rdmap_msg *m, const uint8_t *seg,
			size_t len)
{
	const struct esock_rdmap_read_req *r = &m->u.read_req;
	const uint8_t hc = ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D | ESOCK_TERM_HDRCT_R;
	struct esock_ddp_region reg = { 0 };
	int code = -1;

	if (qp->irq_n >= qp->info.ird || qp->irq_n >= qp->irq_cap)
		/* More Reads than the IRD we announced: siw's code for it. */
		return term_at(qp, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
			       ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, hc, seg, len);
	if (r->size) {
		if (ep_mr_region(r->src_stag, &reg) < 0)
			code = ESOCK_TERM_RDMAP_INV_STAG;
		else if (reg.pd != qp->pd->id)
			code = ESOCK_TERM_RDMAP_STAG_NOT_ASSOC;
		else if (!(reg.access & ESOCK_DDP_ACCESS_REMOTE_READ))
			code = ESOCK_TERM_RDMAP_ACCESS;
		else if (r->src_to > UINT64_MAX - (r->size - 1))
			code = ESOCK_TERM_RDMAP_TO_WRAP;
		else if (r->src_to < reg.base || r->src_to - reg.base > reg.len ||
			 r->size > reg.len - (r->src_to - reg.base))
			code = ESOCK_TERM_RDMAP_BASE_BOUNDS;
		if (code >= 0)
			return term_at(qp, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_PROTECTION,
				       (uint8_t)code, hc, seg, len);
	}
	struct ep_irqe *q = &qp->irq[(qp->irq_head + qp->irq_n) % qp->irq_cap];

	q->src = r->size ? reg.addr + (r->src_to - reg.base) : NULL;
	q->len = r->size;
	q->sink_stag = r->sink_stag;
	q->sink_to = r->sink_to;
	qp->irq_n++;
	atomic_fetch_or(&qp->want, EP_WANT_TX);
}

static void on_terminate(struct esock_qp *qp, const struct esock_rdmap_msg *m)
{
	const struct esock_term *t = &m->u.term.t;
	enum esock_wc_status st = ESOCK_WC_REM_OP_ERR;

	if ((t->layer == ESOCK_TERM_LAYER_RDMAP && t->etype == ESOCK_TERM_RDMAP_ETYPE_PROTECTION) ||
	    (t->layer == ESOCK_TERM_LAYER_DDP && t->etype == ESOCK_TERM_DDP_ETYPE_TAGGED))
		st = ESOCK_WC_REM_ACCESS_ERR;
	log_warn("[qp %u fd %d] peer Terminate: %s (%s bit order)", qp->num, qp->fd,
		 esock_term_str(t->layer, t->etype, t->ecode),
		 m->u.term.order == ESOCK_RDMAP_TERM_SIW ? "siw" : "RFC");
	ep_qp_fail(qp, t, false, -ECONNRESET, st);
}

static void end_ctrl(struct esock_qp *qp)
{
	struct ep_rx_cur *c = &qp->rxc;
	struct esock_term t = { 0 };
	ssize_t hl = esock_rdmap_decode(&c->m, c->ctrl, c->ctrl_len, &dec_opts, &t);
	uint32_t qn = c->m.ddp.qn;

	if (hl < 0)
		return ep_tx_terminate(qp, &t, c->ctrl, c->ctrl_len);
	if (qn > ESOCK_DDP_QN_TERMINATE || c->m.ddp.msn != qp->msn_rx[qn])
		return term_at(qp, ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED,
			       ESOCK_TERM_DDP_U_MSN_RANGE, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D,
			       c->ctrl, c->ctrl_len);
	qp->msn_rx[qn]++;
	if (ep_rx_op(c->m.opcode)->kind == EP_RXK_READ_REQ)
		on_read_req(qp, &c->m, c->ctrl, c->ctrl_len);
	else if (ep_rx_op(c->m.opcode)->kind == EP_RXK_TERMINATE)
		on_terminate(qp, &c->m);
	else /* decoded with RFC 7306 off: cannot happen */
		term_at(qp, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION,
			ESOCK_TERM_RDMAP_OPCODE, ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D, c->ctrl,
			c->ctrl_len);
}

static void on_end(struct esock_qp *qp)
{
	struct ep_rx_cur *c = &qp->rxc;

	if (qp->tx_hold) { /* the initiator's first FPDU (RTR or not) came and was valid */
		qp->tx_hold = false;
		if (qp->lazy) /* from now on its callers read its input */
			ep_engine_refresh(qp);
		atomic_fetch_or(&qp->want, EP_WANT_TX);
	}
	if (c->kind == EP_RX_CTRL)
		end_ctrl(qp);
	else if (c->kind == EP_RX_PLACE && !c->m.ddp.tagged)
		end_send(qp);
	else if (c->kind == EP_RX_PLACE && ep_rx_op(c->m.opcode)->kind == EP_RXK_READ_RESP)
		end_read_resp(qp);
	else if (c->kind == EP_RX_PLACE && c->m.ddp.tagged && c->m.ddp.stag == EP_CREDIT_STAG)
		atomic_fetch_or(&qp->want, EP_WANT_TX); /* credits: waiting Sends may go (ep_tx.c) */
	c->kind = EP_RX_NONE;
}

/*
 * An FPDU that came whole (the usual case for small ones): its CRC is already
 * verified, so it is checked and placed in one go, before anything is written.
 */
static void on_whole(struct esock_qp *qp, const struct esock_mpa_ev *ev)
{
	struct esock_mpa_ev h = *ev;
	size_t k = ev->len < ESOCK_DDP_UNTAGGED_HLEN ? ev->len : ESOCK_DDP_UNTAGGED_HLEN;

	h.type = ESOCK_MPA_EV_HDR;
	h.len = k;
	h.ulpdu_len = (uint16_t)ev->len;
	qp->rx_in_whole = true;
	on_hdr(qp, &h);
	qp->rx_in_whole = false;
	if (!rx_alive(qp))
		return;
	if (ev->len > k)
		on_data(qp, ev->data + k, ev->len - k);
	on_end(qp);
}

/*
 * Header prediction (as TCP's): the commonest FPDU of a stream, a whole plain
 * Send (no Solicited Event, no Invalidate) with no message half-placed before
 * it, is recognized in one look and copied where it goes, skipping the
 * general decode, placement and delivery; the MPA layer has checked its
 * framing and CRC.  It goes to the caller's buffer of ep_qp_recv_now when
 * that takes it, else (no such call) to the next posted receive when that
 * takes it whole, completed at once as deliver_recvs would (same completion,
 * same order).  Anything else, or anything odd about it, a message too long
 * for the receive among them, goes the general way, which judges it.
 */
static bool fast_send(struct esock_qp *qp, const struct esock_mpa_ev *ev)
{
	uint32_t msn;
	size_t hl, pay;

	if (qp->rq_next != qp->rq_done || qp->mo_rx || qp->tx_hold ||
	    !(hl = esock_rdmap_plain_send(ev->data, ev->len, &msn)))
		return false;
	pay = ev->len - hl;
	if (msn != qp->msn_rx[ESOCK_DDP_QN_SEND] ||
	    (qp->rxt.on ? pay > qp->rxt.room - qp->rxt.promised
			: !rq_ready(qp) || pay > EP_RQE(qp, qp->rq_next)->len) ||
	    esock_ddp_place_whole(&qp->place, ESOCK_DDP_QN_SEND, msn) < 0)
		return false;
	if (qp->rxt.on) {
		memcpy(rxt_claim(qp, pay, msn), ev->data + hl, pay);
		rxt_filled(qp, pay);
	} else {
		struct ep_rqe *r = EP_RQE(qp, qp->rq_next++);
		struct esock_wc wc = { .wr_id = r->wr_id, .status = ESOCK_WC_SUCCESS,
				       .opcode = ESOCK_WC_RECV, .byte_len = (uint32_t)pay,
				       .qp_num = qp->num };

		rqe_fill(r, ev->data + hl, pay);
		ep_ring_release(&qp->rqr, qp->rq_done++);
		ep_cq_push(qp->rcq, &wc, false);
	}
	qp->msn_rx[ESOCK_DDP_QN_SEND]++;
	qp->rx_small = ev->len < EP_DIRECT_MIN; /* (as on_hdr: the next stage read's size) */
	qp->rx_cont = false;
	return true;
}

/* ---- the driver ---- */

static bool rx_alive(struct esock_qp *qp)
{
	int st = atomic_load(&qp->state);

	return (st == ESOCK_QPS_RTS || st == ESOCK_QPS_CLOSING) && !qp->term_pending &&
	       !atomic_load(&qp->rx_eof);
}

/* Feeds |p| (|len| octets) to MPA; returns octets consumed or -1 after an error. */
static ssize_t feed(struct esock_qp *qp, const uint8_t *p, size_t len)
{
	struct esock_mpa_ev ev;
	ssize_t n = esock_mpa_rx_feed(&qp->rx, p, len, &ev);

	if (n < 0) {
		ep_tx_terminate(qp, esock_mpa_rx_term(&qp->rx), NULL, 0);
		return -1;
	}
	if (ev.type == ESOCK_MPA_EV_ULPDU) {
		if (!fast_send(qp, &ev))
			on_whole(qp, &ev);
	}
	else if (ev.type == ESOCK_MPA_EV_HDR)
		on_hdr(qp, &ev);
	else if (ev.type == ESOCK_MPA_EV_DATA)
		on_data(qp, ev.data, ev.len);
	else if (ev.type == ESOCK_MPA_EV_END)
		on_end(qp);
	return rx_alive(qp) ? n : -1;
}

/*
 * Reads once: straight into the payload's target when much of it is still
 * to come (markers off: they would land in the target), followed in the same
 * call by a few stage octets that catch the CRC and the next FPDU's header,
 * so a stream of large FPDUs costs one system call each; else into the
 * stage.  Returns octets read, 0 at EOF, or -errno; |*direct| is how many of
 * them went to the target (the rest are in the stage); |*asked| how many
 * were asked for (fewer came: the socket is drained for now).
 */
static ssize_t read_some(struct esock_qp *qp, size_t *direct, size_t *asked)
{
	struct ep_rx_cur *c = &qp->rxc;
	struct iovec iov[EP_SGE_MAX + 1];
	size_t left = c->payload_len - c->got, off = c->got;
	int cnt = 0;
	ssize_t n;

	*direct = 0;
	/*
	 * Straight into place: a large payload's rest, also the rest of one that
	 * a read cut short (the writer not yet there) that no stage read would
	 * take in one go: the stage would take it 4 KiB per call, each copied.
	 */
	if (c->kind == EP_RX_PLACE && !qp->info.markers_rx &&
	    (left >= EP_DIRECT_MIN || (c->payload_len >= EP_DIRECT_MIN && left > STAGE_READ)) &&
	    !atomic_load(&ep_restricted)) { /* (restricted: one read into the stage) */
		while (left && cnt < EP_SGE_MAX) {
			size_t room;
			uint8_t *dst = target_at(c, off, &room);

			if (!dst)
				break;
			if (room > left)
				room = left;
			iov[cnt].iov_base = dst;
			iov[cnt++].iov_len = room;
			*direct += room;
			off += room;
			left -= room;
		}
	}
	/* Behind what the stage still holds (a partial header kept for a look). */
	iov[cnt].iov_base = qp->stage + qp->stage_len;
	if (*direct) {
		/* Where this payload ends in its message: a small FPDU behind it last time? */
		qp->rx_direct_end = (c->m.ddp.tagged ? c->m.ddp.to : c->m.ddp.mo) + c->payload_len;
		iov[cnt].iov_len = qp->rx_tail && qp->rx_direct_end == qp->rx_tail_at ? qp->rx_tail
										 : STAGE_TAIL;
	} else {
		iov[cnt].iov_len = qp->rx_small ? STAGE_READ_SMALL : STAGE_READ;
	}
	qp->rx_was_direct = *direct > 0;
	if (iov[cnt].iov_len > EP_STAGE_LEN - qp->stage_len) /* (it holds a few octets at most) */
		iov[cnt].iov_len = EP_STAGE_LEN - qp->stage_len;
	*asked = *direct + iov[cnt++].iov_len;
	/* MSG_DONTWAIT: the socket may be a blocking one adopted from the application. */
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };

	if (atomic_load(&ep_restricted))
		n = ep_restricted_read(qp->fd, iov[0].iov_base, iov[0].iov_len);
	else
		do /* one piece: recv() spares recvmsg's msghdr and iovec copies (see ep_txbatch.c) */
			n = cnt == 1 ? REAL(recv)(qp->fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT)
				     : REAL(recvmsg)(qp->fd, &mh, MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Feeds octets that were read straight into the target, piece by piece. */
static int feed_direct(struct esock_qp *qp, size_t n)
{
	while (n) {
		size_t room;
		uint8_t *dst = target_at(&qp->rxc, qp->rxc.got, &room);
		ssize_t k;

		if (room > n)
			room = n;
		if ((k = feed(qp, dst, room)) < 0)
			return -1;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * The MPA length and untagged header at |p| (markers off) start a Send's
 * first FPDU with payload: untagged, QN 0, MO 0.
 */
static bool send_starts(const uint8_t *p)
{
	const uint8_t *h = p + ESOCK_MPA_LEN_LEN;

	return esock_get_be16(p) > ESOCK_DDP_UNTAGGED_HLEN && !(h[0] & ESOCK_DDP_CTRL_T) &&
	       esock_get_be32(h + 6) == ESOCK_DDP_QN_SEND && esock_get_be32(h + 14) == 0;
}

/*
 * The untagged header at |p| (behind the MPA length, markers off) is that of
 * a whole message the caller's buffer of ep_qp_recv_now has room for.
 */
static bool now_fits(const struct esock_qp *qp, const uint8_t *p)
{
	size_t pay = esock_get_be16(p) - (size_t)ESOCK_DDP_UNTAGGED_HLEN;

	return qp->rxt.on && !qp->info.markers_rx && qp->rq_next == qp->rq_done && send_starts(p) &&
	       (p[ESOCK_MPA_LEN_LEN] & ESOCK_DDP_CTRL_L) && pay <= qp->rxt.room - qp->rxt.promised;
}

/*
 * With wait_for_recv: between FPDUs, looks at the next header in the stage
 * before MPA consumes it.  Returns 0 to go on, 1 when it is a Send that needs
 * a receive buffer and none is posted (stop reading: TCP pushes back), 2 when
 * the stage holds too little of the header to tell.
 */
static int must_wait(struct esock_qp *qp)
{
	const uint8_t *p = qp->stage + qp->stage_off;
	size_t avail = qp->stage_len - qp->stage_off;
	uint8_t hdr[ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN];
	uint32_t qn, msn;

	if (!esock_mpa_rx_idle(&qp->rx))
		return 0;
	if (qp->info.markers_rx) { /* the header as it will be parsed, markers left out */
		avail = esock_mpa_rx_peek(&qp->rx, p, avail, hdr, sizeof(hdr));
		p = hdr;
	}
	if (avail < ESOCK_MPA_LEN_LEN + 1)
		return 2;
	if (p[ESOCK_MPA_LEN_LEN] & ESOCK_DDP_CTRL_T)
		return 0; /* tagged: needs no posted buffer */
	if (avail < ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN)
		return 2;
	qn = esock_get_be32(p + ESOCK_MPA_LEN_LEN + 6);
	msn = esock_get_be32(p + ESOCK_MPA_LEN_LEN + 10);
	if (qn != ESOCK_DDP_QN_SEND || esock_get_be16(p) < ESOCK_DDP_UNTAGGED_HLEN)
		return 0; /* not a Send, or malformed: the parser says what it is */
	if (esock_ddp_place_msg_buf(&qp->place, qn, msn))
		return 0; /* a later segment of a message that has its buffer */
	if (now_fits(qp, p))
		return 0; /* the caller's buffer takes it (no receive posted for it) */
	return rq_ready(qp) ? 0 : 1;
}

/*
 * Between FPDUs, the stage begins with a message the caller's buffer of
 * ep_qp_recv_now would take, but not all of its FPDU is read yet: fed now,
 * it would need a posted receive (only an FPDU read whole is placed in the
 * caller's buffer).
 */
static bool now_partial(const struct esock_qp *qp)
{
	const uint8_t *p = qp->stage + qp->stage_off;
	size_t avail = qp->stage_len - qp->stage_off;

	return qp->rxt.on && esock_mpa_rx_idle(&qp->rx) &&
	       avail >= ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN && now_fits(qp, p) &&
	       esock_mpa_fpdu_len(esock_get_be16(p), false, 0) > avail;
}

/*
 * An ep_qp_recv_now call whose buffer holds whole messages, and the next one
 * would not fit the rest of it: read now, it would go to a posted receive
 * and be copied out at the caller's next call (64 KiB socket stream on one
 * CPU: every other message, 13 % of the CPU time).  It is left where it is
 * instead, as TCP's read returns what it has, and the next call reads it
 * straight into its own buffer.  LEAVE_PART: the stage holds less than its
 * first FPDU, the kernel's queue the rest, so the socket stays readable for
 * poll and epoll.  LEAVE_WHOLE: its FPDU is all in the stage (a stream of
 * small messages, read 64 KiB at a time, and a reader that takes one per
 * call: 94 % of 4 KiB messages went through the pool, two copies and five
 * locks each), only when the caller said it looks at ep_qp_rx_staged
 * (EP_NOW_STAY), as nothing in the kernel's socket says that it is there,
 * and no other thread is waiting for it (such a waiter sleeps on the
 * socket; one that begins to wait meanwhile sees rx_staged).  Otherwise it
 * is fed as before.  A call whose message completed in a posted receive
 * (one lent back at the end of the call before) has its answer too: what
 * comes behind stays as well, instead of following it into receives, each
 * one cut by the read's end lent again and so on for the rest of the
 * stream (a reader slower than its writer, under valgrind: 46 of 48 64 KiB
 * messages copied out of the pool).
 */
enum { LEAVE_NO, LEAVE_PART, LEAVE_WHOLE };

static int leave_for_next_call(const struct esock_qp *qp)
{
	const uint8_t *p = qp->stage + qp->stage_off;
	size_t avail = qp->stage_len - qp->stage_off, ulen;
	bool fits;

	if (!qp->rxt.in_call || !(qp->rxt.msgs || qp->rxt.pooled) || qp->rxt.open || qp->info.markers_rx ||
	    !esock_mpa_rx_idle(&qp->rx) || avail < ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN ||
	    !send_starts(p))
		return LEAVE_NO;
	ulen = esock_get_be16(p);
	fits = !qp->rxt.pooled && ulen - ESOCK_DDP_UNTAGGED_HLEN <= qp->rxt.room - qp->rxt.promised;
	if (esock_mpa_fpdu_len(ulen, false, 0) > avail)
		return fits ? LEAVE_NO : LEAVE_PART;
	return (!fits || !qp->rxt.on) && qp->rxt.stay &&
			       !atomic_load_explicit(&qp->threads_many, memory_order_relaxed) &&
			       !atomic_load_explicit(&qp->rcq->sleepers, memory_order_relaxed) &&
			       !atomic_load_explicit(&qp->rcq->pollers, memory_order_relaxed)
		       ? LEAVE_WHOLE
		       : LEAVE_NO;
}

/* Moves the unconsumed stage octets to its start, to read more behind them. */
static void stage_compact(struct esock_qp *qp)
{
	memmove(qp->stage, qp->stage + qp->stage_off, qp->stage_len - qp->stage_off);
	qp->stage_len -= qp->stage_off;
	qp->stage_off = 0;
}

/*
 * Reads and handles until the socket is drained.  A read that returns fewer
 * octets than asked for emptied the socket's queue, so a waiter (whose
 * poll() is level-triggered) spends no read on an EAGAIN, nor does the
 * engine (edge-triggered: later octets are a new edge).  A FIN that came
 * with the last data makes no edge of its own: the engine asks to |drain|
 * to EAGAIN when its event says EPOLLRDHUP (or an error), else the FIN
 * would go unnoticed.
 */
static void rx_progress(struct esock_qp *qp, bool drain)
{
	bool drained = !drain && qp->rx_took_short;

	qp->rx_took_short = false;

	/* (Stores only when set: a sequentially consistent store is an xchg, per message.) */
	if (atomic_load_explicit(&qp->rx_paused, memory_order_relaxed))
		atomic_store(&qp->rx_paused, false);
	/* (Whatever a call left in the stage is this holder's to feed or to leave again.) */
	if (atomic_load_explicit(&qp->rx_staged, memory_order_relaxed))
		atomic_store_explicit(&qp->rx_staged, false, memory_order_relaxed);
	while (rx_alive(qp)) {
		size_t asked = 0, direct;
		int w = 0;
		ssize_t n;

		if (qp->stage_off < qp->stage_len && qp->rx_wait && (w = must_wait(qp)) == 1) {
			atomic_store(&qp->rx_paused, true); /* esock_post_recv resumes */
			return;
		}
		if (w == 0 && qp->stage_off < qp->stage_len && now_partial(qp))
			w = 2; /* read the rest first: then it goes to the caller's buffer */
		if (w == 0 && qp->stage_off < qp->stage_len && (w = leave_for_next_call(qp))) {
			if (w == LEAVE_WHOLE) {
				/*
				 * A thread that began to wait meanwhile (poll, a blocking
				 * read) looks at the flag after it counted itself, and
				 * the kick wakes one counted before: it sees them.
				 */
				atomic_store(&qp->rx_staged, true);
				ep_cq_kick(qp->rcq);
			}
			return;
		}
		if (qp->stage_off < qp->stage_len && w != 2) {
			n = feed(qp, qp->stage + qp->stage_off, qp->stage_len - qp->stage_off);
			if (n < 0)
				return;
			qp->stage_off += (size_t)n;
			continue;
		}
		stage_compact(qp);
		if (drained)
			return;
		n = read_some(qp, &direct, &asked);
		/* (Short or nothing: the kernel's queue was empty then; ep_qp_rx_seen_empty.) */
		qp->rx_empty = n == -EAGAIN || n == -EWOULDBLOCK || (n > 0 && (size_t)n < asked);
		qp->rx_full_reads += n > 0 && (size_t)n == asked;
		qp->rx_reads += n > 0;
		if (qp->rx_empty && n < 0)
			return;
		/* (Still holding for its first FPDU, the peer's FIN ends it all: we could never send.) */
		if (n == 0 && qp->half_close && !qp->orq_n && !qp->tx_hold &&
		    qp->stage_off == qp->stage_len && esock_mpa_rx_idle(&qp->rx)) {
			/* The peer half-closed between FPDUs: receiving ends, sending goes on. */
			log_debug("[qp %u fd %d] the peer half-closed", qp->num, qp->fd);
			atomic_store(&qp->rx_eof, true);
			ep_qp_flush_rq(qp);
			ep_cq_kick(qp->rcq);
			return;
		}
		if (n <= 0) {
			struct esock_term t = { 0 };
			/*
			 * A FIN between FPDUs is the peer's orderly close (-ESHUTDOWN); a
			 * FIN inside an FPDU cut a message short (-ECONNABORTED), and a
			 * reset is -ECONNRESET: neither may look like the end of the data.
			 */
			bool orderly = n == 0 && qp->stage_off == qp->stage_len && esock_mpa_rx_idle(&qp->rx);
			int err = n < 0 ? (int)n : orderly ? -ESHUTDOWN : -ECONNABORTED;

			esock_term_set(&t, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA,
				       ESOCK_TERM_LLP_CONN_LOST, 0);
			log_debug("[qp %u fd %d] connection %s", qp->num, qp->fd,
				  orderly ? "closed by the peer" : n == 0 ? "closed inside an FPDU" : "lost");
			ep_qp_fail(qp, &t, false, err, orderly ? ESOCK_WC_WR_FLUSH_ERR : ESOCK_WC_FATAL_ERR);
			return;
		}
		drained = !drain && (size_t)n < asked;
		ep_sockbuf_moved(qp, (size_t)n);
		if (direct > (size_t)n)
			direct = (size_t)n;
		qp->stage_len += (size_t)n - direct;
		if (direct && feed_direct(qp, direct) < 0)
			return;
	}
}

/* Gives the QP a stage if it has none; false (the QP failed) without memory. */
static bool stage_get(struct esock_qp *qp)
{
	bool fresh;

	if (qp->stage)
		return true;
	if (!(qp->stage = ep_spare_get(EP_SPARE_STAGE, EP_STAGE_LEN, &fresh))) {
		struct esock_term t = { 0 };

		esock_term_set(&t, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_CATASTROPHIC,
			       ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, 0);
		ep_qp_fail(qp, &t, true, -ENOMEM, ESOCK_WC_FATAL_ERR);
		return false;
	}
	qp->stage_off = qp->stage_len = 0;
	return true;
}

/* (Asked only of an idle QP, which holds no stage: the one it gets is empty.) */
bool ep_rx_sleep_stage(struct esock_qp *qp)
{
	return stage_get(qp);
}

/*
 * The stage is empty and only this thread may touch it (qp->rx_sleeper);
 * the read is the one read_some would make there, without MSG_DONTWAIT:
 * the file is blocking (EP_NOW_SLEEP), so it waits as a TCP read does.
 */
ssize_t ep_rx_sleep_read(struct esock_qp *qp, size_t *asked)
{
	ssize_t n;

	*asked = qp->rx_small ? STAGE_READ_SMALL : STAGE_READ;
	n = REAL(recv)(qp->fd, qp->stage, *asked, 0);
	return n < 0 ? -errno : n;
}

void ep_rx_sleep_took(struct esock_qp *qp, ssize_t n, size_t asked)
{
	if (n <= 0)
		return; /* (an EOF is read again, and judged, by the next read) */
	qp->rx_empty = qp->rx_took_short = (size_t)n < asked;
	qp->rx_reads++;
	ep_sockbuf_moved(qp, (size_t)n);
	qp->stage_len = (size_t)n;
}

/* The stage is held only while it holds octets: an idle QP keeps none (ep_spare.h). */
void ep_rx_progress(struct esock_qp *qp, bool drain)
{
	/* A reader asleep in the socket's receive has the right to read: it feeds what it gets. */
	if (atomic_load_explicit(&qp->rx_sleeper, memory_order_acquire))
		return;
	if (!stage_get(qp))
		return;
	rx_progress(qp, drain);
	if (qp->stage_off == qp->stage_len) {
		ep_spare_put(EP_SPARE_STAGE, qp->stage);
		qp->stage = NULL;
		qp->stage_off = qp->stage_len = 0;
	}
}
