/* SPDX-License-Identifier: MIT */
/*
 * Security of the endpoint against a crafted peer.  The victim is an esock
 * endpoint that accepted a connection and registered regions surrounded by
 * guard octets and filled with a known pattern: remote write, remote read,
 * local only, one in another PD, one invalidated, one deregistered, one
 * receive buffer.  The attacker (evil_peer.c) sends hand-built FPDUs that
 * break one rule each.  Every attack must end in a Terminate with the RFC
 * 5040 / 5041 / 5044 code and copied headers, the connection closed, the
 * victim QP in error with its receives flushed and its last error naming the
 * same reason, and every region, guards included, byte-for-byte unchanged.
 * Controls (exact fits, markers) prove the attacks fail for the right reason.
 * The last group attacks the MPA exchange itself.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "endpoint/ep_sock.h"
#include "tests/integration/ep_pair.h"
#include "tests/integration/evil_peer.h"
#include "tests/unit/testutil.h"

#define GUARD 64
#define RLEN 2048
#define RECV_LEN 64
#define RECV_ID 0xfeed
#define KEY 0x5a
#define DEREG_KEY 0xd7       /* never reused by a later registration of ours */
#define UNKNOWN_STAG 0x00fffe11u /* an index far beyond the STag table */
#define HDRS (ESOCK_TERM_HDRCT_M | ESOCK_TERM_HDRCT_D)
#define HDRS_R (HDRS | ESOCK_TERM_HDRCT_R)

enum { R_WRITE, R_READ, R_LOCAL, R_OTHER, R_INVAL, R_RECV, R_DEREG, NREG };

#define LW ESOCK_ACCESS_LOCAL_WRITE
#define RW ESOCK_ACCESS_REMOTE_WRITE
#define RR ESOCK_ACCESS_REMOTE_READ

static const struct {
	const char *name;
	unsigned access;
	size_t len;
} spec[NREG] = {
	[R_WRITE] = { "remote-write", LW | RW, RLEN },
	[R_READ] = { "remote-read", RR, RLEN },
	[R_LOCAL] = { "local-only", LW, RLEN },
	[R_OTHER] = { "other-PD", LW | RW | RR, RLEN },
	[R_INVAL] = { "invalidated", LW | RW | RR, RLEN },
	[R_RECV] = { "receive buffer", LW, RECV_LEN },
	[R_DEREG] = { "deregistered", LW | RW | RR, RLEN },
};

struct region {
	uint8_t *mem;  /* guard | region | guard */
	uint8_t *want; /* what mem must hold */
	uint8_t *base;
	size_t len;
	struct esock_mr *mr;
	uint32_t stag;
};

struct victim {
	struct ep_side s;
	struct esock_pd *other;
	struct esock_listener *l;
	int port;
	struct region r[NREG];
	struct esock_conn_param param;
	pthread_t th;
	int accept_rc;
	bool recv_posted;
	struct evil *e;
	const char *what; /* the case, for failure messages */
	uint8_t *junk;    /* attack payload */
};

/* The victim of the running test, closed by the fixture if an assertion cut it short. */
static struct victim *live;

/* ---- the victim ---- */

static void region_init(struct victim *v, int i)
{
	struct region *r = &v->r[i];
	size_t total = GUARD + spec[i].len + GUARD;

	r->mem = malloc(total);
	r->want = malloc(total);
	ck_assert(r->mem && r->want);
	for (size_t k = 0; k < total; k++)
		r->mem[k] = (uint8_t)(k * 13 + (size_t)i * 41 + 7);
	memcpy(r->want, r->mem, total);
	r->base = r->mem + GUARD;
	r->len = spec[i].len;
	ck_assert_int_eq(esock_mr_reg(i == R_OTHER ? v->other : v->s.pd, r->base, r->len,
				      spec[i].access, i == R_DEREG ? DEREG_KEY : KEY, &r->mr), 0);
	r->stag = esock_mr_stag(r->mr);
}

static void *accept_main(void *arg)
{
	struct victim *v = arg;
	struct esock_conn_req *req;
	int rc = esock_get_request(v->l, &req, EVIL_TIMEOUT_MS);

	if (rc == 0)
		rc = esock_accept(req, v->s.qp, &v->param);
	v->accept_rc = rc;
	return NULL;
}

/* Regions, listener, then the attacker connects and the victim accepts. */
static struct victim *victim_open(const struct esock_conn_param *vp,
				  const struct esock_mpa_policy *ap)
{
	/* On the heap: the fixture may close it after the test's frame is gone. */
	struct victim *v = calloc(1, sizeof(*v));

	ck_assert_ptr_nonnull(v);
	live = v;
	v->what = "?";
	ep_side_init(&v->s);
	ck_assert_int_eq(esock_pd_alloc(&v->other), 0);
	for (int i = 0; i < NREG; i++)
		region_init(v, i);
	ck_assert_int_eq(esock_mr_invalidate(v->s.pd, v->r[R_INVAL].stag), 0);
	/* Deregistered last: no later registration of this test can take its index. */
	ck_assert_int_eq(esock_mr_dereg(v->r[R_DEREG].mr), 0);
	v->r[R_DEREG].mr = NULL;
	if (vp)
		v->param = *vp;
	v->port = ep_listen_any(&v->l);
	ck_assert_int_eq(pthread_create(&v->th, NULL, accept_main, v), 0);
	v->e = evil_new(v->port, ap);
	ck_assert_ptr_nonnull(v->e);
	ck_assert_int_eq(evil_mpa(v->e), 0);
	pthread_join(v->th, NULL);
	ck_assert_int_eq(v->accept_rc, 0);
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	return v;
}

static void victim_close(struct victim *v)
{
	live = NULL;
	free(v->junk);
	evil_free(v->e);
	ep_side_fini(&v->s);
	for (int i = 0; i < NREG; i++) {
		if (v->r[i].mr)
			ck_assert_int_eq(esock_mr_dereg(v->r[i].mr), 0);
		free(v->r[i].mem);
		free(v->r[i].want);
	}
	ck_assert_int_eq(esock_pd_free(v->s.pd), 0);
	ck_assert_int_eq(esock_pd_free(v->other), 0);
	esock_listener_close(v->l);
	free(v);
}

static void victim_post_recv(struct victim *v)
{
	ep_post_recv1(&v->s, RECV_ID, v->r[R_RECV].base, RECV_LEN, v->r[R_RECV].stag);
	v->recv_posted = true;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Every region, guards included, holds what it should; names the first difference. */
static void victim_expect_memory(const struct victim *v)
{
	for (int i = 0; i < NREG; i++) {
		const struct region *r = &v->r[i];
		size_t total = GUARD + r->len + GUARD, k = 0;

		while (k < total && r->mem[k] == r->want[k])
			k++;
		ck_assert_msg(k == total, "%s: %s region changed at offset %ld: 0x%02x, want 0x%02x",
			      v->what, spec[i].name, (long)k - GUARD, r->mem[k], r->want[k]);
	}
}

/* The QP is in error, for the reason the Terminate gave, with receives flushed. */
static void victim_expect_error(struct victim *v, uint8_t layer, uint8_t etype, uint8_t ecode)
{
	struct esock_qp_error err;
	struct esock_wc wc;

	/* The attacker saw the close, which the victim does after entering error. */
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_ERROR);
	ck_assert_int_eq(esock_qp_last_error(v->s.qp, &err), 0);
	ck_assert(err.sent);
	ck_assert_msg(err.term.layer == layer && err.term.etype == etype && err.term.ecode == ecode,
		      "%s: last error \"%s\"", v->what, esock_term_str(err.term.layer, err.term.etype, err.term.ecode));
	if (v->recv_posted) {
		ck_assert_int_eq(esock_cq_wait(v->s.rcq, 1, &wc, 2000), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(wc.opcode, ESOCK_WC_RECV);
		ck_assert_uint_eq(wc.wr_id, RECV_ID);
	}
	ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 0);
	ck_assert_int_eq(esock_cq_poll(v->s.scq, 1, &wc), 0);
}

/* The whole verdict on one attack. */
static void expect_rejected(struct victim *v, const struct evil_term_want *want)
{
	struct evil_term_want w = *want;

	w.what = v->what;
	evil_expect_term(v->e, &w);
	evil_expect_closed(v->e);
	victim_expect_error(v, w.layer, w.etype, w.ecode);
	victim_expect_memory(v);
}

/* |len| octets of attack payload, owned by the victim fixture. */
static uint8_t *junk(struct victim *v, size_t len)
{
	free(v->junk);
	v->junk = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(v->junk);
	memset(v->junk, 0xee, len);
	return v->junk;
}

/* Checked teardown: a failed assertion leaves the victim open; close it. */
static void teardown(void)
{
	if (live)
		victim_close(live);
}

