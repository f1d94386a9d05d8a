# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Helpers for guest jobs (siw-rig.sh puts this file in the guest as /guest-lib.sh;
# a job sources it): waiting for a listener, switching the siw variant.
B=/bin/busybox

listening() { # $1 = port: wait up to 15 s for a TCP listener (siw's kernel socket shows too)
	hex=$($B printf ':%04X 00000000:0000 0A' "$1")
	n=0
	while [ $n -lt 150 ]; do
		$B grep -q "$hex" /proc/net/tcp && return 0
		$B usleep 100000
		n=$((n + 1))
	done
	return 1
}

against() { # $1 = a server's pid, $2 = its port, then the client command
	# The client's exit once the server listens (99 if it never does), else the server's.
	sp_=$1 p_=$2
	shift 2
	if listening "$p_"; then
		"$@"
		rc_=$?
	else
		rc_=99
	fi
	wait "$sp_"
	src_=$?
	[ $rc_ -eq 0 ] && rc_=$src_
	return $rc_
}

twice() { # [-if PATTERN] $1 = a case's name, then a command that runs it once on $port and sets rc
	# A case that fails is run once more, said on the console (RIG-RETRY NAME EXIT), its
	# first logs and capture kept (NAME-server-try1.log, NAME-client-try1.log,
	# NAME-try1.pcap); rc is the second's.  With -if, only a failure whose logs show
	# PATTERN runs again.
	pat_=
	[ "$1" = -if ] && { pat_=$2; shift 2; }
	tw_=$1
	shift
	"$@"
	[ "$rc" = 0 ] && return 0
	[ -z "$pat_" ] || $B grep -q "$pat_" "/out/$tw_-server.log" "/out/$tw_-client.log" 2>/dev/null || return 0
	echo "RIG-RETRY $tw_ $rc"
	mv "/out/$tw_-server.log" "/out/$tw_-server-try1.log" 2>/dev/null
	mv "/out/$tw_-client.log" "/out/$tw_-client-try1.log" 2>/dev/null
	mv "/out/$tw_.pcap" "/out/$tw_-try1.pcap" 2>/dev/null
	"$@"
}

use_siw() { # $1 = default|crc: reload siw as that variant unless it is loaded
	[ "$($B cat /sys/module/siw/version 2>/dev/null)" = "esock-rig-$1" ] && return 0
	rdma link delete siw0
	$B rmmod siw
	$B insmod "/siw-$1.ko" || echo "RIG: insmod /siw-$1.ko failed"
	rdma link add siw0 type siw netdev eth0 || echo "RIG: rdma link add failed"
	echo "RIG: siw now $($B cat /sys/module/siw/version)"
}

capture_stop_settled() { # $1 = pcap file, $2 = tcpdump's pid
	# Under TCG tcpdump lags: stop it only once its file has not grown for a
	# second (at most 15 s), or packets still in its buffer never reach the
	# file (a capture once held 5 of its 14 packets: no FPDU at all).
	last=-1 n=0
	while [ $n -lt 15 ]; do
		size=$($B stat -c %s "$1" 2>/dev/null || echo 0)
		[ "$size" = "$last" ] && break
		last=$size
		$B sleep 1
		n=$((n + 1))
	done
	kill "$2" 2>/dev/null
	wait "$2" 2>/dev/null
}
