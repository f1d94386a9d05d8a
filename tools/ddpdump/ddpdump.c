/* SPDX-License-Identifier: MIT */
/*
 * ddpdump: decode iWARP (MPA/DDP/RDMAP) traffic from pcap/pcapng files or a
 * live interface.  See ddpdump.1 for the options and the JSON field names.
 */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ddpdump/ddpdump.h"

static volatile sig_atomic_t stop;
static pcap_t *handle;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
	if (handle)
		pcap_breakloop(handle);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ddpdump [-r FILE | -i IFACE] [options] [BPF filter ...]\n"
		"  -r FILE          read a pcap/pcapng capture (.gz decompressed; - for stdin)\n"
		"  -i IFACE         capture live from IFACE\n"
		"  -p PORT          decode TCP port PORT as MPA even without start frames (repeatable)\n"
		"  --crc, --no-crc  with -p: assume CRC on/off (default off)\n"
		"  --markers        with -p: assume markers (needs the stream start)\n"
		"  --term-order O   Terminate bit order: auto (default), rfc, siw\n"
		"  -v               verbose: pad, CRC values, segment alignment per FPDU\n"
		"  -x               hex dump of each ULPDU\n"
		"  -T line|json     output format (default line; json: one object per line)\n"
		"  --stats          per-connection and total statistics at the end\n"
		"  -q               no per-FPDU output (use with --stats)\n"
		"  -h, --help       this text;  --version\n");
}

static int parse_args(int argc, char **argv, const char **src, bool *live, char *filter, size_t fcap)
{
	enum { O_CRC = 256, O_NOCRC, O_MARKERS, O_NOMARKERS, O_STATS, O_ORDER, O_VERSION };
	static const struct option lo[] = {
		{ "crc", no_argument, NULL, O_CRC }, { "no-crc", no_argument, NULL, O_NOCRC },
		{ "markers", no_argument, NULL, O_MARKERS }, { "no-markers", no_argument, NULL, O_NOMARKERS },
		{ "stats", no_argument, NULL, O_STATS }, { "term-order", required_argument, NULL, O_ORDER },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "r:i:p:vxT:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'r': *src = optarg; *live = false; break;
		case 'i': *src = optarg; *live = true; break;
		case 'p':
			if (opt.nports >= 16 || atoi(optarg) <= 0 || atoi(optarg) > 65535) {
				fprintf(stderr, "ddpdump: bad or too many -p ports: %s\n", optarg);
				return -1;
			}
			opt.ports[opt.nports++] = atoi(optarg);
			break;
		case 'v': opt.format = OUT_VERBOSE; break;
		case 'x': opt.hex = true; break;
		case 'T':
			if (strcmp(optarg, "json") && strcmp(optarg, "line")) {
				fprintf(stderr, "ddpdump: -T takes line or json\n");
				return -1;
			}
			opt.format = strcmp(optarg, "json") ? OUT_LINE : OUT_JSON;
			break;
		case 'q': opt.quiet = true; break;
		case O_CRC: opt.assume_crc = 1; break;
		case O_NOCRC: opt.assume_crc = 0; break;
		case O_MARKERS: opt.assume_markers = 1; break;
		case O_NOMARKERS: opt.assume_markers = 0; break;
		case O_STATS: opt.stats = true; break;
		case O_ORDER:
			if (!strcmp(optarg, "rfc")) opt.term_order = ESOCK_RDMAP_TERM_RFC;
			else if (!strcmp(optarg, "siw")) opt.term_order = ESOCK_RDMAP_TERM_SIW;
			else if (!strcmp(optarg, "auto")) opt.term_order = ESOCK_RDMAP_TERM_AUTO;
			else { fprintf(stderr, "ddpdump: --term-order takes auto, rfc or siw\n"); return -1; }
			break;
		case O_VERSION: printf("ddpdump (esock) %s\n", esock_version()); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	filter[0] = '\0';
	for (int i = optind; i < argc; i++) {
		if (strlen(filter) + strlen(argv[i]) + 2 > fcap) {
			fprintf(stderr, "ddpdump: filter expression too long\n");
			return -1;
		}
		if (filter[0])
			strcat(filter, " ");
		strcat(filter, argv[i]);
	}
	if (!*src) {
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE] = "", filter[4096];
	const char *src = NULL;
	bool live = false;
	int rc;

	opt.out = stdout;
	if (parse_args(argc, argv, &src, &live, filter, sizeof(filter)) < 0)
		return 2;
	handle = capture_open(src, live, filter, err);
	if (!handle) {
		fprintf(stderr, "ddpdump: %s\n", err);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	rc = ddpdump_process(handle);
	if (rc == PCAP_ERROR)
		fprintf(stderr, "ddpdump: %s: %s (decoded what came before)\n", src, pcap_geterr(handle));
	flows_finish();
	if (opt.stats)
		flows_print_stats();
	pcap_close(handle);
	return rc == PCAP_ERROR ? 1 : 0;
}
