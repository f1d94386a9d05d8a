/* SPDX-License-Identifier: MIT */
/*
 * esock-stat: lists the DDPMODE sockets of running processes and their
 * counters, from the shared-memory files libesock keeps
 * (/dev/shm/esock.<pid>, libesock/sock_stat.h).
 *
 *   esock-stat [-a] [PID...]     -a: also files of processes that are gone
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libesock/sock_stat.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: esock-stat [-a] [PID...]\n"
		   "Lists the DDPMODE sockets of processes using libesock, with their counters.\n"
		   "  -a   include files left by processes that have ended\n");
}

static int show(pid_t pid, bool all, bool *header)
{
	char path[64];
	struct esock_stat_file *m;
	struct stat st;
	bool alive = kill(pid, 0) == 0 || errno == EPERM;
	int fd, n = 0;

	snprintf(path, sizeof(path), "%s/%s%d", ESOCK_STAT_DIR, ESOCK_STAT_PREFIX, (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "esock-stat: %d: no esock counters (%s)\n", (int)pid, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(*m) ||
	    (m = mmap(NULL, sizeof(*m), PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		fprintf(stderr, "esock-stat: %s: not a counters file\n", path);
		close(fd);
		return -1;
	}
	close(fd);
	if (memcmp(m->magic, ESOCK_STAT_MAGIC, sizeof(m->magic)) != 0 ||
	    m->version != ESOCK_STAT_VERSION || m->nslots > ESOCK_STAT_SLOTS) {
		fprintf(stderr, "esock-stat: %s: unknown layout (version %u)\n", path, m->version);
		munmap(m, sizeof(*m));
		return -1;
	}
	if (!alive && !all) {
		munmap(m, sizeof(*m));
		return 0;
	}
	if (!*header) {
		printf("%-7s %-12s %4s %-7s %-6s %-22s %-22s %9s %12s %9s %12s %4s %4s %4s\n", "PID",
		       "COMMAND", "FD", "MODE", "PEER", "LOCAL", "REMOTE", "TX_MSGS", "TX_BYTES",
		       "RX_MSGS", "RX_BYTES", "TERM", "CRC", "FALL");
		*header = true;
	}
	for (uint32_t i = 0; i < m->nslots; i++) {
		const struct esock_stat_slot *s = &m->slot[i];

		if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE))
			continue;
		printf("%-7d %-12.12s %4d %-7.7s %-6.6s %-22.22s %-22.22s %9llu %12llu %9llu %12llu %4llu %4u "
		       "%4llu%s\n",
		       (int)m->pid, m->cmd, s->fd, s->mode, s->peer, s->local[0] ? s->local : "-",
		       s->remote[0] ? s->remote : "-", (unsigned long long)s->c.tx_msgs,
		       (unsigned long long)s->c.tx_bytes, (unsigned long long)s->c.rx_msgs,
		       (unsigned long long)s->c.rx_bytes, (unsigned long long)s->c.terminates,
		       s->crc_errors, (unsigned long long)s->c.fallbacks, alive ? "" : " (ended)");
		n++;
	}
	munmap(m, sizeof(*m));
	return n;
}

int main(int argc, char **argv)
{
	bool all = false, header = false;
	int i = 1, rc = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-a"))
			all = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i < argc) {
		for (; i < argc; i++) {
			char *end;
			long pid = strtol(argv[i], &end, 10);

			if (*end || pid <= 0) {
				fprintf(stderr, "esock-stat: '%s' is not a process id\n", argv[i]);
				return 2;
			}
			if (show((pid_t)pid, true, &header) < 0)
				rc = 1;
		}
		return rc;
	}
	{
		DIR *d = opendir(ESOCK_STAT_DIR);
		struct dirent *e;

		if (!d) {
			fprintf(stderr, "esock-stat: %s: %s\n", ESOCK_STAT_DIR, strerror(errno));
			return 1;
		}
		while ((e = readdir(d))) {
			long pid = esock_stat_pid_of(e->d_name);

			if (pid)
				show((pid_t)pid, all, &header);
		}
		closedir(d);
	}
	if (!header)
		printf("no process with DDPMODE sockets\n");
	return rc;
}
