#!/bin/sh
# SPDX-License-Identifier: MIT
# redis-server on 127.0.0.1, a SET/GET round trip with redis-cli and a short
# redis-benchmark: plainly, with every program under esock-run (pass-through),
# and with all of them in DDPMODE (the server and redis-benchmark wait with
# epoll, redis-cli with poll).
. "$(dirname "$0")/common.sh"
need redis-server redis-cli redis-benchmark

value="esock-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"

# run MODE: one server, its clients, the same answers (MODE: see wrappers).
run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	mkdir -p "$tmp/data" || exit 99
	# No persistence, no config file: nothing written outside $tmp.
	# shellcheck disable=SC2086
	start "$mode-redis" $srv redis-server --port "$port" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$tmp/data" --logfile ''
	wait_listen "$port" "$srv_pid"
	rcli="$limit $cli redis-cli -h 127.0.0.1 -p $port"
	[ "$($rcli SET esock:key "$value" 2>"$tmp/cli.err")" = OK ] || fail "$mode SET"
	[ "$($rcli GET esock:key 2>>"$tmp/cli.err")" = "$value" ] || fail "$mode GET"
	# -q: one "NAME: N requests per second" line per test; errors end it early.
	# shellcheck disable=SC2086
	$limit $cli redis-benchmark -h 127.0.0.1 -p "$port" -n 2000 -c 4 -q -t set,get \
		>"$tmp/bench.out" 2>"$tmp/bench.err" || fail "$mode redis-benchmark"
	tr '\r' '\n' <"$tmp/bench.out" | grep -c '^[A-Z]*: .*requests per second' >"$tmp/n"
	[ "$(cat "$tmp/n")" -eq 2 ] || { cat "$tmp/bench.out"; fail "$mode redis-benchmark output"; }
	[ "$($rcli DBSIZE 2>>"$tmp/cli.err")" -ge 1 ] || fail "$mode DBSIZE"
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run pass
run ddp
echo "redis: SET/GET and 2 x 2000 benchmark requests, plain, pass-through and DDPMODE: ok"
