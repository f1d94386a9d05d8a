#!/bin/sh
# SPDX-License-Identifier: MIT
# The TCP Server's evaluation (issue 16, docs/tcpserver.md): nginx with one
# worker pinned to one CPU, served plainly (regular TCP) and through
# tcpserverd with the optimisations added one by one, all in the same run:
#   tcp      regular TCP (nginx's sockets are the kernel's)
#   sync     offloaded, synchronous calls
#   async    + asynchronous send
#   eagerrx  + eager receive
#   eageracc + eager accept
#   setup    + setup with accept (all switches)
#   cluster  all switches, nginx reaching tcpserverd over an esock QP (the
#            cluster variant's transport, tcpserverd -l on 127.0.0.1)
#            instead of shared memory: both ends on this machine's CPUs, so
#            it shows the transport's cost, not a second node's relief
# for 4 KiB and 16 KiB files, HTTP/1.0 (a connection per request) and
# keep-alive, at 1, 8 and 32 concurrent clients (ab).  Per cell: requests/s,
# the host's CPU time per request (nginx's user + system time), tcpserverd's,
# and how busy each CPU was.
#
#   top_builddir=build sh tools/tcpserver-eval.sh [RUNS [OUTDIR [SECONDS]]]
#   (defaults: 3 tcpserver-eval-out 2; SECONDS: whole seconds, as ab takes them)
#
# Placement on a two-CPU machine (EVAL_CPUS=host,server[,client] overrides
# "0,1,1"): nginx on the host CPU, tcpserverd (-c) on the server CPU, ab on
# the client CPU.  By default ab shares tcpserverd's CPU, so the load
# generator competes with tcpserverd, never with nginx; EVAL_CPUS=0,1,0 gives
# tcpserverd a CPU of its own (the published SMP setting) and makes ab compete
# with nginx instead (under the quota, nginx gets its share).  With regular TCP the
# kernel's TCP work for nginx's sockets runs on nginx's CPU (in its system
# calls and their softirqs), offloaded it runs on tcpserverd's.
# EVAL_QUOTA=P (default 50): nginx gets P % of its CPU (a cgroup's CPU
# quota, v2 or v1), so that the host is what saturates, as in the
# overloaded-host experiments; 0: no quota (the whole CPU).
# Writes OUTDIR/eval.csv (a row per cell and run), OUTDIR/summary.txt
# (medians, ratios to regular TCP) and OUTDIR/tcpserver-eval.svg.
set -u
runs=${1:-3}
out=${2:-tcpserver-eval-out}
secs=${3:-2}
b=$(cd "${top_builddir:-.}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cpus=${EVAL_CPUS:-0,1,1}
hcpu=$(echo "$cpus" | cut -d, -f1) scpu=$(echo "$cpus" | cut -d, -f2) ccpu=$(echo "$cpus" | cut -d, -f3)
ccpu=${ccpu:-$scpu}
quota=${EVAL_QUOTA:-50}
# EVAL_QUICK=1: 4 KiB at 8 clients only (the test that keeps this script working).
files="4k 16k" concs="1 8 32"
[ "${EVAL_QUICK:-0}" = 1 ] && files=4k concs=8
for c in nginx ab python3 taskset; do
	command -v $c >/dev/null || { echo "tcpserver-eval: $c is not installed (scripts/deps.sh)"; exit 77; }
done
[ -x "$b/tcpserver/tcpserverd" ] && [ -f "$b/.libs/libesock.so" ] || { echo "tcpserver-eval: build first"; exit 77; }
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "tcpserver-eval: libesock.so is built with sanitizers; it cannot be preloaded into nginx"
	exit 77
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
tmp=$(mktemp -d) || exit 1
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr -s ' ')
machine="$cpu, $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); nginx on CPU $hcpu, tcpserverd on CPU $scpu, ab on CPU $ccpu"
echo "tcpserver-eval: $machine; $runs runs of ${secs}s cells" | tee "$out/machine.txt"

mkdir -p "$tmp/www" "$tmp/cache"
head -c 4096 /dev/urandom >"$tmp/www/4k"
head -c 16384 /dev/urandom >"$tmp/www/16k"
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www"/*
. "$here/../tests/apps/ports.sh"
port=$(free_port)
. "$here/../tests/apps/nginx-conf.sh"
nginx_conf "$port" 1 1024 "master_process off;" "keepalive_requests 1000000;" "backlog=4096"

lport=$(free_port)
while [ "$lport" = "$port" ]; do lport=$(free_port); done
taskset -c "$scpu" "$b/tcpserver/tcpserverd" -s "$tmp/s" -l "127.0.0.1:$lport" -c "$scpu" 2>"$tmp/d.log" & dpid=$!
pids="$dpid"
for i in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] || { echo "tcpserver-eval: tcpserverd did not start"; exit 1; }

