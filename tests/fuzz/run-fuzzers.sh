#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target for FUZZ_SECONDS on a scratch copy of its seed
# corpus (the tree is never written).  Any crash, leak or sanitizer report
# fails the run; the reproducer is left in tests/fuzz/runs/<target>/.
set -u
srcdir=${1:-.}
fail=0
for t in $FUZZ_TARGETS; do
	work=tests/fuzz/runs/$t
	rm -rf "$work"
	mkdir -p "$work/corpus"
	cp "$srcdir/tests/fuzz/corpus/$t/"* "$work/corpus/" 2>/dev/null || true
	dict=""
	[ -f "$srcdir/tests/fuzz/dict/$t.dict" ] && dict="-dict=$srcdir/tests/fuzz/dict/$t.dict"
	echo "fuzz $t: ${FUZZ_SECONDS}s"
	if ! tests/fuzz/fuzz_$t $dict -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
		-artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" >"$work/log" 2>&1; then
		echo "FAIL: fuzz target $t (see $work/log):"
		tail -n 40 "$work/log"
		fail=1
	else
		grep -E '^(stat::number_of_executed_units|Done )' "$work/log" | sed "s/^/  $t: /"
	fi
done
exit $fail
