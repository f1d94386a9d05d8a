#!/bin/sh
# SPDX-License-Identifier: MIT
# memcached (worker threads, libevent on epoll) and a Python client with 4
# connections at once, each storing and reading back 500 values of up to 20
# KiB over the text protocol; plainly and with both in DDPMODE.  Every value
# must come back as stored.
. "$(dirname "$0")/common.sh"
need memcached python3

cat >"$tmp/client.py" <<'EOF'
import os, socket, sys, threading

port = int(sys.argv[1])
errors = []

def one(k):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    try:
        for i in range(500):
            key = b"esock:%d:%d" % (k, i)
            val = os.urandom(1 + (i * 41) % 20480)
            s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(val), val))
            if f.readline() != b"STORED\r\n":
                raise RuntimeError("set %r: not stored" % key)
            s.sendall(b"get %s\r\n" % key)
            head = f.readline().split()
            if head[:2] != [b"VALUE", key] or int(head[3]) != len(val):
                raise RuntimeError("get %r: header %r" % (key, head))
            if f.read(len(val) + 2) != val + b"\r\n" or f.readline() != b"END\r\n":
                raise RuntimeError("get %r: the value differs" % key)
    except Exception as e:
        errors.append(str(e))
    finally:
        s.close()

ts = [threading.Thread(target=one, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
if errors:
    print("\n".join(errors))
    sys.exit(1)
print("2000 values stored and read back")
EOF

run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	# -U 0: no UDP; -u: memcached refuses to run as root otherwise.
	# shellcheck disable=SC2086
	start "$mode-memcached" $srv memcached -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 64 -u nobody
	wait_listen "$port" "$srv_pid"
	# shellcheck disable=SC2086
	$limit $cli python3 "$tmp/client.py" "$port" >"$tmp/client.out" 2>&1 ||
		{ cat "$tmp/client.out"; fail "$mode: the client"; }
	kill -0 "$srv_pid" 2>/dev/null || fail "$mode: memcached died"
	stop "$srv_pid"
	# shellcheck disable=SC2086
	[ -z "$logs" ] || ddp_engaged $logs
}

run plain
run ddp
echo "memcached: 4 connections x 500 values set and got back, plain and DDPMODE: ok"
