#!/bin/sh
# SPDX-License-Identifier: MIT
# The protocol layers are sans-I/O: the objects built from mpa/, ddp/,
# rdmap/ and tcpserver/proto/ (TSP) may call only memory functions, the CRC
# and each other.  Any other
# undefined symbol (socket, read, write, malloc, clock_gettime, pthread_*,
# printf, ...) fails this test.
set -u
b=${top_builddir:-.}
objs=$(find "$b/mpa" "$b/ddp" "$b/rdmap" "$b/tcpserver/proto" -name '*.o' 2>/dev/null | sort -u)
[ -n "$objs" ] || { echo "FAIL: no objects found under $b/{mpa,ddp,rdmap}"; exit 1; }
allowed='^(memcpy|memset|memcmp|memmove|__stack_chk_fail|esock_[a-z0-9_]+|crc32_iscsi|_GLOBAL_OFFSET_TABLE_|__asan_.*|__ubsan_.*|__sanitizer_.*|__tsan_.*)$'
bad=$(nm -u $objs 2>/dev/null | awk 'NF == 2 {print $2}' | sed 's/@.*//' | sort -u | grep -v -E "$allowed" || true)
n=$(echo "$objs" | wc -l)
echo "checked $n objects"
[ -z "$bad" ] || { echo "FAIL: protocol code uses: $bad"; exit 1; }
exit 0
