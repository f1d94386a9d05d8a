/* SPDX-License-Identifier: MIT */
/*
 * esock-demo: a round trip through the iWARP wire core, no network needed.
 * Two endpoints (A = initiator, B = responder) negotiate MPA v2 start frames,
 * then A sends a Send, an RDMA Write and an RDMA Read Request; B places them
 * and answers with a Read Response; finally A sends more Sends than B posted
 * receives and B terminates the stream.  Every FPDU goes through the real
 * transmit plan (markers, CRC), is fed to the receiver split at random
 * points, decoded, printed and placed; the placed bytes are verified.
 *
 *   esock-demo [--markers] [--no-crc] [--seed N] [--quiet]
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <esock/wire.h>

#include "tools/fpdu_print.h"

#define REGION 8192
#define NRECV 2

struct peer {
	const char *name;
	struct esock_mpa_tx tx;
	struct esock_mpa_rx rx;
	struct esock_ddp_place place;
	struct peer *other;
	uint32_t msn[4];
	uint32_t stag;
	uint64_t base;
	uint8_t region[REGION];
	uint8_t recv[NRECV][2048];
	int handed;
	uint8_t wire[1 << 18];
	size_t wlen;
	uint8_t ulpdu[65536];
	bool terminated;
	size_t mulpdu;
};

static bool quiet;
static uint64_t rng_state;
static unsigned nfpdu;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int lk_stag(void *ctx, uint32_t stag, struct esock_ddp_region *out)
{
	struct peer *p = ctx;

	if (stag != p->stag)
		return -1;
	*out = (struct esock_ddp_region){ p->base, REGION, p->region,
					  ESOCK_DDP_ACCESS_REMOTE_WRITE | ESOCK_DDP_ACCESS_REMOTE_READ |
						  ESOCK_DDP_ACCESS_LOCAL_WRITE, 1 };
	return 0;
}

static int lk_recv(void *ctx, uint32_t qn, uint32_t msn, struct esock_ddp_buf *out)
{
	struct peer *p = ctx;

	(void)qn;
	if (p->handed >= NRECV)
		return -1;
	*out = (struct esock_ddp_buf){ p->recv[p->handed], sizeof(p->recv[0]), msn };
	p->handed++;
	return 0;
}

/* Segments one message, frames each segment, appends the FPDUs to p->wire. */
static void peer_send(struct peer *p, struct esock_rdmap_msg *m, const uint8_t *pl, size_t len)
{
	const struct esock_rdmap_opinfo *oi = esock_rdmap_opinfo(m->opcode);
	struct esock_ddp_seg seg;
	struct esock_ddp_hdr h;
	size_t off, n;

	if (!oi->tagged)
		m->ddp.msn = ++p->msn[oi->qn];
	if (esock_ddp_seg_init(&seg, &m->ddp, len, p->mulpdu - oi->hlen) < 0)
		abort();
	while (esock_ddp_seg_next(&seg, &h, &off, &n)) {
		struct esock_rdmap_msg s = *m;
		uint8_t hdr[ESOCK_RDMAP_HDR_MAX + 64];
		struct iovec v[2];
		ssize_t hl, k;

		s.ddp = h;
		hl = esock_rdmap_hdr_encode(&s, hdr, sizeof(hdr));
		v[0] = (struct iovec){ hdr, (size_t)hl };
		v[1] = (struct iovec){ (void *)(uintptr_t)(pl + off), n };
		k = esock_mpa_tx_build(&p->tx, v, 2);
		if (hl < 0 || k < 0 || p->wlen + (size_t)k > sizeof(p->wire))
			abort();
		esock_mpa_tx_flatten(&p->tx, p->wire + p->wlen, sizeof(p->wire) - p->wlen);
		esock_mpa_tx_advance(&p->tx, (size_t)k);
		p->wlen += (size_t)k;
	}
}

static void send_terminate(struct peer *p, const struct esock_term *t, const uint8_t *seg, size_t len)
{
	struct esock_rdmap_term tm;
	struct esock_rdmap_msg m;

	esock_rdmap_term_build(&tm, t, seg, len);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_TERMINATE);
	m.u.term = tm;
	p->msn[ESOCK_DDP_QN_TERMINATE] = 0; /* the only Terminate: MSN 1 */
	peer_send(p, &m, NULL, 0);
	p->terminated = true;
	printf("  %s: stream failed, Terminate queued: %s\n", p->name,
	       esock_term_str(t->layer, t->etype, t->ecode));
}

