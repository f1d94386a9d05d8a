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

struct synth_conn {
	struct synth *cap;
	uint32_t ip[2];     /* [client, server] */
	uint16_t port[2];
	uint32_t seq[2];    /* next sequence number per direction */
	uint32_t isn[2];
	uint16_t mss;
};

/* Opens |path| for writing; returns NULL and prints the reason on failure. */
struct synth *synth_open(const char *path);
/* Flushes and closes; returns 0 or -1. */
int synth_close(struct synth *s);

/* Starts a connection (writes SYN, SYN-ACK, ACK).  |id| picks distinct
 * ports; |mss| caps payload per segment. */
void synth_conn_open(struct synth *s, struct synth_conn *c, unsigned id, uint16_t mss);
/* Sends |len| octets in direction |dir|, cut into segments of at most
 * |mss| (the peer acknowledges each). */
void synth_send(struct synth_conn *c, enum synth_dir dir, const void *data, size_t len);
/* Ends the connection with FIN/ACK in both directions. */
void synth_conn_close(struct synth_conn *c);

#endif
