/* SPDX-License-Identifier: MIT */
/*
 * A DDPMODE connection held by several processes after fork, used by one
 * at a time (issue 13).  A TCP socket's state lives in the kernel, so any
 * process holding it can go on; a DDPMODE connection's (MSNs, octets read
 * and not handled, messages not read yet) lives in the memory of the
 * process that used it last.  sshd is the case in point: its per-connection
 * process exchanges the banners, forks a pre-auth child that does key
 * exchange and authentication and exits, then carries on the connection
 * itself (or in a post-auth child forked then).
 *
 * So every connection that exists at a fork gets a baton: a small header
 * and room for one record (sock_carry.c) in a MAP_SHARED anonymous
 * mapping, which every copy made by that fork and later forks shares.
 *   - owner: the process driving the connection; 0 when none is (just
 *     after a fork both copies hold the same state, so the forking owner
 *     lets go).  A call on a copy (sock_resume) claims it by compare-and-
 *     swap; a copy whose generation is older than the baton's first loads
 *     the record that the last owner left.
 *   - The owner that closes its last descriptor, or exits, while other
 *     processes still hold the connection leaves its record there (gen+1)
 *     and lets go.  Its close does not end the connection (as with TCP,
 *     where only the last close does).
 *   - A claim that finds another live owner, or an owner that ended
 *     without leaving its record (killed, _exit, or not quiet: a message
 *     half received), fails the call with a logged reason: two processes
 *     driving one connection at once cannot be told apart from a corrupted
 *     stream, and are refused instead.
 * Only memory is touched after the fork (no descriptor, no system call but
 * kill(pid, 0) outside a sandbox), so a sandboxed child takes part too.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libesock/sock.h"
#include "util/log.h"

#define LOST (-1) /* owner: it ended without leaving the record */

struct sock_share {
	_Atomic int32_t owner;
	_Atomic uint32_t gen;    /* records left so far */
	_Atomic int32_t procs;   /* processes holding a copy */
	uint32_t len;            /* the last record's length (written before gen) */
	size_t size;             /* of the mapping */
	uint8_t data[];
};

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

void sock_share_fork_prepare(struct esock_sock *s)
{
	struct sock_share *sh = s->share;
	int32_t me = (int32_t)getpid();

	if (s->st != SOCK_CONNECTED || !s->qp || s->async_api)
		return;
	if (!sh) {
		size_t size = page_round(sizeof(*sh) + sock_carry_cap(s));

		sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
		if (sh == MAP_FAILED) {
			log_warn("fd %d: no shared state across this fork (%s): only one of the "
				 "processes can use the connection", s->fd, strerror(errno));
			return;
		}
		sh->size = size;
		atomic_store(&sh->procs, 1);
		atomic_store(&sh->owner, s->suspended ? 0 : me);
		s->share_gen = 0;
		s->share = sh;
	}
	atomic_fetch_add(&sh->procs, 1); /* the child's copy (a failed fork: one too many, harmless) */
	/* Quiesced by the fork: the copies hold the same state; whoever calls first goes on. */
	atomic_compare_exchange_strong(&sh->owner, &me, 0);
}

static bool alive(int32_t pid)
{
	if (atomic_load(&ep_restricted))
		return true; /* (no kill in a sandbox: taken as alive) */
	return kill(pid, 0) == 0 || errno == EPERM;
}

int sock_share_claim(struct esock_sock *s)
{
	struct sock_share *sh = s->share;
	int32_t me = (int32_t)getpid(), owner = 0;
	uint32_t gen;
	int rc;

	if (!sh || atomic_load(&sh->owner) == me)
		return 0;
	if (!atomic_compare_exchange_strong(&sh->owner, &owner, me)) {
		if (owner == LOST) {
			log_error("fd %d: the process that used this DDPMODE connection last ended without "
				  "leaving its state (killed, _exit, or a message half received): the "
				  "connection cannot go on here", s->fd);
			return -ECONNABORTED;
		}
		if (alive(owner)) {
			log_error("fd %d: DDPMODE connection in use by process %d: two processes cannot "
				  "use one at the same time (one after the other can)", s->fd, (int)owner);
			return -EBUSY;
		}
		/* Its owner died holding it: lost, for every copy. */
		atomic_compare_exchange_strong(&sh->owner, &owner, LOST);
		log_error("fd %d: process %d, which used this DDPMODE connection, ended without "
			  "leaving its state: the connection cannot go on here", s->fd, (int)owner);
		return -ECONNABORTED;
	}
	gen = atomic_load(&sh->gen);
	if (gen == s->share_gen)
		return 0; /* this copy is current */
	if ((rc = sock_carry_read(s, sh->data, sh->len)) < 0) {
		atomic_store(&sh->owner, LOST);
		log_error("fd %d: the state another process left for this DDPMODE connection cannot be "
			  "taken up (%s)", s->fd, strerror(-rc));
		return rc;
	}
	s->share_gen = gen;
	log_info("fd %d: DDPMODE connection taken up where another process left it (%u octets of "
		 "state and unread messages)", s->fd, sh->len);
	return 0;
}

/*
 * The owner lets go, leaving its record for the next (lock held).  True
 * when it did: then its QP stays quiesced (nothing of the socket is read
 * here any more).
 */
static bool leave_record(struct esock_sock *s, struct sock_share *sh)
{
	ssize_t len = sock_carry_write(s, sh->data, sh->size - sizeof(*sh), true);

	if (len < 0) {
		atomic_store(&sh->owner, LOST);
		log_error("fd %d: this process leaves a DDPMODE connection that others hold, but not "
			  "its state (%s): they cannot go on with it", s->fd, strerror((int)-len));
		return false;
	}
	sh->len = (uint32_t)len;
	s->share_gen = atomic_fetch_add(&sh->gen, 1) + 1;
	atomic_store(&sh->owner, 0);
	log_debug("fd %d: DDPMODE connection left to the other processes (%zd octets)", s->fd, len);
	return true;
}

bool sock_share_leave(struct esock_sock *s, bool *quiesced)
{
	struct sock_share *sh = s->share;
	bool others;

	*quiesced = false;
	if (!sh)
		return false;
	others = atomic_load(&sh->procs) > 1;
	if (others && !s->suspended && atomic_load(&sh->owner) == (int32_t)getpid() && s->qp)
		*quiesced = leave_record(s, sh);
	atomic_fetch_sub(&sh->procs, 1);
	s->share = NULL;
	munmap(sh, sh->size);
	return others;
}

void sock_share_exit(struct esock_sock *s)
{
	struct sock_share *sh = s->share;

	if (!sh)
		return;
	if (!s->suspended && s->qp && atomic_load(&sh->procs) > 1 &&
	    atomic_load(&sh->owner) == (int32_t)getpid())
		(void)leave_record(s, sh); /* (quiesced until the process is gone) */
	atomic_fetch_sub(&sh->procs, 1); /* (the mapping goes with the process) */
	s->share = NULL;
}
