/* SPDX-License-Identifier: MIT */
/*
 * Transmit progress of one QP (token holder only).  One FPDU at a time: the
 * DDP/RDMAP header is encoded into a few octets of QP scratch, the payload
 * pieces point at the application's registered memory, and the MPA plan
 * (length, pad, markers, CRC) goes out with one sendmsg, without staging
 * copies (a small FPDU is copied whole instead: one piece, one CRC call); a
 * short write resumes where it stopped when the socket drains.
 * Between messages the next one is picked: a pending Terminate first, the
 * RFC 6581 RTR, Read Responses (RFC 5040 §4.5), then the send queue, whose
 * RDMA Reads respect the ORD and the fence flag.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint/ep.h"
#include "endpoint/ep_ops.h"
#include "libc/real.h"
#include "util/byteorder.h"
#include "util/log.h"

/*
 * A message of one FPDU: a batch of them with another queued behind goes
 * with MSG_MORE (write_batch).  Not a larger one: TCP would hold its last
 * segment back for what comes next, and a reader on another CPU waits for it.
 */
static bool one_fpdu(const struct esock_qp *qp, uint64_t len)
{
	return len + ESOCK_RDMAP_HDR_MAX <= qp->mulpdu;
}

/*
 * A Send whose payload of |len| octets makes one FPDU as the segmenter cuts
 * it (ddp_seg.c: payloads of mulpdu less the header, in multiples of 4), so
 * framing it at once (frame_plain_send) puts the same octets on the wire.
 */
static bool plain_fits(const struct esock_qp *qp, uint64_t len)
{
	return len && !qp->info.markers_tx && qp->mulpdu >= ESOCK_DDP_UNTAGGED_HLEN + 4 &&
	       len <= ((qp->mulpdu - ESOCK_DDP_UNTAGGED_HLEN) & ~(uint64_t)3);
}

/*
 * Towards a packing peer, messages of at most two FPDUs are packed: they
 * share segments and join one sendmsg, their FPDUs falling where TCP cuts
 * the stream.  A 64 KiB message is two FPDUs on loopback (65458 + 78
 * octets): aligned, its short tail makes a segment of its own, every other
 * segment (and wake-up of the reader) a tiny one; packed, it costs what TCP's
 * own writes cost (64 KiB endpoint Sends on one CPU 0.77x TCP aligned, 0.96x
 * packed; Reads 0.51x, 1.18x).  A larger message fills segments by itself
 * and starts aligned to them (MSG_EOR before and after it): its short
 * segment is one in many, while FPDUs that all straddle segments cost the
 * reader more.  A socket's QP packs only messages of one FPDU
 * (ep_qp_set_pack_one).  docs/benchmarks.md, "Messages of two FPDUs packed".
 */
static bool joinable(const struct esock_qp *qp, uint64_t len)
{
	return one_fpdu(qp, len) ||
	       (!qp->tx_pack_one && len + 2 * ESOCK_RDMAP_HDR_MAX <= 2 * (uint64_t)qp->mulpdu);
}

/* The payload a send WR puts on the wire (a Read Request carries none). */
static uint64_t wire_len(const struct ep_sqe *e)
{
	return ep_wr_op(e->opcode)->read ? 0 : e->len;
}

/* The payload of the message being written (0: an RTR or a Terminate). */
static uint64_t cur_len(const struct esock_qp *qp)
{
	if (qp->txc.kind == EP_TX_SQ)
		return wire_len(qp->txc.sqe);
	if (qp->txc.kind == EP_TX_NOW)
		return qp->txc.now_len;
	return qp->txc.kind == EP_TX_READ_RESP ? qp->txc.resp_sge.length : 0;
}

/*
 * Is a message queued behind the one being written (its WR or Response still
 * counted)?  Its payload in *len.  A Read Response goes first (pick_next).
 */
static bool next_queued(const struct esock_qp *qp, uint64_t *len)
{
	bool sq = qp->txc.kind == EP_TX_SQ;
	uint32_t resp = qp->txc.kind == EP_TX_READ_RESP ? 1u : 0u;
	uint32_t pos = qp->sq_tx + (sq ? 1u : 0u);

	if (qp->irq_n > resp) {
		*len = qp->irq[(qp->irq_head + resp) % qp->irq_cap].len;
		return true;
	}
	if (!ep_ring_ready(&qp->sqr, pos))
		return false;
	*len = wire_len(EP_SQE(qp, pos));
	return true;
}

