/* SPDX-License-Identifier: MIT */
/*
 * The split of a listener's connections between tcpserverd and the host
 * (ESOCK_TCPSERVER_OPT share=P): the host keeps P % of them on its own
 * kernel TCP, so that when tcpserverd's CPU is what saturates (a connection
 * per request: its accept, read, write and close of each) the host's spare
 * CPU carries part of the load, and when the host saturates (P = 0, the
 * default) tcpserverd carries it all.
 *
 * The kernel makes the split, before either side sees a connection:
 * tcpserverd's listening socket and one of the host's own are a reuseport
 * group (SO_REUSEPORT on both, the same address), and a classic BPF
 * program on the group sends each new connection to the host's socket with
 * probability P/100 (a random number, not the 4-tuple's hash: ab's ports
 * would not spread evenly).  The host's socket is the library's own, never
 * the program's descriptor, always non-blocking; what it accepts is a plain
 * kernel socket the program then uses straight (pass-through).  A group
 * needs one owner (the same effective uid), so a tcpserverd of another user
 * leaves the host nothing to share: the listener stays whole in tcpserverd,
 * said once in the log.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_off.h"
#include "libesock/sock_off_int.h"
#include "util/log.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

int off_share_bind(struct esock_sock *s)
{
	int one = 1;

	if (!off_proc.share || (s->off->family != AF_INET && s->off->family != AF_INET6))
		return 0;
	/* (before tcpserverd binds: a socket joins a group only if all of it asked) */
	return sock_off_setopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
}

/*
 * The group's program: index 1 (the host's socket, which joined second)
 * with probability share/100, else 0 (tcpserverd's).  A group whose
 * program names a socket it does not have falls back to the hash.
 */
static int attach(int fd, int share)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_RANDOM)),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 100),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)share, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};
	struct sock_fprog prog;

	memset(&prog, 0, sizeof(prog)); /* (its padding goes to the kernel too) */
	prog.len = sizeof(code) / sizeof(code[0]);
	prog.filter = code;

	return REAL(setsockopt)(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

void off_share_listen(struct esock_sock *s, int backlog)
{
	struct sock_off *o = s->off;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int one = 1, fd, rc = 0;
	const char *what = "socket";

	if (!off_proc.share || o->kfd >= 0 || (o->family != AF_INET && o->family != AF_INET6))
		return;
	if (sock_off_name(s, false, (struct sockaddr *)&ss, &len) < 0)
		return;
	if ((fd = REAL(socket)(o->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		rc = -errno;
		goto out;
	}
	esock_fd_own(fd);
	if (o->family == AF_INET6) { /* (the group's members must agree on it) */
		int v6 = 0;
		socklen_t vl = sizeof(v6);

		if (sock_off_getopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6, &vl) == 0)
			(void)REAL(setsockopt)(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6, sizeof(v6));
	}
	{
		/*
		 * The program's SO_REUSEADDR, which its connections inherit: without
		 * it the host's connections in TIME_WAIT (it closes first) keep the
		 * program from binding its port again, restarted, for a minute.
		 */
		int ra = 0;
		socklen_t rl = sizeof(ra);

		if (sock_off_getopt(s, SOL_SOCKET, SO_REUSEADDR, &ra, &rl) == 0 && ra)
			(void)REAL(setsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &ra, sizeof(ra));
	}
	if (REAL(setsockopt)(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) {
		rc = -errno;
	} else if (REAL(bind)(fd, (struct sockaddr *)&ss, len) < 0) {
		rc = -errno;
		what = "bind";
	} else if (REAL(listen)(fd, backlog) < 0) {
		rc = -errno;
		what = "listen";
	} else if ((rc = attach(fd, off_proc.share)) < 0) {
		what = "its share's program";
	}
	if (rc < 0) {
		esock_fd_close(fd);
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	o->kfd = fd;
	o->k_pending = true; /* (until an accept finds it empty) */
	pthread_mutex_unlock(&s->lock);
	log_info("offload: a listener shares %d %% of its connections with the host's own TCP",
		 off_proc.share);
	return;
out:
	log_error("offload: share=%d: the host's listener (%s): %s; tcpserverd takes every connection",
		  off_proc.share, what, strerror(-rc));
}

int off_share_accept(struct sock_off *o, struct sockaddr *a, socklen_t *alen, int flags)
{
	int fd;

	if (o->kfd < 0)
		return -EAGAIN;
	fd = REAL(accept4)(o->kfd, a, alen, flags);
	if (fd >= 0)
		return fd;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		o->k_pending = false; /* (the next connection's edge says it again) */
	/*
	 * A connection that went away before it was taken, or a limit: as the
	 * kernel's accept would say, except that nothing waiting is EAGAIN.
	 */
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/*
 * Whether the host's listener may hold a connection, without a system call:
 * a look at it per readiness check (a level-triggered listener is checked
 * before every wait) cost a poll per request.  Its edges (epoll, poll, a
 * blocking accept's wait) set it, an accept that finds nothing clears it.
 */
bool off_share_pending(const struct sock_off *o)
{
	return o->kfd >= 0 && o->k_pending;
}

int sock_off_kfd(struct esock_sock *s)
{
	return s->off ? s->off->kfd : -1;
}

void sock_off_kernel_news(struct esock_sock *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->off) {
		s->off->k_news++;
		s->off->k_pending = true;
	}
	pthread_mutex_unlock(&s->lock);
}
