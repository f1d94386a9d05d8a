/* SPDX-License-Identifier: MIT */
/*
 * The C library's socket and descriptor calls (libc/calls.h), resolved once
 * with dlsym(RTLD_NEXT).  The endpoint makes every such call through this table:
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
#define ESOCK_LIBC(ret, name, params, kind) ESOCK_LIBC_FIELD_##kind(ret, name, params)
#define ESOCK_LIBC_FIELD_WRAP(ret, name, params) ret(*name) params;
#define ESOCK_LIBC_FIELD_REAL(ret, name, params) ret(*name) params;
#define ESOCK_LIBC_FIELD_SHIM(ret, name, params)
#include "libc/calls.h"
#undef ESOCK_LIBC
#undef ESOCK_LIBC_FIELD_WRAP
#undef ESOCK_LIBC_FIELD_REAL
#undef ESOCK_LIBC_FIELD_SHIM
};

extern struct esock_real esock_real;

/* Resolves the table (idempotent, thread-safe). */
void esock_real_init(void);

/* The real |fn|, resolving the table first when nothing has yet. */
#define REAL(fn) (__builtin_expect(esock_real.fn != NULL, 1) ? esock_real.fn \
							   : (esock_real_init(), esock_real.fn))

#endif /* ESOCK_LIBC_REAL_H */
