#!/bin/sh
# SPDX-License-Identifier: MIT
# The offload mode seen from another host: Debian's nginx, unmodified, its sockets carried
# out by tcpserverd, in a network namespace of its own; curl and ab (Debian's load
# generator) in another, the two joined by a veth pair (10.78.0.1 and .2, addresses that
# exist only here).  With every switch off and with all of them on:
#  - files of 4 KiB, 16 KiB and 3 MiB fetched by curl are byte-identical;
#  - churn: ab, a connection per request (HTTP/1.0), 2000 requests, three times, and
#    keep-alive: no failed request;
#  - 20 clients that reset mid-response, then a fetch: served;
#  - then nothing is left behind: no connection on nginx's port but the listener,
#    tcpserverd's descriptors back to their count before, and neither tcpserverd nor nginx
#    larger after the third churn round than after the second plus 256 kB (nothing kept per
#    connection: 0 kB in the runs of 2026-12-02);
#  - tcpserverd stopped while nginx idles: the client is refused at once (no hang), nginx's
#    next call fails; a new tcpserverd on the same path and a new nginx serve again.
# TCPSERVER_TRANSPORT=net (netns-net-test.sh): the cluster variant's layout.  nginx runs
# in a third namespace, a node of its own, and reaches tcpserverd over an esock QP across
# a second veth pair (10.79.0.1 and .2; tcpserverd -l); its sockets are still tcpserverd's,
# at 10.78.0.1 facing the clients.
# Needs root and ip netns; exits 77 (skip) otherwise.
set -u
b=${top_builddir:-.}
s=$(cd "$(dirname "$0")" && pwd)
d=$b/tcpserver/tcpserverd run=$b/tools/esock-run/esock-run
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
for c in ip nginx curl ab ss python3; do
	command -v $c >/dev/null || { echo "SKIP: $c is not installed (scripts/deps.sh)"; exit 77; }
done
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded into uninstrumented programs"
	exit 77
fi
S=esock-ts-$$ C=esock-tc-$$ H=
SA=10.78.0.1 CA=10.78.0.2
transport=${TCPSERVER_TRANSPORT:-shm}
case $transport in shm|net) ;; *) echo "TCPSERVER_TRANSPORT: shm or net"; exit 99 ;; esac
tmp=$(mktemp -d) || exit 99
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	ip netns del "$S" 2>/dev/null
	ip netns del "$C" 2>/dev/null
	[ -n "$H" ] && ip netns del "$H" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM # (the cleanup runs when a time limit stops the test too)
