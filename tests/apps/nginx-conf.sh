# SPDX-License-Identifier: MIT
# Sourced by the scripts that run nginx (tests/apps/curl-nginx.sh,
# tests/tcpserver/offload-test.sh, tools/appbench.sh, tools/tcpserver-eval.sh): one configuration
# for all of them, everything under $tmp (or the DIR given), nothing in /var.
#
# nginx_conf PORT WORKERS CONNECTIONS [MAIN] [HTTP] [LISTEN] [DIR]: writes
# DIR/nginx.conf, a server of DIR/www on 127.0.0.1:PORT ($NGINX_ADDR:PORT if set), its
# pid, log and temporary files in DIR (default: $tmp); MAIN and HTTP are extra directives
# for the main and the http block ("master_process off;", "sendfile on;"), LISTEN extra
# parameters of the listen directive.
nginx_conf() {
	_nd=${7:-$tmp}
	cat >"$_nd/nginx.conf" <<CONF
daemon off;
${4:-}
pid $_nd/nginx.pid;
error_log $_nd/nginx.err;
worker_processes $2;
events { worker_connections $3; }
http {
	access_log off;
	${5:-}
	client_body_temp_path $_nd/cache;
	proxy_temp_path $_nd/cache;
	fastcgi_temp_path $_nd/cache;
	uwsgi_temp_path $_nd/cache;
	scgi_temp_path $_nd/cache;
	server {
		listen ${NGINX_ADDR:-127.0.0.1}:$1${6:+ $6};
		root $_nd/www;
	}
}
CONF
}