/* ---- tagged attacks: RDMA Write and Read Response ---- */

enum stag_sel { S_REGION, S_UNKNOWN, S_BAD_KEY };

struct tagged_case {
	const char *name;
	uint8_t opcode;
	int region;
	enum stag_sel sel;
	int64_t off;      /* TO = region base + off ... */
	uint64_t to_abs;  /* ... unless this is nonzero */
	uint32_t len;
	uint8_t layer, etype, ecode;
};

#define DDP_T ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_TAGGED
#define RDMAP_PROT ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_PROTECTION
#define RDMAP_OP ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_OPERATION
#define WR ESOCK_RDMAP_WRITE

static const struct tagged_case tagged_cases[] = {
	{ "unknown STag", WR, R_WRITE, S_UNKNOWN, 0, 0, 16, DDP_T, ESOCK_TERM_DDP_T_INV_STAG },
	{ "wrong key byte", WR, R_WRITE, S_BAD_KEY, 0, 0, 16, DDP_T, ESOCK_TERM_DDP_T_INV_STAG },
	{ "STag of another PD", WR, R_OTHER, S_REGION, 0, 0, 16, DDP_T, ESOCK_TERM_DDP_T_STAG_NOT_ASSOC },
	{ "one past the end", WR, R_WRITE, S_REGION, RLEN - 15, 0, 16, DDP_T, ESOCK_TERM_DDP_T_BASE_BOUNDS },
	{ "one before the start", WR, R_WRITE, S_REGION, -1, 0, 16, DDP_T, ESOCK_TERM_DDP_T_BASE_BOUNDS },
	{ "TO at the end, 1 octet", WR, R_WRITE, S_REGION, RLEN, 0, 1, DDP_T, ESOCK_TERM_DDP_T_BASE_BOUNDS },
	{ "TO wraps 2^64", WR, R_WRITE, S_REGION, 0, UINT64_MAX - 7, 16, DDP_T, ESOCK_TERM_DDP_T_TO_WRAP },
	{ "no remote write (remote read)", WR, R_READ, S_REGION, 0, 0, 16, RDMAP_PROT, ESOCK_TERM_RDMAP_ACCESS },
	{ "no remote write (local only)", WR, R_LOCAL, S_REGION, 0, 0, 16, RDMAP_PROT, ESOCK_TERM_RDMAP_ACCESS },
	{ "Write after invalidate", WR, R_INVAL, S_REGION, 0, 0, 16, DDP_T, ESOCK_TERM_DDP_T_INV_STAG },
	{ "Write after dereg", WR, R_DEREG, S_REGION, 0, 0, 16, DDP_T, ESOCK_TERM_DDP_T_INV_STAG },
	{ "oversized ULPDU (65535)", WR, R_WRITE, S_REGION, 0, 0, ESOCK_MPA_ULPDU_MAX - ESOCK_DDP_TAGGED_HLEN,
	  DDP_T, ESOCK_TERM_DDP_T_BASE_BOUNDS },
	{ "unsolicited Read Response", ESOCK_RDMAP_READ_RESP, R_WRITE, S_REGION, 0, 0, 16, DDP_T,
	  ESOCK_TERM_DDP_T_INV_STAG },
};
#define NTAGGED (int)(sizeof(tagged_cases) / sizeof(tagged_cases[0]))

static uint32_t pick_stag(const struct victim *v, int region, enum stag_sel sel)
{
	if (sel == S_UNKNOWN)
		return UNKNOWN_STAG;
	if (sel == S_BAD_KEY)
		return v->r[region].stag ^ 0x01;
	return v->r[region].stag;
}

START_TEST(tagged_attack)
{
	const struct tagged_case *c = &tagged_cases[_i];
	struct victim *v;
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX], *payload;
	uint64_t to;
	size_t hl;

	v = victim_open(NULL, NULL);
	payload = junk(v, c->len);
	v->what = c->name;
	to = c->to_abs ? c->to_abs : va(v->r[c->region].base) + (uint64_t)c->off;
	victim_post_recv(v);
	hl = evil_hdr_tagged(hdr, c->opcode, pick_stag(v, c->region, c->sel), to);
	evil_send(v->e, hdr, hl, payload, c->len);
	expect_rejected(v, &(struct evil_term_want){ c->layer, c->etype, c->ecode, HDRS, hdr,
						     hl + c->len, false, NULL });
	victim_close(v);
}
END_TEST

/* ---- RDMA Read Requests (checks at the data source, RFC 5040 §4.4) ---- */

struct read_case {
	const char *name;
	int region;
	enum stag_sel sel;
	int64_t off;
	uint64_t to_abs;
	uint32_t size;
	uint8_t ecode;
};

static const struct read_case read_cases[] = {
	{ "unknown STag", R_READ, S_UNKNOWN, 0, 0, 16, ESOCK_TERM_RDMAP_INV_STAG },
	{ "wrong key byte", R_READ, S_BAD_KEY, 0, 0, 16, ESOCK_TERM_RDMAP_INV_STAG },
	{ "STag of another PD", R_OTHER, S_REGION, 0, 0, 16, ESOCK_TERM_RDMAP_STAG_NOT_ASSOC },
	{ "no remote read (remote write)", R_WRITE, S_REGION, 0, 0, 16, ESOCK_TERM_RDMAP_ACCESS },
	{ "no remote read (local only)", R_LOCAL, S_REGION, 0, 0, 16, ESOCK_TERM_RDMAP_ACCESS },
	{ "Read after invalidate", R_INVAL, S_REGION, 0, 0, 16, ESOCK_TERM_RDMAP_INV_STAG },
	{ "Read after dereg", R_DEREG, S_REGION, 0, 0, 16, ESOCK_TERM_RDMAP_INV_STAG },
	{ "one past the end", R_READ, S_REGION, RLEN - 15, 0, 16, ESOCK_TERM_RDMAP_BASE_BOUNDS },
	{ "one before the start", R_READ, S_REGION, -1, 0, 16, ESOCK_TERM_RDMAP_BASE_BOUNDS },
	{ "size one more than the region", R_READ, S_REGION, 0, 0, RLEN + 1, ESOCK_TERM_RDMAP_BASE_BOUNDS },
	{ "TO wraps 2^64", R_READ, S_REGION, 0, UINT64_MAX - 7, 16, ESOCK_TERM_RDMAP_TO_WRAP },
};
#define NREAD (int)(sizeof(read_cases) / sizeof(read_cases[0]))

START_TEST(read_attack)
{
	const struct read_case *c = &read_cases[_i];
	struct esock_rdmap_read_req rr = { .sink_stag = 0x4242, .sink_to = 0x1000, .size = c->size };
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX];
	struct victim *v;
	size_t hl;

	v = victim_open(NULL, NULL);
	v->what = c->name;
	victim_post_recv(v);
	rr.src_stag = pick_stag(v, c->region, c->sel);
	rr.src_to = c->to_abs ? c->to_abs : va(v->r[c->region].base) + (uint64_t)c->off;
	hl = evil_hdr_read_req(v->e, hdr, &rr);
	evil_send(v->e, hdr, hl, NULL, 0);
	/* Nothing but the Terminate may come back: no octet of the source leaks. */
	expect_rejected(v, &(struct evil_term_want){ RDMAP_PROT, c->ecode, HDRS_R, hdr, hl, false, NULL });
	victim_close(v);
}
END_TEST

/* ---- malformed and unexpected messages ---- */

#define DDP_U ESOCK_TERM_LAYER_DDP, ESOCK_TERM_DDP_ETYPE_UNTAGGED
#define LLP ESOCK_TERM_LAYER_LLP, ESOCK_TERM_LLP_ETYPE_MPA

/* A builder writes the offending ULPDU's header, payload length and CRC fault. */
typedef size_t (*build_fn)(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc);

static size_t b_write16(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	(void)bad_crc;
	*plen = 16;
	return evil_hdr_tagged(hdr, WR, v->r[R_WRITE].stag, va(v->r[R_WRITE].base));
}

static size_t b_send16(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	(void)bad_crc;
	*plen = 16;
	return evil_hdr_send(v->e, hdr, ESOCK_RDMAP_SEND, 0);
}

static size_t b_send_too_long(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	*plen = RECV_LEN + 1;
	return hl;
}

static size_t b_ddp_version_tagged(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_write16(v, hdr, plen, bad_crc);

	hdr[0] = (uint8_t)((hdr[0] & ~ESOCK_DDP_CTRL_DV) | 2);
	return hl;
}

static size_t b_ddp_version_untagged(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[0] = (uint8_t)(hdr[0] & ~ESOCK_DDP_CTRL_DV);
	return hl;
}

static size_t b_rdmap_version(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_write16(v, hdr, plen, bad_crc);

	hdr[1] = (uint8_t)((hdr[1] & ~ESOCK_RDMAP_CTRL_RV) | 2 << 6);
	return hl;
}

