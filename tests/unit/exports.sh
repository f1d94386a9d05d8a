#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports esock_* and nothing else (hidden visibility plus
# a version script): a preloaded library must not clash with its host.
set -u
lib=${top_builddir:-.}/.libs/libesock.so
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u)
bad=$(printf '%s\n' "$syms" | grep -v -E '^(esock_[A-Za-z0-9_]+|ESOCK_[0-9]+)$' || true)
count=$(printf '%s\n' "$syms" | grep -c '^esock_' || true)
echo "libesock exports $count esock_* symbols"
[ -z "$bad" ] || { echo "FAIL: unexpected exports:"; echo "$bad"; exit 1; }
[ "$count" -gt 0 ] || { echo "FAIL: no esock_* exports"; exit 1; }
printf '%s\n' "$syms" | grep -qx esock_crc32c || { echo "FAIL: esock_crc32c not exported"; exit 1; }
exit 0
