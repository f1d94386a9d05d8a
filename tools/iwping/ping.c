/* SPDX-License-Identifier: MIT */
/*
 * The rping exchange over one connection, and the connection handling around
 * it.  Per ping: the client Sends the descriptor of its start buffer; the
 * server RDMA-Reads it into its RDMA buffer and Sends a "go ahead"; the client
 * Sends the descriptor of its RDMA buffer; the server RDMA-Writes the string
 * it read (up to and including its NUL) there and Sends another "go ahead";
 * the client compares (-V) and prints (-v).  The server serves one client, or
 * with -P every client, each in its own thread, until killed.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/iwping/iwping.h"

/* rping's ping data: "rdma-ping-N: ", then ASCII 'A'..'z' rising from |first|, NUL-terminated. */
static void fill_ping(char *buf, int size, int ping, int first)
{
	int i = snprintf(buf, (size_t)size, "rdma-ping-%d: ", ping);
	int ch = first;

	for (; i < size; i++) {
		buf[i] = (char)ch;
		ch = ch == 'z' ? 'A' : ch + 1;
	}
	buf[size - 1] = '\0';
}

static int client_ping(struct iwping_conn *c, int ping, int first)
{
	const struct iwping_opts *o = c->o;
	int r;

	fill_ping(c->start_buf, o->size, ping, first);
	if (iwping_send_desc(c, c->start_buf, c->start_mr) < 0)
		return -1;
	r = iwping_wait(c, ESOCK_WC_RECV); /* the server has read it */
	if (r)
		return r;
	if (iwping_send_desc(c, c->rdma_buf, c->rdma_mr) < 0)
		return -1;
	r = iwping_wait(c, ESOCK_WC_RECV); /* the server has written it back */
	if (r)
		return r;
	if (o->validate && memcmp(c->start_buf, c->rdma_buf, (size_t)o->size) != 0) {
		fprintf(stderr, "iwping: client: ping %d: data mismatch\n", ping);
		return -1;
	}
	if (o->verbose)
		printf("ping data: %.*s\n", o->size, c->rdma_buf);
	return 0;
}

/* -C 0 pings until the server goes away, which is then the normal end. */
static int client_loop(struct iwping_conn *c)
{
	const struct iwping_opts *o = c->o;
	int first = 'A', ping, r = 0;

	for (ping = 0; !o->count || ping < o->count; ping++) {
		r = client_ping(c, ping, first);
		if (r)
			break;
		first = first == 'z' ? 'A' : first + 1;
	}
	if (r == IWPING_DISCONNECTED && o->count) {
		fprintf(stderr, "iwping: client: server disconnected after %d of %d pings\n", ping,
			o->count);
		return -1;
	}
	return r == IWPING_DISCONNECTED ? 0 : r;
}

int iwping_run_client(const struct iwping_opts *o)
{
	struct iwping_conn c;
	int r = -1;

	if (iwping_conn_setup(&c, o, false) < 0 || iwping_post_recv(&c) < 0)
		goto out;
	r = esock_qp_connect(c.qp, (const struct sockaddr *)&o->addr, o->addrlen, &o->param);
	if (r < 0) {
		fprintf(stderr, "iwping: client: connect: %s\n", strerror(-r));
		r = -1;
		goto out;
	}
	iwping_print_conn(&c);
	r = client_loop(&c);
	esock_qp_disconnect(c.qp);
out:
	iwping_conn_free(&c);
	return r;
}

/* The Write carries the string the Read brought, with its NUL, as rping's strlen + 1. */
static uint32_t echo_len(const struct iwping_conn *c, uint32_t read_len)
{
	size_t n = strnlen(c->rdma_buf, read_len);

	return (uint32_t)(n < read_len ? n + 1 : n);
}

