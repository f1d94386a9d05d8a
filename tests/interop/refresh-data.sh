#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Remakes the kernel siw captures kept in tests/data (see docs/interop.md).
# Run from the top of the tree; takes a few minutes (downloads on first use).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rig="$top/tests/interop/siw-rig.sh"
bash "$rig" prepare
bash "$rig" run "$top/tests/interop/jobs/rping-capture.sh" "$tmp/default" default
bash "$rig" run "$top/tests/interop/jobs/rping-capture.sh" "$tmp/crc" crc
bash "$rig" run "$top/tests/interop/jobs/perftest-capture.sh" "$tmp/perftest" default
cp "$tmp/default/rping.pcap" "$top/tests/data/siw-rping.pcap"
cp "$tmp/default/rping-term.pcap" "$top/tests/data/siw-rping-term.pcap"
cp "$tmp/crc/rping.pcap" "$top/tests/data/siw-rping-crc.pcap"
for t in send write read; do
	cp "$tmp/perftest/perftest-$t.pcap" "$top/tests/data/siw-perftest-$t.pcap"
done
ls -l "$top"/tests/data/siw-*.pcap
