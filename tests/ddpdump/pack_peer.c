/* SPDX-License-Identifier: MIT */
/*
 * pack_peer PORT pack|align: the endpoint on both ends of 127.0.0.1:PORT for
 * ddpdump's live capture of FPDU packing.  A forked server accepts; both ends
 * announce themselves in their private data and ask for esock_conn_param.pack
 * ("pack") or not ("align"); the client posts 32 Sends of 200 octets as one
 * WR list and the server checks that every one arrived, in order and intact.
 * Exits 0 when they did.  live.sh reads the capture: packed, the Sends share
 * segments; aligned, each starts one (RFC 5044 §4.5).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <esock/iwarp.h>

enum { N = 32, SZ = 200, WAIT_MS = 5000 };

static const char announce[] = "pack_peer";

static bool peer_announced(void *arg, const struct esock_conn_info *info)
{
	(void)arg;
	return info->private_data_len == sizeof(announce) &&
	       memcmp(info->private_data, announce, sizeof(announce)) == 0;
}

struct side {
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	struct esock_mr *mr;
};

static int side_init(struct side *s, void *buf, size_t len)
{
	struct esock_qp_attr a = { .sq_depth = N, .rq_depth = N, .max_sge = 1 };

	if (esock_pd_alloc(&s->pd) < 0 || esock_cq_create(2 * N, &s->cq) < 0)
		return -1;
	a.pd = s->pd;
	a.send_cq = a.recv_cq = s->cq;
	return esock_qp_create(&a, &s->qp) < 0 ||
	       esock_mr_reg(s->pd, buf, len, ESOCK_ACCESS_LOCAL_WRITE, 0, &s->mr) < 0 ? -1 : 0;
}

static void fill(uint8_t *p)
{
	for (int i = 0; i < N * SZ; i++)
		p[i] = (uint8_t)(i * 13 + i / SZ);
}

/* Waits for |n| completions, all successful. */
static int reap(struct side *s, int n)
{
	struct esock_wc wc[N];

	while (n > 0) {
		int k = esock_cq_wait(s->cq, n < N ? n : N, wc, WAIT_MS);

		if (k <= 0)
			return -1;
		for (int i = 0; i < k; i++)
			if (wc[i].status != ESOCK_WC_SUCCESS)
				return -1;
		n -= k;
	}
	return 0;
}

static int server(struct esock_listener *l, const struct esock_conn_param *cp)
{
	static uint8_t buf[N * SZ], want[N * SZ];
	struct esock_conn_req *req;
	struct side s;

	if (side_init(&s, buf, sizeof(buf)) < 0)
		return 1;
	for (int i = 0; i < N; i++) {
		struct esock_sge sge = { (uint64_t)(uintptr_t)(buf + i * SZ), SZ, esock_mr_stag(s.mr) };
		struct esock_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };

		if (esock_post_recv(s.qp, &wr, NULL) < 0)
			return 1;
	}
	if (esock_get_request(l, &req, WAIT_MS) < 0 || esock_accept(req, s.qp, cp) < 0 || reap(&s, N) < 0)
		return 1;
	fill(want);
	if (memcmp(buf, want, sizeof(buf)) != 0)
		return 1;
	esock_qp_disconnect(s.qp);
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t data[N * SZ];
	struct esock_conn_param cp = { .private_data = announce, .private_data_len = sizeof(announce),
				       .peer_agrees = peer_announced };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct esock_send_wr wr[N];
	struct esock_sge sge[N];
	struct esock_listener *l;
	struct side s;
	int status, rc = 0;
	pid_t pid;

	if (argc < 3 || (strcmp(argv[2], "pack") != 0 && strcmp(argv[2], "align") != 0)) {
		fprintf(stderr, "usage: pack_peer PORT pack|align\n");
		return 2;
	}
	cp.pack = strcmp(argv[2], "pack") == 0;
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (esock_listen((struct sockaddr *)&sa, sizeof(sa), 1, &l) < 0) {
		perror("pack_peer: listen");
		return 1;
	}
	pid = fork();
	if (pid == 0)
		_exit(server(l, &cp));
	esock_listener_close(l);
	fill(data);
	if (side_init(&s, data, sizeof(data)) < 0 ||
	    esock_qp_connect(s.qp, (struct sockaddr *)&sa, sizeof(sa), &cp) < 0) {
		fprintf(stderr, "pack_peer: connect failed\n");
		rc = 1;
	} else {
		for (int i = 0; i < N; i++) {
			sge[i] = (struct esock_sge){ (uint64_t)(uintptr_t)(data + i * SZ), SZ, esock_mr_stag(s.mr) };
			wr[i] = (struct esock_send_wr){ .wr_id = (uint64_t)i, .sg_list = &sge[i], .num_sge = 1,
							.opcode = ESOCK_WR_SEND, .send_flags = ESOCK_SEND_SIGNALED,
							.next = i + 1 < N ? &wr[i + 1] : NULL };
		}
		if (esock_post_send(s.qp, wr, NULL) < 0 || reap(&s, N) < 0)
			rc = 1;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = 1;
	return rc;
}
