# SPDX-License-Identifier: MIT
# Guest job: siw's Terminates, from siw as shipped and from siw with kpatch/linux's
# series, captured on lo at MTU 1500 with offloads off:
#   term-V.pcap      rping whose server buffer is smaller than the client's, so that
#                    siw terminates the stream (as jobs/rping-capture.sh does);
#   badread-V.pcap   /bad-read (esock's user-level endpoint, from the host) sends
#                    rping -s an RDMA Read Request with an STag never given out.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ip link set lo mtu 1500
ethtool -K lo tso off gso off gro off 2>/dev/null
port=7400

# One case: NAME on $port, rping -s with a 64-octet buffer against the client command.
case_run() { # $1 = name, $2... = the client
	name=$1
	shift
	tcpdump -Z root -i lo -s 0 -U --immediate-mode -w "/out/$name.pcap" tcp port $port \
		> "/out/$name-tcpdump.log" 2>&1 &
	td=$!
	$B sleep 2
	rping -s -a 10.0.2.15 -p $port -C 3 -S 64 -v > "/out/$name-server.log" 2>&1 &
	sv=$!
	listening $port
	"$@" > "/out/$name-client.log" 2>&1
	echo "RIG: $name client exit $?"
	$B sleep 1
	kill $sv 2>/dev/null
	capture_stop_settled "/out/$name.pcap" $td
	port=$((port + 1))
}

# siw's accept race: RACE_N connections, each an rping client (siw as initiator:
# its first Send follows the MPA Reply at once; esock's user-level initiator
# under TCG is too slow to hit the window) against one persistent rping -s; a
# connection whose Send the server's siw leaves unread hangs until the timeout.
race() { # $1 = variant
	rping -s -P -a 10.0.2.15 -p $port -C 1 -S 64 > "/out/race-$1-server.log" 2>&1 &
	sv=$!
	listening $port
	hung=0 i=0
	while [ $i -lt "${RACE_N:-40}" ]; do
		$B timeout 8 rping -c -a 10.0.2.15 -p $port -C 1 -S 64 -v \
			>> "/out/race-$1-client.log" 2>&1 || hung=$((hung + 1))
		i=$((i + 1))
	done
	kill $sv 2>/dev/null
	echo "RIG-RACE $1 $hung $i"
	port=$((port + 1))
}

# The same race with its window widened (siw-widen.ko holds the CPU 1 s after siw sends an MPA
# frame, between siw_accept's Reply and its hand-over of the socket), the initiator esock's
# user-level iwping (no siw of its own; ESOCK_PEER=generic: no pause before its first FPDU)
# on the other CPU: siw as shipped leaves the first Send unread every time, patched siw never.
wide() { # $1 = variant
	if ! $B insmod /siw-widen.ko delay_ms=1000; then
		echo "RIG-WIDE $1 - 0"
		return
	fi
	$B taskset 1 rping -s -P -a 10.0.2.15 -p $port -C 1 -S 64 > "/out/wide-$1-server.log" 2>&1 &
	sv=$!
	listening $port
	hung=0 i=0
	while [ $i -lt "${WIDE_N:-4}" ]; do
		ESOCK_BACKEND=user ESOCK_PEER=generic $B timeout 10 $B taskset 2 /iwping -c \
			-a 10.0.2.15 -p $port -C 1 -S 64 -v --no-crc >> "/out/wide-$1-client.log" 2>&1 ||
			hung=$((hung + 1))
		i=$((i + 1))
	done
	kill $sv 2>/dev/null
	$B rmmod siw-widen
	echo "RIG-WIDE $1 $hung $i"
	port=$((port + 1))
}

