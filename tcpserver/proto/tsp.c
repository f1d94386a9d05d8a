/* SPDX-License-Identifier: MIT */
/*
 * TSP messages to and from octets (tsp.h).  One table says what each
 * (type, op) carries; encode and decode walk it, so a new call is a row.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "tcpserver/proto/tsp.h"

enum kind { END = 0, U16, U32, I32, U64, ADDR };

#define ADDR_LEN 24
#define MAX_FIELDS 4
#define F(k, field) { k, (uint16_t)offsetof(struct esock_tsp_msg, field) }

struct shape {
	uint8_t type, op;
	uint8_t result;        /* the body starts with the result (responses) */
	uint32_t data_max;     /* an octet string ends the body, at most this long (0: none) */
	struct { uint8_t kind; uint16_t off; } f[MAX_FIELDS];
};

static const struct shape shapes[] = {
	{ ESOCK_TSP_REQ, ESOCK_TSP_HELLO, 0, 0,
	  { F(U16, u.hello.vmin), F(U16, u.hello.vmax), F(U32, u.hello.flags), F(U32, u.hello.pid) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_BYE, 0, 0, { { END, 0 } } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SOCKET, 0, 0, { F(U32, u.socket.family), F(U32, u.socket.flags) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_BIND, 0, 0, { F(ADDR, u.addr) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_LISTEN, 0, 0, { F(I32, u.listen.backlog) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_ACCEPT, 0, 0, { F(U32, u.accept.flags) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_CONNECT, 0, 0, { F(ADDR, u.addr) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SEND, 0, ESOCK_TSP_BODY_MAX, { F(U32, u.send.flags) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_RECV, 0, 0, { F(U32, u.recv.max), F(U32, u.recv.flags) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_CLOSE, 0, 0, { { END, 0 } } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SHUTDOWN, 0, 0, { F(I32, u.shutdown.how) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SETSOCKOPT, 0, ESOCK_TSP_OPT_MAX,
	  { F(I32, u.opt.level), F(I32, u.opt.name) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_GETSOCKOPT, 0, 0,
	  { F(I32, u.getopt.level), F(I32, u.getopt.name), F(U32, u.getopt.len) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_GETSOCKNAME, 0, 0, { { END, 0 } } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_GETPEERNAME, 0, 0, { { END, 0 } } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_WATCH, 0, 0, { F(U32, u.watch.events) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_FORK, 0, 0, { { END, 0 } } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_REG, 0, 0,
	  { F(U64, u.reg.addr), F(U64, u.reg.len), F(U32, u.reg.access), F(U32, u.reg.key) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_DEREG, 0, 0, { F(U32, u.dereg.region) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_SEND_REG, 0, 0,
	  { F(U32, u.xfer.flags), F(U32, u.xfer.region), F(U32, u.xfer.len), F(U64, u.xfer.addr) } },
	{ ESOCK_TSP_REQ, ESOCK_TSP_RECV_REG, 0, 0,
	  { F(U32, u.xfer.flags), F(U32, u.xfer.region), F(U32, u.xfer.len), F(U64, u.xfer.addr) } },

	{ ESOCK_TSP_RESP, ESOCK_TSP_HELLO, 1, 0,
	  { F(U16, u.hello_ok.version), F(U32, u.hello_ok.flags), F(U32, u.hello_ok.max_socks),
	    F(U32, u.hello_ok.max_data) } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_BYE, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SOCKET, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_BIND, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_LISTEN, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_ACCEPT, 1, 0, { F(ADDR, u.accepted.peer), F(ADDR, u.accepted.local) } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_CONNECT, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SEND, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_RECV, 1, ESOCK_TSP_BODY_MAX, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_CLOSE, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SHUTDOWN, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SETSOCKOPT, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_GETSOCKOPT, 1, ESOCK_TSP_OPT_MAX, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_GETSOCKNAME, 1, 0, { F(ADDR, u.addr) } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_GETPEERNAME, 1, 0, { F(ADDR, u.addr) } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_WATCH, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_FORK, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_REG, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_DEREG, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_SEND_REG, 1, 0, { { END, 0 } } },
	{ ESOCK_TSP_RESP, ESOCK_TSP_RECV_REG, 1, 0, { { END, 0 } } },

	{ ESOCK_TSP_EVENT, ESOCK_TSP_READY, 0, 0, { F(U32, u.watch.events) } },
	{ ESOCK_TSP_EVENT, ESOCK_TSP_DATA, 0, ESOCK_TSP_BODY_MAX, { { END, 0 } } },
	{ ESOCK_TSP_EVENT, ESOCK_TSP_ACCEPTED, 0, 0,
	  { F(U32, u.accepted.sock), F(ADDR, u.accepted.peer), F(ADDR, u.accepted.local) } },
	{ ESOCK_TSP_EVENT, ESOCK_TSP_CREDIT, 0, 0, { F(U32, u.credit.octets) } },
};

static const char *const names[ESOCK_TSP_OP_MAX + 1] = {
	[ESOCK_TSP_HELLO] = "HELLO", [ESOCK_TSP_BYE] = "BYE", [ESOCK_TSP_SOCKET] = "SOCKET",
	[ESOCK_TSP_BIND] = "BIND", [ESOCK_TSP_LISTEN] = "LISTEN", [ESOCK_TSP_ACCEPT] = "ACCEPT",
	[ESOCK_TSP_CONNECT] = "CONNECT", [ESOCK_TSP_SEND] = "SEND", [ESOCK_TSP_RECV] = "RECV",
	[ESOCK_TSP_CLOSE] = "CLOSE", [ESOCK_TSP_SHUTDOWN] = "SHUTDOWN",
	[ESOCK_TSP_SETSOCKOPT] = "SETSOCKOPT", [ESOCK_TSP_GETSOCKOPT] = "GETSOCKOPT",
	[ESOCK_TSP_GETSOCKNAME] = "GETSOCKNAME", [ESOCK_TSP_GETPEERNAME] = "GETPEERNAME",
	[ESOCK_TSP_WATCH] = "WATCH", [ESOCK_TSP_READY] = "READY", [ESOCK_TSP_DATA] = "DATA",
	[ESOCK_TSP_ACCEPTED] = "ACCEPTED", [ESOCK_TSP_CREDIT] = "CREDIT", [ESOCK_TSP_FORK] = "FORK",
	[ESOCK_TSP_REG] = "REG", [ESOCK_TSP_DEREG] = "DEREG", [ESOCK_TSP_SEND_REG] = "SEND_REG",
	[ESOCK_TSP_RECV_REG] = "RECV_REG",
};

const char *esock_tsp_op_name(unsigned op)
{
	return op <= ESOCK_TSP_OP_MAX && names[op] ? names[op] : "?";
}

static const struct shape *shape_of(unsigned type, unsigned op)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (shapes[i].type == type && shapes[i].op == op)
			return &shapes[i];
	return NULL;
}

static size_t kind_len(uint8_t k)
{
	return k == U16 ? 2 : k == U64 ? 8 : k == ADDR ? ADDR_LEN : k == END ? 0 : 4;
}

/* Octets of the fixed fields (the result included). */
static size_t fixed_len(const struct shape *s)
{
	size_t n = s->result ? 4 : 0;

	for (int i = 0; i < MAX_FIELDS && s->f[i].kind != END; i++)
		n += kind_len(s->f[i].kind);
	return n;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int esock_tsp_hdr_decode(const uint8_t *in, size_t n, struct esock_tsp_hdr *h)
{
	const struct shape *s;

	if (n < ESOCK_TSP_HDR_LEN)
		return -EAGAIN;
	h->version = in[0];
	h->type = in[1];
	h->op = get16(in + 2);
	h->len = get32(in + 4);
	h->id = get32(in + 8);
	h->sock = get32(in + 12);
	if (h->version != ESOCK_TSP_VERSION)
		return -EPROTONOSUPPORT;
	if (!(s = shape_of(h->type, h->op)))
		return -EPROTO;
	if (h->len > fixed_len(s) + s->data_max)
		return -EMSGSIZE;
	return ESOCK_TSP_HDR_LEN;
}

static void put_addr(uint8_t *p, const struct esock_tsp_addr *a)
{
	p[0] = a->family;
	p[1] = 0;
	put16(p + 2, a->port);
	put32(p + 4, a->scope_id);
	memcpy(p + 8, a->addr, 16);
}

static int get_addr(const uint8_t *p, struct esock_tsp_addr *a)
{
	if ((p[0] != 0 && p[0] != 4 && p[0] != 6) || p[1] != 0)
		return -EBADMSG;
	a->family = p[0];
	a->port = get16(p + 2);
	a->scope_id = get32(p + 4);
	memcpy(a->addr, p + 8, 16);
	return 0;
}

int esock_tsp_decode(const uint8_t *in, size_t n, struct esock_tsp_msg *m)
{
	const struct shape *s;
	const uint8_t *p, *end;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = esock_tsp_hdr_decode(in, n, &m->h)) < 0)
		return rc;
	if (n - ESOCK_TSP_HDR_LEN < m->h.len)
		return -EAGAIN;
	s = shape_of(m->h.type, m->h.op);
	p = in + ESOCK_TSP_HDR_LEN;
	end = p + m->h.len;
	if (s->result) {
		if (end - p < 4)
			return -EBADMSG;
		m->result = (int32_t)get32(p);
		p += 4;
		if (m->result < 0) /* a failure carries nothing more */
			return p == end && m->result >= -4095 ? (int)(end - in) : -EBADMSG;
	}
	for (int i = 0; i < MAX_FIELDS && s->f[i].kind != END; i++) {
		uint8_t *dst = (uint8_t *)m + s->f[i].off;
		size_t k = kind_len(s->f[i].kind);

		if ((size_t)(end - p) < k)
			return -EBADMSG;
		if (s->f[i].kind == U16) {
			uint16_t v = get16(p);

			memcpy(dst, &v, sizeof(v));
		} else if (s->f[i].kind == U64) {
			uint64_t v = (uint64_t)get32(p) << 32 | get32(p + 4);

			memcpy(dst, &v, sizeof(v));
		} else if (s->f[i].kind == ADDR) {
			if (get_addr(p, (struct esock_tsp_addr *)dst) < 0)
				return -EBADMSG;
		} else {
			uint32_t v = get32(p);

			memcpy(dst, &v, sizeof(v));
		}
		p += k;
	}
	if (p != end && !s->data_max)
		return -EBADMSG; /* octets no field explains */
	if ((size_t)(end - p) > s->data_max)
		return -EBADMSG;
	m->data = p < end ? p : NULL;
	m->data_len = (uint32_t)(end - p);
	/* A RECV's result is the octets it carries. */
	if (m->h.type == ESOCK_TSP_RESP && m->h.op == ESOCK_TSP_RECV && (uint32_t)m->result != m->data_len)
		return -EBADMSG;
	return (int)(end - in);
}

/* The body's length of |m| (its shape in *|sp|), or -EINVAL: a message that cannot be. */
static long body_len(const struct esock_tsp_msg *m, const struct shape **sp)
{
	const struct shape *s = shape_of(m->h.type, m->h.op);
	bool failed;

	if (!s || m->data_len > s->data_max || (m->data_len && !m->data))
		return -EINVAL;
	failed = s->result && m->result < 0;
	if (failed && (m->result < -4095 || m->data_len))
		return -EINVAL;
	if (!failed && m->h.type == ESOCK_TSP_RESP && m->h.op == ESOCK_TSP_RECV &&
	    (uint32_t)m->result != m->data_len)
		return -EINVAL;
	*sp = s;
	return failed ? 4 : (long)(fixed_len(s) + m->data_len);
}

int esock_tsp_encoded_len(const struct esock_tsp_msg *m)
{
	const struct shape *s;
	long body = body_len(m, &s);

	return body < 0 ? (int)body : (int)(ESOCK_TSP_HDR_LEN + body);
}

int esock_tsp_encode(const struct esock_tsp_msg *m, uint8_t *out, size_t cap)
{
	const struct shape *s;
	long lb = body_len(m, &s);
	size_t body;
	uint8_t *p;
	bool failed;

	if (lb < 0)
		return (int)lb;
	body = (size_t)lb;
	failed = s->result && m->result < 0;
	if (cap < ESOCK_TSP_HDR_LEN + body)
		return -ENOBUFS;
	out[0] = ESOCK_TSP_VERSION;
	out[1] = m->h.type;
	put16(out + 2, m->h.op);
	put32(out + 4, (uint32_t)body);
	put32(out + 8, m->h.id);
	put32(out + 12, m->h.sock);
	p = out + ESOCK_TSP_HDR_LEN;
	if (s->result) {
		put32(p, (uint32_t)m->result);
		p += 4;
		if (failed)
			return (int)(p - out);
	}
	for (int i = 0; i < MAX_FIELDS && s->f[i].kind != END; i++) {
		const uint8_t *src = (const uint8_t *)m + s->f[i].off;

		if (s->f[i].kind == U16) {
			uint16_t v;

			memcpy(&v, src, sizeof(v));
			put16(p, v);
		} else if (s->f[i].kind == U64) {
			uint64_t v;

			memcpy(&v, src, sizeof(v));
			put32(p, (uint32_t)(v >> 32));
			put32(p + 4, (uint32_t)v);
		} else if (s->f[i].kind == ADDR) {
			put_addr(p, (const struct esock_tsp_addr *)src);
		} else {
			uint32_t v;

			memcpy(&v, src, sizeof(v));
			put32(p, v);
		}
		p += kind_len(s->f[i].kind);
	}
	if (m->data_len)
		memcpy(p, m->data, m->data_len);
	return (int)(p + m->data_len - out);
}