static bool joinable_behind(const struct esock_qp *qp)
{
	uint64_t len;

	return next_queued(qp, &len) && joinable(qp, len);
}

/* Writes what is left of the batch.  True once it is all out. */
static bool write_batch(struct esock_qp *qp)
{
	/* A lone RTR waits for the first message (or a wait for input: ep_qp_uncork). */
	bool cork = qp->txc.kind == EP_TX_RTR && qp->rtr_cork && !qp->prof->first_fpdu_delay_ms &&
		    !ep_ring_ready(&qp->sqr, qp->sq_tx) && !atomic_load(&ep_restricted);
	/*
	 * Towards a peer that takes FPDUs packed, a batch of one-FPDU messages
	 * with another queued behind it goes with MSG_MORE: TCP then fills whole
	 * segments with them, as it merges its own small writes, instead of one
	 * segment (and one wake-up of the receiver) each.  The
	 * next write without it pushes everything; if none follows,
	 * ep_tx_progress pushes (push_held).
	 */
	struct ep_batch *b = &qp->txw->batch;
	uint64_t next = 0;
	bool queued = next_queued(qp, &next);
	bool join = joinable(qp, cur_len(qp));
	bool more = b->pack && b->ends_msg && one_fpdu(qp, cur_len(qp)) && !cork && queued &&
		    one_fpdu(qp, next) && !atomic_load(&ep_restricted);
	int rc;

	b->more = cork || more;
	/* (a large message, or one before a large one: the next starts a segment) */
	b->eor = b->ends_msg && (!b->pack || !join || (queued && !joinable(qp, next)));
	if (!cork && qp->txc.kind != EP_TX_RTR)
		atomic_store(&qp->rtr_corked, false); /* (a write without MSG_MORE pushes all) */
	size_t left = qp->txw->batch.left;

	rc = ep_batch_write(&qp->txw->batch, qp->fd);
	ep_sockbuf_moved(qp, left - qp->txw->batch.left);
	if (rc > 0)
		qp->tx_more = more;
	else if (more)
		qp->tx_more = true; /* part of it may be held: pushed once the rest is out */
	if (cork && rc > 0) { /* noted once written: a push must come after the write */
		atomic_store(&qp->rtr_corked, true);
		ep_cork_note(qp);
	}
	if (rc == 0 && !qp->pollout)
		ep_engine_want_out(qp, true);
	if (rc < 0) {
		struct esock_term t = { 0 };

		esock_term_set(&t, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA,
			       ESOCK_TERM_LLP_CONN_LOST, 0);
		ep_qp_fail(qp, &t, false, rc, ESOCK_WC_FATAL_ERR);
	}
	return rc > 0;
}

void ep_tx_terminate(struct esock_qp *qp, const struct esock_term *t, const uint8_t *seg,
		     size_t len)
{
	struct esock_rdmap_term tm;
	ssize_t n;

	if (qp->term_pending || atomic_load(&qp->state) == ESOCK_QPS_ERROR)
		return;
	esock_rdmap_term_build(&tm, t, seg, len);
	tm.order = qp->prof ? qp->prof->term_order : ESOCK_RDMAP_TERM_RFC;
	n = esock_rdmap_term_msg(&tm, qp->msn_tx[ESOCK_DDP_QN_TERMINATE]++, qp->termbuf,
				 sizeof(qp->termbuf));
	qp->has_err = true;
	qp->err.sent = true;
	qp->err.term = *t;
	qp->err.err = -EPROTO;
	log_info("[qp %u fd %d] sending Terminate: %s", qp->num, qp->fd,
		 esock_term_str(t->layer, t->etype, t->ecode));
	if (n < 0) {
		ep_qp_fail(qp, t, true, -EPROTO, ESOCK_WC_WR_FLUSH_ERR);
		return;
	}
	qp->txc.last_fpdu_built = false; /* the message in progress is abandoned */
	qp->txc.kind = EP_TX_NONE;
	qp->term_pending = true;
	qp->term_len = (size_t)n;
	atomic_fetch_or(&qp->want, EP_WANT_TX);
}

/* A send WR whose last FPDU is out: done, unless a Read (done when its Response is in). */
static void sqe_written(struct ep_sqe *e)
{
	if (!ep_wr_op(e->opcode)->read) {
		e->done = true;
		e->status = ESOCK_WC_SUCCESS;
	}
}

