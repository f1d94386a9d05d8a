#!/bin/sh
# SPDX-License-Identifier: MIT
# Real applications in the same run, three ways: plain TCP, the library
# preloaded with every socket passing through (its cost), and DDPMODE on both
# ends (esock-run --ddp=PORT); RUNS rounds, the three modes one after another
# in each (their order turns from round to round), medians and ratios to plain.
#
#   top_builddir=build sh tools/appbench.sh [RUNS [OUTDIR [GROUP...]]]
#   (defaults: 5 appbench-out; groups: redis nginx pgbench iperf3 pingpong)
#
# Cells (higher is better in every one; each _cpu cell is its work per second
# of busy CPU, both ends and the kernel, from /proc/stat: steadier than
# throughput on a shared machine, where a neighbour moves both modes' rates):
#   redis   redis-benchmark, 50 clients, SET and GET, pipeline 1 and 16 (requests/s)
#   nginx   one worker, ab -k: 4 KiB at 20 and 200 connections, 1 MiB at 20 (requests/s)
#   pgbench PostgreSQL, pgbench -c 4 -j 2 -T 5, select-only and TPC-B-like (tps; root only)
#   iperf3  one stream, 3 s (Mbit/s)
#   pingpong esock-sockbench: 64-octet request/response, round trips/s (1e6 / p50 us)
# Writes OUTDIR/appbench.csv (a row per measurement, each with the machine:
# date, CPU model, cores, kernel), OUTDIR/summary.txt (medians, ratios) and
# OUTDIR/appbench.svg (the ratios as bars).  Servers are on 127.0.0.1 and
# stopped by their PID; a group whose programs are missing is skipped (named).
set -u
runs=${1:-5}
out=${2:-appbench-out}
[ $# -gt 2 ] && shift 2 && groups=$* || groups="redis nginx pgbench iperf3 pingpong"
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
export top_builddir
# The tests' helpers: a temporary directory, free ports, servers by PID, cleanup.
apps_dir=$here/../tests/apps
. "$apps_dir/common.sh"
. "$here/../tests/apps/nginx-conf.sh"
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
sockbench=$top_builddir/tools/esock-sockbench

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr -s ' ' | tr ',' ' ')
cores=$(nproc)
kernel=$(uname -r)
day=$(date -u +%Y-%m-%d)
machine="$day,$cpu,$cores,$kernel"
csv=$out/appbench.csv
echo "date,cpu,cores,kernel,cell,mode,run,value,unit" >"$csv"
echo "appbench: $cpu, $cores cores, kernel $kernel, $day; $runs rounds; groups: $groups"

# record CELL MODE RUN VALUE UNIT
record() {
	[ -n "$4" ] || { echo "appbench: $1 $2 run $3: no figure (see $tmp)" >&2; return 0; }
	echo "$machine,$1,$2,$3,$4,$5" >>"$csv"
	printf '  %-18s %-5s %12s %s\n' "$1" "$2" "$4" "$5"
}

# Busy CPU of the whole machine so far, in ms (user, nice, system, irq, softirq).
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
busy() { awk -v hz="$hz" '/^cpu / { printf "%.0f", ($2 + $3 + $4 + $7 + $8) * 1000 / hz }' /proc/stat; }

# record_cpu CELL MODE RUN OPS MS0 UNIT: OPS done in the busy CPU since MS0, per CPU second.
record_cpu() {
	b=$(busy)
	[ -n "$4" ] && [ "$b" -gt "$5" ] || { record "$1_cpu" "$2" "$3" "" "$6"; return 0; }
	record "$1_cpu" "$2" "$3" "$(awk -v o="$4" -v ms="$(($b - $5))" 'BEGIN { printf "%.1f", o * 1000 / ms }')" "$6"
}

# The modes of round R, turned so that no mode always comes first (a warm cache, a busy neighbour).
modes_of() {
	case $(($1 % 3)) in
	1) echo plain pass ddp ;;
	2) echo pass ddp plain ;;
	0) echo ddp plain pass ;;
	esac
}

# ---- redis ----
redis_round() { # MODE RUN
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || return 2
	port=$(free_port)
	prefix "$1" "$port"
	# shellcheck disable=SC2086
	start "redis-$1" $pre redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no
	wait_listen "$port" "$srv_pid"
	for p in 1 16; do
		n=$((p == 1 ? 60000 : 1000000)) # (a pipelined run short enough to blur: ~0.7 s plain)
		b0=$(busy)
		# shellcheck disable=SC2086
		$limit $pre redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$n" -P "$p" -q -t set,get \
			>"$tmp/rb.out" 2>&1
		record_cpu "redis_setget_P$p" "$1" "$2" $((2 * n)) "$b0" req/cpu-s
		for t in SET GET; do
			v=$(tr '\r' '\n' <"$tmp/rb.out" | sed -n "s/^$t: \([0-9.]*\) requests per second.*/\1/p" | tail -n 1)
			record "redis_$(echo $t | tr A-Z a-z)_P$p" "$1" "$2" "$v" req/s
		done
	done
	stop "$srv_pid"
}

