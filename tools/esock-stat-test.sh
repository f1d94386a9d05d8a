#!/bin/sh
# SPDX-License-Identifier: MIT
# esock-stat against a running process: an unmodified TCP program in DDPMODE
# (esock-sockbench under the preload: its client in this process, its server
# in a forked child) must show its DDPMODE socket with growing message
# counters, the child's in the listing of all processes, and nothing once it
# has ended.
set -u
b=${top_builddir:-.}
bin=$b/tools/esock-sockbench stat=$b/tools/esock-stat lib=$b/.libs/libesock.so
out=$(mktemp) || exit 1
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$out" "$out.pid"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM # (the cleanup runs when a time limit stops the test too)
# A sanitizer build's libesock.so cannot be preloaded into an uninstrumented
# program (the ASan runtime must come first); check_sock covers the library there.
if ldd "$lib" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded"
	exit 77
fi
fail() { echo "FAIL: $*"; cat "$out"; echo "0 passed, 1 failed"; exit 1; }

"$stat" --help | grep -q usage || fail "esock-stat --help"
"$stat" 999999999 >/dev/null 2>&1 && fail "a process without counters must be an error"
pidf=$out.pid
# (the program's own pid, not timeout's: sh records it, then becomes the program)
ESOCK_DDPMODE=all LD_PRELOAD=$lib timeout 60 sh -c 'echo $$ >"$0"; exec "$@"' "$pidf" \
	"$bin" lat 64 100000000 >/dev/null &
tpid=$!
sleep 0.2
pid=$(cat "$pidf")
for i in 1 2 3 4 5 6 7 8 9 10; do
	sleep 0.3
	"$stat" "$pid" >"$out" 2>&1 && [ "$(grep -c ' ddp ' "$out")" -ge 1 ] && break
done
cat "$out"
[ "$(grep -c ' ddp ' "$out")" -eq 1 ] || fail "want 1 DDPMODE socket in $pid"
grep ' ddp ' "$out" | grep -q ' esock ' || fail "peer kind"
# (the backend that carries it: the user-level endpoint here)
[ "$(awk '$4 == "ddp" { print $5; exit }' "$out")" = user ] || fail "the backend column"
# (the addresses come from the process's /proc entries: the library does not ask for them)
grep ' ddp ' "$out" | awk '{ print $7, $8 }' | grep -Eq '^127\.0\.0\.1:[0-9]+ 127\.0\.0\.1:[0-9]+$' ||
	fail "the connection's addresses"
first=$(awk '$4 == "ddp" { print $9; exit }' "$out")
sleep 0.3
"$stat" "$pid" >"$out" 2>&1 || fail "second look"
second=$(awk '$4 == "ddp" { print $9; exit }' "$out")
[ "$second" -gt "$first" ] || fail "TX_MSGS did not grow ($first, $second)"
# -v: the direct-path counters; a ping-pong of 64 octets sends every message but the
# first in the write call and places every one straight into the reader's buffer.
"$stat" -v "$pid" >"$out" 2>&1 || fail "esock-stat -v"
head -n 1 "$out" | grep -q 'TX_NOW *RX_NOW *EAGAIN_Q' || fail "-v header"
now=$(awk '$4 == "ddp" { print $16, $17; exit }' "$out")
set -- $now
[ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ] || fail "-v: TX_NOW / RX_NOW not counted ($now)"
"$stat" >"$out" 2>&1
grep -q "^$pid " "$out" || fail "the listing of all processes misses $pid"
[ "$(grep ' ddp ' "$out" | grep -c 'esock-sockbe')" -ge 2 ] || fail "the server child's socket is missing"
kill "$pid"; wait "$tpid" 2>/dev/null
sleep 0.2
"$stat" | grep -q "^$pid " && fail "counters of an ended process listed"
pid=
echo "1 passed, 0 failed"