/* The message whose last FPDU just went out. */
static void msg_done(struct esock_qp *qp)
{
	struct ep_tx_cur *c = &qp->txc;

	if (c->kind == EP_TX_SQ) {
		struct ep_sqe *e = c->sqe;

		e->sent = true;
		sqe_written(e);
		qp->sq_tx++;
		ep_qp_complete_sq(qp);
	} else if (c->kind == EP_TX_READ_RESP) {
		qp->irq_head++;
		qp->irq_n--;
	} else if (c->kind == EP_TX_TERM) {
		ep_qp_fail(qp, &qp->err.term, true, -EPROTO, ESOCK_WC_WR_FLUSH_ERR);
	} /* (EP_TX_NOW: no WR to complete) */
	c->kind = EP_TX_NONE;
	c->last_fpdu_built = false;
}

static void seg_start(struct esock_qp *qp, struct esock_rdmap_msg *m, uint64_t len)
{
	/*
	 * A message longer than one FPDU: worth one getsockopt while the MSS
	 * grows (the first 16 of them), then at every 32nd: on loopback the MSS
	 * goes on growing (32 KiB, 46 KiB, 64 KiB) after the first burst, and a
	 * stream left at 46 KiB FPDUs pays a third more receive calls.
	 */
	if (len > qp->mulpdu && (qp->mss_checks ? qp->mss_checks-- : (++qp->mss_skip & 31) == 0))
		ep_qp_update_mulpdu(qp);
	esock_ddp_seg_init(&qp->txc.seg, &m->ddp, (size_t)len, qp->mulpdu);
	qp->txc.seg.tmpl.ulp_ctrl = esock_rdmap_ctrl(m->opcode);
}

/*
 * Starts the send WR |e|: header template and segmentation, or nothing more
 * for a plain Send of one FPDU (build_fpdu frames it whole; header
 * prediction's sending twin, as ep_tx_send_now's).
 */
static void start_sqe(struct esock_qp *qp, struct ep_sqe *e)
{
	const struct ep_wr_op *op = ep_wr_op(e->opcode);
	struct esock_rdmap_msg m;

	qp->txc.kind = EP_TX_SQ;
	qp->txc.sqe = e;
	qp->cr_sent += op->send;
	ep_sockbuf_msg(qp, wire_len(e));
	qp->txc.sge = e->sge;
	qp->txc.num_sge = e->num_sge;
	qp->txc.plain = e->opcode == ESOCK_WR_SEND && !e->inval_stag && plain_fits(qp, e->len);
	if (qp->txc.plain)
		return;
	esock_rdmap_msg_init(&m, op->rdmap);
	if (op->tagged) {
		m.ddp.stag = e->rkey;
		m.ddp.to = e->remote_addr;
	} else if (op->read) {
		m.ddp.msn = qp->msn_tx[ESOCK_DDP_QN_READ_REQ]++;
		qp->orq[(qp->orq_head + qp->orq_n++) % qp->orq_cap] = qp->sq_tx;
		qp->txc.num_sge = 0; /* the Read Request carries no payload */
		qp->txc.read_req = (struct esock_rdmap_read_req){
			.sink_stag = e->num_sge ? e->sge[0].lkey : 0,
			.sink_to = e->num_sge ? e->sge[0].addr : 0, .size = (uint32_t)e->len,
			.src_stag = e->rkey, .src_to = e->remote_addr };
	} else {
		m.ddp.msn = qp->msn_tx[ESOCK_DDP_QN_SEND]++;
		m.inval_stag = e->inval_stag;
		m.ddp.ulp_word = e->inval_stag;
	}
	seg_start(qp, &m, op->read ? 0 : e->len);
}

static void start_read_resp(struct esock_qp *qp)
{
	const struct ep_irqe *q = &qp->irq[qp->irq_head % qp->irq_cap];
	struct esock_rdmap_msg m;

	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_RESP);
	m.ddp.stag = q->sink_stag;
	m.ddp.to = q->sink_to;
	qp->txc.kind = EP_TX_READ_RESP;
	ep_sockbuf_msg(qp, q->len);
	qp->txc.resp_sge = (struct esock_sge){ .addr = (uint64_t)(uintptr_t)q->src, .length = q->len };
	qp->txc.sge = &qp->txc.resp_sge;
	qp->txc.num_sge = 1;
	seg_start(qp, &m, q->len);
}

