#!/bin/sh
# SPDX-License-Identifier: MIT
# sock-api-ops on loopback (user-level backend): the extended calls on a DDPMODE socket,
# an RDMA Read of 1 MiB, an RDMA Write of 512 KiB and a Send, completions from an event
# queue, every octet checked by both sides.  The same program runs in the siw guest on
# either backend against either (verbs-sockets.sh).
set -u
# shellcheck source=tests/interop/port-of.sh
. "${srcdir:-$(dirname "$0")/../..}/tests/interop/port-of.sh"
b=${top_builddir:-.}
prog=$b/tests/interop/sock-api-ops
log=$(mktemp) || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log" "$log.srv"' EXIT
ESOCK_BACKEND=user timeout 120 "$prog" -s 127.0.0.1 0 >"$log.srv" 2>&1 &
pid=$!
port=$(port_of "$log.srv" "$pid")
if [ -n "$port" ] && ESOCK_BACKEND=user timeout 120 "$prog" -c 127.0.0.1 "$port" >"$log" 2>&1 &&
   grep -q "RDMA Read of 1048576 octets: 0 wrong" "$log" &&
   grep -q "the server checked the Write: ok" "$log" && wait "$pid" && pid= &&
   grep -q "0 octets wrong" "$log.srv"; then
	echo "sock-api-ops on loopback: ok"
	exit 0
fi
echo "FAIL: sock-api-ops on loopback"
cat "$log" "$log.srv"
exit 1
