/* SPDX-License-Identifier: MIT */
/*
 * The fields of the codec's state structs, seen only inside the tree
 * (ESOCK_BUILDING): the installed header gives users opaque storage of a
 * fixed size, so that the fields can change without breaking programs built
 * against an older header.  Included by esock/mpa.h itself.
 */
#ifndef ESOCK_MPA_MPA_STATE_H
#define ESOCK_MPA_MPA_STATE_H

#define ESOCK_MPA_TX_FIELDS \
	struct { \
	bool crc;          /* CRC32C in the trailer (else zeros) */ \
	bool markers;      /* insert markers (the peer asked with M=1) */ \
	uint32_t pos;      /* stream position of the next octet built (mod 2^32) */ \
	size_t left;       /* octets of the current plan not yet written */ \
	int iovcnt;        /* entries in iov */ \
	int iov_next;      /* first entry not fully written */ \
	struct iovec iov[ESOCK_MPA_TX_IOV_MAX]; \
	uint8_t len_field[ESOCK_MPA_LEN_LEN]; \
	uint8_t trailer[3 + ESOCK_MPA_CRC_LEN]; /* PAD, then CRC */ \
	uint8_t marker[ESOCK_MPA_MARKERS_MAX][ESOCK_MPA_MARKER_LEN]; \
	}

/* (What every FPDU touches first: cfg to have's neighbours share two cache lines.) */
#define ESOCK_MPA_RX_FIELDS \
	struct { \
	struct esock_mpa_rx_cfg cfg; \
	int state; \
	int err;             /* first terminal error (negative), 0 while healthy */ \
	struct esock_term term; \
	uint32_t pos;        /* stream position of the next octet */ \
	uint32_t hdr_pos;    /* position of the current ULPDU_Length field */ \
	uint32_t crc;        /* running CRC32C of the current FPDU */ \
	size_t have;         /* octets taken in the current state */ \
	uint16_t ulpdu_len; \
	uint8_t ev_flags;    /* ESOCK_MPA_EVF_* of the current FPDU */ \
	uint16_t markers;    /* markers in the current FPDU */ \
	uint8_t len_field[ESOCK_MPA_LEN_LEN]; \
	uint8_t marker[ESOCK_MPA_MARKER_LEN]; \
	uint8_t trailer[3 + ESOCK_MPA_CRC_LEN]; \
	uint8_t peek[ESOCK_MPA_RX_PEEK_MAX]; \
	size_t peek_len; \
	uint64_t fpdus;      /* FPDUs completed (statistics) */ \
	}

#endif /* ESOCK_MPA_MPA_STATE_H */
