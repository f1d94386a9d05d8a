# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: rping against esock's iwping on the host (tests/interop/iwping-vs-rping.sh
# writes HOST, ME and PLAN in front of this file, and RPING=/iwping with
# ESOCK_BACKEND=verbs when our iwping on the verbs backend stands in for rping).  eth0 sits on a tap device whose
# other end is the host's network namespace.  One PLAN line per case:
#   NAME ROLE SIW SIZE COUNT PORT
# ROLE s: rping -s here on PORT; "RIG-STEP serve NAME" on the console tells the host
#         to run iwping -c against it (or "RIG-STEP noserve NAME" if it never listens).
# ROLE c: rping -c here against the iwping -s the host started on HOST:PORT.
# SIW (default|crc) is the siw variant the case needs; switching variants reloads siw.
# Each case ends with "RIG-STEP end NAME EXIT"; logs go to /out/NAME-rping.log,
# and its capture (tcpdump on eth0, the case's port) to /out/NAME.pcap.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ethtool -K eth0 tso off gso off gro off 2>/dev/null
step() { echo "RIG-STEP $*"; }

td=""
capture_start() { # $1 = case name, $2 = port: tcpdump on eth0 until capture_stop
	tcpdump -Z root -i eth0 -s 0 -U --immediate-mode -w "/out/$1.pcap" tcp port "$2" > "/out/$1-tcpdump.log" 2>&1 &
	td=$!
	n=0 # tcpdump says "listening on" once the capture runs
	while [ $n -lt 100 ] && ! $B grep -q 'listening on' "/out/$1-tcpdump.log"; do
		$B usleep 100000
		n=$((n + 1))
	done
}
capture_stop() { # $1 = case name
	capture_stop_settled "/out/$1.pcap" "$td"
}

echo "$PLAN" > /tmp/plan
while read -r name role siw size count port; do
	[ -n "$name" ] || continue
	use_siw "$siw"
	capture_start "$name" "$port"
	log=/out/$name-rping.log
	if [ "$role" = s ]; then
		$B timeout 90 ${RPING:-rping} -s -a "$ME" -p "$port" -S "$size" -V -v < /dev/null > "$log" 2>&1 &
		pid=$!
		if listening "$port"; then step serve "$name"; else step noserve "$name"; fi
		wait "$pid"
		rc=$?
	else
		$B timeout 90 ${RPING:-rping} -c -a "$HOST" -p "$port" -S "$size" -C "$count" -V -v < /dev/null > "$log" 2>&1
		rc=$?
	fi
	capture_stop "$name"
	step end "$name" "$rc"
done < /tmp/plan
exit 0
