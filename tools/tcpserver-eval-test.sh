#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/tcpserver-eval.sh still works: a short run (4 KiB at 8 clients, HTTP/1.0
# and keep-alive, every mode, nginx at a fifth of its CPU where a cgroup quota can be
# set, else without) must give a row per cell with requests served and CPU
# counted, the quota's throttling counted, the summary with its verdicts and a
# plot with a line per mode.
set -u
s=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d) || exit 99
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out/log" 2>/dev/null | tail -n 20; exit 1; }
quota=20
EVAL_QUICK=1 EVAL_QUOTA=$quota sh "$s/tcpserver-eval.sh" 1 "$out" 1 >"$out/log" 2>&1
rc=$?
if [ $rc -eq 77 ] && grep -q "no CPU quota possible" "$out/log"; then
	quota=0
	EVAL_QUICK=1 EVAL_QUOTA=0 sh "$s/tcpserver-eval.sh" 1 "$out" 1 >"$out/log" 2>&1
	rc=$?
fi
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
if [ $quota -gt 0 ]; then
	# The quota's periods throttled: a share in every row, and regular TCP's nginx, which
	# 8 keep-alive clients keep as busy as a whole CPU, throttled (a fifth, so that tests
	# running beside this one on the same CPUs cannot keep it below its quota).
	awk -F, 'NR > 1 && !($13 ~ /^[0-9]\.[0-9][0-9]$/ && $13 <= 1) { bad = 1 } END { exit bad }' "$out/eval.csv" ||
		fail "a row without the quota's throttled share"
	awk -F, '$2 == "tcp" && $4 == "keepalive" && $13 > 0 { ok = 1 } END { exit !ok }' "$out/eval.csv" ||
		fail "regular TCP's nginx at 8 keep-alive clients never throttled at $quota %"
else
	awk -F, 'NR > 1 && $13 != "" { bad = 1 } END { exit bad }' "$out/eval.csv" || fail "a throttled share without a quota"
fi
grep -Eq "^\| 8 \| \+ setup with accept \|.*\| (host|other CPU|both|neither) \| 1 \|$" "$out/summary.txt" || fail "summary: no verdict"
grep -q "^| 8 | cluster (iWARP, all) |" "$out/summary.txt" || fail "summary"
[ "$(grep -c '<polyline' "$out/tcpserver-eval.svg")" -ge 14 ] || fail "plot: $(grep -c '<polyline' "$out/tcpserver-eval.svg") lines"
echo "tcpserver-eval: a short run, every mode, summary and plot: ok"
