/* SPDX-License-Identifier: MIT */
/*
 * What the kernel says of a TCP socket's sending: segments sent, the MSS
 * (tcpi_segs_out, from the kernel's own struct, since glibc's netinet/tcp.h
 * copy stops before that field: the two headers cannot meet in one file) and
 * octets queued but not sent.
 */
#include "config.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "tests/integration/ep_pair.h"

/* The socket's TCP_INFO: octets the kernel filled in, or -1. */
static long tcp_info_of(int fd, struct tcp_info *ti)
{
	socklen_t l = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &l) < 0 ? -1 : (long)l;
}

long tcp_segs_out(int fd)
{
	struct tcp_info ti;
	long l = tcp_info_of(fd, &ti);

	if (l < (long)(offsetof(struct tcp_info, tcpi_segs_out) + sizeof(ti.tcpi_segs_out)))
		return -1;
	return (long)ti.tcpi_segs_out;
}

long tcp_snd_mss(int fd)
{
	struct tcp_info ti;

	return tcp_info_of(fd, &ti) < 0 ? -1 : (long)ti.tcpi_snd_mss;
}

long tcp_unsent(int fd)
{
	int n = 0;

	return ioctl(fd, SIOCOUTQNSD, &n) < 0 ? -1 : (long)n;
}
