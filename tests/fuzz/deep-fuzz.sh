#!/bin/sh
# SPDX-License-Identifier: MIT
# The long fuzzing run (not part of CI): every libFuzzer target for RUNS
# executions (default 10^7) on its seed corpus, then the corpus minimised
# (libFuzzer -merge=1: on top of the committed seeds, only inputs that add
# coverage) and written back into tests/fuzz/corpus/<target>/, to be committed: CI's replays and
# its 60 s runs start from what the long run found.  Any crash, leak or
# sanitizer report stops the run; the reproducer is in tests/fuzz/deep/<target>/.
#
#   cd BUILD && make fuzz && sh SRCDIR/tests/fuzz/deep-fuzz.sh SRCDIR [RUNS] [TARGET...]
set -u
srcdir=${1:?usage: deep-fuzz.sh SRCDIR [RUNS] [TARGET...]}
runs=${2:-10000000}
shift 2 2>/dev/null || shift $#
targets=${*:-ddp_place ep_conn ep_rx mpa_rx mpa_startup pcap_reader rdmap_hdr}
for t in $targets; do
	bin=tests/fuzz/fuzz_$t
	[ -x "$bin" ] || { echo "deep-fuzz: $bin not built (make fuzz)"; exit 2; }
	work=tests/fuzz/deep/$t
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/min"
	cp "$srcdir/tests/fuzz/corpus/$t/"* "$work/corpus/" 2>/dev/null || true
	dict=""
	[ -f "$srcdir/tests/fuzz/dict/$t.dict" ] && dict="-dict=$srcdir/tests/fuzz/dict/$t.dict"
	start=$(date +%s)
	# shellcheck disable=SC2086
	if ! "$bin" $dict -runs="$runs" -rss_limit_mb=2048 -artifact_prefix="$work/" \
		-print_final_stats=1 "$work/corpus" >"$work/log" 2>&1; then
		echo "FAIL: $t (see $work/log)"
		tail -n 40 "$work/log"
		exit 1
	fi
	# The committed seeds stay (some are regressions, kept on purpose); the
	# merge adds only what brings new coverage on top of them.
	before=$(ls "$srcdir/tests/fuzz/corpus/$t" 2>/dev/null | wc -l)
	cp "$srcdir/tests/fuzz/corpus/$t/"* "$work/min/" 2>/dev/null || true
	"$bin" -merge=1 "$work/min" "$work/corpus" >"$work/merge.log" 2>&1 ||
		{ echo "FAIL: $t: merge (see $work/merge.log)"; exit 1; }
	cp "$work/min/"* "$srcdir/tests/fuzz/corpus/$t/"
	echo "$t: $(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log") runs in" \
	     "$(($(date +%s) - start)) s, clean; corpus $(ls "$work/corpus" | wc -l) files," \
	     "kept $before seeds + $(($(ls "$work/min" | wc -l) - before)) that add coverage"
done
