/* SPDX-License-Identifier: MIT */
/*
 * The server child: listens once for esock and once for plain TCP on
 * 127.0.0.1 (ephemeral ports, announced over ctl together with its
 * registered memory), then serves one job at a time until told to quit:
 * accept, answer its part of the exchange, wait for the client's "finished"
 * on ctl, tear the connection down, say "done".  It dies with its parent
 * (PR_SET_PDEATHSIG) and when ctl closes, so it can never outlive a run.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tools/bench/bench.h"

struct srv {
	int ctl, tcp_l;
	struct esock_listener *ep_l;
	struct bench_mem mem;
};

static void serve_tcp(struct srv *v, const struct bench_job *j)
{
	int fd = tcp_accept1(v->tcp_l);

	if (j->kind == JOB_LAT)
		tcp_lat_server(fd, &v->mem, j);
	else
		tcp_bw_server(fd, &v->mem, j);
	ctl_get(v->ctl, &(uint8_t){ 0 }, 1);
	close(fd);
}

static void serve_ep(struct srv *v, const struct bench_job *j)
{
	struct bside s;

	bs_create(&s, &v->mem);
	if (j->kind == JOB_LAT && j->op == OP_SEND)
		bs_post_recv(&s, 0, v->mem.base, j->size);
	else if (j->kind == JOB_BW)
		ep_bw_server_prepare(&s, j);
	bs_accept(&s, v->ep_l, j);
	if (j->kind == JOB_LAT)
		ep_lat_server(&s, j);
	else
		ep_bw_server(&s, j);
	/* Passive roles (Reads) end here: the engine thread answered meanwhile. */
	ctl_get(v->ctl, &(uint8_t){ 0 }, 1);
	bs_destroy(&s);
}

void bench_server(int ctl, enum bench_cpus cpus, size_t max_size)
{
	struct srv v = { .ctl = ctl };
	struct bench_hello h = { 0 };
	struct bench_job j;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (cpus != CPUS_NONE)
		bench_pin(cpus == CPUS_SAME ? 0 : 1);
	bm_init(&v.mem, max_size);
	v.ep_l = bs_listen(&h.ep_port);
	v.tcp_l = tcp_listen_any(&h.tcp_port);
	h.addr = (uint64_t)(uintptr_t)v.mem.base;
	h.stag = v.mem.stag;
	ctl_put(ctl, &h, sizeof(h));
	for (;;) {
		ctl_get(ctl, &j, sizeof(j));
		if (j.kind == JOB_QUIT)
			break;
		/* A previous job may have left this job's tag at the polled octet. */
		v.mem.base[j.size - 1] = 0;
		if (j.tcp)
			serve_tcp(&v, &j);
		else
			serve_ep(&v, &j);
		ctl_put(ctl, &(uint8_t){ 1 }, 1);
	}
	esock_listener_close(v.ep_l);
	close(v.tcp_l);
	exit(0);
}