static void answer_read(struct peer *p, const struct esock_rdmap_read_req *r)
{
	struct esock_rdmap_msg m;
	uint64_t off = r->src_to - p->base;

	if (r->src_stag != p->stag || r->src_to < p->base || off > REGION || r->size > REGION - off) {
		struct esock_term t = { true, ESOCK_TERM_LAYER_RDMAP, ESOCK_TERM_RDMAP_ETYPE_PROTECTION,
					ESOCK_TERM_RDMAP_BASE_BOUNDS, ESOCK_TERM_HDRCT_R };
		send_terminate(p, &t, NULL, 0);
		return;
	}
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_RESP);
	m.ddp.stag = r->sink_stag;
	m.ddp.to = r->sink_to;
	peer_send(p, &m, p->region + off, r->size);
}

/* Acts on one received ULPDU: decode, print, place, answer. */
static void on_ulpdu(struct peer *p, const uint8_t *u, size_t len)
{
	struct esock_rdmap_msg m;
	struct esock_term t = { 0 };
	struct esock_ddp_placed placed;
	struct esock_ddp_completion c;
	uint32_t access = ESOCK_DDP_ACCESS_REMOTE_WRITE;
	ssize_t hl = esock_rdmap_decode(&m, u, len, NULL, &t);

	nfpdu++;
	if (!quiet) {
		printf("  %s<-%s FPDU %-3u ULPDU %4zu | ", p->name, p->other->name, nfpdu, len);
		if (hl >= 0)
			fpdu_print_msg(stdout, &m);
		else
			printf("undecodable\n");
	}
	if (hl < 0) {
		send_terminate(p, &t, u, len);
		return;
	}
	if (m.opcode == ESOCK_RDMAP_READ_REQ) {
		answer_read(p, &m.u.read_req);
		return;
	}
	if (m.opcode == ESOCK_RDMAP_TERMINATE) {
		p->terminated = true;
		return;
	}
	if (m.opcode == ESOCK_RDMAP_READ_RESP)
		access = ESOCK_DDP_ACCESS_LOCAL_WRITE;
	if (esock_ddp_place_segment(&p->place, &m.ddp, m.payload, m.payload_len, access, &placed) < 0) {
		send_terminate(p, esock_ddp_place_term(&p->place), u, len);
		return;
	}
	while (esock_ddp_place_poll(&p->place, &c) == 1)
		printf("  %s: Send MSN %" PRIu32 " complete, %zu octets: \"%.*s\"\n", p->name, c.msn,
		       c.len, (int)(c.len < 40 ? c.len : 40), (const char *)c.buf.addr);
}

/* Moves everything |from| has framed into |to|'s parser, split at random points. */
static int deliver(struct peer *from, struct peer *to)
{
	size_t off = 0;

	while (off < from->wlen && !to->terminated) {
		size_t chunk = 1 + (size_t)(rnd() % 3000);
		struct esock_mpa_ev ev;
		ssize_t n;

		if (chunk > from->wlen - off)
			chunk = from->wlen - off;
		n = esock_mpa_rx_feed(&to->rx, from->wire + off, chunk, &ev);
		if (n < 0) {
			fprintf(stderr, "%s: MPA receive error %zd\n", to->name, n);
			return -1;
		}
		off += (size_t)n;
		if (ev.type == ESOCK_MPA_EV_ULPDU)
			on_ulpdu(to, ev.data, ev.len);
	}
	from->wlen = 0;
	return 0;
}

static void peer_init(struct peer *p, const char *name, struct peer *other,
		      const struct esock_mpa_params *par, uint32_t stag, uint64_t base)
{
	struct esock_mpa_rx_cfg rc = { .crc = par->crc, .markers = par->markers_rx,
				       .buf = p->ulpdu, .buf_len = sizeof(p->ulpdu) };
	struct esock_ddp_place_cfg pc = { .lookup = { lk_stag, lk_recv, p }, .pd = 1 };

	p->name = name;
	p->other = other;
	p->stag = stag;
	p->base = base;
	p->mulpdu = esock_mpa_mulpdu(1448, par->markers_tx);
	esock_mpa_tx_init(&p->tx, par->crc, par->markers_tx, 0);
	if (esock_mpa_rx_init(&p->rx, &rc) < 0 || esock_ddp_place_init(&p->place, &pc) < 0)
		abort();
}

