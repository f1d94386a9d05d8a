/* SPDX-License-Identifier: MIT */
/*
 * Receive buffers shared by all DDPMODE sockets of a process.  A socket
 * takes one as a Send arrives (sock_pool.c, the QP's refill hook) and
 * gives it back once the application read the message, so buffers are
 * reused most recently freed first: the working set is the messages in
 * flight, not the connections.  (A pool per connection left a page per
 * connection behind, touched again by each of its messages: over 1000
 * busy connections their pages fell out of the caches, and every new
 * connection's first message faulted in a page of its own.)
 */
#ifndef ESOCK_LIBESOCK_SOCK_RXBUF_H
#define ESOCK_LIBESOCK_SOCK_RXBUF_H

#include <stddef.h>

/* A buffer of |size| octets (the socket's ESOCK_RCVSIZE), or NULL (no memory). */
void *sock_rxbuf_get(size_t size);
/* |p| (of |size|) back, its contents no longer needed. */
void sock_rxbuf_put(void *p, size_t size);

#endif
