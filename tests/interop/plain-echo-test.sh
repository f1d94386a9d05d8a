#!/bin/sh
# SPDX-License-Identifier: MIT
# plain-echo (plain sockets only) on loopback: as it is (plain TCP), and as an
# unmodified program under the interposer with every TCP socket in DDPMODE
# (user-level backend), its server waiting in poll and in epoll; every octet
# of 1 B to 1 MiB checked.  And ESOCK_BACKEND=verbs where there is no iWARP device:
# listen and connect fail with ENODEV.  The same program runs on the verbs backend in the
# siw guest (verbs-sockets.sh).
set -u
# shellcheck source=tests/interop/port-of.sh
. "${srcdir:-$(dirname "$0")/../..}/tests/interop/port-of.sh"
b=${top_builddir:-.}
prog=$b/tests/interop/plain-echo
lib=${ESOCK_LIB:-$b/.libs/libesock.so}
log=$(mktemp) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log" "$log.srv"' EXIT
[ -f "$lib" ] || { echo "SKIP: no $lib"; exit 77; }
modes="plain ddp"
# A sanitizer build's library cannot be preloaded into an uninstrumented program.
if ldd "$lib" 2>/dev/null | grep -q libasan; then
	echo "(libesock.so is built with sanitizers: plain TCP only)"
	modes=plain
fi
pass=0 fail=0
for mode in $modes; do
	for wait in poll epoll; do
		pre= flag=
		# (the log says where each connection went: both ends must be in DDPMODE)
		[ $mode = ddp ] && pre="env LD_PRELOAD=$lib ESOCK_DDPMODE=all ESOCK_BACKEND=user ESOCK_LOG=info"
		[ $wait = epoll ] && flag=-e
		: >"$log.srv"
		$pre timeout 120 "$prog" -s 127.0.0.1 0 $flag >"$log.srv" 2>&1 &
		pid=$!
		port=$(port_of "$log.srv" "$pid")
		if [ -n "$port" ] && $pre timeout 120 "$prog" -c 127.0.0.1 "$port" >"$log" 2>&1 &&
		   [ "$(grep -c 'echoed and checked' "$log")" -eq 4 ] && wait "$pid" &&
		   grep -q "echoed 1118206 octets" "$log.srv" &&
		   { [ $mode = plain ] || { grep -q "DDPMODE connected (peer esock" "$log" &&
					    grep -q "DDPMODE connected (peer esock" "$log.srv"; }; }; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: plain-echo $mode, server in $wait"; cat "$log" "$log.srv"
		fi
		kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
	done
done
# ESOCK_BACKEND=verbs on a host without an iWARP device (a build with the verbs backend):
# listen and connect fail with ENODEV, before the network (no refusal from port 1).
rnic=no
for f in /sys/class/infiniband/*/node_type; do
	[ -r "$f" ] && case $(cat "$f") in 4*) rnic=yes ;; esac
done
if [ "$modes" = "plain ddp" ] && [ $rnic = no ] && grep -q '^#define ESOCK_HAVE_VERBS 1' "$b/config.h" 2>/dev/null; then
	pre="env LD_PRELOAD=$lib ESOCK_DDPMODE=all ESOCK_BACKEND=verbs"
	$pre timeout 60 "$prog" -s 127.0.0.1 0 >"$log.srv" 2>&1
	if [ $? = 1 ] && grep -q 'server: listen: No such device' "$log.srv"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); echo "FAIL: ESOCK_BACKEND=verbs without a device: listen"; cat "$log.srv"
	fi
	$pre timeout 60 "$prog" -c 127.0.0.1 1 >"$log" 2>&1
	if [ $? = 1 ] && grep -q 'client: connect: No such device' "$log"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); echo "FAIL: ESOCK_BACKEND=verbs without a device: connect"; cat "$log"
	fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
