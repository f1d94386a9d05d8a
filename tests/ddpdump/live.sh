#!/bin/sh
# SPDX-License-Identifier: MIT
# ddpdump -i: capture live on the loopback interface while live_peer runs an
# MPA exchange over 127.0.0.1, then check the decoded FPDUs.  Needs capture
# rights (root): without them the test is skipped (77) unless
# ESOCK_REQUIRE_LIVE is set.
set -u
b=${top_builddir:-.}
# A port below the kernel's ephemeral range (32768 up by default), so that no
# client socket of a test running beside this one can hold it, and unused now.
for i in 1 2 3 4 5 6 7 8 9 10; do
	port=$(( $(od -An -N2 -tu2 /dev/urandom) % 22000 + 10000 ))
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2" "}' |
		grep -q "$(printf ':%04X ' "$port")" || break
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$b/tools/ddpdump/ddpdump" -i lo -T json "tcp port $port" >"$out" 2>&1 &
pid=$!
sleep 1
if ! kill -0 "$pid" 2>/dev/null; then
	cat "$out"
	if [ -n "${ESOCK_REQUIRE_LIVE:-}" ]; then echo "FAIL: ddpdump cannot capture on lo"; exit 1; fi
	echo "SKIP: ddpdump cannot capture on lo here (needs root)"; exit 77
fi
"$b/tests/ddpdump/live_peer" "$port"
rc=$?
sleep 1
kill -INT "$pid"
wait "$pid"
[ $rc -eq 0 ] || { echo "FAIL: live_peer exit $rc"; cat "$out"; exit 1; }
fpdus=$(grep -c '"type":"fpdu"' "$out")
ok=$(grep '"type":"fpdu"' "$out" | grep -c '"crc":"ok"')
sends=$(grep -c '"op":"Send"' "$out")
writes=$(grep -c '"op":"RDMA Write"' "$out")
echo "live: $fpdus FPDUs ($ok with good CRC), $sends Sends, $writes RDMA Writes"
[ "$fpdus" -eq 5 ] && [ "$ok" -eq 5 ] && [ "$sends" -eq 4 ] && [ "$writes" -eq 1 ] &&
	grep -q '"type":"mpa_request"' "$out" && grep -q '"type":"mpa_reply"' "$out" || { cat "$out"; exit 1; }