static size_t b_rdmap_version_send(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[1] = (uint8_t)(hdr[1] & ~ESOCK_RDMAP_CTRL_RV);
	return hl;
}

/* The opcode nibble rewritten after encoding (the encoder refuses reserved ones). */
static size_t with_opcode(size_t hl, uint8_t *hdr, uint8_t op)
{
	hdr[1] = (uint8_t)((hdr[1] & ~ESOCK_RDMAP_CTRL_OPCODE) | op);
	return hl;
}

static size_t b_opcode_reserved(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	*plen = 0;
	return with_opcode(hl, hdr, 0xc);
}

static size_t b_opcode_reserved_tagged(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	return with_opcode(b_write16(v, hdr, plen, bad_crc), hdr, 0xf);
}

static size_t b_opcode_rfc7306(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	*plen = ESOCK_RDMAP_IMM_HLEN; /* Immediate Data: the endpoint does not speak RFC 7306 */
	return with_opcode(hl, hdr, ESOCK_RDMAP_IMM_DATA);
}

static size_t b_send_tagged(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	return with_opcode(b_write16(v, hdr, plen, bad_crc), hdr, ESOCK_RDMAP_SEND);
}

static size_t b_bad_qn(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[9] = 5; /* QN (octets 6-9): none is 5 */
	return hl;
}

static size_t b_msn_far(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[12] = 0x10; /* MSN (octets 10-13) 1 -> 0x1001: outside any window */
	return hl;
}

static size_t b_msn_5(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[13] = 5; /* MSN 5 where 1 is expected: inside the window, still not next (siw: same) */
	return hl;
}

static size_t b_msn_2(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[13] = 2; /* the second message first: on an in-order LLP a swap is an error */
	return hl;
}

static size_t b_mo_16(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_send16(v, hdr, plen, bad_crc);

	hdr[17] = 16; /* MO (octets 14-17) 16 for the first segment of a message */
	return hl;
}

static size_t b_short_ulpdu(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	b_write16(v, hdr, plen, bad_crc);
	*plen = 0;
	return 6; /* ULPDU_Length 6: shorter than the tagged DDP header */
}

static size_t b_read_req_payload(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	struct esock_rdmap_read_req rr = { .size = 16, .src_stag = v->r[R_READ].stag,
					   .src_to = va(v->r[R_READ].base) };

	(void)bad_crc;
	*plen = 8;
	return evil_hdr_read_req(v->e, hdr, &rr);
}

static size_t b_ctrl_oversized(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	size_t hl = b_read_req_payload(v, hdr, plen, bad_crc);

	*plen = 200 - hl; /* a Read Request ULPDU beyond the 128 octets gathered */
	return hl;
}

static size_t b_crc_write(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	*bad_crc = true;
	return b_write16(v, hdr, plen, bad_crc);
}

static size_t b_crc_send(struct victim *v, uint8_t *hdr, size_t *plen, bool *bad_crc)
{
	*bad_crc = true;
	return b_send16(v, hdr, plen, bad_crc);
}

struct misc_case {
	const char *name;
	bool post_recv;
	build_fn build;
	uint8_t layer, etype, ecode, hdrct;
};

static const struct misc_case misc_cases[] = {
	{ "Send, no posted receive", false, b_send16, DDP_U, ESOCK_TERM_DDP_U_NO_BUF, HDRS },
	{ "Send longer than the receive", true, b_send_too_long, DDP_U, ESOCK_TERM_DDP_U_TOO_LONG, HDRS },
	{ "RDMAP version 2, Write", true, b_rdmap_version, RDMAP_OP, ESOCK_TERM_RDMAP_VERSION, HDRS },
	{ "RDMAP version 0, Send", true, b_rdmap_version_send, RDMAP_OP, ESOCK_TERM_RDMAP_VERSION, HDRS },
	{ "reserved opcode 0xC", true, b_opcode_reserved, RDMAP_OP, ESOCK_TERM_RDMAP_OPCODE, HDRS },
	{ "reserved opcode 0xF, tagged", true, b_opcode_reserved_tagged, RDMAP_OP, ESOCK_TERM_RDMAP_OPCODE, HDRS },
	{ "RFC 7306 opcode not negotiated", true, b_opcode_rfc7306, RDMAP_OP, ESOCK_TERM_RDMAP_OPCODE, HDRS },
	{ "Send in the tagged model", true, b_send_tagged, RDMAP_OP, ESOCK_TERM_RDMAP_OPCODE, HDRS },
	{ "Send on QN 5", true, b_bad_qn, DDP_U, ESOCK_TERM_DDP_U_INV_QN, HDRS },
	{ "Send with MSN far ahead", true, b_msn_far, DDP_U, ESOCK_TERM_DDP_U_MSN_RANGE, HDRS },
	{ "Send with MSN 5, 1 expected", true, b_msn_5, DDP_U, ESOCK_TERM_DDP_U_MSN_RANGE, HDRS },
	{ "Send with MSN 2 before 1", true, b_msn_2, DDP_U, ESOCK_TERM_DDP_U_MSN_RANGE, HDRS },
	{ "first Send segment at MO 16", true, b_mo_16, DDP_U, ESOCK_TERM_DDP_U_INV_MO, HDRS },
	{ "ULPDU shorter than its DDP header", true, b_short_ulpdu, LLP, ESOCK_TERM_LLP_MARKER, 0 },
	{ "Read Request with payload", true, b_read_req_payload, RDMAP_OP,
	  ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, HDRS },
	{ "oversized control ULPDU (200)", true, b_ctrl_oversized, RDMAP_OP,
	  ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM, HDRS },
};
#define NMISC (int)(sizeof(misc_cases) / sizeof(misc_cases[0]))

/* DDP version errors: the Terminate copies the offending DDP header. */
static const struct misc_case version_cases[] = {
	{ "DDP version 2, tagged", true, b_ddp_version_tagged, DDP_T, ESOCK_TERM_DDP_T_VERSION, HDRS },
	{ "DDP version 0, untagged", true, b_ddp_version_untagged, DDP_U, ESOCK_TERM_DDP_U_VERSION,
	  HDRS },
};
#define NVERSION (int)(sizeof(version_cases) / sizeof(version_cases[0]))

/*
 * Bad CRC.  An FPDU that arrives whole in one read (every small one, these
 * included) is verified before anything is placed: nothing changes.  A large
 * payload (not tested here: the regions are small) is
 * read straight from the socket into its target and the CRC is known only at
 * its end (docs/endpoint.md): the octets the FPDU addressed, which the peer
 * had the right to write, may then hold the rejected payload (RDMA leaves a
 * sink's content undefined until a completion), but nothing else changes,
 * nothing completes successfully, and the Terminate reports the CRC error.
 */
static const struct {
	struct misc_case c;
	int placed;    /* region whose first octets may take the payload, or -1 */
} crc_cases[] = {
	{ { "bad CRC on a Write", true, b_crc_write, LLP, ESOCK_TERM_LLP_CRC, 0 }, -1 },
	{ { "bad CRC on a Send", true, b_crc_send, LLP, ESOCK_TERM_LLP_CRC, 0 }, -1 },
};
#define NCRC (int)(sizeof(crc_cases) / sizeof(crc_cases[0]))

static void run_misc_placed(const struct misc_case *c, int placed);

static void run_misc(const struct misc_case *c)
{
	run_misc_placed(c, -1);
}

/* As run_misc; |placed| names a region whose first |plen| octets may take the payload. */
static void run_misc_placed(const struct misc_case *c, int placed)
{
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX], *payload, out[1024];
	struct victim *v;
	bool bad_crc = false;
	size_t hl, plen = 0, n;

	v = victim_open(NULL, NULL);
	v->what = c->name;
	if (c->post_recv)
		victim_post_recv(v);
	hl = c->build(v, hdr, &plen, &bad_crc);
	payload = junk(v, plen);
	n = evil_fpdu(v->e, hdr, hl, payload, plen, bad_crc, out, sizeof(out));
	ck_assert_int_eq(evil_send_raw(v->e, out, n), 0);
	if (placed >= 0)
		memcpy(v->r[placed].want + GUARD, payload, plen);
	expect_rejected(v, &(struct evil_term_want){ c->layer, c->etype, c->ecode, c->hdrct, hdr,
						     hl + plen, false, NULL });
	victim_close(v);
}

START_TEST(misc_attack)
{
	run_misc(&misc_cases[_i]);
}
END_TEST

START_TEST(version_attack)
{
	run_misc(&version_cases[_i]);
}
END_TEST

START_TEST(crc_attack)
{
	run_misc_placed(&crc_cases[_i].c, crc_cases[_i].placed);
}
END_TEST