/* RFC 6581 RTR as the initiator's first FPDU (zero-length, siw's values). */
static void start_rtr(struct esock_qp *qp)
{
	struct esock_rdmap_msg m;

	qp->rtr_pending = false;
	qp->txc.kind = EP_TX_RTR;
	qp->txc.num_sge = 0;
	if (qp->info.rtr == ESOCK_MPA_RTR_READ) {
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_REQ);
		m.ddp.msn = qp->msn_tx[ESOCK_DDP_QN_READ_REQ]++;
		qp->txc.read_req = (struct esock_rdmap_read_req){ .src_stag = 1 };
		qp->rtr_read_out = true;
	} else if (qp->info.rtr == ESOCK_MPA_RTR_SEND) {
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
		m.ddp.msn = qp->msn_tx[ESOCK_DDP_QN_SEND]++;
	} else {
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
		m.ddp.stag = 1;
	}
	seg_start(qp, &m, 0);
}

/*
 * A Send may start: no credits asked (ep_qp_set_credits), or the peer's
 * receives posted again leave room.  The word is placed by our own reading
 * of the peer's RDMA Write, under the token as this look is: never torn.
 */
static bool credit_ok(const struct esock_qp *qp)
{
	return !qp->cr_limit ||
	       qp->cr_sent - esock_get_be64((const uint8_t *)&qp->cr_word) < qp->cr_limit;
}

/*
 * May the WR at sq_tx start now?  Reads wait for ORD room, fenced WRs for
 * Reads, Sends for credits (a Write into the credit word brings them: its
 * reading is followed by this transmitter's, ep_qp.c serve).
 */
static bool sq_ready(struct esock_qp *qp, struct ep_sqe **out)
{
	struct ep_sqe *e;

	/*
	 * Nothing claimed past sq_tx: no look at the ring's slots, a cache line
	 * of their own (a socket's sends mostly go out without a WR).  A poster
	 * that claims meanwhile leaves a wish after publishing: served again.
	 */
	if (atomic_load_explicit(&qp->sqr.head, memory_order_relaxed) == qp->sq_tx ||
	    !ep_ring_ready(&qp->sqr, qp->sq_tx))
		return false;
	e = EP_SQE(qp, qp->sq_tx);
	if ((e->flags & ESOCK_SEND_FENCE) && qp->orq_n)
		return false;
	if (ep_wr_op(e->opcode)->read && qp->orq_n >= qp->info.ord)
		return false;
	if (ep_wr_op(e->opcode)->send && !credit_ok(qp)) {
		if (qp->lazy && !qp->cr_watch) { /* credits come as input: somebody must read it */
			qp->cr_watch = true;
			ep_engine_refresh(qp);
		}
		return false;
	}
	*out = e;
	return true;
}

static bool pick_next(struct esock_qp *qp)
{
	struct ep_sqe *e;

	if (qp->term_pending) { /* stays set: nothing else goes out after it */
		qp->txc.kind = EP_TX_TERM;
		return true;
	}
	if (qp->tx_hold) {
		/*
		 * Sends wait for the initiator's first FPDU: somebody must read it
		 * even if the application now waits for nothing (a server that
		 * spoke first).  The engine does, for a lazy QP, until it came.
		 */
		if (qp->lazy && !qp->hold_watch && ep_ring_ready(&qp->sqr, qp->sq_tx)) {
			qp->hold_watch = true;
			ep_engine_refresh(qp);
		}
		return false;
	}
	if (qp->rtr_pending) {
		start_rtr(qp);
		return true;
	}
	if (qp->irq_n) {
		start_read_resp(qp);
		return true;
	}
	if (atomic_load(&qp->state) != ESOCK_QPS_RTS && atomic_load(&qp->state) != ESOCK_QPS_CLOSING)
		return false;
	if (!sq_ready(qp, &e))
		return false;
	start_sqe(qp, e);
	return true;
}

/* Pieces [off, off + len) of the message's SGE list into |iov|; returns the count. */
static int payload_iov(const struct ep_tx_cur *c, size_t off, size_t len, struct iovec *iov)
{
	int n = 0;

	for (int i = 0; i < c->num_sge && len; i++) {
		size_t l = c->sge[i].length;

		if (off >= l) {
			off -= l;
			continue;
		}
		size_t k = l - off < len ? l - off : len;

		iov[n].iov_base = (uint8_t *)(uintptr_t)c->sge[i].addr + off;
		iov[n++].iov_len = k;
		len -= k;
		off = 0;
	}
	return n;
}

/*
 * Into the batch: a small FPDU copied whole into its scratch (one iovec entry
 * and one CRC call, the kernel takes one piece cheaper than several), else a
 * plan over the payload where it lies.  Only ULPDUs up to EP_FRAME_MAX: the
 * payload of anything larger is never copied.
 */
