# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The start of an interop part whose guest job runs our programs on the verbs backend
# (backend-ops.sh, verbs-sockets.sh, tcpserver-cluster.sh), sourced after |here| is set:
#   . "$here/verbs-part.sh" NAME "WHAT IT TESTS" "$@"
# with the part's own arguments (BUILD_DIR [OUTDIR]).  Sets build, out (OUTDIR, by default
# BUILD_DIR/interop-captures/NAME), RIG_DIR and say; exits 77 (skip) without the verbs
# backend or a prepared rig.  part_run JOB FILES runs jobs/JOB in the guest with FILES
# (RIG_FILES' form: HOST=GUEST ...), its output in OUTDIR, and exits 1 when it fails.
: "${here:?set here before sourcing verbs-part.sh}"
part=$1 what=$2
shift 2
build=$(cd "${1:?usage: $part.sh BUILD_DIR [OUTDIR]}" && pwd)
out=${2:-$build/interop-captures/$part}
export RIG_DIR=${RIG_DIR:-$build/interop-rig}

say() { echo "interop: $*"; }
grep -q '^#define ESOCK_HAVE_VERBS 1' "$build/config.h" ||
	{ say "SKIP: $what: built without the verbs backend"; exit 77; }
[ -f "$RIG_DIR/groot.stamp" ] || { say "SKIP: $what: the siw rig is not prepared"; exit 77; }

part_run() {
	rm -rf "$out"
	RIG_FILES=$2 bash "$here/siw-rig.sh" run "$here/jobs/$1" "$out" default ||
		{ say "FAIL $what: the guest job failed"; exit 1; }
}
