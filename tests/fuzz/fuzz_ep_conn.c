/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a whole passive connection, structure-aware.  The input is a
 * program for a peer: the fields of its MPA Request (revision, CRC, markers,
 * RTR mode and types, IRD/ORD, private data), then a sequence of RDMAP
 * messages (Sends of every kind, RDMA Writes, Read Requests, Read
 * Responses, Terminates, raw octets) with header fields and lengths taken
 * from the input, framed as the negotiation says (CRC valid unless asked
 * otherwise, markers where negotiated).  The endpoint reads the Request with
 * esock_request_from_fd, answers with esock_accept and receives the stream
 * in this thread (the engine is let go of, so each run is deterministic).
 * Properties: no sanitizer report; the Reply decodes as a Reply; guards
 * around the regions never change and the remote-read region is never
 * written; after the peer's EOF the QP is in error (or half-closed), never
 * waiting for more.  Random byte streams rarely pass the CRC and header
 * checks; this target gets deep into placement, Read Responses and Terminate
 * handling at once.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoint/ep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define G 64
#define RLEN 4096
#define NREG 3

static struct esock_pd *pd;
static struct esock_cq *cq;
static struct esock_mr *mr[NREG];
static uint8_t *mem, snap[NREG][G + RLEN + G];

static uint8_t *region(int i)
{
	return mem + (size_t)i * (G + RLEN + G);
}

static void setup(void)
{
	static const unsigned acc[NREG] = {
		ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE, ESOCK_ACCESS_REMOTE_READ,
		ESOCK_ACCESS_LOCAL_WRITE,
	};
	size_t len = NREG * (G + RLEN + G);

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || esock_pd_alloc(&pd) < 0 || esock_cq_create(4096, &cq) < 0)
		abort();
	for (int i = 0; i < NREG; i++) {
		memset(region(i), 0xa0 + i, G + RLEN + G);
		if (esock_mr_reg(pd, region(i) + G, RLEN, acc[i], 0, &mr[i]) < 0)
			abort();
	}
}

/* The input as a stream of fields; zeros once it runs out. */
struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static uint16_t u16(struct in *in)
{
	return (uint16_t)(u8(in) << 8 | u8(in));
}

/* An STag the input names: one of the regions (by index) or any value. */
static uint32_t stag_of(struct in *in)
{
	uint8_t k = u8(in);

	return k < 3 * 64 ? esock_mr_stag(mr[k % NREG]) : (uint32_t)k << 8 | u8(in);
}

static uint64_t to_of(struct in *in, uint32_t stag)
{
	for (int i = 0; i < NREG; i++)
		if (esock_mr_stag(mr[i]) == stag)
			return (uint64_t)(uintptr_t)(region(i) + G) + u16(in) % (RLEN + 64);
	return u16(in);
}

static size_t plen_of(struct in *in, uint8_t op)
{
	static const uint16_t cls[8] = { 0, 1, 7, 64, 255, 1000, 4000, 0 };
	uint8_t c = op >> 5;

	return c == 7 ? u16(in) % 9000 : cls[c];
}

/* The peer: its framing state and next MSN per queue. */
struct peer {
	struct esock_mpa_tx tx;
	uint32_t msn[3];
	uint8_t out[1 << 17];
	size_t len;
};

static void frame(struct peer *pe, const uint8_t *hdr, size_t hl, const uint8_t *payload,
		  size_t plen, bool bad_crc)
{
	struct iovec iov[2] = { { (void *)(uintptr_t)hdr, hl }, { (void *)(uintptr_t)payload, plen } };
	ssize_t n;

	if (pe->len + hl + plen + 64 + (hl + plen) / 128 > sizeof(pe->out) ||
	    (n = esock_mpa_tx_build(&pe->tx, iov, plen ? 2 : 1)) <= 0 ||
	    esock_mpa_tx_flatten(&pe->tx, pe->out + pe->len, sizeof(pe->out) - pe->len) != n ||
	    esock_mpa_tx_advance(&pe->tx, (size_t)n) < 0)
		return;
	if (bad_crc)
		pe->out[pe->len + (size_t)n - 1] ^= 0x01;
	pe->len += (size_t)n;
}

