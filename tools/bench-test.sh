#!/bin/sh
# SPDX-License-Identifier: MIT
# Smoke test of esock-bench: every endpoint mode (Send, Write, Read; latency
# and bandwidth; CRC and markers on and off) runs for a few iterations at
# small sizes and must print well-formed CSV with positive figures; --codec
# still runs; a bad option is refused.  Nothing is timed or compared: the
# machines are shared, and a benchmark's figures are not a test's business.
set -u
bench=${top_builddir:-.}/tools/esock-bench
fail() { echo "FAIL: $*"; exit 1; }

out=$(timeout 120 "$bench" --lat --bw --csv --sizes 1,4K,64K --iters 20 --seconds 0.01 \
	--window 16 --crc both --markers both) || fail "esock-bench --lat --bw exited $?"
echo "$out" | head -n 1 | grep -qx 'test,op,size,crc,markers,placement,iters,esock_value,tcp_value,unit,ratio' ||
	fail "bad CSV header: $(echo "$out" | head -n 1)"
# 3 ops x 3 sizes x 4 framings: two latency rows and one bandwidth row each.
echo "$out" | awk -F, 'NR > 1 {
	n++
	if (NF != 11) { print "fields: " $0; bad = 1 }
	if ($1 !~ /^(lat_p50|lat_p99|bw)$/ || $2 !~ /^(send|write|read)$/) { print "names: " $0; bad = 1 }
	if ($4 !~ /^(on|off)$/ || $5 !~ /^(on|off)$/ || $6 != "none") { print "framing: " $0; bad = 1 }
	if (!($3 > 0 && $7 > 0 && $8 > 0 && $9 > 0 && $11 > 0)) { print "values: " $0; bad = 1 }
	if (($1 == "bw") != ($10 == "MB/s")) { print "unit: " $0; bad = 1 }
} END { if (n != 108) { print "rows: " n; bad = 1 } exit bad }' || fail "bad CSV rows"

# One message per segment (--pack off, as towards an RNIC) still moves every message.
timeout 60 "$bench" --bw --csv --sizes 4K --seconds 0.01 --pack off | awk -F, 'NR > 1 { n++; if (!($8 > 0)) bad = 1 }
	END { exit (n != 3 || bad) }' || fail "esock-bench --pack off"
"$bench" --bw --pack maybe >/dev/null 2>&1 && fail "--pack maybe accepted"

# Both CPU placements (the second needs two CPUs).
place=same
[ "$(nproc)" -ge 2 ] && place=both
timeout 60 "$bench" --lat --ops send --sizes 64 --iters 10 --cpus "$place" --csv >/dev/null ||
	fail "esock-bench --cpus $place"

# bench-median.sh: medians over repeated runs, one row per cell.
med=$(ESOCK_BENCH=$bench sh "${srcdir:-.}/tools/bench-median.sh" 3 --lat --ops send,read --sizes 64 \
	--iters 10) || fail "bench-median.sh exited $?"
echo "$med" | awk '$1 ~ /^lat_p(50|99)$/ { n++; if ($7 != 3 || !($8 > 0) || $9 > $8 || $8 > $10) bad = 1 }
	END { exit (n != 4 || bad) }' || fail "bench-median.sh rows: $med"
sh "${srcdir:-.}/tools/bench-median.sh" 0 >/dev/null 2>&1 && fail "bench-median.sh accepted 0 runs"

"$bench" --codec --seconds 0.001 --csv | grep -q '^65000,1,' || fail "esock-bench --codec"
"$bench" --lat --window 0 >/dev/null 2>&1 && fail "--window 0 accepted"
"$bench" >/dev/null 2>&1 && fail "no mode accepted"
echo "esock-bench: 108 endpoint rows, placements, medians, codec: ok"
