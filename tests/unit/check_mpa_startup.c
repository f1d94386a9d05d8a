/* SPDX-License-Identifier: MIT */
/*
 * MPA start frames and negotiation: byte-exact frames, every decode error,
 * truncation at every length, random round trips, and negotiation between
 * policies shaped like esock, Linux siw and Intel irdma peers.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/mpa.h>

#include "tests/unit/testutil.h"

/* Reference frames (decoded by tshark): C=1, S=1, Rev 2, IRD 16, ORD 16. */
static const char *req_p2p_hex =
	"4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65 50 02 00 04 80 10 c0 10";
static const char *rep_read_hex =
	"4d 50 41 20 49 44 20 52 65 70 20 46 72 61 6d 65 50 02 00 04 80 10 40 10";

START_TEST(test_encode_reference_request)
{
	struct esock_mpa_frame f = { .crc = true, .enhanced = true, .rev = 2, .p2p = true,
				     .rtr = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ,
				     .ird = 16, .ord = 16 };
	uint8_t want[64], got[64];
	int n = tu_hex(req_p2p_hex, want, sizeof(want));

	ck_assert_int_eq(esock_mpa_frame_len(&f), n);
	ck_assert_int_eq(esock_mpa_frame_encode(&f, got, sizeof(got)), n);
	tu_assert_mem(got, want, (size_t)n);
}
END_TEST

START_TEST(test_decode_reference_reply)
{
	uint8_t buf[64];
	int n = tu_hex(rep_read_hex, buf, sizeof(buf));
	struct esock_mpa_frame f;
	struct esock_term t = { 0 };

	ck_assert_int_eq(esock_mpa_frame_decode(&f, true, buf, (size_t)n, 0, &t), n);
	ck_assert(f.reply && f.crc && f.enhanced && !f.markers && !f.reject);
	ck_assert_uint_eq(f.rev, 2);
	ck_assert(f.p2p);
	ck_assert_uint_eq(f.rtr, ESOCK_MPA_RTR_READ);
	ck_assert_uint_eq(f.ird, 16);
	ck_assert_uint_eq(f.ord, 16);
	ck_assert_uint_eq(f.pd_len, 0);
	ck_assert(!t.valid);
}
END_TEST

START_TEST(test_siw_style_request_with_pd)
{
	/* A default siw initiator: flags 0x10, rev 2, IRD/ORD without A-D bits, then ULP PD. */
	static const uint8_t pd[] = { 'h', 'i', '!' };
	struct esock_mpa_frame f = { .enhanced = true, .rev = 2, .ird = 1, .ord = 1,
				     .pd = pd, .pd_len = 3 };
	uint8_t got[64], want[64];
	int n = tu_hex("4d50412049442052657120467261 6d65 10 02 0007 0001 0001 686921", want,
		       sizeof(want));
	struct esock_mpa_frame d;

	ck_assert_int_eq(esock_mpa_frame_encode(&f, got, sizeof(got)), n);
	tu_assert_mem(got, want, (size_t)n);
	ck_assert_int_eq(esock_mpa_frame_decode(&d, false, got, (size_t)n, 0, NULL), n);
	ck_assert_uint_eq(d.pd_len, 3);
	tu_assert_mem(d.pd, pd, 3);
	ck_assert(!d.p2p && d.rtr == 0);
}
END_TEST

START_TEST(test_truncated_every_length)
{
	static const uint8_t pd[40] = { 1, 2, 3 };
	struct esock_mpa_frame f = { .rev = 1, .pd = pd, .pd_len = 40 }, d;
	uint8_t buf[128];
	ssize_t n = esock_mpa_frame_encode(&f, buf, sizeof(buf));

	ck_assert_int_eq(n, 60);
	for (ssize_t len = 0; len < n; len++) {
		struct esock_term t = { 0 };

		ck_assert_int_eq(esock_mpa_frame_decode(&d, false, buf, (size_t)len, 0, &t), -ENODATA);
		ck_assert(!t.valid);
		ck_assert_uint_eq(esock_mpa_frame_need(buf, (size_t)len), len < 20 ? 20 : 60);
	}
	/* Trailing octets (FPDUs behind the frame) are not consumed. */
	ck_assert_int_eq(esock_mpa_frame_decode(&d, false, buf, sizeof(buf), 0, NULL), 60);
}
END_TEST

