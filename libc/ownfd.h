/* SPDX-License-Identifier: MIT */
/*
 * The library's own descriptors (the engine's epoll set and doorbell, event
 * and timer fds, its copies of sockets, the log file).  Daemons close what
 * they did not open (closefrom(3), a loop of close, close_range: sshd at
 * start): the application's close, closefrom and close_range pass these by
 * as if they were not open (EBADF), so the library keeps working and never
 * writes into a file the application opened under a reused number.
 * esock_fd_own marks one (after creating it); every close of the library's
 * goes through esock_fd_close, which forgets the mark first.  A bit per fd,
 * in pages that never move (readers take no lock), up to the hard
 * RLIMIT_NOFILE read at the first use.
 */
#ifndef ESOCK_LIBC_OWNFD_H
#define ESOCK_LIBC_OWNFD_H

#include <stdbool.h>

void esock_fd_own(int fd);
bool esock_fd_is_own(int fd);
/* Forgets the mark and closes |fd| with the C library's close. */
int esock_fd_close(int fd);
/* The lowest own descriptor in [|from|, |to|], or -1. */
int esock_fd_next_own(unsigned from, unsigned to);

/*
 * How many descriptor numbers a table of the library's covers: the hard
 * RLIMIT_NOFILE (at most 4 Mi), rounded up to whole pages of |page| (a power
 * of two).  No descriptor at or beyond it is ever the library's.
 */
unsigned esock_fd_span(unsigned page);

#endif /* ESOCK_LIBC_OWNFD_H */
