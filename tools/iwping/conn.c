/* SPDX-License-Identifier: MIT */
/*
 * iwping's connection resources as rping lays them out: one PD, one CQ for
 * both queues, a QP with a single receive in flight, and four registered
 * buffers (receive and send descriptors, the RDMA buffer, and on the client
 * the start buffer).  Also the work requests iwping posts and the one place
 * that waits for completions and turns them into protocol steps.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <esock/mpa.h>

#include "tools/iwping/iwping.h"
#include "util/byteorder.h"

/* rping's queue sizes: 16 sends, 2 receives (one is posted), a CQ for both. */
#define SQ_DEPTH 16
#define RQ_DEPTH 2
#define CQ_DEPTH (2 * SQ_DEPTH)

#define RDMA_ACCESS (ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE)

static int fail(const struct iwping_conn *c, const char *what, int err)
{
	fprintf(stderr, "iwping: %s: %s: %s\n", c->role, what, strerror(-err));
	return -1;
}

static int reg(struct iwping_conn *c, void *buf, size_t len, unsigned access, struct esock_mr **mr)
{
	int r = esock_mr_reg(c->pd, buf, len, access, 0, mr);

	if (r < 0)
		return fail(c, "memory registration", r);
	iwping_dbg(c->o, "registered %zu octets at %p, stag %#" PRIx32, len, buf,
		   esock_mr_stag(*mr));
	return 0;
}

/* rping registers the send descriptor without access rights: local read only. */
static int setup_buffers(struct iwping_conn *c, bool server)
{
	size_t size = (size_t)c->o->size;

	if (reg(c, c->recv_buf, sizeof(c->recv_buf), ESOCK_ACCESS_LOCAL_WRITE, &c->recv_mr) < 0 ||
	    reg(c, c->send_buf, sizeof(c->send_buf), 0, &c->send_mr) < 0)
		return -1;
	c->rdma_buf = calloc(1, size);
	if (!c->rdma_buf)
		return fail(c, "RDMA buffer", -ENOMEM);
	if (reg(c, c->rdma_buf, size, RDMA_ACCESS, &c->rdma_mr) < 0)
		return -1;
	if (server)
		return 0;
	c->start_buf = calloc(1, size);
	if (!c->start_buf)
		return fail(c, "start buffer", -ENOMEM);
	return reg(c, c->start_buf, size, RDMA_ACCESS, &c->start_mr);
}

int iwping_conn_setup(struct iwping_conn *c, const struct iwping_opts *o, bool server)
{
	struct esock_qp_attr qa = { .sq_depth = SQ_DEPTH, .rq_depth = RQ_DEPTH, .max_sge = 1 };
	int r;

	memset(c, 0, sizeof(*c));
	c->o = o;
	c->role = server ? "server" : "client";
	r = esock_pd_alloc(&c->pd);
	if (r < 0)
		return fail(c, "protection domain", r);
	r = esock_cq_create(CQ_DEPTH, &c->cq);
	if (r < 0)
		return fail(c, "completion queue", r);
	qa.pd = c->pd;
	qa.send_cq = qa.recv_cq = c->cq;
	r = esock_qp_create(&qa, &c->qp);
	if (r < 0)
		return fail(c, "queue pair", r);
	iwping_dbg(o, "created qp %" PRIu32, esock_qp_num(c->qp));
	return setup_buffers(c, server);
}

/* Safe on a partly set up connection; the QP goes first so no access is pending. */
void iwping_conn_free(struct iwping_conn *c)
{
	struct esock_mr *mrs[] = { c->recv_mr, c->send_mr, c->rdma_mr, c->start_mr };

	if (c->qp)
		esock_qp_destroy(c->qp);
	for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
		if (mrs[i])
			esock_mr_dereg(mrs[i]);
	free(c->rdma_buf);
	free(c->start_buf);
	if (c->cq)
		esock_cq_destroy(c->cq);
	if (c->pd)
		esock_pd_free(c->pd);
	memset(c, 0, sizeof(*c));
}

int iwping_post_recv(struct iwping_conn *c)
{
	struct esock_sge sge = { (uintptr_t)c->recv_buf, sizeof(c->recv_buf), esock_mr_stag(c->recv_mr) };
	struct esock_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct esock_recv_wr *bad;
	int r = esock_post_recv(c->qp, &wr, &bad);

	return r < 0 ? fail(c, "post receive", r) : 0;
}

static int post_send(struct iwping_conn *c, struct esock_send_wr *wr)
{
	struct esock_send_wr *bad;
	int r = esock_post_send(c->qp, wr, &bad);

	return r < 0 ? fail(c, "post send", r) : 0;
}

/*
 * Sends the descriptor of |buf| (registered as |mr|, -S octets long); with
 * |buf| NULL sends the descriptor buffer as it is: rping's server never fills
 * its own, so its "go ahead" messages are 16 zero octets.
 */
int iwping_send_desc(struct iwping_conn *c, const void *buf, const struct esock_mr *mr)
{
	struct esock_sge sge = { (uintptr_t)c->send_buf, sizeof(c->send_buf), esock_mr_stag(c->send_mr) };
	struct esock_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = ESOCK_WR_SEND,
				    .send_flags = ESOCK_SEND_SIGNALED };

	if (buf) {
		esock_put_be64(c->send_buf, (uintptr_t)buf);
		esock_put_be32(c->send_buf + 8, esock_mr_stag(mr));
		esock_put_be32(c->send_buf + 12, (uint32_t)c->o->size);
		iwping_dbg(c->o, "advertising addr %p stag %#" PRIx32 " len %d", buf,
			   esock_mr_stag(mr), c->o->size);
	}
	return post_send(c, &wr);
}

