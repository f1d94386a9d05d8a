/* SPDX-License-Identifier: MIT */
/*
 * stdio on DDPMODE connections.  The C library's streams write with its own
 * internal write, which no wrapper sees: a printf to a connection on fd 1
 * would put raw octets into the MPA stream (git's upload-pack writes its ref
 * advertisement with stdio; inetd-style servers run on 0 and 1).  So a
 * stream on a connection is one of ours (fopencookie) whose reads and
 * writes go through the socket layer: fdopen of a connection returns one,
 * and stdin, stdout and stderr are replaced by one when their descriptor
 * becomes a connection (dup2 onto it, or a connection carried across exec
 * onto it).  fileno() of such a stream is -1 (the C library's rule for
 * cookie streams); dprintf and vdprintf format, then write through the
 * socket layer.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "libc/real.h"
#include "libesock/sock.h"
#include "util/log.h"

static ssize_t ck_read(void *c, char *buf, size_t n)
{
	int fd = (int)(intptr_t)c;
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { buf, n };
	ssize_t rc;

	if (!s)
		return REAL(read)(fd, buf, n);
	rc = sock_recv(s, &v, 1, 0, NULL);
	sock_put(s);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

/* Writes all of it (stdio takes a short write as an error). */
static ssize_t ck_write(void *c, const char *buf, size_t n)
{
	int fd = (int)(intptr_t)c;
	struct esock_sock *s = sock_get(fd);
	struct iovec v = { (void *)(uintptr_t)buf, n };
	ssize_t rc;

	if (!s)
		return REAL(write)(fd, buf, n);
	rc = sock_send_ex(s, &v, 1, MSG_NOSIGNAL, true);
	sock_put(s);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

static int ck_close(void *c)
{
	return close((int)(intptr_t)c); /* (the wrapper: the connection's end) */
}

FILE *sock_stdio_open(int fd, const char *mode)
{
	cookie_io_functions_t io = { .read = ck_read, .write = ck_write, .close = ck_close };

	return fopencookie((void *)(intptr_t)fd, mode, io);
}

/*
 * Standard stream |fd| (0, 1, 2) now names a connection: the stream goes
 * through the socket layer from now on.  What the old one buffered is
 * written first; it is not closed (that would close the descriptor).
 */
void sock_stdio_adopt_std(int fd)
{
	FILE **std = fd == 0 ? &stdin : fd == 1 ? &stdout : fd == 2 ? &stderr : NULL;
	FILE *f;

	if (!std)
		return;
	if (*std && fd)
		fflush(*std);
	if (!(f = sock_stdio_open(fd, fd ? "w" : "r"))) {
		log_warn("fd %d: the standard stream could not follow the connection: %s", fd,
			 strerror(errno));
		return;
	}
	if (fd == 2)
		setvbuf(f, NULL, _IONBF, 0);
	*std = f;
	log_debug("fd %d: its standard stream goes through the connection", fd);
}

/* vdprintf on a connection: formatted first, then written as the wrappers would. */
int sock_stdio_vdprintf(struct esock_sock *s, const char *fmt, va_list ap)
{
	char *text = NULL;
	int n = vasprintf(&text, fmt, ap);
	struct iovec v;
	ssize_t rc;

	if (n < 0)
		return -ENOMEM;
	v = (struct iovec){ text, (size_t)n };
	rc = n ? sock_send_ex(s, &v, 1, MSG_NOSIGNAL, true) : 0;
	free(text);
	return rc < 0 ? (int)rc : n;
}
