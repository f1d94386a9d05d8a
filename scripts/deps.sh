#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages esock needs that are not installed yet.
#   deps.sh build   - to build the library and tools
#   deps.sh test    - also what the test suite needs (tshark, valgrind, clang,
#                     and the unmodified programs tests/apps/ runs under esock-run)
# Needs root (or sudo) only when something is missing.
set -euo pipefail

build_pkgs=(build-essential autoconf automake libtool autoconf-archive pkg-config
	libisal-dev check libpcap-dev zlib1g-dev
	libibverbs-dev librdmacm-dev ibverbs-providers)
test_pkgs=(tshark valgrind clang libclang-rt-dev
	nginx-light curl redis-server redis-tools iperf3 socat rsync nftables iproute2
	lighttpd apache2 apache2-utils memcached haproxy nodejs python3 postgresql git
	openssh-server openssh-client)

want=("${build_pkgs[@]}")
[ "${1:-build}" = test ] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "esock: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
# Another apt or dpkg may be running (unattended-upgrades, a second install):
# apt waits up to 10 minutes for its locks (DPkg::Lock::Timeout), and a step
# that still fails (the lists lock, a mirror hiccup) is tried again.
lock=(-o DPkg::Lock::Timeout=600)
retry() {
	local i
	for i in 1 2 3 4 5; do
		"$@" && return 0
		echo "esock: '$*' failed (another package manager running?); again in ${ESOCK_APT_RETRY_S:-15} s" >&2
		sleep "${ESOCK_APT_RETRY_S:-15}"
	done
	"$@"
}
# Servers (nginx, apache2, redis, memcached, ...) are only run by the tests, on
# ports of their own: their packages must not start them (policy-rc.d 101:
# "action forbidden"), unless the machine already has such a policy.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod 755 "$policy"
	trap '$SUDO rm -f "$policy"' EXIT
fi
retry $SUDO apt-get "${lock[@]}" update -qq
retry $SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
