/* SPDX-License-Identifier: MIT */
/*
 * DDPMODE connections carried across exec (issue 13).  inetd-style servers
 * (git daemon, sshd, xinetd services) put an accepted connection on 0 and 1
 * and exec a program that goes on speaking on it.  Before the exec, every
 * connection the application keeps across it (a descriptor it did not ask
 * to be close-on-exec) and that is quiet (ep_qp_snapshot: nothing half
 * received or half sent) is written into a memfd with what the socket layer
 * knows of it (options, the peer's announcement, the messages not read
 * yet), and ESOCK_HANDOFF=FD in the new image's environment names that
 * memfd; the library loaded there rebuilds each connection on the same
 * descriptors before main.  A connection that cannot be carried, or an exec
 * whose environment does not preload this library, keeps the descriptors
 * close-on-exec: the new image sees none (EBADF), never raw MPA octets; an
 * error is logged.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/fdtab.h"
#include "libesock/sock.h"
#include "util/atfork.h"
#include "util/env.h"
#include "util/log.h"

#define HO_MAGIC 0x646e61686b6f7365ull /* "esokhand" */
#define HO_VERSION 2
#define HO_FDS 8
#define HO_ENV "ESOCK_HANDOFF"

struct ho_head {
	uint64_t magic;
	uint32_t version, count;
};

/* One connection: its descriptors, then its record (sock_carry.c), len octets. */
struct ho_rec {
	int32_t fds[HO_FDS];
	uint32_t nfds, len;
};

/*
 * The connections written for an exec stay locked and quiesced until it
 * happens: another thread reading one meanwhile (or this process's engine)
 * would take octets the new image then misses.  A failed exec lets go.
 */
static struct esock_sock **frozen; /* (room for every connection: prepare's allocation) */
static uint32_t nfrozen;

/* ---- which descriptors the application keeps across exec ---- */

static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *keep;       /* by fd: 1 when the application did not ask for close-on-exec */
static size_t nkeep;

/* A thread of the parent may have held the lock at a fork: the child's copy starts free. */
static void keep_fork_child(void)
{
	pthread_mutex_init(&keep_lock, NULL);
	nfrozen = 0;
}

static void keep_once(void)
{
	esock_atfork(ESOCK_FORK_TABLES, NULL, NULL, keep_fork_child);
}

void sock_note_inherit(int fd, bool inherit)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (fd < 0)
		return;
	pthread_once(&once, keep_once);
	pthread_mutex_lock(&keep_lock);
	if ((size_t)fd >= nkeep && inherit) {
		size_t n = (size_t)fd + 64;
		uint8_t *k = realloc(keep, n);

		if (k) {
			memset(k + nkeep, 0, n - nkeep);
			keep = k;
			nkeep = n;
		}
	}
	if ((size_t)fd < nkeep)
		keep[fd] = inherit;
	pthread_mutex_unlock(&keep_lock);
}

/* ---- before exec ---- */



/* Whether |envp| preloads this library (else the new image would see raw MPA octets). */
static bool preloads_us(char *const envp[])
{
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0)
			return strstr(envp[i], "libesock") != NULL;
	return false;
}

/* Writes |s|'s record (descriptors |fds|) to |mfd|; 0 or -errno (then nothing is carried). */
static int write_one(int mfd, struct esock_sock *s, const int *fds, uint32_t nfds)
{
	struct ho_rec r = { .nfds = nfds };
	size_t cap = sock_carry_cap(s);
	uint8_t *buf = malloc(cap); /* (its pages are touched only as far as the record goes) */
	ssize_t len;
	int rc;

	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	/*
	 * A copy from fork that nobody used here since (suspended) may be the
	 * other process's to drive: it is carried as it is, or not at all.
	 */
	if ((len = sock_carry_write(s, buf, cap, !s->suspended)) < 0) {
		pthread_mutex_unlock(&s->lock);
		free(buf);
		return (int)len;
	}
	memcpy(r.fds, fds, nfds * sizeof(*fds));
	r.len = (uint32_t)len;
	rc = write(mfd, &r, sizeof(r)) == (ssize_t)sizeof(r) &&
		     write(mfd, buf, (size_t)len) == len ? 0 : -EIO;
	free(buf);
	if (rc < 0) {
		ep_qp_unquiesce(s->qp);
		pthread_mutex_unlock(&s->lock);
	} else {
		frozen[nfrozen++] = s;
	}
	return rc;
}

