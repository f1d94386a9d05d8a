/* SPDX-License-Identifier: MIT */
/*
 * TSP, the TCP Server protocol: how a host process asks tcpserverd to carry
 * out its socket calls, and how tcpserverd answers and tells of events.  One
 * format for both transports (shared-memory queues on one machine, RDMA
 * Sends and Writes through the esock endpoint between nodes); each message
 * is one record of the transport, never split.  Sans-I/O: these functions
 * take and produce octets, nothing else.  docs/tcpserver.md has the format
 * with a table per message.
 *
 * Every message: a 16-octet header in network byte order, then a body whose
 * layout the (type, op) pair fixes: fixed fields, then for some an octet
 * string (data, an option's value) running to the end of the body.  A
 * response's body starts with its result: >= 0, or -errno (Linux numbers);
 * a failed call's response carries nothing after it.
 */
#ifndef ESOCK_TCPSERVER_PROTO_TSP_H
#define ESOCK_TCPSERVER_PROTO_TSP_H

#include <stddef.h>
#include <stdint.h>

#define ESOCK_TSP_VERSION 1
#define ESOCK_TSP_HDR_LEN 16
#define ESOCK_TSP_BODY_MAX (256u * 1024) /* data travels in pieces no larger */
#define ESOCK_TSP_OPT_MAX 128            /* an option's value, at most */
/*
 * Asynchronous send: octets a host may have outstanding on one socket (sent
 * in SENDs, not yet returned by CREDIT events).  A SEND beyond it: -ENOBUFS.
 */
#define ESOCK_TSP_CREDIT_WINDOW (1u << 20)
/*
 * Eager receive: tcpserverd pushes at most this window in DATA events ahead
 * of the host's consumption (given back with RECV + ESOCK_TSP_MSG_CREDIT).
 * A DATA event without octets is the end of the stream (the peer's FIN, or an
 * error the socket's next call answers).
 */

enum esock_tsp_type {
	ESOCK_TSP_REQ = 1,   /* host -> tcpserverd: a call */
	ESOCK_TSP_RESP = 2,  /* tcpserverd -> host: its result (same op and id) */
	ESOCK_TSP_EVENT = 3, /* tcpserverd -> host, unasked: readiness, eager data, ... */
};

enum esock_tsp_op {
	ESOCK_TSP_HELLO = 1,   /* versions and optimisations agreed; admission */
	ESOCK_TSP_BYE,         /* the host leaves: its sockets are closed */
	ESOCK_TSP_SOCKET,
	ESOCK_TSP_BIND,
	ESOCK_TSP_LISTEN,
	ESOCK_TSP_ACCEPT,
	ESOCK_TSP_CONNECT,
	ESOCK_TSP_SEND,
	ESOCK_TSP_RECV,
	ESOCK_TSP_CLOSE,
	ESOCK_TSP_SHUTDOWN,
	ESOCK_TSP_SETSOCKOPT,
	ESOCK_TSP_GETSOCKOPT,
	ESOCK_TSP_GETSOCKNAME,
	ESOCK_TSP_GETPEERNAME,
	ESOCK_TSP_WATCH,       /* readiness wanted from now on (events READY) */
	/* Events only. */
	ESOCK_TSP_READY,       /* the socket's readiness changed */
	ESOCK_TSP_DATA,        /* eager receive: octets that came, pushed ahead of a recv */
	ESOCK_TSP_ACCEPTED,    /* eager accept: a connection taken ahead, with its setup */
	ESOCK_TSP_CREDIT,      /* asynchronous send: octets tcpserverd has handed to TCP */
	/* Requests again (numbered after the events: the ones before keep their numbers). */
	ESOCK_TSP_FORK,        /* the host forks: its sockets copied for the child (result: a token) */
	/*
	 * Registered buffers (ESOCK_TSP_F_REG_BUFFERS): host memory tcpserverd
	 * reads and writes itself, so that data crosses without a host copy.
	 */
	ESOCK_TSP_REG,         /* a range of host memory (result: its region, >= 1) */
	ESOCK_TSP_DEREG,       /* a region no more */
	ESOCK_TSP_SEND_REG,    /* SEND of octets in a region (answered once tcpserverd has read them) */
	ESOCK_TSP_RECV_REG,    /* RECV into a region (result: the octets placed there) */
	ESOCK_TSP_OP_MAX = ESOCK_TSP_RECV_REG
};

