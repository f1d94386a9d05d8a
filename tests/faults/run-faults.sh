#!/bin/sh
# SPDX-License-Identifier: MIT
# The fault stage: DDPMODE transfers between two hosts of our own (network
# namespaces joined by a veth pair, addresses 10.77.0.1 and .2 that exist only
# there) while the network or a peer misbehaves.  socat moves a file, both
# ends under esock-run in DDPMODE.  Every run is bounded by timeout; the
# verdict is "data identical" or "a clear error", never a hang, never a short
# file that looks complete.
#   1. 5 % of the segments dropped in each direction (nftables numgen), 8 MiB
#   2. MSS 536 (the veth MTU is 576), 8 MiB
#   3. loss and MSS 536 together, 4 MiB
#   4. the receiver killed (SIGKILL) mid-transfer: the sender ends with an error
#   5. the sender killed (SIGKILL) mid-transfer: the receiver ends, with a prefix
#      of the data at most
# Reordering needs sch_netem, which this kernel lacks; TCP hides reordering
# from MPA anyway.  RST and FIN inside an FPDU and MPA peers that stall at each
# step are exercised byte by byte by check_sock_peers and check_ep_security.
# Needs root, ip netns and nft; exits 77 (skip) with the reason otherwise.
set -u
b=${top_builddir:-.}
esock_run=$b/tools/esock-run/esock-run
[ -x "$esock_run" ] || { echo "SKIP: $esock_run not built"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the fault stage needs root (network namespaces)"; exit 77; }
for p in ip nft socat sha256sum timeout; do
	command -v "$p" >/dev/null 2>&1 || { echo "SKIP: $p missing"; exit 77; }
done
A=esock-fa-$$
B=esock-fb-$$
tmp=$(mktemp -d) || exit 99
pids=
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	pkill -9 -f "sleep 100.$$" 2>/dev/null
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.err "$tmp"/*.esock; do
		[ -s "$f" ] && { echo "--- $(basename "$f")"; tail -n 15 "$f"; }
	done
	exit 1
}

if ! ip netns add "$A" 2>"$tmp/netns.err" || ! ip netns add "$B" 2>>"$tmp/netns.err"; then
	echo "SKIP: cannot make network namespaces: $(cat "$tmp/netns.err")"
	exit 77
fi
ip link add va netns "$A" type veth peer name vb netns "$B" || fail "veth pair"
ip -n "$A" addr add 10.77.0.1/24 dev va
ip -n "$B" addr add 10.77.0.2/24 dev vb
for ns in "$A" "$B"; do
	ip -n "$ns" link set lo up
done
ip -n "$A" link set va up
ip -n "$B" link set vb up
ip netns exec "$A" nft add table inet fault 2>"$tmp/nft.err" ||
	{ echo "SKIP: nftables does not work here: $(cat "$tmp/nft.err")"; exit 77; }
ip netns exec "$B" nft add table inet fault

# loss PERCENT: drop that share of incoming TCP segments on both hosts (0: none).
loss() {
	for ns in "$A" "$B"; do
		ip netns exec "$ns" nft flush table inet fault
		[ "$1" -gt 0 ] || continue
		ip netns exec "$ns" nft add chain inet fault in '{ type filter hook input priority 0; }'
		ip netns exec "$ns" nft add rule inet fault in meta l4proto tcp numgen random mod 100 \< "$1" counter drop
	done
}

# dropped: segments the loss rules dropped so far (both hosts).
dropped() {
	n=0
	for ns in "$A" "$B"; do
		k=$(ip netns exec "$ns" nft list table inet fault 2>/dev/null | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
		n=$((n + ${k:-0}))
	done
	echo "$n"
}

# mtu N: the veth MTU on both hosts (576: MSS 536).
mtu() {
	ip -n "$A" link set va mtu "$1"
	ip -n "$B" link set vb mtu "$1"
}

head -c $((8 << 20)) /dev/urandom >"$tmp/in8" || exit 99
head -c $((4 << 20)) "$tmp/in8" >"$tmp/in4"
port=7390

# server NAME: socat in A writes what it receives on $port to $tmp/NAME.out; sets srv.
server() {
	port=$((port + 1))
	rm -f "$tmp/$1.out"
	ip netns exec "$A" timeout 120 "$esock_run" --ddp="$port" --log=info,"$tmp/$1-server.esock" \
		socat -u TCP-LISTEN:"$port",bind=10.77.0.1,reuseaddr OPEN:"$tmp/$1.out",creat,trunc \
		2>"$tmp/$1-server.err" &
	srv=$!
	pids="$pids $srv"
	i=0
	until ip netns exec "$A" sh -c "grep -q ':$(printf %04X "$port") .* 0A ' /proc/net/tcp"; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "$1: the server does not listen"
		sleep 0.1
	done
}

# client NAME FILE [LIMIT]: socat in B sends FILE; its exit status in cst.
client() {
	ip netns exec "$B" timeout "${3:-120}" "$esock_run" --ddp="$port" \
		--log=info,"$tmp/$1-client.esock" socat -u OPEN:"$2" TCP:10.77.0.1:"$port" \
		2>"$tmp/$1-client.err"
	cst=$?
}

# wait_pid PID SECONDS: 0 once PID ended (its status in wst), 1 if it did not.
wait_pid() {
	i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le $(($2 * 10)) ] || return 1
		sleep 0.1
	done
	wait "$1"
	wst=$?
	return 0
}

# transfer NAME FILE: the whole file arrives, identical.
transfer() {
	server "$1"
	t0=$(date +%s)
	client "$1" "$2"
	[ "$cst" -eq 0 ] || fail "$1: the sending socat exited $cst"
	wait_pid "$srv" 60 || fail "$1: the receiving socat did not end"
	[ "$wst" -eq 0 ] || fail "$1: the receiving socat exited $wst"
	cmp -s "$2" "$tmp/$1.out" || fail "$1: the data differs ($(wc -c <"$tmp/$1.out") octets arrived)"
	grep -q "DDPMODE connected" "$tmp/$1-client.esock" || fail "$1: not in DDPMODE"
	echo "faults: $1: $(($(wc -c <"$2") >> 20)) MiB identical in $(($(date +%s) - t0)) s"
}

loss 5
transfer loss5 "$tmp/in8"
d=$(dropped)
[ "$d" -gt 0 ] || fail "loss5: the loss rules dropped nothing"
echo "faults: loss5: $d segments dropped on the way"
loss 0
mtu 576
transfer mss536 "$tmp/in8"
grep -q "MULPDU 5[0-9][0-9]," "$tmp/mss536-client.esock" || fail "mss536: the MULPDU does not follow MSS 536"
loss 3
transfer loss3-mss536 "$tmp/in4"
d=$(dropped)
[ "$d" -gt 0 ] || fail "loss3-mss536: the loss rules dropped nothing"
loss 0
mtu 1500

# The receiver is killed while the sender is blocked on a full window (the
# receiver's socat passes the data on to a process that reads nothing).
port=$((port + 1))
ip netns exec "$A" timeout 120 "$esock_run" --ddp="$port" --log=info,"$tmp/kr-server.esock" \
	socat -u TCP-LISTEN:"$port",bind=10.77.0.1,reuseaddr SYSTEM:"sleep 100.$$" \
	2>"$tmp/kr-server.err" &
srv=$!
pids="$pids $srv"
sleep 0.5
ip netns exec "$B" timeout 60 "$esock_run" --ddp="$port" --log=info,"$tmp/kr-client.esock" \
	sh -c "cat '$tmp/in8' '$tmp/in8' '$tmp/in8' '$tmp/in8' | socat -u - TCP:10.77.0.1:$port" \
	2>"$tmp/kr-client.err" &
cli=$!
pids="$pids $cli"
sleep 1.5
kill -0 "$cli" 2>/dev/null || fail "kill-receiver: the sender did not wait for the stalled receiver"
pkill -9 -f "TCP-LISTEN:$port,bind=10.77.0.1"
wait_pid "$cli" 30 || fail "kill-receiver: the sender still runs 30 s after the receiver died"
cst=$wst
[ "$cst" -ne 0 ] && [ "$cst" -ne 124 ] ||
	fail "kill-receiver: the sender exited $cst (0: it saw no error; 124: it hung)"
grep -q "Broken pipe\|reset" "$tmp/kr-client.err" || fail "kill-receiver: the sender's error is not EPIPE/ECONNRESET"
wait_pid "$srv" 10
pkill -9 -f "sleep 100.$$" 2>/dev/null
echo "faults: kill-receiver: the sender ended with an error (exit $cst: $(tail -n 1 "$tmp/kr-client.err" | sed 's/.*: //'))"

# The sender is killed while its input is open (8 MiB sent, more may come).
server kill-sender
ip netns exec "$B" timeout 60 "$esock_run" --ddp="$port" --log=info,"$tmp/ks-client.esock" \
	sh -c "(cat '$tmp/in8'; sleep 100.$$) | socat -u - TCP:10.77.0.1:$port" \
	2>"$tmp/ks-client.err" &
cli=$!
pids="$pids $cli"
i=0
while [ "$(cat "$tmp/kill-sender.out" 2>/dev/null | wc -c)" -lt $((8 << 20)) ] && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
pkill -9 -f "TCP:10.77.0.1:$port"
pkill -9 -f "sleep 100.$$" 2>/dev/null
wait_pid "$srv" 30 || fail "kill-sender: the receiver still runs 30 s after the sender died"
sst=$wst
got=$(wc -c <"$tmp/kill-sender.out")
head -c "$got" "$tmp/in8" | cmp -s - "$tmp/kill-sender.out" ||
	fail "kill-sender: what arrived is not a prefix of what was sent"
wait_pid "$cli" 10
echo "faults: kill-sender: the receiver ended (exit $sst) with $((got >> 10)) KiB, a prefix of the data"
echo "faults: loss, MSS 536, both together, either end killed: ok"
