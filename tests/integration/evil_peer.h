/* SPDX-License-Identifier: MIT */
/*
 * A crafted iWARP peer for the endpoint's security tests: a plain TCP socket
 * that does the MPA exchange with the codecs, then sends DDP/RDMAP segments
 * built by hand (any STag, TO, version, opcode or CRC the test wants), and
 * decodes what comes back, the Terminate above all.  Every receive has a
 * deadline, so a victim that never answers fails a test instead of hanging it.
 */
#ifndef ESOCK_TESTS_EVIL_PEER_H
#define ESOCK_TESTS_EVIL_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <esock/mpa.h>
#include <esock/rdmap.h>

#define EVIL_TIMEOUT_MS 5000

struct evil {
	int fd;
	struct esock_mpa_policy pol;
	struct esock_mpa_frame req, rep;  /* rep.pd points into rep_buf */
	uint8_t rep_buf[ESOCK_MPA_FRAME_MAX];
	struct esock_mpa_params mp;       /* what the exchange settled */
	struct esock_mpa_tx tx;
	struct esock_mpa_rx rx;
	uint8_t rx_ulpdu[ESOCK_MPA_ULPDU_MAX];
	uint8_t seg[ESOCK_MPA_ULPDU_MAX]; /* the last ULPDU evil_next returned */
	size_t seg_len;
	uint8_t in[16384];                /* received, not yet fed to rx */
	size_t in_off, in_len;
	uint32_t msn[3];                  /* next MSN we send on QN 0, 1, 2 */
};

/* A TCP connection to 127.0.0.1:|port| with send/receive deadlines; -errno on failure. */
int evil_tcp_connect(int port);

/* Connects and allocates; NULL on failure.  |pol| NULL: rev 2, CRC, IRD/ORD 8. */
struct evil *evil_new(int port, const struct esock_mpa_policy *pol);
void evil_free(struct evil *e);

/*
 * evil_mpa sends the Request and judges the Reply (esock_mpa_reply_check);
 * on acceptance the FPDU transmitter and receiver are set up as negotiated.
 * Returns 0, -ECONNREFUSED, -EPROTO, or -errno from the socket.
 */
int evil_mpa(struct evil *e);

/* Headers (DDP + RDMAP) into |buf|; they return the header length. */
size_t evil_hdr_tagged(uint8_t *buf, uint8_t opcode, uint32_t stag, uint64_t to);
size_t evil_hdr_send(struct evil *e, uint8_t *buf, uint8_t opcode, uint32_t inval_stag);
size_t evil_hdr_read_req(struct evil *e, uint8_t *buf, const struct esock_rdmap_read_req *r);

/*
 * evil_fpdu frames the ULPDU |hdr| + |payload| (CRC and markers as
 * negotiated) into |out| and returns the FPDU length.  |bad_crc| flips a CRC
 * bit.  Several FPDUs may be framed back to back and sent in one go.
 */
size_t evil_fpdu(struct evil *e, const uint8_t *hdr, size_t hl, const uint8_t *payload,
		 size_t plen, bool bad_crc, uint8_t *out, size_t cap);

/* Sends |len| octets; 0 or -errno. */
int evil_send_raw(struct evil *e, const void *buf, size_t len);

/* evil_fpdu + evil_send_raw (ck_assert on failure). */
void evil_send(struct evil *e, const uint8_t *hdr, size_t hl, const uint8_t *payload, size_t plen);

/*
 * evil_next receives one ULPDU into e->seg (e->seg_len octets) and decodes
 * it into |m| (which borrows e->seg).  Returns 1, 0 at end of stream, or
 * -errno (-EAGAIN after the deadline, -ECONNRESET, an MPA or RDMAP error).
 */
int evil_next(struct evil *e, struct esock_rdmap_msg *m);

/* What a Terminate must say, and about which segment we sent. */
struct evil_term_want {
	uint8_t layer, etype, ecode, hdrct;
	const uint8_t *seg;   /* the offending ULPDU as sent (for M, D, R) */
	size_t seg_len;
	bool skip_responses;  /* Read Responses may come first (else nothing may) */
	const char *what;     /* the case, for failure messages (may be NULL) */
};

/* Receives the Terminate and asserts reason, header flags and copies. */
void evil_expect_term(struct evil *e, const struct evil_term_want *w);

/* Asserts that the victim closed: end of stream or a reset, before the deadline. */
void evil_expect_closed(struct evil *e);

#endif
