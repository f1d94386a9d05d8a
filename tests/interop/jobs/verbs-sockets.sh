# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: plain-echo (plain sockets only) as an unmodified program under esock-run
# (esock-run --ddp --backend=B), every TCP socket in DDPMODE, its server and client each on the verbs
# backend (kernel siw) or the user-level one; the server waits in poll or epoll.  Then
# sock-api-ops (the extended calls) on either backend against either, and socat (Debian's)
# as an echo server on the verbs backend.
# One line per case on the console:  RIG-CASE NAME SERVER CLIENT EXIT
# and the two sides' output in /out/NAME-server.log and /out/NAME-client.log.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ME=10.0.2.15
port=7800
ulimit -l unlimited 2>/dev/null # (verbs pins the registered receive buffers and send slots)
prog_side() { # $1 = backend (auto:EXPECTED: auto), $2 = log, then the command
	be=${1%%:*} log=$2
	shift 2
	ESOCK_LIB=/libesock.so ESOCK_PEER=siw $B timeout 300 $B sh /esock-run --ddp --backend="$be" \
		--log=info "$@" >"$log" 2>&1
}
side() { # $1 = backend, $2 = log, then plain-echo's arguments
	b_=$1 l_=$2
	shift 2
	prog_side "$b_" "$l_" /plain-echo "$@"
}
run_case() { # $1 = name, $2 = server backend, $3 = client backend, $4 = poll|epoll|epollet, $5 = address
	flag=
	[ "$4" = epoll ] && flag=-e
	[ "$4" = epollet ] && flag=-E # (edge-triggered)
	side "$2" "/out/$1-server.log" -s "${5:-$ME}" $port $flag $SERVER_ARGS &
	against $! $port side "$3" "/out/$1-client.log" -c "${5:-$ME}" $port $CLIENT_ARGS \
		1 4093 65536 1048576 4194304
	echo "RIG-CASE $1 $2 $3 $?"
	port=$((port + 1))
}
SERVER_ARGS= CLIENT_ARGS=
run_case verbs-user-poll verbs user poll
run_case verbs-user-epoll verbs user epoll
run_case user-verbs-poll user verbs poll
run_case verbs-verbs-epoll verbs verbs epoll
# ESOCK_BACKEND=auto: the device's address goes to the kernel's iWARP, loopback stays user-level.
run_case auto-auto-epoll auto:verbs auto:verbs epoll
run_case auto-loopback-poll auto:user auto:user poll 127.0.0.1
# Flow control: a slow reader on the verbs backend (8 receives posted, a read every 2 ms) and
# a client that writes without bound: only the credits keep it from overrunning the kernel QP.
export ESOCK_RCVDEPTH=8
SERVER_ARGS="-d 2" CLIENT_ARGS="-w 0"
run_case slow-verbs-user-poll verbs user poll
run_case slow-verbs-verbs-epoll verbs verbs epoll
# Both sides slow (the client reads every 5 ms) and writing without bound: each runs out of
# credits in turn, and a credit Write goes without its wake-up Send when its sender has no
# credit left: a poll or epoll waiting for room must look at the credit word in slices (and
# an edge-triggered one hear of room again after each write that found none).
SERVER_ARGS="-d 2" CLIENT_ARGS="-w 0 -d 5"
run_case slowboth-verbs-verbs-epoll verbs verbs epoll
run_case slowboth-verbs-verbs-poll verbs verbs poll
run_case slowboth-verbs-verbs-epollet verbs verbs epollet
unset ESOCK_RCVDEPTH
# A client that waits in epoll, its socket in the set before its connect (the set must
# follow the socket to the kernel's completion channel).
SERVER_ARGS= CLIENT_ARGS=-e
run_case epollclient-verbs-verbs verbs verbs epoll
run_case epollclient-auto-auto auto:verbs auto:verbs poll
CLIENT_ARGS=
# The extended calls (RDMA Read, Write, Send, event queues) on DDPMODE sockets: sock-api-ops.
api_side() { # $1 = backend, $2 = log, then sock-api-ops' arguments
	be=$1 log=$2
	shift 2
	ESOCK_LIB=/libesock.so ESOCK_PEER=siw $B timeout 300 $B sh /esock-run --backend="$be" \
		--log=info /sock-api-ops "$@" >"$log" 2>&1
}
api_case() { # $1 = name, $2 = server backend, $3 = client backend
	api_side "$2" "/out/$1-server.log" -s $ME $port &
	against $! $port api_side "$3" "/out/$1-client.log" -c $ME $port
	echo "RIG-CASE $1 $2 $3 $?"
	port=$((port + 1))
}
api_case api-verbs-verbs verbs verbs
api_case api-user-verbs user verbs
api_case api-verbs-user verbs user
# An unmodified Debian program on the verbs backend: socat as an echo server (its PIPE
# address sends back what it reads), plain-echo's client checking every octet.
socat_case() { # $1 = name, $2 = server backend, $3 = client backend
	prog_side "$2" "/out/$1-server.log" /usr/bin/socat "TCP-LISTEN:$port,bind=$ME,reuseaddr" PIPE &
	against $! $port side "$3" "/out/$1-client.log" -c $ME $port 1 4093 65536 1048576 4194304
	echo "RIG-CASE $1 $2 $3 $?"
	port=$((port + 1))
}
socat_case socat-verbs-user verbs user
socat_case socat-verbs-verbs verbs verbs
exit 0