struct err_case {
	const char *name;
	void (*mutate)(uint8_t *buf, size_t *len);
	bool reply;
	size_t pd_max;
	int rc;
};

static void m_key(uint8_t *b, size_t *l) { (void)l; b[3] = 'X'; }
static void m_reply_key(uint8_t *b, size_t *l) { (void)l; b[10] = 'p'; }
static void m_rev3(uint8_t *b, size_t *l) { (void)l; b[17] = 3; }
static void m_rev255(uint8_t *b, size_t *l) { (void)l; b[17] = 255; }
static void m_reject_in_req(uint8_t *b, size_t *l) { (void)l; b[16] |= ESOCK_MPA_FLAG_R; }
static void m_pd_600(uint8_t *b, size_t *l) { (void)l; b[18] = 0x02; b[19] = 0x58; }
static void m_enh_short(uint8_t *b, size_t *l)
{
	b[16] |= ESOCK_MPA_FLAG_S;
	b[17] = 2;
	b[19] = 2;
	*l = 22;
}
static void m_none(uint8_t *b, size_t *l) { (void)b; (void)l; }

static const struct err_case err_cases[] = {
	{ "bad key", m_key, false, 0, -EBADMSG },
	{ "reply key where request expected", m_reply_key, false, 0, -EBADMSG },
	{ "request key where reply expected", m_none, true, 0, -EBADMSG },
	{ "revision 3", m_rev3, false, 0, -EPROTONOSUPPORT },
	{ "revision 255", m_rev255, false, 0, -EPROTONOSUPPORT },
	{ "R in request", m_reject_in_req, false, 0, -EPROTO },
	{ "PD 600 > 512", m_pd_600, false, 0, -EMSGSIZE },
	{ "enhanced PD < 4", m_enh_short, false, 0, -EPROTO },
};

START_TEST(test_decode_errors)
{
	const struct err_case *c = &err_cases[_i];
	uint8_t buf[700] = { 0 };
	struct esock_mpa_frame f = { .rev = 1 }, d;
	struct esock_term t = { 0 };
	size_t len = (size_t)esock_mpa_frame_encode(&f, buf, sizeof(buf));

	c->mutate(buf, &len);
	if (c->rc == -EMSGSIZE)
		len = 20 + 600;
	ck_assert_msg(esock_mpa_frame_decode(&d, c->reply, buf, len, c->pd_max, &t) == c->rc, "%s",
		      c->name);
	ck_assert(t.valid);
	ck_assert_uint_eq(t.layer, ESOCK_TERM_LAYER_LLP);
	ck_assert_uint_eq(t.etype, ESOCK_TERM_LLP_ETYPE_MPA);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_BAD_FRAME);
}
END_TEST

START_TEST(test_pd_limits)
{
	static uint8_t pd[520];
	struct esock_mpa_frame f = { .rev = 2, .enhanced = true, .pd = pd, .pd_len = 508 }, d;
	uint8_t buf[600];

	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), 532);
	/* siw profile: 256 octets of PD at most. */
	ck_assert_int_eq(esock_mpa_frame_decode(&d, false, buf, 532, ESOCK_MPA_PD_MAX_SIW, NULL),
			 -EMSGSIZE);
	ck_assert_int_eq(esock_mpa_frame_decode(&d, false, buf, 532, 0, NULL), 532);
	f.pd_len = 509;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), -EMSGSIZE);
	f.pd_len = 10;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, 33), -ENOBUFS);
}
END_TEST

