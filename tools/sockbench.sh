#!/bin/sh
# SPDX-License-Identifier: MIT
# The socket-level benchmark: one plain TCP program (esock-sockbench, no esock
# code in it) run three ways in the same run: as it is, with libesock.so
# preloaded (pass-through cost), and preloaded with ESOCK_DDPMODE=all (its
# sockets speak iWARP).  Prints the figures and the ratios to the plain run.
#
#   sockbench.sh [--cpus same|split] [--lat-sizes 64,4096] [--bw-sizes 65536,1048576]
#                [--iters N] [--mb N] [--lib PATH] [--repeat N]
# --repeat N runs every cell N times, plain and preloaded alternating, and
# prints medians: the pass-through cost is far below this machine's noise
# between two single runs.
set -eu
cpus=same lat=64,4096 bw=65536,1048576 iters=20000 mb=512 lib=${ESOCK_LIB:-} repeat=1
while [ $# -gt 0 ]; do
	case $1 in
	--cpus) cpus=$2; shift ;;
	--lat-sizes) lat=$2; shift ;;
	--bw-sizes) bw=$2; shift ;;
	--iters) iters=$2; shift ;;
	--mb) mb=$2; shift ;;
	--lib) lib=$2; shift ;;
	--repeat) repeat=$2; shift ;;
	-h|--help) sed -n '3,13p' "$0"; exit 0 ;;
	*) echo "sockbench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
here=$(dirname "$0")
bin=${ESOCK_SOCKBENCH:-${top_builddir:+$top_builddir/tools/}esock-sockbench}
[ -n "${top_builddir:-}" ] || bin=${ESOCK_SOCKBENCH:-$here/esock-sockbench}
[ -n "$lib" ] || lib=${top_builddir:-$here/..}/.libs/libesock.so
[ -x "$bin" ] || { echo "sockbench.sh: $bin not built" >&2; exit 1; }
[ -f "$lib" ] || { echo "sockbench.sh: $lib not found (--lib)" >&2; exit 1; }

run() { # mode test size arg -> figure
	case $1 in
	plain) "$bin" "$2" "$3" "$4" "$cpus" ;;
	preload) LD_PRELOAD=$lib "$bin" "$2" "$3" "$4" "$cpus" ;;
	ddp) LD_PRELOAD=$lib ESOCK_DDPMODE=all "$bin" "$2" "$3" "$4" "$cpus" ;;
	esac | awk '{print $3}'
}

machine="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%d)"
echo "# $machine; medians of $repeat run(s)"
printf '%-4s %9s %6s %10s %10s %10s %8s %8s\n' test size cpus plain preload ddp pre/pl ddp/pl
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
row() { # test size arg
	ps="" qs="" ds=""
	for _ in $(seq "$repeat"); do
		ps="$ps $(run plain "$1" "$2" "$3")"; qs="$qs $(run preload "$1" "$2" "$3")"
		ds="$ds $(run ddp "$1" "$2" "$3")"
	done
	p=$(echo $ps | tr ' ' '\n' | median); q=$(echo $qs | tr ' ' '\n' | median)
	d=$(echo $ds | tr ' ' '\n' | median)
	[ -n "$p" ] && [ -n "$q" ] && [ -n "$d" ] || { echo "sockbench.sh: a $1 $2 run failed" >&2; exit 1; }
	awk -v t="$1" -v s="$2" -v c="$cpus" -v p="$p" -v q="$q" -v d="$d" \
		'BEGIN { printf "%-4s %9s %6s %10.2f %10.2f %10.2f %8.3f %8.3f\n", t, s, c, p, q, d, q / p, d / p }'
}
for s in $(echo "$lat" | tr , ' '); do row lat "$s" "$iters"; done
for s in $(echo "$bw" | tr , ' '); do row bw "$s" "$mb"; done
echo "# lat: round trip p50 in us (lower is better); bw: MB/s (higher is better)"
