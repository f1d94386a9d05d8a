#!/bin/sh
# SPDX-License-Identifier: MIT
# Pass-through: an rsync daemon on 127.0.0.1 serves a directory tree (files of
# many sizes, an empty file, a symlink, nested directories); rsync copies it,
# once plainly and once with both ends under esock-run.  diff -r judges.
. "$(dirname "$0")/common.sh"
need rsync diff

src=$tmp/src
mkdir -p "$src/a/b/c" "$src/empty-dir" || exit 99
random_file "$src/big" 2048
random_file "$src/a/mid" 300
random_file "$src/a/b/small" 1
: >"$src/a/b/c/empty"
echo hello >"$src/a/b/c/text"
ln -s ../big "$src/a/link"

# run MODE: a daemon, a copy, a comparison.
run() {
	wrap=$1
	port=$(free_port)
	# The daemon runs as whoever runs the test (as root it would switch to nobody).
	cat >"$tmp/rsyncd.conf" <<EOF2
use chroot = no
uid = $(id -u)
gid = $(id -g)
pid file = $tmp/rsyncd.pid
lock file = $tmp/rsyncd.lock
log file = $tmp/rsyncd.log
[tree]
	path = $src
	read only = yes
EOF2
	rm -f "$tmp/rsyncd.pid"
	# shellcheck disable=SC2086
	start rsyncd $wrap rsync --daemon --no-detach --address=127.0.0.1 --port="$port" \
		--config="$tmp/rsyncd.conf"
	wait_listen "$port" "$srv_pid"
	rm -rf "$tmp/dst"
	# shellcheck disable=SC2086
	$limit $wrap rsync -a "rsync://127.0.0.1:$port/tree/" "$tmp/dst/" 2>"$tmp/rsync.err" ||
		fail "${wrap:-plain} rsync"
	diff -r --no-dereference "$src" "$tmp/dst" >"$tmp/diff.err" 2>&1 ||
		fail "${wrap:-plain}: the copy differs"
	stop "$srv_pid"
}

run ""
run "$esock_run"
echo "rsync-daemon: a 2.3 MiB tree, plain and under esock-run: identical"
