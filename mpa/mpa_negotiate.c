/* SPDX-License-Identifier: MIT */
/*
 * MPA connection setup decisions (RFC 5044 §7.1.2, RFC 6581 §9): the
 * initiator's Request, the responder's Reply, and the initiator's check of the
 * Reply.  Pure functions over frames and a policy; the engine does the I/O
 * and the timers.
 *
 * Rules applied:
 *  - CRC runs in both directions when either frame has C=1.
 *  - M is per direction: a side that sets M receives markers, so the other
 *    side transmits them.  A side that cannot transmit markers refuses
 *    (responder: R=1 Reply; initiator: Terminate LLP/MPA 0x04), as siw does.
 *  - Revision: the responder answers with min(request rev, own rev); an
 *    enhanced (rev 2, S=1) Request gets an enhanced Reply.
 *  - RFC 6581: ORD of one side must not exceed IRD of the other.  The
 *    responder lowers its ORD to the initiator's IRD; the initiator lowers its
 *    ORD to the responder's IRD and fails (0x06) only when the responder's ORD
 *    exceeds our IRD.  In P2P mode the responder echoes A and picks exactly one
 *    offered RTR type, preferring RDMA Write, then Read, then Send (siw's
 *    order; a zero-length Send needs a pre-posted receive).
 *  - siw_compat: siw gives up when an enhanced Request gets a non-enhanced
 *    Reply; so do we under the profile.  Otherwise we fall back to revision 1
 *    semantics (no IRD/ORD exchange, our own values kept) unless P2P was
 *    requested, which needs the word.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <esock/mpa.h>

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

static void llp(struct esock_term *term, uint8_t code)
{
	esock_term_set(term, ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA, code, 0);
}

static uint8_t policy_rev(const struct esock_mpa_policy *pol)
{
	return pol->rev ? pol->rev : 2;
}

ESOCK_EXPORT int esock_mpa_request_build(const struct esock_mpa_policy *pol,
					 struct esock_mpa_frame *req)
{
	memset(req, 0, sizeof(*req));
	req->rev = policy_rev(pol);
	if (req->rev > 2 || pol->ird > ESOCK_MPA_IRD_ORD_MAX || pol->ord > ESOCK_MPA_IRD_ORD_MAX)
		return -EINVAL;
	if (pol->p2p && (req->rev < 2 || !pol->rtr))
		return -EINVAL;
	req->markers = pol->markers_rx;
	req->crc = pol->crc;
	req->enhanced = req->rev == 2;
	req->p2p = pol->p2p;
	req->rtr = pol->p2p ? pol->rtr : 0;
	req->ird = pol->ird;
	/* RTR mode needs at least one outbound Read slot for a Read RTR. */
	req->ord = (pol->p2p && (pol->rtr & ESOCK_MPA_RTR_READ) && !pol->ord) ? 1 : pol->ord;
	req->pd = pol->pd;
	req->pd_len = pol->pd_len;
	return esock_mpa_frame_len(req) - ESOCK_MPA_HDR_LEN > ESOCK_MPA_PD_MAX ? -EMSGSIZE : 0;
}

/* Picks one RTR type out of |offered| & |accepted|: Write, then Read, then Send. */
static uint8_t pick_rtr(uint8_t offered, uint8_t accepted)
{
	static const uint8_t order[] = { ESOCK_MPA_RTR_WRITE, ESOCK_MPA_RTR_READ, ESOCK_MPA_RTR_SEND };

	for (size_t i = 0; i < sizeof(order); i++)
		if (offered & accepted & order[i])
			return order[i];
	return 0;
}

static int reply_reject(struct esock_mpa_frame *rep, struct esock_term *term, uint8_t code)
{
	rep->reject = true;
	rep->markers = false;
	llp(term, code);
	return -ECONNREFUSED;
}

ESOCK_EXPORT int esock_mpa_reply_build(const struct esock_mpa_policy *pol,
				       const struct esock_mpa_frame *req,
				       struct esock_mpa_frame *rep, struct esock_mpa_params *out,
				       struct esock_term *term)
{
	uint8_t rev = req->rev < policy_rev(pol) ? req->rev : policy_rev(pol);

