#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/tcpserver-eval.sh still works: a short run (4 KiB at 8 clients, HTTP/1.0
# and keep-alive, every mode, no CPU quota) must give a row per cell with
# requests served and CPU counted, the summary and a plot with a line per mode.
set -u
s=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d) || exit 99
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out/log" 2>/dev/null | tail -n 20; exit 1; }
EVAL_QUICK=1 EVAL_QUOTA=0 sh "$s/tcpserver-eval.sh" 1 "$out" 1 >"$out/log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: $(tail -n 1 "$out/log")"; exit 77; }
[ $rc -eq 0 ] || fail "exit $rc"
for m in tcp sync async eagerrx eageracc setup cluster; do
	for p in http10 keepalive; do
		grep -q "^1,$m,4k,$p,8,[1-9][0-9]*," "$out/eval.csv" || fail "no $m $p row with requests"
	done
done
# The host's CPU per request was counted (nginx did work in every cell).
awk -F, 'NR > 1 && $7 <= 0 { bad = 1 } END { exit bad }' "$out/eval.csv" || fail "a cell without host CPU time"
# ... and the load generator's (ab ran a second in every cell).
awk -F, 'NR > 1 && $11 <= 0 { bad = 1 } END { exit bad }' "$out/eval.csv" || fail "a cell without ab's CPU time"
# ... and nginx's sleeps per request: a number in every row.
awk -F, 'NR > 1 && $12 !~ /^[0-9]+\.[0-9]+$/ { bad = 1 } END { exit bad }' "$out/eval.csv" || fail "a row without nginx's sleeps"
grep -q "^| 8 | + setup with accept |" "$out/summary.txt" && grep -q "^| 8 | cluster (iWARP, all) |" "$out/summary.txt" || fail "summary"
[ "$(grep -c '<polyline' "$out/tcpserver-eval.svg")" -ge 14 ] || fail "plot: $(grep -c '<polyline' "$out/tcpserver-eval.svg") lines"
echo "tcpserver-eval: a short run, every mode, summary and plot: ok"
