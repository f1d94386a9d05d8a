#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/deps.sh against a package manager that is busy: a fake apt-get
# (first in PATH) fails twice as apt does while another apt holds its lock,
# then succeeds; a fake dpkg-query says one package is missing.  deps.sh must
# wait for the lock (DPkg::Lock::Timeout on every apt-get call), try again,
# and succeed.
set -u
top=${srcdir:-.}
[ -f "$top/scripts/deps.sh" ] || { echo "SKIP: scripts/deps.sh not found"; exit 77; }
command -v bash >/dev/null 2>&1 || { echo "SKIP: no bash"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (deps.sh would call sudo)"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/apt-get" <<'FAKE'
#!/bin/sh
echo "$*" >>"$FAKE_LOG"
n=$(cat "$FAKE_COUNT" 2>/dev/null || echo 0)
echo $((n + 1)) >"$FAKE_COUNT"
if [ "$n" -lt 2 ]; then
	echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
	exit 100
fi
exit 0
FAKE
cat >"$tmp/dpkg-query" <<'FAKE'
#!/bin/sh
case "$*" in *socat*) echo "unknown ok not-installed" ;; *) echo "install ok installed" ;; esac
FAKE
chmod +x "$tmp/apt-get" "$tmp/dpkg-query"
FAKE_LOG=$tmp/log FAKE_COUNT=$tmp/count ESOCK_APT_RETRY_S=0 PATH="$tmp:$PATH" \
	bash "$top/scripts/deps.sh" test >"$tmp/out" 2>&1
st=$?
[ "$st" -eq 0 ] || { cat "$tmp/out" "$tmp/log"; echo "FAIL: deps.sh exited $st behind a busy apt"; exit 1; }
grep -q 'install .*socat' "$tmp/log" || { cat "$tmp/log"; echo "FAIL: socat was not installed"; exit 1; }
if grep -v -q 'DPkg::Lock::Timeout=' "$tmp/log"; then
	cat "$tmp/log"; echo "FAIL: an apt-get call does not wait for the lock"; exit 1
fi
echo "deps-lock: deps.sh waits for a busy apt and installs what is missing: ok"
