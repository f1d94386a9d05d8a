/* SPDX-License-Identifier: MIT */
/* The offload mode's insides, shared by sock_off.c and sock_off_chan.c. */
#ifndef ESOCK_LIBESOCK_SOCK_OFF_INT_H
#define ESOCK_LIBESOCK_SOCK_OFF_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tcpserver/host.h"

struct sock_off;

/* A connection taken ahead (eager accept), waiting for accept. */
struct off_acc {
	struct sock_off *o;       /* its state (DATA may come before the accept) */
	struct esock_tsp_addr peer, local;
};

/* An offloaded socket's state (esock_sock.off; its fields under the sock's lock). */
struct sock_off {
	struct esock_sock *s;     /* NULL while a connection taken ahead waits for accept */
	uint32_t handle;          /* tcpserverd's */
	int family;               /* AF_INET or AF_INET6 */
	bool orphan;              /* inherited by fork: its channel is the parent's */
	bool listening, connected, accepted;
	unsigned watched;         /* what WATCH asked for */
	unsigned kready;          /* what READY said last, less what our own calls found gone */
	uint64_t rx_gen;          /* epoll's edges (sock_off_rx_gen) */
	int err;                  /* sticky, for the next call (an errno) */
	/* Eager receive: octets pushed in DATA, not read yet. */
	bool eager_rx, rx_end;
	uint8_t *rx;
	size_t rx_off, rx_len, rx_cap;
	uint32_t rx_owed;         /* octets read, their credit not given back yet */
	/* Eager accept: connections taken ahead. */
	struct off_acc *acq;
	unsigned acq_head, acq_n, acq_cap;
	/* Asynchronous send: octets sent, not yet given back in CREDIT. */
	uint32_t tx_out;
	/* Addresses known (setup with accept, or asked once). */
	struct esock_tsp_addr local, peer;
	bool have_local, have_peer;
	/* share=P: the host's own listener in the listener's reuseport group (sock_off_share.c). */
	int kfd;                  /* -1: none (every connection is tcpserverd's) */
	bool k_first;             /* accept looks at it first next time (the two take turns) */
	bool k_pending;           /* it may hold connections: an edge since its last EAGAIN */
	uint64_t k_news;          /* its edges seen by epoll (part of the rx generation) */
};

/* The process's channel: its calls and its events under |lock|. */
struct off_proc {
	pthread_mutex_t lock;
	const char *path;
	uint32_t want, flags;     /* HELLO's flags asked for, granted */
	int share;                /* share=P: % of a listener's connections the host's own TCP takes */
	bool bad_opt;             /* ESOCK_TCPSERVER_OPT had a word that means nothing */
	struct tsp_host *h;
	bool broken;
	uint32_t fork_token;      /* FORK's, for the child being made (0: none) */
	struct sock_off **byh;    /* sockets by handle */
	uint32_t cap;
};
extern struct off_proc off_proc;

/* With the lock: the channel (opened the first time), or NULL. */
struct tsp_host *off_host(void);
void off_atfork(void);
/* With the lock: a call (type set here); its result, -EPIPE when tcpserverd is gone. */
int off_call(struct esock_tsp_msg *req, struct esock_tsp_msg *resp);
/*
 * With the lock: the same without waiting for the answer (it comes among
 * the events; a failure applies to its socket).  0, or -errno: then make
 * it a call.
 */
int off_post(struct esock_tsp_msg *req);
/* With the lock: events applied (their socks' locks taken). */
void off_pump_locked(void);
/* The same for the events a call kept while it waited for its answer (those before it). */
void off_pump_kept_locked(void);
int off_register(struct sock_off *o);
void off_unregister(uint32_t handle);
/* With the sock's lock. */
int off_rx_append(struct sock_off *o, const uint8_t *p, uint32_t n);
int off_acq_push(struct sock_off *o, const struct esock_tsp_msg *ev);
/* A socket's state, new (NULL: no memory); freed with its queues. */
/*
 * sock_off_reg.c (channel lock held): the region registered with tcpserverd
 * that holds [buf, buf + len) (with write access for a receive), 0 for none;
 * a forked child's registrations dropped.
 */
uint32_t off_reg_find(const void *buf, size_t len, bool write);
void off_reg_forget(void);
struct sock_off *off_new(uint32_t handle, int family);
void off_free(struct sock_off *o);

/* sock_off_share.c: the host's share of a listener's connections (share=P). */
int off_share_bind(struct esock_sock *s);           /* before BIND: 0 or -errno */
void off_share_listen(struct esock_sock *s, int backlog); /* after LISTEN: joins if it can */
int off_share_accept(struct sock_off *o, struct sockaddr *a, socklen_t *alen, int flags);
bool off_share_pending(const struct sock_off *o);

#endif /* ESOCK_LIBESOCK_SOCK_OFF_INT_H */