_Static_assert(EP_FRAME_MAX + ESOCK_MPA_LEN_LEN + 3 + ESOCK_MPA_CRC_LEN <= EP_BATCH_FPDU_SCRATCH,
	       "a framed FPDU fits the room ep_batch_room keeps");

/* A ULPDU of |ulen| octets is framed whole by copying (markers off, small). */
static bool frame_whole(const struct ep_txwork *w, size_t ulen)
{
	return !w->tx.markers && ulen <= EP_FRAME_MAX;
}

static int batch_fpdu(struct esock_qp *qp, const struct iovec *iov, int n, size_t ulen)
{
	struct ep_txwork *w = qp->txw;

	if (frame_whole(w, ulen))
		return ep_batch_frame(&w->batch, &w->tx, iov, n) < 0 ? -EPROTO : 0;
	if (esock_mpa_tx_build(&w->tx, iov, n) < 0)
		return -EPROTO;
	/* Pieces in the plan's and header scratch are copied; payload and termbuf stay. */
	ep_batch_add(&w->batch, &w->tx, w, offsetof(struct ep_txwork, batch));
	return 0;
}

static int frame_plain_send(struct esock_qp *qp, const struct iovec *iov, int iovcnt, size_t len);

/* Adds the next FPDU of the current message to the batch.  Returns 0 or a negative code. */
static int build_fpdu(struct esock_qp *qp)
{
	struct ep_tx_cur *c = &qp->txc;
	struct iovec iov[ESOCK_MPA_TX_PIECES_MAX];
	struct esock_rdmap_msg m;
	size_t off, len;
	ssize_t hl;

	if (c->kind == EP_TX_TERM) {
		iov[0].iov_base = qp->termbuf;
		iov[0].iov_len = qp->term_len;
		c->last_fpdu_built = true;
		return batch_fpdu(qp, iov, 1, qp->term_len);
	}
	if (c->plain) {
		c->plain = false;
		c->last_fpdu_built = true;
		return frame_plain_send(qp, iov, payload_iov(c, 0, c->sqe->len, iov), c->sqe->len);
	}
	memset(&m, 0, sizeof(m));
	if (!esock_ddp_seg_next(&c->seg, &m.ddp, &off, &len))
		return -EPROTO;
	m.rv = ESOCK_RDMAP_VERSION;
	m.opcode = m.ddp.ulp_ctrl & ESOCK_RDMAP_CTRL_OPCODE;
	m.inval_stag = m.ddp.ulp_word;
	if (m.opcode == ESOCK_RDMAP_READ_REQ)
		m.u.read_req = c->read_req;
	if ((hl = esock_rdmap_hdr_encode(&m, qp->txw->txhdr, sizeof(qp->txw->txhdr))) < 0)
		return (int)hl;
	iov[0].iov_base = qp->txw->txhdr;
	iov[0].iov_len = (size_t)hl;
	int n = 1 + payload_iov(c, off, len, iov + 1);

	c->last_fpdu_built = m.ddp.last;
	return batch_fpdu(qp, iov, n, (size_t)hl + len);
}

/*
 * Towards a packing peer, the next message joins the batch of the one just
 * built when it is queued already, both are joinable and room is left: a
 * list of small WRs (or queued Read Responses) leaves with one sendmsg
 * instead of one each.
 */
static bool join_next(const struct esock_qp *qp)
{
	const struct ep_batch *b = &qp->txw->batch;

	return b->pack && (qp->txc.kind == EP_TX_SQ || qp->txc.kind == EP_TX_READ_RESP) &&
	       !qp->term_pending && !qp->rtr_pending && b->sq_built < EP_BATCH_MSGS &&
	       ep_batch_room(b) && joinable(qp, cur_len(qp)) && joinable_behind(qp);
}

/* The message just built is in the batch: its cursors move on, its completion waits for the write. */
static void msg_built(struct esock_qp *qp)
{
	struct ep_tx_cur *c = &qp->txc;
	struct ep_batch *b = &qp->txw->batch;

	if (c->kind == EP_TX_SQ) {
		c->sqe->sent = true;
		if (!b->sq_built)
			b->sq_from = qp->sq_tx;
		b->sq_end[b->sq_built++] = b->done + b->left;
		qp->sq_tx++;
	} else { /* a Read Response: its octets are in the batch's plan, the IRQ slot may go */
		qp->irq_head++;
		qp->irq_n--;
	}
	c->kind = EP_TX_NONE;
	c->last_fpdu_built = false;
}

