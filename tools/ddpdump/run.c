/* SPDX-License-Identifier: MIT */
/* ddpdump's options and packet loop, shared by the program and its fuzz target. */
#include "config.h"

#include "tools/ddpdump/ddpdump.h"

struct options opt = { .assume_crc = -1, .assume_markers = -1, .term_order = ESOCK_RDMAP_TERM_AUTO };

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *frame)
{
	int dlt = *(int *)user;
	struct tcp_seg s;
	enum parse_result r = capture_parse(dlt, h, frame, &s);
	static unsigned long truncated_notes;

	if (r == PARSE_OK) {
		flows_segment(&s);
	} else if (r == PARSE_TRUNCATED && truncated_notes++ < 10 && !opt.quiet) {
		fprintf(opt.out, "-- frame of %u octets cut to %u by the snaplen before its TCP header: skipped\n",
			h->len, h->caplen);
	}
}

int ddpdump_process(pcap_t *handle)
{
	int dlt = pcap_datalink(handle);

	return pcap_loop(handle, -1, on_packet, (u_char *)&dlt);
}
