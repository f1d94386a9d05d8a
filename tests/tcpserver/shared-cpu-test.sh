#!/bin/sh
# SPDX-License-Identifier: MIT
# The TCP Server on CPUs it shares with busy processes (a busy loop pinned
# beside tcpserverd, beside the host, or both): what a machine that is not
# reserved for it looks like.  Spinning there used to cost a scheduler slice
# per call (tcpserverd yielded to the busy loop, the host slept through a
# tick for each answer): 4 ms a call, nginx at 1-4 % of regular TCP.
#  - calls through the channel (tsp-host calls) with tcpserverd's CPU shared:
#    the median call takes less than a millisecond (a tick is 1-10 ms);
#  - nginx, regular TCP and offloaded (no switch, all switches), HTTP/1.0
#    and keep-alive, with its CPU shared and with both CPUs shared: every
#    offloaded cell serves at least a twentieth of regular TCP's requests in
#    the same run.  The bound stands between the defect (a tick per call:
#    0.01-0.04) and what works; working runs measured 0.3-1.3 on the first
#    machine, down to 0.07-0.10 on a second of the same kind (2026-11-27:
#    HTTP/1.0 without switches, every call a round trip through a CPU that
#    a busy loop holds for the scheduler's slice), where a tenth failed one
#    run in three.
set -u
b=${top_builddir:-.}
d=$b/tcpserver/tcpserverd h=$b/tests/tcpserver/tsp-host
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) || exit 99
pids= hogs=
stop_hogs() { for p in $hogs; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; hogs=; }
cleanup() { stop_hogs; for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM # (the cleanup runs when a time limit stops the test too)
fail() { echo "FAIL: $*"; tail -n 20 "$tmp"/*.log "$tmp"/*.err 2>/dev/null; exit 1; }
for c in nginx ab taskset python3; do
	command -v $c >/dev/null || { echo "SKIP: $c is not installed (scripts/deps.sh)"; exit 77; }
done
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs two CPUs"; exit 77; }
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded into nginx"
	exit 77
fi
# CPUs this process may use: the first two.
cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0))[:2])))')
set -- $cpus
c0=$1 c1=$2
hog() { for c in "$@"; do taskset -c "$c" sh -c 'while :; do :; done' & hogs="$hogs $!"; done; sleep 0.1; }

taskset -c "$c1" "$d" -s "$tmp/s" -c "$c1" 2>"$tmp/d.log" & dpid=$!
pids=$dpid
for i in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] || fail "tcpserverd did not start"

# ---- calls with tcpserverd's CPU shared ----
hog "$c1"
taskset -c "$c0" "$h" calls "$tmp/s" 2000 >"$tmp/calls.log" 2>&1 || fail "calls"
stop_hogs
p50=$(sed -n 's/.*through tcpserverd p50 \([0-9.]*\) us.*/\1/p' "$tmp/calls.log")
[ -n "$p50" ] || fail "no median: $(cat "$tmp/calls.log")"
awk -v p="$p50" 'BEGIN { exit !(p < 1000) }' || fail "a call takes $p50 us (median) with tcpserverd's CPU shared"
echo "calls with tcpserverd's CPU shared: p50 $p50 us"

# ---- nginx ----
mkdir -p "$tmp/www" "$tmp/cache"
head -c 4096 /dev/urandom >"$tmp/www/4k"
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www/4k"
. "$here/../apps/ports.sh"
port=$(free_port)
. "$here/../apps/nginx-conf.sh"
nginx_conf "$port" 1 1024 "master_process off;" "keepalive_requests 1000000;" "backlog=4096"

# rps MODE KEEPALIVE: requests per second of nginx on CPU c0 (ab on c1, 2 s, 8 clients) in $R.
rps() {
	if [ "$1" = tcp ]; then
		taskset -c "$c0" nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf" & npid=$!
	else
		ESOCK_TCPSERVER=$tmp/s ESOCK_TCPSERVER_OPT=$1 LD_PRELOAD=$b/.libs/libesock.so \
			taskset -c "$c0" nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf" & npid=$!
	fi
	pids="$pids $npid"
	wait_port "$port" || fail "$1 $2: nginx does not take connections"
	taskset -c "$c1" ab -q $2 -c 8 -t 2 -n 1000000 "http://127.0.0.1:$port/4k" >"$tmp/ab.log" 2>&1
	kill "$npid"
	wait "$npid" 2>/dev/null
	[ "$(sed -n 's/^Failed requests: *//p' "$tmp/ab.log")" = 0 ] || fail "$1 $2: ab: $(tail -n 3 "$tmp/ab.log")"
	R=$(sed -n 's/^Requests per second: *\([0-9]*\).*/\1/p' "$tmp/ab.log")
	[ -n "$R" ] || fail "$1 $2: ab: $(tail -n 3 "$tmp/ab.log")"
}

for shared in "$c0" "$c0 $c1"; do
	hog $shared
	for ka in "" -k; do
		rps tcp "$ka"
		tcp=$R
		[ "$tcp" -gt 0 ] || fail "regular TCP served nothing"
		for mode in none all; do
			rps "$mode" "$ka"
			off=$R
			echo "CPU $shared shared, ${ka:-HTTP/1.0}, switches $mode: $off requests/s, regular TCP $tcp"
			if [ "$((off * 20))" -lt "$tcp" ]; then
				# Measured once more, both: the defect (a tick per call) fails
				# every time; a working cell near the bound (0.049 seen here
				# once, 2026-11-27) does not twice in a row.
				rps tcp "$ka"
				tcp=$R
				rps "$mode" "$ka"
				off=$R
				echo "  again: $off requests/s, regular TCP $tcp"
				[ "$((off * 20))" -ge "$tcp" ] ||
					fail "offloaded ($mode) nginx serves $off requests/s, regular TCP $tcp, with CPU $shared shared"
			fi
		done
	done
	stop_hogs
done
echo "the TCP Server on shared CPUs: ok"
