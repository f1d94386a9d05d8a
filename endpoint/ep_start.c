/* SPDX-License-Identifier: MIT */
/*
 * A QP going into RTS on its descriptor: fresh from the MPA exchange
 * (ep_qp_start, from ep_conn.c's connect and accept), or carried across
 * exec from a snapshot of a quiet one (ep_qp_snapshot in the old image,
 * ep_qp_resume in the new: sock_handoff.c); and its MULPDU, which follows
 * the socket's MSS.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint/ep.h"
#include "endpoint/ep_spare.h"
#include "util/log.h"

/*
 * MULPDU from the current MSS (RFC 5044 §4.5, one FPDU per TCP segment),
 * capped by the profile.  Right after the handshake Linux bounds the MSS by
 * half the peer's initial window, so the transmitter asks again while the
 * window opens (ep_tx.c).
 */
void ep_qp_update_mulpdu(struct esock_qp *qp)
{
	int mss = 0;
	socklen_t l = sizeof(mss);
	size_t mulpdu;

	if (ep_getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) == -EPERM)
		return; /* (no socket options in a sandbox: the MULPDU stays as it is) */
	if (mss <= 0)
		mss = 1460;
	mulpdu = esock_mpa_mulpdu((uint32_t)mss, qp->info.markers_tx);
	if (qp->prof->max_ulpdu && mulpdu > qp->prof->max_ulpdu)
		mulpdu = qp->prof->max_ulpdu;
	if (mulpdu > qp->mulpdu)
		log_debug("[qp %u fd %d] MULPDU %zu (MSS %d)", qp->num, qp->fd, mulpdu, mss);
	qp->mulpdu = (uint16_t)mulpdu;
	qp->info.mulpdu = qp->mulpdu;
}

/* The QP's start on |fd| before it runs (ep_qp_start; ep_qp_resume sets more after it). */
static int start_prepare(struct esock_qp *qp, int fd, bool initiator)
{
	int rc;

	qp->fd = fd;
	qp->mss_checks = 16;
	ep_qp_update_mulpdu(qp);
	qp->tx_pos = 0; /* the transmitter itself comes with the first message (ep_tx.c) */
	if ((rc = ep_qp_reads_init(qp)) < 0 || (rc = ep_rx_init(qp)) < 0)
		return rc;
	for (int q = 0; q < 3; q++)
		qp->msn_tx[q] = qp->msn_rx[q] = 1;
	qp->rtr_pending = initiator && qp->info.p2p;
	/*
	 * RFC 5044: a responder receives and validates one FPDU before it sends
	 * any (siw's initiator even drops the connection when bytes follow the
	 * Reply at once).  RFC 6581's RTR exists so that this first FPDU comes
	 * even when the initiator's application has nothing to say.
	 */
	qp->tx_hold = !initiator;
	if (qp->tx_hold) { /* bounded: a peer that never sends must not hold our sends for good */
		int ms = ep_mpa_timeout_ms();

		qp->hold_until = ep_now_ms() + (ms > 0 ? ms : EP_TIMEOUT_DEFAULT_MS);
	}
	/* (The socket buffers are looked at once data piles up: ep_sockbuf_tune.) */
	return 0;
}