START_TEST(test_encode_invalid)
{
	struct esock_mpa_frame f = { .rev = 2, .enhanced = true };
	uint8_t buf[64];

	f.reject = true;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.reject = false;
	f.ird = 0x4000;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.ird = 0;
	f.rev = 3;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.rev = 2;
	f.rtr = 0x8;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.rtr = 0;
	f.pd_len = 3;
	ck_assert_int_eq(esock_mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(test_random_round_trip)
{
	uint64_t rng = tu_rng_seed("mpa frame round trip");
	static uint8_t pd[512], buf[600];

	for (int i = 0; i < 5000; i++) {
		struct esock_mpa_frame f = { 0 }, d;
		uint64_t r = tu_rng_next(&rng);
		ssize_t n;

		f.reply = r & 1;
		f.markers = r & 2;
		f.crc = r & 4;
		f.reject = f.reply && (r & 8);
		f.enhanced = r & 16;
		f.res = (uint8_t)((r >> 5) & 0xf);
		f.rev = (uint8_t)((r >> 9) % 3);
		f.p2p = esock_mpa_frame_has_ird_ord(&f) && (r & (1u << 12));
		f.rtr = esock_mpa_frame_has_ird_ord(&f) ? (uint8_t)((r >> 13) & 7) : 0;
		f.ird = esock_mpa_frame_has_ird_ord(&f) ? (uint16_t)((r >> 16) & 0x3fff) : 0;
		f.ord = esock_mpa_frame_has_ird_ord(&f) ? (uint16_t)((r >> 30) & 0x3fff) : 0;
		f.pd_len = (uint16_t)tu_rng_below(&rng, 509);
		f.pd = f.pd_len ? pd : NULL;
		tu_rng_fill(&rng, pd, f.pd_len);
		n = esock_mpa_frame_encode(&f, buf, sizeof(buf));
		ck_assert_int_eq(n, (ssize_t)esock_mpa_frame_len(&f));
		ck_assert_int_eq(esock_mpa_frame_decode(&d, f.reply, buf, (size_t)n, 0, NULL), n);
		ck_assert(d.reply == f.reply && d.markers == f.markers && d.crc == f.crc);
		ck_assert(d.reject == f.reject && d.enhanced == f.enhanced);
		ck_assert(d.res == f.res && d.rev == f.rev && d.p2p == f.p2p && d.rtr == f.rtr);
		ck_assert(d.ird == f.ird && d.ord == f.ord && d.pd_len == f.pd_len);
		if (f.pd_len)
			tu_assert_mem(d.pd, pd, f.pd_len);
	}
}
END_TEST

/* ---- negotiation ---- */

static const struct esock_mpa_policy pol_esock = { .rev = 2, .crc = true, .ird = 16, .ord = 16 };
static const struct esock_mpa_policy pol_esock_p2p = {
	.rev = 2, .p2p = true, .rtr = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, .ird = 8, .ord = 8
};
/* siw defaults: rev 2, no CRC, no P2P initiator, accepts Write/Read RTR as responder. */
static const struct esock_mpa_policy pol_siw = {
	.rev = 2, .p2p = true, .rtr = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ, .ird = 128,
	.ord = 128, .siw_compat = true
};
/* irdma: always P2P with Write and Read offered, CRC always on. */
static const struct esock_mpa_policy pol_irdma = {
	.rev = 2, .crc = true, .p2p = true, .rtr = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ,
	.ird = 64, .ord = 64
};

/* Runs a full exchange over the wire encoding; returns the initiator's rc. */
static int exchange(const struct esock_mpa_policy *ini, const struct esock_mpa_policy *resp,
		    struct esock_mpa_params *pi, struct esock_mpa_params *pr, int *rc_resp,
		    struct esock_term *t)
{
	struct esock_mpa_frame req, rep, dreq, drep;
	uint8_t wreq[600], wrep[600];
	ssize_t n;

	ck_assert_int_eq(esock_mpa_request_build(ini, &req), 0);
	n = esock_mpa_frame_encode(&req, wreq, sizeof(wreq));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(esock_mpa_frame_decode(&dreq, false, wreq, (size_t)n, 0, NULL), n);
	*rc_resp = esock_mpa_reply_build(resp, &dreq, &rep, pr, t);
	n = esock_mpa_frame_encode(&rep, wrep, sizeof(wrep));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(esock_mpa_frame_decode(&drep, true, wrep, (size_t)n, 0, NULL), n);
	return esock_mpa_reply_check(ini, &req, &drep, pi, t);
}

START_TEST(test_negotiate_crc_either_side)
{
	struct esock_mpa_policy a = pol_esock, b = pol_esock;
	struct esock_mpa_params pi, pr;
	struct esock_term t = { 0 };
	int rr;

	a.crc = false;
	ck_assert_int_eq(exchange(&a, &b, &pi, &pr, &rr, &t), 0);
	ck_assert_int_eq(rr, 0);
	ck_assert(pi.crc && pr.crc);
	b.crc = false;
	ck_assert_int_eq(exchange(&a, &b, &pi, &pr, &rr, &t), 0);
	ck_assert(!pi.crc && !pr.crc);
	ck_assert(pi.enhanced && pr.enhanced);
	ck_assert_uint_eq(pi.rev, 2);
}
END_TEST

START_TEST(test_negotiate_markers)
{
	struct esock_mpa_policy a = pol_esock, b = pol_esock;
	struct esock_mpa_params pi, pr;
	struct esock_term t = { 0 };
	int rr;

	/* Initiator wants markers, responder can send them: one direction only. */
	a.markers_rx = true;
	b.markers_tx = true;
	ck_assert_int_eq(exchange(&a, &b, &pi, &pr, &rr, &t), 0);
	ck_assert(pr.markers_tx && !pr.markers_rx && pi.markers_rx && !pi.markers_tx);
	/* A responder that cannot send markers rejects, as siw does. */
	b.markers_tx = false;
	ck_assert_int_eq(exchange(&a, &b, &pi, &pr, &rr, &t), -ECONNREFUSED);
	ck_assert_int_eq(rr, -ECONNREFUSED);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_BAD_FRAME);
}
END_TEST

START_TEST(test_negotiate_p2p_picks_write)
{
	struct esock_mpa_params pi, pr;
	struct esock_term t = { 0 };
	int rr;

	ck_assert_int_eq(exchange(&pol_irdma, &pol_siw, &pi, &pr, &rr, &t), 0);
	ck_assert(pi.p2p && pr.p2p);
	ck_assert_uint_eq(pi.rtr, ESOCK_MPA_RTR_WRITE);
	ck_assert_uint_eq(pr.rtr, ESOCK_MPA_RTR_WRITE);
	ck_assert(pi.crc && pr.crc);
	/* Responder IRD 128, initiator ORD 64: ord stays 64; responder ORD capped by ini IRD. */
	ck_assert_uint_eq(pi.ord, 64);
	ck_assert_uint_eq(pr.ord, 64);
	ck_assert_uint_eq(pr.peer_ird, 64);
}
END_TEST

START_TEST(test_negotiate_p2p_read_only)
{
	struct esock_mpa_policy a = pol_esock_p2p, b = pol_esock_p2p;
	struct esock_mpa_params pi, pr;
	struct esock_term t = { 0 };
	int rr;

	b.rtr = ESOCK_MPA_RTR_READ | ESOCK_MPA_RTR_SEND;
	ck_assert_int_eq(exchange(&a, &b, &pi, &pr, &rr, &t), 0);
	ck_assert_uint_eq(pi.rtr, ESOCK_MPA_RTR_READ);
	/* No common RTR type: the responder rejects with "no matching RTR". */
	a.rtr = ESOCK_MPA_RTR_WRITE;
	b.rtr = ESOCK_MPA_RTR_SEND;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(exchange(&a, &b, &pi, &pr, &rr, &t), -ECONNREFUSED);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_NO_RTR);
}
END_TEST

