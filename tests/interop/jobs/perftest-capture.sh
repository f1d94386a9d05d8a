# SPDX-License-Identifier: MIT
# Guest job: perftest Send, RDMA Write and RDMA Read bandwidth tests over
# rdma_cm (-R) between two processes on the guest's eth0 address, captured on
# lo (MTU 1500, offloads off).  Few iterations: the guest runs under TCG.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ip link set lo mtu 1500
ethtool -K lo tso off gso off gro off 2>/dev/null
capture() { # $1 = name, $2 = perftest program
	tcpdump -Z root -i lo -s 0 -U --immediate-mode -w /out/$1.pcap tcp > /out/$1-tcpdump.log 2>&1 &
	td=$!
	$B sleep 2
	$B timeout 90 $2 -R -n 5 -s 4096 > /out/$1-server.log 2>&1 &
	sv=$!
	$B sleep 2
	$B timeout 90 $2 -R -n 5 -s 4096 10.0.2.15 > /out/$1-client.log 2>&1
	echo "perftest $1: exit $?"
	wait $sv
	capture_stop_settled /out/$1.pcap $td
}
capture perftest-send ib_send_bw
capture perftest-write ib_write_bw
capture perftest-read ib_read_bw