/* ---- Send with Invalidate of an STag the peer may not invalidate ---- */

static const struct {
	const char *name;
	int region;
	enum stag_sel sel;
} inval_cases[] = {
	{ "unknown STag", R_WRITE, S_UNKNOWN },
	{ "STag of another PD", R_OTHER, S_REGION },
	{ "local-only STag", R_LOCAL, S_REGION },
	{ "already invalid STag", R_INVAL, S_REGION },
	{ "deregistered STag", R_DEREG, S_REGION },
};
#define NINVAL (int)(sizeof(inval_cases) / sizeof(inval_cases[0]))

START_TEST(send_inv_attack)
{
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX];
	struct victim *v;
	size_t hl;

	v = victim_open(NULL, NULL);
	v->what = inval_cases[_i].name;
	victim_post_recv(v);
	hl = evil_hdr_send(v->e, hdr, ESOCK_RDMAP_SEND_INV,
			   pick_stag(v, inval_cases[_i].region, inval_cases[_i].sel));
	evil_send(v->e, hdr, hl, NULL, 0);
	expect_rejected(v, &(struct evil_term_want){ RDMAP_PROT, ESOCK_TERM_RDMAP_CANT_INVALIDATE, HDRS,
						     hdr, hl, false, NULL });
	/* The STags named stay as they were. */
	ck_assert(esock_mr_valid(v->r[R_OTHER].mr));
	ck_assert(esock_mr_valid(v->r[R_LOCAL].mr));
	ck_assert(!esock_mr_valid(v->r[R_INVAL].mr));
	victim_close(v);
}
END_TEST

/* A legitimate remote invalidation, then a Write through the dead STag. */
START_TEST(write_after_remote_invalidate)
{
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX];
	struct victim *v;
	struct esock_wc wc;
	size_t hl;

	v = victim_open(NULL, NULL);
	victim_post_recv(v);
	hl = evil_hdr_send(v->e, hdr, ESOCK_RDMAP_SEND_INV, v->r[R_WRITE].stag);
	evil_send(v->e, hdr, hl, NULL, 0);
	ck_assert_int_eq(esock_cq_wait(v->s.rcq, 1, &wc, EVIL_TIMEOUT_MS), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert(wc.flags & ESOCK_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_stag, v->r[R_WRITE].stag);
	ck_assert(!esock_mr_valid(v->r[R_WRITE].mr));
	v->recv_posted = false; /* consumed */
	hl = evil_hdr_tagged(hdr, WR, v->r[R_WRITE].stag, va(v->r[R_WRITE].base));
	evil_send(v->e, hdr, hl, junk(v, 16), 16);
	expect_rejected(v, &(struct evil_term_want){ DDP_T, ESOCK_TERM_DDP_T_INV_STAG, HDRS, hdr,
						     hl + 16, false, NULL });
	victim_close(v);
}
END_TEST

/* More Read Requests at once than the IRD the victim announced. */
START_TEST(read_beyond_ird)
{
	struct esock_conn_param vp = { .ird = 2 };
	struct esock_rdmap_read_req rr = { .sink_stag = 0x4242, .size = 16 };
	uint8_t hdr[3][ESOCK_RDMAP_HDR_MAX], out[512];
	struct victim *v;
	size_t hl = 0, n = 0;

	v = victim_open(&vp, NULL);
	ck_assert_uint_eq(v->e->mp.ord, 2); /* what the victim told us */
	rr.src_stag = v->r[R_READ].stag;
	rr.src_to = va(v->r[R_READ].base);
	/* One send: the victim sees all three before it answers any. */
	for (int i = 0; i < 3; i++) {
		hl = evil_hdr_read_req(v->e, hdr[i], &rr);
		n += evil_fpdu(v->e, hdr[i], hl, NULL, 0, false, out + n, sizeof(out) - n);
	}
	ck_assert_int_eq(evil_send_raw(v->e, out, n), 0);
	expect_rejected(v, &(struct evil_term_want){ RDMAP_OP, ESOCK_TERM_RDMAP_CATASTROPHIC_STREAM,
						     HDRS_R, hdr[2], hl, true, NULL });
	victim_close(v);
}
END_TEST

/* ---- controls: what fits exactly is accepted ---- */

/* Sends a 4-octet Send and waits for the victim to receive it (orders what came before). */
static void sync_send(struct victim *v)
{
	static const uint8_t ping[4] = { 'p', 'i', 'n', 'g' };
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX];
	struct esock_wc wc;
	size_t hl = evil_hdr_send(v->e, hdr, ESOCK_RDMAP_SEND, 0);

	victim_post_recv(v);
	evil_send(v->e, hdr, hl, ping, sizeof(ping));
	ck_assert_int_eq(esock_cq_wait(v->s.rcq, 1, &wc, EVIL_TIMEOUT_MS), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, sizeof(ping));
	memcpy(v->r[R_RECV].want + GUARD, ping, sizeof(ping));
	v->recv_posted = false;
}

/* A Write of |len| octets at |off| into the remote-write region, verified in place. */
static void write_and_check(struct victim *v, size_t off, size_t len, unsigned seed)
{
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX], *data = malloc(len);
	size_t hl = evil_hdr_tagged(hdr, WR, v->r[R_WRITE].stag, va(v->r[R_WRITE].base) + off);

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 31 + seed);
	evil_send(v->e, hdr, hl, data, len);
	sync_send(v);
	memcpy(v->r[R_WRITE].want + GUARD + off, data, len);
	victim_expect_memory(v);
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	free(data);
}

/* Reads the whole remote-read region and checks every Read Response segment. */
static void read_and_check(struct victim *v)
{
	struct esock_rdmap_read_req rr = { .sink_stag = 0x4243, .sink_to = 0x10000, .size = RLEN,
					   .src_stag = v->r[R_READ].stag,
					   .src_to = va(v->r[R_READ].base) };
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX], got[RLEN];
	struct esock_rdmap_msg m;
	size_t have = 0;

	evil_send(v->e, hdr, evil_hdr_read_req(v->e, hdr, &rr), NULL, 0);
	do {
		ck_assert_int_eq(evil_next(v->e, &m), 1);
		ck_assert_int_eq(m.opcode, ESOCK_RDMAP_READ_RESP);
		ck_assert_uint_eq(m.ddp.stag, rr.sink_stag);
		ck_assert_uint_eq(m.ddp.to, rr.sink_to + have);
		ck_assert_uint_le(have + m.payload_len, RLEN);
		memcpy(got + have, m.payload, m.payload_len);
		have += m.payload_len;
	} while (!m.ddp.last);
	ck_assert_uint_eq(have, RLEN);
	ck_assert_int_eq(memcmp(got, v->r[R_READ].base, RLEN), 0);
}

/*
 * Read Responses that do not fill the Read's sink exactly: the Read must not
 * complete with success, the peer gets a DDP tagged Terminate (as siw: a
 * wrong offset or total is "base or bounds"), nothing outside the octets
 * the valid segments named changes.  Segments: (offset, length, last).
 */
#define RD_LEN 1024
static const struct {
	const char *name;
	int nseg;
	struct { uint32_t off, len; bool last; } seg[3];
	uint8_t ecode;    /* 0xff: accepted */
	uint32_t placed;  /* octets of the sink the accepted segments wrote */
} resp_cases[] = {
	{ "whole, in two segments", 2, { { 0, 512, false }, { 512, 512, true } }, 0xff, RD_LEN },
	{ "short: 512 of 1024, last", 1, { { 0, 512, true } }, ESOCK_TERM_DDP_T_BASE_BOUNDS, 0 },
	{ "short: two segments, 768 of 1024", 2, { { 0, 512, false }, { 512, 256, true } },
	  ESOCK_TERM_DDP_T_BASE_BOUNDS, 512 },
	{ "overlap: the same 512 twice", 2, { { 0, 512, false }, { 0, 512, true } },
	  ESOCK_TERM_DDP_T_BASE_BOUNDS, 512 },
	{ "gap: 0-512, then 600-1024", 2, { { 0, 512, false }, { 600, 424, true } },
	  ESOCK_TERM_DDP_T_BASE_BOUNDS, 512 },
	{ "long: 1024, then 16 more", 2, { { 0, 1024, false }, { 1024, 16, true } },
	  ESOCK_TERM_DDP_T_BASE_BOUNDS, RD_LEN },
};
#define NRESP (int)(sizeof(resp_cases) / sizeof(resp_cases[0]))

