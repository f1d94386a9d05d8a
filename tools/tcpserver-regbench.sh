#!/bin/sh
# SPDX-License-Identifier: MIT
# Registered buffers against copies, in the same run: tests/tcpserver/reg-echo (a program
# that registers its 1 MiB buffer through the extended API, then echoes one connection
# with recv and send) offloaded to tcpserverd over shared memory, with ESOCK_TCPSERVER_OPT
# "reg" (tcpserverd reads and writes the buffer itself) and "none" (registration refused:
# the library copies into and out of the queues), in turns; a client streams OCTETS through
# it.  Prints the host's CPU time (user + system, /proc) and the wall time of each round.
#   top_builddir=build sh tools/tcpserver-regbench.sh [OCTETS [ROUNDS]]   (defaults: 1 GiB, 2)
# The host is pinned to CPU 0 (taskset); tcpserverd and the client run where the kernel puts
# them.  docs/tcpserver.md, "Registered buffers".
set -u
b=${top_builddir:-.}
n=${1:-1073741824} rounds=${2:-2}
for c in python3 taskset; do
	command -v $c >/dev/null || { echo "tcpserver-regbench: $c is not installed"; exit 77; }
done
[ -x "$b/tests/tcpserver/reg-echo" ] || make -C "$b" tests/tcpserver/reg-echo >/dev/null ||
	{ echo "tcpserver-regbench: cannot build reg-echo"; exit 1; }
tmp=$(mktemp -d) || exit 1
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
"$b/tcpserver/tcpserverd" -s "$tmp/s" 2>"$tmp/d.log" & pids=$!
for _ in $(seq 1 100); do [ -S "$tmp/s" ] && break; sleep 0.05; done
cat >"$tmp/cli.py" <<'PY'
import socket, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
blk = bytes(range(256)) * 256
def tx():
    left = n
    while left > 0:
        k = min(left, len(blk))
        s.sendall(blk[:k])
        left -= k
    s.shutdown(socket.SHUT_WR)
t = threading.Thread(target=tx)
t.start()
got = 0
while True:
    d = s.recv(1 << 20)
    if not d:
        break
    got += len(d)
t.join()
sys.exit(0 if got == n else 1)
PY
hz=$(getconf CLK_TCK)
echo "tcpserver-regbench: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d); $n octets echoed per round"
for _ in $(seq 1 "$rounds"); do
	for opt in reg none; do
		rm -f "$tmp/out" "$tmp/in"
		mkfifo "$tmp/in" || exit 1
		ESOCK_TCPSERVER=$tmp/s ESOCK_TCPSERVER_OPT=$opt LD_PRELOAD=$b/.libs/libesock.so \
			taskset -c 0 "$b/tests/tcpserver/reg-echo" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" & rp=$!
		exec 7>"$tmp/in"
		for _ in $(seq 1 100); do [ -s "$tmp/out" ] && break; sleep 0.05; done
		t0=$(date +%s%N)
		python3 "$tmp/cli.py" "$(head -n 1 "$tmp/out")" "$n" || { echo "tcpserver-regbench: $opt: echo differs"; exit 1; }
		t1=$(date +%s%N)
		for _ in $(seq 1 100); do grep -q '^echoed' "$tmp/out" && break; sleep 0.05; done
		ticks=$(awk '{ print $14 + $15 }' "/proc/$rp/stat")
		echo "$opt ($(sed -n 's/^reg: //p' "$tmp/out")): host CPU $((ticks * 1000 / hz)) ms, wall $(((t1 - t0) / 1000000)) ms"
		echo >&7
		exec 7>&-
		wait "$rp"
	done
done
