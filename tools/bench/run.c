/* SPDX-License-Identifier: MIT */
/*
 * The endpoint benchmark's client side and its schedule.  For each CPU
 * placement a fresh client process is forked (threads inherit the CPU mask
 * they are created with, and the library's engine thread is created once per
 * process), which forks the server, then walks CRC x markers x {latency,
 * bandwidth} x op x size.  Each cell measures raw TCP first and the endpoint
 * right after, with the same message count, and prints one row per figure.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <esock/wire.h>

#include "tools/bench/bench.h"

#define LAT_BYTES (512.0 * 1024 * 1024) /* caps round trips of large messages */
#define CALIB_BYTES (16.0 * 1024 * 1024)

struct client {
	const struct bench_opts *o;
	enum bench_cpus cpus;
	int ctl;
	struct bench_hello h;
	struct bench_mem mem;
};

/* Runs one job on both sides; latency fills |rtt|, bandwidth returns MB/s. */
static double run_job(struct client *c, struct bench_job *j, double *rtt)
{
	double mbs = 0;

	j->peer_addr = (uint64_t)(uintptr_t)c->mem.base;
	j->peer_stag = c->mem.stag;
	c->mem.base[j->size - 1] = 0; /* the octet the Write ping-pong polls */
	ctl_put(c->ctl, j, sizeof(*j));
	if (j->tcp) {
		int fd = tcp_connect_lo(c->h.tcp_port);

		if (j->kind == JOB_LAT)
			tcp_lat_client(fd, &c->mem, j, rtt);
		else
			mbs = tcp_bw_client(fd, &c->mem, j);
		ctl_put(c->ctl, &(uint8_t){ 0 }, 1);
		ctl_get(c->ctl, &(uint8_t){ 0 }, 1);
		close(fd);
		return mbs;
	}
	struct bside s;

	bs_create(&s, &c->mem);
	if (j->kind == JOB_LAT && j->op == OP_SEND)
		bs_post_recv(&s, 0, c->mem.base, j->size);
	else if (j->kind == JOB_BW)
		ep_bw_client_prepare(&s, j);
	bs_connect(&s, c->h.ep_port, j);
	if (j->kind == JOB_LAT)
		ep_lat_client(&s, j, &c->h, rtt);
	else
		mbs = ep_bw_client(&s, j, &c->h);
	ctl_put(c->ctl, &(uint8_t){ 0 }, 1);
	ctl_get(c->ctl, &(uint8_t){ 0 }, 1);
	bs_destroy(&s);
	return mbs;
}

static void row(const struct client *c, const struct bench_job *j, const char *test, uint64_t n,
		double ev, double tv, const char *unit)
{
	const char *cpus = bench_cpus_name(c->cpus);

	/* (CSV: significant digits, so that a tiny figure of a loaded machine never reads 0.) */
	if (c->o->csv)
		printf("%s,%s,%zu,%s,%s,%s,%llu,%.6g,%.6g,%s,%.4g\n", test, bench_op_name(j->op),
		       (size_t)j->size, j->crc ? "on" : "off", j->markers ? "on" : "off", cpus,
		       (unsigned long long)n, ev, tv, unit, tv > 0 ? ev / tv : 0.0);
	else
		printf("%-7s %-5s %9zu %-3s %-7s %-9s %8llu %10.2f %10.2f %-4s %6.3f\n", test,
		       bench_op_name(j->op), (size_t)j->size, j->crc ? "on" : "off",
		       j->markers ? "on" : "off", cpus, (unsigned long long)n, ev, tv, unit,
		       tv > 0 ? ev / tv : 0.0);
	fflush(stdout);
}

static void lat_cell(struct client *c, struct bench_job j)
{
	uint64_t n = (uint64_t)c->o->iters, cap = (uint64_t)(LAT_BYTES / (double)j.size);
	uint64_t warm;
	double *t_tcp, *t_ep;

	n = n < cap ? n : (cap > 20 ? cap : 20);
	warm = n / 10 + 1;
	j.kind = JOB_LAT;
	j.count = n + warm;
	t_tcp = calloc(j.count, sizeof(double));
	t_ep = calloc(j.count, sizeof(double));
	if (!t_tcp || !t_ep)
		bench_die("out of memory");
	j.tcp = 1;
	if (c->o->only != 2)
		run_job(c, &j, t_tcp);
	j.tcp = 0;
	if (c->o->only != 1)
		run_job(c, &j, t_ep);
	bench_sort(t_tcp + warm, n);
	bench_sort(t_ep + warm, n);
	row(c, &j, "lat_p50", n, bench_pct(t_ep + warm, n, 50), bench_pct(t_tcp + warm, n, 50), "us");
	row(c, &j, "lat_p99", n, bench_pct(t_ep + warm, n, 99), bench_pct(t_tcp + warm, n, 99), "us");
	free(t_tcp);
	free(t_ep);
}