/* RDMA Read into / RDMA Write from the start of rdma_buf, at the peer's descriptor. */
int iwping_post_rdma(struct iwping_conn *c, enum esock_wr_opcode op, uint32_t len)
{
	struct esock_sge sge = { (uintptr_t)c->rdma_buf, len, esock_mr_stag(c->rdma_mr) };
	struct esock_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				    .send_flags = ESOCK_SEND_SIGNALED,
				    .remote_addr = c->peer.addr, .rkey = c->peer.stag };

	iwping_dbg(c->o, "RDMA %s of %" PRIu32 " octets, peer addr %#" PRIx64 " stag %#" PRIx32,
		   op == ESOCK_WR_RDMA_READ ? "Read" : "Write", len, c->peer.addr, c->peer.stag);
	return post_send(c, &wr);
}

static const char *opname(enum esock_wc_opcode op)
{
	static const char *const names[] = { "send", "RDMA Write", "RDMA Read", "receive" };

	return (unsigned)op < sizeof(names) / sizeof(names[0]) ? names[op] : "unknown";
}

/* A failed completion: say why, with the Terminate when there was one. */
static int wc_error(struct iwping_conn *c, const struct esock_wc *wc)
{
	struct esock_qp_error e = { 0 };

	fprintf(stderr, "iwping: %s: %s completion failed: %s\n", c->role, opname(wc->opcode),
		esock_wc_status_str(wc->status));
	if (esock_qp_last_error(c->qp, &e) == 0 && e.term.valid)
		fprintf(stderr, "iwping: %s: Terminate %s: %s\n", c->role,
			e.sent ? "sent" : "received",
			esock_term_str(e.term.layer, e.term.etype, e.term.ecode));
	return -1;
}

/*
 * A descriptor arrived.  The receive is posted again at once, before the
 * caller answers, as rping does: the peer sends its next message only after
 * our answer, so it always finds a buffer.
 */
static int on_recv(struct iwping_conn *c, const struct esock_wc *wc)
{
	if (wc->byte_len != IWPING_DESC_LEN) {
		fprintf(stderr, "iwping: %s: received %" PRIu32 " octets, expected %d\n", c->role,
			wc->byte_len, IWPING_DESC_LEN);
		return -1;
	}
	c->peer.addr = esock_get_be64(c->recv_buf);
	c->peer.stag = esock_get_be32(c->recv_buf + 8);
	c->peer.len = esock_get_be32(c->recv_buf + 12);
	iwping_dbg(c->o, "received addr %#" PRIx64 " stag %#" PRIx32 " len %" PRIu32,
		   c->peer.addr, c->peer.stag, c->peer.len);
	return iwping_post_recv(c);
}

/*
 * Waits for the next completion of kind |want|; send completions pass by.
 * Returns 0, IWPING_DISCONNECTED when the QP was flushed (the peer went
 * away: rping treats that as the normal end), or -1 after saying why.
 */
int iwping_wait(struct iwping_conn *c, enum esock_wc_opcode want)
{
	struct esock_wc wc;
	int n;

	for (;;) {
		n = esock_cq_wait(c->cq, 1, &wc, -1);
		if (n == 0 || n == -EINTR)
			continue;
		if (n < 0)
			return fail(c, "waiting for completions", n);
		if (wc.status == ESOCK_WC_WR_FLUSH_ERR) {
			iwping_dbg(c->o, "%s flushed: disconnected", opname(wc.opcode));
			return IWPING_DISCONNECTED;
		}
		if (wc.status != ESOCK_WC_SUCCESS)
			return wc_error(c, &wc);
		iwping_dbg(c->o, "%s completion", opname(wc.opcode));
		if (wc.opcode == ESOCK_WC_SEND)
			continue;
		if (wc.opcode == ESOCK_WC_RECV && on_recv(c, &wc) < 0)
			return -1;
		if (wc.opcode == want)
			return 0;
		fprintf(stderr, "iwping: %s: unexpected %s completion while waiting for %s\n",
			c->role, opname(wc.opcode), opname(want));
		return -1;
	}
}

static const char *rtr_name(uint8_t rtr)
{
	switch (rtr) {
	case 0: return "none";
	case ESOCK_MPA_RTR_SEND: return "Send";
	case ESOCK_MPA_RTR_WRITE: return "Write";
	case ESOCK_MPA_RTR_READ: return "Read";
	default: return "?";
	}
}

/* -v: the backend that carries the connection; -d: who the peer is and what the MPA exchange settled. */
void iwping_print_conn(struct iwping_conn *c)
{
	char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
	struct esock_conn_info ci;

	if (c->o->verbose && !c->o->debug)
		printf("backend %s\n", esock_qp_backend(c->qp));
	if (!c->o->debug || esock_qp_conn_info(c->qp, &ci) < 0)
		return;
	getnameinfo((const struct sockaddr *)&ci.remote, sizeof(ci.remote), host, sizeof(host), port,
		    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	iwping_dbg(c->o, "connected to %s port %s (backend %s)", host, port, esock_qp_backend(c->qp));
	iwping_dbg(c->o, "connected: MPA rev %u%s, CRC %s, markers tx %s rx %s, IRD %u ORD %u,"
		   " RTR %s, peer profile %s", ci.mpa_rev, ci.enhanced ? " (RFC 6581)" : "",
		   ci.crc ? "on" : "off", ci.markers_tx ? "on" : "off", ci.markers_rx ? "on" : "off",
		   ci.ird, ci.ord, ci.p2p ? rtr_name(ci.rtr) : "none", ci.peer ? ci.peer : "?");
}
