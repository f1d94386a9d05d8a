#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/connscale.sh on a small scale: both runs complete every step (each
# connection confirmed by a round trip, plain and in DDPMODE), the summary
# has a row per step and the throughput line, and the plot is written.
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
timeout 120 sh "$(dirname "$0")/connscale.sh" 40 20 10 1024 0.2 "$out" >"$out/log" 2>&1 ||
	{ cat "$out/log"; echo "FAIL: connscale.sh"; exit 1; }
for f in plain ddp; do
	[ "$(grep -c '^[0-9]' "$out/$f.csv")" -eq 3 ] || { cat "$out/$f.csv"; echo "FAIL: $f steps"; exit 1; }
	grep -q '^throughput,10,1024,' "$out/$f.csv" || { echo "FAIL: $f throughput"; exit 1; }
done
grep -q '^ *40 ' "$out/summary.txt" && grep -q '^throughput over 10' "$out/summary.txt" &&
	grep -q '<polyline' "$out/connscale.svg" || { cat "$out/log"; echo "FAIL: summary or plot"; exit 1; }
echo "connscale: 40 connections plain and DDPMODE, summary and plot: ok"
