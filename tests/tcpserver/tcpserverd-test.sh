#!/bin/sh
# SPDX-License-Identifier: MIT
# tcpserverd end to end on one machine: a host process listens, accepts and
# echoes through tcpserverd (its calls carried by the shared-memory channel)
# while a plain TCP client moves a megabyte and compares it; again
# non-blocking, driven by READY events; a host that
# sends garbage loses its channel and nobody else does; admission refuses a
# host beyond -H; a host killed mid-call loses its sockets, nobody else does;
# the counters come on SIGUSR1; SIGTERM ends it cleanly, its hosts' calls say
# EPIPE, and a new tcpserverd at the same path serves new hosts.  Bad option
# values are refused before it starts.
set -u
b=${top_builddir:-.}
d=$b/tcpserver/tcpserverd h=$b/tests/tcpserver/tsp-host
tmp=$(mktemp -d) || exit 99
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM # (the cleanup runs when a time limit stops the test too)
fail() { echo "FAIL: $*"; cat "$tmp"/*.log 2>/dev/null; exit 1; }
. "$(dirname "$0")/stop.sh"
# What the kernel and tcpserverd (SIGUSR1: its sockets, with -v) say of port $1: for a failure's log.
port_state() {
	echo "port $1: $(ss -tan 2>/dev/null | awk -v p=":$1" '$4 ~ p"$" || $5 ~ p"$"' | tr '\n' ';')"
	kill -USR1 "$dpid" 2>/dev/null && sleep 0.2
}

# A bad option value is refused with the usage's status (2) before anything starts.
for bad in "-p -5" "-p abc" "-P 100001" "-H 0" "-S 2x" "-c -1" "-H 3 extra"; do
	# shellcheck disable=SC2086
	timeout 5 "$d" -s "$tmp/bad" $bad 2>"$tmp/bad.err"; rc=$?
	[ "$rc" = 2 ] || fail "tcpserverd -s PATH $bad: exit $rc, not 2"
	[ -e "$tmp/bad" ] && fail "tcpserverd -s PATH $bad: made its socket"
	grep -q 'is needed' "$tmp/bad.err" || fail "tcpserverd -s PATH $bad: said $(cat "$tmp/bad.err")"
done
"$d" -s "$tmp/s" -H 3 -v 2>"$tmp/d.log" & dpid=$!; pids="$dpid" # (the default: the learnt spin)
for i in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] || fail "tcpserverd did not start"

"$h" echo "$tmp/s" >"$tmp/echo.out" 2>"$tmp/echo.log" & epid=$!; pids="$pids $epid"
wait_file "$tmp/echo.out" || fail "the echo host printed no port"
port=$(head -n 1 "$tmp/echo.out")
"$h" plain "$port" 1000000 >"$tmp/plain.log" 2>&1 || fail "plain client"
wait "$epid" || fail "echo host"
grep -q "^echoed 1000000$" "$tmp/echo.out" || fail "echo host moved $(cat "$tmp/echo.out")"

# The same, non-blocking, driven by READY events (what poll and epoll will be built on).
rm -f "$tmp/echo.out"
"$h" watch "$tmp/s" >"$tmp/watch.out" 2>"$tmp/watch.log" & wpid=$!; pids="$pids $wpid"
wait_file "$tmp/watch.out" || fail "the watch host printed no port"
"$h" plain "$(head -n 1 "$tmp/watch.out")" 300000 >"$tmp/plain2.log" 2>&1 || fail "plain client (watch)"
wait "$wpid" || fail "watch host"
grep -q "^watch-echoed 300000 in " "$tmp/watch.out" || fail "watch host moved $(cat "$tmp/watch.out")"

# Registered buffers: bad REG, SEND_REG, RECV_REG and DEREG requests refused with their codes,
# then an echo whose octets tcpserverd reads and writes in the host's memory itself (the host
# only names them: none travels in a queue).
"$h" regecho "$tmp/s" >"$tmp/reg.out" 2>"$tmp/reg.log" & rpid=$!; pids="$pids $rpid"
wait_file "$tmp/reg.out" || fail "the regecho host printed no port"
"$h" plain "$(head -n 1 "$tmp/reg.out")" 1000000 >"$tmp/plain-reg.log" 2>&1 || fail "plain client (registered buffers)"
wait "$rpid" || fail "regecho host"
grep -q "^echoed 1000000$" "$tmp/reg.out" || fail "regecho host moved $(cat "$tmp/reg.out")"

# Asynchronous send: 8 MB in SENDs answered at once, within the credit CREDIT events give back,
# to a reader that pauses; closed at once, the queued rest still arrives whole.
"$h" async "$tmp/s" 8000000 >"$tmp/async.out" 2>"$tmp/async.log" & apid=$!; pids="$pids $apid"
wait_file "$tmp/async.out" || fail "the async host printed no port"
"$h" sink "$(head -n 1 "$tmp/async.out")" 8000000 >"$tmp/sink.log" 2>&1 || fail "sink (async)"
wait "$apid" || fail "async host"
grep -q "^async-sent 8000000 with [1-9]" "$tmp/async.out" || fail "async host: $(cat "$tmp/async.out")"

# Eager accept: three connections come as ACCEPTED events, each echoed.
"$h" eager "$tmp/s" 3 >"$tmp/eager.out" 2>"$tmp/eager.log" & gpid=$!; pids="$pids $gpid"
wait_file "$tmp/eager.out" || fail "the eager host printed no port"
for i in 1 2 3; do
	"$h" plain "$(head -n 1 "$tmp/eager.out")" 50000 >"$tmp/plain-e$i.log" 2>&1 || fail "plain client $i (eager)"
done
wait "$gpid" || fail "eager host"
grep -q "^eager-served 3$" "$tmp/eager.out" || fail "eager host: $(cat "$tmp/eager.out")"

# Eager receive: 4 MB come as DATA events within the window, credit given back as used.
"$h" eagerrx "$tmp/s" 4000000 >"$tmp/eagerrx.out" 2>"$tmp/eagerrx.log" & xpid=$!; pids="$pids $xpid"
wait_file "$tmp/eagerrx.out" || fail "the eagerrx host printed no port"
"$h" source "$(head -n 1 "$tmp/eagerrx.out")" 4000000 >"$tmp/source.log" 2>&1 ||
	fail "source ($(port_state "$(head -n 1 "$tmp/eagerrx.out")"))"
wait "$xpid" || fail "eagerrx host: $(cat "$tmp/eagerrx.out" "$tmp/eagerrx.log")"
grep -q "^eagerrx-got 4000000 in " "$tmp/eagerrx.out" || fail "eagerrx host: $(cat "$tmp/eagerrx.out")"
# A few octets and the end right behind them (a short read must not leave the end unheard).
for i in 1 2 3 4 5; do
	# (a file of its own each round: the last round's port must not be read before the
	# new host's shell has truncated it; that port is closed, and the connect refused)
	"$h" eagerrx "$tmp/s" 100 >"$tmp/eagerrx-s$i.out" 2>"$tmp/eagerrx-s.log" & xpid=$!; pids="$pids $xpid"
	wait_file "$tmp/eagerrx-s$i.out" || fail "the eagerrx host printed no port ($i)"
	"$h" source "$(head -n 1 "$tmp/eagerrx-s$i.out")" 100 >"$tmp/source-s.log" 2>&1 ||
		fail "source ($i; $(port_state "$(head -n 1 "$tmp/eagerrx-s$i.out")"))"
	wait "$xpid" || fail "eagerrx host, 100 octets ($i): $(cat "$tmp/eagerrx-s$i.out" "$tmp/eagerrx-s.log")"
	grep -q "^eagerrx-got 100 in 2 events" "$tmp/eagerrx-s$i.out" || fail "eagerrx host ($i): $(cat "$tmp/eagerrx-s$i.out")"
done

# Requests that decode but make little sense: each answered (or the channel ended), no hang.
timeout 60 "$h" chaos "$tmp/s" 3000 >"$tmp/chaos.log" 2>&1 || fail "chaos host: $(cat "$tmp/chaos.log")"
kill -0 "$dpid" || fail "tcpserverd died of a host's nonsense"

"$h" garbage "$tmp/s" >"$tmp/garbage.log" 2>&1 || fail "garbage host"
kill -0 "$dpid" || fail "tcpserverd died of a host's garbage"
grep -q "a request that is not TSP" "$tmp/d.log" || fail "no word of the garbage"

# Admission: three hosts at most; the fourth is refused while three hold.
hp=
for i in 1 2 3; do "$h" hold "$tmp/s" 3 >"$tmp/hold$i.out" 2>"$tmp/hold$i.log" & hp="$hp $!"; done
pids="$pids $hp"
for i in 1 2 3; do wait_file "$tmp/hold$i.out" || fail "host $i not admitted"; done
"$h" refused "$tmp/s" >"$tmp/refused.log" 2>&1 || fail "a fourth host was not refused"
for p in $hp; do wait "$p" || fail "a holding host"; done

# The channel's own cost, and that calls keep their order and answers (2000 in a row).
"$h" calls "$tmp/s" 2000 >"$tmp/calls.log" 2>&1 && grep -q "^calls: 2000 " "$tmp/calls.log" ||
	fail "calls"

# A host killed while its call is parked: tcpserverd closes its sockets and goes on.
"$h" parked "$tmp/s" >"$tmp/parked.out" 2>"$tmp/parked.log" & kpid=$!
wait_file "$tmp/parked.out" || fail "the parked host printed no port"
kport=$(head -n 1 "$tmp/parked.out")
kill -KILL "$kpid"; wait "$kpid" 2>/dev/null
for i in $(seq 1 50); do grep -q "its socket ended" "$tmp/d.log" && break; sleep 0.1; done
grep -q "its socket ended" "$tmp/d.log" || fail "a killed host's channel was kept"
"$h" plain "$kport" 10 >/dev/null 2>&1 && fail "a killed host's listener still accepts"
kill -0 "$dpid" || fail "tcpserverd died with a host"

# tcpserverd stopped under a host: its calls say EPIPE, at once from then on; a new
# tcpserverd at the same path serves new hosts.  Before that, the counters (per host and,
# with -v, per connection: the loop host's listener has had calls).
"$h" loop "$tmp/s" >"$tmp/loop.out" 2>"$tmp/loop.log" & lpid=$!; pids="$pids $lpid"
wait_file "$tmp/loop.out" || fail "the loop host printed no port"
"$h" silent "$tmp/s" & spid=$!; pids="$pids $spid" # (a host with no channel yet: counted too)
sleep 0.2
kill -USR1 "$dpid"; sleep 0.3
kill -0 "$dpid" || fail "tcpserverd died printing its counters"
wait "$spid"
grep -q "hosts refused 1" "$tmp/d.log" || fail "counters on SIGUSR1"
# The loop host calls once a millisecond: no spin catches a call (each comes after the
# default 200 us cap), so the learnt window has gone to no spin.
grep -q "spin window 0 us (learnt)" "$tmp/d.log" ||
	fail "the spin window with a call each millisecond: $(grep "spin window" "$tmp/d.log")"
grep -Eq "socket 1: port $(head -n 1 "$tmp/loop.out") <-> 0, calls [1-9]" "$tmp/d.log" ||
	fail "per-connection counters on SIGUSR1"
stop_by_term "$dpid" || fail "tcpserverd did not end cleanly (status $?; 124: still running 10 s after SIGTERM)"
[ -e "$tmp/s" ] && fail "the Unix socket was left behind"
wait "$lpid" || fail "the loop host: $(cat "$tmp/loop.out" "$tmp/loop.log")"
grep -q "^loop: Broken pipe" "$tmp/loop.out" || fail "the loop host: $(cat "$tmp/loop.out")"
"$d" -s "$tmp/s" -p 50 -R 2>"$tmp/d2.log" & dpid=$!; pids="$dpid" # (-p: a fixed spin; -R: rung at each answer)
for i in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.05; done
"$h" calls "$tmp/s" 100 >"$tmp/calls2.log" 2>&1 || fail "a host of the new tcpserverd"
stop_by_term "$dpid" || fail "the new tcpserverd did not end cleanly (status $?)"
grep -q "spin window 50 us (fixed)" "$tmp/d2.log" || # (its counters at the end)
	fail "the fixed spin window: $(grep "spin window" "$tmp/d2.log")"
# SIGTERM at any moment of a host's calls ends tcpserverd (20 rounds, the signal at a random
# point of the host's call every millisecond: working, spinning or asleep).
for i in $(seq 1 20); do
	ring=; [ $((i % 2)) = 0 ] && ring=-R # (both ways of waking a host)
	"$d" -s "$tmp/s" $ring 2>"$tmp/d3.log" & dpid=$!; pids="$dpid"
	for k in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.02; done
	"$h" loop "$tmp/s" >"$tmp/loop3-$i.out" 2>&1 & lpid=$!; pids="$pids $lpid"
	wait_file "$tmp/loop3-$i.out" || fail "the loop host printed no port (round $i)"
	sleep "0.0$(awk -v s="$i" 'BEGIN { srand(s); printf "%02d", rand() * 99 }')"
	stop_by_term "$dpid" 5 || fail "round $i: tcpserverd did not end cleanly on SIGTERM (status $?; 124: still running 5 s after)"
	wait "$lpid" || fail "round $i: the loop host: $(cat "$tmp/loop3-$i.out")"
done
pids=
echo "tcpserverd: echo, READY, registered buffers, async send, eager accept and receive, garbage, admission, killed host, restart, counters, clean end, SIGTERM at any moment (20 rounds): ok"
