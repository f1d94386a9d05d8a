#!/bin/sh
# SPDX-License-Identifier: MIT
# Pass-through: redis-server on 127.0.0.1, a SET/GET round trip with redis-cli
# and a short redis-benchmark, once plainly and once with every program under
# esock-run (no --ddp: redis waits with epoll, not interposed yet).
. "$(dirname "$0")/common.sh"
need redis-server redis-cli redis-benchmark

value="esock-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"

# run MODE: one server, its clients, the same answers plain or wrapped.
run() {
	wrap=$1
	port=$(free_port)
	mkdir -p "$tmp/data" || exit 99
	# No persistence, no config file: nothing written outside $tmp.
	# shellcheck disable=SC2086
	start redis $wrap redis-server --port "$port" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$tmp/data" --logfile ''
	wait_listen "$port" "$srv_pid"
	cli="$limit $wrap redis-cli -h 127.0.0.1 -p $port"
	[ "$($cli SET esock:key "$value" 2>"$tmp/cli.err")" = OK ] || fail "${wrap:-plain} SET"
	[ "$($cli GET esock:key 2>>"$tmp/cli.err")" = "$value" ] || fail "${wrap:-plain} GET"
	# -q: one "NAME: N requests per second" line per test; errors end it early.
	# shellcheck disable=SC2086
	$limit $wrap redis-benchmark -h 127.0.0.1 -p "$port" -n 2000 -c 4 -q -t set,get \
		>"$tmp/bench.out" 2>"$tmp/bench.err" || fail "${wrap:-plain} redis-benchmark"
	tr '\r' '\n' <"$tmp/bench.out" | grep -c '^[A-Z]*: .*requests per second' >"$tmp/n"
	[ "$(cat "$tmp/n")" -eq 2 ] || { cat "$tmp/bench.out"; fail "${wrap:-plain} redis-benchmark output"; }
	[ "$($cli DBSIZE 2>>"$tmp/cli.err")" -ge 1 ] || fail "${wrap:-plain} DBSIZE"
	stop "$srv_pid"
}

run ""
run "$esock_run"
echo "redis: SET/GET and 2 x 2000 benchmark requests, plain and under esock-run: ok"
