/* SPDX-License-Identifier: MIT */
/*
 * RDMAP headers: the reference FPDUs decoded field by field, every opcode
 * (RFC 5040 and RFC 7306) round-tripped with random fields, every validation
 * error with its exact Terminate reason, and the name tables.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <esock/rdmap.h>

#include "tests/unit/mpa_vectors.h"
#include "tests/unit/testutil.h"
#include "util/byteorder.h"

/* Decodes reference FPDU |i| (skipping length, PAD and CRC). */
static ssize_t dec_vec(int i, struct esock_rdmap_msg *m, uint8_t *w)
{
	int n = tu_hex(fpdu_vecs[i].hex, w, 128);
	size_t ulen = esock_get_be16(w);

	ck_assert_int_gt(n, 0);
	return esock_rdmap_decode(m, w + 2, ulen, NULL, NULL);
}

START_TEST(test_reference_frames)
{
	struct esock_rdmap_msg m;
	uint8_t w[128], out[128];

	ck_assert_int_eq(dec_vec(0, &m, w), 14);
	ck_assert_uint_eq(m.opcode, ESOCK_RDMAP_WRITE);
	ck_assert_uint_eq(m.ddp.stag, 1);
	ck_assert_uint_eq(m.payload_len, 0);

	ck_assert_int_eq(dec_vec(2, &m, w), 18);
	ck_assert_uint_eq(m.opcode, ESOCK_RDMAP_SEND);
	ck_assert_uint_eq(m.ddp.msn, 1);
	ck_assert_uint_eq(m.payload_len, 13);
	ck_assert(memcmp(m.payload, "Hello, iWARP!", 13) == 0);
	ck_assert_int_eq(esock_rdmap_hdr_encode(&m, out, sizeof(out)), 18);
	tu_assert_mem(out, w + 2, 18);

	ck_assert_int_eq(dec_vec(3, &m, w), 46);
	ck_assert_uint_eq(m.opcode, ESOCK_RDMAP_READ_REQ);
	ck_assert_uint_eq(m.ddp.qn, 1);
	ck_assert_uint_eq(m.u.read_req.src_stag, 1);
	ck_assert_uint_eq(m.u.read_req.sink_stag, 0);
	ck_assert_uint_eq(m.u.read_req.size, 0);
	ck_assert_int_eq(esock_rdmap_hdr_encode(&m, out, sizeof(out)), 46);
	tu_assert_mem(out, w + 2, 46);

	ck_assert_int_eq(dec_vec(4, &m, w), 14);
	ck_assert_uint_eq(m.opcode, ESOCK_RDMAP_READ_RESP);

	ck_assert_int_eq(dec_vec(5, &m, w), 22);
	ck_assert_uint_eq(m.opcode, ESOCK_RDMAP_TERMINATE);
	ck_assert_uint_eq(m.u.term.t.layer, ESOCK_TERM_LAYER_LLP);
	ck_assert_uint_eq(m.u.term.t.ecode, ESOCK_TERM_LLP_CRC);
	ck_assert_uint_eq(m.u.term.order, ESOCK_RDMAP_TERM_RFC);

	ck_assert_int_eq(dec_vec(6, &m, w), 22);
	ck_assert_uint_eq(m.u.term.t.layer, ESOCK_TERM_LAYER_RDMAP);
	ck_assert_uint_eq(m.u.term.t.etype, 0);
	ck_assert_uint_eq(m.u.term.t.ecode, 0xff);
}
END_TEST

static void randomize(struct esock_rdmap_msg *m, uint64_t *rng)
{
	m->ddp.last = m->opcode == ESOCK_RDMAP_WRITE || m->opcode == ESOCK_RDMAP_READ_RESP ||
			      m->opcode == ESOCK_RDMAP_SEND ? tu_rng_next(rng) & 1 : true;
	if (m->ddp.tagged) {
		m->ddp.stag = (uint32_t)tu_rng_next(rng);
		m->ddp.to = tu_rng_next(rng);
	} else {
		m->ddp.msn = (uint32_t)tu_rng_next(rng);
	}
	m->inval_stag = esock_rdmap_opinfo(m->opcode)->inval ? (uint32_t)tu_rng_next(rng) : 0;
	tu_rng_fill(rng, &m->u, sizeof(m->u));
	if (m->opcode == ESOCK_RDMAP_ATOMIC_REQ) {
		m->u.atomic_req.op &= 0xf;
		m->u.atomic_req.rsvd &= 0x0fffffff;
	}
}