# ---- nginx ----
nginx_setup() {
	mkdir -p "$tmp/www" "$tmp/cache"
	random_file "$tmp/www/4k" 4
	random_file "$tmp/www/1m" 1024
	chmod 755 "$tmp" "$tmp/www"
	chmod 644 "$tmp/www"/*
}

nginx_round() { # MODE RUN
	command -v nginx >/dev/null && command -v ab >/dev/null || return 2
	[ -f "$tmp/www/4k" ] || nginx_setup
	port=$(free_port)
	prefix "$1" "$port"
	nginx_conf "$port" 1 1024 "" "keepalive_requests 1000000;"
	# shellcheck disable=SC2086
	start "nginx-$1" $pre nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf"
	wait_listen "$port" "$srv_pid"
	for c in "4k 20 20000" "4k 200 20000" "1m 20 2000"; do
		set -- "$1" "$2" $c
		b0=$(busy)
		# shellcheck disable=SC2086
		$limit $pre ab -q -k -s 20 -c "$4" -n "$5" "http://127.0.0.1:$port/$3" >"$tmp/ab.out" 2>&1
		v=$(sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p' "$tmp/ab.out")
		bad=$(sed -n 's/^Failed requests: *//p' "$tmp/ab.out")
		[ "${bad:-1}" = 0 ] || v=
		record "nginx_$3_c$4" "$1" "$2" "$v" req/s
		record_cpu "nginx_$3_c$4" "$1" "$2" "${v:+$5}" "$b0" req/cpu-s
	done
	stop "$srv_pid"
}

# ---- pgbench ----
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
pg_setup() {
	chmod 755 "$tmp"
	cp "$esock_lib" "$tmp/libesock.so" && chmod 644 "$tmp/libesock.so" || return 1
	mkdir -p "$tmp/pg" "$tmp/sock" && chown postgres "$tmp/pg" "$tmp/sock" || return 1
	runuser -u postgres -- "$pg_bin/initdb" -D "$tmp/pg" -A trust -U postgres >"$tmp/initdb.log" 2>&1
}

pgbench_round() { # MODE RUN
	[ -n "$pg_bin" ] && [ -x "$pg_bin/initdb" ] && [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1 ||
		return 2
	[ -d "$tmp/pg/base" ] || pg_setup || return 2
	port=$(free_port)
	# The server runs as postgres: the library from $tmp, where that user can read it.
	ESOCK_LIB=$tmp/libesock.so
	export ESOCK_LIB
	prefix "$1" "$port"
	# shellcheck disable=SC2086
	start "pg-$1" $pre runuser -u postgres -- "$pg_bin/postgres" -D "$tmp/pg" \
		-c listen_addresses=127.0.0.1 -p "$port" -c unix_socket_directories="$tmp/sock" \
		-c fsync=off -c synchronous_commit=off -c logging_collector=off
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $pre "$pg_bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -s 4 -q postgres \
		>"$tmp/pgi.out" 2>&1
	for k in select-only tpcb-like; do
		b0=$(busy)
		# shellcheck disable=SC2086
		$limit $pre "$pg_bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -c 4 -j 2 -T 5 \
			-b "$k" postgres >"$tmp/pgb.out" 2>&1
		v=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$tmp/pgb.out")
		record "pgbench_$k" "$1" "$2" "$v" tps
		t=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$tmp/pgb.out")
		record_cpu "pgbench_$k" "$1" "$2" "$t" "$b0" tx/cpu-s
	done
	runuser -u postgres -- "$pg_bin/pg_ctl" -D "$tmp/pg" -m fast -w -t 30 stop >/dev/null 2>&1
	wait_exit "$srv_pid" 30 >/dev/null || stop "$srv_pid"
	unset ESOCK_LIB
}

# ---- iperf3 ----
iperf3_round() { # MODE RUN
	command -v iperf3 >/dev/null || return 2
	port=$(free_port)
	prefix "$1" "$port"
	# shellcheck disable=SC2086
	start "iperf3-$1" $pre iperf3 -s -B 127.0.0.1 -p "$port" -1
	wait_listen "$port" "$srv_pid"
	b0=$(busy)
	# shellcheck disable=SC2086
	$limit $pre iperf3 -c 127.0.0.1 -p "$port" -t 3 -f m >"$tmp/ip.out" 2>&1
	v=$(awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { print v }' "$tmp/ip.out")
	record iperf3_1stream "$1" "$2" "$v" Mbit/s
	# (what 3 s at that rate carried: iperf3 prints the amount in units of its choosing)
	record_cpu iperf3_1stream "$1" "$2" "$(awk -v v="${v:-0}" 'BEGIN { if (v > 0) print v * 3 }')" \
		"$b0" Mbit/cpu-s
	wait_exit "$srv_pid" 10 >/dev/null || stop "$srv_pid"
}

# ---- 64-octet request/response ----
pingpong_round() { # MODE RUN
	[ -x "$sockbench" ] || return 2
	b0=$(busy)
	case $1 in
	plain) p50=$("$sockbench" lat 64 20000 same | awk '{print $3}') ;;
	pass) p50=$(LD_PRELOAD=$esock_lib "$sockbench" lat 64 20000 same | awk '{print $3}') ;;
	ddp) p50=$(LD_PRELOAD=$esock_lib ESOCK_DDPMODE=all "$sockbench" lat 64 20000 same | awk '{print $3}') ;;
	esac
	v=$(awk -v p="${p50:-0}" 'BEGIN { if (p > 0) printf "%.0f", 1e6 / p }')
	record pingpong_64B "$1" "$2" "$v" rt/s
	record_cpu pingpong_64B "$1" "$2" "${v:+20000}" "$b0" rt/cpu-s
}

