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
for v in default patched; do
	use_siw "$v"
	tcpdump -Z root -i lo -s 0 -U --immediate-mode -w "/out/term-$v.pcap" tcp port $port \
		> "/out/term-$v-tcpdump.log" 2>&1 &
	td=$!
	$B sleep 2
	rping -s -a 10.0.2.15 -p $port -C 3 -S 64 -v > "/out/term-$v-server.log" 2>&1 &
	sv=$!
	listening $port
	$B timeout 30 rping -c -a 10.0.2.15 -p $port -C 3 -S 100 -v > "/out/term-$v-client.log" 2>&1
	echo "RIG: rping client ($v) exit $?"
	$B sleep 1
	kill $sv 2>/dev/null
	capture_stop_settled "/out/term-$v.pcap" $td
	port=$((port + 1))

	tcpdump -Z root -i lo -s 0 -U --immediate-mode -w "/out/badread-$v.pcap" tcp port $port \
		> "/out/badread-$v-tcpdump.log" 2>&1 &
	td=$!
	$B sleep 2
	rping -s -a 10.0.2.15 -p $port -C 1 -S 64 -v > "/out/badread-$v-server.log" 2>&1 &
	sv=$!
	listening $port
	ESOCK_BACKEND=user $B timeout 30 /bad-read 10.0.2.15 $port 4096 > "/out/badread-$v-client.log" 2>&1
	echo "RIG: bad-read ($v) exit $?"
	$B sleep 1
	kill $sv 2>/dev/null
	capture_stop_settled "/out/badread-$v.pcap" $td
	port=$((port + 1))
done
exit 0