# A cgroup with the CPU quota for nginx (its path in $cg), or none (cg empty).
cg=
if [ "$quota" -gt 0 ]; then
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
			echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
		cg=/sys/fs/cgroup/esock-eval.$$
		mkdir "$cg" 2>/dev/null && echo "$((quota * 1000)) 100000" >"$cg/cpu.max" 2>/dev/null || cg=
	elif [ -d /sys/fs/cgroup/cpu ]; then
		cg=/sys/fs/cgroup/cpu/esock-eval.$$
		mkdir "$cg" 2>/dev/null && echo "$((quota * 1000))" >"$cg/cpu.cfs_quota_us" 2>/dev/null || cg=
	fi
	[ -n "$cg" ] || { echo "tcpserver-eval: no CPU quota possible here (EVAL_QUOTA=0 to run without)"; exit 77; }
	machine="$machine; nginx limited to $quota % of its CPU"
	echo "tcpserver-eval: nginx limited to $quota % of CPU $hcpu ($cg)"
fi
echo "$machine" >"$out/machine.txt"
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; sleep 0.2; [ -z "$cg" ] || rmdir "$cg" 2>/dev/null; rm -rf "$tmp"; }

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# "busy total" jiffies of CPU $1
cpustat() { awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

opts_of() {
	case $1 in
	sync) echo none ;;
	async) echo async ;;
	eagerrx) echo async,eagerrx ;;
	eageracc) echo async,eagerrx,eageraccept ;;
	setup|cluster) echo all ;;
	esac
}

csv=$out/eval.csv
echo "run,mode,file,proto,conc,rps,host_us_per_req,tsd_us_per_req,host_cpu_busy,server_cpu_busy" >"$csv"
modes="tcp sync async eagerrx eageracc setup cluster"
hz=$(getconf CLK_TCK)
for r in $(seq 1 "$runs"); do
	# The order turns from run to run (no mode always first).
	set -- $modes
	k=$(( (r - 1) % 7 ))
	while [ "$k" -gt 0 ]; do first=$1; shift; set -- "$@" "$first"; k=$((k - 1)); done
	for mode in "$@"; do
		if [ "$mode" = tcp ]; then
			taskset -c "$hcpu" nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf" & npid=$!
		else
			where=$tmp/s
			[ "$mode" = cluster ] && where=127.0.0.1:$lport
			ESOCK_TCPSERVER=$where ESOCK_TCPSERVER_OPT=$(opts_of "$mode") LD_PRELOAD=$b/.libs/libesock.so \
				taskset -c "$hcpu" nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf" & npid=$!
		fi
		pids="$pids $npid"
		[ -z "$cg" ] || echo "$npid" >"$cg/cgroup.procs"
		for i in $(seq 1 100); do
			curl -s -o /dev/null "http://127.0.0.1:$port/4k" 2>/dev/null && break
			sleep 0.05
		done
		for file in $files; do
			for proto in http10 keepalive; do
				for conc in $concs; do
					ka=; [ "$proto" = keepalive ] && ka=-k
					h0=$(ticks "$npid") s0=$(ticks "$dpid")
					set -- $(cpustat "$hcpu") $(cpustat "$scpu")
					hb0=$1 ht0=$2 sb0=$3 st0=$4
					taskset -c "$ccpu" ab -q $ka -c "$conc" -t "$secs" -n 1000000 \
						"http://127.0.0.1:$port/$file" >"$tmp/ab.out" 2>&1
					h1=$(ticks "$npid") s1=$(ticks "$dpid")
					set -- $(cpustat "$hcpu") $(cpustat "$scpu")
					done_=$(sed -n 's/^Complete requests: *//p' "$tmp/ab.out")
					failed=$(sed -n 's/^Failed requests: *//p' "$tmp/ab.out")
					rps=$(sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p' "$tmp/ab.out")
					if [ -z "$rps" ] || [ "${failed:-1}" != 0 ]; then
						echo "tcpserver-eval: $mode $file $proto c=$conc: ab failed ($(tail -n 2 "$tmp/ab.out" | tr '\n' ' '))" >&2
						continue
					fi
					[ "$mode" = tcp ] && s1=$s0
					awk -v r="$r" -v m="$mode" -v f="$file" -v p="$proto" -v c="$conc" -v rps="$rps" \
						-v n="$done_" -v hz="$hz" -v h="$((h1 - h0))" -v s="$((s1 - s0))" \
						-v hb="$(($1 - hb0))" -v ht="$(($2 - ht0))" -v sb="$(($3 - sb0))" -v st="$(($4 - st0))" \
						'BEGIN { printf "%s,%s,%s,%s,%s,%.0f,%.2f,%.2f,%.2f,%.2f\n", r, m, f, p, c, rps,
						  h * 1e6 / hz / n, s * 1e6 / hz / n, ht ? hb / ht : 0, st ? sb / st : 0 }' >>"$csv"
					tail -n 1 "$csv"
				done
			done
		done
		kill "$npid"
		wait "$npid" 2>/dev/null
	done
done

python3 "$here/tcpserver-eval-plot.py" "$csv" "$out" "$machine"
