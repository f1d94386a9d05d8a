/* SPDX-License-Identifier: MIT */
/* Per-socket counters in shared memory (see sock_stat.h). */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "endpoint/ep_sock.h"
#include "libc/ownfd.h"
#include "libc/real.h"
#include "libesock/sock.h"
#include "libesock/sock_stat.h"
#include "libesock/sock_vb.h"
#include "util/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct esock_stat_file *map;
static pid_t map_pid;
static bool tried;
static uint32_t next_slot; /* where sock_stat_attach looks first */
static uint32_t nused;     /* slots taken: none is looked for when all are */

static void path_of(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%d", ESOCK_STAT_DIR, ESOCK_STAT_PREFIX, (int)pid);
}

static void remove_file(void)
{
	char p[64];

	/* (A sandboxed process may not unlink: the next sweep removes its file.) */
	if (map && map_pid == getpid() && !atomic_load(&ep_restricted)) {
		path_of(map_pid, p, sizeof(p));
		unlink(p);
	}
}

/* Removes the files of processes that ended without removing theirs (_exit, a crash). */
static void sweep(void)
{
	DIR *d = opendir(ESOCK_STAT_DIR);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		long pid = esock_stat_pid_of(e->d_name);

		if (!pid || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			char p[64];

			path_of((pid_t)pid, p, sizeof(p));
			unlink(p);
		}
	}
	closedir(d);
}

/* Creates this process's file; NULL (counters stay private) when it cannot. */
static struct esock_stat_file *create(void)
{
	struct esock_stat_file *m;
	char p[64];
	int fd;

	sweep();
	path_of(getpid(), p, sizeof(p));
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		log_debug("no counters in shared memory: %s: %s", p, strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, sizeof(*m)) < 0 ||
	    (m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		log_debug("no counters in shared memory: %s", strerror(errno));
		esock_fd_close(fd);
		unlink(p);
		return NULL;
	}
	esock_fd_close(fd);
	m->version = ESOCK_STAT_VERSION;
	m->nslots = ESOCK_STAT_SLOTS;
	m->pid = (int32_t)getpid();
	{
		FILE *f = fopen("/proc/self/comm", "re");

		if (f) {
			if (fgets(m->cmd, sizeof(m->cmd), f))
				m->cmd[strcspn(m->cmd, "\n")] = 0;
			fclose(f);
		}
	}
	memcpy(m->magic, ESOCK_STAT_MAGIC, sizeof(m->magic)); /* last: the file is complete */
	return m;
}

void sock_stat_attach(struct esock_sock *s)
{
	s->stats = &s->stats_local;
	s->slot = NULL;
	pthread_mutex_lock(&lock);
	if (!tried) {
		tried = true;
		if ((map = create())) {
			map_pid = getpid();
			atexit(remove_file);
		}
	}
	/*
	 * From where the last one was taken: slots are taken in turn, so the
	 * next free one is usually right there (a scan from 0 read every used
	 * slot first: 1.2 % of a connection's setup with a thousand open).
	 * With all taken (more sockets than slots) nothing is scanned: a scan
	 * of the 1024 slots was 1 % of a connection's setup beyond them.
	 */
	if (map && __atomic_load_n(&nused, __ATOMIC_RELAXED) < map->nslots)
		for (uint32_t k = 0, i = next_slot; k < map->nslots; k++, i = i + 1 < map->nslots ? i + 1 : 0)
			if (!map->slot[i].used) {
				struct esock_stat_slot *sl = &map->slot[i];

				next_slot = i + 1 < map->nslots ? i + 1 : 0;

				memset(sl, 0, sizeof(*sl));
				sl->fd = s->fd;
				snprintf(sl->mode, sizeof(sl->mode), "marked");
				__atomic_store_n(&sl->used, 1, __ATOMIC_RELEASE);
				__atomic_fetch_add(&nused, 1, __ATOMIC_RELAXED);
				s->slot = sl;
				s->stats = &sl->c;
				break;
			}
	pthread_mutex_unlock(&lock);
}

