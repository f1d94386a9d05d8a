/* SPDX-License-Identifier: MIT */
/*
 * The host side of the TCP Server: a process's connection to tcpserverd
 * and its calls.  tsp_host_call is synchronous: the request goes into the
 * shared queue (no system call unless tcpserverd sleeps), the answer is
 * waited for by spinning briefly, then on the host's bell (an eventfd).  Calls from
 * several threads are served one at a time (the queue has one producer).
 */
#ifndef ESOCK_TCPSERVER_HOST_H
#define ESOCK_TCPSERVER_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcpserver/proto/tsp.h"

struct esock_mr;

struct tsp_host;

/*
 * Connects to tcpserverd at |path|: a Unix socket's path (shared memory),
 * or ADDR:PORT / [ADDR]:PORT of its -l (an esock QP, rchan.h); hands it a channel and
 * says HELLO asking for |flags| (ESOCK_TSP_F_*).  0 or -errno
 * (-ECONNREFUSED: tcpserverd is not there or admits no more hosts; -EPERM:
 * no fork of that token).  *|granted|: the flags tcpserverd agreed to (may
 * be NULL).  |token|: a forked child's, from its parent's FORK (the child
 * takes those sockets, same handles), or 0.
 */
int tsp_host_open(const char *path, uint32_t flags, uint32_t token, struct tsp_host **out,
		  uint32_t *granted);
/* BYE (tcpserverd closes this host's sockets), then the channel. */
void tsp_host_close(struct tsp_host *h);

/*
 * Sends |req| (type, op, sock, body; the id is set here) and waits for its
 * response, decoded into |resp|; its data points into the host's buffer
 * until the next call.  Returns the response's result (>= 0 or -errno), or
 * -EPIPE when tcpserverd is gone or broke the channel.
 */
int tsp_host_call(struct tsp_host *h, struct esock_tsp_msg *req, struct esock_tsp_msg *resp);

/*
 * Sends |req| without waiting for its answer: the answer comes later among
 * the events (tsp_host_event, type ESOCK_TSP_RESP, the same id).  0,
 * -EAGAIN (too many answers outstanding: make it a call), -EPIPE.
 */
int tsp_host_post(struct tsp_host *h, struct esock_tsp_msg *req);

/*
 * The next event (READY, DATA, ACCEPTED, CREDIT, or a posted call's answer) into |ev|, waiting up to
 * |timeout_ms| (-1: no limit); events that came while a call waited for its
 * answer were kept, in order.  A DATA event's octets are the host's until
 * the next call or event.  1, 0 (none in time), or -EPIPE.
 */
int tsp_host_event(struct tsp_host *h, struct esock_tsp_msg *ev, int timeout_ms);
/*
 * Only an event kept while a call waited (it came before that call's
 * answer), never one from the queue: 1 or 0.  Its octets as for
 * tsp_host_event.
 */
int tsp_host_event_kept(struct tsp_host *h, struct esock_tsp_msg *ev);

/*
 * Sleeping among other files (the offload mode's poll and epoll): the
 * host's bell is a descriptor tcpserverd rings for a host that said it
 * sleeps (an eventfd over shared memory; across the network an epoll set
 * of the QP's receive channel and an eventfd for this process's threads).
 * tsp_host_sleep_begin returns 1 when something is already there (do not
 * sleep), 0 when the bell will ring; tsp_host_sleep_end after the wait,
 * whatever it returned (it quiets the bell).
 *
 * tsp_host_bell_edge: the bell may be watched edge-triggered (EPOLLET), each
 * ring an edge (an eventfd's write wakes its watchers even when its count
 * is not zero); a waiter that watches it so ends its sleeps with
 * tsp_host_sleep_end_edge, which leaves the count as it is: no read, a
 * system call per wake-up saved.  (Level-triggered waiters then may wake
 * once for nothing, and quiet it.)
 */
int tsp_host_bell(const struct tsp_host *h);
int tsp_host_sleep_begin(struct tsp_host *h);
void tsp_host_sleep_end(struct tsp_host *h);
bool tsp_host_bell_edge(const struct tsp_host *h);
void tsp_host_sleep_end_edge(struct tsp_host *h);

/*
 * A forked child's copy of its parent's host: forgotten here without a word
 * to tcpserverd (the channel and its sockets are the parent's).
 */
void tsp_host_forget(struct tsp_host *h);

/*
 * Registered buffers: makes [addr, addr + len) reachable by tcpserverd, for
 * REG with *key.  Over shared memory it lets tcpserverd (the process at the
 * other end of the host's Unix socket, as the kernel names it) read and
 * write this process's memory where Yama restricts that to a named tracer
 * (prctl PR_SET_PTRACER; nothing to do without Yama): *key 0, *mr NULL.
 * Across the network it registers the memory on the channel's protection
 * domain: *key its STag, *mr for tsp_host_mem_dereg.  0 or -errno.
 */
int tsp_host_mem_reg(struct tsp_host *h, void *addr, size_t len, uint32_t *key, struct esock_mr **mr);
void tsp_host_mem_dereg(struct tsp_host *h, struct esock_mr *mr);

#endif /* ESOCK_TCPSERVER_HOST_H */
