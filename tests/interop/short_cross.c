/* SPDX-License-Identifier: MIT */
/*
 * short-cross: RDMA Writes of a few octets whose source crosses a page, each
 * source on a page pair of its own, queued behind one large Write so that
 * the sender's transmit thread (not the posting system call) sends them;
 * the server checks every octet.  Kernel siw copies such a payload from the
 * wrong places (kpatch/linux 0007); the verbs backend splits it at the page
 * (kpatch/verbs/vb_qp.c, split_short).  In the siw guest (backend-ops.sh).
 *   short-cross -s ADDR PORT   |   short-cross -c ADDR PORT
 * Exits 0 when every Write placed the right octets.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <esock/iwarp.h>

#define WRITES 256
#define SHORT 24                /* (siw's header buffer takes up to 24 octets) */
#define BEFORE 8                /* octets of a source before its page's end */
#define SLOT 32                 /* the server's octets per short Write */
#define BIG (8u << 20)          /* the large Write in front: fills the send buffer */
#define HELLO_LEN 12            /* the server's private data: STag, address */

static int die(const char *what, int rc)
{
	fprintf(stderr, "short-cross: %s: %s\n", what, rc < 0 ? strerror(-rc) : "failed");
	exit(2);
}

static uint8_t pat(int w, int i)
{
	return (uint8_t)(w * 7 + i * 13 + 1);
}

static struct esock_wc wait_one(struct esock_cq *cq)
{
	struct esock_wc wc;
	int rc;

	if ((rc = esock_cq_wait(cq, 1, &wc, 60000)) != 1)
		die("no completion within 60 s", rc < 0 ? rc : 0);
	if (wc.status != ESOCK_WC_SUCCESS) {
		fprintf(stderr, "short-cross: wr %llu: %s\n", (unsigned long long)wc.wr_id,
			esock_wc_status_str(wc.status));
		exit(2);
	}
	return wc;
}

static void objects(struct esock_pd **pd, struct esock_cq **cq, struct esock_qp **qp, unsigned depth)
{
	int rc;

	if ((rc = esock_pd_alloc(pd)) < 0 || (rc = esock_cq_create(depth + 8, cq)) < 0 ||
	    (rc = esock_qp_create(&(struct esock_qp_attr){ .pd = *pd, .send_cq = *cq, .recv_cq = *cq,
							   .sq_depth = depth, .rq_depth = 4, .max_sge = 1,
							   .sq_sig_all = true },
				  qp)) < 0)
		die("pd, cq, qp", rc);
}

static int server(const struct sockaddr_in *sin)
{
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_mr *mr, *cmr;
	struct esock_listener *l;
	struct esock_conn_req *req;
	uint8_t *dst = calloc(1, BIG + WRITES * SLOT), ctl[16], hello[HELLO_LEN];
	struct esock_sge sg = { (uintptr_t)ctl, sizeof(ctl), 0 };
	int rc, wrong = 0;

	if (!dst)
		die("calloc", -12);
	objects(&pd, &cq, &qp, 8);
	if ((rc = esock_mr_reg(pd, dst, BIG + WRITES * SLOT, ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE,
			       0, &mr)) < 0 ||
	    (rc = esock_mr_reg(pd, ctl, sizeof(ctl), ESOCK_ACCESS_LOCAL_WRITE, 0, &cmr)) < 0)
		die("esock_mr_reg", rc);
	sg.lkey = esock_mr_stag(cmr);
	if ((rc = esock_post_recv(qp, &(struct esock_recv_wr){ .wr_id = 1, .sg_list = &sg, .num_sge = 1 }, NULL)) < 0)
		die("esock_post_recv", rc);
	memcpy(hello, &(uint32_t){ esock_mr_stag(mr) }, 4);
	memcpy(hello + 4, &(uint64_t){ (uintptr_t)dst }, 8);
	if ((rc = esock_listen((const struct sockaddr *)sin, sizeof(*sin), 1, &l)) < 0)
		die("esock_listen", rc);
	printf("short-cross: server on backend %s\n", esock_listener_backend(l));
	fflush(stdout);
	if ((rc = esock_get_request(l, &req, 60000)) < 0 ||
	    (rc = esock_accept(req, qp, &(struct esock_conn_param){ .peer = "siw", .private_data = hello,
								   .private_data_len = HELLO_LEN })) < 0)
		die("accept", rc);
	wait_one(cq); /* the client's "done", behind every Write */
	for (int w = 0; w < WRITES; w++)
		for (int i = 0; i < SHORT; i++)
			if (dst[BIG + (size_t)w * SLOT + (size_t)i] != pat(w, i)) {
				if (!wrong++)
					fprintf(stderr, "short-cross: write %d: octet %d is 0x%02x, expected 0x%02x\n", w, i,
						dst[BIG + (size_t)w * SLOT + (size_t)i], pat(w, i));
				break;
			}
	printf("short-cross: %d writes of %d octets across a page, %d placed wrong\n", WRITES, SHORT, wrong);
	return wrong ? 1 : 0;
}

