/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: ddpdump over a whole capture file (pcap or pcapng, read by
 * libpcap from memory), through link/IP/TCP parsing, reassembly, MPA
 * detection, resynchronisation, decoding, JSON output and statistics.
 * Properties: no crash, no sanitizer report, no leak (every flow is freed).
 * The first input octet picks decode-as ports and options.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tools/ddpdump/ddpdump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	char err[PCAP_ERRBUF_SIZE];
	FILE *f;
	pcap_t *p;

	if (size < 2)
		return 0;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	opt.out = devnull ? devnull : stdout;
	opt.format = (data[0] & 3) == 0 ? OUT_JSON : (data[0] & 3) == 1 ? OUT_VERBOSE : OUT_LINE;
	opt.hex = data[0] & 4;
	opt.nports = (data[0] & 8) ? 2 : 0;
	opt.ports[0] = 20000;
	opt.ports[1] = 20001;
	opt.assume_crc = (data[0] & 16) ? 1 : 0;
	opt.assume_markers = (data[0] & 32) ? 1 : 0;
	opt.stats = true;
	f = fmemopen((void *)(uintptr_t)(data + 1), size - 1, "rb");
	if (!f)
		return 0;
	p = pcap_fopen_offline(f, err); /* takes f */
	if (!p) {
		fclose(f);
		return 0;
	}
	if (capture_dlt_supported(pcap_datalink(p)))
		ddpdump_process(p);
	flows_finish();
	flows_print_stats();
	flows_free_all();
	pcap_close(p);
	return 0;
}
