#!/bin/sh
# SPDX-License-Identifier: MIT
# OpenSSH's sshd in its default process model (issue 13), with a throwaway
# host key and client key: for each connection the listener forks and
# re-executes itself with the socket on 0 and 1 (the exec handoff); that
# image exchanges the banners, forks the sandboxed pre-auth child (seccomp:
# restricted system calls) for key exchange and authentication, and after
# it ended forks the post-auth child, which carries on the connection where
# the pre-auth child left it (the state shared across fork).  ssh runs a
# command, scp copies a 50 MB file each way: sha256 equal; plainly and with
# both ends in DDPMODE.  Needs root (sshd's privilege separation).
. "$(dirname "$0")/common.sh"
need ssh scp ssh-keygen
sshd=/usr/sbin/sshd
[ -x "$sshd" ] || { echo "SKIP: $sshd not installed (bash scripts/deps.sh test)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: sshd's privilege separation needs root"; exit 77; }
id sshd >/dev/null 2>&1 || { echo "SKIP: no sshd user (openssh-server's)"; exit 77; }
# The privilege separation directory (the package's tmpfiles make it at boot).
mkdir -p /run/sshd && chmod 755 /run/sshd

ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key" || exit 99
ssh-keygen -q -t ed25519 -N '' -f "$tmp/client_key" || exit 99
cp "$tmp/client_key.pub" "$tmp/authorized_keys"
chmod 600 "$tmp/authorized_keys"
random_file "$tmp/up.bin" 51200
want=$(sum "$tmp/up.bin")

run() {
	mode=$1
	port=$(free_port)
	cat >"$tmp/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/host_key
PidFile none
AuthorizedKeysFile $tmp/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
Subsystem sftp internal-sftp
EOF
	wrappers "$mode" "$port" "$mode"
	# sshd re-executes itself by its absolute path: the default, as a user runs it.
	# shellcheck disable=SC2086
	start "$mode-sshd" $srv "$sshd" -D -e -f "$tmp/sshd_config"
	wait_listen "$port" "$srv_pid"
	opts="-i $tmp/client_key -o IdentitiesOnly=yes -o StrictHostKeyChecking=no
		-o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR"
	# shellcheck disable=SC2086
	out=$($limit $cli ssh $opts -p "$port" root@127.0.0.1 'echo esock-$((6 * 7))' 2>"$tmp/ssh.err") ||
		fail "$mode: ssh: $(cat "$tmp/ssh.err")"
	[ "$out" = esock-42 ] || fail "$mode: ssh printed '$out'"
	rm -f "$tmp/there.bin" "$tmp/back.bin"
	# shellcheck disable=SC2086
	$limit $cli scp -q $opts -P "$port" "$tmp/up.bin" "root@127.0.0.1:$tmp/there.bin" 2>"$tmp/scp.err" ||
		fail "$mode: scp up: $(cat "$tmp/scp.err")"
	[ "$(sum "$tmp/there.bin")" = "$want" ] || fail "$mode: the uploaded file differs"
	# shellcheck disable=SC2086
	$limit $cli scp -q $opts -P "$port" "root@127.0.0.1:$tmp/there.bin" "$tmp/back.bin" 2>"$tmp/scp.err" ||
		fail "$mode: scp down: $(cat "$tmp/scp.err")"
	[ "$(sum "$tmp/back.bin")" = "$want" ] || fail "$mode: the downloaded file differs"
	kill -0 "$srv_pid" 2>/dev/null || fail "$mode: sshd died"
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
echo "sshd: ssh runs a command, scp copies 50 MB each way (sha256 equal), plain and DDPMODE: ok"
