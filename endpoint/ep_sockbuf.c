/* SPDX-License-Identifier: MIT */
/*
 * How much a QP lets kernel TCP hold when both ends share this CPU.
 *
 * Then the "network" is two memory copies on one core and the
 * bandwidth-delay product is about zero: octets queued in the socket buffers
 * buy nothing, and they go cold there.  With CRC on, the receiver is the
 * slower side, so left alone the kernel grows the buffers to megabytes:
 * measured on loopback with both ends on one CPU, 1-5 MiB sat in the two
 * socket buffers and the kernel's copies out of them ran at memory speed
 * (about 8 GB/s, against 18-23 GB/s for plain TCP in the same run, whose
 * queues stay short), so the receiver fell further behind.  Bounding the
 * unsent octets (TCP_NOTSENT_LOWAT: the congestion window is not limited)
 * and the receive window (SO_RCVBUF) keeps the data in cache.
 *
 * Only then: the sender is woken each time half the unsent bound has left,
 * which costs ends on different CPUs a cross-CPU wake-up per 32 KiB (1 MiB
 * streams lost a fifth on loopback across CPUs), and other hosts need
 * buffers that cover a real bandwidth-delay product.  "Shares this CPU":
 * the peer is this host (loopback or our own address) and its last segment
 * was processed on the CPU we run on (SO_INCOMING_CPU: loopback handles a
 * segment on the sender's CPU).  Each end looks once, when 64 KiB have gone
 * through its socket either way (ep_sockbuf_moved): the last segment in is
 * then the peer's data or its ACK of ours, both handled on the peer's CPU,
 * and a connection that never moves much (a request and a reply) asks
 * nothing (three system calls a connection less).  That holds for ends
 * pinned to one core; ends the scheduler may move keep the kernel's
 * autotuning.
 *
 * The unsent bound pays off for large messages only.  Each time the bound
 * is reached the kernel pushes what it holds and the writer waits for half
 * of it to leave: for 64 KiB and 1 MiB writes that is a wake-up per 32 KiB
 * of full segments, and the data stays warm (socket 64 KiB stream on one CPU
 * 0.92x TCP bounded, 0.55x not); for 4 KiB messages it is a push of a few
 * of them at a time, a segment and a wake-up of the reader each, where TCP
 * merges them into 45 KiB segments (4 KiB stream 0.40x bounded, 0.70x not;
 * 1.7 messages a segment against 13).  So the bound follows the messages
 * written (ep_sockbuf_msg): on once a few large ones went in a row, off
 * again once a few small ones did.  The receive buffer bound holds for any
 * size.
 *
 *   ESOCK_LOCAL_LOWAT=octets    unsent octets while messages are large (0: no bound)
 *   ESOCK_LOCAL_RCVBUF=octets   SO_RCVBUF (0: autotuning)
 *   ESOCK_LOCAL_BUFS=always     also when the peer's CPU differs (any same-host peer)
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "endpoint/ep.h"
#include "libc/real.h"
#include "util/env.h"
#include "util/log.h"

/* The peer is this host: a loopback address, or our own address. */
bool ep_sockbuf_same_host(const struct sockaddr_storage *local,
			  const struct sockaddr_storage *remote)
{
	if (remote->ss_family == AF_INET) {
		const struct sockaddr_in *r = (const void *)remote, *l = (const void *)local;

		return (ntohl(r->sin_addr.s_addr) >> 24) == 127 ||
		       (local->ss_family == AF_INET && l->sin_addr.s_addr == r->sin_addr.s_addr);
	}
	if (remote->ss_family == AF_INET6) {
		const struct sockaddr_in6 *r = (const void *)remote, *l = (const void *)local;

		if (IN6_IS_ADDR_LOOPBACK(&r->sin6_addr) ||
		    (IN6_IS_ADDR_V4MAPPED(&r->sin6_addr) && r->sin6_addr.s6_addr[12] == 127))
			return true;
		return local->ss_family == AF_INET6 &&
		       memcmp(&l->sin6_addr, &r->sin6_addr, sizeof(r->sin6_addr)) == 0;
	}
	return false;
}

/* The peer's last segment was processed on the CPU this thread runs on. */
static bool peer_on_this_cpu(int fd)
{
	int cpu = -1;
	socklen_t l = sizeof(cpu);

	return ep_getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &l) == 0 &&
	       cpu == sched_getcpu();
}

void ep_sockbuf_tune(struct esock_qp *qp)
{
	const char *when = getenv("ESOCK_LOCAL_BUFS");
	int rcvbuf;

	qp->buf_tuned = true;
	if (atomic_load(&ep_restricted)) /* (no socket options in a sandbox) */
		return;
	ep_qp_addrs(qp);
	if (!ep_sockbuf_same_host(&qp->info.local, &qp->info.remote) ||
	    (!(when && strcmp(when, "always") == 0) && !peer_on_this_cpu(qp->fd)))
		return;
	qp->buf_lowat = esock_env_int("ESOCK_LOCAL_LOWAT", EP_LOCAL_LOWAT_DEFAULT, 0, 1 << 30);
	if (qp->buf_lowat) {
		/* (a connection carried over from another process may have it set already) */
		int cur = 0;
		socklen_t l = sizeof(cur);

		qp->buf_bound = ep_getsockopt(qp->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &cur, &l) == 0 &&
				cur != 0;
	}
	rcvbuf = esock_env_int("ESOCK_LOCAL_RCVBUF", EP_LOCAL_RCVBUF_DEFAULT, 0, 1 << 30);
	if (rcvbuf > 0 &&
	    REAL(setsockopt)(qp->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		log_debug("[fd %d] SO_RCVBUF refused", qp->fd);
	log_debug("[fd %d] peer on this CPU: unsent bound %d for large messages, receive buffer %d",
		  qp->fd, qp->buf_lowat, rcvbuf);
}

void ep_sockbuf_flip(struct esock_qp *qp)
{
	/* 0: the kernel's default again (no bound) */
	int lowat = qp->buf_bound ? 0 : (int)qp->buf_lowat;

	qp->buf_run = 0;
	if (atomic_load(&ep_restricted) || /* (a sandbox began: no socket options any more) */
	    REAL(setsockopt)(qp->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat)) < 0) {
		log_debug("[fd %d] TCP_NOTSENT_LOWAT refused", qp->fd);
		qp->buf_lowat = 0; /* (asked no more) */
		return;
	}
	qp->buf_bound = !qp->buf_bound;
	log_debug("[fd %d] unsent bound %s", qp->fd, qp->buf_bound ? "on" : "off");
}
