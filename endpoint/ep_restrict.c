/* SPDX-License-Identifier: MIT */
/*
 * Restricted system calls (ep.h): once the application sandboxes its
 * process with a seccomp filter, only the calls it makes itself on a socket
 * may be made for it.  sshd's pre-auth child, for one, may read, write,
 * poll and shut down, and is killed by anything else (epoll_create1,
 * recvfrom, sendmsg, eventfd, sched_yield, getsockopt).  Here are the
 * socket I/O of that mode: a poll with no timeout first (the descriptor may
 * be a blocking one; its flags cannot be asked for any more), then one
 * read, or one write per piece.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "endpoint/ep.h"
#include "libc/real.h"
#include "util/log.h"

void ep_restrict(void)
{
	if (!atomic_exchange(&ep_restricted, true)) {
		esock_log_sandboxed();
		log_info("restricted system calls from now on (read, write, poll): no engine thread");
		ep_engine_stop();
		ep_uncork_all(); /* no socket options from now on */
	}
}

/* ESOCK_RESTRICTED=1: restricted from the start (a filter the library cannot see). */
__attribute__((constructor)) static void restrict_from_env(void)
{
	const char *e = getenv("ESOCK_RESTRICTED");

	if (e && *e == '1')
		atomic_store(&ep_restricted, true);
}

int ep_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	if (atomic_load(&ep_restricted))
		return -EPERM; /* (the filter would kill the process for it) */
	return REAL(getsockopt)(fd, level, name, val, len) < 0 ? -errno : 0;
}

/* Whether |fd| has |ev| now; -errno of poll, 0 not ready, 1 ready (or hung up). */
static int ready(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int rc;

	do
		rc = REAL(poll)(&p, 1, 0);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc > 0 && (p.revents & (ev | POLLERR | POLLHUP)) ? 1 : 0;
}

ssize_t ep_restricted_read(int fd, void *buf, size_t len)
{
	int r = ready(fd, POLLIN);
	ssize_t n;

	if (r <= 0) {
		errno = r < 0 ? -r : EAGAIN;
		return -1;
	}
	do
		n = REAL(read)(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * Piece by piece, stopping at a short write (the socket's buffer is full):
 * the octets written, or -1 with errno when none was.  No MSG_NOSIGNAL
 * here: a write to a reset connection raises SIGPIPE unless the
 * application ignores it (sshd does).
 */
ssize_t ep_restricted_writev(int fd, const struct iovec *iov, int cnt)
{
	size_t done = 0;
	int r = ready(fd, POLLOUT);

	if (r <= 0) {
		errno = r < 0 ? -r : EAGAIN;
		return -1;
	}
	for (int i = 0; i < cnt; i++) {
		ssize_t n;

		if (!iov[i].iov_len)
			continue;
		do
			n = REAL(write)(fd, iov[i].iov_base, iov[i].iov_len);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)n;
		if ((size_t)n < iov[i].iov_len || (i + 1 < cnt && ready(fd, POLLOUT) <= 0))
			break;
	}
	return (ssize_t)done;
}
