#!/bin/sh
# SPDX-License-Identifier: MIT
# esock-run from the build tree: its options, the environment it hands to the
# command (LD_PRELOAD prepended, ESOCK_DDPMODE, ESOCK_LOG), the library it
# finds by itself or through ESOCK_LIB, and its exit codes.
set -u
run=${top_builddir:-.}/tools/esock-run/esock-run
[ -x "$run" ] || { echo "SKIP: $run not built"; exit 77; }
lib=$(dirname "$run")/../../.libs/libesock.so
fail() { echo "FAIL: $*"; exit 1; }
# The lookup itself is under test: no override from outside.
unset ESOCK_LIB

"$run" --help | grep -q '^usage: esock-run ' || fail "--help"
"$run" --version | grep -q '^esock-run (esock) [0-9]' || fail "--version"
"$run" --bogus true 2>/dev/null
[ $? -eq 2 ] || fail "an unknown option does not exit 2"
"$run" 2>/dev/null
[ $? -eq 2 ] || fail "no command does not exit 2"

"$run" --ddp= true 2>/dev/null && fail "--ddp= with nothing accepted"
ESOCK_LIB=/nonexistent/libesock.so "$run" true 2>/dev/null
[ $? -eq 127 ] || fail "a missing library does not exit 127"
"$run" --tcpserver=/nonexistent/tcpserverd.sock true 2>/dev/null
[ $? -eq 2 ] || fail "--tcpserver without a tcpserverd there does not exit 2"
"$run" --backend=rnic true 2>/dev/null
[ $? -eq 2 ] || fail "--backend with no such backend does not exit 2"

# A sanitizer build's library refuses to be preloaded into an uninstrumented
# program (the ASan runtime must come first): nothing more to run then.
if ldd "$lib" 2>/dev/null | grep -q libasan; then
	echo "SKIP: libesock.so is built with sanitizers; only the options were checked"
	exit 77
fi

# What the command sees.  env prints the environment without opening a socket.
show() { "$run" "$@" env | grep -E '^(LD_PRELOAD|ESOCK_DDPMODE|ESOCK_LOG)=' | sort | tr '\n' ' '; }
env_ddp=$(unset ESOCK_DDPMODE; show --ddp --)
case $env_ddp in *"ESOCK_DDPMODE=all "*) ;; *) fail "--ddp: $env_ddp" ;; esac
env_ports=$(show --ddp=5201,7000-7010 --log=info)
case $env_ports in
*"ESOCK_DDPMODE=5201,7000-7010 ESOCK_LOG=info LD_PRELOAD=/"*"/.libs/libesock.so "*) ;;
*) fail "--ddp=PORTS --log: $env_ports" ;;
esac
env_be=$(unset ESOCK_BACKEND; "$run" --backend=verbs env | grep '^ESOCK_BACKEND=')
[ "$env_be" = ESOCK_BACKEND=verbs ] || fail "--backend=verbs: $env_be"
# --tcpserver=PATH:OPTS (PATH must be a socket: this directory's own, made by python).
tsock=$(mktemp -u /tmp/esock-run-test.XXXXXX)
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$tsock" ||
	fail "cannot make a Unix socket"
env_ts=$("$run" --tcpserver="$tsock:async,eagerrx" env | grep -E '^ESOCK_TCPSERVER' | sort | tr '\n' ' ')
env_sh=$("$run" --tcpserver="$tsock:all,share=100" env | grep -E '^ESOCK_TCPSERVER_OPT')
[ "$env_sh" = "ESOCK_TCPSERVER_OPT=all,share=100" ] || fail "--tcpserver=...:all,share=100: $env_sh"
# A word that means nothing is refused before the command runs.
for bad in "asnyc" "all,share=abc" "share=101" "share=" "share=-5" "all,eagerrx,x"; do
	"$run" --tcpserver="$tsock:$bad" true 2>/dev/null
	[ $? -eq 2 ] || fail "--tcpserver options '$bad' accepted"
done
rm -f "$tsock"
[ "$env_ts" = "ESOCK_TCPSERVER=$tsock ESOCK_TCPSERVER_OPT=async,eagerrx " ] || fail "--tcpserver: $env_ts"
# --tcpserver=ADDR:PORT[:OPTS] (tcpserverd's -l on another node), IPv4 and IPv6.
for w in "10.1.2.3:7400|10.1.2.3:7400|" "10.1.2.3:7400:all|10.1.2.3:7400|all" \
	"[fd00::5]:7400:async,setup|[fd00::5]:7400|async,setup" "[::1]:9|[::1]:9|"; do
	arg=${w%%|*} want=${w#*|}
	env_ts=$("$run" --tcpserver="$arg" env | grep -E '^ESOCK_TCPSERVER' | sort | tr '\n' ' ')
	[ "$env_ts" = "ESOCK_TCPSERVER=${want%%|*} ESOCK_TCPSERVER_OPT=${want#*|} " ] ||
		fail "--tcpserver=$arg: $env_ts"
done
# An existing preload stays, after ours.
env_pre=$(LD_PRELOAD=libc.so.6 show)
case $env_pre in *"/.libs/libesock.so libc.so.6 "*) ;; *) fail "LD_PRELOAD kept: $env_pre" ;; esac

# ESOCK_LIB is taken; a missing command is 127, as for a missing library.
ESOCK_LIB=$lib "$run" true || fail "ESOCK_LIB=$lib"
"$run" /nonexistent/command 2>/dev/null
[ $? -eq 127 ] || fail "a missing command does not exit 127"
"$run" sh -c 'exit 3'
[ $? -eq 3 ] || fail "the command's exit status is not passed on"

# The library is really mapped into the command.
"$run" cat /proc/self/maps | grep -q 'libesock\.so' || fail "libesock.so not mapped into the command"
echo "esock-run: options, environment, library lookup, exit codes: ok"
