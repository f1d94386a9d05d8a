/* SPDX-License-Identifier: MIT */
/*
 * TSP (tcpserver/proto/tsp.c): every message there is goes to octets and
 * back unchanged; one request's octets are pinned (the format in
 * docs/tcpserver.md); and every kind of bad input from a host gets its
 * code, never a read past the input.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "tcpserver/proto/tsp.h"
#include "tests/unit/testutil.h"

static const struct {
	uint8_t type, op;
} all[] = {
	{ ESOCK_TSP_REQ, ESOCK_TSP_HELLO }, { ESOCK_TSP_REQ, ESOCK_TSP_BYE },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SOCKET }, { ESOCK_TSP_REQ, ESOCK_TSP_BIND },
	{ ESOCK_TSP_REQ, ESOCK_TSP_LISTEN }, { ESOCK_TSP_REQ, ESOCK_TSP_ACCEPT },
	{ ESOCK_TSP_REQ, ESOCK_TSP_CONNECT }, { ESOCK_TSP_REQ, ESOCK_TSP_SEND },
	{ ESOCK_TSP_REQ, ESOCK_TSP_RECV }, { ESOCK_TSP_REQ, ESOCK_TSP_CLOSE },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SHUTDOWN }, { ESOCK_TSP_REQ, ESOCK_TSP_SETSOCKOPT },
	{ ESOCK_TSP_REQ, ESOCK_TSP_GETSOCKOPT }, { ESOCK_TSP_REQ, ESOCK_TSP_GETSOCKNAME },
	{ ESOCK_TSP_REQ, ESOCK_TSP_GETPEERNAME }, { ESOCK_TSP_REQ, ESOCK_TSP_WATCH },
	{ ESOCK_TSP_RESP, ESOCK_TSP_HELLO }, { ESOCK_TSP_RESP, ESOCK_TSP_BYE },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SOCKET }, { ESOCK_TSP_RESP, ESOCK_TSP_BIND },
	{ ESOCK_TSP_RESP, ESOCK_TSP_LISTEN }, { ESOCK_TSP_RESP, ESOCK_TSP_ACCEPT },
	{ ESOCK_TSP_RESP, ESOCK_TSP_CONNECT }, { ESOCK_TSP_RESP, ESOCK_TSP_SEND },
	{ ESOCK_TSP_RESP, ESOCK_TSP_RECV }, { ESOCK_TSP_RESP, ESOCK_TSP_CLOSE },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SHUTDOWN }, { ESOCK_TSP_RESP, ESOCK_TSP_SETSOCKOPT },
	{ ESOCK_TSP_RESP, ESOCK_TSP_GETSOCKOPT }, { ESOCK_TSP_RESP, ESOCK_TSP_GETSOCKNAME },
	{ ESOCK_TSP_RESP, ESOCK_TSP_GETPEERNAME }, { ESOCK_TSP_RESP, ESOCK_TSP_WATCH },
	{ ESOCK_TSP_EVENT, ESOCK_TSP_READY }, { ESOCK_TSP_EVENT, ESOCK_TSP_DATA },
	{ ESOCK_TSP_EVENT, ESOCK_TSP_ACCEPTED }, { ESOCK_TSP_EVENT, ESOCK_TSP_CREDIT },
	{ ESOCK_TSP_REQ, ESOCK_TSP_FORK }, { ESOCK_TSP_RESP, ESOCK_TSP_FORK },
	{ ESOCK_TSP_REQ, ESOCK_TSP_REG }, { ESOCK_TSP_RESP, ESOCK_TSP_REG },
	{ ESOCK_TSP_REQ, ESOCK_TSP_DEREG }, { ESOCK_TSP_RESP, ESOCK_TSP_DEREG },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SEND_REG }, { ESOCK_TSP_RESP, ESOCK_TSP_SEND_REG },
	{ ESOCK_TSP_REQ, ESOCK_TSP_RECV_REG }, { ESOCK_TSP_RESP, ESOCK_TSP_RECV_REG },
};
#define NALL (int)(sizeof(all) / sizeof(all[0]))

static uint8_t buf[ESOCK_TSP_HDR_LEN + 64 + ESOCK_TSP_BODY_MAX];

/* A message of that kind with every field set to something recognisable. */
static void sample(struct esock_tsp_msg *m, uint8_t type, uint8_t op)
{
	static const uint8_t payload[300] = { 1, 2, 3, 4, 5 };

	memset(m, 0, sizeof(*m));
	m->h.type = type;
	m->h.op = op;
	m->h.id = 0x01020304u + op;
	m->h.sock = 77;
	for (size_t i = 0; i < sizeof(m->u); i++)
		((uint8_t *)&m->u)[i] = (uint8_t)(i * 7 + op);
	/* Addresses: valid families, pad 0 (the union's bytes above are not). */
	m->u.addr.family = 6;
	m->u.accepted.peer.family = 4;
	m->u.accepted.local.family = 6;
	if (type == ESOCK_TSP_RESP)
		m->result = 5;
	if ((type == ESOCK_TSP_REQ && op == ESOCK_TSP_SEND) || (type == ESOCK_TSP_EVENT && op == ESOCK_TSP_DATA)) {
		m->data = payload;
		m->data_len = sizeof(payload);
	} else if ((type == ESOCK_TSP_REQ && op == ESOCK_TSP_SETSOCKOPT) ||
		   (type == ESOCK_TSP_RESP && op == ESOCK_TSP_GETSOCKOPT) ||
		   (type == ESOCK_TSP_RESP && op == ESOCK_TSP_RECV)) {
		m->data = payload;
		m->data_len = 5;
	}
}

