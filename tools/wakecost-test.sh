#!/bin/sh
# SPDX-License-Identifier: MIT
# esock-wakecost runs and reports wake-ups and positive costs.  No figure is
# judged (that is the machine's, not ours), nor how many wake-ups merged (on a
# busy machine the sleeper may find the next write before it sleeps).
set -u
b=${top_builddir:-.}
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU (the wake-ups cross CPUs)"; exit 77; }
out=$("$b/tools/esock-wakecost" -n 2000 -g 50 -a 0 -b 1) || { echo "FAIL: exit $?: $out"; exit 1; }
echo "$out"
echo "$out" | awk '{
	for (i = 1; i <= NF; i++) {
		if ($(i + 1) == "wake-ups;") seen = $i
		if ($i == "sleeper") sl = $(i + 1)
		if ($i == "write") wr = $(i + 1)
		if ($i == "asleep:") al = $(i + 1)
	}
	exit !(seen >= 1 && seen <= 2000 && sl > 0 && wr > 0 && al > 0)
}' || { echo "FAIL: wake-ups or costs missing"; exit 1; }
echo "esock-wakecost: ok"
