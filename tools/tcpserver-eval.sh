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
#   share    all switches, and the host takes EVAL_SHARE % (default 40) of the
#            connections on its own kernel TCP (share=P: for where tcpserverd's
#            CPU saturates and the host's idles; not in the default list)
#   cluster  all switches, nginx reaching tcpserverd over an esock QP (the
#            cluster variant's transport, tcpserverd -l on 127.0.0.1)
#            instead of shared memory: both ends on this machine's CPUs, so
#            it shows the transport's cost, not a second node's relief
# for 4 KiB and 16 KiB files, HTTP/1.0 (a connection per request) and
# keep-alive, at 1, 8 and 32 concurrent clients (ab).  Per cell: requests/s,
# the host's CPU time per request (nginx's threads, as the scheduler counts
# it), tcpserverd's, the load generator's (ab's user and system time: its
# side of the loopback TCP work), how often nginx slept, how busy each CPU was,
# the share of the quota's periods in which nginx was throttled (it used its whole
# quota: the host saturated), and which side saturated.  An nginx per mode runs for
# the whole evaluation, so that each cell's modes are measured seconds apart.
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
# EVAL_QUOTA=P (default 25): nginx gets P % of its CPU (a cgroup's CPU
# quota, v2 or v1), so that the host is what saturates, as in the
# overloaded-host experiments; 0: no quota (the whole CPU).  25, not 50:
# with ab beside tcpserverd an offloaded HTTP/1.0 connection costs CPU 1
# about twice what it costs regular TCP's nginx, so at 50 % CPU 1 saturates
# first and the comparison measures the load generator's CPU, not the host
# (docs/tcpserver.md, "Why a quarter"; the summary's "saturates" column says
# which side did in each cell).
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
quota=${EVAL_QUOTA:-25}
# EVAL_QUICK=1: 4 KiB at 8 clients only (the test that keeps this script working).
# EVAL_FILES, EVAL_PROTOS, EVAL_CONCS, EVAL_MODES: a part of the grid (to look at one cell).
files=${EVAL_FILES:-"4k 16k"} protos=${EVAL_PROTOS:-"http10 keepalive"} concs=${EVAL_CONCS:-"1 8 32"}
[ "${EVAL_QUICK:-0}" = 1 ] && files=4k concs=8
# EVAL_TSD_OPTS: more tcpserverd options (e.g. "-p 50", a fixed spin, to compare with the learnt one).
tsd_opts=${EVAL_TSD_OPTS:-}
# EVAL_NGINX: more directives for nginx's http block, every mode alike (nginx's defaults
# otherwise: "sendfile on; tcp_nopush on;" is what Debian's nginx.conf adds).
nginx_http=${EVAL_NGINX:-}
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
pids= cgs=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	sleep 0.3
	for c in $cgs; do rmdir "$c" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr -s ' ')
machine="$cpu, $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); nginx on CPU $hcpu, tcpserverd on CPU $scpu, ab on CPU $ccpu"
echo "tcpserver-eval: $machine; $runs runs of ${secs}s cells" | tee "$out/machine.txt"

mkdir -p "$tmp/www"
head -c 4096 /dev/urandom >"$tmp/www/4k"
head -c 16384 /dev/urandom >"$tmp/www/16k"
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www"/*
. "$here/../tests/apps/ports.sh"
. "$here/../tests/apps/nginx-conf.sh"

lport=$(free_port)
# The cluster mode's nginx reaches a tcpserverd of its own: idle while the other modes are
# measured, a host across the network would cost their tcpserverd an RDMA Read at each sleep.
# shellcheck disable=SC2086
taskset -c "$scpu" "$b/tcpserver/tcpserverd" -s "$tmp/s" -c "$scpu" $tsd_opts 2>"$tmp/d.log" & dpid=$!
# shellcheck disable=SC2086
taskset -c "$scpu" "$b/tcpserver/tcpserverd" -s "$tmp/s2" -l "127.0.0.1:$lport" -c "$scpu" $tsd_opts 2>"$tmp/d2.log" & dpid2=$!
pids="$dpid $dpid2"
for i in $(seq 1 100); do [ -S "$tmp/s" ] && [ -S "$tmp/s2" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] && [ -S "$tmp/s2" ] || { echo "tcpserver-eval: tcpserverd did not start"; exit 1; }

