/* SPDX-License-Identifier: MIT */
/*
 * Per-socket counters in shared memory, for esock-stat: one file per process,
 * /dev/shm/esock.<pid> (mode 0600), created at the first DDPMODE socket and
 * removed at exit.  A header, then fixed slots; each socket updates its
 * slot's counters in place (plain stores: a reader may see a counter a
 * little behind, never a torn slot identity because `used` is written last).
 * The layout is versioned: esock-stat refuses another version.
 */
#ifndef ESOCK_LIBESOCK_SOCK_STAT_H
#define ESOCK_LIBESOCK_SOCK_STAT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <esock/esock.h>

#define ESOCK_STAT_MAGIC "ESOCKST1"
#define ESOCK_STAT_VERSION 4
#define ESOCK_STAT_SLOTS 1024
#define ESOCK_STAT_DIR "/dev/shm"
#define ESOCK_STAT_PREFIX "esock."

struct esock_stat_slot {
	uint32_t used;          /* 1 while a socket owns it */
	int32_t fd;
	char mode[8];           /* "ddp", "plain" (fell back), "listen", "marked", "failed" */
	char peer[16];          /* peer profile, or "esock" for our own socket layer */
	char local[48], remote[48];
	struct esock_sock_stats c;
	uint32_t crc_errors;
	uint32_t pad;
};

struct esock_stat_file {
	char magic[8];
	uint32_t version, nslots;
	int32_t pid;
	char cmd[64];
	struct esock_stat_slot slot[ESOCK_STAT_SLOTS];
};

/* The process id in a counters file's name ("esock.<pid>"), or 0 for any other name. */
static inline long esock_stat_pid_of(const char *name)
{
	size_t pl = strlen(ESOCK_STAT_PREFIX);
	char *end;
	long pid;

	if (strncmp(name, ESOCK_STAT_PREFIX, pl) != 0)
		return 0;
	pid = strtol(name + pl, &end, 10);
	return *end || pid <= 0 ? 0 : pid;
}

#endif /* ESOCK_LIBESOCK_SOCK_STAT_H */
