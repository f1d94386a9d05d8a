#!/bin/sh
# SPDX-License-Identifier: MIT
# Apache httpd with the event MPM (worker threads and a listener thread that
# add, modify and delete epoll entries while others wait) and with the
# prefork MPM (a process per connection), ApacheBench with keep-alive at 8
# and 32 at once and over HTTP/1.0; plainly and with both in DDPMODE.  Every
# request must succeed with the page's length, no child may crash, and curl
# must fetch the page itself.  (Issue 13: under the event MPM hundreds of
# requests failed and children died: epoll_wait handed APR the library's
# internal marker instead of the pointer it had registered.)
. "$(dirname "$0")/common.sh"
need apache2 ab curl
mods=/usr/lib/apache2/modules
[ -f "$mods/mod_mpm_event.so" ] || { echo "SKIP: $mods/mod_mpm_event.so missing"; exit 77; }

mkdir -p "$tmp/www" "$tmp/run" || exit 99
random_file "$tmp/www/page" 4
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www/page"

# run MODE MPM
run() {
	mode=$1 mpm=$2
	port=$(free_port)
	wrappers "$mode" "$port" "$mode-$mpm"
	if [ "$mpm" = event ]; then
		# Room for every client in each process: a full one closes idle
		# keep-alive connections, racing with ab's next request (ab counts
		# that as a failure, plainly as in DDPMODE).
		tune="StartServers 2
ServerLimit 2
ThreadsPerChild 64
MaxRequestWorkers 128"
	else
		tune="StartServers 8
MaxRequestWorkers 48"
	fi
	cat >"$tmp/httpd.conf" <<EOF
ServerRoot "$tmp"
ServerName localhost
Listen 127.0.0.1:$port
PidFile "$tmp/run/httpd.pid"
Mutex file:$tmp/run default
DefaultRuntimeDir "$tmp/run"
ErrorLog "$tmp/httpd.err"
LogLevel warn
LoadModule mpm_${mpm}_module $mods/mod_mpm_$mpm.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule mime_module $mods/mod_mime.so
TypesConfig /dev/null
User nobody
Group nogroup
KeepAlive On
MaxKeepAliveRequests 0
$tune
DocumentRoot "$tmp/www"
<Directory "$tmp/www">
	Require all granted
</Directory>
EOF
	# shellcheck disable=SC2086
	start "$mode-$mpm-httpd" $srv apache2 -f "$tmp/httpd.conf" -DFOREGROUND
	wait_listen "$port" "$srv_pid"
	url="http://127.0.0.1:$port/page"
	ab_ok "apache-ab: $mode $mpm" -k -n 2000 -c 8 "$url"
	ab_ok "apache-ab: $mode $mpm" -k -n 2000 -c 32 "$url"
	ab_ok "apache-ab: $mode $mpm" -n 2000 -c 8 "$url"
	# shellcheck disable=SC2086
	$limit $cli curl -sS --noproxy '*' -o "$tmp/got" "$url" 2>"$tmp/curl.err" ||
		{ cat "$tmp/curl.err"; fail "$mode $mpm: curl"; }
	cmp -s "$tmp/www/page" "$tmp/got" || fail "$mode $mpm: the page differs"
	! grep -E 'exit signal|Segmentation|AH00052' "$tmp/httpd.err" ||
		fail "$mode $mpm: a child died (httpd.err above)"
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

for mpm in event prefork; do
	run plain "$mpm"
	run ddp "$mpm"
done
echo "apache-ab: event and prefork MPMs, keep-alive at 8 and 32, HTTP/1.0 at 8, plain and DDPMODE: ok"
