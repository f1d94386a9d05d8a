#!/bin/sh
# SPDX-License-Identifier: MIT
# ddpdump -i: capture live on the loopback interface while live_peer runs an
# MPA exchange over 127.0.0.1, then check the decoded FPDUs; then twice more
# while pack_peer's endpoints send a list of 32 Sends, packed (they share
# segments: most FPDUs start inside one) and aligned (each starts a segment).
# Needs capture rights (root): without them the test is skipped (77) unless
# ESOCK_REQUIRE_LIVE is set.
set -u
b=${top_builddir:-.}
# A port below the kernel's ephemeral range (32768 up by default), so that no
# client socket of a test running beside this one can hold it, and unused now.
free_port() {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		port=$(( $(od -An -N2 -tu2 /dev/urandom) % 22000 + 10000 ))
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2" "}' |
			grep -q "$(printf ':%04X ' "$port")" || break
	done
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# capture CMD...: runs CMD PORT ARGS with ddpdump listening on a free port; JSON in $out.
capture() {
	free_port
	prog=$1
	shift
	"$b/tools/ddpdump/ddpdump" -i lo -T json "tcp port $port" >"$out" 2>&1 &
	pid=$!
	sleep 1
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$out"
		if [ -n "${ESOCK_REQUIRE_LIVE:-}" ]; then echo "FAIL: ddpdump cannot capture on lo"; exit 1; fi
		echo "SKIP: ddpdump cannot capture on lo here (needs root)"; exit 77
	fi
	"$prog" "$port" "$@"
	rc=$?
	sleep 1
	kill -INT "$pid"
	wait "$pid"
	[ $rc -eq 0 ] || { echo "FAIL: $prog exit $rc"; cat "$out"; exit 1; }
}

capture "$b/tests/ddpdump/live_peer"
fpdus=$(grep -c '"type":"fpdu"' "$out")
ok=$(grep '"type":"fpdu"' "$out" | grep -c '"crc":"ok"')
sends=$(grep -c '"op":"Send"' "$out")
writes=$(grep -c '"op":"RDMA Write"' "$out")
echo "live: $fpdus FPDUs ($ok with good CRC), $sends Sends, $writes RDMA Writes"
[ "$fpdus" -eq 5 ] && [ "$ok" -eq 5 ] && [ "$sends" -eq 4 ] && [ "$writes" -eq 1 ] &&
	grep -q '"type":"mpa_request"' "$out" && grep -q '"type":"mpa_reply"' "$out" || { cat "$out"; exit 1; }

# The 32 Sends of 200 octets: every one decoded with a good CRC either way.
for mode in pack align; do
	capture "$b/tests/ddpdump/pack_peer" "$mode"
	sends=$(grep '"type":"fpdu"' "$out" | grep '"op":"Send"' | grep '"ulpdu_len":2[0-9][0-9],' | grep -c '"crc":"ok"')
	inside=$(grep '"type":"fpdu"' "$out" | grep '"op":"Send"' | grep '"ulpdu_len":2[0-9][0-9],' | grep -c '"aligned":0')
	echo "live, $mode: $sends Sends of 200 octets with good CRC, $inside of them starting inside a segment"
	[ "$sends" -eq 32 ] || { cat "$out"; exit 1; }
	if [ "$mode" = pack ]; then
		[ "$inside" -ge 24 ] || { echo "FAIL: packed Sends did not share segments"; exit 1; }
	else
		[ "$inside" -eq 0 ] || { echo "FAIL: aligned Sends started inside segments"; exit 1; }
	fi
done
