/* SPDX-License-Identifier: MIT */
/*
 * DDPMODE sockets on the verbs backend (kernel siw or an iWARP RNIC through
 * rdma-core; issue 15, docs/libesock.md "Verbs sockets").  The kernel owns
 * the connection, so the application's descriptor stays a kernel TCP socket
 * that is never connected (fstat, SO_TYPE, dup, close-on-exec and numbering
 * stay libc's); the sock's |vb| holds the verbs PD, CQ, QP or listener and
 * two registered regions: the receive buffers (rdepth x rsize, all posted
 * from the start: a kernel QP cannot wait for a receive) and the send slots
 * (every write is copied into one and sent from there).  Readiness comes
 * from the CQ's completion channel (a listener's: its rdma_cm event
 * channel), which poll, select and epoll sleep on.
 *
 * The receive ring is the sock's own (rbufs, rdone, rlen, rhead, rcount,
 * roff, rready), so reads, FIONREAD and MSG_PEEK work as for the user-level
 * backend's sockets; a consumed buffer is posted again at once.
 *
 * s->qp, s->cq, s->pd and s->lst stay NULL on such a sock: the user-level
 * backend's paths find nothing of theirs in it.
 */
#ifndef ESOCK_LIBESOCK_SOCK_VB_H
#define ESOCK_LIBESOCK_SOCK_VB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct esock_sock;
struct esock_pd;
struct esock_cq;
struct esock_qp;
struct esock_send_wr;

/*
 * Whether a DDPMODE socket's connect or listen goes to the verbs backend:
 * 2 ESOCK_BACKEND=verbs (it must), 1 auto chose verbs (a failure to reach
 * the address through the device falls back to the user-level backend),
 * 0 no (built without it, user, or auto on a host without an iWARP device).
 */
int sock_vb_wanted(void);
/*
 * Whether this connect (to |addr|) or this listen (on the address |s| is
 * bound to) goes to the verbs backend: ESOCK_BACKEND=verbs, or auto and the
 * device reaches the peer / owns the address (a wildcard listener and
 * loopback addresses stay on the user-level backend).  System calls and rdma-core only under auto on a
 * host with an iWARP device.
 */
bool sock_vb_for_connect(const struct sockaddr *addr, socklen_t len);
bool sock_vb_for_listen(const struct esock_sock *s);

/* The calls (0, octets, a descriptor, or -errno), as their sock_* twins. */
int sock_vb_connect(struct esock_sock *s, const struct sockaddr *addr, socklen_t len);
int sock_vb_listen(struct esock_sock *s, int backlog);
int sock_vb_accept(struct esock_sock *ls, struct sockaddr *addr, socklen_t *alen, int flags);
ssize_t sock_vb_recv(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags,
		     int *msg_flags);
ssize_t sock_vb_send(struct esock_sock *s, const struct iovec *iov, int iovcnt, int flags);
/*
 * shutdown's SHUT_WR (lock held; sock_shutdown did the rest): the kernel's
 * RDMA has no half-close, so what is queued goes and the connection ends.
 */
int sock_vb_close_send(struct esock_sock *s);
int sock_vb_name(struct esock_sock *s, bool peer, struct sockaddr *addr, socklen_t *len);
/* Its local or the peer's address as the kernel's iWARP has it, or NULL (lock held). */
const struct sockaddr_storage *sock_vb_addr(const struct esock_sock *s, bool peer);
/* Takes every completion (lock held; sock_drain's part for such a sock). */
void sock_vb_drain(struct esock_sock *s);
/* Poll bits now true (completions taken first); arms the channel when nothing is. */
unsigned sock_vb_ready(struct esock_sock *s, unsigned events);
/*
 * For a poll or epoll waiting for |events|: the longest sleep (ms) before it
 * must look again, or -1 (its descriptor will ring).  Room to send that only
 * credits bring may ring nothing (sock_vb.c, credit_slice).
 */
int sock_vb_out_slice(struct esock_sock *s, unsigned events);
/* The descriptor its readiness comes on (to sleep on with poll or epoll), or -1. */
int sock_vb_fd(struct esock_sock *s);
/* A listener's connection requests taken so far (epoll's edges). */
uint64_t sock_vb_requests(const struct esock_sock *s);
/*
 * The extended API on such a socket (sock_api.c; lock held): the
 * connection's verbs PD, CQ and QP (NULL before it is connected), and a
 * user operation's send WR posted (a Send only within the peer's credits,
 * else -EAGAIN; -EAGAIN too when the send queue is full).
 */
struct esock_pd *sock_vb_pd(const struct esock_sock *s);
struct esock_cq *sock_vb_cq(const struct esock_sock *s);
struct esock_qp *sock_vb_qp(const struct esock_sock *s);
int sock_vb_post_user(struct esock_sock *s, struct esock_send_wr *wr);
/* A consumed receive buffer goes back to the QP (sock_pool_return's twin; lock held). */
void sock_vb_repost(struct esock_sock *s, uint32_t idx);
/* The process ends with |s| open (lock held): the Sends in flight complete first (bounded). */
void sock_vb_flush(struct esock_sock *s);
/* The last descriptor closed: sends queued leave (|graceful|), then everything goes. */
void sock_vb_release(struct esock_sock *s, bool graceful);
/* In a child of fork: the parent's verbs objects are not this process's to use or end. */
void sock_vb_fork_child(struct esock_sock *s);
/* The backend's name for esock-stat and the log. */
const char *sock_vb_backend_name(void);

#endif /* ESOCK_LIBESOCK_SOCK_VB_H */
