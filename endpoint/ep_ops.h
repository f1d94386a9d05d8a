/* SPDX-License-Identifier: MIT */
/*
 * What each operation is, in one place (as siw's per-opcode table): the
 * work requests an application posts and the RDMAP messages that arrive.
 * The transmit, completion and receive paths read these facts instead of
 * testing opcodes one by one, so an operation is added here and where its
 * behaviour is really its own.
 */
#ifndef ESOCK_ENDPOINT_EP_OPS_H
#define ESOCK_ENDPOINT_EP_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include <esock/iwarp.h>

/* A send work request (enum esock_wr_opcode). */
struct ep_wr_op {
	uint8_t rdmap;              /* the RDMAP message it goes out as */
	enum esock_wc_opcode wc;    /* the opcode of its completion */
	unsigned sge_access;        /* what the regions under its SGEs must allow */
	uint8_t sge_max;            /* SGEs at most (0: the QP's max_sge) */
	bool tagged;                /* placed at the peer's STag and offset (RDMA Write) */
	/*
	 * An RDMA Read: its request carries no payload (the SGE is the sink),
	 * waits for ORD room, and completes when the whole Response is in.
	 */
	bool read;
	bool send;                  /* takes a posted receive at the peer (credits: ep_tx.c) */
};

/* The facts of work request |opcode|, or NULL for one that is not. */
const struct ep_wr_op *ep_wr_op(unsigned opcode);

/* What an incoming RDMAP message does. */
enum ep_rx_op_kind {
	EP_RXK_NONE,      /* not accepted here (reserved, RFC 7306 not negotiated) */
	EP_RXK_SEND,      /* untagged into a posted receive */
	EP_RXK_WRITE,     /* tagged into a region of ours */
	EP_RXK_READ_RESP, /* tagged into the sink of one of our Reads */
	EP_RXK_READ_REQ,  /* the peer reads a region of ours */
	EP_RXK_TERMINATE, /* the peer ends the connection */
};

struct ep_rx_op {
	enum ep_rx_op_kind kind;
	uint32_t place_access; /* tagged: what the region placed into must allow (ESOCK_DDP_ACCESS_*) */
	unsigned wc_flags;     /* a Send's completion flags (ESOCK_WC_SOLICITED) */
	bool inval;            /* a Send that invalidates one of our STags */
};

/* The facts of RDMAP |opcode| (never NULL: unknown ones are EP_RXK_NONE). */
const struct ep_rx_op *ep_rx_op(uint8_t opcode);

#endif /* ESOCK_ENDPOINT_EP_OPS_H */
