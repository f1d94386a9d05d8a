/* SPDX-License-Identifier: MIT */
/*
 * The crafted peer (see evil_peer.h): start frames and FPDUs come from the
 * project's own codecs, so what the victim receives is well-formed exactly
 * where a test does not deliberately break it; the receive side reuses the
 * MPA receiver and the RDMAP decoder to read the victim's Terminate.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/integration/evil_peer.h"

int evil_tcp_connect(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { EVIL_TIMEOUT_MS / 1000, (EVIL_TIMEOUT_MS % 1000) * 1000 };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return -errno;
	/* Deadlines on both directions: no attacker call may block for ever. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

struct evil *evil_new(int port, const struct esock_mpa_policy *pol)
{
	static const struct esock_mpa_policy dflt = { .rev = 2, .crc = true, .markers_tx = true,
						      .ird = 8, .ord = 8 };
	struct evil *e = calloc(1, sizeof(*e));

	ck_assert_ptr_nonnull(e);
	e->pol = pol ? *pol : dflt;
	e->fd = evil_tcp_connect(port);
	if (e->fd < 0) {
		free(e);
		return NULL;
	}
	return e;
}

void evil_free(struct evil *e)
{
	if (!e)
		return;
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

int evil_send_raw(struct evil *e, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t k = send(e->fd, p, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Reads exactly one start frame (nothing of the FPDU stream behind it). */
static int read_reply(struct evil *e, size_t *len)
{
	size_t have = 0, need = ESOCK_MPA_HDR_LEN;

	while (have < need) {
		ssize_t k = recv(e->fd, e->rep_buf + have, need - have, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			return -ECONNRESET;
		if (k < 0)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		have += (size_t)k;
		need = esock_mpa_frame_need(e->rep_buf, have);
		if (need > sizeof(e->rep_buf))
			return -EMSGSIZE;
	}
	*len = have;
	return 0;
}

int evil_mpa(struct evil *e)
{
	struct esock_mpa_rx_cfg rc = { .buf = e->rx_ulpdu, .buf_len = sizeof(e->rx_ulpdu) };
	struct esock_term t = { 0 };
	uint8_t out[ESOCK_MPA_FRAME_MAX];
	size_t len = 0;
	ssize_t n;
	int rv;

	ck_assert_int_eq(esock_mpa_request_build(&e->pol, &e->req), 0);
	n = esock_mpa_frame_encode(&e->req, out, sizeof(out));
	ck_assert_int_gt(n, 0);
	if ((rv = evil_send_raw(e, out, (size_t)n)) < 0 || (rv = read_reply(e, &len)) < 0)
		return rv;
	if (esock_mpa_frame_decode(&e->rep, true, e->rep_buf, len, 0, &t) < 0)
		return -EPROTO;
	if ((rv = esock_mpa_reply_check(&e->pol, &e->req, &e->rep, &e->mp, &t)) < 0)
		return rv;
	esock_mpa_tx_init(&e->tx, e->mp.crc, e->mp.markers_tx, 0);
	rc.crc = e->mp.crc;
	rc.markers = e->mp.markers_rx;
	ck_assert_int_eq(esock_mpa_rx_init(&e->rx, &rc), 0);
	for (int q = 0; q < 3; q++)
		e->msn[q] = 1;
	return 0;
}

static size_t encode(const struct esock_rdmap_msg *m, uint8_t *buf)
{
	ssize_t n = esock_rdmap_hdr_encode(m, buf, ESOCK_RDMAP_HDR_MAX);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

size_t evil_hdr_tagged(uint8_t *buf, uint8_t opcode, uint32_t stag, uint64_t to)
{
	struct esock_rdmap_msg m;

	ck_assert_int_eq(esock_rdmap_msg_init(&m, opcode), 0);
	m.ddp.stag = stag;
	m.ddp.to = to;
	return encode(&m, buf);
}

size_t evil_hdr_send(struct evil *e, uint8_t *buf, uint8_t opcode, uint32_t inval_stag)
{
	struct esock_rdmap_msg m;

	ck_assert_int_eq(esock_rdmap_msg_init(&m, opcode), 0);
	m.ddp.msn = e->msn[ESOCK_DDP_QN_SEND]++;
	m.inval_stag = inval_stag;
	return encode(&m, buf);
}

size_t evil_hdr_read_req(struct evil *e, uint8_t *buf, const struct esock_rdmap_read_req *r)
{
	struct esock_rdmap_msg m;

	ck_assert_int_eq(esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_REQ), 0);
	m.ddp.msn = e->msn[ESOCK_DDP_QN_READ_REQ]++;
	m.u.read_req = *r;
	return encode(&m, buf);
}

size_t evil_fpdu(struct evil *e, const uint8_t *hdr, size_t hl, const uint8_t *payload,
		 size_t plen, bool bad_crc, uint8_t *out, size_t cap)
{
	struct iovec iov[2] = { { (void *)(uintptr_t)hdr, hl }, { (void *)(uintptr_t)payload, plen } };
	ssize_t n = esock_mpa_tx_build(&e->tx, iov, plen ? 2 : 1);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(esock_mpa_tx_flatten(&e->tx, out, cap), n);
	ck_assert_int_eq(esock_mpa_tx_advance(&e->tx, (size_t)n), 0);
	/* The CRC is always the last word: a marker never ends an FPDU. */
	if (bad_crc)
		out[n - 1] ^= 0x01;
	return (size_t)n;
}

void evil_send(struct evil *e, const uint8_t *hdr, size_t hl, const uint8_t *payload, size_t plen)
{
	size_t cap = plen + hl + 1024;
	uint8_t *out = malloc(cap);
	size_t n;

	ck_assert_ptr_nonnull(out);
	n = evil_fpdu(e, hdr, hl, payload, plen, false, out, cap);
	ck_assert_int_eq(evil_send_raw(e, out, n), 0);
	free(out);
}

/* Refills e->in; 1, 0 at end of stream, or -errno. */
static int fill(struct evil *e)
{
	ssize_t k;

	do
		k = recv(e->fd, e->in, sizeof(e->in), 0);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	e->in_off = 0;
	e->in_len = (size_t)k;
	return k > 0;
}

int evil_next(struct evil *e, struct esock_rdmap_msg *m)
{
	struct esock_term t = { 0 };
	struct esock_mpa_ev ev;
	ssize_t n;
	int rc;

	memset(m, 0, sizeof(*m));
	for (;;) {
		if (e->in_off == e->in_len && (rc = fill(e)) <= 0)
			return rc;
		n = esock_mpa_rx_feed(&e->rx, e->in + e->in_off, e->in_len - e->in_off, &ev);
		if (n < 0)
			return (int)n;
		e->in_off += (size_t)n;
		if (ev.type != ESOCK_MPA_EV_ULPDU)
			continue;
		/* ev.data may point into e->in: keep a copy that outlives the next read. */
		memcpy(e->seg, ev.data, ev.len);
		e->seg_len = ev.len;
		n = esock_rdmap_decode(m, e->seg, e->seg_len, NULL, &t);
		return n < 0 ? (int)n : 1;
	}
}

static void check_copies(const struct esock_rdmap_term *tm, const struct evil_term_want *w)
{
	if (tm->t.hdrct & ESOCK_TERM_HDRCT_M)
		ck_assert_uint_eq(tm->ddp_seg_len, w->seg_len);
	if (tm->t.hdrct & ESOCK_TERM_HDRCT_D) {
		ck_assert_uint_eq(tm->ddp_hdr_len, esock_ddp_hdr_len(w->seg[0]));
		ck_assert_int_eq(memcmp(tm->ddp_hdr, w->seg, tm->ddp_hdr_len), 0);
	}
	if (tm->t.hdrct & ESOCK_TERM_HDRCT_R)
		ck_assert_int_eq(memcmp(tm->rdmap_hdr, w->seg + ESOCK_DDP_UNTAGGED_HLEN,
					ESOCK_RDMAP_READ_REQ_HLEN), 0);
}

void evil_expect_term(struct evil *e, const struct evil_term_want *w)
{
	struct esock_rdmap_msg m;
	const struct esock_term *t = &m.u.term.t;
	const char *what = w->what ? w->what : "";
	int rc;

	while ((rc = evil_next(e, &m)) == 1 && m.opcode == ESOCK_RDMAP_READ_RESP && w->skip_responses)
		;
	ck_assert_msg(rc == 1, "%s: no Terminate came: evil_next returned %d", what, rc);
	ck_assert_msg(m.opcode == ESOCK_RDMAP_TERMINATE, "%s: a %s came instead of the Terminate",
		      what, esock_rdmap_opcode_name(m.opcode));
	ck_assert_uint_eq(m.ddp.qn, ESOCK_DDP_QN_TERMINATE);
	ck_assert_uint_eq(m.ddp.msn, 1);
	ck_assert_msg(t->layer == w->layer && t->etype == w->etype && t->ecode == w->ecode,
		      "%s: Terminate says \"%s\" (%u/%u/0x%02x), want \"%s\" (%u/%u/0x%02x)", what,
		      esock_term_str(t->layer, t->etype, t->ecode), t->layer, t->etype, t->ecode,
		      esock_term_str(w->layer, w->etype, w->ecode), w->layer, w->etype, w->ecode);
	ck_assert_uint_eq(m.u.term.order, ESOCK_RDMAP_TERM_RFC);
	ck_assert_msg(t->hdrct == w->hdrct, "%s: copied-header flags 0x%x, want 0x%x", what, t->hdrct,
		      w->hdrct);
	check_copies(&m.u.term, w);
}

void evil_expect_closed(struct evil *e)
{
	struct esock_rdmap_msg m;
	int rc = evil_next(e, &m);

	ck_assert_msg(rc == 0 || rc == -ECONNRESET,
		      "the victim did not close: evil_next returned %d (opcode %u)", rc, m.opcode);
}
