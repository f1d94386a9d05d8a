#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/appbench.sh on its smallest group, one round: every mode measured,
# each row of the CSV carries the machine (date, CPU, cores, kernel), the
# summary has the request/response cell and its CPU cell with figures in all
# three modes, and the plot is written.
set -u
b=${top_builddir:-.}
[ -x "$b/tools/esock-sockbench" ] || { echo "SKIP: esock-sockbench not built"; exit 77; }
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded"
	exit 77
fi
out=$(mktemp -d) || exit 99
trap 'rm -rf "$out"' EXIT
timeout 300 sh "$(dirname "$0")/appbench.sh" 1 "$out" pingpong >"$out/log" 2>&1 ||
	{ cat "$out/log"; echo "FAIL: appbench.sh"; exit 1; }
fail() { echo "FAIL: $*"; cat "$out/log"; exit 1; }
kernel=$(uname -r)
for m in plain pass ddp; do
	for c in pingpong_64B pingpong_64B_cpu; do
		grep -q ",$kernel,$c,$m,1,[0-9.]*[1-9][0-9.]*," "$out/appbench.csv" ||
			fail "no figure for $c $m with the machine in appbench.csv"
	done
done
for c in pingpong_64B pingpong_64B_cpu; do
	awk -v c="$c" '$1 == c && $2 > 0 && $3 > 0 && $4 > 0 && $6 > 0 { ok = 1 } END { exit !ok }' \
		"$out/summary.txt" || fail "no $c row in summary.txt"
done
grep -q "<svg" "$out/appbench.svg" || fail "no plot"
echo "PASS: appbench.sh (one round of the request/response group)"
