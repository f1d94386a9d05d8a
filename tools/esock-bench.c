/* SPDX-License-Identifier: MIT */
/*
 * esock-bench: the project's benchmarks, each measured next to a baseline
 * in the same run (the machines are shared and noisy: ratios are what
 * counts).  --codec times the MPA codec against memcpy (tools/bench/codec.c);
 * --lat and --bw time the endpoint (Send/Recv, RDMA Write, RDMA Read) against
 * raw kernel TCP between this process and a forked server on 127.0.0.1
 * (tools/bench/run.c).  This file only reads the options.
 */
#include "config.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"

static const char usage_text[] =
	"usage: esock-bench --codec [--seconds S] [--csv]\n"
	"       esock-bench --lat|--bw [options]   endpoint vs kernel TCP on 127.0.0.1\n"
	"  --ops LIST        send,write,read (default all)\n"
	"  --sizes LIST      message sizes for both, e.g. 64,4K,1M or 1..16M (powers of two)\n"
	"  --lat-sizes LIST  latency sizes (default 1,64,4K,64K,1M)\n"
	"  --bw-sizes LIST   bandwidth sizes (default 4K,64K,1M,16M)\n"
	"  --iters N         latency round trips per cell (default 10000; fewer for big sizes)\n"
	"  --seconds S       length of a bandwidth cell (default 0.5)\n"
	"  --window N        outstanding work requests for bandwidth (default 32)\n"
	"  --think US        latency: the server works US microseconds (busy) before each\n"
	"                    answer, as a server does per request (default 0)\n"
	"  --addr A          the endpoint's connections to and from IPv4 address A (default\n"
	"                    127.0.0.1; ESOCK_BACKEND=verbs on siw needs the netdev's)\n"
	"  --backends C/S    the client's and the server's backend (user|verbs|auto), e.g.\n"
	"                    user/verbs; default: both $ESOCK_BACKEND\n"
	"  --crc on|off|both, --markers on|off|both   (default CRC on, markers off)\n"
	"  --pack on|off     FPDUs of back-to-back messages share TCP segments, both ends\n"
	"                    having announced esock in the MPA exchange (default on; off:\n"
	"                    one message per segment, as towards an RNIC)\n"
	"  --cpus none|same|split|both   same: both processes on CPU 0; split: client 0, server 1\n"
	"  --only tcp|esock  run one transport's cells only (to profile it; ratio 0)\n"
	"  --csv             CSV: test,op,size,crc,markers,placement,iters,esock_value,tcp_value,unit,ratio\n"
	"ESOCK_ENGINE_CPU and ESOCK_POLL are read by the library (engine thread CPU, busy polling).\n";

static int usage(int rc)
{
	fputs(usage_text, rc ? stderr : stdout);
	return rc;
}

static int parse_onoff(const char *s, int *v, int *n)
{
	if (strcmp(s, "both") == 0) {
		v[0] = 1, v[1] = 0, *n = 2;
		return 0;
	}
	if (strcmp(s, "on") != 0 && strcmp(s, "off") != 0)
		return -1;
	v[0] = strcmp(s, "on") == 0, *n = 1;
	return 0;
}

static int parse_cpus(const char *s, struct bench_opts *o)
{
	o->ncpus = 1;
	if (strcmp(s, "none") == 0)
		o->cpus[0] = CPUS_NONE;
	else if (strcmp(s, "same") == 0)
		o->cpus[0] = CPUS_SAME;
	else if (strcmp(s, "split") == 0)
		o->cpus[0] = CPUS_SPLIT;
	else if (strcmp(s, "both") == 0)
		o->cpus[0] = CPUS_SAME, o->cpus[1] = CPUS_SPLIT, o->ncpus = 2;
	else
		return -1;
	return 0;
}

static int parse_ops(const char *s, unsigned *ops)
{
	char buf[64], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	*ops = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int op = strcmp(t, "send") == 0 ? OP_SEND : strcmp(t, "write") == 0 ? OP_WRITE
			: strcmp(t, "read") == 0 ? OP_READ : -1;

		if (op < 0)
			return -1;
		*ops |= 1u << op;
	}
	return *ops ? 0 : -1;
}

static void defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ops = (1u << OP_COUNT) - 1;
	o->nlat = bench_parse_sizes("1,64,4K,64K,1M", o->lat_sizes, BENCH_SIZES_MAX);
	o->nbw = bench_parse_sizes("4K,64K,1M,16M", o->bw_sizes, BENCH_SIZES_MAX);
	o->iters = 10000;
	o->window = 32;
	o->crc[0] = 1, o->ncrc = 1;
	o->markers[0] = 0, o->nmarkers = 1;
	o->pack = 1;
	o->cpus[0] = CPUS_NONE, o->ncpus = 1;
}