/* The whole messages of the batch that are written by now complete. */
static void batch_written(struct esock_qp *qp)
{
	struct ep_batch *b = &qp->txw->batch;
	uint32_t n = 0;

	if (atomic_load(&qp->state) == ESOCK_QPS_ERROR) { /* (flushed already) */
		b->sq_built = 0;
	} else if (b->sq_built) {
		while (n < b->sq_built && b->sq_end[n] <= b->done)
			sqe_written(EP_SQE(qp, b->sq_from + n++));
		if (n) {
			ep_qp_complete_sq(qp);
			b->sq_from += n;
			b->sq_built -= n;
			memmove(b->sq_end, b->sq_end + n, b->sq_built * sizeof(b->sq_end[0]));
		}
	}
	if (!b->left)
		b->done = 0; /* (every message in it is out) */
}

/* Plans FPDUs of the current message (and of those joining it) into the batch. */
static int fill_batch(struct esock_qp *qp)
{
	for (;;) {
		do {
			int rc = build_fpdu(qp);

			if (rc < 0)
				return rc;
			if (qp->txc.last_fpdu_built) {
				qp->txw->batch.ends_msg = true;
				break;
			}
		} while (ep_batch_room(&qp->txw->batch));
		if (!qp->txw->batch.ends_msg || !join_next(qp))
			return 0;
		msg_built(qp);
		qp->txw->batch.ends_msg = false;
		if (!pick_next(qp))
			return 0;
	}
}

/*
 * The initiator's first FPDU never came within the MPA timeout: we may not
 * send (RFC 5044: a responder waits for it, and siw's initiator drops a
 * connection whose responder speaks first), so the connection fails here,
 * its queued sends with it.  Nothing goes on the wire, not even a Terminate
 * (it would be the first FPDU).
 */
static bool hold_expired(struct esock_qp *qp)
{
	struct esock_term t = { 0 };

	if (!qp->tx_hold || !qp->hold_until || ep_now_ms() < qp->hold_until)
		return false;
	log_info("[qp %u fd %d] no first FPDU from the initiator within the MPA timeout: failed",
		 qp->num, qp->fd);
	esock_term_set(&t, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA, ESOCK_TERM_LLP_CONN_LOST, 0);
	ep_qp_fail(qp, &t, false, -ETIMEDOUT, ESOCK_WC_FATAL_ERR);
	return true;
}

/*
 * A message went with MSG_MORE but nothing followed it (the next one waits
 * for ORD room or a fence): setting TCP_NODELAY pushes what TCP holds.
 */