START_TEST(test_reply_check_errors)
{
	struct esock_mpa_frame req, rep;
	struct esock_mpa_params p;
	struct esock_term t;
	struct esock_mpa_policy pol = pol_esock_p2p;

	ck_assert_int_eq(esock_mpa_request_build(&pol, &req), 0);
	rep = (struct esock_mpa_frame){ .reply = true, .rev = 2, .enhanced = true, .p2p = true,
					.rtr = ESOCK_MPA_RTR_WRITE, .ird = 8, .ord = 8 };
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &p, &t), 0);
	/* Two RTR types chosen. */
	rep.rtr = ESOCK_MPA_RTR_WRITE | ESOCK_MPA_RTR_READ;
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &p, &t), -EPROTO);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_NO_RTR);
	/* A not echoed. */
	rep.rtr = ESOCK_MPA_RTR_WRITE;
	rep.p2p = false;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &p, &t), -EPROTO);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_NO_RTR);
	/* Responder ORD above our IRD. */
	rep.p2p = true;
	rep.ord = 9;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &p, &t), -EPROTO);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_IRD);
	/* Revision above ours. */
	rep.ord = 8;
	req.rev = 1;
	req.enhanced = false;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &p, &t), -EPROTO);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_BAD_FRAME);
	/* Reject. */
	rep.reject = true;
	ck_assert_int_eq(esock_mpa_reply_check(&pol, &req, &rep, &p, &t), -ECONNREFUSED);
}
END_TEST