# kpatch/linux 0005, two contexts on one send queue: with siw-widen.ko holding the CPU 20 ms
# after each of siw_tx_hdt's sends that TCP did not take whole in rping's system call (the
# server pinned to CPU 0, and so its QP's transmit thread, on CPU 1 as siw picks it for the
# first QP), the transmit thread sends the same FPDU meanwhile; siw as shipped hashes its
# payload twice into the CRC, and esock's iwping (CRC on) Terminates it: "MPA CRC mismatch".
crcrace() { # $1 = variant
	if ! $B insmod /siw-widen.ko delay_ms=0 short_ms=20; then
		echo "RIG-CRCRACE $1 -"
		return
	fi
	wmem=$($B cat /proc/sys/net/ipv4/tcp_wmem)
	echo "4096 4096 8192" > /proc/sys/net/ipv4/tcp_wmem
	$B taskset 1 rping -s -a 10.0.2.15 -p $port -C 20 -S 65535 -V > "/out/crcrace-$1-server.log" 2>&1 &
	sv=$!
	listening $port
	ESOCK_LOG=info ESOCK_BACKEND=user $B timeout 120 $B taskset 2 /iwping -c -a 10.0.2.15 \
		-p $port -C 20 -S 65535 -V -v --crc > "/out/crcrace-$1-client.log" 2>&1
	echo "RIG-CRCRACE $1 $?"
	kill $sv 2>/dev/null
	echo "$wmem" > /proc/sys/net/ipv4/tcp_wmem
	$B rmmod siw-widen
	port=$((port + 1))
}

for v in default patched; do
	use_siw "$v"
	case_run "term-$v" $B timeout 30 rping -c -a 10.0.2.15 -p $port -C 3 -S 100 -v
	case_run "badread-$v" env ESOCK_BACKEND=user $B timeout 30 /bad-read 10.0.2.15 $port 4096
	race "$v"
	wide "$v"
	crcrace "$v"
done

# kpatch/linux 0004, patched siw only (siw as shipped oopses: the guest would
# die): op-matrix's client on the verbs backend splits its Sends and Writes
# with the smaller half first, a zero-length SGE before octets.
ulimit -l unlimited 2>/dev/null
ESOCK_BACKEND=user ESOCK_PEER=siw $B timeout 300 /op-matrix -s 10.0.2.15 $port \
	> /out/zerosge-server.log 2>&1 &
sv=$!
listening $port
OPM_SPLIT=zero-first ESOCK_BACKEND=verbs $B timeout 300 /op-matrix -c 10.0.2.15 $port \
	> /out/zerosge-client.log 2>&1
rc=$?
wait $sv
echo "RIG-ZEROSGE $rc $?"
port=$((port + 1))
# kpatch/linux 0006: 0-octet RDMA Reads of op-matrix's client (user-level endpoint, which
# checks what a Read Response places) from a server on siw; a Read that waits behind the
# server's own Send ("go") is answered with that Send's octets by siw as shipped, which
# the client Terminates (base or bounds).  200 rounds on 3 QPs: a race each.
for v in default patched; do
	use_siw "$v"
	OPM_ZEROS=200 ESOCK_BACKEND=verbs $B timeout 300 /op-matrix -s 10.0.2.15 $port \
		> "/out/zeroread-$v-server.log" 2>&1 &
	sv=$!
	listening $port
	OPM_ZEROS=200 ESOCK_BACKEND=user ESOCK_PEER=siw $B timeout 300 /op-matrix -c 10.0.2.15 $port \
		> "/out/zeroread-$v-client.log" 2>&1
	rc=$?
	kill $sv 2>/dev/null
	wait $sv
	echo "RIG-ZEROREAD $v $rc"
	port=$((port + 1))
done
# kpatch/linux 0007: 256 RDMA Writes of 24 octets, each from a source 8 octets before a page
# end, sent by siw's transmit thread (behind an 8 MiB Write), with the verbs backend's split
# turned off (ESOCK_VERBS_SPLIT_SHORT=0); the server (user-level endpoint) checks every octet.
for v in default patched; do
	use_siw "$v"
	ESOCK_BACKEND=user $B timeout 120 /short-cross -s 10.0.2.15 $port > "/out/short-$v-server.log" 2>&1 &
	against $! $port env ESOCK_BACKEND=verbs ESOCK_VERBS_SPLIT_SHORT=0 $B timeout 120 \
		/short-cross -c 10.0.2.15 $port > "/out/short-$v-client.log" 2>&1
	echo "RIG-SHORT $v $?"
	port=$((port + 1))
done
exit 0