static void push_held(struct esock_qp *qp)
{
	int one = 1;

	qp->tx_more = false;
	if (qp->fd >= 0)
		REAL(setsockopt)(qp->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A local failure on the transmit side (no memory, a plan that cannot be built): the QP ends. */
static void tx_failed(struct esock_qp *qp, int err)
{
	struct esock_term t = { 0 };

	esock_term_set(&t, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_CATASTROPHIC,
		       ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, 0);
	ep_qp_fail(qp, &t, false, err, ESOCK_WC_LOC_QP_OP_ERR);
}

void ep_tx_progress(struct esock_qp *qp)
{
	if (qp->tx_hold && hold_expired(qp))
		return;
	for (;;) {
		struct ep_txwork *w = qp->txw;

		if (w && w->batch.left) {
			bool all = write_batch(qp);

			batch_written(qp); /* (the messages out so far, all or not) */
			if (!all)
				return;
		}
		if (w && w->batch.ends_msg) {
			w->batch.ends_msg = false;
			if (qp->txc.kind != EP_TX_NONE) /* else abandoned for a Terminate */
				msg_done(qp);
		}
		if (atomic_load(&qp->state) == ESOCK_QPS_ERROR)
			return;
		if (qp->txc.kind == EP_TX_NONE && !pick_next(qp))
			break;
		if (!w && !(qp->txw = ep_txwork_get(qp->info.crc, qp->info.markers_tx, qp->tx_pos,
						     qp->tx_pack))) {
			tx_failed(qp, -ENOMEM);
			return;
		}
		if (fill_batch(qp) < 0) {
			tx_failed(qp, -EPROTO);
			return;
		}
	}
	if (qp->tx_more)
		push_held(qp);
	if (qp->txw) { /* all written: an idle QP holds no transmit memory */
		qp->tx_pos = ep_txwork_put(qp->txw);
		qp->txw = NULL;
	}
	if (qp->pollout)
		ep_engine_want_out(qp, false);
	if (qp->cr_watch && !ep_ring_ready(&qp->sqr, qp->sq_tx)) { /* (no Send waits for credits now) */
		qp->cr_watch = false;
		ep_engine_refresh(qp);
	}
	/* Our half-close: the FIN follows the last of what was queued before it. */
	if (atomic_load(&qp->fin_wanted) && !atomic_load(&qp->fin_sent) &&
	    atomic_load(&qp->state) == ESOCK_QPS_RTS && !qp->tx_hold && !qp->irq_n &&
	    !ep_ring_ready(&qp->sqr, qp->sq_tx)) {
		if (REAL(shutdown)(qp->fd, SHUT_WR) < 0)
			log_debug("[qp %u fd %d] half-close: %s", qp->num, qp->fd, strerror(errno));
		atomic_store(&qp->fin_sent, true);
	}
	/*
	 * Graceful disconnect: once everything queued is out, close our side.
	 * Still waiting for the initiator's first FPDU, nothing queued can go:
	 * close now (the held sends are flushed) instead of lingering.
	 */
	if (atomic_load(&qp->state) == ESOCK_QPS_CLOSING &&
	    ((!ep_ring_ready(&qp->sqr, qp->sq_tx) && !qp->irq_n && !qp->orq_n) || qp->tx_hold)) {
		REAL(shutdown)(qp->fd, SHUT_WR);
		ep_qp_fail(qp, NULL, false, 0, ESOCK_WC_WR_FLUSH_ERR);
	}
}

/*
 * The socket layer's direct path: a Send of |len| octets from the caller's
 * memory, built and written in the caller's call, without a send WR, its
 * completion or a copy into a send slot.  Only when nothing else is to go
 * out before it (the send queue and the batch empty, no RTR, Read Response
 * or Terminate waiting, the first FPDU not held back), so the stream's order
 * is the order of the calls.  Octets TCP does not take at once are copied
 * into the batch (its scratch up to EP_SEND_NOW_MAX, else its spill) and go
 * as the socket drains, as a queued message's would: the caller's memory is
 * free on return.  A large message that TCP takes whole is never copied.
 */
#define NOW_MULPDU_MIN 1024 /* (an MSS below that: the queued path) */
_Static_assert(EP_SEND_NOW_MAX + (EP_SEND_NOW_MAX / (NOW_MULPDU_MIN - ESOCK_RDMAP_HDR_MAX) + 1) *
			       EP_BATCH_FPDU_SCRATCH <=
		       sizeof(((struct ep_batch *)0)->scratch),
	       "a message sent now fits the batch's scratch with its FPDUs' plans");

/*
 * A message above EP_SEND_NOW_MAX goes now when all of its FPDUs fit the
 * empty batch (ep_batch_room, asked before each of them, cannot fail half
 * way); what TCP does not take of it goes to the batch's spill.
 */
static bool now_big_ok(const struct esock_qp *qp, size_t len)
{
	size_t fpdus = len / (qp->mulpdu - ESOCK_RDMAP_HDR_MAX) + 1;

	return len <= EP_SEND_NOW_BIG &&
	       fpdus * EP_BATCH_FPDU_SCRATCH <= sizeof(((struct ep_batch *)0)->scratch) &&
	       fpdus * ESOCK_MPA_TX_IOV_MAX <= EP_BATCH_IOV &&
	       len + fpdus * EP_BATCH_FPDU_SCRATCH < ep_batch_bytes();
}

static bool now_ok(const struct esock_qp *qp, int iovcnt, size_t len)
{
	const struct ep_txwork *w = qp->txw;

	return iovcnt <= EP_SGE_MAX && qp->mulpdu >= NOW_MULPDU_MIN &&
	       (len <= EP_SEND_NOW_MAX || now_big_ok(qp, len)) &&
	       atomic_load(&qp->state) == ESOCK_QPS_RTS && qp->txc.kind == EP_TX_NONE &&
	       !qp->term_pending && !qp->tx_hold && !qp->rtr_pending && !qp->irq_n &&
	       (!w || (!w->batch.left && !w->batch.ends_msg)) && !ep_ring_ready(&qp->sqr, qp->sq_tx) &&
	       credit_ok(qp);
}

/*
 * Header prediction's sending twin: a plain Send that fits one FPDU (markers
 * off) framed in one step into the empty batch, header and trailer in its
 * scratch, the payload where it lies (a small one copied whole: one piece
 * for the kernel, as batch_fpdu does), without the segmenter and the MPA
 * plan.  The same octets on the wire as the general way.
 */
_Static_assert(EP_SGE_MAX + 2 <= EP_BATCH_IOV, "a framed Send fits the batch's iovec");
_Static_assert(EP_SEND_NOW_PIECES == EP_SGE_MAX, "ep_sock.h promises what now_ok takes");

static int frame_plain_send(struct esock_qp *qp, const struct iovec *iov, int iovcnt, size_t len)
{
	struct ep_batch *b = &qp->txw->batch;
	uint8_t *at = b->scratch + b->used, *hdr = at + ESOCK_MPA_LEN_LEN;
	struct iovec u[ESOCK_MPA_TX_PIECES_MAX];
	int n = 1;
	ssize_t k;

	esock_rdmap_plain_send_hdr(hdr, qp->msn_tx[ESOCK_DDP_QN_SEND]++);
	u[0] = (struct iovec){ hdr, ESOCK_DDP_UNTAGGED_HLEN };
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			u[n++] = iov[i];
	if (frame_whole(qp->txw, ESOCK_DDP_UNTAGGED_HLEN + len))
		return batch_fpdu(qp, u, n, ESOCK_DDP_UNTAGGED_HLEN + len);
	/* header | payload pieces | pad and CRC: 2 + 18 + 7 octets of scratch */
	uint8_t *tail = hdr + ESOCK_DDP_UNTAGGED_HLEN;

	if ((k = esock_mpa_tx_wrap(&qp->txw->tx, u, n, at, tail)) < 0)
		return (int)k;
	b->iov[b->cnt++] = (struct iovec){ at, ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN };
	for (int i = 1; i < n; i++)
		b->iov[b->cnt++] = u[i];
	b->iov[b->cnt++] = (struct iovec){ tail, (size_t)k };
	b->used += ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN + (size_t)k;
	b->left += ESOCK_MPA_LEN_LEN + ESOCK_DDP_UNTAGGED_HLEN + len + (size_t)k;
	return 0;
}

int ep_tx_send_now(struct esock_qp *qp, const struct iovec *iov, int iovcnt, size_t len)
{
	struct esock_sge sge[EP_SGE_MAX];
	struct ep_tx_cur *c = &qp->txc;
	struct esock_rdmap_msg m;
	struct ep_batch *b;
	int n = 0, rc;

	if (!now_ok(qp, iovcnt, len))
		return -EAGAIN;
	if (!qp->txw && !(qp->txw = ep_txwork_get(qp->info.crc, qp->info.markers_tx, qp->tx_pos,
						   qp->tx_pack)))
		return -EAGAIN; /* (the queued path reports it) */
	b = &qp->txw->batch;
	c->kind = EP_TX_NOW;
	c->now_len = (uint32_t)len;
	qp->cr_sent++;
	ep_sockbuf_msg(qp, len);
	if (plain_fits(qp, len)) {
		if (frame_plain_send(qp, iov, iovcnt, len) < 0) {
			tx_failed(qp, -EPROTO);
			return -EPIPE;
		}
	} else {
		for (int i = 0; i < iovcnt; i++)
			if (iov[i].iov_len)
				sge[n++] = (struct esock_sge){ (uintptr_t)iov[i].iov_base,
							       (uint32_t)iov[i].iov_len, 0 };
		esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
		m.ddp.msn = qp->msn_tx[ESOCK_DDP_QN_SEND]++;
		c->sge = sge;
		c->num_sge = n;
		seg_start(qp, &m, len);
		do {
			if ((rc = build_fpdu(qp)) < 0 || (!c->last_fpdu_built && !ep_batch_room(b))) {
				c->sge = NULL;
				tx_failed(qp, -EPROTO);
				return -EPIPE;
			}
		} while (!c->last_fpdu_built);
		c->sge = NULL; /* (the batch points at the payload now) */
	}
	b->ends_msg = true;
	rc = write_batch(qp) ? 1 : atomic_load(&qp->state) == ESOCK_QPS_ERROR ? -1 : 0;
	batch_written(qp);
	if (rc < 0)
		return -EPIPE;
	if (rc == 0) { /* the rest goes as the socket drains (write_batch asked for room) */
		if (!ep_batch_own(b)) { /* (no memory for the spill: the assertion above keeps small ones) */
			tx_failed(qp, -ENOBUFS);
			return -EPIPE;
		}
		return 0;
	}
	b->ends_msg = false;
	msg_done(qp); /* (written without MSG_MORE: nothing queued behind it) */
	qp->tx_pos = ep_txwork_put(qp->txw);
	qp->txw = NULL;
	return 0;
}