/* REG's access: what tcpserverd may do with the region. */
enum {
	ESOCK_TSP_REG_READ = 1u << 0,  /* read it: SEND_REG */
	ESOCK_TSP_REG_WRITE = 1u << 1, /* write it: RECV_REG */
};
/* Regions a host may have at once. */
#define ESOCK_TSP_REGIONS_MAX 64

/* HELLO's flags: the optimisations a host asks for and tcpserverd grants. */
enum {
	ESOCK_TSP_F_ASYNC_SEND = 1u << 0,    /* SEND answered when queued; CREDIT events */
	ESOCK_TSP_F_EAGER_RECV = 1u << 1,    /* DATA events ahead of RECV */
	ESOCK_TSP_F_EAGER_ACCEPT = 1u << 2,  /* ACCEPTED events ahead of ACCEPT */
	ESOCK_TSP_F_SETUP_ACCEPT = 1u << 3,  /* ACCEPT's answer carries both addresses */
	ESOCK_TSP_F_REG_BUFFERS = 1u << 4,   /* data placed in registered host buffers */
	ESOCK_TSP_F_ALL = (1u << 5) - 1,
	/*
	 * Not an optimisation: the host is a forked child taking the sockets
	 * its parent's FORK copied, under the same handles; HELLO's header
	 * |sock| is FORK's token.  Granted when the token was good.
	 */
	ESOCK_TSP_F_INHERIT = 1u << 5,
};

/* SOCKET's type flags and RECV/SEND flags that travel (others are refused). */
enum {
	ESOCK_TSP_NONBLOCK = 1u << 0,
	ESOCK_TSP_MSG_PEEK = 1u << 1,
	ESOCK_TSP_MSG_WAITALL = 1u << 2,
	ESOCK_TSP_MSG_MORE = 1u << 3,
	/* RECV on a socket that receives eagerly: gives back |max| octets of credit, reads nothing. */
	ESOCK_TSP_MSG_CREDIT = 1u << 4,
	/*
	 * RECV, SEND, ACCEPT: this call never waits, whatever the socket's mode
	 * (MSG_DONTWAIT).  ACCEPT's NONBLOCK is the new socket's mode.
	 */
	ESOCK_TSP_MSG_DONTWAIT = 1u << 5,
	/*
	 * SEND: posted, the host does not wait for its answer (it is told of a
	 * failure by that answer when it comes, or by its next call): a
	 * success may be queued without waking the host.
	 */
	ESOCK_TSP_MSG_POSTED = 1u << 6,
};

/*
 * A request whose header id has this bit the host posted (any op): it does
 * not wait for the answer, which tcpserverd may then queue without waking
 * it.  Ids of calls the host waits for never have it.
 */
#define ESOCK_TSP_ID_POSTED (1u << 31)

/*
 * tcpserverd's own socket options (SETSOCKOPT/GETSOCKOPT at this level):
 * ESOCK_TSP_SO_NONBLOCK (an int) is the socket's mode as the host's program
 * set it after SOCKET or ACCEPT (fcntl O_NONBLOCK, FIONBIO): its calls never
 * wait.
 */
#define ESOCK_TSP_SOL 0x7473
#define ESOCK_TSP_SO_NONBLOCK 1

/* READY's and WATCH's events: POLLIN, POLLOUT, POLLPRI, POLLERR, POLLHUP, POLLRDHUP as Linux numbers them. */

struct esock_tsp_hdr {
	uint8_t version;
	uint8_t type;   /* enum esock_tsp_type */
	uint16_t op;    /* enum esock_tsp_op */
	uint32_t len;   /* body octets after the header */
	uint32_t id;    /* the host's number for a request; its response carries it back */
	uint32_t sock;  /* tcpserverd's socket handle (0: none) */
};