static void thaw(void)
{
	while (nfrozen) {
		struct esock_sock *s = frozen[--nfrozen];

		ep_qp_unquiesce(s->qp);
		pthread_mutex_unlock(&s->lock);
	}
}

/*
 * Called by the exec wrappers with the environment the new image gets:
 * writes the connections to carry and returns a copy of |envp| naming
 * them (free with sock_handoff_abort after a failed exec), or NULL when
 * there is nothing to carry (exec with |envp| as it is).
 */
/* A connection to carry and its descriptors. */
struct ho_conn {
	struct esock_sock *s;
	int fds[HO_FDS];
	uint32_t nfd;
};

char **sock_handoff_prepare(char *const envp[])
{
	struct ho_conn *c = NULL;
	uint32_t nsock = 0, carried = 0, extra = 0;
	struct ho_head h = { .magic = HO_MAGIC, .version = HO_VERSION };
	size_t nenv = 0;
	char **env, num[32];
	int mfd;

	if (!atomic_load(&sock_count))
		return NULL;
	/* The connections behind the descriptors the application keeps (at most one each). */
	pthread_mutex_lock(&keep_lock);
	free(frozen);
	if (!(c = calloc(nkeep ? nkeep : 1, sizeof(*c))) ||
	    !(frozen = calloc(nkeep ? nkeep : 1, sizeof(*frozen)))) {
		pthread_mutex_unlock(&keep_lock);
		free(c);
		log_error("exec: no memory to carry the DDPMODE connections: their descriptors are closed");
		return NULL;
	}
	for (size_t fd = 0; fd < nkeep; fd++) {
		struct esock_sock *s;
		uint32_t i;

		if (!keep[fd] || !(s = esock_fdtab_get((int)fd)) || s->st != SOCK_CONNECTED)
			continue;
		for (i = 0; i < nsock && c[i].s != s; i++)
			;
		if (i == nsock)
			c[nsock++].s = s;
		if (c[i].nfd < HO_FDS)
			c[i].fds[c[i].nfd++] = (int)fd;
		else
			extra++;
	}
	pthread_mutex_unlock(&keep_lock);
	if (extra)
		log_error("exec: %u descriptor(s) beyond %d naming one DDPMODE connection stay behind "
			  "(closed in the new image)", extra, HO_FDS);
	if (!nsock) {
		free(c);
		return NULL;
	}
	if (!preloads_us(envp)) {
		log_error("exec: %u DDPMODE connection(s) stay behind: the new image does not preload "
			  "libesock (it would see raw MPA octets); its descriptors are closed", nsock);
		free(c);
		return NULL;
	}
	if ((mfd = memfd_create("esock-handoff", 0)) < 0) {
		log_error("exec: no memfd for the DDPMODE connections: %s", strerror(errno));
		free(c);
		return NULL;
	}
	(void)!write(mfd, &h, sizeof(h));
	for (uint32_t i = 0; i < nsock; i++) {
		off_t at = lseek(mfd, 0, SEEK_CUR);
		int rc = write_one(mfd, c[i].s, c[i].fds, c[i].nfd);

		if (rc < 0) {
			log_error("exec: fd %d: the DDPMODE connection cannot be carried (%s): its "
				  "descriptors are closed in the new image", c[i].fds[0], strerror(-rc));
			(void)!ftruncate(mfd, at);
			lseek(mfd, at, SEEK_SET);
			continue;
		}
		carried++;
		for (uint32_t k = 0; k < c[i].nfd; k++)
			REAL(fcntl)(c[i].fds[k], F_SETFD, 0);
	}
	free(c);
	if (!carried) {
		esock_fd_close(mfd);
		return NULL;
	}
	h.count = carried;
	(void)!pwrite(mfd, &h, sizeof(h), 0);
	while (envp && envp[nenv])
		nenv++;
	if (!(env = calloc(nenv + 2, sizeof(*env)))) {
		esock_fd_close(mfd);
		sock_handoff_abort(NULL);
		return NULL;
	}
	for (size_t i = 0, j = 0; i < nenv; i++)
		if (strncmp(envp[i], HO_ENV "=", sizeof(HO_ENV)) != 0)
			env[j++] = envp[i];
	snprintf(num, sizeof(num), HO_ENV "=%d", mfd);
	for (nenv = 0; env[nenv]; nenv++)
		;
	env[nenv] = strdup(num);
	log_info("exec: %u DDPMODE connection(s) carried (memfd %d)", carried, mfd);
	return env;
}

