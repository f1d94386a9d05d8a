/* SPDX-License-Identifier: MIT */
/*
 * FPDU streams for oracle and ddpdump tests: MPA v2 setup, then every opcode
 * tshark knows in both directions, built by the project's encoders and
 * written into a synthetic capture, with the expected decoding of each FPDU.
 */
#ifndef ESOCK_TESTS_STREAMS_H
#define ESOCK_TESTS_STREAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <esock/wire.h>

#include "tests/oracle/pcap_synth.h"

#define MAXE 512
#define MSS 1448

/* What one FPDU should decode to. */
struct expect {
	unsigned stream;
	uint32_t ulen;
	uint32_t crc_wire;      /* the 4 CRC octets read big-endian (tshark's view) */
	bool crc;
	int tagged, last, opcode;
	uint32_t qn, msn, mo, stag;
	uint64_t to;
	int term_layer, term_etype, term_ecode;
	char markers[64];       /* FPDUPTR values, comma-separated */
};

extern struct expect ex[MAXE];
extern size_t nex;
extern unsigned ngood_crc;

struct side {
	struct esock_mpa_tx tx;
	uint32_t msn[4];
};

struct conn {
	struct synth_conn sc;
	struct side side[2];
	unsigned id;
	bool crc, markers;
	size_t mulpdu;
};

/* Starts connection |id| (SYN, MPA Request and Reply) with CRC/markers as given. */
void streams_open_conn(struct synth *cap, struct conn *c, unsigned id, bool crc, bool markers);
/* Sends one RDMAP message, segmented at the connection's MULPDU, TCP MSS |mss|. */
void streams_send_msg(struct conn *c, enum synth_dir dir, struct esock_rdmap_msg *m,
		      const uint8_t *payload, size_t len, uint16_t mss);
/* A whole connection carrying every opcode; appends to ex[]. */
void streams_run_conn(struct synth *cap, unsigned id, bool crc, bool markers);

#endif
