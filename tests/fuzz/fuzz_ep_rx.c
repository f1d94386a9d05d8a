/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the endpoint's whole receive path (endpoint/ep_rx.c: MPA
 * header-first parsing, DDP/RDMAP checks, placement straight into targets,
 * Read Requests, Terminates) fed from a socket.  The first input octet sets
 * CRC, markers and whether the QP is a responder; the rest is the peer's
 * byte stream after the start frames.  Three regions (remote write, remote
 * read, local write only) live at fixed addresses so that inputs can name
 * them: STags 0x100, 0x200, 0x300, TO 0x10000040.. (see REGION_VA).
 * Properties: no sanitizer report, the guard zones around every region and
 * receive buffer never change, the local-only and remote-read regions never
 * change, and the QP ends in error or still healthy, never stuck.
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
int ep_rx_init(struct esock_qp *qp);

#define G 64
#define RLEN 4096
#define REGION_VA 0x10000000ul
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

	mem = mmap((void *)REGION_VA, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (mem == MAP_FAILED)
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || esock_pd_alloc(&pd) < 0 || esock_cq_create(4096, &cq) < 0)
		abort();
	for (int i = 0; i < NREG; i++) {
		memset(region(i), 0xa0 + i, G + RLEN + G);
		if (esock_mr_reg(pd, region(i) + G, RLEN, acc[i], 0, &mr[i]) < 0)
			abort();
	}
}

/* Receives into the local-only region (its guards are watched too). */
static void post_recvs(struct esock_qp *qp, int n)
{
	for (int i = 0; i < n; i++) {
		struct esock_sge sge = { (uint64_t)(uintptr_t)(region(2) + G + (i % 2) * 256), 256,
					 esock_mr_stag(mr[2]) };
		struct esock_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };

		esock_post_recv(qp, &wr, NULL);
	}
}

/* A QP on one end of a socketpair, as ep_qp_start leaves it but without the engine. */
static struct esock_qp *qp_open(uint8_t flags, int fd)
{
	struct esock_qp_attr a = { .pd = pd, .send_cq = cq, .recv_cq = cq, .max_sge = 2 };
	struct esock_qp *qp;

	if (esock_qp_create(&a, &qp) < 0)
		abort();
	qp->fd = fd;
	qp->prof = ep_profile_find("generic");
	qp->info.crc = flags & 1;
	qp->info.markers_rx = flags & 2;
	qp->info.ird = qp->info.ord = 2;
	qp->mulpdu = 1024;
	qp->tx_pos = 0;
	if (ep_qp_reads_init(qp) < 0 || ep_rx_init(qp) < 0)
		abort();
	for (int q = 0; q < 3; q++)
		qp->msn_tx[q] = qp->msn_rx[q] = 1;
	qp->tx_hold = flags & 4;
	qp->rx_wait = flags & 8; /* Sends without a buffer wait instead of failing */
	qp->half_close = flags & 16; /* EOF between FPDUs ends receiving only */
	atomic_store(&qp->state, ESOCK_QPS_RTS);
	post_recvs(qp, 2);
	return qp;
}

static void check_memory(void)
{
	for (int i = 0; i < NREG; i++) {
		for (int k = 0; k < G; k++)
			if (region(i)[k] != snap[i][k] || region(i)[G + RLEN + k] != snap[i][G + RLEN + k])
				abort(); /* a guard changed */
	}
	/* The remote-read region is never written. */
	if (memcmp(region(1), snap[1], sizeof(snap[1])))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct esock_wc wc[64];
	struct esock_qp *qp;
	uint8_t sink[4096];
	int sv[2];

	if (!mem)
		setup();
	if (size < 1 || size > 60000 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	for (int i = 0; i < NREG; i++) {
		memcpy(snap[i], region(i), sizeof(snap[i]));
		esock_mr_rekey(mr[i], 0); /* undo an earlier input's Send with Invalidate */
	}
	qp = qp_open(data[0], sv[0]);
	if (size > 1 && write(sv[1], data + 1, size - 1) != (ssize_t)(size - 1))
		abort();
	shutdown(sv[1], SHUT_WR);
	ep_qp_progress(qp, EP_WANT_RX | EP_WANT_DRAIN | EP_WANT_TX);
	/* A Send waiting for a buffer resumes when one is posted (each call posts two). */
	for (int i = 0; i < 2000 && atomic_load(&qp->rx_paused); i++)
		post_recvs(qp, 2);
	/* EOF came after the input: the QP cannot still be waiting for more. */
	if (esock_qp_state(qp) != ESOCK_QPS_ERROR && !(qp->half_close && atomic_load(&qp->rx_eof)))
		abort();
	while (read(sv[1], sink, sizeof(sink)) > 0)
		;
	check_memory();
	while (esock_cq_poll(cq, 64, wc) > 0)
		;
	esock_qp_destroy(qp);
	close(sv[1]);
	return 0;
}