/* RTS: the engine may drive it from now on. */
static int start_run(struct esock_qp *qp)
{
	int rc;

	atomic_store(&qp->state, ESOCK_QPS_RTS);
	if ((rc = ep_engine_add(qp)) < 0)
		return rc;
	log_info("[qp %u fd %d] connected: MPA rev %u%s, CRC %s, markers tx %s rx %s, IRD %u ORD %u, "
		 "MULPDU %u, peer profile %s", qp->num, qp->fd, qp->info.mpa_rev,
		 qp->info.enhanced ? " (RFC 6581)" : "", qp->info.crc ? "on" : "off",
		 qp->info.markers_tx ? "on" : "off", qp->info.markers_rx ? "on" : "off",
		 qp->info.ird, qp->info.ord, qp->mulpdu, qp->prof->name);
	/*
	 * FPDUs may already wait behind the Reply, and the engine drops what
	 * it hears before it has the QP (in_engine): a look now.  Not when
	 * nothing of ours was read past the start frames and nobody's event
	 * was dropped: a lazy QP the engine does not read (the caller's reads
	 * and waits watch its socket from now on) whose peer waits for our
	 * RTR, or whose peer's first FPDU can only follow our Reply (a
	 * responder: the listener read the Request and nothing behind it).
	 * A system call a connection less on either end.
	 */
	bool look = !(qp->lazy && (qp->rtr_pending || qp->tx_hold) && !ep_engine_reads(qp));

	ep_qp_progress(qp, (look ? EP_WANT_RX | EP_WANT_DRAIN : 0) | EP_WANT_TX);
	return 0;
}

/* Goes to RTS on |fd|; qp->info (addresses included: peer_known) is complete. */
int ep_qp_start(struct esock_qp *qp, int fd, bool initiator)
{
	int rc = start_prepare(qp, fd, initiator);

	return rc < 0 ? rc : start_run(qp);
}

/*
 * A connection carried across exec (sock_handoff.c): only a quiet QP can
 * be, one with no octets read but not yet handled, nothing half sent or
 * queued, no Read or Terminate in flight and no markers (their positions
 * would have to travel too).  The TCP stream stays in the kernel; what the
 * QP must remember of it is here.  0, -ENOTCONN, -EOPNOTSUPP or -EBUSY.
 * |keep|: on success the QP stays quiesced (nothing reads or sends on it
 * until ep_qp_unquiesce), so that it is still what the snapshot says when
 * the exec happens.
 */
int ep_qp_snapshot(struct esock_qp *qp, struct ep_qp_snap *sn, bool keep, uint8_t *stage, size_t cap)
{
	int rc = 0;

	ep_qp_quiesce(qp);
	if (atomic_load(&qp->state) != ESOCK_QPS_RTS || !qp->prof)
		rc = -ENOTCONN;
	else if (qp->info.markers_tx || qp->info.markers_rx)
		rc = -EOPNOTSUPP;
	else if (!esock_mpa_rx_idle(&qp->rx) || qp->rxc.kind != EP_RX_NONE || qp->mo_rx ||
		 qp->txw || qp->txc.kind != EP_TX_NONE || ep_ring_ready(&qp->sqr, qp->sq_tx) ||
		 qp->sq_done != qp->sq_tx || qp->orq_n || qp->irq_n || qp->term_pending ||
		 qp->rtr_read_out || qp->has_err || atomic_load(&qp->rx_sleeper) ||
		 (atomic_load(&qp->fin_wanted) && !atomic_load(&qp->fin_sent)))
		rc = -EBUSY; /* (a reader asleep in its receive may take octets any moment) */
	else if (qp->place.used)
		rc = -EBUSY; /* a message half placed */
	if (rc == 0) {
		ep_qp_addrs(qp);
		memset(sn, 0, sizeof(*sn));
		sn->info = qp->info;
		sn->info.peer = NULL;
		snprintf(sn->prof, sizeof(sn->prof), "%s", qp->prof->name);
		memcpy(sn->msn_tx, qp->msn_tx, sizeof(sn->msn_tx));
		memcpy(sn->msn_rx, qp->msn_rx, sizeof(sn->msn_rx));
		memcpy(sn->next_msn, qp->place.next_msn, sizeof(sn->next_msn));
		sn->tx_hold = qp->tx_hold;
		sn->hold_left_ms = qp->tx_hold && qp->hold_until ? qp->hold_until - ep_now_ms() : 0;
		sn->rtr_pending = qp->rtr_pending;
		sn->rx_wait = qp->rx_wait;
		sn->half_close = qp->half_close;
		sn->tx_pack = qp->tx_pack;
		sn->cr_word = qp->cr_word;
		sn->cr_sent = qp->cr_sent;
		sn->cr_limit = qp->cr_limit;
		sn->fpdus = qp->rx.fpdus;
		/* Octets read from TCP, not yet fed (an FPDU boundary: MPA is idle), go along. */
		if (qp->stage && qp->stage_off < qp->stage_len) {
			sn->stage_len = (uint32_t)(qp->stage_len - qp->stage_off);
			if (sn->stage_len > cap)
				rc = -ENOSPC;
			else
				memcpy(stage, qp->stage + qp->stage_off, sn->stage_len);
		}
	}
	if (rc < 0 || !keep)
		ep_qp_unquiesce(qp);
	return rc;
}