START_TEST(read_response_attack)
{
	uint8_t hdr[ESOCK_RDMAP_HDR_MAX], *payload;
	struct esock_rdmap_msg m;
	struct victim *v;
	struct esock_wc wc;
	size_t hl = 0;

	v = victim_open(NULL, NULL);
	v->what = resp_cases[_i].name;
	payload = junk(v, RD_LEN + 64);
	for (size_t k = 0; k < RD_LEN + 64; k++)
		payload[k] = (uint8_t)(k * 5 + 1);
	/* A first FPDU (a zero-length Write) lets the responder send (RFC 5044). */
	hl = evil_hdr_tagged(hdr, ESOCK_RDMAP_WRITE, v->r[R_WRITE].stag, va(v->r[R_WRITE].base));
	evil_send(v->e, hdr, hl, NULL, 0);
	ck_assert_int_eq(ep_post_send1(&v->s, 77, ESOCK_WR_RDMA_READ, v->r[R_LOCAL].base, RD_LEN,
				       v->r[R_LOCAL].stag, 0x7000, 0x4321), 0);
	ck_assert_int_eq(evil_next(v->e, &m), 1);
	ck_assert_int_eq(m.opcode, ESOCK_RDMAP_READ_REQ);
	for (int k = 0; k < resp_cases[_i].nseg; k++) {
		uint32_t off = resp_cases[_i].seg[k].off, len = resp_cases[_i].seg[k].len;

		hl = evil_hdr_tagged(hdr, ESOCK_RDMAP_READ_RESP, m.u.read_req.sink_stag,
				     m.u.read_req.sink_to + off);
		if (!resp_cases[_i].seg[k].last)
			hdr[0] &= (uint8_t)~ESOCK_DDP_CTRL_L;
		evil_send(v->e, hdr, hl, payload + off, len);
	}
	memcpy(v->r[R_LOCAL].want + GUARD, payload, resp_cases[_i].placed);
	if (resp_cases[_i].ecode == 0xff) {
		ck_assert_int_eq(esock_cq_wait(v->s.scq, 1, &wc, 5000), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 77);
		ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	} else {
		int n = resp_cases[_i].nseg - 1;

		evil_expect_term(v->e, &(struct evil_term_want){ DDP_T, resp_cases[_i].ecode, HDRS, hdr,
								  hl + resp_cases[_i].seg[n].len, false,
								  v->what });
		evil_expect_closed(v->e);
		ck_assert_int_eq(esock_cq_wait(v->s.scq, 1, &wc, 5000), 1);
		ck_assert_uint_eq(wc.wr_id, 77);
		ck_assert_msg(wc.status != ESOCK_WC_SUCCESS, "%s: the Read completed with success",
			      v->what);
		ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_ERROR);
	}
	victim_expect_memory(v);
	victim_close(v);
}
END_TEST

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The responder may not send before the initiator's first FPDU.  A client
 * that completes MPA and then says nothing must not hold our sends for
 * good: they fail once it closes (_i 0), or at the MPA timeout (_i 1), and
 * nothing ever reaches it.
 */
START_TEST(silent_initiator)
{
	uint8_t buf[64] = "held";
	struct esock_rdmap_msg m;
	struct esock_mr *mr;
	struct victim *v;
	struct esock_wc wc;
	int64_t t0, dt;

	setenv("ESOCK_MPA_TIMEOUT_MS", "600", 1);
	v = victim_open(NULL, NULL);
	unsetenv("ESOCK_MPA_TIMEOUT_MS");
	mr = ep_reg(&v->s, buf, sizeof(buf), ESOCK_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(ep_post_send1(&v->s, 5, ESOCK_WR_SEND, buf, sizeof(buf), esock_mr_stag(mr), 0,
				       0), 0);
	t0 = now_ms();
	if (_i == 0)
		shutdown(v->e->fd, SHUT_WR);
	ck_assert_int_eq(esock_cq_wait(v->s.scq, 1, &wc, 5000), 1);
	dt = now_ms() - t0;
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_ne(wc.status, ESOCK_WC_SUCCESS);
	if (_i == 0)
		ck_assert_msg(dt < 500, "the Send failed %ld ms after the client's FIN", (long)dt);
	else
		ck_assert_msg(dt >= 300 && dt < 3000, "the Send failed after %ld ms", (long)dt);
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_ERROR);
	ck_assert_int_le(evil_next(v->e, &m), 0); /* not one FPDU came out */
	ck_assert_int_eq(esock_mr_dereg(mr), 0);
	victim_close(v);
}
END_TEST

START_TEST(exact_fit_accepted)
{
	struct victim *v;

	v = victim_open(NULL, NULL);
	write_and_check(v, 0, RLEN, 1);    /* the whole region */
	write_and_check(v, RLEN - 1, 1, 2); /* its last octet */
	read_and_check(v);
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	victim_close(v);
}
END_TEST

/*
 * The victim's Sends on the wire, octet for octet, as the segmenter cuts them
 * (RFC 5041 §5: payloads of MULPDU less the header, in multiples of 4 but the
 * last; every header field, reserved and Invalidate STag 0 included), for
 * sizes on both sides of one FPDU: small ones framed whole, one-FPDU ones
 * framed at once (header prediction's sending twin), larger ones segmented.
 * Then Sends from the peer into receives of two SGEs: scattered, completed
 * in order, with nothing written outside them.
 */
START_TEST(sends_on_the_wire)
{
	struct victim *v = victim_open(NULL, NULL);
	/* Sizes as {FPDU payloads, octets}: the MULPDU follows the MSS, which grows on loopback. */
	static const long sizes[][2] = { { 0, 1 }, { 0, 3 }, { 0, 64 }, { 0, 255 }, { 0, 256 },
					 { 0, 257 }, { 0, 4095 }, { 1, -1 }, { 1, 0 }, { 1, 1 },
					 { 1, 4 }, { 2, 3 }, { 1, -1 }, { 1, 0 }, { 1, 1 } };
	size_t cap = 3 * 65536;
	uint8_t *buf = malloc(cap);
	struct esock_mr *mr;
	struct esock_wc wc;
	uint32_t msn = 1;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < cap; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	mr = ep_reg(&v->s, buf, cap, 0);
	sync_send(v); /* (the victim, the responder, sends only after our first FPDU) */
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++, msn++) {
		size_t maxp = ((size_t)v->s.qp->mulpdu - ESOCK_DDP_UNTAGGED_HLEN) & ~(size_t)3;
		size_t len = (size_t)((long)maxp * sizes[k][0] + sizes[k][1]), off = 0;

		ck_assert_uint_le(len, cap);
		ck_assert_int_eq(ep_post_send1(&v->s, k, ESOCK_WR_SEND, buf, (uint32_t)len,
					       esock_mr_stag(mr), 0, 0), 0);
		/* (as the segmenter saw it: a message of several FPDUs may ask TCP for the MSS) */
		maxp = ((size_t)v->s.qp->mulpdu - ESOCK_DDP_UNTAGGED_HLEN) & ~(size_t)3;
		do {
			size_t n = len - off < maxp ? len - off : maxp;
			struct esock_rdmap_msg m, want;
			uint8_t hdr[ESOCK_RDMAP_HDR_MAX];
			ssize_t hl;

			ck_assert_int_eq(esock_rdmap_msg_init(&want, ESOCK_RDMAP_SEND), 0);
			want.ddp.msn = msn;
			want.ddp.mo = (uint32_t)off;
			want.ddp.last = off + n == len;
			hl = esock_rdmap_hdr_encode(&want, hdr, sizeof(hdr));
			ck_assert_int_gt(hl, 0);
			ck_assert_int_eq(evil_next(v->e, &m), 1); /* (its CRC and padding checked) */
			ck_assert_msg(v->e->seg_len == (size_t)hl + n,
				      "a Send of %zu: FPDU at %zu carries %zu octets, not %zu", len, off,
				      v->e->seg_len, (size_t)hl + n);
			ck_assert_msg(memcmp(v->e->seg, hdr, (size_t)hl) == 0,
				      "a Send of %zu: header at %zu differs", len, off);
			ck_assert_int_eq(memcmp(v->e->seg + hl, buf + off, n), 0);
			off += n;
		} while (off < len);
		ck_assert_int_eq(ep_wait1(v->s.scq, &wc), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, k);
		ck_assert_uint_eq(wc.byte_len, len);
	}
	/* Into two SGEs (3 + 50 octets of the 64-octet receive buffer, apart), three times. */
	for (int i = 0; i < 3; i++) {
		uint8_t *rb = v->r[R_RECV].base, hdr[ESOCK_RDMAP_HDR_MAX], msg[40];
		struct esock_sge sg[2] = { { va(rb + 1), 3, v->r[R_RECV].stag },
					   { va(rb + 10), 50, v->r[R_RECV].stag } };
		struct esock_recv_wr rw = { .wr_id = 70u + (uint64_t)i, .sg_list = sg, .num_sge = 2 };
		size_t hl = evil_hdr_send(v->e, hdr, ESOCK_RDMAP_SEND, 0);

		for (size_t j = 0; j < sizeof(msg); j++)
			msg[j] = (uint8_t)(j + 11 * (size_t)i);
		ck_assert_int_eq(esock_post_recv(v->s.qp, &rw, NULL), 0);
		evil_send(v->e, hdr, hl, msg, sizeof(msg));
		ck_assert_int_eq(esock_cq_wait(v->s.rcq, 1, &wc, EVIL_TIMEOUT_MS), 1);
		ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 70u + (uint64_t)i);
		ck_assert_uint_eq(wc.opcode, ESOCK_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, sizeof(msg));
		memcpy(v->r[R_RECV].want + GUARD + 1, msg, 3);
		memcpy(v->r[R_RECV].want + GUARD + 10, msg + 3, sizeof(msg) - 3);
		victim_expect_memory(v);
	}
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	ck_assert_int_eq(esock_mr_dereg(mr), 0);
	free(buf);
	victim_close(v);
}
END_TEST

