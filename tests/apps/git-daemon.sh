#!/bin/sh
# SPDX-License-Identifier: MIT
# git daemon and git clone git:// (issue 13): for each connection the daemon
# forks and execs `git daemon --serve` with the socket on 0 and 1, which
# execs upload-pack the same way, so the connection crosses two execs (the
# library's handoff); plainly and with both ends in DDPMODE.  The clone
# must hold every commit and file of the repository (fsck, same HEAD, same
# tree checksum), and a second clone runs while the first is in flight.
. "$(dirname "$0")/common.sh"
need git

repo=$tmp/base/repo.git
mkdir -p "$tmp/base" "$tmp/work"
(
	cd "$tmp/work" && git init -q -b main . && git config user.email t@example.org &&
		git config user.name t &&
		for i in 1 2 3 4 5 6; do
			head -c $((i * 300 * 1024)) /dev/urandom >"blob$i" && git add "blob$i" &&
				git commit -q -m "commit $i" || exit 1
		done
) || fail "making the repository"
git clone -q --bare "$tmp/work" "$repo" || fail "the bare repository"
want_head=$(git -C "$repo" rev-parse HEAD)

# tree_sum DIR: one checksum over every file's path and contents.
tree_sum() {
	(cd "$1" && find . -path ./.git -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum) |
		sha256sum | cut -d' ' -f1
}
want_tree=$(tree_sum "$tmp/work")

run() {
	mode=$1
	port=$(free_port)
	wrappers "$mode" "$port" "$mode"
	# shellcheck disable=SC2086
	start "$mode-git-daemon" $srv git daemon --reuseaddr --listen=127.0.0.1 --port="$port" \
		--base-path="$tmp/base" --export-all --informative-errors "$tmp/base"
	wait_listen "$port" "$srv_pid"
	for n in 1 2; do
		rm -rf "$tmp/clone$n"
		# shellcheck disable=SC2086
		$limit $cli git clone -q "git://127.0.0.1:$port/repo.git" "$tmp/clone$n" \
			>"$tmp/clone$n.out" 2>&1 &
		eval "c$n=\$!"
	done
	# shellcheck disable=SC2154 # c1 and c2: set by the eval above
	for n in 1 2; do
		eval "wait \$c$n" || { cat "$tmp/clone$n.out"; fail "$mode: clone $n"; }
		[ "$(git -C "$tmp/clone$n" rev-parse HEAD)" = "$want_head" ] ||
			fail "$mode: clone $n has another HEAD"
		git -C "$tmp/clone$n" fsck --strict --no-progress >/dev/null 2>&1 || fail "$mode: clone $n does not pass fsck"
		[ "$(tree_sum "$tmp/clone$n")" = "$want_tree" ] || fail "$mode: clone $n differs"
	done
	kill -0 "$srv_pid" 2>/dev/null || fail "$mode: git daemon died"
	stop "$srv_pid"
	if [ "$mode" = ddp ]; then
		# shellcheck disable=SC2086
		ddp_engaged $logs
		grep -q 'carried across exec' "$tmp/ddp-server.esock" ||
			fail "ddp: the server's log shows no connection carried across exec"
	fi
}

run plain
run ddp
echo "git daemon: two clones at once of a 6-commit, 6.3 MB repository, plain and DDPMODE: ok"
