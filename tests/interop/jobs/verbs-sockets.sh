# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: plain-echo (plain sockets only) as an unmodified program under esock-run
# (esock-run --ddp --backend=B), every TCP socket in DDPMODE, its server and client each on the verbs
# backend (kernel siw) or the user-level one; the server waits in poll or epoll.  Then
# sock-api-ops (the extended calls) on either backend against either.
# One line per case on the console:  RIG-CASE NAME SERVER CLIENT EXIT
# and the two sides' output in /out/NAME-server.log and /out/NAME-client.log.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ME=10.0.2.15
port=7800
ulimit -l unlimited 2>/dev/null # (verbs pins the registered receive buffers and send slots)
side() { # $1 = backend (auto:EXPECTED: auto), $2 = log, then plain-echo's arguments
	be=${1%%:*} log=$2
	shift 2
	ESOCK_LIB=/libesock.so ESOCK_PEER=siw $B timeout 300 $B sh /esock-run --ddp --backend="$be" \
		--log=info /plain-echo "$@" >"$log" 2>&1
}
run_case() { # $1 = name, $2 = server backend, $3 = client backend, $4 = poll|epoll, $5 = address
	flag=
	[ "$4" = epoll ] && flag=-e
	side "$2" "/out/$1-server.log" -s "${5:-$ME}" $port $flag $SLOW_SERVER &
	against $! $port side "$3" "/out/$1-client.log" -c "${5:-$ME}" $port $SLOW_CLIENT \
		1 4093 65536 1048576 4194304
	echo "RIG-CASE $1 $2 $3 $?"
	port=$((port + 1))
}
SLOW_SERVER= SLOW_CLIENT=
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
SLOW_SERVER="-d 2" SLOW_CLIENT="-w 0"
run_case slow-verbs-user-poll verbs user poll
run_case slow-verbs-verbs-epoll verbs verbs epoll
unset ESOCK_RCVDEPTH
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
exit 0
