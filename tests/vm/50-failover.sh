#!/bin/bash
# Two paths (eth0's address and a second one on eth0) under rnbd over this
# module: verified fio keeps running while paths are disconnected and
# reconnected through sysfs and from the server side; in-flight requests are
# failed over (stats/rdma failover > 0), nothing is lost, and link_ev
# DISCONNECTED/RECONNECTED reach rnbd when every path goes and one returns.
# The quick tier runs the same checks with less IO and fewer connects (a
# connect costs 15-25 s under TCG): one client-side cycle (path 1), the
# server-side disconnect (the 30 s reconnect delay and a connect) before the
# other sections, path 2's sysfs disconnect left in place until all paths
# are down (its reconnect then brings the session back), and dd instead of
# fio for the short IO checks.
. "$(dirname "$0")/../lib.sh"
PLAN=20
skip_all_unless_api $PLAN
tap_plan $PLAN
cls=/sys/class/rtrs-client
srv=/sys/class/rtrs-server
A2=10.0.2.16
QUICK=$(by_tier 1 0)
SECONDS=0
mark() { echo "# [+${SECONDS}s] $*"; }

ip addr add $A2/24 dev eth0
wait_gid $A2
tap_check "server side loads" start_server 131072
tap_check "client stack loads" load_rnbd_rs
echo "sessname=fo path=ip:$SRV_ADDR path=ip:$A2 device_path=/dev/ram0" > $RNBD_CTL/map_device
dev=/dev/$(basename "$(ls -d /sys/block/rnbd* | head -1)")
tap_check "mapped $dev over two paths" test -b "$dev"
p1=$cls/fo/paths/ip:$SRV_ADDR@ip:$SRV_ADDR
p2=$cls/fo/paths/ip:$SRV_ADDR@ip:$A2
# No forks: read(1) from sysfs is a builtin.
state() { local s=gone; read -r s < "$1/state" 2>/dev/null; echo "$s"; }
connected() { local s; read -r s < "$1/state" 2>/dev/null && [ "$s" = connected ]; }
both_connected() { connected $p1 && connected $p2; }
# rdma <path> <field>: one field of its stats/rdma
# ("rd_cnt rd_bytes wr_cnt wr_bytes inflight failover").
rdma() { local f=(0 0 0 0 0 0); read -r -a f < "$1/stats/rdma" 2>/dev/null; echo "${f[$(( $2 - 1 ))]}"; }
reconnects() { local r=(0); read -r -a r < "$1/stats/reconnects" 2>/dev/null; echo "${r[0]}"; }
tap_check "both paths connected" both_connected
mark "mapped"

failovers() { echo $(( $(rdma $p1 6) + $(rdma $p2 6) )); }
# fio_bg <seconds>: verified randrw in the background; the quick tier
# verifies every 64 writes as it goes, so that the final pass is short.
fio_bg() {
	# shellcheck disable=SC2046 # zero or one word
	fio --name=fo --filename="$dev" --direct=1 --ioengine=libaio --iodepth=64 --numjobs=2 \
		--rw=randrw --bs=4k --size=16M --offset_increment=16M --time_based --runtime="$1" \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		$(by_tier --verify_backlog=64 "") \
		--group_reporting --output-format=terse > /tmp/fio.out 2>&1 &
	FIO_PID=$!
}
# io_verify: the IO checks of sections 2 and 3, a write and read-back pass:
# fio's crc32c over 2M in the full tier; in the quick tier 64 random 4k
# blocks written and read back with O_DIRECT by dd and compared (fio needs
# 10-15 s just to start under TCG), past the region the fio runs use.
io_verify() {
	if [ "$QUICK" = 1 ]; then
		dd if=/dev/urandom of=/tmp/fo-pat bs=4k count=64 status=none &&
		dd if=/tmp/fo-pat of="$dev" bs=4k seek=12288 oflag=direct status=none &&
		dd if="$dev" bs=4k skip=12288 count=64 iflag=direct status=none | cmp - /tmp/fo-pat
	else
		fio_verify "$dev" 4k 2M
	fi
}
# (Polled: read(1) into an array, no fork.)
io1() { local f=(0 0 0 0 0); read -r -a f < $p1/stats/rdma; [ "${f[4]}" -gt 0 ]; }
io2_since() { local f=(0 0 0 0); read -r -a f < $p2/stats/rdma; [ $(( f[0] + f[2] )) -gt "$1" ]; }

