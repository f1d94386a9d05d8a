/* SPDX-License-Identifier: MIT */
/*
 * op-matrix: every operation of esock/iwarp.h between two processes, each on
 * the backend $ESOCK_BACKEND gives it (user-level or verbs), with the data
 * checked octet by octet: QPS queue pairs at once, and on each, for every
 * size of SIZES: a Send gathered from two SGEs into a receive scattered over
 * two, an RDMA Write gathered from two SGEs (then a Send that says so), an
 * RDMA Read into one.  For the interop matrix of the two backends
 * (tests/interop/backend-ops.sh).
 *   op-matrix -s ADDR PORT   |   op-matrix -c ADDR PORT
 * OPM_ZEROS=N (both sides): N rounds of 0 octets instead of SIZES, a 0-octet
 * Read each, for kpatch/linux 0006 (siw answers a 0-octet Read that waited
 * behind its own send with the octets of the work request before it).
 * Exits 0 when every operation moved the right octets; prints one line per
 * (QP, size, operation).
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <esock/iwarp.h>

#define QPS 3
#define MAXSZ (16u << 20)
#define SLACK 64 /* receive buffers hold a little more than the largest Send */
#define CTL_SLOTS 4 /* control receives kept posted per QP: a message never finds none */
#define CTL_ID(q, k) (900 + (uint64_t)(q) * 16 + (uint64_t)(k))

static const uint32_t all_sizes[] = { 0, 1, 4093, 65536, 1u << 20, MAXSZ };
/* The rounds' sizes: all_sizes, or OPM_ZEROS times 0 (main). */
static const uint32_t *sizes = all_sizes;
static size_t nsizes = sizeof(all_sizes) / sizeof(all_sizes[0]);

/* The octet at |off| of what QP |q| moves with operation |op| ('S', 'W', 'R'). */
static uint8_t pat(int q, char op, size_t off)
{
	return (uint8_t)(off * 131 + (size_t)q * 17 + (size_t)op);
}

static void fill(uint8_t *b, size_t n, int q, char op)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(q, op, i);
}

static int check(const uint8_t *b, size_t n, int q, char op)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(q, op, i)) {
			fprintf(stderr, "op-matrix: qp %d %c: octet %zu of %zu is 0x%02x, expected 0x%02x\n",
				q, op, i, n, b[i], pat(q, op, i));
			return -1;
		}
	return 0;
}

struct side {
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp[QPS];
	uint8_t *buf[QPS];   /* per QP, three segments: send/recv, write target, read source */
	size_t seg[QPS];     /* a segment's length (the QP's largest size + SLACK) */
	struct esock_mr *mr[QPS];
	uint8_t ctl[QPS][CTL_SLOTS + 1][32]; /* control receives (slots), then the Send */
	struct esock_mr *ctl_mr[QPS];
	struct esock_wc stash[64];           /* completions that came before their turn */
	int nstash;
};

#define SEG(s, q, k) ((s)->buf[q] + (size_t)(k) * (s)->seg[q])

static int die(const char *what, int rc)
{
	fprintf(stderr, "op-matrix: %s: %s\n", what, rc < 0 ? strerror(-rc) : "failed");
	exit(1);
}

/* The completion |want| says is the one (takes it); others are kept for their turn. */
static struct esock_wc wait_match(struct side *s, bool (*want)(uint64_t id, uint64_t arg), uint64_t arg)
{
	struct esock_wc wc;
	int rc;

	for (;;) {
		for (int i = 0; i < s->nstash; i++)
			if (want(s->stash[i].wr_id, arg)) {
				wc = s->stash[i];
				s->stash[i] = s->stash[--s->nstash];
				return wc;
			}
		if ((rc = esock_cq_wait(s->cq, 1, &wc, 60000)) != 1)
			die("no completion within 60 s", rc < 0 ? rc : 0);
		if (wc.status != ESOCK_WC_SUCCESS) {
			fprintf(stderr, "op-matrix: wr %llu: %s\n", (unsigned long long)wc.wr_id,
				esock_wc_status_str(wc.status));
			for (int q = 0; q < QPS; q++) { /* why the QP ended, for the log */
				struct esock_qp_error e;

				if (s->qp[q] && esock_qp_last_error(s->qp[q], &e) == 0)
					fprintf(stderr, "op-matrix: qp %d ended: %s, Terminate %s "
						"(layer %u etype %u ecode 0x%02x)\n", q, strerror(-e.err),
						e.term.valid ? (e.sent ? "sent" : "received") : "none",
						e.term.layer, e.term.etype, e.term.ecode);
			}
			exit(1);
		}
		if (want(wc.wr_id, arg))
			return wc;
		if (s->nstash == (int)(sizeof(s->stash) / sizeof(s->stash[0])))
			die("too many completions out of turn", 0);
		s->stash[s->nstash++] = wc;
	}
}