# mk_cg NAME: a cgroup with the CPU quota (its path), or nothing (no quota asked, or none possible).
v2=false
[ -f /sys/fs/cgroup/cgroup.controllers ] && v2=true
mk_cg() {
	[ "$quota" -gt 0 ] || return 0
	if $v2; then
		grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
			echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
		c=/sys/fs/cgroup/esock-eval.$$.$1
		mkdir "$c" 2>/dev/null && echo "$((quota * 1000)) 100000" >"$c/cpu.max" 2>/dev/null && echo "$c"
	elif [ -d /sys/fs/cgroup/cpu ]; then
		c=/sys/fs/cgroup/cpu/esock-eval.$$.$1
		mkdir "$c" 2>/dev/null && echo "$((quota * 1000))" >"$c/cpu.cfs_quota_us" 2>/dev/null && echo "$c"
	fi
}
[ "$quota" -gt 0 ] && machine="$machine; nginx limited to $quota % of its CPU"
[ -n "$nginx_http" ] && machine="$machine; nginx with: $nginx_http"
echo "$machine" >"$out/machine.txt"

# CPU time of process $1's threads, in ns (the scheduler's own count: exact,
# where the ticks of /proc/PID/stat sample a process that runs in bursts of a
# few microseconds).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# CPU time (user and system) of the processes this shell waited for, in clock ticks:
# around ab, the load generator's own (the kernel's TCP work in its calls included).
# Times process $1's threads went to sleep (voluntary context switches): a sleep and its
# wake-up cost a paravirtualized machine's CPU much more than a system call (esock-wakecost).
sleeps() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'; }
# "periods throttled" of cgroup $1 (the CPU quota's own count; "0 0" without one)
throttled() {
	[ -n "$1" ] || { echo "0 0"; return; }
	awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { t = $2 } END { print p + 0, t + 0 }' "$1/cpu.stat"
}
kids_ticks() { sed 's/.*) //' /proc/$$/stat | awk '{ print $14 + $15 }'; }
tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
# "busy total" jiffies of CPU $1
cpustat() { awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

opts_of() {
	case $1 in
	sync) echo none ;;
	async) echo async ;;
	eagerrx) echo async,eagerrx ;;
	eageracc) echo async,eagerrx,eageraccept ;;
	setup|cluster) echo all ;;
	share) echo "all,share=${EVAL_SHARE:-40}" ;;
	esac
}

# One nginx per mode, each on its own port and in its own cgroup, all up for
# the whole evaluation: a cell's modes are measured one after the other,
# seconds apart, in an order that turns from cell to cell.  The machine's
# speed drifts from minute to minute (regular TCP's requests/s here moved by a
# quarter between runs a minute apart), so figures compared to each other
# must be taken close together; the summary's ratios are those of each run.
modes=${EVAL_MODES:-"tcp sync async eagerrx eageracc setup cluster"}
nmodes=$(echo $modes | wc -w)
ports=
for mode in $modes; do
	d=$tmp/$mode
	mkdir -p "$d/cache" && ln -s "$tmp/www" "$d/www"
	port=$(free_port)
	while echo " $ports $lport " | grep -q " $port "; do port=$(free_port); done
	ports="$ports $port"
	nginx_conf "$port" 1 1024 "master_process off;" "keepalive_requests 1000000; $nginx_http" "backlog=4096" "$d"
	if [ "$mode" = tcp ]; then
		taskset -c "$hcpu" nginx -e "$d/nginx.err" -p "$d" -c "$d/nginx.conf" & npid=$!
	else
		where=$tmp/s
		[ "$mode" = cluster ] && where=127.0.0.1:$lport
		ESOCK_TCPSERVER=$where ESOCK_TCPSERVER_OPT=$(opts_of "$mode") LD_PRELOAD=$b/.libs/libesock.so \
			taskset -c "$hcpu" nginx -e "$d/nginx.err" -p "$d" -c "$d/nginx.conf" & npid=$!
	fi
	pids="$pids $npid"
	c=$(mk_cg "$mode")
	if [ "$quota" -gt 0 ]; then
		[ -n "$c" ] || { echo "tcpserver-eval: no CPU quota possible here (EVAL_QUOTA=0 to run without)"; exit 77; }
		cgs="$cgs $c"
		echo "$npid" >"$c/cgroup.procs"
	fi
	eval "npid_$mode=$npid port_$mode=$port cg_$mode=$c"
