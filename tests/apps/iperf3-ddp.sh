#!/bin/sh
# SPDX-License-Identifier: MIT
# DDPMODE on both ends: an iperf3 server (--one-off) and client under
# esock-run --ddp=PORT move 8 MiB, client to server and back (-R); the control
# and the data connection both run over iWARP.  iperf3 waits with select(),
# which esock interposes.  A plain run first shows iperf3 itself works here.
. "$(dirname "$0")/common.sh"
need iperf3

# bytes_ok FILE: iperf3's JSON says at least 8 MiB sent, and some of it
# received.  -n is a lower bound for iperf3: it may write a block or a few
# of 128 KiB more (seen once on a loaded machine: 8 MiB + 128 KiB; its
# issue tracker reports the same).  Not all of it received: the
# test ends once the sender has written its bytes, and the receiver reports
# what it had read by then (plain TCP too).
bytes_ok() {
	json_bytes sum_sent "$1" >"$tmp/sent"
	json_bytes sum_received "$1" >"$tmp/received"
	sent=$(cat "$tmp/sent") received=$(cat "$tmp/received")
	[ "$sent" -ge 8388608 ] && [ "$sent" -le $((8388608 + 10 * 131072)) ] &&
		[ "$received" -gt 0 ] && [ "$received" -le "$sent" ]
}

# json_bytes KEY FILE: the "bytes" of iperf3's "KEY": { ... } block.
json_bytes() {
	sed -n "/\"$1\":/,/\"bytes\"/s/^[[:space:]]*\"bytes\":[[:space:]]*\([0-9]*\).*/\1/p" "$2" | head -n 1
}

# run NAME MODE CLIENT-ARGS...: one server, one client (MODE: see wrappers).
run() {
	name=$1
	port=$(free_port)
	wrappers "$2" "$port" "$name"
	shift 2
	# shellcheck disable=SC2086
	start "$name-server" $srv iperf3 -s -B 127.0.0.1 -p "$port" --one-off
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $cli iperf3 -c 127.0.0.1 -p "$port" -n 8M -J "$@" >"$tmp/$name.json" 2>"$tmp/$name.err" ||
		{ tail -n 40 "$tmp/$name.json"; fail "$name: iperf3 client"; }
	bytes_ok "$tmp/$name.json" || { tail -n 40 "$tmp/$name.json"; fail "$name: byte counts"; }
	wait_exit "$srv_pid" 30 || fail "$name: iperf3 server"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
	echo "$name: sent $(cat "$tmp/sent"), received $(cat "$tmp/received")"
}

run plain plain
run ddp ddp
run ddp-reverse ddp -R
echo "iperf3: 8 MiB each way in DDPMODE (client and server under esock-run): ok"
