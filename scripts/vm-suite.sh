#!/bin/bash
# vm-suite.sh <out dir> <test script...>: in the test VM, run several VM test
# scripts one after another in this one boot (both tiers of make check: a
# boot and its kmemleak scan cost about 70 s under TCG, per test otherwise).
#
# For each test <name> (its path below tests/, with / as _) it leaves in
# <out>: <name>.tap, .stderr, .rc, .secs (wall time) and .reset (what it left
# behind, taken down after it). Around each test the kernel log gets the
# lines "rtrs-suite: begin <name>" and "rtrs-suite: end <name>", by which the
# host cuts each test's part of the log for the dmesg checker. A test runs
# at most SUITE_TEST_TIMEOUT seconds (default 1200).
#
# SUITE_LEAKCHECK_EACH=1 (the full tier): after each test and its reset, a
# kmemleak scan as scripts/vm-init.sh makes after a command (two scans 6 s
# apart), its report saved to <out>/<name>.kmemleak, then cleared, so that
# each test's leaks are its own. The scan's own kernel log lines ("kmemleak:
# N new suspected memory leaks") go between "rtrs-suite: begin kmemleak
# <name>" and "rtrs-suite: end kmemleak <name>", in that test's part.
set -u
out=$1; shift
kmsg() { echo "rtrs-suite: $*" > /dev/kmsg; }

# A process costs about 0.3 s under TCG: the reset runs on builtins where it
# can (sysfs and /proc reads, globs; lib.sh's _sleep and _read_line), and
# execs only to undo something.
. "$(dirname "$0")/../tests/lib.sh"

# reset: take down what a test left behind, and say what it was.
reset() {
	local b m l a i
	# Fault injection a test left armed (killed by its timeout in 70's or
	# 72's faults, full tier): disarmed first, or the teardown below and the
	# next tests would take its faults (at boot: times 1, probability 0).
	for a in failslab fail_page_alloc; do
		_read_line "/sys/kernel/debug/$a/times" && [ "$_LINE" != 0 ] || continue
		_read_line "/sys/kernel/debug/$a/probability" && [ "$_LINE" != 0 ] || continue
		echo "fault injection $a armed"; echo 0 > "/sys/kernel/debug/$a/times"
	done
	for b in /sys/block/rnbd*; do
		[ -e "$b/rnbd/unmap_device" ] || continue
		echo "unmapped ${b##*/}"; echo force > "$b/rnbd/unmap_device"
	done
	for (( i = 0; i < 600; i++ )); do
		l=(/sys/class/rtrs-client/*)
		[ -e "${l[0]}" ] || break
		_sleep 0.2
	done
	for m in rnbd_client rnbd_client_rs rtrs_api_example rtrs_test_clt rtrs_client_rs rtrs_client rnbd_server rtrs_server rtrs_core brd null_blk lkdtm; do
		[ -e "/sys/module/$m/refcnt" ] || continue
		echo "unloaded $m"
		for (( i = 0; i < 150; i++ )); do rmmod "$m" 2>/dev/null && break; _sleep 0.2; done
	done
	for l in /run/netns/*; do
		[ -e "$l" ] || continue
		echo "netns ${l##*/}"; ip netns del "${l##*/}"
	done
	for l in /sys/class/infiniband/*; do
		[ -e "$l" ] || continue
		[ "${l##*/}" = rxe_eth0 ] || { echo "rdma link ${l##*/}"; rdma link del "${l##*/}"; }
	done
	# Any netdev the VM did not boot with (the tests' veths and dummies).
	for l in /sys/class/net/*; do
		l=${l##*/}
		[[ " $boot_links " == *" $l "* ]] && continue
		[ -e "/sys/class/net/$l" ] || continue
		ip link del "$l" 2>/dev/null && echo "netdev $l"
	done
	for a in $(ip -o -4 addr show dev eth0 | awk '{print $4}'); do
		[ "$a" = 10.0.2.15/24 ] || { echo "address $a"; ip addr del "$a" dev eth0; }
	done
	tc qdisc del dev eth0 root 2>/dev/null && echo "qdisc on eth0"
	[ -e /sys/class/infiniband/rxe_eth0 ] ||
		{ echo "rxe_eth0 re-added"; rdma link add rxe_eth0 type rxe netdev eth0; }
	for (( i = 0; i < 100; i++ )); do
		_read_line /sys/class/infiniband/rxe_eth0/ports/1/state && [ "${_LINE#*: }" = ACTIVE ] && break
		_sleep 0.2
	done
	# Writable copies a test mounted over read-only directories (15-install).
	local mounts; mounts=$(< /proc/mounts)
	for m in /var/lib/dkms /usr/src /etc/modprobe.d "/lib/modules/$(uname -r)"; do
		[ -d "/tmp/w${m//\//_}" ] && [[ $mounts == *" $m "* ]] &&
			mountpoint -q "$m" && umount "$m" 2>/dev/null && echo "umount $m"
	done
	local k
	for k in $sysctls; do
		_read_line "/proc/sys/${k//.//}"
		[ "$_LINE" = "${boot_sysctl[$k]}" ] ||
			{ echo "sysctl $k"; sysctl -qw "$k=${boot_sysctl[$k]}"; }
	done
	return 0
}

# leakcheck <name>: kmemleak's report of what leaked since the last clear
# into <out>/<name>.kmemleak, then cleared (kmemleak reports objects older
# than 5 s that two scans agree on).
kml=/sys/kernel/debug/kmemleak
leakcheck() {
	[ -w $kml ] || return 0
	kmsg "begin kmemleak $1"
	echo scan > $kml; _sleep 6; echo scan > $kml
	cat $kml > "$out/$1.kmemleak"
	echo clear > $kml
	kmsg "end kmemleak $1"
}

# The netdevs the VM booted with (dummy0, say) stay; the sysctls the
# multipath tests change go back to their boot values.
boot_links=
for l in /sys/class/net/*; do boot_links+=" ${l##*/}"; done
boot_links+=" "
sysctls="net.ipv4.conf.all.rp_filter net.ipv4.conf.default.rp_filter net.ipv4.conf.all.accept_local net.ipv4.conf.default.accept_local"
declare -A boot_sysctl=()
for k in $sysctls; do _read_line "/proc/sys/${k//.//}"; boot_sysctl[$k]=$_LINE; done
for t in "$@"; do
	name=${t#*tests/}; name=${name%.sh}; name=${name//\//_}
	kmsg "begin $name"
	t0=$(date +%s)
	timeout -k 30 "${SUITE_TEST_TIMEOUT:-1200}" bash "$t" > "$out/$name.tap" 2> "$out/$name.stderr"
	rc=$?
	secs=$(( $(date +%s) - t0 ))
	echo $rc > "$out/$name.rc"
	echo $secs > "$out/$name.secs"
	kmsg "end $name"
	reset > "$out/$name.reset" 2>&1
	[ "${SUITE_LEAKCHECK_EACH:-0}" = 1 ] && leakcheck "$name"
	echo "vm-suite: $name: exit $rc, $secs s, $(grep -c '^ok' "$out/$name.tap") ok, $(grep -c '^not ok' "$out/$name.tap") not ok"
done
sync
