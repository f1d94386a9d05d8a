/* SPDX-License-Identifier: MIT */
/*
 * iwping: an rping-compatible client and server over the esock endpoint.
 * This file holds the command line: rping's options with rping's defaults,
 * limits and exit codes, so that scripts written for rping run unchanged,
 * plus a few long options of ours for the MPA connection (CRC, markers, peer
 * profile).  The exchange itself is in ping.c, the resources in conn.c.
 *
 *   iwping -s [-vVdP] [-S size] [-C count] [-a addr] [-p port]
 *   iwping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
 */
#include "config.h"

#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/iwping/iwping.h"
#include "util/log.h"

/* rping prints its debug lines on stdout, between the ping data. */
void iwping_dbg(const struct iwping_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->debug)
		return;
	flockfile(stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	funlockfile(stdout);
}

static void usage(void)
{
	printf("iwping -s [-vVdP] [-S size] [-C count] [-a addr] [-p port] [long options]\n"
	       "iwping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port] [long options]\n"
	       "\t-c\t\tclient side\n"
	       "\t-s\t\tserver side; -a ::0 binds to any IPv6 address\n"
	       "\t-a addr\t\taddress to connect to (client) or to bind to (server)\n"
	       "\t-p port\t\tport (default %d; 0 on the server: any, printed)\n"
	       "\t-C count\tping count (default 0: until the peer goes away)\n"
	       "\t-S size\t\tping data size, %d to %d (default %d)\n"
	       "\t-v\t\tdisplay ping data\n"
	       "\t-V\t\tvalidate ping data\n"
	       "\t-d\t\tdebug output (twice: the esock library's too)\n"
	       "\t-P\t\tpersistent server: serve any number of clients\n"
	       "\t-I addr\t\tsource address (accepted; the kernel chooses it)\n"
	       "\t-q\t\taccepted for rping compatibility (QPs are always our own)\n"
	       "\t--crc, --no-crc\task for MPA CRC or not (default: the peer profile's)\n"
	       "\t--markers\task the peer to send MPA markers\n"
	       "\t--peer NAME\tpeer profile (default $ESOCK_PEER or generic)\n",
	       IWPING_DEFAULT_PORT, IWPING_MIN_SIZE, IWPING_MAX_SIZE, IWPING_DEFAULT_SIZE);
}

/* Resolves |name| as rping does: the first address getaddrinfo gives. */
static int get_addr(const char *name, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo *res;
	int r = getaddrinfo(name, NULL, NULL, &res);

	if (r) {
		fprintf(stderr, "iwping: %s: %s\n", name, gai_strerror(r));
		return -1;
	}
	r = -1;
	if (res->ai_family == AF_INET || res->ai_family == AF_INET6) {
		memcpy(ss, res->ai_addr, res->ai_addrlen);
		*len = res->ai_addrlen;
		r = 0;
	}
	freeaddrinfo(res);
	if (r)
		fprintf(stderr, "iwping: %s: not an IPv4 or IPv6 address\n", name);
	return r;
}

static void set_port(struct iwping_opts *o, uint16_t port)
{
	if (o->addr.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&o->addr)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)&o->addr)->sin_port = htons(port);
}

static int check_size(struct iwping_opts *o, const char *arg)
{
	o->size = atoi(arg);
	if (o->size >= IWPING_MIN_SIZE && o->size <= IWPING_MAX_SIZE)
		return 0;
	fprintf(stderr, "iwping: invalid size %s (valid range is %d to %d)\n", arg, IWPING_MIN_SIZE,
		IWPING_MAX_SIZE);
	return -1;
}

static int check_count(struct iwping_opts *o, const char *arg)
{
	o->count = atoi(arg);
	if (o->count >= 0)
		return 0;
	fprintf(stderr, "iwping: invalid count %s\n", arg);
	return -1;
}

enum { OPT_CRC = 0x100, OPT_NO_CRC, OPT_MARKERS, OPT_PEER, OPT_HELP };

static const struct option long_opts[] = {
	{ "crc", no_argument, NULL, OPT_CRC },
	{ "no-crc", no_argument, NULL, OPT_NO_CRC },
	{ "markers", no_argument, NULL, OPT_MARKERS },
	{ "peer", required_argument, NULL, OPT_PEER },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* One option; returns 0, or the exit code when parsing must stop. */
static int parse_opt(struct iwping_opts *o, int c, int *port)
{
	struct sockaddr_storage src;
	socklen_t srclen;

	switch (c) {
	case 's': o->role = 1; return 0;
	case 'c': o->role = 0; return 0;
	case 'a': return get_addr(optarg, &o->addr, &o->addrlen) ? IWPING_EXIT_FAIL : 0;
	case 'p': *port = (uint16_t)atoi(optarg); return 0;
	case 'C': return check_count(o, optarg) ? IWPING_EXIT_USAGE : 0;
	case 'S': return check_size(o, optarg) ? IWPING_EXIT_USAGE : 0;
	case 'v': o->verbose++; return 0;
	case 'V': o->validate++; return 0;
	case 'd': o->debug++; return 0;
	case 'P': o->persistent = true; return 0;
	case 'q': return 0;
	case 'I':
		if (get_addr(optarg, &src, &srclen))
			return IWPING_EXIT_FAIL;
		fprintf(stderr, "iwping: -I %s: source address not bound; the kernel chooses it\n",
			optarg);
		return 0;
	case OPT_CRC: o->param.crc = 1; return 0;
	case OPT_NO_CRC: o->param.crc = -1; return 0;
	case OPT_MARKERS: o->param.markers = true; return 0;
	case OPT_PEER: o->param.peer = optarg; return 0;
	case OPT_HELP: usage(); return -1;
	default: usage(); return IWPING_EXIT_USAGE;
	}
}

/* rping's defaults: port 7174, 64 octets, any IPv4 address, count 0. */
static int parse_args(struct iwping_opts *o, int argc, char **argv)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&o->addr;
	int c, r, port = IWPING_DEFAULT_PORT;

	memset(o, 0, sizeof(*o));
	o->role = -1;
	o->size = IWPING_DEFAULT_SIZE;
	sin->sin_family = AF_INET;
	o->addrlen = sizeof(*sin);
	/* param.crc and param.p2p stay 0: the peer profile's choice. */
	o->param.ird = o->param.ord = 1; /* rping's responder resources and initiator depth */
	while ((c = getopt_long(argc, argv, "a:I:Pp:C:S:scvVdq", long_opts, NULL)) != -1) {
		r = parse_opt(o, c, &port);
		if (r)
			return r;
	}
	if (o->role < 0) { /* like rping, operands after the options are ignored */
		usage();
		return IWPING_EXIT_USAGE;
	}
	set_port(o, (uint16_t)port);
	return 0;
}

int main(int argc, char **argv)
{
	struct iwping_opts o;
	int r = parse_args(&o, argc, argv);

	if (r)
		return r < 0 ? 0 : r;
	if (o.debug > 1)
		esock_log_set(ESOCK_LOG_DEBUG, NULL);
	iwping_dbg(&o, "%s, size %d, count %d%s", o.role ? "server" : "client", o.size, o.count,
		   o.persistent ? ", persistent" : "");
	r = o.role ? iwping_run_server(&o) : iwping_run_client(&o);
	fflush(stdout);
	return r ? IWPING_EXIT_FAIL : 0;
}
