/* SPDX-License-Identifier: MIT */
/*
 * The fields of the codec's state structs, seen only inside the tree
 * (ESOCK_BUILDING): the installed header gives users opaque storage of a
 * fixed size, so that the fields can change without breaking programs built
 * against an older header.  Included by esock/ddp.h itself.
 */
#ifndef ESOCK_DDP_DDP_STATE_H
#define ESOCK_DDP_DDP_STATE_H

#define ESOCK_DDP_SEG_FIELDS \
	struct { \
	struct esock_ddp_hdr tmpl; /* first segment's header (TO or MO start) */ \
	size_t msg_len;            /* payload octets of the whole message */ \
	size_t off;                /* payload octets already handed out */ \
	size_t max_payload;        /* per segment */ \
	bool done; \
	}

#define ESOCK_DDP_PLACE_FIELDS \
	struct { \
	struct esock_ddp_place_cfg cfg; \
	int err; \
	struct esock_term term; \
	uint8_t used; /* bit i: msg[i] in use (its slots are not scanned: cold over many QPs) */ \
	uint32_t next_msn[ESOCK_DDP_QN_MAX]; /* next MSN to deliver, per QN (used beside: one line) */ \
	struct esock_ddp_msg_state { \
		bool done; \
		uint32_t qn, msn; \
		struct esock_ddp_buf buf; \
		uint64_t total;    /* message length once the L segment came, else ~0 */ \
		uint64_t received; /* distinct octets placed */ \
		uint32_t nranges; \
		struct { uint32_t lo, hi; } r[ESOCK_DDP_RANGES]; \
	} msg[ESOCK_DDP_MSG_SLOTS]; \
	}

#endif /* ESOCK_DDP_DDP_STATE_H */
