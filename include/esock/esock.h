/* SPDX-License-Identifier: MIT */
/*
 * Extended sockets: a TCP socket switched to DDPMODE speaks MPA/DDP/RDMAP
 * (iWARP) instead of a byte stream, through the ordinary socket calls.
 *
 *	int on = 1;
 *	int fd = socket(AF_INET, SOCK_STREAM, 0);
 *	setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, sizeof(on));
 *	connect(fd, ...);            // TCP connect + MPA exchange
 *	write(fd, buf, n);           // one RDMA Send (or several, see ESOCK_RCVSIZE)
 *	read(fd, buf, n);            // bytes of received messages, in order
 *
 * The calls are libc's names, overloaded by libesock (linked with -lesock or
 * preloaded with LD_PRELOAD / esock-run).  A socket not in DDPMODE behaves
 * exactly as with libc.  The descriptor stays the kernel TCP socket: fstat,
 * getsockname, getpeername and fd passing keep working.
 *
 * The extended calls (memory registration, asynchronous operations with
 * completion events, one-sided RDMA Write and Read) are reached through a
 * table that a program finds without linking against libesock:
 *
 *	const struct esock_api *api;
 *	socklen_t len = sizeof(api);
 *	if (getsockopt(-1, SOL_ESOCK, ESOCK_GET_API, &api, &len) == 0) ...
 *
 * (without libesock, libc fails that call with EBADF: fall back to plain TCP).
 * See docs/libesock.md.
 */
#ifndef ESOCK_ESOCK_H
#define ESOCK_ESOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct esock_qp;

/* Option level of the esock options (far from the kernel's SOL_* numbers). */
#define SOL_ESOCK 0x65736b

/*
 * Options (setsockopt/getsockopt at level SOL_ESOCK; int values unless said).
 * All but ESOCK_MSGMODE must be set before connect() or listen(); a listener
 * hands its settings to the sockets it accepts.
 */
enum esock_sockopt {
	ESOCK_DDPMODE = 1,   /* 1: speak iWARP on this socket (before connect/listen) */
	ESOCK_MPA_REV = 2,   /* 1 or 2 (default 2, falls back to 1 when the peer does) */
	ESOCK_CRC = 3,       /* 1 ask for CRC (default), 0 not; get: negotiated */
	ESOCK_MARKERS = 4,   /* 1 ask the peer for markers (default 0); get: negotiated rx */
	ESOCK_PRIVDATA = 5,  /* bytes: private data for the MPA Request or Reply */
	ESOCK_PEER_PRIVDATA = 6, /* get, bytes: the private data the peer sent */
	ESOCK_IRD = 7,       /* inbound RDMA Read depth (default 8) */
	ESOCK_ORD = 8,       /* outbound RDMA Read depth (default 8) */
	ESOCK_MSGMODE = 9,   /* 1: a read returns at most one message (MSG_TRUNC) */
	ESOCK_RCVDEPTH = 10, /* receive buffers per connection (default 16; 0: none) */
	ESOCK_RCVSIZE = 11,  /* octets per receive buffer (default 65536) */
	ESOCK_PEER = 12,     /* string: peer profile (generic, siw, cxgb4, irdma, mpa1) */
	ESOCK_LAST_ERROR = 13, /* get, struct esock_sock_error: why the connection ended */
	ESOCK_QP = 14,       /* get, struct esock_qp *: the queue pair (esock/iwarp.h) */
	ESOCK_GET_API = 15,  /* get on fd -1, const struct esock_api *: the extended calls */
	ESOCK_STATS = 16,    /* get, struct esock_sock_stats */
	ESOCK_MPA_TIMEOUT = 17, /* MPA exchange timeout in ms (default 10000) */
};

/* ESOCK_LAST_ERROR: the Terminate that ended the connection, if any. */
struct esock_sock_error {
	int err;             /* errno reported to the application (0: none yet) */
	int term_sent;       /* 1 we sent the Terminate, 0 the peer did */
	uint8_t layer, etype, ecode; /* RFC 5040 Terminate fields (0 when no Terminate) */
	char reason[64];     /* the same in words */
};

