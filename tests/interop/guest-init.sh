#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: MIT
# /init of the siw guest: load the RDMA stack and siw, attach siw to eth0,
# run /job.sh, send the files it lists back over the console, power off.
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
$B mount -t devtmpfs dev /dev
# The console carries the job's step lines and its files: a kernel message written into
# the middle of one cut a case's name (the host never ran that client).  Kernel messages
# stay in the ring buffer instead and come back as /out/dmesg.log.
echo 1 > /proc/sys/kernel/printk
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
K=$(cat /kernel-version)
for m in $(cat /modules); do
	$B insmod /lib/modules/$K/$m.ko || echo "RIG: insmod $m failed"
done
$B ip link set lo up
$B ip link set eth0 up
$B ip addr add 10.0.2.15/24 dev eth0
rdma link add siw0 type siw netdev eth0 || echo "RIG: rdma link add failed"
echo "RIG: ready, siw $(cat /sys/module/siw/version 2>/dev/null)"
mkdir -p /out
$B sh /job.sh
rc=$?
$B dmesg > /out/dmesg.log 2>&1
for f in /out/*; do
	[ -f "$f" ] || continue
	echo "RIG-FILE-BEGIN $($B basename "$f")"
	$B base64 "$f"
	echo "RIG-FILE-END"
done
echo "RIG: job exit $rc"
$B poweroff -f
