# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: kpatch/linux 0004 on siw as shipped.  op-matrix's client on the verbs backend
# splits its Sends and Writes with a zero-length SGE first; siw as shipped dereferences NULL
# in siw_tx_hdt.  The oops panics the guest (panic_on_oops; qemu then ends at once), so this
# job has a boot of its own and never reaches its end: siw-patches.sh reads the console.
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ulimit -l unlimited 2>/dev/null
echo 1 > /proc/sys/kernel/panic_on_oops
port=7700
ESOCK_BACKEND=user ESOCK_PEER=siw $B timeout 120 /op-matrix -s 10.0.2.15 $port \
	> /out/oops-server.log 2>&1 &
listening $port
echo "RIG-OOPS starting the client"
OPM_SPLIT=zero-first ESOCK_BACKEND=verbs $B timeout 120 /op-matrix -c 10.0.2.15 $port \
	> /out/oops-client.log 2>&1
echo "RIG-OOPS the client ended ($?) and the kernel did not"
exit 0
