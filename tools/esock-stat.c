/* SPDX-License-Identifier: MIT */
/*
 * esock-stat: lists the DDPMODE sockets of running processes and their
 * counters, from the shared-memory files libesock keeps
 * (/dev/shm/esock.<pid>, libesock/sock_stat.h).
 *
 *   esock-stat [-a] [-v] [PID...]   -a: also files of processes that are gone
 *                                   -v: also the direct-path counters
 */
#include "config.h"

#include <arpa/inet.h>
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
	fprintf(f, "usage: esock-stat [-a] [-v] [PID...]\n"
		   "Lists the DDPMODE sockets of processes using libesock, with their counters.\n"
		   "  -a   include files left by processes that have ended\n"
		   "  -v   also the direct path: messages sent in the write call (TX_NOW), placed\n"
		   "       straight into the reader's buffer (RX_NOW), EAGAINs without a system\n"
		   "       call (EAGAIN_Q); the rest went through send slots and receive buffers\n");
}

/* An address of /proc/net/tcp{,6} ("0100007F:1F90", network order in host words) as text. */
static void proc_addr(const char *hex, bool v6, char *out, size_t len)
{
	uint32_t w[4] = { 0 };
	unsigned port = 0;
	char host[INET6_ADDRSTRLEN] = "?";

	if (v6 ? sscanf(hex, "%8x%8x%8x%8x:%x", &w[0], &w[1], &w[2], &w[3], &port) != 5
	       : sscanf(hex, "%x:%x", &w[0], &port) != 2) {
		snprintf(out, len, "?");
		return;
	}
	/* (Each 32-bit word is printed in the kernel's byte order: as it lies in memory.) */
	inet_ntop(v6 ? AF_INET6 : AF_INET, w, host, sizeof(host));
	snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", host, port);
}

/*
 * The addresses of socket |fd| of process |pid|, as ss finds them: the
 * socket's inode from /proc/PID/fd, its line in the process's own view of
 * the TCP tables (its network namespace).  The library does not ask the
 * kernel for every connection's addresses (two system calls each).
 */
static bool proc_sock_addrs(pid_t pid, int fd, char *local, char *remote, size_t len)
{
	char path[64], link[64], line[512];
	unsigned long inode;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	if ((n = readlink(path, link, sizeof(link) - 1)) < 0)
		return false;
	link[n] = 0;
	if (sscanf(link, "socket:[%lu]", &inode) != 1)
		return false;
	for (int v6 = 0; v6 < 2; v6++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/tcp%s", (int)pid, v6 ? "6" : "");
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			char la[64], ra[64];
			unsigned long ino;

			if (sscanf(line, " %*d: %63s %63s %*x %*s %*s %*s %*d %*d %lu", la, ra, &ino) == 3 &&
			    ino == inode) {
				proc_addr(la, v6, local, len);
				proc_addr(ra, v6, remote, len);
				fclose(f);
				return true;
			}
		}
		fclose(f);
	}
	return false;
}

static int show(pid_t pid, bool all, bool verbose, bool *header)
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
		printf("%-7s %-12s %4s %-7s %-7s %-6s %-22s %-22s %9s %12s %9s %12s %4s %4s %4s", "PID",
		       "COMMAND", "FD", "MODE", "BACKEND", "PEER", "LOCAL", "REMOTE", "TX_MSGS", "TX_BYTES",
		       "RX_MSGS", "RX_BYTES", "TERM", "CRC", "FALL");
		if (verbose)
			printf(" %9s %9s %9s", "TX_NOW", "RX_NOW", "EAGAIN_Q");
		printf("\n");
		*header = true;
	}
	for (uint32_t i = 0; i < m->nslots; i++) {
		const struct esock_stat_slot *s = &m->slot[i];
		char local[64], remote[64];

		if (!__atomic_load_n(&s->used, __ATOMIC_ACQUIRE))
			continue;
		snprintf(local, sizeof(local), "%s", s->local[0] ? s->local : "-");
		snprintf(remote, sizeof(remote), "%s", s->remote[0] ? s->remote : "-");
		if (alive && !s->remote[0] && strcmp(s->mode, "listen") != 0)
			proc_sock_addrs(pid, s->fd, local, remote, sizeof(local));
		printf("%-7d %-12.12s %4d %-7.7s %-7.7s %-6.6s %-22.22s %-22.22s %9llu %12llu %9llu %12llu "
		       "%4llu %4u %4llu",
		       (int)m->pid, m->cmd, s->fd, s->mode, s->c.backend[0] ? s->c.backend : "-", s->peer,
		       local, remote,
		       (unsigned long long)s->c.tx_msgs,
		       (unsigned long long)s->c.tx_bytes, (unsigned long long)s->c.rx_msgs,
		       (unsigned long long)s->c.rx_bytes, (unsigned long long)s->c.terminates,
		       s->crc_errors, (unsigned long long)s->c.fallbacks);
		if (verbose)
			printf(" %9llu %9llu %9llu", (unsigned long long)s->c.tx_now,
			       (unsigned long long)s->c.rx_now, (unsigned long long)s->c.rx_eagain_quick);
		printf("%s\n", alive ? "" : " (ended)");
		n++;
	}
	munmap(m, sizeof(*m));
	return n;
}

int main(int argc, char **argv)
{
	bool all = false, verbose = false, header = false;
	int i = 1, rc = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-a"))
			all = true;
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
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
			if (show((pid_t)pid, true, verbose, &header) < 0)
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
				show((pid_t)pid, all, verbose, &header);
		}
		closedir(d);
	}
	if (!header)
		printf("no process with DDPMODE sockets\n");
	return rc;
}
