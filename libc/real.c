/* SPDX-License-Identifier: MIT */
/* The C library's calls, resolved once (see real.h). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libc/ownfd.h"
#include "libc/real.h"
#include "util/log.h"

struct esock_real esock_real;

static void *need(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		/*
		 * No logging module here: it may not be set up; say it and stop.
		 * The system call itself: write() would be the interposer's own.
		 */
		static const char msg[] = "esock: cannot resolve a C library function\n";

		(void)!syscall(SYS_write, 2, msg, sizeof(msg) - 1);
		(void)!syscall(SYS_write, 2, name, __builtin_strlen(name));
		(void)!syscall(SYS_write, 2, "\n", 1);
		abort();
	}
	return p;
}

static void resolve(void)
{
	struct esock_real r;

	*(void **)&r.read = need("read");
	*(void **)&r.write = need("write");
	*(void **)&r.recv = need("recv");
	*(void **)&r.send = need("send");
	*(void **)&r.recvmsg = need("recvmsg");
	*(void **)&r.sendmsg = need("sendmsg");
	*(void **)&r.socket = need("socket");
	*(void **)&r.bind = need("bind");
	*(void **)&r.listen = need("listen");
	*(void **)&r.connect = need("connect");
	*(void **)&r.accept4 = need("accept4");
	*(void **)&r.close = need("close");
	*(void **)&r.shutdown = need("shutdown");
	*(void **)&r.setsockopt = need("setsockopt");
	*(void **)&r.getsockopt = need("getsockopt");
	*(void **)&r.getsockname = need("getsockname");
	*(void **)&r.getpeername = need("getpeername");
	*(void **)&r.poll = need("poll");
	*(void **)&r.epoll_ctl = need("epoll_ctl");
	*(void **)&r.epoll_wait = need("epoll_wait");
	*(void **)&r.readv = need("readv");
	*(void **)&r.writev = need("writev");
	*(void **)&r.recvfrom = need("recvfrom");
	*(void **)&r.sendto = need("sendto");
	*(void **)&r.sendfile = need("sendfile");
	*(void **)&r.sendmmsg = need("sendmmsg");
	*(void **)&r.recvmmsg = need("recvmmsg");
	*(void **)&r.splice = need("splice");
	*(void **)&r.accept = need("accept");
	*(void **)&r.fcntl = need("fcntl");
	*(void **)&r.ioctl = need("ioctl");
	*(void **)&r.dup = need("dup");
	*(void **)&r.dup2 = need("dup2");
	*(void **)&r.dup3 = need("dup3");
	*(void **)&r.ppoll = need("ppoll");
	*(void **)&r.select = need("select");
	*(void **)&r.pselect = need("pselect");
	*(void **)&r.epoll_pwait = need("epoll_pwait");
	*(void **)&r.epoll_create1 = need("epoll_create1");
	*(void **)&r.epoll_create = need("epoll_create");
	*(void **)&r.prctl = need("prctl");
	*(void **)&r.execve = need("execve");
	*(void **)&r.execvpe = need("execvpe");
	*(void **)&r.fexecve = need("fexecve");
	*(void **)&r.fdopen = need("fdopen");
	*(void **)&r.vdprintf = need("vdprintf");
	*(void **)&r.close_range = need("close_range");
	esock_real = r;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

void esock_real_init(void)
{
	pthread_once(&once, resolve);
}

__attribute__((constructor)) static void real_init_at_load(void)
{
	esock_real_init();
	esock_log_init(); /* (idempotent) its file is the library's own descriptor */
	if (esock_log_fd() >= 0)
		esock_fd_own(esock_log_fd());
}