START_TEST(test_every_opcode_round_trip)
{
	uint64_t rng = tu_rng_seed("rdmap opcode round trip");

	for (uint8_t op = 0; op <= ESOCK_RDMAP_ATOMIC_RESP; op++) {
		if (op == ESOCK_RDMAP_TERMINATE)
			continue; /* check_rdmap_term */
		for (int i = 0; i < 500; i++) {
			struct esock_rdmap_msg m, d;
			uint8_t buf[ESOCK_RDMAP_HDR_MAX + 16];
			ssize_t n;
			struct esock_term t = { 0 };

			ck_assert_int_eq(esock_rdmap_msg_init(&m, op), 0);
			randomize(&m, &rng);
			n = esock_rdmap_hdr_encode(&m, buf, sizeof(buf));
			ck_assert_int_eq(n, (m.ddp.tagged ? 14 : 18) + esock_rdmap_opinfo(op)->hlen);
			ck_assert_int_eq(esock_rdmap_decode(&d, buf, (size_t)n, NULL, &t), n);
			ck_assert(!t.valid);
			ck_assert_uint_eq(d.opcode, op);
			ck_assert_uint_eq(d.inval_stag, m.inval_stag);
			ck_assert(d.ddp.last == m.ddp.last && d.ddp.stag == m.ddp.stag && d.ddp.to == m.ddp.to);
			ck_assert(d.ddp.msn == m.ddp.msn && d.ddp.qn == m.ddp.qn);
			if (op == ESOCK_RDMAP_READ_REQ)
				ck_assert(d.u.read_req.sink_stag == m.u.read_req.sink_stag &&
					  d.u.read_req.sink_to == m.u.read_req.sink_to &&
					  d.u.read_req.size == m.u.read_req.size &&
					  d.u.read_req.src_stag == m.u.read_req.src_stag &&
					  d.u.read_req.src_to == m.u.read_req.src_to);
			if (op == ESOCK_RDMAP_ATOMIC_REQ)
				ck_assert(d.u.atomic_req.op == m.u.atomic_req.op &&
					  d.u.atomic_req.rsvd == m.u.atomic_req.rsvd &&
					  d.u.atomic_req.req_id == m.u.atomic_req.req_id &&
					  d.u.atomic_req.stag == m.u.atomic_req.stag &&
					  d.u.atomic_req.to == m.u.atomic_req.to &&
					  d.u.atomic_req.swap_add == m.u.atomic_req.swap_add &&
					  d.u.atomic_req.swap_add_mask == m.u.atomic_req.swap_add_mask &&
					  d.u.atomic_req.compare == m.u.atomic_req.compare &&
					  d.u.atomic_req.compare_mask == m.u.atomic_req.compare_mask);
			if (op == ESOCK_RDMAP_ATOMIC_RESP)
				ck_assert(d.u.atomic_resp.req_id == m.u.atomic_resp.req_id &&
					  d.u.atomic_resp.orig == m.u.atomic_resp.orig);
			if (op == ESOCK_RDMAP_IMM_DATA || op == ESOCK_RDMAP_IMM_DATA_SE)
				ck_assert(d.u.imm == m.u.imm);
		}
	}
}
END_TEST

START_TEST(test_control_words)
{
	/* The 16-bit DDP/RDMAP control words of single-segment messages. */
	static const uint16_t want[8] = { 0xc140, 0x4141, 0xc142, 0x4143, 0x4144, 0x4145, 0x4146, 0x4147 };

	for (uint8_t op = 0; op < 8; op++) {
		struct esock_rdmap_msg m;
		uint8_t buf[80];

		esock_rdmap_msg_init(&m, op);
		ck_assert_int_gt(esock_rdmap_hdr_encode(&m, buf, sizeof(buf)), 0);
		ck_assert_uint_eq(esock_get_be16(buf), want[op]);
	}
	ck_assert_int_eq(esock_rdmap_msg_init(&(struct esock_rdmap_msg){ 0 }, 0xc), -EINVAL);
}
END_TEST