	memset(rep, 0, sizeof(*rep));
	memset(out, 0, sizeof(*out));
	rep->reply = true;
	rep->rev = rev;
	rep->enhanced = esock_mpa_frame_has_ird_ord(req) && rev == 2;
	rep->crc = req->crc || pol->crc;
	rep->markers = pol->markers_rx;
	rep->pd = pol->pd;
	rep->pd_len = pol->pd_len;
	if (rep->enhanced) {
		rep->ird = pol->ird;
		rep->ord = min16(pol->ord, req->ird);
		/* RFC 6581: A must be echoed; in RTR mode choose exactly one type. */
		if (req->p2p) {
			rep->p2p = true;
			rep->rtr = pol->p2p ? pick_rtr(req->rtr, pol->rtr) : 0;
			if (!rep->rtr)
				return reply_reject(rep, term, ESOCK_TERM_LLP_NO_RTR);
		}
	}
	if (req->markers && !pol->markers_tx)
		return reply_reject(rep, term, ESOCK_TERM_LLP_BAD_FRAME);
	out->rev = rev;
	out->enhanced = rep->enhanced;
	out->crc = rep->crc;
	out->markers_tx = req->markers;
	out->markers_rx = rep->markers;
	out->p2p = rep->p2p;
	out->rtr = rep->rtr;
	out->ird = rep->enhanced ? rep->ird : pol->ird;
	out->ord = rep->enhanced ? rep->ord : pol->ord;
	out->peer_ird = rep->enhanced ? req->ird : 0;
	out->peer_ord = rep->enhanced ? req->ord : 0;
	return 0;
}

/* RFC 6581 part of the initiator's check; returns 0 or -EPROTO with |term|. */
static int check_enhanced(const struct esock_mpa_policy *pol, const struct esock_mpa_frame *req,
			  const struct esock_mpa_frame *rep, struct esock_mpa_params *out,
			  struct esock_term *term)
{
	if (!esock_mpa_frame_has_ird_ord(rep)) {
		/* Downgraded Reply: siw gives up; RTR mode cannot work without the word. */
		if (pol->siw_compat || (req->p2p && !pol->p2p_optional)) {
			llp(term, req->p2p ? ESOCK_TERM_LLP_NO_RTR : ESOCK_TERM_LLP_BAD_FRAME);
			return -EPROTO;
		}
		out->ird = pol->ird;
		out->ord = pol->ord;
		return 0;
	}
	out->enhanced = true;
	out->peer_ird = rep->ird;
	out->peer_ord = rep->ord;
	out->ird = pol->ird;
	out->ord = min16(req->ord, rep->ird);
	if (rep->ord > pol->ird) {
		llp(term, ESOCK_TERM_LLP_IRD);
		return -EPROTO;
	}
	if (req->p2p) {
		uint8_t r = rep->rtr;

		/* Exactly one of the offered types, and A echoed. */
		if (!rep->p2p || !r || (r & (r - 1)) || !(r & req->rtr)) {
			llp(term, ESOCK_TERM_LLP_NO_RTR);
			return -EPROTO;
		}
		out->p2p = true;
		out->rtr = r;
	}
	return 0;
}

ESOCK_EXPORT int esock_mpa_reply_check(const struct esock_mpa_policy *pol,
				       const struct esock_mpa_frame *req,
				       const struct esock_mpa_frame *rep,
				       struct esock_mpa_params *out, struct esock_term *term)
{
	memset(out, 0, sizeof(*out));
	if (rep->reject)
		return -ECONNREFUSED;
	if (!rep->reply || rep->rev > req->rev || (rep->markers && !pol->markers_tx)) {
		llp(term, ESOCK_TERM_LLP_BAD_FRAME);
		return -EPROTO;
	}
	out->rev = rep->rev;
	out->crc = req->crc || rep->crc;
	out->markers_tx = rep->markers;
	out->markers_rx = req->markers;
	if (esock_mpa_frame_has_ird_ord(req))
		return check_enhanced(pol, req, rep, out, term);
	out->ird = pol->ird;
	out->ord = pol->ord;
	return 0;
}