/* One ping, from the client's start descriptor (already received) on. */
static int server_ping(struct iwping_conn *c)
{
	uint32_t len = c->peer.len;
	int r;

	if (len > (uint32_t)c->o->size) {
		fprintf(stderr, "iwping: server: the client's buffer (%u octets) is larger than ours"
			" (-S %d)\n", len, c->o->size);
		return -1;
	}
	if (iwping_post_rdma(c, ESOCK_WR_RDMA_READ, len) < 0)
		return -1;
	r = iwping_wait(c, ESOCK_WC_RDMA_READ);
	if (r)
		return r;
	if (c->o->verbose)
		printf("server ping data: %.*s\n", (int)len, c->rdma_buf);
	if (iwping_send_desc(c, NULL, NULL) < 0)
		return -1;
	r = iwping_wait(c, ESOCK_WC_RECV); /* the client's sink descriptor */
	if (r)
		return r;
	if (iwping_post_rdma(c, ESOCK_WR_RDMA_WRITE, echo_len(c, len)) < 0)
		return -1;
	r = iwping_wait(c, ESOCK_WC_RDMA_WRITE);
	if (r)
		return r;
	return iwping_send_desc(c, NULL, NULL);
}

/* Serves one connection request to its end; the client leaving is success. */
static int serve(const struct iwping_opts *o, struct esock_conn_req *req)
{
	struct iwping_conn c;
	int r;

	if (iwping_conn_setup(&c, o, true) < 0 || iwping_post_recv(&c) < 0) {
		esock_reject(req, NULL, 0);
		iwping_conn_free(&c);
		return -1;
	}
	r = esock_accept(req, c.qp, &o->param);
	if (r < 0) {
		fprintf(stderr, "iwping: server: accept: %s\n", strerror(-r));
		iwping_conn_free(&c);
		return -1;
	}
	iwping_print_conn(&c);
	do
		r = iwping_wait(&c, ESOCK_WC_RECV);
	while (r == 0 && (r = server_ping(&c)) == 0);
	iwping_dbg(o, "client %s", r == IWPING_DISCONNECTED ? "disconnected" : "failed");
	esock_qp_disconnect(c.qp);
	iwping_conn_free(&c);
	return r == IWPING_DISCONNECTED ? 0 : -1;
}

struct serve_arg {
	const struct iwping_opts *o;
	struct esock_conn_req *req;
};

static void *serve_thread(void *p)
{
	struct serve_arg a = *(struct serve_arg *)p;

	free(p);
	serve(a.o, a.req);
	return NULL;
}

/* -P: every connection in a detached thread of its own, as rping does. */
static int serve_detached(const struct iwping_opts *o, struct esock_conn_req *req)
{
	struct serve_arg *a = malloc(sizeof(*a));
	pthread_attr_t attr;
	pthread_t t;
	int r = ENOMEM;

	if (a) {
		*a = (struct serve_arg){ o, req };
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&t, &attr, serve_thread, a);
		pthread_attr_destroy(&attr);
	}
	if (r) {
		fprintf(stderr, "iwping: server: thread: %s\n", strerror(r));
		free(a);
		esock_reject(req, NULL, 0);
	}
	return 0;
}

static uint16_t sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* -p 0: the kernel picks the port, and we say which (scripts read this line). */
static int start_listening(const struct iwping_opts *o, struct esock_listener **l)
{
	struct sockaddr_storage bound;
	int r = esock_listen((const struct sockaddr *)&o->addr, o->addrlen, 3, l);

	if (r < 0) {
		fprintf(stderr, "iwping: server: listen: %s\n", strerror(-r));
		return -1;
	}
	if (esock_listener_addr(*l, &bound) == 0 && (sockaddr_port(&o->addr) == 0 || o->debug)) {
		printf("listening on port %u\n", sockaddr_port(&bound));
		fflush(stdout);
	}
	return 0;
}

int iwping_run_server(const struct iwping_opts *o)
{
	struct esock_listener *l;
	struct esock_conn_req *req;
	int r;

	if (start_listening(o, &l) < 0)
		return -1;
	for (;;) {
		r = esock_get_request(l, &req, -1);
		if (r == -EPROTO || r == -ETIMEDOUT || r == -EINTR)
			continue; /* not an MPA peer: it was reset, wait for the next */
		if (r < 0) {
			fprintf(stderr, "iwping: server: connection request: %s\n", strerror(-r));
			break;
		}
		iwping_dbg(o, "connection request");
		if (!o->persistent) {
			r = serve(o, req);
			break;
		}
		serve_detached(o, req);
	}
	esock_listener_close(l);
	return r < 0 ? -1 : 0;
}
