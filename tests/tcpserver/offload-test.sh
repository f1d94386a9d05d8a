#!/bin/sh
# SPDX-License-Identifier: MIT
# The offload mode end to end: unmodified programs under
# esock-run --tcpserver, their TCP sockets carried out by tcpserverd, with
# every switch off and with all of them on.
#  - a blocking Python echo server (accept, recv, sendall) and a plain
#    client moving 4 MB both ways at once: identical; TCP options set and
#    read back (TCP_CORK and TCP_KEEPIDLE share their numbers with SO_TYPE
#    and SO_ERROR, which were once refused in their place);
#  - a server that writes each response in two pieces (a header, its body):
#    tcpserverd sends them whole (held sends), and a lone piece at once;
#  - nginx (epoll, non-blocking accept4, writev, sendfile, tcp_nopush: the
#    response corked and uncorked, as Debian's nginx.conf has it) behind two idle
#    connections, alone and as a master whose two workers inherit its
#    listener by fork, fetched by a plain curl and by an offloaded curl (poll,
#    a non-blocking connect), and by ab with keep-alive: every file identical;
#  - a forking server whose parent closes each connection right after the
#    fork: each child echoes its client whole;
#  - a client that resets mid-response and one that stops reading: nginx
#    serves the next one;
#  - nginx killed mid-transfer: tcpserverd closes its sockets (the client
#    sees the end), keeps no descriptor of it, and serves the next nginx;
#  - a program that registers its buffer (the extended API) and echoes with
#    recv/send: tcpserverd places and takes the octets in that buffer itself
#    (registered buffers: process_vm_readv/writev, or RDMA over the network);
#  - tcpserverd gone: the host's next call fails (no hang).
# TCPSERVER_TRANSPORT=net (offload-net-test.sh): all of it again with the
# hosts reaching tcpserverd over an esock QP (its -l on 127.0.0.1), the
# cluster variant's transport, instead of shared memory.
set -u
b=${top_builddir:-.}
s=$(cd "$(dirname "$0")" && pwd)
d=$b/tcpserver/tcpserverd run=$b/tools/esock-run/esock-run
tmp=$(mktemp -d) || exit 99
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' HUP INT TERM # (the cleanup runs when a time limit stops the test too)
fail() { echo "FAIL: $*"; tail -n 20 "$tmp"/*.log "$tmp"/*.err 2>/dev/null; exit 1; }
for c in python3 nginx curl ss ab; do
	command -v $c >/dev/null || { echo "SKIP: $c is not installed (scripts/deps.sh)"; exit 77; }
done
if ldd "$b/.libs/libesock.so" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; it cannot be preloaded into uninstrumented programs"
	exit 77
fi
. "$(dirname "$0")/../apps/ports.sh"
. "$(dirname "$0")/stop.sh"
nfds() { ls "/proc/$1/fd" | wc -l; }
# The listening socket on PORT is tcpserverd's, not the program's (it is offloaded).
owned_by_d() {
	ss -Hltnp "sport = :$1" | grep -q "pid=$dpid," || fail "port $1 is not tcpserverd's: $(ss -Hltnp "sport = :$1")"
}

transport=${TCPSERVER_TRANSPORT:-shm}
case $transport in
shm) where=$tmp/s net= ;;
net) lport=$(free_port); where=127.0.0.1:$lport net="-l $where" ;;
*) echo "TCPSERVER_TRANSPORT: shm or net"; exit 99 ;;
esac
start_d() {
	# shellcheck disable=SC2086
	"$d" -s "$tmp/s" $net -v 2>>"$tmp/d.log" & dpid=$!; pids="$pids $dpid"
	for i in $(seq 1 100); do [ -S "$tmp/s" ] && return 0; sleep 0.05; done
	fail "tcpserverd did not start"
}
start_d
base_fds=$(nfds "$dpid")

# ---- a switch that means nothing: no socket is offloaded, socket() says EINVAL ----
# (preloaded by hand: esock-run refuses such words itself, esock-run-test.sh)
for bad in asnyc all,share=abc share=101; do
	r=$(ESOCK_TCPSERVER=$where ESOCK_TCPSERVER_OPT=$bad LD_PRELOAD=$(cd "$b/.libs" && pwd)/libesock.so \
		python3 -c 'import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("made")
except OSError as e:
    print(e.errno)' 2>&1)
	[ "$r" = 22 ] || fail "ESOCK_TCPSERVER_OPT=$bad: socket() gave '$r', not EINVAL (22)"
done
[ "$(nfds "$dpid")" = "$base_fds" ] || fail "a host with a bad switch reached tcpserverd"

# ---- a blocking server ----
# One connection echoed to its end: the octets it moved.
cat >"$tmp/echolib.py" <<'EOF'
def echo(c):
    n = 0
    while True:
        d = c.recv(65536)
        if not d:
            return n
        c.sendall(d)
        n += len(d)
EOF
cat >"$tmp/echo.py" <<'EOF'
import socket, sys
from echolib import echo
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(5)
print(s.getsockname()[1], flush=True)
c, a = s.accept()
assert a[0] == "127.0.0.1" and c.getpeername() == a, (a, c.getpeername())
assert c.getsockname()[1] == s.getsockname()[1]
assert c.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
# (options that share their numbers with SO_TYPE and SO_ERROR, which are only read)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 1
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 37)
assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 37
try:
    c.setsockopt(socket.SOL_SOCKET, socket.SO_TYPE, 1)
    assert False, "SO_TYPE set"
except OSError as e:
    assert e.errno == 92, e
n = echo(c)
c.close()
s.close()
print("echoed", n, flush=True)
EOF
cat >"$tmp/cli.py" <<'EOF'
import socket, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
data = bytes(range(256)) * (n // 256)
s = socket.create_connection(("127.0.0.1", port))
def tx():
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
t = threading.Thread(target=tx)
t.start()
got = bytearray()
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
t.join()
sys.exit(0 if got == data else 1)
EOF
for opt in none all; do
	rm -f "$tmp/echo.out"
	"$run" --tcpserver="$where:$opt" python3 "$tmp/echo.py" >"$tmp/echo.out" 2>"$tmp/echo-$opt.err" & epid=$!
	pids="$pids $epid"
	wait_file "$tmp/echo.out" || fail "$opt: the echo server printed no port"
	owned_by_d "$(head -n 1 "$tmp/echo.out")"
	timeout 30 python3 "$tmp/cli.py" "$(head -n 1 "$tmp/echo.out")" 4000000 || fail "$opt: echo differs"
	wait "$epid" || fail "$opt: echo server: $(cat "$tmp/echo-$opt.err")"
	grep -q "^echoed 4000000$" "$tmp/echo.out" || fail "$opt: echoed $(cat "$tmp/echo.out")"
done

# ---- a response written in two pieces (a header, then its body) ----
# With asynchronous send tcpserverd holds the small first piece for its follower, a few
# microseconds, and sends both at once (its counters: sends held, joined); nothing waits
# longer than that: a lone piece goes (the lone rounds would stall otherwise).
cat >"$tmp/pieces.py" <<'EOF'
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], os.getpid(), flush=True)
c, _ = s.accept()
f = c.makefile("rb")
for line in f:
    if line.startswith(b"lone"):
        c.sendall(b"L" * 100)
    else:
        c.sendall(b"H" * 200)
        c.sendall(b"B" * 3000)
c.close()
s.accept() # (waits here, a host still, until killed)
EOF
cat >"$tmp/pieces-cli.py" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def want(n, what):
    got = b""
    while len(got) < n:
        d = s.recv(n - len(got))
        assert d, "closed early"
        got += d
    assert got == what, got[:40]
for i in range(300):
    s.sendall(b"two\n")
    want(3200, b"H" * 200 + b"B" * 3000)
for i in range(100):          # lone pieces: each answered without a follower
    s.sendall(b"lone\n")
    want(100, b"L" * 100)
s.close()
EOF
# pieces WHERE DPID LOG: the two-piece and lone rounds through tcpserverd DPID at WHERE (its
# log LOG); "held joined" of the server's host in DPID's counters after, in $hj.
pieces() {
	rm -f "$tmp/pieces.out"
	"$run" --tcpserver="$1:all" python3 "$tmp/pieces.py" >"$tmp/pieces.out" 2>"$tmp/pieces.err" & ppid=$!
	pids="$pids $ppid"
	wait_file "$tmp/pieces.out" || fail "pieces: the server printed no port"
	timeout 30 python3 "$tmp/pieces-cli.py" "$(cut -d' ' -f1 "$tmp/pieces.out")" ||
		fail "pieces: the responses differ or did not come: $(cat "$tmp/pieces.err")"
	kill -USR1 "$2"; sleep 0.3
	hj=$(sed -n "s/^tcpserverd: host [0-9]* pid $(cut -d' ' -f2 "$tmp/pieces.out"):.*sends held \([0-9]*\) (joined \([0-9]*\)).*/\1 \2/p" "$3" | tail -n 1)
	kill "$ppid"; wait "$ppid" 2>/dev/null
}
pieces "$where" "$dpid" "$tmp/d.log"
# (the lone pieces' holds miss, and are not counted as joined; most two-piece ones join)
[ -n "$hj" ] && [ "${hj#* }" -ge 150 ] && [ "${hj#* }" -le "${hj% *}" ] ||
	fail "pieces: sends held and joined '$hj' (of 300 two-piece responses)"