static int negotiate(bool crc, bool markers, struct esock_mpa_params *pa, struct esock_mpa_params *pb)
{
	static const uint8_t pd[] = "hello from esock-demo";
	struct esock_mpa_policy a = { .rev = 2, .crc = crc, .markers_rx = markers, .markers_tx = true,
				      .ird = 8, .ord = 8, .pd = pd, .pd_len = sizeof(pd) - 1 };
	struct esock_mpa_policy b = { .rev = 2, .markers_rx = markers, .markers_tx = true, .ird = 4, .ord = 4 };
	struct esock_mpa_frame req, rep, d;
	uint8_t wire[ESOCK_MPA_FRAME_MAX];
	ssize_t n;

	esock_mpa_request_build(&a, &req);
	n = esock_mpa_frame_encode(&req, wire, sizeof(wire));
	if (n < 0 || esock_mpa_frame_decode(&d, false, wire, (size_t)n, 0, NULL) != n)
		return -1;
	printf("A->B ");
	fpdu_print_frame(stdout, &d);
	if (esock_mpa_reply_build(&b, &d, &rep, pb, NULL) < 0)
		return -1;
	n = esock_mpa_frame_encode(&rep, wire, sizeof(wire));
	if (n < 0 || esock_mpa_frame_decode(&d, true, wire, (size_t)n, 0, NULL) != n)
		return -1;
	printf("B->A ");
	fpdu_print_frame(stdout, &d);
	if (esock_mpa_reply_check(&a, &req, &d, pa, NULL) < 0)
		return -1;
	printf("negotiated: CRC %s, markers A->B %s B->A %s, A ORD %u IRD %u\n", pa->crc ? "on" : "off",
	       pa->markers_tx ? "on" : "off", pa->markers_rx ? "on" : "off", pa->ord, pa->ird);
	return 0;
}

static struct peer A, B;

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "markers", no_argument, NULL, 'm' },
					      { "no-crc", no_argument, NULL, 'n' },
					      { "seed", required_argument, NULL, 's' },
					      { "quiet", no_argument, NULL, 'q' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	bool markers = false, crc = true;
	struct esock_mpa_params pa, pb;
	static uint8_t src[6000];
	struct esock_rdmap_msg m;
	int c;

	rng_state = (uint64_t)time(NULL) | 1;
	while ((c = getopt_long(argc, argv, "mns:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': markers = true; break;
		case 'n': crc = false; break;
		case 's': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		case 'q': quiet = true; break;
		default:
			printf("usage: esock-demo [--markers] [--no-crc] [--seed N] [--quiet]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	printf("esock %s demo: the iWARP wire core end to end (CRC32C: %s)\n", esock_version(),
	       esock_crc32c_impl());
	if (negotiate(crc, markers, &pa, &pb) < 0)
		return 1;
	peer_init(&A, "A", &B, &pa, 0xa000, 0x7f0000000000ull);
	peer_init(&B, "B", &A, &pb, 0xb000, 0x7f1000000000ull);
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);

	printf("\nA: Send, RDMA Write of %zu octets to B's region, RDMA Read of 3000 octets\n", sizeof(src));
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	peer_send(&A, &m, (const uint8_t *)"hello over MPA/DDP/RDMAP", 24);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_WRITE);
	m.ddp.stag = B.stag;
	m.ddp.to = B.base + 1024;
	peer_send(&A, &m, src, sizeof(src));
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_READ_REQ);
	m.u.read_req = (struct esock_rdmap_read_req){ A.stag, A.base + 100, 3000, B.stag, B.base + 1024 };
	peer_send(&A, &m, NULL, 0);
	if (deliver(&A, &B) < 0 || deliver(&B, &A) < 0)
		return 1;

	printf("\nA: two more Sends; B posted only %d receives in all\n", NRECV);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND_SE);
	peer_send(&A, &m, (const uint8_t *)"second", 6);
	esock_rdmap_msg_init(&m, ESOCK_RDMAP_SEND);
	peer_send(&A, &m, (const uint8_t *)"third: no buffer for me", 23);
	if (deliver(&A, &B) < 0 || deliver(&B, &A) < 0)
		return 1;

	if (memcmp(B.region + 1024, src, sizeof(src)) || memcmp(A.region + 100, src, 3000) ||
	    !A.terminated) {
		printf("\nFAILED: placed data or Terminate not as expected\n");
		return 1;
	}
	printf("\nverified: B's region holds the RDMA Write, A's region the RDMA Read data;"
	       " %u FPDUs, A saw B's Terminate\n", nfpdu);
	return 0;
}
