/* SPDX-License-Identifier: MIT */
/*
 * The system calls of the host side (host.c, chan.c).  Built into
 * libesock.so (ESOCK_TSP_IN_LIBESOCK), they must not land in the library's
 * own wrappers of the same names, and the channel's descriptors are the
 * library's (libc/ownfd.h: a daemon's close-everything passes them by);
 * elsewhere (tcpserverd, tests) they are the C library's.
 */
#ifndef ESOCK_TCPSERVER_SYS_H
#define ESOCK_TCPSERVER_SYS_H

#ifdef ESOCK_TSP_IN_LIBESOCK
#include "libc/ownfd.h"
#include "libc/real.h"
#define TSP_SYS(fn) REAL(fn)
#define TSP_OWN(fd) esock_fd_own(fd)
#define TSP_CLOSE(fd) esock_fd_close(fd)
#else
#define TSP_SYS(fn) fn
#define TSP_OWN(fd) ((void)(fd))
#define TSP_CLOSE(fd) close(fd)
#endif

#endif /* ESOCK_TCPSERVER_SYS_H */
