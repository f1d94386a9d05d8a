#!/bin/sh
# SPDX-License-Identifier: MIT
# Decode speed of ddpdump against tshark on the same capture, in the same run:
# a capture of MB megabytes (default 100) of 4 KiB FPDUs with CRC, decoded by
#   ddpdump -q --stats -r FILE          (every FPDU parsed, CRC checked)
#   tshark -r FILE -Y iwarp_ddp_rdmap   (output to /dev/null)
# Prints both times, the ratio and ddpdump's peak memory.
#   bench/ddpdump-vs-tshark.sh [BUILD_DIR] [MB]
set -eu
b=${1:-build}
mb=${2:-100}
cap=$(mktemp /tmp/esock-bench-XXXXXX.pcap)
trap 'rm -f "$cap"' EXIT
"$b/bench/mkcapture" "$cap" "$mb"
size=$(stat -c %s "$cap")
now() { date +%s.%N; }
t0=$(now)
"$b/tools/ddpdump/ddpdump" -q --stats -r "$cap" >/tmp/esock-bench-stats.txt
t1=$(now)
tshark -n -r "$cap" -o tcp.try_heuristic_first:TRUE --disable-heuristic rpcrdma_iwarp \
	--disable-heuristic smb_direct_iwarp -Y iwarp_ddp_rdmap >/dev/null 2>&1
t2=$(now)
rss=$(command -v /usr/bin/time >/dev/null 2>&1 && /usr/bin/time -f %M "$b/tools/ddpdump/ddpdump" -q -r "$cap" 2>&1 >/dev/null || echo "?")
awk -v s="$size" -v a="$t0" -v b="$t1" -v c="$t2" -v rss="$rss" 'BEGIN {
	d = b - a; t = c - b;
	printf "capture %.1f MB\nddpdump %.2f s (%.0f MB/s)\ntshark  %.2f s (%.0f MB/s)\nddpdump is %.1fx faster; peak RSS %s KiB\n",
		s / 1e6, d, s / 1e6 / d, t, s / 1e6 / t, t / d, rss }'
grep -E "^total" -A1 /tmp/esock-bench-stats.txt | head -2