/* An IPv4 or IPv6 address and port (24 octets on the wire). */
struct esock_tsp_addr {
	uint8_t family;     /* 4 or 6 (0: none) */
	uint16_t port;
	uint32_t scope_id;
	uint8_t addr[16];   /* IPv4 in the first 4 */
};

struct esock_tsp_msg {
	struct esock_tsp_hdr h;
	int32_t result;     /* responses: >= 0, or -errno */
	union {
		struct { uint16_t vmin, vmax; uint32_t flags, pid; } hello;                  /* REQ */
		struct { uint16_t version; uint32_t flags, max_socks, max_data; } hello_ok; /* RESP */
		struct { uint32_t family, flags; } socket;     /* REQ (stream sockets only) */
		struct esock_tsp_addr addr;                    /* BIND, CONNECT; GETSOCK/PEERNAME RESP */
		struct { int32_t backlog; } listen;
		struct { uint32_t flags; } accept;             /* REQ */
		/* ACCEPT RESP (the new handle is the result), ACCEPTED (it is |sock|) */
		struct { uint32_t sock; struct esock_tsp_addr peer, local; } accepted;
		struct { uint32_t flags; } send;               /* REQ: + data */
		struct { uint32_t max, flags; } recv;          /* REQ; RESP: data */
		struct { int32_t how; } shutdown;
		struct { int32_t level, name; } opt;           /* SETSOCKOPT REQ: + value */
		struct { int32_t level, name; uint32_t len; } getopt; /* REQ; RESP: value */
		struct { uint32_t events; } watch;             /* WATCH REQ, READY */
		struct { uint32_t octets; } credit;            /* CREDIT */
		struct { uint64_t addr, len; uint32_t access, key; } reg; /* REG REQ (key: the STag, across the network) */
		struct { uint32_t region; } dereg;             /* DEREG REQ */
		/* SEND_REG, RECV_REG REQ: |len| octets (at most, for RECV_REG) at |addr| of |region| */
		struct { uint32_t flags, region, len; uint64_t addr; } xfer;
	} u;
	const uint8_t *data; /* the octet string (borrowed: into the decoded buffer) */
	uint32_t data_len;
};

/*
 * Decodes the header at |in| (|n| octets).  Returns ESOCK_TSP_HDR_LEN,
 * -EAGAIN (fewer than 16 octets), -EPROTONOSUPPORT (another version),
 * -EPROTO (unknown type or op, or an op that type cannot carry),
 * -EMSGSIZE (body longer than ESOCK_TSP_BODY_MAX + its fixed part).
 */
int esock_tsp_hdr_decode(const uint8_t *in, size_t n, struct esock_tsp_hdr *h);

/*
 * Decodes one whole message (header and body) from |in|.  Returns the
 * octets it took, or a negative code: those of esock_tsp_hdr_decode,
 * -EAGAIN (the body is not all there), -EBADMSG (a body that does not fit
 * its op: too short, too long, a bad address family, an option value longer
 * than ESOCK_TSP_OPT_MAX).  m->data points into |in|.
 */
int esock_tsp_decode(const uint8_t *in, size_t n, struct esock_tsp_msg *m);

/*
 * Encodes |m| (m->h.len is computed; version set) into |out| (|cap|
 * octets).  Returns the length, -ENOBUFS (too small), -EINVAL (a (type,
 * op) that does not exist, data too long for one message).
 */
int esock_tsp_encode(const struct esock_tsp_msg *m, uint8_t *out, size_t cap);
/* The length esock_tsp_encode will give |m| (to encode it in place), or -EINVAL. */
int esock_tsp_encoded_len(const struct esock_tsp_msg *m);

/* The op's name ("SEND"), or "?". */
const char *esock_tsp_op_name(unsigned op);

#endif /* ESOCK_TCPSERVER_PROTO_TSP_H */