/* One message of the program; false when the input is used up. */
static bool message(struct peer *pe, struct in *in, const uint8_t *payload)
{
	static const uint8_t ops[8] = { ESOCK_RDMAP_SEND, ESOCK_RDMAP_SEND_INV, ESOCK_RDMAP_SEND_SE,
					ESOCK_RDMAP_WRITE, ESOCK_RDMAP_READ_REQ, ESOCK_RDMAP_TERMINATE,
					ESOCK_RDMAP_READ_RESP, 0 };
	struct esock_rdmap_msg m;
	uint8_t op, flags, hdr[ESOCK_RDMAP_HDR_MAX + 64];
	size_t plen;
	ssize_t hl;

	if (!in->n)
		return false;
	op = u8(in);
	flags = u8(in);
	plen = plen_of(in, op);
	if ((op & 7) == 7) { /* raw octets into the stream */
		size_t n = plen < in->n ? plen : in->n;

		if (pe->len + n <= sizeof(pe->out)) {
			memcpy(pe->out + pe->len, in->p, n);
			pe->len += n;
		}
		in->p += n;
		in->n -= n;
		return true;
	}
	if (esock_rdmap_msg_init(&m, ops[op & 7]) < 0)
		return true;
	m.ddp.last = !(flags & 0x40);
	switch (op & 7) {
	case 0:
	case 1:
	case 2: {
		int q = ESOCK_DDP_QN_SEND;

		m.ddp.msn = flags & 0x20 ? u16(in) : pe->msn[q];
		if (m.ddp.last)
			pe->msn[q]++;
		m.ddp.mo = flags & 0x10 ? u16(in) : 0;
		if ((op & 7) == 1)
			m.inval_stag = stag_of(in);
		break;
	}
	case 3:
	case 6:
		m.ddp.stag = stag_of(in);
		m.ddp.to = to_of(in, m.ddp.stag);
		break;
	case 4:
		m.ddp.msn = flags & 0x20 ? u16(in) : pe->msn[ESOCK_DDP_QN_READ_REQ]++;
		m.u.read_req.sink_stag = stag_of(in);
		m.u.read_req.sink_to = u16(in);
		m.u.read_req.src_stag = stag_of(in);
		m.u.read_req.src_to = to_of(in, m.u.read_req.src_stag);
		m.u.read_req.size = u16(in) % (RLEN + 128);
		plen = 0;
		break;
	case 5:
		m.ddp.msn = flags & 0x20 ? u16(in) : pe->msn[ESOCK_DDP_QN_TERMINATE]++;
		m.u.term.t.layer = u8(in) & 0xf;
		m.u.term.t.etype = u8(in) & 0xf;
		m.u.term.t.ecode = u8(in);
		plen = 0;
		break;
	}
	if ((hl = esock_rdmap_hdr_encode(&m, hdr, sizeof(hdr))) < 0)
		return true;
	if (plen > 9000)
		plen = 9000;
	frame(pe, hdr, (size_t)hl, payload, plen, flags == 0xff);
	return true;
}

static void check_memory(void)
{
	for (int i = 0; i < NREG; i++)
		for (int k = 0; k < G; k++)
			if (region(i)[k] != snap[i][k] || region(i)[G + RLEN + k] != snap[i][G + RLEN + k])
				abort(); /* a guard changed */
	if (memcmp(region(1), snap[1], sizeof(snap[1])))
		abort(); /* the remote-read region was written */
}