/* Markers both ways (the victim asks for them and we ask for them). */
START_TEST(markers_placed)
{
	struct esock_conn_param vp = { .markers = true };
	struct esock_mpa_policy ap = { .rev = 2, .crc = true, .markers_rx = true, .markers_tx = true,
				       .ird = 8, .ord = 8 };
	struct esock_conn_info ci;
	struct victim *v;

	v = victim_open(&vp, &ap);
	ck_assert(v->e->mp.markers_tx && v->e->mp.markers_rx);
	ck_assert_int_eq(esock_qp_conn_info(v->s.qp, &ci), 0);
	ck_assert(ci.markers_rx && ci.markers_tx);
	/* Misaligned and long enough to carry several markers inside one FPDU. */
	write_and_check(v, 23, 1700, 3);
	write_and_check(v, 1, 5, 4);
	read_and_check(v);
	victim_close(v);
}
END_TEST

/* ---- the MPA exchange ---- */

#define G(s) { s, sizeof(s) - 1 }
static const struct {
	const char *s;
	size_t len;
} garbage[] = {
	G("GET / HTTP/1.1\r\nHost: victim\r\n\r\n"),
	G("MPA ID Rep Frame\x40\x02\x00\x00"),     /* a Reply where the Request belongs */
	G("MPA ID Req Frame\x40\x03\x00\x00"),     /* revision 3 */
	G("MPA ID Req Frame\x40\x02\xff\xff...."), /* PD_Length 65535 */
	G("MPA ID Req Frame\x60\x02\x00\x00"),     /* R=1 in a Request */
	/* A whole Request, then octets before any Reply (RFC 5044: no FPDU before it). */
	G("MPA ID Req Frame\x40\x01\x00\x00\x00\x06\x41\x43\x00\x00\x00\x00"),
};
#define NGARBAGE (int)(sizeof(garbage) / sizeof(garbage[0]))

START_TEST(garbage_request)
{
	struct esock_listener *l;
	struct esock_conn_req *req = NULL;
	int port = ep_listen_any(&l), fd = evil_tcp_connect(port);
	char c;

	ck_assert_int_ge(fd, 0);
	/* The listener's backlog holds the connection and its octets until we ask. */
	ck_assert_int_eq(send(fd, garbage[_i].s, garbage[_i].len, MSG_NOSIGNAL),
			 (ssize_t)garbage[_i].len);
	/* The listener resets it and never hands it out. */
	ck_assert_int_eq(esock_get_request(l, &req, 300), -ETIMEDOUT);
	ck_assert_ptr_null(req);
	errno = 0;
	ck_assert_int_eq(recv(fd, &c, 1, 0), -1);
	ck_assert_int_eq(errno, ECONNRESET);
	close(fd);
	esock_listener_close(l);
}
END_TEST

/* A plain TCP listener on loopback that nobody answers; returns its fd. */
static int mute_listener(struct sockaddr_in *sin)
{
	socklen_t len = sizeof(*sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sin, sizeof(*sin)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sin, &len), 0);
	return fd;
}

/* The Reply never comes: the initiator gives up at its MPA timeout. */
START_TEST(reply_never_comes)
{
	struct esock_conn_param cp = { .timeout_ms = 300 };
	struct sockaddr_in sin;
	struct ep_side a;
	int lfd = mute_listener(&sin);
	int64_t t0 = now_ms(), dt;

	ep_side_init(&a);
	ck_assert_int_eq(esock_qp_connect(a.qp, (struct sockaddr *)&sin, sizeof(sin), &cp), -ETIMEDOUT);
	dt = now_ms() - t0;
	ck_assert_msg(dt >= 250 && dt < 3000, "gave up after %ld ms", (long)dt);
	ck_assert_int_eq(esock_qp_state(a.qp), ESOCK_QPS_IDLE);
	ep_side_fini(&a);
	ck_assert_int_eq(esock_pd_free(a.pd), 0);
	close(lfd);
}
END_TEST

struct real_client {
	int port;
	int rc;
	int64_t done_ms;
};

/* A genuine MPA client: its exchange must not wait for anyone else's. */
static void *real_client_main(void *arg)
{
	struct real_client *c = arg;
	struct evil *e = evil_new(c->port, NULL);

	c->rc = e ? evil_mpa(e) : -ECONNREFUSED;
	c->done_ms = now_ms();
	evil_free(e);
	return NULL;
}

/*
 * Connections that send nothing, or half a Request, delay nobody: a real
 * client behind them is served at once (not after their MPA timeout, as
 * when the listener read Requests one at a time), and they are reset once
 * their timeout passes, while the listener waits.
 */
START_TEST(request_never_comes)
{
	struct esock_listener *l;
	struct esock_conn_req *req = NULL;
	struct ep_side b;
	struct real_client c = { 0 };
	pthread_t th;
	int port, idle[3];
	int64_t t0, dt;
	char ch;

	setenv("ESOCK_MPA_TIMEOUT_MS", "800", 1);
	port = ep_listen_any(&l);
	unsetenv("ESOCK_MPA_TIMEOUT_MS");
	ep_side_init(&b);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_ge(idle[i] = evil_tcp_connect(port), 0);
		if (i == 1) /* half a Request, and no more */
			ck_assert_int_eq(send(idle[i], "MPA ID Req", 10, MSG_NOSIGNAL), 10);
	}
	/* The listener sees the idle ones first. */
	ck_assert_int_eq(esock_get_request(l, &req, 50), -ETIMEDOUT);
	t0 = now_ms();
	c.port = port;
	ck_assert_int_eq(pthread_create(&th, NULL, real_client_main, &c), 0);
	ck_assert_int_eq(esock_get_request(l, &req, 5000), 0);
	dt = now_ms() - t0;
	ck_assert_msg(dt < 400, "the real client waited %ld ms behind idle ones", (long)dt);
	ck_assert_int_eq(esock_accept(req, b.qp, NULL), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(c.rc, 0);
	/*
	 * The idle ones go at their MPA timeout, while the listener waits; the
	 * two that said nothing wait in the kernel first (TCP_DEFER_ACCEPT, about
	 * 1 s): they are reset about 1 s later than the one with half a Request.
	 */
	ck_assert_int_eq(esock_get_request(l, &req, 3500), -ETIMEDOUT);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		ck_assert_int_eq(recv(idle[i], &ch, 1, 0), -1);
		ck_assert_int_eq(errno, ECONNRESET);
		close(idle[i]);
	}
	ep_side_fini(&b);
	ck_assert_int_eq(esock_pd_free(b.pd), 0);
	esock_listener_close(l);
}
END_TEST

