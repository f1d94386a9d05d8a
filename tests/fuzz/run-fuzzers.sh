#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target for FUZZ_SECONDS on a scratch copy of its seed
# corpus (the tree is never written), FUZZ_JOBS targets at a time (default: one
# per CPU; each target is one process, so each still gets its FUZZ_SECONDS of a
# CPU).  Any crash, leak or sanitizer report fails the run; the reproducer is
# left in tests/fuzz/runs/<target>/.
set -u
srcdir=${1:-.}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1

# One target: its verdict goes to runs/<target>/verdict, its summary to runs/<target>/summary.
run_one() {
	t=$1 work=tests/fuzz/runs/$1
	rm -rf "$work"
	mkdir -p "$work/corpus"
	cp "$srcdir/tests/fuzz/corpus/$t/"* "$work/corpus/" 2>/dev/null || true
	dict=""
	[ -f "$srcdir/tests/fuzz/dict/$t.dict" ] && dict="-dict=$srcdir/tests/fuzz/dict/$t.dict"
	if tests/fuzz/fuzz_$t $dict -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
		-artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" >"$work/log" 2>&1; then
		grep -E '^(stat::number_of_executed_units|Done )' "$work/log" | sed "s/^/  $t: /" >"$work/summary"
		echo ok >"$work/verdict"
	else
		{ echo "FAIL: fuzz target $t (see $work/log):"; tail -n 40 "$work/log"; } >"$work/summary"
		echo fail >"$work/verdict"
	fi
}

running=0
for t in $FUZZ_TARGETS; do
	echo "fuzz $t: ${FUZZ_SECONDS}s"
	run_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait
		running=0
	fi
done
wait
fail=0
for t in $FUZZ_TARGETS; do
	cat "tests/fuzz/runs/$t/summary" 2>/dev/null
	[ "$(cat "tests/fuzz/runs/$t/verdict" 2>/dev/null)" = ok ] || fail=1
done
exit $fail