static bool is_id(uint64_t id, uint64_t arg)
{
	return id == arg;
}

static bool is_ctl_of(uint64_t id, uint64_t q)
{
	return id >= CTL_ID(q, 0) && id < CTL_ID(q, CTL_SLOTS);
}

/* Waits for the completion of |wr_id| (success only); returns its byte_len. */
static uint32_t wait_wc(struct side *s, uint64_t wr_id)
{
	return wait_match(s, is_id, wr_id).byte_len;
}

static void post_recv2(struct side *s, int q, uint64_t id, uint8_t *b, size_t n, uint32_t stag)
{
	struct esock_sge sg[2] = { { (uintptr_t)b, (uint32_t)(n / 3), stag },
				   { (uintptr_t)b + n / 3, (uint32_t)(n - n / 3), stag } };
	struct esock_recv_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = 2 };
	int rc;

	if ((rc = esock_post_recv(s->qp[q], &wr, NULL)) < 0)
		die("esock_post_recv", rc);
}

/*
 * OPM_NO_ZERO_READ=1: no RDMA Read of 0 octets (towards siw as shipped, which may answer
 * one with another request's octets: kpatch/linux 0006).
 */
static bool skip_zero_read;

/* OPM_SPLIT=zero-first: the smaller half first (a 1-octet Send: 0 + 1), for kpatch/linux 0004. */
static bool zero_first;

static void post_send(struct side *s, int q, uint64_t id, enum esock_wr_opcode op, uint8_t *b,
		      size_t n, uint32_t stag, int nsge, uint64_t raddr, uint32_t rkey)
{
	/*
	 * Two SGEs: the first takes the larger half, so that no zero-length
	 * SGE comes before octets (kernel siw of 6.1 dereferences NULL on
	 * one: kpatch/linux/README.md).
	 */
	size_t first = nsge == 2 ? (zero_first ? n / 2 : n - n / 2) : n;
	struct esock_sge sg[2] = { { (uintptr_t)b, (uint32_t)first, stag },
				   { (uintptr_t)b + first, (uint32_t)(n - first), stag } };
	struct esock_send_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = nsge, .opcode = op,
				    .send_flags = ESOCK_SEND_SIGNALED, .remote_addr = raddr,
				    .rkey = rkey };
	int rc;

	if ((rc = esock_post_send(s->qp[q], &wr, NULL)) < 0)
		die("esock_post_send", rc);
}

