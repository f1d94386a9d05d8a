/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "util/env.h"
#include "util/log.h"

int esock_env_int(const char *name, int def, int lo, int hi)
{
	const char *e = getenv(name);
	char *end;
	long v;

	if (!e || !*e)
		return def;
	errno = 0;
	v = strtol(e, &end, 0);
	if (errno || *end || v < lo || v > hi) {
		log_error("%s=%s is not a whole number in [%d, %d]; using %d", name, e, lo, hi, def);
		return def;
	}
	return (int)v;
}
