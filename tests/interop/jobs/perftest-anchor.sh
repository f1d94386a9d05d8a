# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: rdma-core perftest siw-to-siw over rdma_cm (-R), the kernel anchor for
# esock-bench (tests/interop/perftest-anchor.sh writes BW_SIZES, LAT_SIZES, BW_ITERS,
# LAT_ITERS and VARIANTS in front of this file).  Server and client both run here on
# eth0's address (siw over the guest's loopback).  For each siw variant in VARIANTS
# (default: CRC off; crc: CRC on both ways), ib_send_bw, ib_write_bw and ib_read_bw
# for every size of BW_SIZES and ib_send_lat for every size of LAT_SIZES; each
# client's report goes to /out/VARIANT-PROGRAM-SIZE.log.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ME=10.0.2.15

port=18515
run() { # $1 = log, $2 = program, $3 = size, $4 = iterations: server and client
	$B timeout 120 "$2" -R -F -p "$port" -s "$3" -n "$4" < /dev/null > "$1.server" 2>&1 &
	sv=$!
	listening "$port" || echo "RIG: $2 server did not listen" >> "$1"
	$B timeout 120 "$2" -R -F -p "$port" -s "$3" -n "$4" "$ME" < /dev/null >> "$1" 2>&1
	rc=$?
	n=0 # the server reports and exits with the client; now and then it stays: 5 s grace
	while kill -0 "$sv" 2>/dev/null && [ $n -lt 50 ]; do
		$B usleep 100000
		n=$((n + 1))
	done
	kill "$sv" 2>/dev/null && echo "RIG: $2 server still running after its client, killed" >> "$1"
	wait "$sv"
	port=$((port + 1))
	return $rc
}
one() { # $1 = variant, $2 = program, $3 = size, $4 = iterations
	log=/out/$1-$2-$3.log
	t0=$($B date +%s)
	run "$log" "$2" "$3" "$4"
	rc=$?
	# perftest now and then reports 0.00 on both sides (TCG) or gives no report
	# at all (a CI run once, ib_send_lat twice in a row): up to two more tries.
	tries=1
	# shellcheck disable=SC2016 # awk program
	while [ $tries -lt 3 ] &&
		! $B awk -v s="$3" '$1 == s && $4 + 0 > 0 { ok = 1 } END { exit !ok }' "$log" "$log.server"; do
		echo "anchor $1 $2 $3: no figure (exit $rc), again" >> "$log"
		tries=$((tries + 1))
		run "$log" "$2" "$3" "$4"
		rc=$?
	done
	echo "anchor $1 $2 $3: exit $rc, $tries tries, $(($($B date +%s) - t0)) s"
}

for v in $VARIANTS; do
	use_siw "$v"
	for s in $BW_SIZES; do
		for p in ib_send_bw ib_write_bw ib_read_bw; do
			one "$v" "$p" "$s" "$BW_ITERS"
		done
	done
	for s in $LAT_SIZES; do
		one "$v" ib_send_lat "$s" "$LAT_ITERS"
	done
done
exit 0