static void setup(struct side *s)
{
	int rc;

	if ((rc = esock_pd_alloc(&s->pd)) < 0 || (rc = esock_cq_create(64, &s->cq)) < 0)
		die("pd/cq", rc);
	for (int q = 0; q < QPS; q++) {
		size_t len;

		/* (only the first QP moves the big sizes: registered memory is pinned) */
		s->seg[q] = (q ? 65536 : MAXSZ) + SLACK;
		len = 3 * s->seg[q];

		if (!(s->buf[q] = calloc(1, len)))
			die("calloc", -12);
		if ((rc = esock_mr_reg(s->pd, s->buf[q], len,
				       ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE |
					       ESOCK_ACCESS_REMOTE_READ, 0, &s->mr[q])) < 0 ||
		    (rc = esock_mr_reg(s->pd, s->ctl[q], sizeof(s->ctl[q]), ESOCK_ACCESS_LOCAL_WRITE, 0,
				       &s->ctl_mr[q])) < 0)
			die("esock_mr_reg", rc);
		if ((rc = esock_qp_create(&(struct esock_qp_attr){ .pd = s->pd, .send_cq = s->cq,
								   .recv_cq = s->cq, .max_sge = 2 },
					  &s->qp[q])) < 0)
			die("esock_qp_create", rc);
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void ctl_post(struct side *s, int q, int k)
{
	struct esock_sge sg = { (uintptr_t)s->ctl[q][k], sizeof(s->ctl[q][k]),
				esock_mr_stag(s->ctl_mr[q]) };
	struct esock_recv_wr wr = { .wr_id = CTL_ID(q, k), .sg_list = &sg, .num_sge = 1 };
	int rc;

	if ((rc = esock_post_recv(s->qp[q], &wr, NULL)) < 0)
		die("esock_post_recv (control)", rc);
}

/*
 * Untagged Sends take posted receives in the order they were posted, so each
 * side posts its receives in the order the peer's messages come: a control
 * receive (the next of CTL_SLOTS buffers) just before what makes the peer
 * send into it.
 */
static int ctl_next[QPS];

static void ctl_expect(struct side *s, int q)
{
	ctl_post(s, q, ctl_next[q]);
	ctl_next[q] = (ctl_next[q] + 1) % CTL_SLOTS;
}

/* The next control message on QP |q| into |out| (32 octets). */
static void ctl_wait(struct side *s, int q, uint8_t *out)
{
	int k = (int)(wait_match(s, is_ctl_of, (uint64_t)q).wr_id - CTL_ID(q, 0));

	memcpy(out, s->ctl[q][k], sizeof(s->ctl[q][k]));
}

static void ctl_send(struct side *s, int q, const uint8_t *msg, size_t n)
{
	memcpy(s->ctl[q][CTL_SLOTS], msg, n);
	post_send(s, q, 800 + (uint64_t)q, ESOCK_WR_SEND, s->ctl[q][CTL_SLOTS], n,
		  esock_mr_stag(s->ctl_mr[q]), 1, 0, 0);
	wait_wc(s, 800 + (uint64_t)q);
}

/* The size moved on QP |q| in round |k|: the big ones on the first QP only. */
static uint32_t size_of(size_t k, int q)
{
	return sizes[k] > 65536 && q ? 65536 : sizes[k];
}

/*
 * Round |k|'s receives on the server: the Send (two SGEs), then the client's
 * "written", and after the last round its "fin" (which nothing the server
 * sends comes before).
 */
static void server_expect_round(struct side *s, int q, size_t k)
{
	post_recv2(s, q, 100 + (uint64_t)q, SEG(s, q, 0), (size_t)size_of(k, q) + SLACK,
		   esock_mr_stag(s->mr[q]));
	ctl_expect(s, q);
	if (k + 1 == nsizes)
		ctl_expect(s, q);
}

static int server(struct sockaddr_in *sin)
{
	static const uint8_t go[4] = "go!", bye[4] = "bye";
	struct side s = { 0 };
	struct esock_listener *l;
	uint8_t m[32];
	int rc;

	setup(&s);
	if ((rc = esock_listen((struct sockaddr *)sin, sizeof(*sin), QPS, &l)) < 0)
		die("esock_listen", rc);
	printf("op-matrix: server on backend %s\n", esock_listener_backend(l));
	fflush(stdout);
	for (int q = 0; q < QPS; q++) {
		struct esock_conn_req *req;

		ctl_expect(&s, q); /* the client's "ready" */
		fill(SEG(&s, q, 2), s.seg[q] - SLACK, q, 'R');
		if ((rc = esock_get_request(l, &req, 60000)) < 0)
			die("esock_get_request", rc);
		if ((rc = esock_accept(req, s.qp[q], &(struct esock_conn_param){ .peer = "siw" })) < 0)
			die("esock_accept", rc);
	}
	for (int q = 0; q < QPS; q++) {
		/* Where the client writes and reads, then the first "go". */
		ctl_wait(&s, q, m);
		server_expect_round(&s, q, 0);
		put64(m, (uintptr_t)SEG(&s, q, 1));
		put64(m + 8, (uintptr_t)SEG(&s, q, 2));
		put32(m + 16, esock_mr_stag(s.mr[q]));
		ctl_send(&s, q, m, 20);
		ctl_send(&s, q, go, sizeof(go));
	}
	for (size_t k = 0; k < nsizes; k++)
		for (int q = 0; q < QPS; q++) {
			uint32_t n = size_of(k, q), got;

			got = wait_wc(&s, 100 + (uint64_t)q);
			if (got != n || check(SEG(&s, q, 0), n, q, 'S') < 0)
				return fprintf(stderr, "op-matrix: send of %u: %u came\n", n, got), 1;
			ctl_wait(&s, q, m); /* the Write is in */
			if (check(SEG(&s, q, 1), n, q, 'W') < 0)
				return 1;
			printf("op-matrix: qp %d size %u: send (2 SGEs into 2) ok, write (2 SGEs) ok\n", q, n);
			fflush(stdout);
			if (k + 1 < nsizes) {
				server_expect_round(&s, q, k + 1);
				ctl_send(&s, q, go, sizeof(go));
			}
		}
	for (int q = 0; q < QPS; q++) {
		ctl_wait(&s, q, m);
		ctl_send(&s, q, bye, sizeof(bye));
	}
	for (int q = 0; q < QPS; q++)
		esock_qp_disconnect(s.qp[q]);
	esock_listener_close(l);
	return 0;
}

static int client(struct sockaddr_in *sin)
{
	static const uint8_t ready[4] = "rdy", done[4] = "wrt", fin[4] = "fin";
	struct side s = { 0 };
	uint64_t waddr[QPS], raddr[QPS];
	uint32_t rkey[QPS];
	uint8_t m[32];
	int rc;

	setup(&s);
	for (int q = 0; q < QPS; q++) {
		ctl_expect(&s, q); /* the addresses */
		ctl_expect(&s, q); /* the first "go" */
		if ((rc = esock_qp_connect(s.qp[q], (struct sockaddr *)sin, sizeof(*sin),
					   &(struct esock_conn_param){ .peer = "siw" })) < 0)
			die("esock_qp_connect", rc);
	}
	printf("op-matrix: client on backend %s\n", esock_qp_backend(s.qp[0]));
	fflush(stdout);
	for (int q = 0; q < QPS; q++) {
		ctl_send(&s, q, ready, sizeof(ready));
		ctl_wait(&s, q, m);
		memcpy(&waddr[q], m, 8);
		memcpy(&raddr[q], m + 8, 8);
		memcpy(&rkey[q], m + 16, 4);
	}
	for (size_t k = 0; k < nsizes; k++)
		for (int q = 0; q < QPS; q++) {
			uint32_t n = size_of(k, q), stag = esock_mr_stag(s.mr[q]);

			ctl_wait(&s, q, m); /* "go": the server's receives are posted */
			fill(SEG(&s, q, 0), n, q, 'S');
			post_send(&s, q, 200, ESOCK_WR_SEND, SEG(&s, q, 0), n, stag, 2, 0, 0);
			wait_wc(&s, 200);
			fill(SEG(&s, q, 1), n, q, 'W');
			post_send(&s, q, 201, ESOCK_WR_RDMA_WRITE, SEG(&s, q, 1), n, stag, 2, waddr[q], rkey[q]);
			wait_wc(&s, 201);
			ctl_expect(&s, q); /* the next "go", or "bye" */
			ctl_send(&s, q, done, sizeof(done));
			if (n == 0 && skip_zero_read) {
				printf("op-matrix: qp %d size 0: send ok, write ok, read skipped\n", q);
				continue;
			}
			memset(SEG(&s, q, 2), 0, n);
			post_send(&s, q, 202, ESOCK_WR_RDMA_READ, SEG(&s, q, 2), n, stag, 1, raddr[q], rkey[q]);
			if (wait_wc(&s, 202) != n)
				return fprintf(stderr, "op-matrix: read of %u: short\n", n), 1;
			if (check(SEG(&s, q, 2), n, q, 'R') < 0)
				return 1;
			printf("op-matrix: qp %d size %u: send ok, write ok, read ok\n", q, n);
			fflush(stdout);
		}
	for (int q = 0; q < QPS; q++) {
		ctl_send(&s, q, fin, sizeof(fin));
		ctl_wait(&s, q, m);
	}
	for (int q = 0; q < QPS; q++)
		esock_qp_disconnect(s.qp[q]);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (argc != 4 || (strcmp(argv[1], "-s") && strcmp(argv[1], "-c")) ||
	    inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1)
		return fprintf(stderr, "usage: op-matrix -s|-c ADDR PORT\n"), 2;
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	zero_first = getenv("OPM_SPLIT") && !strcmp(getenv("OPM_SPLIT"), "zero-first");
	skip_zero_read = getenv("OPM_NO_ZERO_READ") && !strcmp(getenv("OPM_NO_ZERO_READ"), "1");
	if (getenv("OPM_ZEROS")) {
		long n = atol(getenv("OPM_ZEROS"));

		if (n < 1 || n > 100000 || !(sizes = calloc((size_t)n, sizeof(*sizes))))
			return fprintf(stderr, "op-matrix: OPM_ZEROS=%s: 1 to 100000 rounds\n",
				       getenv("OPM_ZEROS")), 2;
		nsizes = (size_t)n;
	}
	return argv[1][1] == 's' ? server(&sin) : client(&sin);
}
