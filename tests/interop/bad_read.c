/* SPDX-License-Identifier: MIT */
/*
 * bad-read: an RDMA Read Request whose source STag the peer never gave out,
 * so that the peer must refuse it with a Terminate (RDMAP, remote
 * protection error, the Read Request's headers copied).  For the interop
 * proof of kpatch/linux's siw patches: siw detects this error while it
 * builds the Read Response and copies back a Read Request it reconstructs.
 *   bad-read ADDR PORT [SIZE]     (connects with the siw peer profile)
 * Exits 0 when the Read failed and a Terminate came back, 1 otherwise.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <esock/iwarp.h>
#include <esock/term.h>

#define BAD_STAG 0x00bad100u

static int fail(const char *what, int rc)
{
	fprintf(stderr, "bad-read: %s: %s\n", what, rc < 0 ? strerror(-rc) : "failed");
	return 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct esock_conn_param p = { .peer = "siw" };
	uint32_t size = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : 4096;
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_mr *mr;
	struct esock_wc wc;
	struct esock_qp_error e;
	void *buf;
	int rc;

	if (argc < 3 || inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1 || !size)
		return fprintf(stderr, "usage: bad-read ADDR PORT [SIZE]\n"), 2;
	sin.sin_port = htons((uint16_t)atoi(argv[2]));
	if (!(buf = calloc(1, size)))
		return fail("calloc", -12);
	if ((rc = esock_pd_alloc(&pd)) < 0 || (rc = esock_cq_create(16, &cq)) < 0)
		return fail("pd/cq", rc);
	if ((rc = esock_mr_reg(pd, buf, size, ESOCK_ACCESS_LOCAL_WRITE, 0, &mr)) < 0)
		return fail("esock_mr_reg", rc);
	if ((rc = esock_qp_create(&(struct esock_qp_attr){ .pd = pd, .send_cq = cq, .recv_cq = cq },
				  &qp)) < 0)
		return fail("esock_qp_create", rc);
	if ((rc = esock_qp_connect(qp, (struct sockaddr *)&sin, sizeof(sin), &p)) < 0)
		return fail("esock_qp_connect", rc);
	struct esock_sge sge = { .addr = (uintptr_t)buf, .length = size, .lkey = esock_mr_stag(mr) };
	struct esock_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				    .opcode = ESOCK_WR_RDMA_READ, .send_flags = ESOCK_SEND_SIGNALED,
				    .remote_addr = 0x1000, .rkey = BAD_STAG };
	if ((rc = esock_post_send(qp, &wr, NULL)) < 0)
		return fail("esock_post_send", rc);
	if ((rc = esock_cq_wait(cq, 1, &wc, 10000)) != 1)
		return fail("no completion for the Read", rc);
	printf("bad-read: the Read completed: %s\n", esock_wc_status_str(wc.status));
	if (wc.status == ESOCK_WC_SUCCESS)
		return 1;
	if ((rc = esock_qp_last_error(qp, &e)) < 0)
		return fail("no error recorded", rc);
	printf("bad-read: the QP ended: %s, %s Terminate: layer %u etype %u ecode 0x%02x (%s)\n",
	       strerror(-e.err), e.sent ? "sent" : "received", e.term.layer, e.term.etype,
	       e.term.ecode, e.term.valid ? "valid" : "none");
	if (e.sent || !e.term.valid)
		return fail("no Terminate from the peer", 0);
	esock_qp_destroy(qp);
	esock_mr_dereg(mr);
	esock_cq_destroy(cq);
	esock_pd_free(pd);
	free(buf);
	return 0;
}