done
for mode in $modes; do
	eval "port=\$port_$mode"
	for i in $(seq 1 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/4k" 2>/dev/null && break
		sleep 0.05
	done
done
[ "$quota" -gt 0 ] && echo "tcpserver-eval: each nginx limited to $quota % of CPU $hcpu ($cgs)"

csv=$out/eval.csv
echo "run,mode,file,proto,conc,rps,host_us_per_req,tsd_us_per_req,host_cpu_busy,server_cpu_busy,client_us_per_req,host_sleeps_per_req,host_throttled" >"$csv"
cell=0
for r in $(seq 1 "$runs"); do
	for file in $files; do
		for proto in $protos; do
			for conc in $concs; do
				ka=; [ "$proto" = keepalive ] && ka=-k
				# The order turns from cell to cell and run to run (no mode always first).
				set -- $modes
				k=$(( (cell + r - 1) % nmodes ))
				cell=$((cell + 1))
				while [ "$k" -gt 0 ]; do first=$1; shift; set -- "$@" "$first"; k=$((k - 1)); done
				for mode in "$@"; do
					eval "npid=\$npid_$mode port=\$port_$mode cg=\$cg_$mode"
					tpid=$dpid
					[ "$mode" = cluster ] && tpid=$dpid2
					h0=$(cpu_ns "$npid") s0=$(cpu_ns "$tpid") hc0=$(cpustat "$hcpu") sc0=$(cpustat "$scpu")
					k0=$(kids_ticks) v0=$(sleeps "$npid") q0=$(throttled "$cg")
					taskset -c "$ccpu" ab -q $ka -c "$conc" -t "$secs" -n 1000000 \
						"http://127.0.0.1:$port/$file" >"$tmp/ab.out" 2>&1
					k1=$(kids_ticks) v1=$(sleeps "$npid") q1=$(throttled "$cg")
					h1=$(cpu_ns "$npid") s1=$(cpu_ns "$tpid") hc1=$(cpustat "$hcpu") sc1=$(cpustat "$scpu")
					hb=$((${hc1% *} - ${hc0% *})) ht=$((${hc1#* } - ${hc0#* }))
					sb=$((${sc1% *} - ${sc0% *})) st=$((${sc1#* } - ${sc0#* }))
					done_=$(sed -n 's/^Complete requests: *//p' "$tmp/ab.out")
					failed=$(sed -n 's/^Failed requests: *//p' "$tmp/ab.out")
					rps=$(sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p' "$tmp/ab.out")
					if [ -z "$rps" ] || [ "${failed:-1}" != 0 ]; then
						echo "tcpserver-eval: $mode $file $proto c=$conc: ab failed ($(tail -n 2 "$tmp/ab.out" | tr '\n' ' '))" >&2
						continue
					fi
					[ "$mode" = tcp ] && s1=$s0
					awk -v r="$r" -v m="$mode" -v f="$file" -v p="$proto" -v c="$conc" -v rps="$rps" \
						-v n="$done_" -v h="$((h1 - h0))" -v s="$((s1 - s0))" \
						-v hb="$hb" -v ht="$ht" -v sb="$sb" -v st="$st" -v k="$((k1 - k0))" -v tck="$tck" \
						-v v="$((v1 - v0))" -v qp="$((${q1% *} - ${q0% *}))" -v qt="$((${q1#* } - ${q0#* }))" \
						'BEGIN { printf "%s,%s,%s,%s,%s,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%s\n", r, m, f, p, c, rps,
						  h / 1e3 / n, s / 1e3 / n, ht ? hb / ht : 0, st ? sb / st : 0, k * 1e6 / tck / n, v / n,
						  qp ? sprintf("%.2f", qt / qp) : "" }' >>"$csv"
					tail -n 1 "$csv"
				done
			done
		done
	done
done

python3 "$here/tcpserver-eval-plot.py" "$csv" "$out" "$machine"