void sock_stat_detach(struct esock_sock *s)
{
	if (s->slot) {
		__atomic_store_n(&s->slot->used, 0, __ATOMIC_RELEASE);
		__atomic_fetch_sub(&nused, 1, __ATOMIC_RELAXED);
	}
	s->slot = NULL;
	s->stats = &s->stats_local;
}

static void addr_str(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(out, len, ss->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

void sock_stat_describe(struct esock_sock *s)
{
	struct esock_stat_slot *sl = s->slot;
	struct sockaddr_storage ss;
	socklen_t len;
	static const char *const modes[] = {
		[SOCK_MARKED] = "marked", [SOCK_LISTENING] = "listen", [SOCK_TCP_CONNECTING] = "connect",
		[SOCK_MPA_CONNECTING] = "mpa",
		[SOCK_CONNECTED] = "ddp", [SOCK_PLAIN] = "plain", [SOCK_FAILED] = "failed",
	};

	snprintf(s->stats->backend, sizeof(s->stats->backend), "%s",
		 s->verbs ? sock_vb_backend_name() : s->off ? "offload" : "user");
	if (!sl)
		return;
	snprintf(sl->mode, sizeof(sl->mode), "%s", modes[s->st]);
	snprintf(sl->peer, sizeof(sl->peer), "%s",
		 s->st != SOCK_CONNECTED ? "-" : s->peer_esock ? "esock" : s->o.peer[0] ? s->o.peer : "rdma");
	if (s->verbs) {
		const struct sockaddr_storage *a;

		if ((a = sock_vb_addr(s, false)) && a->ss_family)
			addr_str(a, sl->local, sizeof(sl->local));
		if ((a = sock_vb_addr(s, true)) && a->ss_family)
			addr_str(a, sl->remote, sizeof(sl->remote));
	} else if (s->qp && ep_qp_info(s->qp)->local.ss_family && ep_qp_info(s->qp)->remote.ss_family) {
		/* The QP knows them already (somebody asked: ep_qp_addrs). */
		addr_str(&ep_qp_info(s->qp)->local, sl->local, sizeof(sl->local));
		addr_str(&ep_qp_info(s->qp)->remote, sl->remote, sizeof(sl->remote));
	} else if (s->st == SOCK_LISTENING) {
		/*
		 * (A connection's addresses are not asked here, two system calls
		 * each: esock-stat finds them in the process's /proc entries.)
		 */
		len = sizeof(ss);
		if (REAL(getsockname)(s->fd, (struct sockaddr *)&ss, &len) == 0)
			addr_str(&ss, sl->local, sizeof(sl->local));
	}
	sl->c.peer_msg_max = s->peer_msg_max;
	sl->c.peer_is_esock = s->peer_esock;
}

/*
 * A forked child must not count into its parent's file: it gets its own,
 * a copy of the parent's, and its sockets point into the copy.
 */
void sock_stat_fork_child(struct esock_sock **live, size_t n)
{
	struct esock_stat_file *old = map, *m;

	if (!old)
		return;
	map = NULL;
	tried = true;
	if (!(m = create())) {
		for (size_t i = 0; i < n; i++)
			if (live[i]->slot) {
				live[i]->stats_local = live[i]->slot->c;
				live[i]->slot = NULL;
				live[i]->stats = &live[i]->stats_local;
			}
		munmap(old, sizeof(*old));
		nused = 0;
		return;
	}
	memcpy(m->slot, old->slot, sizeof(m->slot));
	for (size_t i = 0; i < n; i++)
		if (live[i]->slot) {
			live[i]->slot = m->slot + (live[i]->slot - old->slot);
			live[i]->stats = &live[i]->slot->c;
		}
	munmap(old, sizeof(*old));
	map = m;
	map_pid = getpid(); /* the parent's atexit handler removes this file */
}
