#!/bin/sh
# SPDX-License-Identifier: MIT
# PostgreSQL: a throwaway cluster (initdb in $tmp, trust authentication, TCP
# on 127.0.0.1 only), psql and pgbench (4 clients, 2 threads) against it,
# plainly and with the server and the clients in DDPMODE.  psql must print its
# result and end: libpq sets O_NONBLOCK on its socket before connect, and a
# DDPMODE socket that forgot it blocked in recv after the result (issue 13).
# The server runs as the postgres user (it refuses root): the library and the
# logs go into $tmp, where that user can read and write them.
. "$(dirname "$0")/common.sh"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "SKIP: PostgreSQL server not installed"; exit 77; }
need psql runuser
id postgres >/dev/null 2>&1 || { echo "SKIP: no postgres user"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (to run the server as postgres)"; exit 77; }

chmod 755 "$tmp"
cp "$esock_lib" "$tmp/libesock.so" && chmod 644 "$tmp/libesock.so" || exit 99
ESOCK_LIB=$tmp/libesock.so
export ESOCK_LIB
mkdir -p "$tmp/pg" "$tmp/sock" && chown postgres "$tmp/pg" "$tmp/sock" || exit 99
runuser -u postgres -- "$bin/initdb" -D "$tmp/pg" -A trust -U postgres >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log"; fail "initdb"; }

run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	for l in $logs; do : >"$l" && chmod 666 "$l"; done
	# shellcheck disable=SC2086
	start "$mode-postgres" $srv runuser -u postgres -- "$bin/postgres" -D "$tmp/pg" \
		-c listen_addresses=127.0.0.1 -p "$port" -c unix_socket_directories="$tmp/sock" \
		-c fsync=off -c logging_collector=off
	wait_listen "$port" "$srv_pid"
	q="$limit $cli psql -X -h 127.0.0.1 -p $port -U postgres -d postgres -At"
	got=$($q -c "select 6 * 7" 2>"$tmp/psql.err") || { cat "$tmp/psql.err"; fail "$mode: psql"; }
	[ "$got" = 42 ] || fail "$mode: psql printed '$got', not 42"
	# shellcheck disable=SC2086
	$limit $cli "$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -s 1 postgres \
		>"$tmp/pgbench-init.log" 2>&1 || { tail "$tmp/pgbench-init.log"; fail "$mode: pgbench -i"; }
	# shellcheck disable=SC2086
	$limit $cli "$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -c 4 -j 2 -t 200 postgres \
		>"$tmp/pgbench.log" 2>&1 || { tail "$tmp/pgbench.log"; fail "$mode: pgbench"; }
	grep -q 'number of transactions actually processed: 800/800' "$tmp/pgbench.log" ||
		{ cat "$tmp/pgbench.log"; fail "$mode: pgbench did not process 800 transactions"; }
	got=$($q -c "select count(*) from pgbench_history" 2>"$tmp/psql.err") ||
		{ cat "$tmp/psql.err"; fail "$mode: psql count"; }
	[ "$got" -ge 800 ] || fail "$mode: $got rows in pgbench_history"
	echo "postgres: $mode: $(grep -E '^tps' "$tmp/pgbench.log" | head -n 1)"
	# A clean shutdown before the wrapper goes: the next run starts on the same data
	# directory, and a postmaster still writing its checkpoint would hold its lock file.
	runuser -u postgres -- "$bin/pg_ctl" -D "$tmp/pg" -m fast -w -t 30 stop >"$tmp/pg_ctl.log" 2>&1 ||
		{ cat "$tmp/pg_ctl.log"; fail "$mode: pg_ctl stop"; }
	wait_exit "$srv_pid" 30 || fail "$mode: the server's wrapper did not end"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run ddp
echo "postgres: psql and pgbench (4 clients, 800 transactions), plain and DDPMODE: ok"
