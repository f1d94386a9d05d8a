#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds esock out of tree in $BUILD (default: build/).
#   build.sh [configure options...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
cd "$top"
[ -x configure ] || autoreconf -fi >/dev/null
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ]; then
	"$top/configure" -q "$@"
fi
make -s -j"$(nproc)"