/* A short TCP run sizes the cell to about o->seconds; both transports then move the same. */
static void bw_cell(struct client *c, struct bench_job j)
{
	double calib = CALIB_BYTES / (double)j.size, mbs, secs, tcp, ep;

	j.kind = JOB_BW;
	j.tcp = 1;
	j.count = (uint64_t)(calib < 4 ? 4 : calib > 20000 ? 20000 : calib);
	mbs = run_job(c, &j, NULL);
	secs = (double)j.count * (double)j.size / (mbs * 1e6);
	calib = (double)j.count * c->o->seconds / secs;
	j.count = (uint64_t)(calib < 8 ? 8 : calib > 5e6 ? 5e6 : calib);
	tcp = c->o->only == 2 ? 0 : run_job(c, &j, NULL);
	j.tcp = 0;
	ep = c->o->only == 1 ? 0 : run_job(c, &j, NULL);
	row(c, &j, "bw", j.count, ep, tcp, "MB/s");
}

static void run_cells(struct client *c, int crc, int markers)
{
	const struct bench_opts *o = c->o;
	struct bench_job j = { .crc = crc, .markers = markers, .window = o->window, .pack = o->pack,
				.think_us = o->think_us };

	for (int op = 0; op < OP_COUNT && o->lat; op++)
		for (int i = 0; i < o->nlat && (o->ops & (1u << op)); i++) {
			j.op = op;
			j.size = o->lat_sizes[i];
			lat_cell(c, j);
		}
	for (int op = 0; op < OP_COUNT && o->bw; op++)
		for (int i = 0; i < o->nbw && (o->ops & (1u << op)); i++) {
			j.op = op;
			j.size = o->bw_sizes[i];
			bw_cell(c, j);
		}
}

static size_t max_size(const struct bench_opts *o)
{
	size_t m = 64;

	for (int i = 0; i < o->nlat && o->lat; i++)
		m = o->lat_sizes[i] > m ? o->lat_sizes[i] : m;
	for (int i = 0; i < o->nbw && o->bw; i++)
		m = o->bw_sizes[i] > m ? o->bw_sizes[i] : m;
	return m;
}

/* Stops the server by its PID: it should leave on QUIT, else it is killed. */
static void stop_server(pid_t pid)
{
	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	fprintf(stderr, "esock-bench: server %d did not quit, killing it\n", (int)pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* One placement, in its own process: pin, fork the server, run every cell. */
static void client_main(const struct bench_opts *o, enum bench_cpus cpus)
{
	struct client c = { .o = o, .cpus = cpus };
	struct bench_job quit = { .kind = JOB_QUIT };
	int sv[2];
	pid_t pid;

	if (cpus != CPUS_NONE)
		bench_pin(0);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		bench_die("socketpair failed");
	fflush(stdout);
	if ((pid = fork()) < 0)
		bench_die("fork failed");
	if (pid == 0) {
		close(sv[0]);
		/* (read at the first endpoint object, which each process makes after this fork) */
		if (o->backend[1])
			setenv("ESOCK_BACKEND", o->backend[1], 1);
		bench_server(sv[1], cpus, max_size(o));
	}
	if (o->backend[0])
		setenv("ESOCK_BACKEND", o->backend[0], 1);
	bench_set_child(pid);
	close(sv[1]);
	c.ctl = sv[0];
	bm_init(&c.mem, max_size(o));
	ctl_get(c.ctl, &c.h, sizeof(c.h));
	for (int a = 0; a < o->ncrc; a++)
		for (int b = 0; b < o->nmarkers; b++)
			run_cells(&c, o->crc[a], o->markers[b]);
	ctl_put(c.ctl, &quit, sizeof(quit));
	stop_server(pid);
	exit(0);
}

int bench_endpoint(const struct bench_opts *o)
{
	int failed = 0;

	char machine[256];

	signal(SIGPIPE, SIG_IGN); /* a vanished peer is an error return, not a silent death */
	bench_machine(machine, sizeof(machine));
	if (o->csv)
		printf("test,op,size,crc,markers,placement,iters,esock_value,tcp_value,unit,ratio\n");
	else
		printf("# esock %s endpoint vs kernel TCP on 127.0.0.1; latency: round trip in us "
		       "(p50, p99%s%.0d%s), bandwidth: MB/s; ratio = esock/TCP\n# %s\n"
		       "%-7s %-5s %9s %-3s %-7s %-9s %8s %10s %10s %-4s %6s\n",
		       esock_version(), o->think_us ? "; the server works " : "", o->think_us,
		       o->think_us ? " us per answer" : "", machine, "test", "op", "size", "crc", "markers", "placement", "iters",
		       "esock", "tcp", "unit", "ratio");
	fflush(stdout);
	for (int i = 0; i < o->ncpus; i++) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			bench_die("fork failed");
		if (pid == 0)
			client_main(o, o->cpus[i]);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	return failed;
}
