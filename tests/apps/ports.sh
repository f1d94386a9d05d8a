# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by tests and tools that start servers on 127.0.0.1 (tests/apps/common.sh,
# the tcpserver tests, tools/tcpserver-eval.sh): ports to listen on, and a wait
# for a server to take connections.

# port_used PORT: any TCP socket (listening, connected, TIME_WAIT) on it.
port_used() {
	hex=$(printf ':%04X ' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2" "}' | grep -q "$hex"
}

# free_port: a random port in 10000-31999 that no TCP socket uses now (below the
# kernel's ephemeral range, so no client socket of a neighbouring test takes it).
free_port() {
	i=0
	while [ $i -lt 50 ]; do
		p=$(( $(od -An -N2 -tu2 /dev/urandom) % 22000 + 10000 ))
		port_used "$p" || { echo "$p"; return 0; }
		i=$((i + 1))
	done
	echo "no free port found" >&2
	exit 99
}

# wait_port PORT: until 127.0.0.1:PORT takes a connection (5 s at most; 1 if it never did).
wait_port() {
	i=0
	while [ $i -lt 100 ]; do
		python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),1).close()' "$1" \
			2>/dev/null && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}