/*
 * The QP (idle, made for the same socket) goes on where ep_qp_snapshot left
 * it, on |fd|: in RTS, not yet in the engine (the caller's first use adds it).
 */
int ep_qp_resume(struct esock_qp *qp, int fd, const struct ep_qp_snap *sn, const uint8_t *stage)
{
	int expect = ESOCK_QPS_IDLE, rc;

	if (!(qp->prof = ep_profile_find(sn->prof)))
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&qp->state, &expect, ESOCK_QPS_CONNECTING))
		return -EINVAL;
	qp->info = sn->info;
	qp->info.peer = qp->prof->name;
	qp->info_valid = true;
	qp->addrs_known = false; /* (the snapshot's, or asked again: ep_sockaddrs keeps what is in) */
	qp->rx_wait = sn->rx_wait;
	qp->half_close = sn->half_close;
	qp->tx_pack = sn->tx_pack;
	qp->cr_word = sn->cr_word;
	qp->cr_sent = sn->cr_sent;
	qp->cr_limit = sn->cr_limit;
	if ((rc = start_prepare(qp, fd, !sn->tx_hold)) < 0) {
		atomic_store(&qp->state, ESOCK_QPS_IDLE);
		return rc;
	}
	memcpy(qp->msn_tx, sn->msn_tx, sizeof(qp->msn_tx));
	memcpy(qp->msn_rx, sn->msn_rx, sizeof(qp->msn_rx));
	memcpy(qp->place.next_msn, sn->next_msn, sizeof(qp->place.next_msn));
	qp->tx_hold = sn->tx_hold;
	qp->hold_until = sn->tx_hold ? ep_now_ms() + (sn->hold_left_ms > 0 ? sn->hold_left_ms : 1) : 0;
	qp->rtr_pending = sn->rtr_pending;
	qp->rx.fpdus = sn->fpdus;
	if (sn->stage_len) { /* ahead of what TCP still holds */
		bool fresh;

		if (sn->stage_len > EP_STAGE_LEN ||
		    !(qp->stage = ep_spare_get(EP_SPARE_STAGE, EP_STAGE_LEN, &fresh))) {
			atomic_store(&qp->state, ESOCK_QPS_IDLE);
			return -ENOMEM;
		}
		memcpy(qp->stage, stage, sn->stage_len);
		qp->stage_off = 0;
		qp->stage_len = sn->stage_len;
		/* (It may hold whole messages a read left there: EP_NOW_STAY; nothing else says so.) */
		atomic_store(&qp->rx_staged, true);
	}
	/*
	 * RTS, but nobody drives it yet: another process may still use the
	 * connection (the exec'ing one's parent, whose copy it was); the first
	 * call on it in this image starts it (ep_engine_add, its reads).
	 */
	atomic_store(&qp->state, ESOCK_QPS_RTS);
	log_info("[qp %u fd %d] carried over: MPA rev %u, CRC %s, peer profile %s, %u octets read ahead%s",
		 qp->num, fd, qp->info.mpa_rev, qp->info.crc ? "on" : "off", qp->prof->name, sn->stage_len,
		 qp->tx_hold ? ", first FPDU still to come" : "");
	return 0;
}
