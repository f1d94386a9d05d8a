/* SPDX-License-Identifier: MIT */
/*
 * iwping: rping's ping-pong over the esock endpoint (esock/iwarp.h).  This
 * header holds what the three parts share: the options (iwping.c parses them),
 * the per-connection state with its registered buffers and the completion
 * wait (conn.c), and the client and server loops (ping.c).
 *
 * The application protocol is rping's (rdma-core librdmacm/examples/rping.c),
 * so that either side interoperates with the real one on kernel siw: every
 * message is a 16-octet buffer descriptor, be64 address, be32 STag, be32
 * length.
 */
#ifndef ESOCK_TOOLS_IWPING_H
#define ESOCK_TOOLS_IWPING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <esock/iwarp.h>

/* rping's limits: the smallest buffer holds "rdma-ping-%d: " for any count. */
#define IWPING_MIN_SIZE 23
#define IWPING_MAX_SIZE 65535
#define IWPING_DEFAULT_SIZE 64
#define IWPING_DEFAULT_PORT 7174
#define IWPING_DESC_LEN 16

/* rping's exit codes: EINVAL for bad options, -1 from main when a run fails. */
#define IWPING_EXIT_USAGE 22
#define IWPING_EXIT_FAIL 255

struct iwping_opts {
	int role;                       /* 1 server, 0 client, -1 not given */
	struct sockaddr_storage addr;   /* -a (port filled in from -p) */
	socklen_t addrlen;
	int count;                      /* -C: 0 means forever */
	int size;                       /* -S */
	int verbose, validate, debug;   /* -v, -V, -d (repeatable) */
	bool persistent;                /* -P */
	struct esock_conn_param param;  /* --crc/--no-crc, --markers, --peer */
};

/* A received descriptor, in host order. */
struct iwping_desc {
	uint64_t addr;
	uint32_t stag;
	uint32_t len;
};

/* One connection: rping's control block, minus the threads and semaphores. */
struct iwping_conn {
	const struct iwping_opts *o;
	const char *role;               /* "client" / "server", for messages */
	struct esock_pd *pd;
	struct esock_cq *cq;
	struct esock_qp *qp;
	uint8_t recv_buf[IWPING_DESC_LEN], send_buf[IWPING_DESC_LEN];
	struct esock_mr *recv_mr, *send_mr;
	char *rdma_buf;                 /* server: Read sink, Write source; client: Write sink */
	struct esock_mr *rdma_mr;
	char *start_buf;                /* client only: the Read source */
	struct esock_mr *start_mr;
	struct iwping_desc peer;        /* the last descriptor received */
};

/* What iwping_wait returns besides 0 and -1. */
#define IWPING_DISCONNECTED 1

void iwping_dbg(const struct iwping_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* conn.c */
int iwping_conn_setup(struct iwping_conn *c, const struct iwping_opts *o, bool server);
void iwping_conn_free(struct iwping_conn *c);
int iwping_post_recv(struct iwping_conn *c);
int iwping_send_desc(struct iwping_conn *c, const void *buf, const struct esock_mr *mr);
int iwping_post_rdma(struct iwping_conn *c, enum esock_wr_opcode op, uint32_t len);
int iwping_wait(struct iwping_conn *c, enum esock_wc_opcode want);
void iwping_print_conn(struct iwping_conn *c);

/* ping.c */
int iwping_run_client(const struct iwping_opts *o);
int iwping_run_server(const struct iwping_opts *o);

#endif /* ESOCK_TOOLS_IWPING_H */
