#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/connscale.sh on a small scale: both runs complete every step (each
# connection confirmed by a round trip, plain and in DDPMODE), the summary
# has a row per step and the throughput line, and the plot is written.  And
# what an idle DDPMODE connection costs the server (issue 12's goals): at
# most one descriptor more than plain TCP (it costs none more now: the CQ
# needs no eventfd under epoll), and at most 16 KiB of memory beyond its
# posted receives; it has none posted (receive buffers are taken as Sends
# arrive, from the process's shared ones) and keeps 64 receive and
# completion slots (4.5 KiB): 24 KB in all, with room for the heap's growth
# steps at 200 connections (measured: 20 KB; 23 KB while every connection
# kept a pool buffer's page).  And what traffic adds: messages land in the
# few shared buffers freed last, so a busy connection holds none of its own
# (measured: 5-7 KB per connection at 50 busy ones, the shared buffers and
# send slots spread over them; 29 KB with a pool per connection, 255 KB
# when every posted buffer was touched): at most 16 KB.
set -u
b=${top_builddir:-.}
[ -x "$b/tools/esock-connscale" ] || { echo "SKIP: esock-connscale not built"; exit 77; }
lib=${ESOCK_LIB:-$b/.libs/libesock.so}
# A sanitizer build's library cannot be preloaded into an uninstrumented program.
if ldd "$lib" 2>/dev/null | grep -q libasan; then
	echo "SKIP: $lib is built with sanitizers; it cannot be preloaded"
	exit 77
fi
out=$(mktemp -d) || exit 99
trap 'rm -rf "$out"' EXIT
CONNSCALE_ROUNDS=2 timeout 180 sh "$(dirname "$0")/connscale.sh" 200 100 50 1024 0.2 "$out" >"$out/log" 2>&1 ||
	{ cat "$out/log"; echo "FAIL: connscale.sh"; exit 1; }
# Two rounds: per step the two ratios and their median, the throughput's and the CPU per message's.
[ "$(grep -cE '^ +(100|200) +[0-9.]+ [0-9.]+ +[0-9.]+$' "$out/rounds.txt")" -eq 2 ] &&
	grep -q '^throughput ratio per round: [0-9.]* [0-9.]*  median [0-9.]*; DDPMODE median [0-9.]* MB/s$' "$out/rounds.txt" &&
	grep -q '^CPU per message ratio (DDPMODE/plain) per round: [0-9.]* [0-9.]*  median [0-9.]*$' "$out/rounds.txt" ||
	{ cat "$out/rounds.txt"; echo "FAIL: rounds.txt"; exit 1; }
for f in plain ddp; do
	[ "$(grep -c '^[0-9]' "$out/$f.csv")" -eq 3 ] || { cat "$out/$f.csv"; echo "FAIL: $f steps"; exit 1; }
	grep -qE '^throughput,50,1024,[0-9.]+,[0-9.]+,[0-9.]+$' "$out/$f.csv" || { echo "FAIL: $f throughput"; exit 1; }
done
grep -q '^ *200 ' "$out/summary.txt" && grep -q '^throughput over 50' "$out/summary.txt" &&
	grep -q '<polyline' "$out/connscale.svg" || { cat "$out/log"; echo "FAIL: summary or plot"; exit 1; }
# The last row: conns ... plain KB/conn, ddp KB/conn, plain fd, ddp fd.
awk '$1 == 200 {
	if ($8 - $7 > 0.1) { printf "FAIL: %.2f descriptors per DDPMODE connection, %.2f plain\n", $8, $7; exit 1 }
	if ($6 > 24) { printf "FAIL: %.1f KB per idle DDPMODE connection (at most 24)\n", $6; exit 1 }
	printf "connscale: idle DDPMODE connection %.1f KB, %.2f descriptors (plain %.2f)\n", $6, $8, $7 }' \
	"$out/summary.txt" || { cat "$out/summary.txt"; exit 1; }
awk '/^server memory the traffic added/ {
	kb = $(NF - 4) + 0; found = 1
	if (kb > 16) { printf "FAIL: traffic added %.1f KB per busy DDPMODE connection (at most 16)\n", kb; exit 1 }
	printf "connscale: traffic added %.1f KB per busy DDPMODE connection\n", kb }
END { if (!found) { print "FAIL: no busy memory line"; exit 1 } }' "$out/summary.txt" ||
	{ cat "$out/summary.txt"; exit 1; }
# Connections set up 16 at a time (non-blocking connects through the MPA exchange): every step completes.
CONNSCALE_INFLIGHT=16 timeout 120 sh "$(dirname "$0")/connscale.sh" 300 100 0 1024 0 "$out/if" >"$out/log" 2>&1 ||
	{ cat "$out/log"; echo "FAIL: connscale.sh with 16 in flight"; exit 1; }
for f in plain ddp; do
	[ "$(grep -c '^[1-9][0-9]*,' "$out/if/$f.csv")" -eq 3 ] || { cat "$out/if/$f.csv"; echo "FAIL: $f steps in flight"; exit 1; }
done
echo "connscale: 200 connections plain and DDPMODE, summary and plot; 300 set up 16 at a time: ok"
