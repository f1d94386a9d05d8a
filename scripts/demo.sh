#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README command 1: install what is missing, build, run the main demo.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/scripts/deps.sh" build
bash "$top/scripts/build.sh"
"${BUILD:-$top/build}/tools/esock-demo" "$@"
