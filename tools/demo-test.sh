#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs esock-demo with CRC on/off and markers on/off over several seeds; the
# demo exits non-zero when placed data or the Terminate are not as expected.
set -u
demo=${top_builddir:-.}/tools/esock-demo
n=0
for seed in 1 2 3 17 99; do
	for opt in "" "--markers" "--no-crc" "--markers --no-crc"; do
		# shellcheck disable=SC2086
		out=$("$demo" --quiet --seed "$seed" $opt) || { echo "FAIL: esock-demo --seed $seed $opt"; echo "$out"; exit 1; }
		echo "$out" | grep -q '^verified:' || { echo "FAIL: no verification line ($opt)"; exit 1; }
		n=$((n + 1))
	done
done
echo "$n demo runs verified"