static int client(const struct sockaddr_in *sin)
{
	long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	size_t srclen = (size_t)(WRITES + 1) * (size_t)page;
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_mr *mr, *bmr;
	struct esock_conn_info ci;
	uint8_t *src = aligned_alloc((size_t)page, srclen), *big = calloc(1, BIG);
	uint32_t stag;
	uint64_t raddr;
	int rc;

	if (!src || !big)
		die("memory", -12);
	objects(&pd, &cq, &qp, WRITES + 8);
	for (int w = 0; w < WRITES; w++)
		for (int i = 0; i < SHORT; i++)
			src[(size_t)(w + 1) * (size_t)page - BEFORE + (size_t)i] = pat(w, i);
	if ((rc = esock_mr_reg(pd, src, srclen, ESOCK_ACCESS_LOCAL_WRITE, 0, &mr)) < 0 ||
	    (rc = esock_mr_reg(pd, big, BIG, ESOCK_ACCESS_LOCAL_WRITE, 0, &bmr)) < 0)
		die("esock_mr_reg", rc);
	if ((rc = esock_qp_connect(qp, (const struct sockaddr *)sin, sizeof(*sin),
				   &(struct esock_conn_param){ .peer = "siw" })) < 0 ||
	    (rc = esock_qp_conn_info(qp, &ci)) < 0)
		die("esock_qp_connect", rc);
	if (ci.private_data_len < HELLO_LEN)
		die("the server's private data", 0);
	memcpy(&stag, ci.private_data + ci.private_data_len - HELLO_LEN, 4);
	memcpy(&raddr, ci.private_data + ci.private_data_len - HELLO_LEN + 4, 8);
	{
		struct esock_sge bs = { (uintptr_t)big, BIG, esock_mr_stag(bmr) };
		struct esock_send_wr bw = { .wr_id = 1000, .opcode = ESOCK_WR_RDMA_WRITE, .sg_list = &bs,
					    .num_sge = 1, .remote_addr = raddr, .rkey = stag };

		if ((rc = esock_post_send(qp, &bw, NULL)) < 0)
			die("the large Write", rc);
	}
	for (int w = 0; w < WRITES; w++) {
		struct esock_sge s = { (uintptr_t)src + (size_t)(w + 1) * (size_t)page - BEFORE, SHORT,
				       esock_mr_stag(mr) };
		struct esock_send_wr wr = { .wr_id = (uint64_t)w, .opcode = ESOCK_WR_RDMA_WRITE, .sg_list = &s,
					    .num_sge = 1, .remote_addr = raddr + BIG + (uint64_t)w * SLOT,
					    .rkey = stag };

		if ((rc = esock_post_send(qp, &wr, NULL)) < 0)
			die("a short Write", rc);
	}
	for (int k = 0; k < WRITES + 1; k++)
		wait_one(cq);
	{
		struct esock_sge s = { (uintptr_t)src, 4, esock_mr_stag(mr) };
		struct esock_send_wr done = { .wr_id = 2000, .opcode = ESOCK_WR_SEND, .sg_list = &s, .num_sge = 1 };

		if ((rc = esock_post_send(qp, &done, NULL)) < 0)
			die("the Send", rc);
		wait_one(cq);
	}
	printf("short-cross: client sent %d writes\n", WRITES);
	sleep(1); /* (the server reads before the connection ends) */
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (argc != 4 || (strcmp(argv[1], "-s") && strcmp(argv[1], "-c")) ||
	    inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: short-cross -s|-c ADDR PORT\n");
		return 2;
	}
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	return argv[1][1] == 's' ? server(&sin) : client(&sin);
}
