#!/bin/sh
# SPDX-License-Identifier: MIT
# haproxy in front of a plain back end (Python's http.server): the front end
# and curl speak DDPMODE (esock-run --ddp=FRONT_PORT on both), haproxy's
# connections to the back end stay plain TCP in the same process.  A 2 MiB
# file and 200 keep-alive requests must arrive intact; the back end must have
# served them over plain TCP.
. "$(dirname "$0")/common.sh"
need haproxy python3 curl

mkdir -p "$tmp/www" || exit 99
random_file "$tmp/www/blob" 2048
echo "esock haproxy test" >"$tmp/www/small.txt"

back=$(free_port)
# The back end: plain, not under the wrapper at all.
start backend python3 -m http.server "$back" --bind 127.0.0.1 --directory "$tmp/www"
back_pid=$srv_pid
wait_listen "$back" "$back_pid"

run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	cat >"$tmp/haproxy.cfg" <<EOF
global
	maxconn 100
defaults
	mode http
	timeout connect 5s
	timeout client 20s
	timeout server 20s
frontend front
	bind 127.0.0.1:$port
	default_backend back
backend back
	server b1 127.0.0.1:$back
EOF
	# -db: in the foreground, no daemon.
	# shellcheck disable=SC2086
	start "$mode-haproxy" $srv haproxy -db -f "$tmp/haproxy.cfg"
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $cli curl -sS --noproxy '*' -o "$tmp/got" "http://127.0.0.1:$port/blob" 2>"$tmp/curl.err" ||
		{ cat "$tmp/curl.err"; fail "$mode: curl blob"; }
	cmp -s "$tmp/www/blob" "$tmp/got" || fail "$mode: blob differs"
	# 200 requests on one connection (curl reuses it for every URL).
	urls=
	i=0
	while [ $i -lt 200 ]; do
		urls="$urls http://127.0.0.1:$port/small.txt"
		i=$((i + 1))
	done
	# shellcheck disable=SC2086
	$limit $cli curl -sS --noproxy '*' $urls >"$tmp/many" 2>"$tmp/curl.err" ||
		{ cat "$tmp/curl.err"; fail "$mode: 200 requests"; }
	[ "$(grep -c '^esock haproxy test$' "$tmp/many")" -eq 200 ] || fail "$mode: 200 answers expected"
	kill -0 "$srv_pid" 2>/dev/null || fail "$mode: haproxy died"
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run ddp
grep -q '"GET /blob' "$tmp/backend.log" || fail "the back end served nothing"
stop "$back_pid"
echo "haproxy: DDPMODE front end, plain back end, 2 MiB and 200 keep-alive requests: ok"
