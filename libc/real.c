/* SPDX-License-Identifier: MIT */
/* The C library's calls, resolved once (see real.h). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
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

/* Each signature in calls.h is the C library's own (a typo would call through a wrong type). */
#define ESOCK_LIBC(ret, name, params, kind) ESOCK_LIBC_CHECK_##kind(ret, name, params)
#define ESOCK_LIBC_CHECK_WRAP(ret, name, params) ESOCK_LIBC_CHECK_REAL(ret, name, params)
#define ESOCK_LIBC_CHECK_REAL(ret, name, params)                                          \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
		       #name " in libc/calls.h is not the C library's");
#define ESOCK_LIBC_CHECK_SHIM(ret, name, params)
#include "libc/calls.h"
#undef ESOCK_LIBC

static void resolve(void)
{
	struct esock_real r;

#define ESOCK_LIBC(ret, name, params, kind) ESOCK_LIBC_NEED_##kind(name)
#define ESOCK_LIBC_NEED_WRAP(name) *(void **)&r.name = need(#name);
#define ESOCK_LIBC_NEED_REAL(name) *(void **)&r.name = need(#name);
#define ESOCK_LIBC_NEED_SHIM(name)
#include "libc/calls.h"
#undef ESOCK_LIBC
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
