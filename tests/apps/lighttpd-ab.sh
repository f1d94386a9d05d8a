#!/bin/sh
# SPDX-License-Identifier: MIT
# lighttpd (one process, one event loop) and ApacheBench with 8 and 32
# simultaneous clients, over HTTP/1.0 (a connection per request: many
# simultaneous connects against a single-threaded server) and with
# keep-alive; plainly and with both in DDPMODE.  Every request must succeed
# with the file's length, and a fetch with curl must give the file itself.
# (Issue 13: ab -c 8 over HTTP/1.0 timed out while the server sat in accept
# on one connection's MPA Request.)
. "$(dirname "$0")/common.sh"
need lighttpd ab curl

mkdir -p "$tmp/www" || exit 99
random_file "$tmp/www/page" 4
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www/page"

run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	cat >"$tmp/lighttpd.conf" <<EOF
server.document-root = "$tmp/www"
server.bind = "127.0.0.1"
server.port = $port
server.errorlog = "$tmp/lighttpd.err"
server.max-keep-alive-requests = 1000
server.event-handler = "linux-sysepoll"
mimetype.assign = ( "" => "application/octet-stream" )
EOF
	# -D: in the foreground, as the child of the wrapper.
	# shellcheck disable=SC2086
	start "$mode-lighttpd" $srv lighttpd -D -f "$tmp/lighttpd.conf"
	wait_listen "$port" "$srv_pid"
	url="http://127.0.0.1:$port/page"
	ab_ok "lighttpd-ab: $mode" -n 2000 -c 8 "$url"
	ab_ok "lighttpd-ab: $mode" -n 2000 -c 32 "$url"
	ab_ok "lighttpd-ab: $mode" -k -n 2000 -c 8 "$url"
	# shellcheck disable=SC2086
	$limit $cli curl -sS --noproxy '*' -o "$tmp/got" "$url" 2>"$tmp/curl.err" ||
		{ cat "$tmp/curl.err"; fail "$mode: curl"; }
	cmp -s "$tmp/www/page" "$tmp/got" || fail "$mode: the page differs"
	kill -0 "$srv_pid" 2>/dev/null || fail "$mode: lighttpd died"
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run ddp
echo "lighttpd-ab: HTTP/1.0 at 8 and 32 at once, keep-alive at 8, plain and DDPMODE: ok"