/* Reads the endpoint's Reply off |fd|: it must be a well-formed Reply. */
static bool reply_ok(int fd, bool *reject)
{
	uint8_t buf[ESOCK_MPA_FRAME_MAX];
	struct esock_mpa_frame rep;
	struct esock_term t;
	size_t have = 0, need = ESOCK_MPA_HDR_LEN;

	while (have < need) {
		ssize_t n = read(fd, buf + have, need - have);

		if (n <= 0)
			return false;
		have += (size_t)n;
		need = esock_mpa_frame_need(buf, have);
		if (need > sizeof(buf))
			return false;
	}
	if (esock_mpa_frame_decode(&rep, true, buf, have, 0, &t) < 0)
		return false;
	*reject = rep.reject;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t payload[9000];
	static struct peer pe;
	struct in in = { data, size };
	struct esock_mpa_policy pol = { 0 };
	struct esock_mpa_frame req;
	struct esock_conn_req *r = NULL;
	struct esock_conn_param cp = { 0 };
	struct esock_qp_attr qa;
	struct esock_conn_info info;
	struct esock_qp *qp;
	struct esock_wc wc[64];
	uint8_t pdata[64], f, sink[4096];
	bool reject = false;
	ssize_t n;
	int sv[2];

	if (!mem)
		setup();
	/* (After setup: the first input of a process found pd and cq still NULL.) */
	qa = (struct esock_qp_attr){ .pd = pd, .send_cq = cq, .recv_cq = cq, .max_sge = 2 };
	if (size < 4 || size > 20000)
		return 0;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	/* The peer's Request. */
	f = u8(&in);
	pol.rev = (f & 1) ? 2 : 1;
	pol.crc = f & 2;
	pol.markers_rx = f & 4;
	pol.markers_tx = true;
	pol.p2p = (f & 8) && pol.rev == 2;
	pol.rtr = u8(&in) & 7;
	if (pol.p2p && !pol.rtr)
		pol.rtr = ESOCK_MPA_RTR_SEND;
	pol.ird = u8(&in) % 9;
	pol.ord = u8(&in) % 9;
	pol.pd_len = u8(&in) % sizeof(pdata);
	for (size_t i = 0; i < pol.pd_len; i++)
		pdata[i] = u8(&in);
	pol.pd = pdata;
	cp.crc = (f & 0x10) ? 1 : -1;
	cp.markers = f & 0x20;
	cp.half_close = f & 0x40;
	cp.wait_for_recv = f & 0x80;
	cp.peer = "generic";
	memset(&pe.tx, 0, sizeof(pe.tx));
	pe.len = 0;
	if (esock_mpa_request_build(&pol, &req) < 0 ||
	    (n = esock_mpa_frame_encode(&req, pe.out, sizeof(pe.out))) < 0)
		return 0;
	pe.len = (size_t)n;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	if (write(sv[1], pe.out, pe.len) != (ssize_t)pe.len || esock_request_from_fd(sv[0], &r) < 0)
		abort(); /* a Request our own codec built must be taken */
	for (int i = 0; i < NREG; i++) {
		memcpy(snap[i], region(i), sizeof(snap[i]));
		esock_mr_rekey(mr[i], 0);
	}
	if (esock_qp_create(&qa, &qp) < 0)
		abort();
	for (int i = 0; i < 2; i++) {
		struct esock_sge sge = { (uint64_t)(uintptr_t)(region(2) + G + (size_t)i * 256), 256,
					 esock_mr_stag(mr[2]) };
		struct esock_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };

		esock_post_recv(qp, &wr, NULL);
	}
	if (esock_accept(r, qp, &cp) < 0) { /* refused (a reject Reply was sent) or failed */
		esock_qp_destroy(qp);
		close(sv[1]);
		return 0;
	}
	ep_engine_del(qp); /* this thread does the receiving: deterministic */
	if (!reply_ok(sv[1], &reject) || reject)
		abort();
	esock_qp_conn_info(qp, &info);
	/* The stream after the start frames, framed as negotiated. */
	esock_mpa_tx_init(&pe.tx, info.crc, info.markers_rx, 0);
	pe.msn[0] = pe.msn[1] = pe.msn[2] = 1;
	pe.len = 0;
	while (message(&pe, &in, payload))
		;
	/* Fed in pieces, the endpoint's answers drained meanwhile: nobody blocks. */
	for (size_t off = 0; off < pe.len;) {
		ssize_t k = send(sv[1], pe.out + off, pe.len - off > 8192 ? 8192 : pe.len - off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k < 0 && errno != EAGAIN)
			break;
		if (k > 0)
			off += (size_t)k;
		ep_qp_progress(qp, EP_WANT_RX | EP_WANT_DRAIN | EP_WANT_TX);
		while (recv(sv[1], sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		if (esock_qp_state(qp) == ESOCK_QPS_ERROR)
			break;
	}
	shutdown(sv[1], SHUT_WR);
	for (int i = 0; i < 4000 && esock_qp_state(qp) == ESOCK_QPS_RTS &&
			!(qp->half_close && atomic_load(&qp->rx_eof)); i++) {
		ep_qp_progress(qp, EP_WANT_RX | EP_WANT_DRAIN | EP_WANT_TX);
		if (atomic_load(&qp->rx_paused)) {
			struct esock_sge sge = { (uint64_t)(uintptr_t)(region(2) + G), 256,
						 esock_mr_stag(mr[2]) };
			struct esock_recv_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };

			esock_post_recv(qp, &wr, NULL);
		}
		while (esock_cq_poll(cq, 64, wc) > 0)
			;
		while (recv(sv[1], sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
	if (esock_qp_state(qp) == ESOCK_QPS_RTS && !(qp->half_close && atomic_load(&qp->rx_eof)))
		abort(); /* EOF came after the input: the QP cannot still wait for more */
	check_memory();
	while (esock_cq_poll(cq, 64, wc) > 0)
		;
	esock_qp_destroy(qp);
	close(sv[1]);
	return 0;
}
