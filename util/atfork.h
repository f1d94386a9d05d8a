/* SPDX-License-Identifier: MIT */
/*
 * One order for all of the library's fork handlers.  pthread_atfork runs
 * prepare handlers in the reverse order of their registration, and ours
 * register lazily (the first socket, the first QP, the first receive
 * buffer), so their order used to depend on what a program did first.  A
 * lock taken before the connections are quiesced deadlocks the fork when a
 * thread in the middle of a QP's receive waits for that lock (seen: sshd's
 * pre-auth fork against a receive-buffer class lock the engine needed to
 * refill a receive queue).  Here the phases run in a fixed order before
 * the fork and in the reverse order after it, in the parent and the child.
 */
#ifndef ESOCK_UTIL_ATFORK_H
#define ESOCK_UTIL_ATFORK_H

enum esock_fork_phase {
	/* Work in progress on connections ends; no lock that work needs is held yet. */
	ESOCK_FORK_QUIESCE,
	/* Registries (sockets, listeners, the engine's table, descriptors, tcpserverd's channel). */
	ESOCK_FORK_TABLES,
	/* Locks under which nothing else is taken: allocators, the MR table. */
	ESOCK_FORK_LEAVES,
	ESOCK_FORK_PHASES
};

/*
 * Before a fork: every phase's |prepare| in phase order (within a phase, in
 * the order registered); after it, |parent| or |child| in exactly the
 * reverse order.  Any of the three may be NULL.  At most 32 registrations
 * in all (each module registers once); returns 0 or -ENOSPC.
 */
int esock_atfork(enum esock_fork_phase phase, void (*prepare)(void), void (*parent)(void),
		 void (*child)(void));

#endif
