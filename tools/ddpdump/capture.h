/* SPDX-License-Identifier: MIT */
/*
 * Packet input for ddpdump: pcap/pcapng files (gzip-compressed too) and live
 * interfaces through libpcap, and the link/IP/TCP parsing that turns a frame
 * into a TCP segment (Ethernet with VLAN tags, Linux cooked SLL and SLL2,
 * BSD loopback/NULL, raw IP; IPv4 and IPv6).
 */
#ifndef DDPDUMP_CAPTURE_H
#define DDPDUMP_CAPTURE_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>

/* One TCP segment as captured. */
struct tcp_seg {
	double ts;             /* seconds */
	int af;                /* AF_INET or AF_INET6 */
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;         /* TH_SYN, TH_FIN, TH_RST, ... */
	const uint8_t *data;   /* TCP payload (borrowed from the frame) */
	uint32_t len;          /* payload octets present */
	uint32_t wire_len;     /* payload octets on the wire (> len when snaplen cut) */
};

#define TCPF_FIN 0x01
#define TCPF_SYN 0x02
#define TCPF_RST 0x04

enum parse_result {
	PARSE_OK = 0,
	PARSE_NOT_TCP,     /* another protocol: ignored */
	PARSE_TRUNCATED,   /* headers cut by the snaplen */
	PARSE_BAD,         /* malformed headers */
};

/*
 * Opens |path| ("-" for stdin; a .gz file is decompressed on the fly) or,
 * with |live|, the interface |path|.  |filter| is a BPF expression or NULL.
 * Returns the handle or NULL with a message in |err| (PCAP_ERRBUF_SIZE).
 */
pcap_t *capture_open(const char *path, bool live, const char *filter, char *err);

/* True when ddpdump can parse frames of |dlt|. */
bool capture_dlt_supported(int dlt);

/* Parses one frame of link type |dlt| into |seg|. */
enum parse_result capture_parse(int dlt, const struct pcap_pkthdr *h, const uint8_t *frame,
				struct tcp_seg *seg);

#endif
