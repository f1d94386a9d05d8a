#!/bin/sh
# SPDX-License-Identifier: MIT
# nginx serves files on 127.0.0.1 and curl fetches them: plainly, with both
# under esock-run (pass-through), and with both in DDPMODE (nginx waits with
# epoll, curl with poll), each time also behind two silent connections.
# Every copy must equal the original.
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/nginx-conf.sh"
need nginx curl

mkdir -p "$tmp/www" "$tmp/cache" || exit 99
random_file "$tmp/www/blob" 3072
echo "esock app test" >"$tmp/www/small.txt"
# Run as root, nginx hands requests to workers running as nobody: let them in.
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www"/*

# run MODE: one server and its fetches (MODE: see wrappers).
run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	nginx_conf "$port" 1 64
	# -e: the error log before the configuration is read (not /var/log).
	# shellcheck disable=SC2086
	start "$mode-nginx" $srv nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf"
	wait_listen "$port" "$srv_pid"
	# Two connections that never say anything must not hold the server up
	# (a DDPMODE listener reads MPA Requests without waiting on any one).
	idle=
	for k in 1 2; do
		bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && exec sleep 60" 2>/dev/null &
		idle="$idle $!"
		pids="$pids $!"
	done
	sleep 0.3
	# shellcheck disable=SC2086
	timeout 8 $cli curl -sS --noproxy '*' -o "$tmp/got" "http://127.0.0.1:$port/small.txt" \
		2>"$tmp/curl.err" || fail "$mode: curl behind two idle connections"
	cmp -s "$tmp/www/small.txt" "$tmp/got" || fail "$mode: small.txt differs (behind idle ones)"
	# shellcheck disable=SC2086
	kill $idle 2>/dev/null
	for f in blob small.txt; do
		# shellcheck disable=SC2086
		$limit $cli curl -sS --noproxy '*' -o "$tmp/got" "http://127.0.0.1:$port/$f" \
			2>"$tmp/curl.err" || { st=$?; cat "$tmp/curl.err"; fail "$mode: curl $f (exit $st)"; }
		cmp -s "$tmp/www/$f" "$tmp/got" || fail "$mode: $f differs"
	done
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run pass
run ddp
echo "curl-nginx: 3 MiB and a small file, plain, pass-through and DDPMODE: identical"
