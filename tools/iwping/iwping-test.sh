#!/bin/sh
# SPDX-License-Identifier: MIT
# iwping server and clients on 127.0.0.1, the server on a port the kernel picks
# (-p 0 prints it): rping's size limits (23 and 65535) and sizes between, CRC
# on and off, validated (-V) and checked line by line (-v), two clients at once
# on a persistent server (-P), one behind silent connections, a one-shot server that ends with its client,
# a client larger than its server, and rping's exit codes for bad options.
# Exits 77 when iwping is not built or cannot listen on loopback.
set -u
iwping=${top_builddir:-.}/tools/iwping/iwping
[ -x "$iwping" ] || { echo "SKIP: $iwping not built"; exit 77; }
tmp=$(mktemp -d) || exit 99
srv_pid=
idle_pids=
cleanup() {
	[ -n "$idle_pids" ] && kill $idle_pids 2>/dev/null
	if [ -n "$srv_pid" ]; then
		kill "$srv_pid" 2>/dev/null
		wait "$srv_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
limit=
command -v timeout >/dev/null 2>&1 && limit="timeout 60"

fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*; do
		[ -s "$f" ] && { echo "--- $(basename "$f")"; tail -n 20 "$f"; }
	done
	exit 1
}

# start_server NAME ARGS...: iwping -s -p 0 in the background; sets srv_pid and port.
start_server() {
	name=$1
	shift
	"$iwping" -s -a 127.0.0.1 -p 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	srv_pid=$!
	i=0
	while [ $i -lt 100 ]; do
		port=$(sed -n 's/^listening on port \([0-9][0-9]*\)$/\1/p' "$tmp/$name.out" 2>/dev/null)
		[ -n "$port" ] && return 0
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	echo "SKIP: iwping cannot listen on 127.0.0.1"
	cat "$tmp/$name.err"
	exit 77
}

stop_server() {
	kill "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_pid=
}

# check_pings FILE PREFIX COUNT SIZE: COUNT lines "PREFIX rdma-ping-K: " then
# ASCII rising from 'A' + K (58 letters 'A'..'z', wrapping), SIZE - 1 octets of data.
check_pings() {
	awk -v pre="$2" -v n="$3" -v size="$4" '
	BEGIN { k = 0 }
	function expect(k,   s, c) {
		s = "rdma-ping-" k ": "
		for (c = k % 58; length(s) < size - 1; c = (c + 1) % 58)
			s = s sprintf("%c", 65 + c)
		return pre " " substr(s, 1, size - 1)
	}
	index($0, pre " ") == 1 { if ($0 != expect(k)) { print "line " k + 1 " differs"; exit 1 } k++ }
	END { if (k != n) { print k " ping lines, expected " n; exit 1 } }' "$1"
}

# client NAME EXPECTED-STATUS ARGS...: one iwping -c run against the server.
client() {
	name=$1
	want=$2
	shift 2
	# shellcheck disable=SC2086
	$limit "$iwping" -c -a 127.0.0.1 -p "$port" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	st=$?
	[ "$st" -eq "$want" ] || fail "iwping -c $* exited $st, expected $want"
}

# rping's option errors: EINVAL (22), usage on stdout.
for bad in "-c -S 22" "-c -S 65536" "-c -C -1" "-c -x" "-v"; do
	# shellcheck disable=SC2086
	"$iwping" $bad >"$tmp/opt.out" 2>&1
	st=$?
	[ "$st" -eq 22 ] || fail "iwping $bad exited $st, expected 22"
done
"$iwping" --help | grep -q '^iwping -c' || fail "iwping --help"

# CRC is used when either side asks for it: both sides ask, or both decline.
n=0
for crc in --crc --no-crc; do
	state=on
	[ "$crc" = --no-crc ] && state=off
	start_server "persistent$crc" -P -S 65535 "$crc"
	for size in 23 100 4096 65535; do
		client "c$size$crc" 0 -C 10 -S "$size" -V -v -d "$crc"
		check_pings "$tmp/c$size$crc.out" "ping data:" 10 "$size" ||
			fail "client -S $size $crc: ping data"
		grep -q "^connected: .*, CRC $state," "$tmp/c$size$crc.out" ||
			fail "client $crc: CRC not $state"
		n=$((n + 1))
	done
	kill -0 "$srv_pid" 2>/dev/null || fail "persistent server ($crc) died"
	[ "$crc" = --no-crc ] || stop_server
done
client markers 0 -C 10 -S 4096 -V -v -d --markers
check_pings "$tmp/markers.out" "ping data:" 10 4096 || fail "client --markers: ping data"
grep -q "^connected: .*, markers tx off rx on" "$tmp/markers.out" || fail "client --markers: no markers"
# Three connections that never send their MPA Request delay nobody (the
# listener reads Requests of all new connections at once).
if command -v bash >/dev/null 2>&1; then
	for k in 1 2 3; do
		bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && exec sleep 30" 2>/dev/null &
		idle_pids="$idle_pids $!"
	done
	sleep 0.3
	t0=$(date +%s)
	client behind-idle 0 -C 3 -V -v
	[ $(($(date +%s) - t0)) -lt 5 ] || fail "a client waited behind idle connections"
	check_pings "$tmp/behind-idle.out" "ping data:" 3 64 || fail "behind idle: ping data"
	kill $idle_pids 2>/dev/null
	idle_pids=
fi
client pa 0 -C 10 -V -v &
pa=$!
client pb 0 -C 10 -V -v
wait "$pa" || exit 1
for f in pa pb; do
	check_pings "$tmp/$f.out" "ping data:" 10 64 || fail "two clients at once: ping data ($f)"
done
kill -0 "$srv_pid" 2>/dev/null || fail "persistent server died"
stop_server
rm -f "$tmp"/*

# One-shot server: serves one client (64 octets by default) and exits 0 when it leaves.
start_server oneshot -v
client once 0 -C 3 -V
i=0
while kill -0 "$srv_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
wait "$srv_pid"
st=$?
srv_pid=
[ "$st" -eq 0 ] || fail "one-shot server exited $st"
check_pings "$tmp/oneshot.out" "server ping data:" 3 64 || fail "server ping data"

# A client buffer larger than the server's: both sides fail, nobody hangs.
start_server small -S 100
client big 255 -C 3 -S 4096
wait "$srv_pid"
st=$?
srv_pid=
[ "$st" -eq 255 ] || fail "server with a too small buffer exited $st"

# Nobody listens any more: connection refused.
client refused 255 -C 1
echo "iwping: $n sizes/CRC runs, 2 concurrent clients, one-shot server, error paths: ok"
