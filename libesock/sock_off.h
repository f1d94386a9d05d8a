/* SPDX-License-Identifier: MIT */
/*
 * The offload mode (issue 16, docs/tcpserver.md): with ESOCK_TCPSERVER=PATH
 * every TCP socket a program makes is carried out by tcpserverd, reached
 * over the process's shared-memory channel (tcpserver/host.h).  The
 * program's descriptor stays a kernel TCP socket that is never used (so
 * fstat, SO_TYPE, dup, close-on-exec and numbering are libc's); its sock
 * (state SOCK_OFFLOADED) holds the tcpserverd handle and what tcpserverd
 * told of it.  Calls never wait in tcpserverd: a blocking call waits here,
 * on READY events (WATCH), so that other threads' calls go on meanwhile.
 *
 * The switches of HELLO are asked for by ESOCK_TCPSERVER_OPT (a comma list
 * of async, eagerrx, eageraccept, setup, or all; none by default): sends
 * answered once queued (CREDIT gives the room back), octets pushed ahead in
 * DATA events, connections taken ahead in ACCEPTED events, and accept's
 * answer carrying both addresses.
 *
 * Locks: a sock's lock is never held across a call to tcpserverd (the pump,
 * which updates socks from events, takes them).
 */
#ifndef ESOCK_LIBESOCK_SOCK_OFF_H
#define ESOCK_LIBESOCK_SOCK_OFF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct esock_sock;

/* ESOCK_TCPSERVER is set: TCP sockets are offloaded. */
bool sock_off_enabled(void);
/*
 * socket() made |fd|, a TCP socket of |domain| (|type|'s flags as given):
 * it is offloaded.  0, or -errno (socket() fails with it: -ECONNREFUSED
 * when tcpserverd is not there).
 */
int sock_off_born(int fd, int domain, int type);

/* The calls (octets or 0, or -errno); addresses as the kernel gives them. */
int sock_off_bind(struct esock_sock *s, const struct sockaddr *a, socklen_t len);
int sock_off_connect(struct esock_sock *s, const struct sockaddr *a, socklen_t len);
int sock_off_listen(struct esock_sock *s, int backlog);
int sock_off_accept(struct esock_sock *s, struct sockaddr *a, socklen_t *len, int flags);
ssize_t sock_off_recv(struct esock_sock *s, const struct iovec *iov, int n, int flags,
		      int *msg_flags);
ssize_t sock_off_send(struct esock_sock *s, const struct iovec *iov, int n, int flags);
int sock_off_shutdown(struct esock_sock *s, int how);
int sock_off_setopt(struct esock_sock *s, int level, int name, const void *val, socklen_t len);
int sock_off_getopt(struct esock_sock *s, int level, int name, void *val, socklen_t *len);
int sock_off_name(struct esock_sock *s, bool peer, struct sockaddr *a, socklen_t *len);
int sock_off_fionread(struct esock_sock *s, int *n);
/*
 * Registered buffers (sock_off_reg.c): [addr, addr + len) registered with
 * tcpserverd for the process (the extended API's reg on an offloaded
 * socket; ESOCK_REG_LOCAL_WRITE: receives land there too), *stag its
 * number for dereg.  0, or -EOPNOTSUPP (not asked for), -ENOSPC, -EPERM,
 * -EFAULT (tcpserverd cannot reach it), -errno.
 */
int sock_off_reg(void *addr, size_t len, unsigned access, uint32_t *stag);
int sock_off_dereg(uint32_t stag);
/* The last descriptor closed: tcpserverd closes its socket. */
void sock_off_release(struct esock_sock *s);

/* Readiness: poll bits now true (events pumped first). */
unsigned sock_off_ready(struct esock_sock *s, unsigned events);
/* Changes with every new input (octets, a connection, the end, an error): epoll's edges. */
uint64_t sock_off_rx_gen(struct esock_sock *s);
/* READY events for |events| from now on (a call to tcpserverd the first time).  0 or -errno. */
int sock_off_watch(struct esock_sock *s, unsigned events);

/*
 * Sleeping with other files: the channel's bell (an eventfd, -1 when the
 * process has no channel); sleep_begin returns 1 when events wait already
 * (do not sleep); sleep_end after the wait in any case.  bell_edge: the
 * bell may be watched with EPOLLET, and such a watcher ends its sleeps with
 * sleep_end_edge (no read of the bell: tsp_host_bell_edge).
 */
int sock_off_bell(void);
int sock_off_sleep_begin(void);
void sock_off_sleep_end(void);
bool sock_off_bell_edge(void);
void sock_off_sleep_end_edge(void);
/* Takes every event that came and applies it to its sock; kicks their epoll sets. */
void sock_off_pump(void);

/* sock_epoll.c: |s| has news for the epoll sets that hold it. */
void sock_epoll_kick(struct esock_sock *s);
/* A listener's own kernel socket (share=P), or -1; epoll saw it ring (its edge count). */
int sock_off_kfd(struct esock_sock *s);
void sock_off_kernel_news(struct esock_sock *s);

#endif /* ESOCK_LIBESOCK_SOCK_OFF_H */
