/* SPDX-License-Identifier: MIT */
/*
 * ddpdump's shared types: options, per-connection and per-direction decoding
 * state, statistics.  The wire format itself is decoded by the project's
 * codecs (<esock/wire.h>); ddpdump adds capture input, TCP reassembly, MPA
 * detection, resynchronisation and output.
 */
#ifndef DDPDUMP_H
#define DDPDUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <esock/wire.h>

#include "tools/ddpdump/capture.h"
#include "tools/ddpdump/tcp_reasm.h"

enum out_format { OUT_LINE, OUT_VERBOSE, OUT_JSON };

struct options {
	enum out_format format;
	bool stats;
	bool hex;              /* -x: hex dump of each ULPDU */
	bool quiet;            /* no per-FPDU output (with --stats) */
	int ports[16];         /* -p: decode as MPA in full operation */
	int nports;
	int assume_crc;        /* -1 unknown (detect), 0 off, 1 on */
	int assume_markers;    /* idem */
	uint8_t term_order;    /* ESOCK_RDMAP_TERM_AUTO / RFC / SIW */
	FILE *out;
};

extern struct options opt;

#define NOPC 13 /* opcodes 0..11, 12 = undecodable */
#define READ_TRACK 64

struct stats {
	uint64_t fpdus, bytes, opc_fpdus[NOPC], opc_bytes[NOPC];
	uint64_t messages, crc_errors, marker_errors, terminates, decode_errors;
	uint64_t gaps, gap_bytes, msn_gaps, aligned, resyncs, dup_bytes;
	uint64_t reads_matched;
	double read_lat_sum, read_lat_max;
};

enum dir_mode { D_START, D_WAIT_REPLY, D_FULL, D_RESYNC, D_IGNORE };

struct flow;

struct dir_state {
	struct flow *flow;
	int idx;                  /* 0: from endpoint 0, 1: from endpoint 1 */
	enum dir_mode mode;
	struct reasm reasm;
	uint8_t sf[ESOCK_MPA_FRAME_MAX];
	size_t sf_len;
	uint8_t *hold;            /* octets waiting for the mode (bounded) */
	size_t hold_len;
	size_t scan_from;         /* resync: candidates before this were rejected */
	struct esock_mpa_rx rx;
	uint8_t *ulpdu;           /* 64 KiB rx buffer */
	uint32_t pos;             /* stream position in full operation */
	bool crc, markers;
	bool phase_known;         /* stream positions (hence markers) are known */
	bool chunk_seg_start;     /* the octets being fed began a TCP segment */
	bool cur_aligned;         /* the current FPDU began a TCP segment */
	uint32_t next_msn[4];     /* expected MSN per QN (0: unknown) */
	uint32_t rd_pending;      /* Read Requests sent by this side, awaiting responses */
	double rd_ts[READ_TRACK];
	uint32_t rd_head;
	double ts;                /* timestamp of the segment being fed */
	struct stats st;
};

struct flow {
	struct flow *next;
	unsigned id;
	int af;
	uint8_t addr[2][16];
	uint16_t port[2];
	int initiator;            /* endpoint that sent the Request (-1 unknown) */
	struct esock_mpa_frame req, rep;
	bool have_req, have_rep;
	struct dir_state d[2];
};

/* run.c: decodes every packet of |handle|; returns pcap_loop's result. */
int ddpdump_process(pcap_t *handle);

/* flows.c */
void hold_append(struct dir_state *d, const uint8_t *p, size_t len);
void flows_segment(const struct tcp_seg *s);
void flows_finish(void);
void flows_print_stats(void);
/* Forgets every connection (memory back to zero; for the fuzz target). */
void flows_free_all(void);

/* resync.c: takes octets while looking for an FPDU start (mode D_RESYNC). */
void resync_feed(struct dir_state *d, const uint8_t *p, size_t len);
/* Starts full-operation parsing of |d| at stream position |pos|. */
void dir_start_full(struct dir_state *d, uint32_t pos);
/* Feeds octets to the full-operation parser. */
void dir_feed_full(struct dir_state *d, const uint8_t *p, size_t len);

/* output.c */
void out_note(const struct dir_state *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void out_start_frame(const struct dir_state *d, const struct esock_mpa_frame *f);
void out_fpdu(const struct dir_state *d, const struct esock_mpa_ev *ev, const struct esock_rdmap_msg *m,
	      int decode_rc, const struct esock_term *why, bool aligned);
void out_stats(const char *label, const struct stats *s);
void endpoint_str(const struct dir_state *d, bool dst, char *buf, size_t cap);

#endif
