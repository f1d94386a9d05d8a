/* SPDX-License-Identifier: MIT */
/*
 * Synthesises pcap captures of TCP connections (Ethernet / IPv4 / TCP, with
 * handshake, MSS segmentation, ACKs and FIN) from byte streams, so that an
 * independent decoder (tshark) can read what our encoders produce.  Test-only
 * code; the addresses are documentation addresses that never leave the file.
 */
#ifndef ESOCK_TESTS_PCAP_SYNTH_H
#define ESOCK_TESTS_PCAP_SYNTH_H

#include <stddef.h>
#include <stdint.h>

struct synth;

enum synth_dir { SYNTH_C2S = 0, SYNTH_S2C = 1 };

/* Damage for ddpdump tests, applied to one data segment. */
enum synth_fault {
	SYNTH_NONE = 0,
	SYNTH_DROP,  /* lost: never captured */
	SYNTH_DUP,   /* captured twice (a retransmission) */
	SYNTH_SWAP,  /* captured after the next segment */
	SYNTH_FLIP,  /* one bit flipped in the middle */
};

struct synth_conn {
	struct synth *cap;
	enum synth_fault fault;
	unsigned fault_at;  /* data segment index (from the call to synth_fault) */
	unsigned nseg;
	uint32_t ip[2];     /* [client, server] */
	uint16_t port[2];
	uint32_t seq[2];    /* next sequence number per direction */
	uint32_t isn[2];
	uint16_t mss;
};

/* Opens |path| for writing; returns NULL and prints the reason on failure. */
struct synth *synth_open(const char *path);

/* Link and network variants (for decoder tests). */
enum synth_link {
	SYNTH_ETH = 0,   /* Ethernet II */
	SYNTH_VLAN,      /* Ethernet with an 802.1Q tag */
	SYNTH_SLL,       /* Linux cooked v1 */
	SYNTH_SLL2,      /* Linux cooked v2 */
	SYNTH_NULL,      /* BSD loopback (host-order family) */
	SYNTH_RAW,       /* raw IP */
};
/* Like synth_open with another link type and IPv6 (2001:db8::1/2) if |ipv6|. */
struct synth *synth_open_link(const char *path, enum synth_link link, int ipv6);
/* Flushes and closes; returns 0 or -1. */
int synth_close(struct synth *s);

/* Starts a connection (writes SYN, SYN-ACK, ACK).  |id| picks distinct
 * ports; |mss| caps payload per segment. */
void synth_conn_open(struct synth *s, struct synth_conn *c, unsigned id, uint16_t mss);
/* Sends |len| octets in direction |dir|, cut into segments of at most
 * |mss| (the peer acknowledges each). */
void synth_send(struct synth_conn *c, enum synth_dir dir, const void *data, size_t len);
/* Damages the |at|-th data segment sent from now on (0 = the next one). */
void synth_fault(struct synth_conn *c, enum synth_fault kind, unsigned at);
/* Frames are cut to |snaplen| octets from now on (0: no cut). */
void synth_set_snaplen(struct synth *s, uint32_t snaplen);

/* Ends the connection with FIN/ACK in both directions. */
void synth_conn_close(struct synth_conn *c);

#endif