# 1. Client-side disconnect/reconnect of each path, under IO (three cycles
#    of both; the quick tier disconnects path 1 once: path 2's sysfs
#    disconnect follows in 2, its failover under IO in 4).
sec1() {
	local ncyc rf=0 rc fo inflight p paths
	ncyc=$(by_tier 1 3)
	# shellcheck disable=SC2207 # the paths' names have no blanks
	paths=($(by_tier "$p1" "$p1 $p2"))
	fio_bg "$(by_tier 15 40)"
	# A disconnect fails over only what is in flight: wait for IO on path 1
	# (stats/rdma field 5, counted under the default min-inflight policy).
	wait_for 30 io1 || diag "no IO in flight on path 1 after 30 s"
	mark "IO on path 1"
	for _ in $(seq 1 "$ncyc"); do
		for p in "${paths[@]}"; do
			echo 1 > "$p/disconnect"; sleep 1
			echo 1 > "$p/reconnect" || { echo "reconnect ${p##*/} failed" >&2; rf=$((rf + 1)); }; sleep 1
		done
	done
	mark "cycles done"
	wait $FIO_PID; rc=$?
	mark "fio done"
	tap_check "fio verify through $(( ncyc * ${#paths[@]} )) disconnect/reconnect cycles (rc $rc, $rf reconnects failed)" \
		test $rc -eq 0 -a $rf -eq 0
	[ $rc -eq 0 ] || diag "$(cat /tmp/fio.out)"
	fo=$(failovers)
	tap_check "requests failed over ($fo)" test "$fo" -gt 0
	tap_check "both paths connected again" both_connected
	tap_check "reconnects counted on path 1 ($(cat $p1/stats/reconnects))" test "$(reconnects $p1)" -ge "$ncyc"
	inflight=$(( $(rdma $p1 5) + $(rdma $p2 5) ))
	# (rdma reads 0 from a file it cannot read: both must be there.)
	tap_check "inflight back to 0 ($inflight)" test "$inflight" -eq 0 -a -r "$p1/stats/rdma" -a -r "$p2/stats/rdma"
}

# 2. disconnect leaves the path closed ("disconnected", no auto reconnect:
#    still closed after rnbd's 30 s reconnect delay in the full tier). The
#    quick tier reconnects it in 3, once every path is down.
sec2() {
	echo 1 > $p2/disconnect
	sleep "$(by_tier 2 35)"
	tap_check "disconnected path reads 'disconnected'" test "$(state $p2)" = disconnected
	tap_check "IO on the remaining path verifies" io_verify
	tap_check "and stays disconnected until a reconnect" test "$(state $p2)" = disconnected
	mark "section 2"
	[ "$QUICK" = 1 ] && return
	echo 1 > $p2/reconnect
	tap_check "reconnect brings it back" test "$(state $p2)" = connected
}

# 3. All paths down: rnbd gets DISCONNECTED, then RECONNECTED when one returns.
sec3() {
	local rs=/sys/block/${dev#/dev/}/rnbd/state
	dmesg -C
	echo 1 > $p1/disconnect
	# The quick tier's path 2 is still disconnected from 2.
	[ "$QUICK" = 1 ] || echo 1 > $p2/disconnect
	tap_check "link_ev DISCONNECTED reaches rnbd (device '$(cat $rs)')" test "$(cat $rs)" = closed
	echo 1 > $p2/reconnect
	[ "$QUICK" = 1 ] && tap_check "reconnect brings it back" test "$(state $p2)" = connected
	rnbd_open() { local s; read -r s < "$rs" && [ "$s" = open ]; }
	tap_check "one path back: RECONNECTED, rnbd remaps the device" wait_for 30 rnbd_open
	tap_check "IO after the session came back verifies" io_verify
	diag "$(dmesg | grep -i rnbd | tail -5)"
	mark "section 3"
	# Section 4 (after this in the full tier) needs both paths.
	[ "$QUICK" = 1 ] || echo 1 > $p1/reconnect
}

# 4. Server-side disconnect: the client sees the CM DISCONNECTED, recovers
#    (reconnect_delay_sec is rnbd's 30 s), and IO fails over meanwhile.
sec4() {
	local fo0 r0 io0 sp rc busy=yes
	# The server names its path from its side: <its addr>@<client addr>.
	# (Found before the IO starts: under IO a process takes seconds.)
	sp=$(ls -d $srv/fo/paths/*$A2* 2>/dev/null | head -1)
	srv_disc() { echo 1 > "$sp/disconnect"; }
	fo0=$(failovers)
	r0=$(reconnects $p2)
	io0=$(( $(rdma $p2 1) + $(rdma $p2 3) ))
	fio_bg "$(by_tier 15 45)"
	# Disconnect while IO runs on path 2 (fio may take 15 s to start under
	# TCG; its runtime counts from its first IO). Without that IO the point
	# below would check a disconnect of an idle path.
	wait_for 60 io2_since "$io0" || { busy=no; diag "no IO on path 2 after 60 s"; }
	mark "IO on path 2"
	tap_check "the server disconnects its side of path 2 ($sp)" srv_disc
	wait $FIO_PID; rc=$?
	mark "fio done"
	tap_check "fio verify across a server-side disconnect under IO on path 2 (rc $rc, IO on path 2 before it: $busy)" \
		test $rc -eq 0 -a $busy = yes
	[ $rc -eq 0 ] || diag "$(cat /tmp/fio.out)"
	p2_back() { connected $p2 && [ "$(reconnects $p2)" -gt "$r0" ]; }
	# Teardown, the 30 s delay, then a connect (15-25 s under TCG).
	tap_check "path 2 reconnected by itself after the delay (reconnects $r0 -> more)" wait_for 90 p2_back
	diag "failover: $fo0 -> $(failovers); reconnects p2: $(cat $p2/stats/reconnects)"
	mark "section 4"
}

if [ "$QUICK" = 1 ]; then
	sec1; sec4; sec2; sec3
else
	sec1; sec2; sec3; sec4
fi

unmap_rnbd fo
unload_modules rnbd_client rtrs_client_rs
stop_server
ip addr del $A2/24 dev eth0
tap_check "everything unloads" test -z "$(rtrs_modules_loaded)"
mark "end"
tap_done
