# SPDX-License-Identifier: MIT
# shellcheck shell=dash
# Guest job: esock-bench on the user-level backend and on the verbs backend (kernel
# siw), same guest, same run, alternated: /out/user-N.csv and /out/verbs-N.csv
# (backend-bench.sh on the host puts /esock-bench here and compares them).
# shellcheck source=/dev/null # tests/interop/guest-lib.sh, in the guest
. /guest-lib.sh
ROUNDS=${ROUNDS:-2}
n=1
while [ $n -le "$ROUNDS" ]; do
	for be in user verbs; do
		ESOCK_BACKEND=$be $B timeout 300 /esock-bench --bw --lat --ops send,write,read \
			--bw-sizes 64K,1M --lat-sizes 64,4K --iters 1000 --seconds 1 --crc off \
			--cpus none --addr 10.0.2.15 --csv > "/out/$be-$n.csv" 2> "/out/$be-$n.log"
		echo "RIG: $be round $n exit $?"
	done
	n=$((n + 1))
done
exit 0