/* Many silent connections: beyond the pending bound the oldest are reset, the newest served. */
START_TEST(pending_bound)
{
	struct esock_listener *l;
	struct esock_listen_param lp = { .max_pending = 4 };
	struct esock_conn_req *req = NULL;
	struct real_client c = { 0 };
	pthread_t th;
	int port = ep_listen_any(&l), idle[6], resets = 0;
	char ch;

	ck_assert_int_eq(esock_listener_configure(l, &lp), 0);
	for (int i = 0; i < 6; i++) {
		ck_assert_int_ge(idle[i] = evil_tcp_connect(port), 0);
		/* A first octet: one that says nothing at all waits in the kernel (TCP_DEFER_ACCEPT). */
		ck_assert_int_eq(send(idle[i], "M", 1, MSG_NOSIGNAL), 1);
		/* One at a time, so that the listener knows which is oldest. */
		ck_assert_int_eq(esock_get_request(l, &req, 20), -ETIMEDOUT);
	}
	c.port = port;
	ck_assert_int_eq(pthread_create(&th, NULL, real_client_main, &c), 0);
	ck_assert_int_eq(esock_get_request(l, &req, 5000), 0);
	ck_assert_int_eq(esock_reject(req, NULL, 0), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(c.rc, -ECONNREFUSED);
	for (int i = 0; i < 6; i++) {
		struct pollfd p = { .fd = idle[i], .events = POLLIN };

		if (poll(&p, 1, 0) == 1 && recv(idle[i], &ch, 1, MSG_DONTWAIT) < 0 && errno == ECONNRESET) {
			resets++;
			ck_assert_msg(i < 3, "connection %d (one of the newest) was reset", i);
		}
		close(idle[i]);
	}
	ck_assert_int_eq(resets, 3); /* 6 + the real one through a bound of 4 */
	esock_listener_close(l);
}
END_TEST

struct rejecter {
	int lfd;
	bool enhanced;
	int rc;
};

/* Reads the Request and answers R=1 with private data. */
static void *reject_main(void *arg)
{
	static const char why[] = "go away";
	struct rejecter *r = arg;
	struct esock_mpa_frame rep = { .reply = true, .reject = true, .crc = true, .rev = 2,
				       .enhanced = r->enhanced, .pd = (const uint8_t *)why,
				       .pd_len = sizeof(why) };
	uint8_t in[ESOCK_MPA_FRAME_MAX], out[ESOCK_MPA_FRAME_MAX];
	size_t have = 0, need = ESOCK_MPA_HDR_LEN;
	int fd = accept(r->lfd, NULL, NULL);
	ssize_t n;

	r->rc = -1;
	if (fd < 0)
		return NULL;
	while (have < need && (n = recv(fd, in + have, need - have, 0)) > 0) {
		have += (size_t)n;
		need = esock_mpa_frame_need(in, have);
	}
	n = esock_mpa_frame_encode(&rep, out, sizeof(out));
	if (have == need && n > 0 && send(fd, out, (size_t)n, MSG_NOSIGNAL) == n)
		r->rc = 0;
	close(fd);
	return NULL;
}

/* A reject Reply: -ECONNREFUSED, and its private data readable afterwards. */
START_TEST(reject_reply)
{
	struct rejecter rj = { .enhanced = _i == 1 };
	struct esock_conn_param cp = { .timeout_ms = EVIL_TIMEOUT_MS };
	struct esock_conn_info ci;
	struct sockaddr_in sin;
	struct ep_side a;
	pthread_t th;
	int rc;

	rj.lfd = mute_listener(&sin);
	ep_side_init(&a);
	ck_assert_int_eq(pthread_create(&th, NULL, reject_main, &rj), 0);
	ck_assert_int_eq(esock_qp_connect(a.qp, (struct sockaddr *)&sin, sizeof(sin), &cp),
			 -ECONNREFUSED);
	pthread_join(th, NULL);
	ck_assert_int_eq(rj.rc, 0);
	ck_assert_int_eq(esock_qp_state(a.qp), ESOCK_QPS_IDLE);
	rc = esock_qp_conn_info(a.qp, &ci);
	ep_side_fini(&a);
	ck_assert_int_eq(esock_pd_free(a.pd), 0);
	close(rj.lfd);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(ci.private_data_len, sizeof("go away"));
	ck_assert_str_eq((const char *)ci.private_data, "go away");
}
END_TEST

/* ---- a message lent to the reader's buffer (ep_qp_recv_now) ---- */

#define LENT_RECV 4096
#define LENT_ID 0x1e47

/* A Send segment's headers: MSN of the message in progress, its |mo|, |last|. */
static size_t lent_hdr(struct evil *e, uint8_t *buf, bool last, uint32_t mo)
{
	struct esock_rdmap_msg m;
	ssize_t n;

	ck_assert_int_eq(esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND), 0);
	m.ddp.msn = e->msn[ESOCK_DDP_QN_SEND];
	m.ddp.last = last;
	m.ddp.mo = mo;
	if (last)
		e->msn[ESOCK_DDP_QN_SEND]++;
	n = esock_rdmap_hdr_encode(&m, buf, ESOCK_RDMAP_HDR_MAX);
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* The reader's call, once what was sent is in the victim's socket; returns what it placed. */
static ssize_t lent_read(struct victim *v, uint8_t *buf, size_t len)
{
	struct pollfd p = { .fd = ep_qp_fd(v->s.qp), .events = POLLIN };
	uint32_t msgs;
	ssize_t n;

	ck_assert_int_eq(poll(&p, 1, EVIL_TIMEOUT_MS), 1);
	n = ep_qp_recv_now(v->s.qp, buf, len, EP_NOW_WAIT, &msgs);
	ck_assert_int_ge(n, 0);
	ck_assert_uint_eq(msgs, n ? 1 : 0);
	return n;
}

/*
 * A Send of several FPDUs may go straight into the reader's buffer when it
 * has room for all of the posted receive the Send would take: placed whole
 * within the call it completes there (no completion, the receive stays
 * posted); cut by the call's end, between its FPDUs (_i 0) or inside one
 * (_i 1), what came is moved to that receive, where the rest lands and the
 * message completes whole.  Longer than that receive (_i 2): Terminated as
 * too long, as it would be there.  The receive holds exactly the message.
 */
START_TEST(lent_message)
{
	struct victim *v = victim_open(NULL, NULL);
	static uint8_t pay[3000], in[2 * LENT_RECV], fp[2 * LENT_RECV], *rbuf;
	uint64_t rng = tu_rng_seed("lent_message");
	uint8_t h[ESOCK_RDMAP_HDR_MAX];
	struct esock_mr *mr;
	struct esock_wc wc;
	size_t hl, n;

	v->what = "a message lent to the reader's buffer";
	ep_qp_set_lazy(v->s.qp, true); /* (its input read by our calls only, as a socket's) */
	ep_engine_refresh(v->s.qp);
	rbuf = calloc(1, LENT_RECV + 1);
	mr = ep_reg(&v->s, rbuf, LENT_RECV + 1, LW);
	ep_post_recv1(&v->s, LENT_ID, rbuf, LENT_RECV, esock_mr_stag(mr));
	tu_rng_fill(&rng, pay, sizeof(pay));
	/* Both FPDUs in before the call: whole in the caller's buffer. */
	hl = lent_hdr(v->e, h, false, 0);
	n = evil_fpdu(v->e, h, hl, pay, 1000, false, fp, sizeof(fp));
	hl = lent_hdr(v->e, h, true, 1000);
	n += evil_fpdu(v->e, h, hl, pay + 1000, 500, false, fp + n, sizeof(fp) - n);
	ck_assert_int_eq(evil_send_raw(v->e, fp, n), 0);
	ck_assert_int_eq(lent_read(v, in, sizeof(in)), 1500);
	tu_assert_mem(in, pay, 1500);
	ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 0);
	if (_i == 2) { /* longer than the receive: its first FPDU fits, the second not */
		hl = lent_hdr(v->e, h, false, 0);
		n = evil_fpdu(v->e, h, hl, pay, 3000, false, fp, sizeof(fp));
		ck_assert_int_eq(evil_send_raw(v->e, fp, n), 0);
		lent_read(v, in, sizeof(in));
		hl = lent_hdr(v->e, h, true, 3000);
		n = evil_fpdu(v->e, h, hl, pay, 2000, false, fp, sizeof(fp));
		ck_assert_int_eq(evil_send_raw(v->e, fp, n), 0);
		lent_read(v, in, sizeof(in));
		evil_expect_term(v->e, &(struct evil_term_want){ DDP_U,
								 ESOCK_TERM_DDP_U_TOO_LONG, HDRS, fp + 2, hl + 2000,
								 false, v->what });
		ck_assert_uint_eq(rbuf[LENT_RECV], 0);
		esock_mr_dereg(mr);
		free(rbuf);
		victim_close(v);
		return;
	}
	/* The message cut by the call's end. */
	hl = lent_hdr(v->e, h, false, 0);
	n = evil_fpdu(v->e, h, hl, pay, 2000, false, fp, sizeof(fp));
	ck_assert_int_eq(evil_send_raw(v->e, fp, _i == 1 ? n - 700 : n), 0);
	ck_assert_int_eq(lent_read(v, in, sizeof(in)), 0);
	ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 0);
	if (_i == 1)
		ck_assert_int_eq(evil_send_raw(v->e, fp + n - 700, 700), 0);
	hl = lent_hdr(v->e, h, true, 2000);
	n = evil_fpdu(v->e, h, hl, pay + 2000, 1000, false, fp, sizeof(fp));
	ck_assert_int_eq(evil_send_raw(v->e, fp, n), 0);
	ck_assert_int_eq(lent_read(v, in, sizeof(in)), 0); /* (the message is the receive's now) */
	ck_assert_int_eq(ep_wait1(v->s.rcq, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, LENT_ID);
	ck_assert_uint_eq(wc.byte_len, 3000);
	tu_assert_mem(rbuf, pay, 3000);
	ck_assert_uint_eq(rbuf[LENT_RECV], 0);
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	esock_mr_dereg(mr);
	free(rbuf);
	victim_close(v);
}
END_TEST