/* The exec failed: the descriptors go back to close-on-exec, the memfd and copy go. */
void sock_handoff_abort(char **env)
{
	int mfd = -1;

	thaw();
	if (!env)
		return;
	for (size_t i = 0; env[i]; i++)
		if (strncmp(env[i], HO_ENV "=", sizeof(HO_ENV)) == 0) {
			mfd = atoi(env[i] + sizeof(HO_ENV)); /* (our own entry, written with %d) */
			free(env[i]);
		}
	free(env);
	/* (Only a carried connection's descriptors lost their close-on-exec.) */
	pthread_mutex_lock(&keep_lock);
	for (size_t fd = 0; fd < nkeep; fd++)
		if (keep[fd] && esock_fdtab_get((int)fd))
			REAL(fcntl)((int)fd, F_SETFD, FD_CLOEXEC);
	pthread_mutex_unlock(&keep_lock);
	if (mfd >= 0)
		esock_fd_close(mfd);
}

/* ---- in the new image ---- */

/*
 * Reads |len| octets at *|at| and moves *|at| past them; 0 or -EIO.  pread, never read: the
 * descriptor the variable names may not be our memfd (a stale or made-up value), and then
 * neither its offset nor a pipe's or terminal's input (ESPIPE) may be touched.
 */
static int read_at(int fd, off_t *at, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, *at + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	*at += (off_t)len;
	return 0;
}

/* Rebuilds one connection from |r| (its record next in |mfd|); 0 or -errno. */
static int restore_one(int mfd, off_t *at, const struct ho_rec *r)
{
	struct esock_sock *s;
	uint8_t *buf;
	int rc = 0;

	if (!r->nfds || r->nfds > HO_FDS || r->fds[0] < 0 || r->len > (64u << 20))
		return -EIO; /* the rest of the memfd cannot be trusted */
	if (!(buf = malloc(r->len ? r->len : 1)) || read_at(mfd, at, buf, r->len) < 0) {
		free(buf);
		return -EIO;
	}
	if (!(s = sock_new(r->fds[0]))) {
		free(buf);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->lock);
	rc = sock_carry_read(s, buf, r->len);
	pthread_mutex_unlock(&s->lock);
	free(buf);
	if (rc < 0) {
		sock_close_fd(r->fds[0]);
		for (uint32_t k = 1; k < r->nfds; k++)
			esock_fd_close(r->fds[k]);
		return rc;
	}
	for (uint32_t k = 0; k < r->nfds; k++) {
		if (k)
			sock_dup_fd(r->fds[0], r->fds[k]);
		REAL(fcntl)(r->fds[k], F_SETFD, FD_CLOEXEC); /* (no exec without the library) */
		sock_note_inherit(r->fds[k], true);
		if (r->fds[k] <= 2 && k == 0)
			sock_stdio_adopt_std(r->fds[k]); /* (dups: sock_dup_fd did) */
	}
	log_info("fd %d: DDPMODE connection carried across exec (%u descriptor(s), %u octets of "
		 "state and unread messages)", r->fds[0], r->nfds, r->len);
	return 0;
}

__attribute__((constructor)) static void handoff_restore(void)
{
	const char *e = getenv(HO_ENV);
	struct ho_head h;
	off_t at = 0;
	int mfd;

	if (!e)
		return;
	esock_log_init(); /* (constructors run in the linker's order: the log's may come later) */
	esock_real_init();
	mfd = esock_env_int(HO_ENV, -1, 0, INT_MAX); /* (a bad value is logged and gives -1) */
	unsetenv(HO_ENV); /* (not for the images this one starts) */
	if (mfd < 0)
		return;
	if (read_at(mfd, &at, &h, sizeof(h)) < 0 || h.magic != HO_MAGIC || h.version != HO_VERSION) {
		log_error("%s: not a handoff of this library's version: ignored", HO_ENV);
		return;
	}
	for (uint32_t i = 0; i < h.count; i++) {
		struct ho_rec r;
		int rc;

		if (read_at(mfd, &at, &r, sizeof(r)) < 0)
			break;
		if ((rc = restore_one(mfd, &at, &r)) < 0) {
			log_error("fd %d: the DDPMODE connection could not be rebuilt after exec (%s): "
				  "closed", r.fds[0], strerror(-rc));
			if (rc == -EIO)
				break;
		}
	}
	esock_fd_close(mfd);
}