for r in $(seq "$runs"); do
	echo "round $r of $runs"
	for g in $groups; do
		for m in $(modes_of "$r"); do
			"${g}_round" "$m" "$r"
			if [ $? -eq 2 ]; then
				echo "  $g: skipped (its programs are missing, or it needs root)"
				groups=$(echo " $groups " | sed "s/ $g / /")
				break
			fi
		done
	done
done

# Medians per cell and mode, ratios to plain.
awk -F, 'NR > 1 { k = $5 SUBSEP $6; v[k, ++n[k]] = $8; cell[$5] = 1; unit[$5] = $9; if (!($5 in ord)) ord[$5] = ++nc; name[nc] = $5 }
function med(k,   i, j, t, m) {
	m = n[k]
	if (!m) return 0
	for (i = 1; i <= m; i++) a[i] = v[k, i] + 0
	for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
	printf "%-24s %12s %12s %12s %8s %8s %s\n", "cell", "plain", "pass", "ddp", "pass/pl", "ddp/pl", "unit"
	for (c = 1; c <= nc; c++) {
		x = name[c]; p = med(x SUBSEP "plain"); q = med(x SUBSEP "pass"); d = med(x SUBSEP "ddp")
		printf "%-24s %12.1f %12.1f %12.1f %8.3f %8.3f %s\n", x, p, q, d, p ? q / p : 0, p ? d / p : 0, unit[x]
	}
}' "$csv" >"$out/summary.txt"
{
	echo "# $cpu, $cores cores, kernel $kernel, $day; medians of $runs rounds"
	cat "$out/summary.txt"
} >"$out/summary.tmp" && mv "$out/summary.tmp" "$out/summary.txt"
cat "$out/summary.txt"

# The ratios as bars: pass-through and DDPMODE per cell, lines at 0.9 and 1.0.
awk -v title="esock appbench: $cpu, $cores cores, kernel $kernel, $day (medians of $runs)" '
NR > 2 { n++; c[n] = $1; q[n] = $5; d[n] = $6 }
END {
	w = 80 + n * 70; if (w < 520) w = 520; h = 360; base = 290; s = 150 # a ratio of 1.0: s pixels
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"10\">\n", w, h
	printf "<text x=\"10\" y=\"16\" font-size=\"12\">%s</text>\n", title
	for (k = 0; k <= 1.5; k += 0.5)
		printf "<line x1=\"50\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"20\" y=\"%.1f\">%.1f</text>\n", w - 10, base - k * s, base - k * s, base - k * s + 3, k
	printf "<line x1=\"50\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-dasharray=\"4\"/>\n", w - 10, base - 0.9 * s, base - 0.9 * s
	for (i = 1; i <= n; i++) {
		x = 60 + (i - 1) * 70
		qq = q[i] > 1.5 ? 1.5 : q[i]; dd = d[i] > 1.5 ? 1.5 : d[i]
		printf "<rect x=\"%d\" y=\"%.1f\" width=\"25\" height=\"%.1f\" fill=\"#999\"/>\n", x, base - qq * s, qq * s
		printf "<rect x=\"%d\" y=\"%.1f\" width=\"25\" height=\"%.1f\" fill=\"#36c\"/>\n", x + 27, base - dd * s, dd * s
		printf "<text x=\"%d\" y=\"%d\" transform=\"rotate(30 %d %d)\">%s</text>\n", x, base + 14, x, base + 14, c[i]
	}
	printf "<rect x=\"%d\" y=\"26\" width=\"10\" height=\"10\" fill=\"#999\"/><text x=\"%d\" y=\"35\">pass-through / plain</text>\n", w - 260, w - 246
	printf "<rect x=\"%d\" y=\"26\" width=\"10\" height=\"10\" fill=\"#36c\"/><text x=\"%d\" y=\"35\">DDPMODE / plain (dashed: 0.9)</text>\n", w - 140, w - 126
	print "</svg>"
}' "$out/summary.txt" >"$out/appbench.svg"
echo "appbench: $csv, $out/summary.txt, $out/appbench.svg"
