#!/bin/sh
# SPDX-License-Identifier: MIT
# User-space instructions a server executes per request, counted, not timed:
# plain TCP, the library preloaded with every socket passing through, and
# DDPMODE on both ends.  On a shared machine throughput moves 1.5-2x from one
# hour to the next; an instruction count does not, so a change to the
# per-request path is judged here first and by tools/appbench.sh after.
#
#   top_builddir=build sh tools/appinstr.sh [OUTDIR [GROUP...]]
#   (defaults: appinstr-out; groups: nginx redis)
#
#   nginx  one process (master_process off), ab -k -c 20, the 4 KiB file
#   redis  redis-benchmark -c 50 -P 1 -t get
#
# The server runs under valgrind's cachegrind (no cache simulation) twice per
# mode, for N1 and for N2 requests; the difference over N2 - N1 requests drops
# start-up and shutdown out.  Prints instructions per request per mode and,
# function by function, what DDPMODE adds per request to plain TCP's (40 or
# more either way; ???:??? is code without symbols, ISA-L's CRC among it);
# OUTDIR keeps the cachegrind files (cg_annotate reads them) and the CSV
# (date, CPU, cores, kernel on each row).  Needs valgrind (cg_diff,
# cg_annotate).  Servers are on 127.0.0.1 and stopped by their PID.
set -u
out=${1:-appinstr-out}
[ $# -gt 1 ] && shift 1 && groups=$* || groups="nginx redis"
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
export top_builddir
apps_dir=$here/../tests/apps
. "$apps_dir/common.sh"
. "$here/../tests/apps/nginx-conf.sh"
need valgrind cg_diff cg_annotate
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
N1=${APPINSTR_N1:-2000}
N2=${APPINSTR_N2:-12000}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr -s ' ' | tr ',' ' ')
machine="$(date -u +%Y-%m-%d),$cpu,$(nproc),$(uname -r)"
csv=$out/appinstr.csv
echo "date,cpu,cores,kernel,cell,mode,requests,instructions" >"$csv"
echo "appinstr: $cpu, $(nproc) cores, kernel $(uname -r), $(date -u +%Y-%m-%d); $N1 and $N2 requests"

# cg CELL MODE N: the server's cachegrind file of that run.
cg() { echo "$out/$1-$2-$3.cg"; }

# total FILE: the instructions a cachegrind file counts.
total() { sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1"; }

# grind CELL MODE N: valgrind's prefix for the server (sets vg).
grind() {
	vg="valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=$(cg "$1" "$2" "$3")"
}

nginx_run() { # MODE N
	[ -f "$tmp/www/4k" ] || { mkdir -p "$tmp/www" "$tmp/cache"; random_file "$tmp/www/4k" 4;
		chmod 755 "$tmp" "$tmp/www"; chmod 644 "$tmp/www/4k"; }
	port=$(free_port)
	prefix "$1" "$port"
	grind nginx "$1" "$2"
	nginx_conf "$port" 1 1024 "master_process off;" "keepalive_requests 1000000;"
	# shellcheck disable=SC2086
	start "nginx-$1" $pre $vg nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf"
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $pre ab -q -k -s 30 -c 20 -n "$2" "http://127.0.0.1:$port/4k" >"$tmp/ab.out" 2>&1
	bad=$(sed -n 's/^Failed requests: *//p' "$tmp/ab.out")
	done_n=$(sed -n 's/^Complete requests: *//p' "$tmp/ab.out")
	stop "$srv_pid"
	[ "${bad:-1}" = 0 ] && [ "${done_n:-0}" = "$2" ] || { echo "appinstr: nginx $1 $2: ab failed" >&2; return 1; }
}

redis_run() { # MODE N
	port=$(free_port)
	prefix "$1" "$port"
	grind redis "$1" "$2"
	# shellcheck disable=SC2086
	start "redis-$1" $pre $vg redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $pre redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$2" -P 1 -q -t get \
		>"$tmp/rb.out" 2>&1 || { stop "$srv_pid"; echo "appinstr: redis $1 $2: benchmark failed" >&2; return 1; }
	stop "$srv_pid"
}

for g in $groups; do
	case $g in
	nginx) command -v nginx >/dev/null && command -v ab >/dev/null || { echo "appinstr: nginx: skipped (nginx, ab)"; continue; } ;;
	redis) command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || { echo "appinstr: redis: skipped (redis)"; continue; } ;;
	*) echo "appinstr: no group $g" >&2; exit 2 ;;
	esac
	for m in plain pass ddp; do
		for n in "$N1" "$N2"; do
			"${g}_run" "$m" "$n" || exit 1
			echo "$machine,$g,$m,$n,$(total "$(cg "$g" "$m" "$n")")" >>"$csv"
		done
		a=$(total "$(cg "$g" "$m" "$N1")") b=$(total "$(cg "$g" "$m" "$N2")")
		printf 'appinstr: %-6s %-5s %8d instructions per request\n' "$g" "$m" $(((b - a) / (N2 - N1)))
	done
	# What DDPMODE adds, function by function: (ddp N2 - N1) - (plain N2 - N1).
	cg_diff "$(cg "$g" plain "$N1")" "$(cg "$g" plain "$N2")" >"$out/$g-plain-diff.cg" 2>/dev/null &&
		cg_diff "$(cg "$g" ddp "$N1")" "$(cg "$g" ddp "$N2")" >"$out/$g-ddp-diff.cg" 2>/dev/null &&
		cg_diff "$out/$g-plain-diff.cg" "$out/$g-ddp-diff.cg" >"$out/$g-extra.cg" 2>/dev/null &&
		cg_annotate --auto=no --threshold=0 "$out/$g-extra.cg" 2>/dev/null |
		awk -v n=$((N2 - N1)) -v g="$g" '
			/^ *-?[0-9,]+ \( *-?[0-9.]+%\) / && $NF != "TOTALS" {
				v = $1; gsub(",", "", v); f = $NF; sub(/^.*\//, "", f)
				if (v + 0 >= n * 40 || v + 0 <= -n * 40)
					printf "appinstr:   %-6s %+6d  %s\n", g, v / n, f }' | head -n 30
done
