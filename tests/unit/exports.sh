#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports esock_* plus exactly the libc calls it overloads
# (hidden visibility and a version script): a preloaded library must not
# clash with its host beyond what it means to interpose; and every call
# libc/calls.h names as overloaded has its wrapper.
set -u
lib=${top_builddir:-.}/.libs/libesock.so
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u)
# The overloaded names: what the build wrote into the version script from
# libc/calls.h (the one list of them).
map=${top_builddir:-.}/libesock/libesock.map
[ -f "$map" ] || { echo "FAIL: $map not built"; exit 1; }
libc=$(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$map")
[ "$(printf '%s\n' $libc | wc -l)" -ge 50 ] || { echo "FAIL: too few names in $map"; exit 1; }
allowed=$(printf '%s\n' $libc | paste -sd'|')
bad=$(printf '%s\n' "$syms" | grep -v -E "^(esock_[A-Za-z0-9_]+|ESOCK_[0-9]+|$allowed)\$" || true)
for f in $libc; do
	printf '%s\n' "$syms" | grep -qx "$f" || { echo "FAIL: $f not interposed"; exit 1; }
done
count=$(printf '%s\n' "$syms" | grep -c '^esock_' || true)
echo "libesock exports $count esock_* symbols"
[ -z "$bad" ] || { echo "FAIL: unexpected exports:"; echo "$bad"; exit 1; }
[ "$count" -gt 0 ] || { echo "FAIL: no esock_* exports"; exit 1; }
printf '%s\n' "$syms" | grep -qx esock_crc32c || { echo "FAIL: esock_crc32c not exported"; exit 1; }
exit 0
