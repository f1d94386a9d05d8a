#!/bin/sh
# SPDX-License-Identifier: MIT
# nginx as Debian ships it, offloaded: the package's own /etc/nginx/nginx.conf (a master,
# workers as many as CPUs that become www-data, sendfile, tcp_nopush, gzip, an access log,
# its modules and mime types), with only its paths moved into a directory of this test
# and its sites replaced by one server of that directory.  Every switch on, then off:
#  - curl gets each file byte-identical to what nginx on the kernel's TCP gives, plain
#    and gzip'd (the same octets compressed: the same after gunzip);
#  - ab with keep-alive and with a connection per request: nothing fails;
#  - nginx's error log says nothing at the levels that lose a response (crit, alert,
#    emerg; a failed setsockopt is an alert) and its access log has every request.
# Skips where the package's nginx.conf is not there (another distribution).
set -u
b=${top_builddir:-.}
d=$b/tcpserver/tcpserverd run=$b/tools/esock-run/esock-run
conf=${NGINX_DEBIAN_CONF:-/etc/nginx/nginx.conf}
tmp=$(mktemp -d) || exit 99
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
fail() { echo "FAIL: $*"; tail -n 20 "$tmp"/*.log "$tmp"/logs/*.log 2>/dev/null; exit 1; }
for c in nginx curl ab gzip python3 ss; do
	command -v $c >/dev/null || { echo "SKIP: $c is not installed (scripts/deps.sh)"; exit 77; }
done
[ -r "$conf" ] || { echo "SKIP: no $conf (not Debian's nginx package)"; exit 77; }
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded into nginx"
	exit 77
fi
[ "$(id -u)" = 0 ] || { echo "SKIP: the package's nginx.conf runs its workers as www-data (root needed)"; exit 77; }
. "$(dirname "$0")/../apps/ports.sh"
. "$(dirname "$0")/stop.sh"

# The site: text (gzip'd on request) and binary files, readable by the workers' user.
mkdir -p "$tmp/www" "$tmp/logs" "$tmp/cache" || exit 99
python3 -c 'import sys; sys.stdout.write("".join("line %d of a page that compresses well\n" % i for i in range(3000)))' \
	>"$tmp/www/page.html"
head -c 4096 /dev/urandom >"$tmp/www/4k"
head -c 300000 /dev/urandom >"$tmp/www/blob"
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www"/*
port=$(free_port)
cat >"$tmp/site.conf" <<EOF
server {
	listen 127.0.0.1:$port;
	root $tmp/www;
	gzip_types text/plain;
	gzip_min_length 256;
}
EOF
# The package's file, its paths moved here: pid, logs, temporary files, sites.
sed -e "s|^\\(\\s*\\)pid .*;|\\1pid $tmp/nginx.pid;|" \
	-e "s|/var/log/nginx/|$tmp/logs/|g" \
	-e "s|include /etc/nginx/sites-enabled/\\*;|include $tmp/site.conf; client_body_temp_path $tmp/cache; proxy_temp_path $tmp/cache; fastcgi_temp_path $tmp/cache; uwsgi_temp_path $tmp/cache; scgi_temp_path $tmp/cache;|" \
	"$conf" >"$tmp/nginx.conf"
grep -q "include $tmp/site.conf" "$tmp/nginx.conf" && grep -q "pid $tmp/nginx.pid" "$tmp/nginx.conf" ||
	fail "$conf is not the package's as this test knows it: $(grep -E 'pid|sites-enabled' "$conf")"
chown www-data "$tmp/logs" 2>/dev/null

"$d" -s "$tmp/s" -H 1024 2>"$tmp/d.log" & dpid=$!; pids="$dpid" # (a master and a worker per CPU: beyond the 64 hosts of the default on a large machine)
for i in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] || fail "tcpserverd did not start"

start_nginx() { # [OPTS]: offloaded with OPTS, or on the kernel's TCP
	: >"$tmp/logs/error.log"
	: >"$tmp/logs/access.log"
	if [ -n "${1:-}" ]; then
		"$run" --tcpserver="$tmp/s:$1" nginx -e "$tmp/logs/error.log" -c "$tmp/nginx.conf" \
			-g "daemon off;" 2>"$tmp/nginx.log" & npid=$!
	else
		nginx -e "$tmp/logs/error.log" -c "$tmp/nginx.conf" -g "daemon off;" 2>"$tmp/nginx.log" & npid=$!
	fi
	pids="$pids $npid"
	for i in $(seq 1 100); do
		curl -s -o /dev/null --noproxy '*' "http://127.0.0.1:$port/4k" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "nginx (${1:-kernel TCP}) does not answer: $(cat "$tmp/nginx.log" "$tmp/logs/error.log")"
}
stop_nginx() {
	kill "$npid"
	for i in $(seq 1 200); do kill -0 "$npid" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$npid" 2>/dev/null && { kill -9 "$npid"; fail "nginx did not end on SIGTERM"; }
	wait "$npid" 2>/dev/null
}
# get NAME FILE [gzip]: FILE as curl gets it into $tmp/NAME (headers in $tmp/NAME.h)
get() {
	timeout 20 curl -sS --noproxy '*' ${3:+-H 'Accept-Encoding: gzip'} -D "$tmp/$1.h" -o "$tmp/$1" \
		"http://127.0.0.1:$port/$2" 2>"$tmp/curl.log" || fail "curl $2 ${3:-}: $(cat "$tmp/curl.log")"
}

# What the kernel's TCP gives, to compare with.
start_nginx
get ref.page page.html gzip
grep -qi '^content-encoding: gzip' "$tmp/ref.page.h" || fail "nginx on the kernel's TCP did not gzip"
stop_nginx

for opt in all none; do
	start_nginx "$opt"
	ss -Hltnp "sport = :$port" | grep -q "pid=$dpid," ||
		fail "$opt: port $port is not tcpserverd's: $(ss -Hltnp "sport = :$port")"
	for f in page.html 4k blob; do
		get got "$f"
		cmp -s "$tmp/got" "$tmp/www/$f" || fail "$opt: $f differs"
	done
	get got.page page.html gzip
	grep -qi '^content-encoding: gzip' "$tmp/got.page.h" || fail "$opt: not gzip'd"
	cmp -s "$tmp/got.page" "$tmp/ref.page" || fail "$opt: the gzip'd page differs from the kernel TCP's"
	gzip -dc <"$tmp/got.page" | cmp -s - "$tmp/www/page.html" || fail "$opt: the gzip'd page does not unzip to the page"
	for ka in -k ""; do
		# shellcheck disable=SC2086
		timeout 60 ab -q $ka -c 8 -n 2000 "http://127.0.0.1:$port/4k" >"$tmp/ab.log" 2>&1 || fail "$opt: ab $ka"
		grep -q "^Complete requests: *2000$" "$tmp/ab.log" && grep -q "^Failed requests: *0$" "$tmp/ab.log" ||
			fail "$opt: ab $ka: $(grep -E 'Complete|Failed' "$tmp/ab.log")"
	done
	stop_nginx
	grep -E '\[(crit|alert|emerg)\]' "$tmp/logs/error.log" && fail "$opt: nginx's error log"
	n=$(grep -c '" 200 ' "$tmp/logs/access.log")
	[ "$n" -ge 4005 ] || fail "$opt: the access log has $n answered requests, not 4005 or more"
done
kill -0 "$dpid" || fail "tcpserverd ended"
stop_by_term "$dpid" || fail "tcpserverd did not end cleanly"
pids=
echo "nginx with Debian's nginx.conf (master, workers as www-data, sendfile, tcp_nopush, gzip, access log), offloaded with every switch and none: files identical to the kernel TCP's, gzip'd too; ab -k and ab, none failed; no error logged: ok"
