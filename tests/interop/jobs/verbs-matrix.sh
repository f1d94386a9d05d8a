# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: esock's iwping on the verbs backend (kernel siw through rdma-core)
# against rping and against iwping on the user-level backend, both roles, in the
# guest (verbs-matrix.sh on the host puts /iwping here and reads the results).
# One line per case on the console:  RIG-CASE NAME SERVER CLIENT SIZE EXIT
# and the two sides' logs in /out/NAME-server.log and /out/NAME-client.log.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ME=10.0.2.15
COUNT=5
port=7300

# A side: rping, or iwping on a backend (verbs, or user with a CRC choice).
serve() { # $1 = side, $2 = port, $3 = size, $4 = log
	case $1 in
	rping) $B timeout 120 rping -s -a $ME -p "$2" -S "$3" -V -v </dev/null >"$4" 2>&1 & ;;
	verbs) ESOCK_BACKEND=verbs $B timeout 120 /iwping -s -d -a $ME -p "$2" -S "$3" -V -v </dev/null >"$4" 2>&1 & ;;
	user*) ESOCK_BACKEND=user ESOCK_PEER=siw $B timeout 120 /iwping -s -d ${1#user} -a $ME -p "$2" -S "$3" -V -v </dev/null >"$4" 2>&1 & ;;
	esac
	spid=$!
}
client() { # $1 = side, $2 = port, $3 = size, $4 = log
	case $1 in
	rping) $B timeout 120 rping -c -a $ME -p "$2" -S "$3" -C $COUNT -V -v </dev/null >"$4" 2>&1 ;;
	verbs) ESOCK_BACKEND=verbs $B timeout 120 /iwping -c -d -a $ME -p "$2" -S "$3" -C $COUNT -V -v </dev/null >"$4" 2>&1 ;;
	user*) ESOCK_BACKEND=user ESOCK_PEER=siw $B timeout 120 /iwping -c -d ${1#user} -a $ME -p "$2" -S "$3" -C $COUNT -V -v </dev/null >"$4" 2>&1 ;;
	esac
}

attempt() { # $1 = name, $2 = server side, $3 = client side, $4 = size
	serve "$2" $port "$4" "/out/$1-server.log"
	against $spid $port client "$3" $port "$4" "/out/$1-client.log"
	rc=$?
	port=$((port + 1))
}
# A case that fails is run once more (twice, guest-lib.sh): siw as shipped sometimes loses
# a passive connection's establishment (the accept race kpatch/linux/0003 fixes; 0 to 1 in
# 40 seen): the server never hears of the connection its client made.  Twice in a row is a
# failure.
run_case() { # $1 = name, $2 = server side, $3 = client side, $4 = size
	twice "$1" attempt "$@"
	echo "RIG-CASE $1 $2 $3 $4 $rc"
}

for size in 64 65535; do
	run_case "verbs-rping-$size" verbs rping $size
	run_case "rping-verbs-$size" rping verbs $size
	run_case "verbs-user-$size" verbs "user--no-crc" $size
	run_case "verbs-usercrc-$size" verbs "user--crc" $size
	run_case "user-verbs-$size" "user--no-crc" verbs $size
	run_case "usercrc-verbs-$size" "user--crc" verbs $size
	run_case "verbs-verbs-$size" verbs verbs $size
done
exit 0