START_TEST(every_message_round_trips)
{
	struct esock_tsp_msg m, d;
	int n, k;

	sample(&m, all[_i].type, all[_i].op);
	n = esock_tsp_encode(&m, buf, sizeof(buf));
	ck_assert_int_gt(n, ESOCK_TSP_HDR_LEN - 1);
	ck_assert_int_eq(esock_tsp_encoded_len(&m), n); /* (what an encode in place reserves) */
	k = esock_tsp_decode(buf, (size_t)n, &d);
	ck_assert_int_eq(k, n);
	ck_assert_uint_eq(d.h.version, ESOCK_TSP_VERSION);
	ck_assert_uint_eq(d.h.type, m.h.type);
	ck_assert_uint_eq(d.h.op, m.h.op);
	ck_assert_uint_eq(d.h.id, m.h.id);
	ck_assert_uint_eq(d.h.sock, 77);
	ck_assert_uint_eq(d.h.len, (uint32_t)n - ESOCK_TSP_HDR_LEN);
	ck_assert_int_eq(d.result, m.result);
	ck_assert_uint_eq(d.data_len, m.data_len);
	if (m.data_len)
		ck_assert_mem_eq(d.data, m.data, m.data_len);
	/* Re-encoded: the same octets (the fields that travel came back). */
	ck_assert_int_eq(esock_tsp_encode(&d, buf + n, sizeof(buf) - (size_t)n), n);
	ck_assert_mem_eq(buf, buf + n, (size_t)n);
	/* Every cut of it is incomplete, never a message. */
	for (int cut = 0; cut < n; cut++)
		ck_assert_int_eq(esock_tsp_decode(buf, (size_t)cut, &d), -EAGAIN);
	/* A response that failed: its result and nothing more. */
	if (m.h.type == ESOCK_TSP_RESP) {
		m.result = -ECONNREFUSED;
		m.data = NULL;
		m.data_len = 0;
		n = esock_tsp_encode(&m, buf, sizeof(buf));
		ck_assert_int_eq(n, ESOCK_TSP_HDR_LEN + 4);
		ck_assert_int_eq(esock_tsp_decode(buf, (size_t)n, &d), n);
		ck_assert_int_eq(d.result, -ECONNREFUSED);
	}
	ck_assert_str_ne(esock_tsp_op_name(m.h.op), "?");
}
END_TEST

START_TEST(send_request_octets)
{
	static const uint8_t data[3] = { 'a', 'b', 'c' };
	static const uint8_t want[] = {
		1, 1, 0, 8,          /* version 1, request, op SEND */
		0, 0, 0, 7,          /* body: flags (4) + 3 octets */
		0, 0, 0x30, 0x39,    /* id 12345 */
		0, 0, 0, 9,          /* socket 9 */
		0, 0, 0, 8,          /* flags: MSG_MORE */
		'a', 'b', 'c',
	};
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_SEND, .id = 12345, .sock = 9 },
				   .u.send.flags = ESOCK_TSP_MSG_MORE, .data = data, .data_len = 3 };
	uint8_t out[64];

	ck_assert_int_eq(esock_tsp_encode(&m, out, sizeof(out)), (int)sizeof(want));
	ck_assert_mem_eq(out, want, sizeof(want));
	ck_assert_int_eq(esock_tsp_encode(&m, out, sizeof(want) - 1), -ENOBUFS);
}
END_TEST

