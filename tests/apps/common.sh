# SPDX-License-Identifier: MIT
# Sourced by the tests/apps/ scripts: unmodified Debian programs run under
# esock-run from the build tree, servers on 127.0.0.1 only, every server
# stopped by its PID when the script ends.  Exit codes are automake's:
# 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
esock_run=${top_builddir:-.}/tools/esock-run/esock-run
[ -x "$esock_run" ] || { echo "SKIP: $esock_run not built"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: timeout (coreutils) missing"; exit 77; }
# Every client is bounded, and so is every server (besides being killed).
# shellcheck disable=SC2034 # used by the scripts that source this file
limit="timeout 60"
srv_limit="timeout 300"

# The same lookup esock-run does: the build tree's library (or $ESOCK_LIB).
esock_lib=${ESOCK_LIB:-$(dirname "$esock_run")/../../.libs/libesock.so}
[ -f "$esock_lib" ] || { echo "SKIP: $esock_lib not built"; exit 77; }
# A sanitizer build's libesock.so needs the ASan runtime loaded before
# everything else; an uninstrumented Debian program refuses that preload.
if ldd "$esock_lib" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded into uninstrumented programs"
	exit 77
fi

tmp=$(mktemp -d) || exit 99
pids=
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# need PROGRAM...: skip the whole test, naming the program, when one is missing.
need() {
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 ||
			{ echo "SKIP: $p not installed (bash scripts/deps.sh test)"; exit 77; }
	done
}

# fail MESSAGE: the message, then the tail of every log in $tmp.
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log "$tmp"/*.err "$tmp"/*.esock; do
		[ -s "$f" ] && { echo "--- $(basename "$f")"; tail -n 30 "$f"; }
	done
	exit 1
}

# (A script elsewhere that sources this file says where it is: apps_dir.)
. "${apps_dir:-$(dirname "$0")}/ports.sh"

# start NAME CMD...: CMD in the background, bounded by srv_limit, output in
# $tmp/NAME.log; its PID is remembered for cleanup and left in $srv_pid.
start() {
	log=$tmp/$1.log
	shift
	# shellcheck disable=SC2086
	$srv_limit "$@" >"$log" 2>&1 &
	srv_pid=$!
	pids="$pids $srv_pid"
}

# forget PID: no longer one for cleanup to stop.
forget() {
	new=
	for p in $pids; do [ "$p" = "$1" ] || new="$new $p"; done
	pids=$new
}

# stop PID: the server ends (TERM, handed on by timeout) and is reaped.
stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	forget "$1"
}

# wait_listen PORT PID: until something listens on 127.0.0.1:PORT (10 s);
# fails when PID died first.
wait_listen() {
	hex=$(printf '0100007F:%04X' "$1")
	i=0
	while [ $i -lt 100 ]; do
		# State 0A is LISTEN.
		awk -v a="$hex" '$2 == a && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp && return 0
		kill -0 "$2" 2>/dev/null || fail "server on port $1 exited before listening"
		sleep 0.1
		i=$((i + 1))
	done
	fail "nothing listens on 127.0.0.1:$1 after 10 s"
}

# prefix MODE PORT: what runs a program in MODE (sets pre): plain TCP, the
# library preloaded with every socket passing through, or DDPMODE on PORT
# (tools/appbench.sh, tools/appinstr.sh).
prefix() {
	case $1 in
	plain) pre= ;;
	pass) pre=$esock_run ;;
	ddp) pre="$esock_run --ddp=$2" ;;
	esac
}

# random_file PATH KIB: KIB KiB of random octets.
random_file() {
	head -c "$(($2 * 1024))" /dev/urandom >"$1" || exit 99
}

# ddp_engaged LOG...: each esock log (--log=info,FILE) shows a DDPMODE
# connection, so the test did not pass over plain TCP.
ddp_engaged() {
	wire_check
	for l in "$@"; do
		grep -q 'DDPMODE connected' "$l" 2>/dev/null ||
			fail "no DDPMODE connection in $(basename "$l"): the wrappers were not reached"
	done
}

# wait_exit PID SECONDS: a server that ends by itself (one client) does so;
# returns 1 (the caller names the run in its failure) when it is still there.
wait_exit() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		if [ $i -ge $(($2 * 10)) ]; then
			echo "server $1 did not exit within $2 s"
			return 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	forget "$1"
	wait "$1"
}

# sum FILE: its sha256, for comparing what arrived with what was sent.
sum() {
	sha256sum <"$1" | cut -d' ' -f1
}

# wrappers MODE PORT NAME: sets srv and cli, what runs the server and the
# client: plain (nothing), pass (esock-run) or ddp (esock-run --ddp=PORT,
# logging to $tmp/NAME-{server,client}.esock, listed in $logs for ddp_engaged).
# shellcheck disable=SC2034 # srv, cli and logs are for the calling script
wrappers() {
	srv=
	cli=
	logs=
	case $1 in
	pass)
		srv=$esock_run
		cli=$esock_run ;;
	ddp)
		srv="$esock_run --ddp=$2 --log=info,$tmp/$3-server.esock"
		cli="$esock_run --ddp=$2 --log=info,$tmp/$3-client.esock"
		logs="$tmp/$3-server.esock $tmp/$3-client.esock"
		wire_start "$2" ;;
	esac
}

# wire_start PORT: ddpdump captures the port on lo until ddp_engaged looks at
# it (only where capturing is allowed: root, as in CI; else the logs alone).
wire_pid=
wire_start() {
	wire_pid=
	ddpdump=${top_builddir:-.}/tools/ddpdump/ddpdump
	[ -x "$ddpdump" ] && [ "$(id -u)" -eq 0 ] || return 0
	"$ddpdump" -i lo -q --stats "tcp port $1" >"$tmp/wire.txt" 2>&1 &
	wire_pid=$!
	pids="$pids $wire_pid"
	sleep 1 # the capture is open before the first connection
	kill -0 "$wire_pid" 2>/dev/null || { forget "$wire_pid"; wire_pid=; }
}

# wire_check: what the capture saw has MPA start frames and well-formed FPDUs
# with good CRCs, none bad: the connections spoke MPA on the wire.
wire_check() {
	[ -n "$wire_pid" ] || return 0
	sleep 0.5
	kill -INT "$wire_pid" 2>/dev/null
	wait "$wire_pid" 2>/dev/null
	forget "$wire_pid"
	wire_pid=
	# The totals: "total: N FPDUs, ..." and, last, "CRC errors N, marker errors N, ...".
	awk '/^total: / { n = $2 } /CRC errors/ { c = $3 + 0; m = $6 + 0 }
		END { exit !(n > 0 && c == 0 && m == 0) }' "$tmp/wire.txt" ||
		{ cat "$tmp/wire.txt"; fail "the capture shows no FPDU, or CRC or marker errors"; }
	echo "on the wire: $(sed -n 's/^total: //p' "$tmp/wire.txt" | tail -n 1)"
}

# ab_ok NAME ARGS...: ApacheBench (under $cli) with ARGS must complete all
# 2000 requests (-n 2000) with none failed, every answer 2xx and 4096 octets
# long; prints the rate.
ab_ok() {
	name=$1
	shift
	# shellcheck disable=SC2086
	$limit $cli ab -q -s 20 "$@" >"$tmp/ab.out" 2>"$tmp/ab.err" ||
		{ cat "$tmp/ab.out" "$tmp/ab.err"; fail "$name: ab $* (exit)"; }
	n=$(sed -n 's/^Complete requests: *//p' "$tmp/ab.out")
	bad=$(sed -n 's/^Failed requests: *//p' "$tmp/ab.out")
	non2xx=$(sed -n 's/^Non-2xx responses: *//p' "$tmp/ab.out")
	len=$(sed -n 's/^Document Length: *\([0-9]*\) bytes/\1/p' "$tmp/ab.out")
	[ "$n" = 2000 ] && [ "$bad" = 0 ] && [ -z "$non2xx" ] && [ "$len" = 4096 ] ||
		{ cat "$tmp/ab.out"; fail "$name: ab $*: $n of 2000 complete, $bad failed, length $len"; }
	echo "$name: ab $*: $n requests, $(sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p' "$tmp/ab.out")/s"
}
