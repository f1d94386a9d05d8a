/* SPDX-License-Identifier: MIT */
/*
 * Thread-local variables of the library's hot paths.  In a shared object the
 * default (global-dynamic) model reaches each one through a call to
 * __tls_get_addr: 1.6 % of a DDPMODE socket's user-space instructions per
 * message.  The initial-exec model reads them at a fixed offset from the
 * thread pointer; it takes room in the static TLS block, which glibc keeps
 * spare for libraries loaded later too, so the few octets here keep a
 * dlopen of the library working.
 */
#ifndef ESOCK_UTIL_TLS_H
#define ESOCK_UTIL_TLS_H

#define ESOCK_TLS __thread __attribute__((tls_model("initial-exec")))

#endif