/* SEND_REG: flags, region, length, then the 64-bit address, most significant octet first. */
START_TEST(send_reg_request_octets)
{
	static const uint8_t want[] = {
		1, 1, 0, 24,         /* version 1, request, op SEND_REG */
		0, 0, 0, 20,         /* body: flags, region, length (4 each), address (8) */
		0, 0, 0, 2,          /* id 2 */
		0, 0, 0, 9,          /* socket 9 */
		0, 0, 0, 8,          /* flags: MSG_MORE */
		0, 0, 0, 3,          /* region 3 */
		0, 0, 0x10, 0,       /* 4096 octets */
		0, 0, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x9a,
	};
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_SEND_REG, .id = 2, .sock = 9 },
				   .u.xfer = { .flags = ESOCK_TSP_MSG_MORE, .region = 3, .len = 4096,
					       .addr = 0x7f123456789aull } };
	struct esock_tsp_msg d;
	uint8_t out[64];

	ck_assert_int_eq(esock_tsp_encode(&m, out, sizeof(out)), (int)sizeof(want));
	ck_assert_mem_eq(out, want, sizeof(want));
	ck_assert_int_eq(esock_tsp_decode(want, sizeof(want), &d), (int)sizeof(want));
	ck_assert_uint_eq(d.u.xfer.addr, 0x7f123456789aull);
	ck_assert_uint_eq(d.u.xfer.len, 4096);
	ck_assert_uint_eq(d.u.xfer.region, 3);
	/* A body one octet short of its address, or with octets after it: not a message. */
	memcpy(out, want, sizeof(want));
	out[7] = 19;
	ck_assert_int_eq(esock_tsp_decode(out, sizeof(want) - 1, &d), -EBADMSG);
	out[7] = 21;
	out[sizeof(want)] = 0;
	ck_assert_int_eq(esock_tsp_decode(out, sizeof(want) + 1, &d), -EMSGSIZE);
}
END_TEST

START_TEST(connect_request_octets)
{
	static const uint8_t want[] = {
		1, 1, 0, 7, 0, 0, 0, 24, 0, 0, 0, 1, 0, 0, 0, 3,
		4, 0, 0x1f, 0x90,    /* IPv4, port 8080 */
		0, 0, 0, 0,          /* scope */
		127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_CONNECT, .id = 1, .sock = 3 },
				   .u.addr = { .family = 4, .port = 8080, .addr = { 127, 0, 0, 1 } } };
	uint8_t out[64];

	ck_assert_int_eq(esock_tsp_encode(&m, out, sizeof(out)), (int)sizeof(want));
	ck_assert_mem_eq(out, want, sizeof(want));
}
END_TEST

static int decode_hex(const uint8_t *in, size_t n)
{
	struct esock_tsp_msg m;

	return esock_tsp_decode(in, n, &m);
}