if [ "$transport" = shm ]; then # (-m: each piece goes at once)
	"$d" -s "$tmp/sm" -m 2>"$tmp/dm.log" & mpid=$!; pids="$pids $mpid"
	for i in $(seq 1 100); do [ -S "$tmp/sm" ] && break; sleep 0.05; done
	pieces "$tmp/sm" "$mpid" "$tmp/dm.log"
	kill "$mpid"; wait "$mpid" 2>/dev/null
	[ "$hj" = "0 0" ] || fail "pieces: tcpserverd -m held sends: '$hj'"
fi

# ---- registered buffers ----
# A program that registers its buffer (the extended API's reg) and echoes with recv and send:
# with "reg" tcpserverd reads and writes that buffer itself (its counters show every octet,
# none crossed in a queue), with asynchronous send too; over shared memory with
# process_vm_readv/writev, across the network with RDMA Reads and Writes of the buffer's MR.
for opt in reg reg,async; do
	rm -f "$tmp/reg.out" "$tmp/rin"
	mkfifo "$tmp/rin" || exit 99
	"$run" --tcpserver="$where:$opt" "$b/tests/tcpserver/reg-echo" <"$tmp/rin" >"$tmp/reg.out" \
		2>"$tmp/reg-$opt.err" & rpid=$!
	pids="$pids $rpid"
	exec 7>"$tmp/rin" # (its stdin: the line that lets it end)
	wait_file "$tmp/reg.out" || fail "$opt: reg-echo printed no port"
	timeout 30 python3 "$tmp/cli.py" "$(head -n 1 "$tmp/reg.out")" 1048576 || fail "$opt: registered echo differs"
	for i in $(seq 1 100); do grep -q "^echoed" "$tmp/reg.out" && break; sleep 0.05; done
	grep -q "^echoed 1048576$" "$tmp/reg.out" || fail "$opt: reg-echo: $(cat "$tmp/reg.out" "$tmp/reg-$opt.err")"
	grep -q "^reg: ok$" "$tmp/reg.out" || fail "$opt: registration: $(cat "$tmp/reg.out")"
	kill -USR1 "$dpid"
	for i in $(seq 1 40); do grep -q "registered in 1048576 out 1048576," "$tmp/d.log" && break; sleep 0.05; done
	grep -q "registered in 1048576 out 1048576," "$tmp/d.log" ||
		fail "$opt: tcpserverd's counters do not show the echo in registered memory"
	grep -v "registered in 1048576 out 1048576," "$tmp/d.log" >"$tmp/d.rest"
	cat "$tmp/d.rest" >"$tmp/d.log" # (the next round's counters alone; the rest kept: tcpserverd appends)
	echo >&7
	exec 7>&-
	wait "$rpid" || fail "$opt: reg-echo: $(cat "$tmp/reg-$opt.err")"
