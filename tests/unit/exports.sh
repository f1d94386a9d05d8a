#!/bin/sh
# SPDX-License-Identifier: MIT
# The shared library exports esock_* plus exactly the libc calls it overloads
# (hidden visibility and a version script): a preloaded library must not
# clash with its host beyond what it means to interpose.
set -u
lib=${top_builddir:-.}/.libs/libesock.so
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u)
libc='socket connect listen accept accept4 close shutdown read write readv writev recv send
recvfrom sendto recvmsg sendmsg sendfile sendfile64 sendmmsg recvmmsg splice setsockopt getsockopt fcntl fcntl64 ioctl
dup dup2 dup3 poll ppoll select pselect epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2
__read_chk __recv_chk __recvfrom_chk __poll_chk __ppoll_chk prctl
execve execv execvp execvpe execl execlp execle fexecve fdopen dprintf vdprintf vfork closefrom close_range'
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
