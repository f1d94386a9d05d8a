# SPDX-License-Identifier: MIT
# Sourced by the scripts that run nginx (tests/apps/curl-nginx.sh,
# tests/tcpserver/offload-test.sh, tools/appbench.sh, tools/tcpserver-eval.sh): one configuration
# for all of them, everything under $tmp, nothing in /var.
#
# nginx_conf PORT WORKERS CONNECTIONS [MAIN] [HTTP] [LISTEN]: writes
# $tmp/nginx.conf, a server of $tmp/www on 127.0.0.1:PORT ($NGINX_ADDR:PORT if set); MAIN
# and HTTP are extra directives for the main and the http block ("master_process off;",
# "sendfile on;"), LISTEN extra parameters of the listen directive.
nginx_conf() {
	cat >"$tmp/nginx.conf" <<CONF
daemon off;
${4:-}
pid $tmp/nginx.pid;
error_log $tmp/nginx.err;
worker_processes $2;
events { worker_connections $3; }
http {
	access_log off;
	${5:-}
	client_body_temp_path $tmp/cache;
	proxy_temp_path $tmp/cache;
	fastcgi_temp_path $tmp/cache;
	uwsgi_temp_path $tmp/cache;
	scgi_temp_path $tmp/cache;
	server {
		listen ${NGINX_ADDR:-127.0.0.1}:$1${6:+ $6};
		root $tmp/www;
	}
}
CONF
}
