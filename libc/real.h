/* SPDX-License-Identifier: MIT */
/*
 * The C library's socket and descriptor calls, resolved once with
 * dlsym(RTLD_NEXT).  The endpoint makes every such call through this table:
 * once libesock interposes read, recv, close, ... (issue 5) a direct call on a
 * QP's socket would land in the library's own wrapper and recurse.  Resolution
 * happens in a constructor, and again on first use for callers that run
 * before it; a missing symbol aborts with a message (never a call through NULL).
 */
#ifndef ESOCK_LIBC_REAL_H
#define ESOCK_LIBC_REAL_H

#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/select.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

struct esock_real {
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*close)(int);
	int (*shutdown)(int, int);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	/* Used by the wrappers only. */
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_create1)(int);
	int (*epoll_create)(int);
	int (*prctl)(int, ...);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	FILE *(*fdopen)(int, const char *);
	int (*vdprintf)(int, const char *, va_list);
	int (*close_range)(unsigned, unsigned, int);
};

extern struct esock_real esock_real;

/* Resolves the table (idempotent, thread-safe). */
void esock_real_init(void);

/* The real |fn|, resolving the table first when nothing has yet. */
#define REAL(fn) (__builtin_expect(esock_real.fn != NULL, 1) ? esock_real.fn \
							   : (esock_real_init(), esock_real.fn))

#endif /* ESOCK_LIBC_REAL_H */
