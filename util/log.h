/* SPDX-License-Identifier: MIT */
/*
 * The one logging module.  ESOCK_LOG=level[,file] selects the level (error,
 * warn, info, debug, trace) and an optional file (default stderr); unset
 * means silent.  The macros test the level before formatting, so a disabled
 * log costs one load and one branch.  Codecs never log: they return codes.
 */
#ifndef ESOCK_UTIL_LOG_H
#define ESOCK_UTIL_LOG_H

#include <stdarg.h>

enum esock_log_level {
	ESOCK_LOG_NONE = 0,
	ESOCK_LOG_ERROR,
	ESOCK_LOG_WARN,
	ESOCK_LOG_INFO,
	ESOCK_LOG_DEBUG,
	ESOCK_LOG_TRACE,
};

/* Current level; read by the macros.  Set once by esock_log_init(). */
extern int esock_log_level_cur;

/* Parses ESOCK_LOG (idempotent; also run at load time). */
void esock_log_init(void);
/* Overrides the level and sink (tests); |path| NULL keeps stderr. */
int esock_log_set(int level, const char *path);
/* Parses a level name; returns the level or -EINVAL. */
int esock_log_parse_level(const char *name);
/* The log file's descriptor, or -1 (standard error, or none). */
int esock_log_fd(void);
/*
 * The process is about to be sandboxed: when it may no longer grow files
 * (RLIMIT_FSIZE, as sshd's pre-auth child sets to 0), writing a log line
 * to a regular file would kill it (SIGXFSZ): from now on such lines are
 * dropped.  Looked at now, while every system call is still allowed.
 */
void esock_log_sandboxed(void);

void esock_log_write(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define ESOCK_LOG_AT(lvl, ...)                                      \
	do {                                                        \
		if (__builtin_expect(esock_log_level_cur >= (lvl), 0)) \
			esock_log_write((lvl), __VA_ARGS__);        \
	} while (0)

#define log_error(...) ESOCK_LOG_AT(ESOCK_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) ESOCK_LOG_AT(ESOCK_LOG_WARN, __VA_ARGS__)
#define log_info(...) ESOCK_LOG_AT(ESOCK_LOG_INFO, __VA_ARGS__)
#define log_debug(...) ESOCK_LOG_AT(ESOCK_LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) ESOCK_LOG_AT(ESOCK_LOG_TRACE, __VA_ARGS__)

#endif /* ESOCK_UTIL_LOG_H */
