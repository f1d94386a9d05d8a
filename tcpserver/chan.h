/* SPDX-License-Identifier: MIT */
/*
 * A host's channel to tcpserverd on one machine: a sealed memfd holding two
 * record queues (requests to tcpserverd, responses and events back) and two
 * eventfds: one the host rings when tcpserverd sleeps, one tcpserverd rings
 * when the host sleeps (in its own poll or epoll, among its other files).  The host makes it and
 * passes both descriptors over tcpserverd's Unix socket (SCM_RIGHTS); that
 * socket stays open as the host's presence: its end is the host's end.
 * The memfd is sealed against shrinking and growing, so that a host cannot
 * pull the memory from under tcpserverd (it checks the seals).
 */
#ifndef ESOCK_TCPSERVER_CHAN_H
#define ESOCK_TCPSERVER_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include "tcpserver/shmq.h"

#define TSP_CHAN_CAP (1u << 20) /* each queue's data area */

struct tsp_chan {
	void *mem;
	size_t len;
	int memfd, bell;         /* bell: tcpserverd's eventfd (the host rings it) */
	int hbell;               /* the host's eventfd (tcpserverd rings it) */
	struct esock_shmq *req;  /* host -> tcpserverd */
	struct esock_shmq *resp; /* tcpserverd -> host */
};

/* Host: a new channel with queues of |cap| octets.  0 or -errno. */
int tsp_chan_create(struct tsp_chan *c, uint32_t cap);
/* Host: hands the channel to tcpserverd over the connected Unix socket |usock|. */
int tsp_chan_send(const struct tsp_chan *c, int usock);
/* tcpserverd: takes a channel from |usock| (checks seals and sizes).  0 or -errno. */
int tsp_chan_recv(struct tsp_chan *c, int usock);
void tsp_chan_close(struct tsp_chan *c);

#endif /* ESOCK_TCPSERVER_CHAN_H */