struct derr {
	const char *name;
	const char *hex; /* a DDP segment */
	struct esock_rdmap_decode_opts opts;
	int rc;
	uint8_t layer, etype, ecode;
};

static const struct derr derrs[] = {
	{ "empty segment", "", { 0 }, -EBADMSG, 2, 0, 0x03 },
	{ "short untagged header", "41 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00", { 0 }, -EBADMSG, 2, 0, 0x03 },
	{ "DDP version 0", "40 43 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 1, 2, 0x06 },
	{ "DDP version 2 tagged", "c2 40 00 00 00 01 00 00 00 00 00 00 00 00", { 0 }, -EPROTO, 1, 1, 0x04 },
	{ "RDMAP version 0", "41 03 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 0, 2, 0x05 },
	{ "RDMAP version 2", "41 83 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 0, 2, 0x05 },
	{ "reserved opcode 0xC", "41 4c 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 0, 2, 0x06 },
	{ "RFC 7306 refused", "41 48 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00",
	  { true, 0 }, -EPROTO, 0, 2, 0x06 },
	{ "Write in the untagged model", "41 40 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 0, 2, 0x06 },
	{ "Send in the tagged model", "c1 43 00 00 00 01 00 00 00 00 00 00 00 00", { 0 }, -EPROTO, 0, 2, 0x06 },
	{ "Send on QN 1", "41 43 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 1, 2, 0x01 },
	{ "Read Request on QN 0", "41 41 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 1, 2, 0x01 },
	{ "Read Request cut short", "41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00", { 0 }, -EBADMSG, 2, 0, 0x03 },
	{ "Read Request with MO 4", "41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 04", { 0 }, -EPROTO, 1, 2, 0x04 },
	{ "Read Request without L", "01 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00", { 0 }, -EPROTO, 0, 2, 0x07 },
	{ "Read Request with payload",
	  "41 41 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00 00"
	  " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 ff",
	  { 0 }, -EPROTO, 0, 2, 0x07 },
	{ "Terminate on QN 0", "41 47 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 20 02 00 00", { 0 }, -EPROTO, 1, 2, 0x01 },
	{ "Terminate with D but no header", "41 47 00 00 00 00 00 00 00 02 00 00 00 01 00 00 00 00 10 01 40 00 00 10", { 0 }, -EBADMSG, 2, 0, 0x03 },
};

START_TEST(test_decode_errors)
{
	const struct derr *c = &derrs[_i];
	uint8_t seg[128];
	int n = tu_hex(c->hex, seg, sizeof(seg));
	struct esock_rdmap_msg m;
	struct esock_term t = { 0 };

	ck_assert_int_ge(n, 0);
	ck_assert_msg(esock_rdmap_decode(&m, seg, (size_t)n, &c->opts, &t) == c->rc, "%s", c->name);
	ck_assert(t.valid);
	ck_assert_msg(t.layer == c->layer && t.etype == c->etype && t.ecode == c->ecode,
		      "%s: got %u/%u/0x%02x", c->name, t.layer, t.etype, t.ecode);
}
END_TEST

/*
 * The one-look recognizer of a whole plain Send: it accepts exactly the
 * canonical segment (which the decoder accepts alike, same MSN and payload)
 * and refuses every deviation, each of which the decoder then judges.
 */
START_TEST(test_plain_send)
{
	uint8_t seg[64];
	struct esock_rdmap_msg m;
	uint32_t msn = 0;

	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	m.ddp.msn = 0x01020304;
	ck_assert_int_eq(esock_rdmap_hdr_encode(&m, seg, sizeof(seg)), ESOCK_DDP_UNTAGGED_HLEN);
	memcpy(seg + ESOCK_DDP_UNTAGGED_HLEN, "payload", 7);
	ck_assert_uint_eq(esock_rdmap_plain_send(seg, ESOCK_DDP_UNTAGGED_HLEN + 7, &msn),
			  ESOCK_DDP_UNTAGGED_HLEN);
	ck_assert_uint_eq(msn, 0x01020304);
	ck_assert_int_eq(esock_rdmap_decode(&m, seg, ESOCK_DDP_UNTAGGED_HLEN + 7, NULL, NULL),
			 ESOCK_DDP_UNTAGGED_HLEN);
	ck_assert_uint_eq(m.ddp.msn, msn);
	ck_assert_uint_eq(m.payload_len, 7);
	/* The sending twin writes the encoder's octets. */
	uint8_t twin[ESOCK_DDP_UNTAGGED_HLEN];

	memset(twin, 0xa5, sizeof(twin));
	esock_rdmap_plain_send_hdr(twin, 0x01020304);
	tu_assert_mem(twin, seg, ESOCK_DDP_UNTAGGED_HLEN);
	/* No payload: not the case (the general path takes an empty Send). */
	ck_assert_uint_eq(esock_rdmap_plain_send(seg, ESOCK_DDP_UNTAGGED_HLEN, &msn), 0);
	/* Every single-bit change of the 18 header octets but the MSN's is refused. */
	for (int o = 0; o < ESOCK_DDP_UNTAGGED_HLEN; o++) {
		if (o >= 10 && o < 14)
			continue;
		for (int b = 0; b < 8; b++) {
			seg[o] ^= (uint8_t)(1u << b);
			ck_assert_msg(esock_rdmap_plain_send(seg, ESOCK_DDP_UNTAGGED_HLEN + 7, &msn) == 0,
				      "octet %d bit %d", o, b);
			seg[o] ^= (uint8_t)(1u << b);
		}
	}
	/* The other Send kinds, a Write, a Read Request: refused. */
	const uint8_t ops[] = { ESOCK_RDMAP_SEND_SE, ESOCK_RDMAP_SEND_INV, ESOCK_RDMAP_SEND_SE_INV,
				ESOCK_RDMAP_WRITE, ESOCK_RDMAP_READ_REQ };
	for (size_t i = 0; i < sizeof(ops); i++) {
		esock_rdmap_msg_init(&m, ops[i]);
		ssize_t hl = esock_rdmap_hdr_encode(&m, seg, sizeof(seg));

		ck_assert_int_gt(hl, 0);
		ck_assert_uint_eq(esock_rdmap_plain_send(seg, (size_t)hl + 7, &msn), 0);
	}
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(esock_rdmap_opcode_name(0), "RDMA Write");
	ck_assert_str_eq(esock_rdmap_opcode_name(0xb), "Atomic Response");
	ck_assert_str_eq(esock_rdmap_opcode_name(0xf), "reserved opcode");
	ck_assert_str_eq(esock_rdmap_atomic_name(2), "CmpSwap");
	ck_assert_str_eq(esock_term_str(1, 2, 2), "invalid MSN - no buffer available");
	ck_assert_str_eq(esock_term_str(1, 1, 2), "STag not associated with DDP stream");
	ck_assert_str_eq(esock_term_str(2, 0, 2), "MPA CRC mismatch");
	ck_assert_str_eq(esock_term_str(0, 2, 0xff), "unspecified error");
	ck_assert_str_eq(esock_term_str(2, 1, 2), "unknown error code");
	ck_assert_str_eq(esock_term_str(3, 0, 0), "unknown error code");
	ck_assert_str_eq(esock_term_layer_name(1), "DDP");
	ck_assert_str_eq(esock_term_etype_name(1, 2), "untagged buffer");
	ck_assert_str_eq(esock_term_etype_name(2, 1), "unknown error type");
	/* Every code of every table has a name. */
	for (unsigned c = 0; c <= 0x09; c++)
		ck_assert_str_ne(esock_term_str(0, 1, (uint8_t)c), "unknown error code");
	for (unsigned c = 0; c <= 0x04; c++)
		ck_assert_str_ne(esock_term_str(1, 1, (uint8_t)c), "unknown error code");
	for (unsigned c = 1; c <= 0x06; c++)
		ck_assert_str_ne(esock_term_str(1, 2, (uint8_t)c), "unknown error code");
	for (unsigned c = 1; c <= 0x07; c++)
		ck_assert_str_ne(esock_term_str(2, 0, (uint8_t)c), "unknown error code");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rdmap_hdr");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_reference_frames);
	tcase_add_test(tc, test_every_opcode_round_trip);
	tcase_add_test(tc, test_control_words);
	tcase_add_loop_test(tc, test_decode_errors, 0, (int)(sizeof(derrs) / sizeof(derrs[0])));
	tcase_add_test(tc, test_plain_send);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