START_TEST(test_v1_peer)
{
	struct esock_mpa_policy v1 = { .rev = 1, .crc = true }, a = pol_esock;
	struct esock_mpa_params pi, pr;
	struct esock_term t = { 0 };
	int rr;

	/* A v1 responder answers our v2 Request with rev 1: fall back (not siw_compat). */
	ck_assert_int_eq(exchange(&a, &v1, &pi, &pr, &rr, &t), 0);
	ck_assert_uint_eq(pi.rev, 1);
	ck_assert(!pi.enhanced && !pr.enhanced);
	ck_assert_uint_eq(pi.ord, 16);
	/* siw profile gives up instead, like siw. */
	a.siw_compat = true;
	ck_assert_int_eq(exchange(&a, &v1, &pi, &pr, &rr, &t), -EPROTO);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_BAD_FRAME);
	/* A v1 initiator gets a v1 Reply from a v2 responder. */
	ck_assert_int_eq(exchange(&v1, &pol_esock, &pi, &pr, &rr, &t), 0);
	ck_assert_uint_eq(pr.rev, 1);
}
END_TEST

/* An initiator asking for RTR meets a v1 responder: refused, unless RTR was optional. */
START_TEST(test_v1_peer_rtr_optional)
{
	struct esock_mpa_policy v1 = { .rev = 1, .crc = true }, a = pol_esock_p2p;
	struct esock_mpa_params pi, pr;
	struct esock_term t = { 0 };
	int rr;

	ck_assert_int_eq(exchange(&a, &v1, &pi, &pr, &rr, &t), -EPROTO);
	ck_assert_uint_eq(t.ecode, ESOCK_TERM_LLP_NO_RTR);
	a.p2p_optional = true;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(exchange(&a, &v1, &pi, &pr, &rr, &t), 0);
	ck_assert_uint_eq(pi.rev, 1);
	ck_assert(!pi.p2p && !pr.p2p);
	ck_assert_uint_eq(pi.rtr, 0);
	/* siw's profile still gives up on a downgraded Reply. */
	a.siw_compat = true;
	ck_assert_int_eq(exchange(&a, &v1, &pi, &pr, &rr, &t), -EPROTO);
}
END_TEST

START_TEST(test_request_build_invalid)
{
	struct esock_mpa_policy p = { .rev = 1, .p2p = true, .rtr = ESOCK_MPA_RTR_READ };
	struct esock_mpa_frame f;

	ck_assert_int_eq(esock_mpa_request_build(&p, &f), -EINVAL);
	p.rev = 2;
	p.rtr = 0;
	ck_assert_int_eq(esock_mpa_request_build(&p, &f), -EINVAL);
	p.rtr = ESOCK_MPA_RTR_READ;
	ck_assert_int_eq(esock_mpa_request_build(&p, &f), 0);
	ck_assert_uint_eq(f.ord, 1); /* a Read RTR needs an ORD slot */
	p.ird = 0x4000;
	ck_assert_int_eq(esock_mpa_request_build(&p, &f), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpa_startup");
	TCase *tc = tcase_create("frames"), *tn = tcase_create("negotiate");

	tcase_add_test(tc, test_encode_reference_request);
	tcase_add_test(tc, test_decode_reference_reply);
	tcase_add_test(tc, test_siw_style_request_with_pd);
	tcase_add_test(tc, test_truncated_every_length);
	tcase_add_loop_test(tc, test_decode_errors, 0, (int)(sizeof(err_cases) / sizeof(err_cases[0])));
	tcase_add_test(tc, test_pd_limits);
	tcase_add_test(tc, test_encode_invalid);
	tcase_add_test(tc, test_random_round_trip);
	tcase_add_test(tn, test_negotiate_crc_either_side);
	tcase_add_test(tn, test_negotiate_markers);
	tcase_add_test(tn, test_negotiate_p2p_picks_write);
	tcase_add_test(tn, test_negotiate_p2p_read_only);
	tcase_add_test(tn, test_reply_check_errors);
	tcase_add_test(tn, test_v1_peer);
	tcase_add_test(tn, test_v1_peer_rtr_optional);
	tcase_add_test(tn, test_request_build_invalid);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tn);
	return tu_run(s);
}
