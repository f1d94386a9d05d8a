/* SPDX-License-Identifier: MIT */
/*
 * Logging sink and ESOCK_LOG parsing (see log.h).  Lines are written with one
 * fprintf call each so concurrent threads do not interleave within a line.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

int esock_log_level_cur = ESOCK_LOG_NONE;
static FILE *log_sink;

static const char *const level_names[] = {
	[ESOCK_LOG_NONE] = "none",   [ESOCK_LOG_ERROR] = "error",
	[ESOCK_LOG_WARN] = "warn",   [ESOCK_LOG_INFO] = "info",
	[ESOCK_LOG_DEBUG] = "debug", [ESOCK_LOG_TRACE] = "trace",
};

int esock_log_parse_level(const char *name)
{
	size_t n = strcspn(name, ",");

	for (int i = 0; i <= ESOCK_LOG_TRACE; i++)
		if (strlen(level_names[i]) == n && strncasecmp(name, level_names[i], n) == 0)
			return i;
	if (n == 1 && name[0] >= '0' && name[0] <= '5')
		return name[0] - '0';
	return -EINVAL;
}

int esock_log_set(int level, const char *path)
{
	FILE *f = NULL;

	if (level < ESOCK_LOG_NONE || level > ESOCK_LOG_TRACE)
		return -EINVAL;
	if (path && *path) {
		f = fopen(path, "ae");
		if (!f)
			return -errno;
		setvbuf(f, NULL, _IOLBF, 0);
	}
	if (log_sink && log_sink != stderr)
		fclose(log_sink);
	log_sink = f ? f : stderr;
	esock_log_level_cur = level;
	return 0;
}

__attribute__((constructor)) void esock_log_init(void)
{
	static atomic_bool done; /* (other constructors may call it first: their order is the linker's) */
	const char *env = getenv("ESOCK_LOG");
	const char *comma;
	int level;

	if (atomic_exchange(&done, true) || !env || !*env)
		return;
	level = esock_log_parse_level(env);
	if (level < 0) {
		fprintf(stderr, "esock: ESOCK_LOG=%s: unknown level (error|warn|info|debug|trace)\n", env);
		return;
	}
	comma = strchr(env, ',');
	if (esock_log_set(level, comma ? comma + 1 : NULL) < 0)
		fprintf(stderr, "esock: ESOCK_LOG=%s: cannot open log file\n", env);
}

static atomic_bool log_mute;

void esock_log_sandboxed(void)
{
	FILE *f = log_sink ? log_sink : stderr;
	struct rlimit rl;
	struct stat st;

	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
		atomic_store(&log_mute, true);
}

int esock_log_fd(void)
{
	return log_sink && log_sink != stderr ? fileno(log_sink) : -1;
}

void esock_log_write(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (level < ESOCK_LOG_ERROR || level > ESOCK_LOG_TRACE || atomic_load(&log_mute))
		return;
	/* The process too: a pre-fork server's children share the sink. */
	n = snprintf(line, sizeof(line), "esock[%d] %s: ", (int)getpid(), level_names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(log_sink ? log_sink : stderr, "%s\n", line);
}
