# tests/apps/: unmodified Debian programs under esock-run from the build tree,
# on 127.0.0.1 only.  Each test skips (77) naming what is missing; the
# programs come with `bash scripts/deps.sh test`.
#   plain, pass-through and DDPMODE: curl+nginx, redis-server+redis-cli/benchmark
#   plain and pass-through: rsync daemon (its client forks two users of one socket)
#   DDPMODE on both ends: iperf3, socat (one way, echo, half-close)
#   plain and DDPMODE: lighttpd + ab (HTTP/1.0 and keep-alive, 8 and 32 at once),
#   Apache httpd event and prefork MPMs + ab, memcached + a Python client,
#   Node.js http server and client, haproxy (DDPMODE front, plain back end),
#   PostgreSQL + psql and pgbench, git daemon + git clone (two execs: the handoff),
#   sshd + ssh and scp (re-exec, sandboxed pre-auth child, state shared across fork)
APP_TESTS = tests/apps/curl-nginx.sh tests/apps/redis.sh tests/apps/rsync-daemon.sh \
	tests/apps/iperf3-ddp.sh tests/apps/socat-ddp.sh tests/apps/socat-halfclose-ddp.sh \
	tests/apps/lighttpd-ab.sh tests/apps/apache-ab.sh tests/apps/memcached.sh \
	tests/apps/node-http.sh tests/apps/haproxy.sh tests/apps/postgres.sh tests/apps/git-daemon.sh \
	tests/apps/sshd.sh
TESTS += $(APP_TESTS)
EXTRA_DIST += $(APP_TESTS) tests/apps/common.sh tests/apps/nginx-conf.sh tests/apps/ports.sh