/* --backends C/S: each of user, verbs or auto. */
static int parse_backends(const char *arg, struct bench_opts *o)
{
	static const char *const names[] = { "user", "verbs", "auto" };
	const char *slash = strchr(arg, '/');

	if (!slash)
		return -1;
	for (int side = 0; side < 2; side++) {
		const char *b = side ? slash + 1 : arg;
		size_t n = side ? strlen(b) : (size_t)(slash - arg);
		int i;

		for (i = 0; i < 3; i++)
			if (n == strlen(names[i]) && strncmp(b, names[i], n) == 0)
				break;
		if (i == 3)
			return -1;
		o->backend[side] = names[i];
	}
	return 0;
}

/* One option; returns 0, or -1 when its argument is malformed. */
static int option(struct bench_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'c': o->codec = true; return 0;
	case 'v': o->csv = true; return 0;
	case 'l': o->lat = true; return 0;
	case 'b': o->bw = true; return 0;
	case 's': o->seconds = atof(arg); return o->seconds > 0 ? 0 : -1;
	case 'i': o->iters = atoi(arg); return o->iters > 0 ? 0 : -1;
	case 'w': o->window = atoi(arg); return o->window > 0 && o->window <= 256 ? 0 : -1;
	case 't': o->think_us = atoi(arg); return o->think_us >= 0 && o->think_us <= 1000000 ? 0 : -1;
	case 'o': return parse_ops(arg, &o->ops);
	case 'C': return parse_onoff(arg, o->crc, &o->ncrc);
	case 'M': return parse_onoff(arg, o->markers, &o->nmarkers);
	case 'k': return strcmp(arg, "on") == 0 ? (o->pack = 1, 0) : strcmp(arg, "off") == 0 ? (o->pack = 0, 0) : -1;
	case 'P': return parse_cpus(arg, o);
	case 'O': return strcmp(arg, "tcp") == 0 ? (o->only = 1, 0) : strcmp(arg, "esock") == 0 ? (o->only = 2, 0) : -1;
	case 'A': return inet_pton(AF_INET, arg, &bench_ep_addr) == 1 ? 0 : -1;
	case 'E': return parse_backends(arg, o);
	case 'S':
		o->nlat = o->nbw = bench_parse_sizes(arg, o->lat_sizes, BENCH_SIZES_MAX);
		memcpy(o->bw_sizes, o->lat_sizes, sizeof(o->bw_sizes));
		return o->nlat > 0 ? 0 : -1;
	case 'L': return (o->nlat = bench_parse_sizes(arg, o->lat_sizes, BENCH_SIZES_MAX)) > 0 ? 0 : -1;
	case 'B': return (o->nbw = bench_parse_sizes(arg, o->bw_sizes, BENCH_SIZES_MAX)) > 0 ? 0 : -1;
	default: return -1;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "codec", no_argument, NULL, 'c' }, { "seconds", required_argument, NULL, 's' },
		{ "csv", no_argument, NULL, 'v' }, { "lat", no_argument, NULL, 'l' },
		{ "bw", no_argument, NULL, 'b' }, { "ops", required_argument, NULL, 'o' },
		{ "sizes", required_argument, NULL, 'S' }, { "lat-sizes", required_argument, NULL, 'L' },
		{ "bw-sizes", required_argument, NULL, 'B' }, { "iters", required_argument, NULL, 'i' },
		{ "window", required_argument, NULL, 'w' }, { "crc", required_argument, NULL, 'C' },
		{ "markers", required_argument, NULL, 'M' }, { "cpus", required_argument, NULL, 'P' },
		{ "addr", required_argument, NULL, 'A' }, { "pack", required_argument, NULL, 'k' },
		{ "backends", required_argument, NULL, 'E' },
		{ "think", required_argument, NULL, 't' }, { "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	struct bench_opts o;
	int c;

	defaults(&o);
	while ((c = getopt_long(argc, argv, "cs:vh", opts, NULL)) != -1) {
		if (c == 'h')
			return usage(0);
		if (option(&o, c, optarg) < 0)
			return usage(2);
	}
	if (optind < argc || o.codec == (o.lat || o.bw))
		return usage(2);
	if (o.codec) {
		codec_run(o.csv, o.seconds > 0 ? o.seconds : 0.25);
		return 0;
	}
	if (o.seconds <= 0)
		o.seconds = 0.5;
	return bench_endpoint(&o);
}