/* Until the victim's socket holds |want| octets, reading them (lazy QP) when |want| is 0. */
static void victim_queued(struct victim *v, int want)
{
	int q = -1;

	for (int k = 0; k < EVIL_TIMEOUT_MS; k++) {
		if (want == 0)
			ep_qp_progress(v->s.qp, EP_WANT_RX);
		ck_assert_int_eq(ioctl(ep_qp_fd(v->s.qp), FIONREAD, &q), 0);
		if (q == want)
			return;
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	}
	ck_abort_msg("%s: %d octets queued, want %d", v->what, q, want);
}

/*
 * A message lent back to its receive (cut by a call's end) completes there
 * at the next call, which then has its answer: the messages behind it stay
 * for the calls after, straight into their buffers, whole in the stage
 * (_i 0, EP_NOW_STAY) or cut by the read's end (_i 1: the rest in the
 * socket), instead of following it into receives (each one cut by a read's
 * end lent again: a stream copied through the pool to its end).
 */
START_TEST(lent_message_next_stay)
{
	struct victim *v = victim_open(NULL, NULL);
	static uint8_t pay[3000], in[2 * LENT_RECV], fp[4 * LENT_RECV], *rbuf;
	uint64_t rng = tu_rng_seed("lent_message_next_stay");
	uint8_t h[ESOCK_RDMAP_HDR_MAX];
	struct pollfd pf = { .events = POLLIN };
	struct esock_mr *mr;
	struct esock_wc wc;
	uint32_t msgs;
	size_t hl, n, first = 0;

	v->what = "the messages behind a lent one";
	ep_qp_set_lazy(v->s.qp, true); /* (its input read by our calls only, as a socket's) */
	ep_engine_refresh(v->s.qp);
	rbuf = calloc(3, LENT_RECV);
	mr = ep_reg(&v->s, rbuf, 3 * LENT_RECV, LW);
	for (int k = 0; k < 3; k++) /* (room for all three: before, those behind took them) */
		ep_post_recv1(&v->s, LENT_ID + (uint64_t)k, rbuf + k * LENT_RECV, LENT_RECV,
			      esock_mr_stag(mr));
	tu_rng_fill(&rng, pay, sizeof(pay));
	/* The first message's first FPDU: open at the call's end, lent to the first receive. */
	hl = lent_hdr(v->e, h, false, 0);
	n = evil_fpdu(v->e, h, hl, pay, 2000, false, fp, sizeof(fp));
	ck_assert_int_eq(evil_send_raw(v->e, fp, n), 0);
	ck_assert_int_eq(lent_read(v, in, sizeof(in)), 0);
	/* Its last FPDU and two whole messages behind it; _i 1: the second cut. */
	hl = lent_hdr(v->e, h, true, 2000);
	n = evil_fpdu(v->e, h, hl, pay + 2000, 1000, false, fp, sizeof(fp));
	for (int k = 0; k < 2; k++) {
		hl = lent_hdr(v->e, h, true, 0);
		n += evil_fpdu(v->e, h, hl, pay + 500 * k, 1500, false, fp + n, sizeof(fp) - n);
		if (k == 0)
			first = _i == 1 ? n - 700 : n;
	}
	ck_assert_int_eq(evil_send_raw(v->e, fp, first), 0);
	victim_queued(v, (int)first);
	ck_assert_int_eq(ep_qp_recv_now(v->s.qp, in, sizeof(in), EP_NOW_WAIT | EP_NOW_STAY, &msgs), 0);
	ck_assert_int_eq(ep_wait1(v->s.rcq, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, LENT_ID);
	ck_assert_uint_eq(wc.byte_len, 3000);
	tu_assert_mem(rbuf, pay, 3000);
	ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 0);
	ck_assert_int_eq(evil_send_raw(v->e, fp + first, n - first), 0);
	/* The next two calls take one each, straight into their buffers. */
	pf.fd = ep_qp_fd(v->s.qp);
	for (int k = 0; k < 2; k++) {
		if (!ep_qp_rx_staged(v->s.qp))
			ck_assert_int_eq(poll(&pf, 1, EVIL_TIMEOUT_MS), 1); /* (in the socket: readable) */
		ck_assert_int_eq(ep_qp_recv_now(v->s.qp, in, 1500, EP_NOW_WAIT | EP_NOW_STAY, &msgs),
				 1500);
		ck_assert_uint_eq(msgs, 1);
		tu_assert_mem(in, pay + 500 * k, 1500);
		ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 0);
	}
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	esock_mr_dereg(mr);
	free(rbuf);
	victim_close(v);
}
END_TEST

/*
 * A large payload that came in part (its writer not yet there, as under a
 * loaded machine's scheduling): its rest, under EP_DIRECT_MIN but more than
 * a stage read, is read straight into place in one receive call, not into
 * the stage 4 KiB per call and copied from there (ep_rx.c, read_some).
 */
START_TEST(payload_rest_one_read)
{
	enum { PAY = 60000, CUT = 50000 }; /* (the rest: ~10 KiB) */
	struct victim *v = victim_open(NULL, NULL);
	static uint8_t pay[PAY], fp[PAY + 64];
	uint64_t rng = tu_rng_seed("payload_rest_one_read");
	uint8_t h[ESOCK_RDMAP_HDR_MAX], *rbuf;
	struct esock_mr *mr;
	struct esock_wc wc;
	uint32_t r0;
	size_t hl, n;

	v->what = "a large payload in two parts";
	ep_qp_set_lazy(v->s.qp, true); /* (read by our calls only) */
	ep_engine_refresh(v->s.qp);
	rbuf = calloc(1, PAY + 1);
	mr = ep_reg(&v->s, rbuf, PAY + 1, LW);
	ep_post_recv1(&v->s, 7, rbuf, PAY, esock_mr_stag(mr));
	tu_rng_fill(&rng, pay, sizeof(pay));
	hl = evil_hdr_send(v->e, h, ESOCK_RDMAP_SEND, 0);
	n = evil_fpdu(v->e, h, hl, pay, PAY, false, fp, sizeof(fp));
	ck_assert_int_eq(evil_send_raw(v->e, fp, CUT), 0);
	victim_queued(v, 0);
	ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 0);
	r0 = v->s.qp->rx_reads;
	ck_assert_int_eq(evil_send_raw(v->e, fp + CUT, n - CUT), 0);
	victim_queued(v, (int)(n - CUT));
	ep_qp_progress(v->s.qp, EP_WANT_RX);
	ck_assert_int_eq(esock_cq_poll(v->s.rcq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, ESOCK_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_uint_eq(wc.byte_len, PAY);
	ck_assert_msg(v->s.qp->rx_reads - r0 == 1, "the last %zu octets took %u reads", n - CUT,
		      v->s.qp->rx_reads - r0);
	tu_assert_mem(rbuf, pay, PAY);
	ck_assert_uint_eq(rbuf[PAY], 0);
	ck_assert_int_eq(esock_qp_state(v->s.qp), ESOCK_QPS_RTS);
	esock_mr_dereg(mr);
	free(rbuf);
	victim_close(v);
}
END_TEST

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, NULL, teardown);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *suite(void)
{
	Suite *s = suite_create("endpoint security");
	TCase *tc = tcase(s, "data path attacks");

	tcase_add_loop_test(tc, tagged_attack, 0, NTAGGED);
	tcase_add_loop_test(tc, read_attack, 0, NREAD);
	tcase_add_loop_test(tc, misc_attack, 0, NMISC);
	tcase_add_loop_test(tc, read_response_attack, 0, NRESP);
	tcase_add_loop_test(tc, silent_initiator, 0, 2);
	tcase_add_loop_test(tc, version_attack, 0, NVERSION);
	tcase_add_loop_test(tc, crc_attack, 0, NCRC);
	tcase_add_loop_test(tc, send_inv_attack, 0, NINVAL);
	tcase_add_test(tc, write_after_remote_invalidate);
	tcase_add_test(tc, read_beyond_ird);
	tc = tcase(s, "controls");
	tcase_add_test(tc, exact_fit_accepted);
	tcase_add_test(tc, markers_placed);
	tcase_add_loop_test(tc, lent_message, 0, 3);
	tcase_add_loop_test(tc, lent_message_next_stay, 0, 2);
	tcase_add_test(tc, payload_rest_one_read);
	tc = tcase(s, "MPA exchange");
	tcase_add_loop_test(tc, garbage_request, 0, NGARBAGE);
	tcase_add_test(tc, reply_never_comes);
	tcase_add_test(tc, sends_on_the_wire);
	tcase_add_test(tc, request_never_comes);
	tcase_add_test(tc, pending_bound);
	tcase_add_loop_test(tc, reject_reply, 0, 2);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
