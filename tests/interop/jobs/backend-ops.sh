# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: /op-matrix (every operation, 3 QPs, 0 B to 16 MiB, data checked)
# between the user-level and the verbs backend, each as server and as client,
# with siw as shipped (CRC as the initiator asks) and the variant that asks for
# CRC.  One line per case: RIG-CASE NAME SIW SERVER CLIENT EXIT; logs in /out.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ME=10.0.2.15
port=7600
ulimit -l unlimited 2>/dev/null # (verbs pins registered memory)
opm() { # $1 = backend, $2 = -s|-c, $3 = log
	ESOCK_BACKEND=$1 ESOCK_PEER=siw $B timeout 300 /op-matrix "$2" $ME $port > "$3" 2>&1
}
for siw in default crc; do
	use_siw "$siw"
	for srv in user verbs; do
		for cli in user verbs; do
			name=$siw-$srv-$cli
			opm "$srv" -s "/out/$name-server.log" &
			against $! $port opm "$cli" -c "/out/$name-client.log"
			echo "RIG-CASE $name $siw $srv $cli $?"
			port=$((port + 1))
		done
	done
done
exit 0