done
rm -f "$tmp/rin"
if [ "$transport" = net ]; then
	# A host that registers memory outside the MR whose key it gives: tcpserverd's RDMA Read of
	# it is refused by the host's endpoint and the channel is cut (nothing outside the MR is
	# read); tcpserverd goes on serving the others (the rest of this test).
	timeout 30 "$b/tests/tcpserver/tsp-host" reglie "$where" >"$tmp/reglie.log" 2>&1 ||
		fail "a host lying about its registered memory: $(cat "$tmp/reglie.log")"
fi

if [ "$transport" = net ]; then
	# The endpoint's own descriptors (its engine's epoll set and doorbell) come with the
	# first QP and stay: the count to come back to is the one after these hosts ended.
	for i in $(seq 1 100); do [ "$(grep -c "its link ended" "$tmp/d.log")" -ge 5 ] && break; sleep 0.05; done
	base_fds=$(nfds "$dpid")
fi

# ---- nginx ----
mkdir -p "$tmp/www" "$tmp/cache" || exit 99
head -c 3145728 /dev/urandom >"$tmp/www/blob"
head -c 40000000 /dev/urandom >"$tmp/www/big"
echo "esock offload test" >"$tmp/www/small.txt"
chmod 755 "$tmp" "$tmp/www"
chmod 644 "$tmp/www"/*

. "$s/../apps/nginx-conf.sh"
start_nginx() { # OPTS [MASTER]: with a master, its two workers inherit the listener by fork
	port=$(free_port)
	# (sendfile and tcp_nopush as in Debian's nginx.conf: a response corked, then uncorked)
	nginx_conf "$port" 2 64 "master_process ${2:-off};" "sendfile on; tcp_nopush on;"
	_log=; case $1 in *share=*) _log=info ;; esac # (the split says so at its start)
	ESOCK_LOG=$_log "$run" --tcpserver="$where:$1" nginx -e "$tmp/nginx.err" -p "$tmp" -c "$tmp/nginx.conf" \
		2>"$tmp/nginx-$1.log" & npid=$!
	pids="$pids $npid"
	wait_port "$port" || fail "$1: nginx does not answer"
	owned_by_d "$port"
}
# SIGTERM ends nginx within 10 s (a signal must reach it through the library's waits).
stop_nginx() {
	kill "$npid"
	for i in $(seq 1 200); do kill -0 "$npid" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$npid" 2>/dev/null && { kill -9 "$npid"; fail "nginx did not end on SIGTERM"; }
	wait "$npid" 2>/dev/null
}
fetch() { # fetch OPT FILE [offloaded]: curl, plain or offloaded, must get FILE whole
	rm -f "$tmp/got"
	if [ "${3:-}" = offloaded ]; then
		timeout 20 "$run" --tcpserver="$where:$1" curl -sS --noproxy '*' -o "$tmp/got" \
			"http://127.0.0.1:$port/$2" 2>"$tmp/curl.log" || fail "$1: offloaded curl $2"
	else
		timeout 20 curl -sS --noproxy '*' -o "$tmp/got" "http://127.0.0.1:$port/$2" 2>"$tmp/curl.log" ||
			fail "$1: curl $2"
	fi
	cmp -s "$tmp/www/$2" "$tmp/got" || fail "$1: $2 differs (${3:-plain} curl)"
}

for run_ in none:off all:off none:on all:on all,share=50:off all,share=50:on; do
	opt=${run_%:*}
	start_nginx "$opt" "${run_#*:}"
	# Two connections that never say anything hold nobody up.
	idle=
	for k in 1 2; do
		python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); time.sleep(60)' \
			"$port" & idle="$idle $!"
	done
	pids="$pids $idle"
	fetch "$opt" small.txt
	fetch "$opt" blob
	fetch "$opt" blob offloaded
	fetch "$opt" small.txt offloaded
	# A client that resets mid-response, one that stops reading: the next one is served.
	python3 - "$port" <<'EOF' || fail "$opt: the resetting client"
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
s.recv(100000)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
EOF
	python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); time.sleep(60)' \
		"$port" & slow=$!
	pids="$pids $slow"
	sleep 0.3
	fetch "$opt" blob
	fetch "$opt" small.txt
	# Keep-alive: the next request on a connection is news to an edge-triggered server.
	timeout 60 ab -q -k -c 8 -n 4000 "http://127.0.0.1:$port/small.txt" >"$tmp/ab.log" 2>&1 ||
		fail "$run_: ab -k"
	grep -q "^Complete requests: *4000$" "$tmp/ab.log" && grep -q "^Failed requests: *0$" "$tmp/ab.log" ||
		fail "$run_: ab -k: $(grep -E 'Complete|Failed' "$tmp/ab.log")"
	case $opt in *share=*)
		# The split: a connection per request, some on nginx's own TCP, the rest through tcpserverd.
		timeout 60 ab -q -c 8 -n 2000 "http://127.0.0.1:$port/small.txt" >"$tmp/ab.log" 2>&1 ||
			fail "$run_: ab"
		grep -q "^Complete requests: *2000$" "$tmp/ab.log" && grep -q "^Failed requests: *0$" "$tmp/ab.log" ||
			fail "$run_: ab: $(grep -E 'Complete|Failed' "$tmp/ab.log")"
		grep -q "shares 50 % of its connections" "$tmp/nginx-$opt.log" ||
			fail "$run_: nginx's listener was not shared: $(cat "$tmp/nginx-$opt.log")" ;;
	esac
	# shellcheck disable=SC2086
	kill $idle $slow 2>/dev/null
	stop_nginx
	grep -q "alert\|emerg" "$tmp/nginx.err" && fail "$run_: nginx says $(grep "alert\|emerg" "$tmp/nginx.err")"
done
grep -q "fork, [1-9][0-9]* sockets copied" "$tmp/d.log" || fail "nginx's master forked no sockets to its workers"

# ---- a forking server: the parent accepts, forks and closes at once; the child serves ----
cat >"$tmp/forker.py" <<'EOF'
import os, socket, sys
from echolib import echo
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
kids = []
for i in range(3):
    c, a = s.accept()
    pid = os.fork()
    if pid == 0:
        s.close()
        n = echo(c)
        c.close()
        os._exit(0 if n == 262144 else 1)
    c.close()          # (the child's copy must stay open)
    kids.append(pid)
bad = sum(os.waitpid(p, 0)[1] != 0 for p in kids)
print("served", 3 - bad, flush=True)
EOF
for opt in none all; do
	rm -f "$tmp/forker.out"
	"$run" --tcpserver="$where:$opt" python3 "$tmp/forker.py" >"$tmp/forker.out" 2>"$tmp/forker-$opt.err" & fpid=$!
	pids="$pids $fpid"
	wait_file "$tmp/forker.out" || fail "$opt: the forking server printed no port"
	for i in 1 2 3; do
		timeout 30 python3 "$tmp/cli.py" "$(head -n 1 "$tmp/forker.out")" 262144 || fail "$opt: forked echo $i differs"
	done
	wait "$fpid" || fail "$opt: forking server: $(cat "$tmp/forker-$opt.err")"
	grep -q "^served 3$" "$tmp/forker.out" || fail "$opt: forking server: $(cat "$tmp/forker.out")"
done

# ---- a host killed mid-transfer ----
start_nginx all
timeout 20 curl -sS --noproxy '*' --limit-rate 2M -o "$tmp/got" "http://127.0.0.1:$port/big" 2>/dev/null & cpid=$!
sleep 0.5
kill -9 "$npid"
wait "$npid" 2>/dev/null
wait "$cpid" && fail "a transfer cut by the host's end looked complete"
for i in $(seq 1 240); do [ "$(nfds "$dpid")" -le "$base_fds" ] && break; sleep 0.05; done
[ "$(nfds "$dpid")" -le "$base_fds" ] || fail "tcpserverd keeps $(nfds "$dpid") descriptors (had $base_fds)"
grep -q "its sockets closed" "$tmp/d.log" || fail "tcpserverd did not say it closed the host's sockets"
start_nginx all
fetch all small.txt
stop_nginx

# ---- tcpserverd gone: the host's next call fails, nothing hangs; restarted, new sockets work ----
cat >"$tmp/gone.py" <<'EOF'
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print("ready", flush=True)
time.sleep(1)   # (tcpserverd is stopped meanwhile)
try:
    s.accept()
    print("accepted?!")
    sys.exit(1)
except OSError as e:
    print("error", e.errno, flush=True)
try:
    socket.socket()
    print("socket?!")
    sys.exit(1)
except OSError as e:
    print("error", e.errno, flush=True)
while not os.path.exists(sys.argv[1]):   # (a new tcpserverd at the same path)
    time.sleep(0.05)
t = socket.socket()
t.bind(("127.0.0.1", 0))
t.listen(1)
print("again", t.getsockname()[1], flush=True)
c = socket.create_connection(t.getsockname())
a, _ = t.accept()
c.sendall(b"x")
print("moved", a.recv(1).decode(), flush=True)
EOF
rm -f "$tmp/gone.out"
"$run" --tcpserver="$where" timeout 20 python3 "$tmp/gone.py" "$tmp/restarted" >"$tmp/gone.out" 2>"$tmp/gone.log" & gpid=$!
pids="$pids $gpid"
wait_file "$tmp/gone.out" || fail "the host did not start"
stop_by_term "$dpid" || [ $? -ne 124 ] || fail "tcpserverd still ran 10 s after SIGTERM"
for i in $(seq 1 100); do [ "$(grep -c '^error ' "$tmp/gone.out")" = 2 ] && break; sleep 0.05; done
[ "$(grep -c '^error ' "$tmp/gone.out")" = 2 ] || fail "after tcpserverd left: $(cat "$tmp/gone.out")"
hellos=$(grep -c "said hello" "$tmp/d.log")
start_d
touch "$tmp/restarted"
wait "$gpid" || fail "after tcpserverd came back: $(cat "$tmp/gone.out" "$tmp/gone.log")"
grep -q "^moved x$" "$tmp/gone.out" || fail "after tcpserverd came back: $(cat "$tmp/gone.out")"
# (the new sockets were the new tcpserverd's: it heard one more hello, from this host)
[ "$(grep -c "said hello" "$tmp/d.log")" -gt "$hellos" ] ||
	fail "the restarted tcpserverd heard no host"

echo "offload ($transport): blocking echo 4 MB (TCP_CORK, TCP_KEEPIDLE set and read back), a response in two pieces sent whole (held sends; -m not), registered buffers (echo from and into a registered buffer), nginx alone and master+2 workers (plain and offloaded curl, ab -k, idle, reset and slow clients), forking server, killed host, tcpserverd gone and back; switches off and all on, and all with share=50: ok"
