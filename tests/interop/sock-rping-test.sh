#!/bin/sh
# SPDX-License-Identifier: MIT
# A DDPMODE socket towards a plain RDMA peer, on loopback: sock-rping (rping's
# client through sockets and the extended calls) against iwping -s (the
# endpoint API, no socket layer), sizes 23 to 65535 (rping's range), CRC on and off, every
# ping validated on both sides.  The same client meets rping -s on kernel siw
# in the interop stage.
set -u
# shellcheck source=tests/interop/port-of.sh
. "${srcdir:-$(dirname "$0")/../..}/tests/interop/port-of.sh"
b=${top_builddir:-.}
cli=$b/tests/interop/sock-rping srv=$b/tools/iwping/iwping
log=$(mktemp) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log" "$log.srv"' EXIT
pass=0 fail=0
for crc in --crc --no-crc; do
	for size in 23 64 4096 65535; do
		# port 0: the kernel picks a free one (other tests run beside this one).
		# Emptied here, not only by the background job's redirection: that runs
		# in the child, and under load the loop below could read the port of
		# the server before (gone: "Connection refused").
		: >"$log.srv"
		timeout 60 "$srv" -s -a 127.0.0.1 -p 0 -d -S "$size" -V -v >"$log.srv" 2>&1 &
		pid=$!
		port=$(port_of "$log.srv" "$pid")
		if [ -z "$port" ]; then
			fail=$((fail + 1))
			echo "FAIL: iwping -s -S $size did not say its port"; cat "$log.srv"
		elif timeout 60 "$cli" -c -a 127.0.0.1 -p "$port" -S "$size" -C 5 -V -v "$crc" >"$log" 2>&1 &&
		   [ "$(grep -c '^ping data' "$log")" -eq 5 ] && wait "$pid" &&
		   [ "$(grep -c '^server ping data' "$log.srv")" -eq 5 ]; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: sock-rping $crc -S $size against iwping -s"; cat "$log" "$log.srv"
		fi
		kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
	done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
