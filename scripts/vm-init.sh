#!/bin/sh
# PID 1 of the test VM (see vm-run.sh): mounts, modules, network, rdma_rxe,
# then runs the command, records its status and powers off.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# What udev would add: bash's <(...) and tools like dkms need /dev/fd.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do [ -e "/dev/${i#*:}" ] || ln -s "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"; done
mount -t debugfs debugfs /sys/kernel/debug
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t tmpfs tmpfs /run
mkdir -p /run/vm-out /run/keep
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none vmout /run/vm-out
set -a; . /run/vm-out/env; set +a
cwd=$(cat /run/vm-out/cwd)

# /tmp and /var/tmp become tmpfs. Host paths the run needs that live below
# them (a checkout cloned under /tmp, say) are carried over by bind mounts.
for d in /tmp /var/tmp; do
	i=0
	for p in "$RTRS_REPO" "$cwd" "$RTRS_KMODS"; do
		case "$p/" in "$d"/*) i=$((i + 1)); mkdir -p "/run/keep/$i"; mount --bind "$p" "/run/keep/$i" ;; esac
	done
	mount -t tmpfs tmpfs "$d"
	i=0
	for p in "$RTRS_REPO" "$cwd" "$RTRS_KMODS"; do
		case "$p/" in "$d"/*) i=$((i + 1)); mkdir -p "$p"; mount --move "/run/keep/$i" "$p" ;; esac
	done
done
exec </dev/null >/dev/ttyS1 2>&1
stty -F /dev/ttyS1 raw -echo 2>/dev/null

# The kernel's modules: a tmpfs over /lib/modules with the cache bind-mounted in.
mount -t tmpfs tmpfs /lib/modules
mkdir -p "/lib/modules/$RTRS_KREL"
mount --bind "$RTRS_KMODS/lib/modules/$RTRS_KREL" "/lib/modules/$RTRS_KREL"

hostname rtrs-vm
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
if [ "$RTRS_NO_RXE" != 1 ]; then
	modprobe rdma_rxe && rdma link add rxe_eth0 type rxe netdev eth0 ||
		echo "vm-init: could not bind rdma_rxe to eth0" >&2
fi

kml=/sys/kernel/debug/kmemleak
[ "$RTRS_LEAKCHECK" = 1 ] && [ -w $kml ] && echo clear > $kml

cd "$cwd" 2>/dev/null || cd "$RTRS_REPO" || cd /
sh -c "$(cat /run/vm-out/cmd)"
rc=$?

if [ "$RTRS_LEAKCHECK" = 1 ] && [ -w $kml ]; then
	# kmemleak reports objects older than 5 s that two scans agree on.
	echo scan > $kml; sleep 6; echo scan > $kml
	cat $kml > /run/vm-out/kmemleak
fi
echo "$rc" > /run/vm-out/rc
sync
# Power off; PID 1 must not exit (that panics) nor exec anything meanwhile,
# so it blocks on a FIFO that nobody opens for writing.
mkfifo /run/hold
echo o > /proc/sysrq-trigger
read -r _ < /run/hold 2>/dev/null
