/* SPDX-License-Identifier: MIT */
/*
 * Integer settings from the environment, one parser for every layer: unset or
 * empty gives the default; a value that is not a whole number (decimal, 0x
 * hex or 0 octal) within [lo, hi] is logged at level error and gives the
 * default too, so a typo never turns into a surprising setting.
 */
#ifndef ESOCK_UTIL_ENV_H
#define ESOCK_UTIL_ENV_H

int esock_env_int(const char *name, int def, int lo, int hi);

#endif