START_TEST(bad_input)
{
	/* A valid LISTEN request to start from. */
	uint8_t ok[] = { 1, 1, 0, 5, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16 };
	uint8_t b[64];

	ck_assert_int_eq(decode_hex(ok, sizeof(ok)), (int)sizeof(ok));
	ck_assert_int_eq(decode_hex(ok, 3), -EAGAIN);
	memcpy(b, ok, sizeof(ok));
	b[0] = 2;
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EPROTONOSUPPORT);
	memcpy(b, ok, sizeof(ok));
	b[1] = 9; /* no such type */
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EPROTO);
	memcpy(b, ok, sizeof(ok));
	b[3] = 0; /* op 0 */
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EPROTO);
	b[3] = ESOCK_TSP_OP_MAX + 1;
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EPROTO);
	b[3] = ESOCK_TSP_READY; /* an event's op in a request */
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EPROTO);
	memcpy(b, ok, sizeof(ok));
	b[1] = ESOCK_TSP_EVENT; /* LISTEN is no event */
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EPROTO);
	memcpy(b, ok, sizeof(ok));
	b[4] = 0x7f; /* a body longer than any LISTEN */
	ck_assert_int_eq(decode_hex(b, sizeof(ok)), -EMSGSIZE);
	memcpy(b, ok, sizeof(ok));
	b[7] = 3; /* shorter than its field */
	ck_assert_int_eq(decode_hex(b, 19), -EBADMSG);
	memcpy(b, ok, sizeof(ok));
	b[7] = 5; /* an octet no field explains: a LISTEN is never that long */
	b[20] = 0;
	ck_assert_int_eq(decode_hex(b, 21), -EMSGSIZE);
	ck_assert_int_eq(decode_hex(b, 20), -EMSGSIZE);

	/* A SETSOCKOPT value longer than ESOCK_TSP_OPT_MAX: the header says too much already. */
	uint8_t so[16] = { 1, 1, 0, ESOCK_TSP_SETSOCKOPT, 0, 0, 0, 8 + ESOCK_TSP_OPT_MAX + 1 };
	ck_assert_int_eq(decode_hex(so, sizeof(so)), -EMSGSIZE);

	/* Addresses: family 5, or a pad octet set. */
	uint8_t bind[] = { 1, 1, 0, ESOCK_TSP_BIND, 0, 0, 0, 24, 0, 0, 0, 1, 0, 0, 0, 2,
			   5, 0, 0, 80, 0, 0, 0, 0, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	ck_assert_int_eq(decode_hex(bind, sizeof(bind)), -EBADMSG);
	bind[16] = 4;
	ck_assert_int_eq(decode_hex(bind, sizeof(bind)), (int)sizeof(bind));
	bind[17] = 1;
	ck_assert_int_eq(decode_hex(bind, sizeof(bind)), -EBADMSG);

	/* Responses: a failure with more behind it, a result beyond any errno, a RECV whose
	 * result is not the octets it carries. */
	uint8_t fail[] = { 1, 2, 0, ESOCK_TSP_RECV, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 3,
			   0xff, 0xff, 0xff, 0x91, 0 };
	ck_assert_int_eq(decode_hex(fail, sizeof(fail)), -EBADMSG);
	fail[7] = 4;
	ck_assert_int_eq(decode_hex(fail, 20), 20); /* -111: ECONNREFUSED */
	fail[16] = 0x80;
	ck_assert_int_eq(decode_hex(fail, 20), -EBADMSG);
	uint8_t recv[] = { 1, 2, 0, ESOCK_TSP_RECV, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 3,
			   0, 0, 0, 4, 'x', 'y', 'z' };
	ck_assert_int_eq(decode_hex(recv, sizeof(recv)), -EBADMSG);
	recv[19] = 3;
	ck_assert_int_eq(decode_hex(recv, sizeof(recv)), (int)sizeof(recv));
}
END_TEST

START_TEST(bad_encode)
{
	static uint8_t big[ESOCK_TSP_BODY_MAX + 1];
	struct esock_tsp_msg m = { .h = { .type = ESOCK_TSP_REQ, .op = ESOCK_TSP_READY } };

	ck_assert_int_eq(esock_tsp_encode(&m, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(esock_tsp_encoded_len(&m), -EINVAL);
	m.h.op = ESOCK_TSP_SEND;
	m.data = big;
	m.data_len = sizeof(big);
	ck_assert_int_eq(esock_tsp_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.data_len = ESOCK_TSP_BODY_MAX;
	ck_assert_int_gt(esock_tsp_encode(&m, buf, sizeof(buf)), ESOCK_TSP_BODY_MAX);
	m.h.op = ESOCK_TSP_LISTEN; /* LISTEN carries no octet string */
	m.data_len = 1;
	ck_assert_int_eq(esock_tsp_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.h.type = ESOCK_TSP_RESP;
	m.h.op = ESOCK_TSP_RECV;
	m.result = 2; /* not the 1 octet it carries */
	ck_assert_int_eq(esock_tsp_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.result = -5000;
	m.data_len = 0;
	ck_assert_int_eq(esock_tsp_encode(&m, buf, sizeof(buf)), -EINVAL);
	ck_assert_str_eq(esock_tsp_op_name(0), "?");
	ck_assert_str_eq(esock_tsp_op_name(ESOCK_TSP_ACCEPTED), "ACCEPTED");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("tsp");
	TCase *tc = tcase_create("format");

	tcase_add_loop_test(tc, every_message_round_trips, 0, NALL);
	tcase_add_test(tc, send_request_octets);
	tcase_add_test(tc, connect_request_octets);
	tcase_add_test(tc, send_reg_request_octets);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, bad_encode);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
