#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Linux kernel's siw (soft-iWARP) in a qemu guest, as an interop peer and a
# source of real captures.  Debian's kernel has no siw module, so siw.ko is
# built out of tree from Debian's linux-source at the guest kernel's version;
# the guest is a busybox initramfs with rdma-core tools from Debian packages.
# Nothing is installed into the host except qemu-system-x86, cpio, kmod, gcc-12,
# make, xz-utils and patch.
#
#   siw-rig.sh prepare           download packages, build siw.ko variants and the guest root
#   siw-rig.sh probe             can qemu run here? boots the guest kernel alone (~10 s
#                                under TCG) until it panics for want of a root; exit 0 if so
#   siw-rig.sh run JOB OUT [V]   boot the guest with siw variant V (default|crc|patched), run the
#                                job script JOB, copy its files out to directory OUT
#
# Variants: "default" is siw as shipped (CRC only when the initiator asks, which siw's own
# initiator never does); "crc" sets mpa_crc_required so a siw initiator asks for CRC.
# The guest network is qemu user networking with restrict=on: no traffic leaves the guest.
# RIG_NET=tap:IFNAME puts eth0 on the existing tap device IFNAME instead (no offloads:
# frames are wire-sized); the caller owns the tap, e.g. in a network namespace.
# Both variants are also in the guest as /siw-default.ko and /siw-crc.ko, for jobs
# that switch between them.
# RIG_DIR (default: build-test/interop-rig) holds everything; re-running is cheap.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
RIG_DIR=${RIG_DIR:-$PWD/build-test/interop-rig}
mkdir -p "$RIG_DIR"
RIG_DIR=$(cd "$RIG_DIR" && pwd)
if [ "${1:-}" = run ] && [ $# -ge 3 ]; then # make the job and output paths absolute first
	JOB=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
	mkdir -p "$3"
	OUT=$(cd "$3" && pwd)
fi
cd "$RIG_DIR"

log() { echo "siw-rig: $*" >&2; }

kver() { # the Debian kernel ABI the guest runs, e.g. 6.1.0-56-amd64
	apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\(.*\)/\1/p' | head -n1
}

host_deps() {
	local missing=()
	for p in qemu-system-x86 cpio kmod gcc-12 make xz-utils patch; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

fetch_kernel() {
	local k=$1 ver=${1%-amd64}
	[ -f kernel.stamp ] && [ "$(cat kernel.stamp)" = "$k" ] && return 0
	rm -rf kdebs kroot && mkdir -p kdebs && cd kdebs
	log "downloading kernel $k packages"
	apt-get download -q "linux-image-$k" "linux-headers-$k" "linux-headers-$ver-common" \
		"linux-kbuild-${ver%%.*}.${ver#*.}" >/dev/null 2>&1 ||
		apt-get download -q "linux-image-$k" "linux-headers-$k" "linux-headers-$ver-common" \
			"linux-kbuild-$(echo "$ver" | cut -d. -f1-2)" >/dev/null
	apt-get download -q "linux-source-$(echo "$ver" | cut -d. -f1-2)" >/dev/null
	cd ..
	mkdir kroot
	for d in kdebs/*.deb; do dpkg -x "$d" kroot; done
	echo "$k" > kernel.stamp
}

build_siw() { # $1 = kernel, $2 = variant
	local k=$1 v=$2 hdr src
	[ -f "siw-$v.ko" ] && [ "siw-$v.ko" -nt kernel.stamp ] && { [ "$v" != patched ] ||
		[ -z "$(find "$top/kpatch/linux" -name '*.patch' -newer "siw-$v.ko")" ]; } && return 0
	hdr=$RIG_DIR/kroot/usr/src/linux-headers-$k
	# The headers' Makefile includes the common part by absolute path: point it here.
	sed -i "s#^include /usr/src/#include $RIG_DIR/kroot/usr/src/#" "$hdr/Makefile"
	src=$(ls kroot/usr/src/linux-source-*.tar.xz)
	rm -rf "siw-src-$v" && mkdir "siw-src-$v"
	tar -xJf "$src" -C "siw-src-$v" --strip-components=5 --wildcards '*/drivers/infiniband/sw/siw/*'
	if [ "$v" = crc ]; then
		sed -i -e 's/^const bool mpa_crc_required = false;/const bool mpa_crc_required = true;/' \
			-e 's/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' "siw-src-$v/siw_main.c"
		grep -q 'mpa_crc_required = true' "siw-src-$v/siw_main.c" || { log "cannot set mpa_crc_required"; return 1; }
	fi
	if [ "$v" = patched ]; then # kpatch/linux's series, paths a/drivers/infiniband/sw/siw/...
		for p in "$top"/kpatch/linux/*.patch; do
			patch -s -p5 -d "siw-src-$v" <"$p" || { log "cannot apply $(basename "$p")"; return 1; }
		done
	fi
	echo "MODULE_VERSION(\"esock-rig-$v\");" >> "siw-src-$v/siw_main.c"
	printf 'obj-m := siw.o\nsiw-y := siw_cm.o siw_cq.o siw_main.o siw_mem.o siw_qp.o siw_qp_rx.o siw_qp_tx.o siw_verbs.o\n' \
		> "siw-src-$v/Kbuild"
	log "building siw.ko ($v)"
	make -s -C "$hdr" M="$RIG_DIR/siw-src-$v" CC=gcc-12 modules >"siw-build-$v.log" 2>&1 ||
		{ tail -20 "siw-build-$v.log"; return 1; }
	cp "siw-src-$v/siw.ko" "siw-$v.ko"
}

# siw-widen.ko (tests/interop/siw-widen): holds the CPU after siw sends an MPA frame, so that
# siw's accept race (kpatch/linux 0003) shows every time on siw as shipped.
build_widen() { # $1 = kernel
	local k=$1 hdr=$RIG_DIR/kroot/usr/src/linux-headers-$1
	[ -f siw-widen.ko ] && [ siw-widen.ko -nt "$here/siw-widen/siw-widen.c" ] &&
		[ siw-widen.ko -nt kernel.stamp ] && return 0
	rm -rf widen-src && cp -r "$here/siw-widen" widen-src
	log "building siw-widen.ko"
	make -s -C "$hdr" M="$RIG_DIR/widen-src" CC=gcc-12 modules >widen-build.log 2>&1 ||
		{ tail -20 widen-build.log; return 1; }
	cp widen-src/siw-widen.ko siw-widen.ko
}

guest_root() { # $1 = kernel
	local k=$1 pkgs list m
	[ -f groot.stamp ] && [ "$(cat groot.stamp)" = 3 ] && return 0
	# (libisal2: esock's own programs, brought in by RIG_FILES, run in the guest too;
	# socat: an unmodified Debian program on the verbs backend, verbs-sockets.sh)
	pkgs="busybox-static kmod iproute2 tcpdump libibverbs1 librdmacm1 ibverbs-providers rdmacm-utils ibverbs-utils ethtool perftest libisal2 socat"
	# shellcheck disable=SC2086 # $pkgs and $list are lists of names
	list=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances $pkgs 2>/dev/null | grep -v '^ ' | grep -v '^<' | sort -u)
	rm -rf gdebs groot && mkdir gdebs groot
	log "downloading guest packages"
	# shellcheck disable=SC2086
	(cd gdebs && apt-get download -q $list >/dev/null)
	for d in gdebs/*.deb; do dpkg -x "$d" groot; done
	m=groot/lib/modules/$k
	mkdir -p "$m" groot/proc groot/sys groot/dev groot/tmp groot/etc
	for mod in $(guest_modules); do
		find "kroot/lib/modules/$k/kernel" -name "$mod.ko" -exec cp {} "$m/" \;
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' > groot/etc/passwd
	printf 'root:x:0:\n' > groot/etc/group
	cp "kroot/boot/vmlinuz-$k" vmlinuz
	echo "$k" > groot/kernel-version
	echo 3 > groot.stamp # (the version of the package list above)
}

# Load order matters: each module after what it needs.
guest_modules() {
	echo configfs crc32c_generic libcrc32c virtio_ring virtio virtio_pci_legacy_dev \
		virtio_pci_modern_dev virtio_pci failover net_failover virtio_net \
		ib_core ib_cm iw_cm rdma_cm ib_uverbs rdma_ucm
}

prepare() {
	local k
	host_deps
	k=$(kver)
	if [ -z "$k" ] || ! apt-cache show "linux-source-$(echo "${k%-amd64}" | cut -d. -f1-2)" >/dev/null 2>&1; then
		log "refreshing package lists"
		apt-get update -qq >/dev/null 2>&1 || true
		k=$(kver)
	fi
	[ -n "$k" ] || { log "cannot find the Debian kernel version (apt-get update?)"; return 1; }
	fetch_kernel "$k"
	build_siw "$k" default
	build_siw "$k" crc
	build_siw "$k" patched
	build_widen "$k"
	guest_root "$k"
	log "ready: kernel $k, siw variants default, crc and patched (kpatch/linux)"
}

accel_opts() { # KVM only where it really works (the CPU shows vmx/svm); otherwise TCG.
	if [ -w /dev/kvm ] && grep -qE 'vmx|svm' /proc/cpuinfo; then echo "-accel kvm -cpu host"
	else echo "-accel tcg -cpu max"; fi
}

probe() {
	[ -f vmlinuz ] || { log "not prepared"; return 1; }
	command -v qemu-system-x86_64 >/dev/null || { log "no qemu-system-x86_64"; return 1; }
	rm -f probe.log
	# shellcheck disable=SC2046
	timeout 120 qemu-system-x86_64 $(accel_opts) -m 256 -nographic -no-reboot -nodefaults \
		-kernel vmlinuz -append "console=ttyS0 quiet panic=-1" -serial file:probe.log \
		-monitor none -display none >probe.out 2>&1 || true
	grep -q 'Kernel panic' probe.log 2>/dev/null && return 0
	log "qemu cannot boot the guest kernel here: $(tail -c 300 probe.out | tr '\n' ' ')"
	return 1
}

run_job() { # $1 = job script, $2 = output dir, $3 = variant
	local job=$1 out=$2 v=${3:-default} img accel net
	mkdir -p "$out"
	rm -rf initrd && cp -a groot initrd
	cp "siw-$v.ko" "initrd/lib/modules/$(cat groot/kernel-version)/siw.ko"
	cp siw-default.ko siw-crc.ko siw-patched.ko initrd/
	[ -f siw-widen.ko ] && cp siw-widen.ko initrd/
	cp "$here/guest-init.sh" initrd/init
	cp "$here/guest-lib.sh" initrd/guest-lib.sh
	cp "$job" initrd/job.sh
	# RIG_FILES="SRC=DST ...": more files for the job (esock's programs, built on the host)
	for f in ${RIG_FILES:-}; do
		mkdir -p "initrd$(dirname "${f#*=}")"
		cp "${f%%=*}" "initrd${f#*=}" || { log "cannot copy ${f%%=*}"; return 1; }
	done
	chmod +x initrd/init
	echo "$(guest_modules) siw" > initrd/modules
	img=$RIG_DIR/initrd-$v.cpio
	(cd initrd && find . | cpio -o -H newc 2>/dev/null) > "$img"
	accel=$(accel_opts)
	net="user,id=n0,restrict=on"
	case ${RIG_NET:-user} in
	tap:?*) net="tap,id=n0,ifname=${RIG_NET#tap:},script=no,downscript=no,vnet_hdr=off" ;;
	user) ;;
	*) log "RIG_NET must be user or tap:IFNAME"; return 2 ;;
	esac
	log "booting the guest (siw $v)"
	# shellcheck disable=SC2086
	timeout 600 qemu-system-x86_64 $accel -m 1024 -smp 2 -nographic -no-reboot \
		-kernel vmlinuz -initrd "$img" -append "console=ttyS0 quiet mitigations=off panic=-1" \
		-netdev "$net" -device virtio-net-pci,netdev=n0 \
		-serial "file:$out/console.log" -monitor none -display none
	# Files come back base64-encoded on the console between markers.
	awk -v dir="$out" '
		/^RIG-FILE-BEGIN / { name = $2; sub(/\r$/, "", name); f = dir "/" name ".b64"; next }
		/^RIG-FILE-END/ { close(f); f = ""; next }
		f != "" { sub(/\r$/, ""); print > f }' "$out/console.log"
	for b in "$out"/*.b64; do
		[ -e "$b" ] || continue
		base64 -d "$b" > "${b%.b64}" && rm -f "$b"
	done
	grep -q '^RIG: job exit 0' "$out/console.log" || { log "job failed, see $out/console.log"; return 1; }
}

case ${1:-} in
prepare) prepare ;;
probe) probe ;;
run) [ $# -ge 3 ] || { echo "usage: $0 run JOB OUTDIR [default|crc]" >&2; exit 2; }
	run_job "$JOB" "$OUT" "${4:-default}" ;;
*) echo "usage: $0 prepare | probe | run JOB OUTDIR [default|crc]" >&2; exit 2 ;;
esac