fail() { echo "FAIL: $*"; tail -n 20 "$tmp"/*.log "$tmp"/nginx.err 2>/dev/null; exit 1; }
if ! ip netns add "$S" 2>"$tmp/netns.err" || ! ip netns add "$C" 2>>"$tmp/netns.err"; then
	echo "SKIP: cannot make network namespaces: $(cat "$tmp/netns.err")"
	exit 77
fi
ip link add vs netns "$S" type veth peer name vc netns "$C" || fail "veth pair"
ip -n "$S" addr add "$SA/24" dev vs && ip -n "$C" addr add "$CA/24" dev vc || fail "addresses"
ip -n "$S" link set lo up && ip -n "$C" link set lo up || fail "loopback up"
ip -n "$S" link set vs up && ip -n "$C" link set vc up || fail "links up"
inS() { ip netns exec "$S" "$@"; }
inC() { ip netns exec "$C" "$@"; }
# Where the host (nginx) runs and how it reaches tcpserverd.
if [ "$transport" = net ]; then
	H=esock-th-$$ hport=7070
	ip netns add "$H" || fail "the host's namespace"
	ip link add vsh netns "$S" type veth peer name vh netns "$H" || fail "the host's veth pair"
	ip -n "$S" addr add 10.79.0.1/24 dev vsh && ip -n "$H" addr add 10.79.0.2/24 dev vh || fail "addresses"
	ip -n "$H" link set lo up && ip -n "$S" link set vsh up && ip -n "$H" link set vh up || fail "links up"
	hostns=$H where=10.79.0.1:$hport net="-l 10.79.0.1:$hport"
else
	hostns=$S where=$tmp/s net=
fi

mkdir -p "$tmp/www" "$tmp/cache" || exit 99
head -c 4096 /dev/urandom >"$tmp/www/f4k"
head -c 16384 /dev/urandom >"$tmp/www/f16k"
head -c 3145728 /dev/urandom >"$tmp/www/f3m"
head -c 20000000 /dev/urandom >"$tmp/www/big"
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www"/*
. "$s/../apps/nginx-conf.sh"
. "$s/stop.sh"
port=8080 # (the namespace is ours: nothing else listens in it)

start_d() {
	rm -f "$tmp/s"
	# (ip netns exec execs the program: $! is tcpserverd's own pid, as the checks need)
	# shellcheck disable=SC2086
	ip netns exec "$S" "$d" -s "$tmp/s" $net -v 2>>"$tmp/d.log" & dpid=$!
	pids="$pids $dpid"
	for i in $(seq 1 100); do
		if [ -S "$tmp/s" ] && { [ -z "$net" ] || inS ss -Hltn "sport = :$hport" | grep -q .; }; then
			return 0
		fi
		sleep 0.05
	done
	fail "tcpserverd did not start"
}
# Waits until a client in C is served (5 s at most).
wait_served() {
	for i in $(seq 1 100); do
		inC curl -s -o /dev/null --noproxy '*' "http://$SA:$port/f4k" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
start_nginx() { # OPTS
	NGINX_ADDR=$SA nginx_conf "$port" 1 256 "master_process off;" "sendfile on;"
	ip netns exec "$hostns" "$run" --tcpserver="$where:$1" nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf" \
		2>"$tmp/nginx-$1.log" & npid=$!
	pids="$pids $npid"
	wait_served || fail "$1: nginx does not answer from the other namespace"
}
stop_nginx() {
	kill "$npid" 2>/dev/null
	for i in $(seq 1 200); do kill -0 "$npid" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$npid" 2>/dev/null && { kill -9 "$npid"; fail "nginx did not end on SIGTERM"; }
	wait "$npid" 2>/dev/null
}
fetch() { # OPT FILE
	rm -f "$tmp/got"
	inC timeout 20 curl -sS --noproxy '*' -o "$tmp/got" "http://$SA:$port/$2" 2>"$tmp/curl.log" ||
		fail "$1: curl $2: $(cat "$tmp/curl.log")"
	cmp -s "$tmp/www/$2" "$tmp/got" || fail "$1: $2 differs"
}
ab_run() { # OPT N [-k]
	inC timeout 120 ab -q ${3:-} -c 16 -n "$2" "http://$SA:$port/f4k" >"$tmp/ab.log" 2>&1 ||
		fail "$1: ab ${3:-} -n $2: $(tail -n 3 "$tmp/ab.log")"
	grep -q "^Complete requests: *$2$" "$tmp/ab.log" && grep -q "^Failed requests: *0$" "$tmp/ab.log" ||
		fail "$1: ab ${3:-}: $(grep -E 'Complete|Failed' "$tmp/ab.log")"
}
nfds() { ls "/proc/$1/fd" | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# Connections on nginx's port in S other than the listener and TIME_WAIT, after a settling wait.
left() {
	for i in $(seq 1 40); do
		n=$(inS ss -Htn state established "( sport = :$port )" | wc -l)
		[ "$n" -eq 0 ] && break
		sleep 0.25
	done
	echo "$n"
}

start_d
if [ "$transport" = net ]; then
	# The endpoint's own descriptors (its engine's) come with tcpserverd's first QP and
	# stay: a host that comes and goes first, so that the counts below compare like with like.
	ip netns exec "$H" "$b/tests/tcpserver/tsp-host" calls "$where" 10 >/dev/null ||
		fail "a host of the other namespace cannot reach tcpserverd at $where"
	for i in $(seq 1 100); do grep -q "its link ended\|said bye" "$tmp/d.log" && break; sleep 0.05; done
fi
for opt in none all; do
	base=$(nfds "$dpid")
	start_nginx "$opt"
	fetch "$opt" f4k
	fetch "$opt" f16k
	fetch "$opt" f3m
	# Churn: rounds of 2000 connections; after two (the heaps warmed up), a third may not
	# grow tcpserverd or nginx (the host side of the offload mode) by more than 256 kB.
	ab_run "$opt" 2000
	ab_run "$opt" 2000
	rss1=$(rss_kb "$dpid") nrss1=$(rss_kb "$npid")
	ab_run "$opt" 2000
	rss2=$(rss_kb "$dpid") nrss2=$(rss_kb "$npid")
	[ "$rss2" -le $((rss1 + 256)) ] ||
		fail "$opt: tcpserverd grew from $rss1 to $rss2 kB over 2000 more connections"
	[ "$nrss2" -le $((nrss1 + 256)) ] ||
		fail "$opt: nginx grew from $nrss1 to $nrss2 kB over 2000 more connections"
	ab_run "$opt" 4000 -k
	# Clients that reset mid-response: the next one is served, nothing is left of them.
	inC python3 - "$SA" "$port" <<'EOF' || fail "$opt: the resetting clients"
import socket, struct, sys
for i in range(20):
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    s.recv(65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
EOF
	fetch "$opt" f3m
	[ "$(left)" -eq 0 ] || fail "$opt: connections left on port $port: $(inS ss -Htn "( sport = :$port )")"
	stop_nginx
	grep -q "alert\|emerg" "$tmp/nginx.err" && fail "$opt: nginx says $(grep "alert\|emerg" "$tmp/nginx.err")"
	for i in $(seq 1 40); do [ "$(nfds "$dpid")" -le "$base" ] && break; sleep 0.25; done
	[ "$(nfds "$dpid")" -le "$base" ] ||
		fail "$opt: tcpserverd holds $(nfds "$dpid") descriptors, $base before nginx"
	echo "netns ($transport) $opt: curl 4 KiB/16 KiB/3 MiB identical; ab 3x2000 (a connection each) and 4000 keep-alive, none failed; 20 resets; nothing left; third round: tcpserverd ${rss1}->${rss2} kB, nginx ${nrss1}->${nrss2} kB"
done

# tcpserverd stopped while nginx idles: refused at once, no hang; then a new pair serves.
start_nginx all
stop_by_term "$dpid" || [ $? -ne 124 ] || fail "tcpserverd still ran 10 s after SIGTERM"
t0=$(date +%s)
inC timeout 10 curl -s -o /dev/null --noproxy '*' "http://$SA:$port/f4k" && fail "served with tcpserverd gone"
[ $(( $(date +%s) - t0 )) -lt 5 ] || fail "a client waited $(( $(date +%s) - t0 )) s with tcpserverd gone"
stop_nginx
start_d
start_nginx all
fetch restarted f3m
stop_nginx
echo "netns ($transport): tcpserverd stopped under an idle nginx: refused at once; restarted with a new nginx: served"
exit 0
