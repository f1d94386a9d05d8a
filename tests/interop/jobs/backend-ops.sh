# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: /op-matrix (every operation, 3 QPs, 0 B to 16 MiB, data checked)
# between the user-level and the verbs backend, each as server and as client,
# with siw as shipped (CRC as the initiator asks), the variant that asks for CRC,
# and siw with kpatch/linux's series.  One line per case: RIG-CASE NAME SIW SERVER CLIENT EXIT; logs in /out.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ME=10.0.2.15
port=7600
ulimit -l unlimited 2>/dev/null # (verbs pins registered memory)
opm() { # $1 = backend, $2 = -s|-c, $3 = log
	ESOCK_BACKEND=$1 ESOCK_PEER=siw OPM_NO_ZERO_READ=$nozero $B timeout 300 /op-matrix "$2" $ME $port > "$3" 2>&1
}
attempt() { # $1 = name, $2 = server backend, $3 = client backend
	opm "$2" -s "/out/$1-server.log" &
	against $! $port opm "$3" -c "/out/$1-client.log"
	rc=$?
	port=$((port + 1))
}
# A case that fails is run once more (twice, guest-lib.sh); twice in a row is a failure.
run_case() { # $1 = name, $2 = server backend, $3 = client backend
	twice "$1" attempt "$@"
}
# siw as shipped answers a 0-octet Read that waited behind its own Send with that Send's
# octets (kpatch/linux 0006): no 0-octet Reads towards it; patched siw gets them.
for siw in default crc patched; do
	use_siw "$siw"
	nozero=1
	[ "$siw" = patched ] && nozero=0
	for srv in user verbs; do
		for cli in user verbs; do
			name=$siw-$srv-$cli
			run_case "$name" "$srv" "$cli"
			echo "RIG-CASE $name $siw $srv $cli $rc"
		done
	done
done
# short-cross: 256 RDMA Writes of 24 octets, each from a source that crosses a page, sent by
# siw's transmit thread (they wait behind an 8 MiB Write): client on the verbs backend, server
# on the user-level one, which checks every octet.  siw copies such a payload from the wrong
# places (kpatch/linux 0007); the verbs backend splits it at the page.  RIG-SHORT SIW EXIT.
for siw in default patched; do
	use_siw "$siw"
	ESOCK_BACKEND=user $B timeout 120 /short-cross -s $ME $port >"/out/short-$siw-server.log" 2>&1 &
	against $! $port env ESOCK_BACKEND=verbs $B timeout 120 /short-cross -c $ME $port \
		>"/out/short-$siw-client.log" 2>&1
	echo "RIG-SHORT $siw $?"
	port=$((port + 1))
done
# esock-bench with its client and server on different backends (--backends C/S), siw as
# shipped: Send, RDMA Write and RDMA Read round trips and bandwidth, CRC off and on (the
# user-level side asks for it, siw follows).  One line each: RIG-BENCH CLIENT SERVER EXIT.
use_siw default
for pair in user/verbs verbs/user; do
	ESOCK_PEER=siw $B timeout 300 /esock-bench --lat --bw --ops send,write,read \
		--lat-sizes 64,4K --bw-sizes 64K,1M --iters 200 --seconds 0.3 --crc both \
		--addr $ME --backends $pair --csv > "/out/bench-${pair%/*}-${pair#*/}.csv" \
		2> "/out/bench-${pair%/*}-${pair#*/}.log"
	echo "RIG-BENCH ${pair%/*} ${pair#*/} $?"
done
exit 0