/* ESOCK_STATS: counters of one socket. */
struct esock_sock_stats {
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes;
	uint64_t terminates, fallbacks;
	uint32_t peer_msg_max;   /* largest Send the peer accepts */
	int peer_is_esock;       /* the peer announced esock's socket layer */
	/*
	 * Of tx_msgs and rx_msgs, those that took the direct path: written in
	 * the call without a queued work request, or placed straight into the
	 * reader's buffer without a receive buffer (docs/libesock.md).
	 */
	uint64_t tx_now, rx_now;
	/*
	 * Non-blocking reads of a socket in an epoll set answered EAGAIN
	 * without a system call: the read before emptied the kernel's queue
	 * (docs/libesock.md).
	 */
	uint64_t rx_eagain_quick;
	/*
	 * What carries the connection: "user" (the user-level endpoint over
	 * kernel TCP), "verbs" (the kernel's iWARP through rdma-core) or
	 * "offload" (tcpserverd).  (Last: a caller that asks for fewer octets
	 * gets the fields before it.)
	 */
	char backend[8];
};

/* ---- The extended calls (ESOCK_GET_API) ---- */

enum esock_op {
	ESOCK_OP_SEND = 1,
	ESOCK_OP_RECV = 2,
	ESOCK_OP_WRITE = 3,  /* RDMA Write */
	ESOCK_OP_READ = 4,   /* RDMA Read */
};
#define ESOCK_OP_BIT(op) (1u << (op))

/* Memory access rights for esock_api.reg (values of esock/iwarp.h's enum esock_access). */
#define ESOCK_REG_LOCAL_WRITE 0x1
#define ESOCK_REG_REMOTE_WRITE 0x2
#define ESOCK_REG_REMOTE_READ 0x4

/* A completion of an asynchronous operation. */
struct esock_event {
	uint64_t tag;        /* the caller's tag */
	int fd;              /* the socket */
	int op;              /* enum esock_op */
	int status;          /* 0, or a negative errno (-ECONNRESET, -EACCES, ...) */
	uint32_t len;        /* octets moved (receives: message length) */
};

#define ESOCK_API_VERSION 1

/*
 * Every call returns 0 (or a count, or a handle) or a negative errno.
 * Buffers given to send/recv/write/read belong to the library until their
 * event arrives.  A socket's send queue holds 32 operations (its own
 * writes share it): send/write/read return -EAGAIN when it is full, until
 * events have come.  Operations complete on the event queue bound to the socket
 * for their type (bind_eq), in posting order per socket.
 */
struct esock_api {
	uint32_t version;    /* ESOCK_API_VERSION */
	uint32_t size;       /* sizeof(struct esock_api) */

	/* Registers [addr, addr+len) for the connection of |fd|; *stag for the peer. */
	int (*reg)(int fd, void *addr, size_t len, unsigned access, uint32_t *stag);
	int (*dereg)(int fd, uint32_t stag);

	/* Event queues: create (returns a handle >= 0), its eventfd for poll/epoll, destroy. */
	int (*eq_create)(int depth);
	int (*eq_fd)(int eq);
	int (*eq_destroy)(int eq);
	/* Sends completions of the operations in |ops| (ESOCK_OP_BIT) on |fd| to |eq|. */
	int (*bind_eq)(int fd, unsigned ops, int eq);
	/* Takes up to |n| events, waiting up to |timeout_ms| (-1 forever). */
	int (*eq_poll)(int eq, struct esock_event *ev, int n, int timeout_ms);

	/* One message from |buf| (no copy). */
	int (*send)(int fd, const void *buf, size_t len, uint64_t tag);
	/* Posts |buf| for the next message (only on sockets with ESOCK_RCVDEPTH 0). */
	int (*recv)(int fd, void *buf, size_t len, uint64_t tag);
	/* RDMA Write of |buf| to the peer's |rkey| at |raddr|; RDMA Read from there into |buf|. */
	int (*write)(int fd, const void *buf, size_t len, uint64_t raddr, uint32_t rkey,
		     uint64_t tag);
	int (*read)(int fd, void *buf, size_t len, uint64_t raddr, uint32_t rkey, uint64_t tag);

	/* The queue pair under |fd| for esock/iwarp.h calls (NULL: not connected in DDPMODE). */
	struct esock_qp *(*qp)(int fd);
};

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_ESOCK_H */
