/* SPDX-License-Identifier: MIT */
/*
 * A host's channel to tcpserverd across the network (the TCP Server's
 * cluster variant; docs/tcpserver.md, "The iWARP transport"): the two record
 * queues of chan.h (requests, responses) over one esock QP.  Each side holds
 * a copy of both queues in memory registered for the peer's RDMA Write and
 * Read; the words a side writes for the other (records, positions, sleep
 * counts) reach the other copy by RDMA Write at the same offset, a consumer
 * about to sleep reads the producer's end by RDMA Read, and its wake-up is an
 * empty Send, whose arrival makes the receive CQ's channel readable: the bell
 * to sleep on in poll or epoll (tsp_rchan_bell), emptied by tsp_rchan_drain
 * (this side's own Writes and Reads complete on a CQ of their own, which
 * wakes nobody).
 *
 * The MPA private data carries, both ways, a hello: "eTSP", version, the
 * queues' capacity, and the STag and address of the sender's copies.  A peer
 * whose hello is missing or differs is refused.  Either end may be either
 * backend (a ring is sent once per sleep of the peer's, far fewer than the
 * receives kept posted, which a kernel QP needs); a fork's child leaves a
 * verbs QP's objects alone (they are the parent's too).
 */
#ifndef ESOCK_TCPSERVER_RCHAN_H
#define ESOCK_TCPSERVER_RCHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <esock/iwarp.h>

#include "tcpserver/proto/tsp.h"
#include "tcpserver/shmq.h"

struct tsp_rchan;

/*
 * Where tcpserverd is, across the network: |where| is "ADDR:PORT" with a
 * numeric IPv4 address, or "[ADDR]:PORT" with IPv6 (no name lookup: this
 * runs inside a program's first socket call).  1 (|ss|, |len| set), 0
 * (|where| is a Unix socket's path: it starts with '/' or '.', or has no
 * ':'), or -EINVAL (an address that does not parse).
 */
int tsp_rchan_addr(const char *where, struct sockaddr_storage *ss, socklen_t *len);

/*
 * Host: connects to tcpserverd's listener at |addr| with queues of |cap|
 * octets (a power of two, shmq.h's range).  0 or -errno.  The host produces
 * requests (*req) and consumes responses (*resp).
 */
int tsp_rchan_connect(struct tsp_rchan **c, const struct sockaddr *addr, socklen_t len, uint32_t cap);
/*
 * tcpserverd: takes the connection request |r| of its listener (esock_get_request),
 * answering with its own hello, or rejecting a peer without a valid one.  0 or -errno.
 * tcpserverd consumes requests and produces responses.
 */
int tsp_rchan_accept(struct tsp_rchan **c, struct esock_conn_req *r);
/* The channel's queues (this side's handles). */
struct esock_shmq *tsp_rchan_req(const struct tsp_rchan *c);
struct esock_shmq *tsp_rchan_resp(const struct tsp_rchan *c);
/* A descriptor readable when the peer rang (or the link broke): poll it, then drain. */
int tsp_rchan_bell(const struct tsp_rchan *c);
/*
 * Takes the completions that came (rings: their receives posted again),
 * arms the bell for the next.  0, or the link's error (-ECONNRESET...).
 */
int tsp_rchan_drain(struct tsp_rchan *c);
void tsp_rchan_close(struct tsp_rchan *c);
/*
 * A forked child's copy of its parent's channel: freed without a word on the
 * connection (the parent still uses it), as a socket's copy closed in a child.
 */
void tsp_rchan_forget(struct tsp_rchan *c);

/*
 * Registered buffers across the network.  The host registers memory on the
 * channel's protection domain (tcpserverd may read and write it: *stag is
 * its key for REG).  tcpserverd moves a SEND_REG's octets from there into
 * the channel's stage (TSP_RCHAN_STAGE octets, registered at first use) with
 * an RDMA Read, and a RECV_REG's from the stage there with an RDMA Write,
 * each waited for (the Write complete before the answer goes: placed before
 * it).  0 or -errno; a failed transfer breaks the link, as any failed work
 * request does.
 */
#define TSP_RCHAN_STAGE ESOCK_TSP_BODY_MAX
int tsp_rchan_mem_reg(struct tsp_rchan *c, void *addr, size_t len, uint32_t *stag, struct esock_mr **mr);
void tsp_rchan_mem_dereg(struct tsp_rchan *c, struct esock_mr *mr);
uint8_t *tsp_rchan_stage(struct tsp_rchan *c);  /* NULL: no memory */
int tsp_rchan_fetch(struct tsp_rchan *c, uint32_t stag, uint64_t addr, uint32_t len);
int tsp_rchan_place(struct tsp_rchan *c, uint32_t len, uint32_t stag, uint64_t addr);

#endif /* ESOCK_TCPSERVER_RCHAN_H */
