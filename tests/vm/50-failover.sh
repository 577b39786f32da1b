#!/bin/bash
# Two paths (eth0's address and a second one on eth0) under rnbd over this
# module: verified fio keeps running while paths are disconnected and
# reconnected through sysfs and from the server side; in-flight requests are
# failed over (stats/rdma failover > 0), nothing is lost, and link_ev
# DISCONNECTED/RECONNECTED reach rnbd when every path goes and one returns.
. "$(dirname "$0")/../lib.sh"
PLAN=20
skip_all_unless_api $PLAN
tap_plan $PLAN
cls=/sys/class/rtrs-client
srv=/sys/class/rtrs-server
A2=10.0.2.16

ip addr add $A2/24 dev eth0
wait_gid $A2
tap_check "server side loads" start_server 131072
tap_check "client stack loads" load_rnbd_rs
echo "sessname=fo path=ip:$SRV_ADDR path=ip:$A2 device_path=/dev/ram0" > $RNBD_CTL/map_device
dev=/dev/$(basename "$(ls -d /sys/block/rnbd* | head -1)")
tap_check "mapped $dev over two paths" test -b "$dev"
p1=$cls/fo/paths/ip:$SRV_ADDR@ip:$SRV_ADDR
p2=$cls/fo/paths/ip:$SRV_ADDR@ip:$A2
tap_check "both paths connected" sh -c "grep -qx connected $p1/state && grep -qx connected $p2/state"

failovers() { awk '{s += $6} END {print s + 0}' $cls/fo/paths/*/stats/rdma; }
fio_bg() {
	fio --name=fo --filename="$dev" --direct=1 --ioengine=libaio --iodepth=64 --numjobs=2 \
		--rw=randrw --bs=4k --size=16M --offset_increment=16M --time_based --runtime="$1" \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		--group_reporting --output-format=terse > /tmp/fio.out 2>&1 &
	FIO_PID=$!
}

# 1. Client-side disconnect/reconnect of each path, under IO (three cycles;
#    one in the quick tier).
NCYC=$(by_tier 1 3)
fio_bg "$(by_tier 15 40)"
# A disconnect fails over only what is in flight: wait for IO on path 1
# (stats/rdma field 5, counted under the default min-inflight policy).
wait_for 30 sh -c "[ \$(awk '{print \$5}' $p1/stats/rdma) -gt 0 ]" ||
	diag "no IO in flight on path 1 after 30 s"
rf=0
for _ in $(seq 1 "$NCYC"); do
	echo 1 > $p1/disconnect; sleep 1
	echo 1 > $p1/reconnect || { echo "reconnect p1 failed" >&2; rf=$((rf + 1)); }; sleep 1
	echo 1 > $p2/disconnect; sleep 1
	echo 1 > $p2/reconnect || { echo "reconnect p2 failed" >&2; rf=$((rf + 1)); }; sleep 1
done
wait $FIO_PID; rc=$?
tap_check "fio verify through $(( NCYC * 2 )) disconnect/reconnect cycles (rc $rc, $rf reconnects failed)" \
	test $rc -eq 0 -a $rf -eq 0
[ $rc -eq 0 ] || diag "$(cat /tmp/fio.out)"
fo=$(failovers)
tap_check "requests failed over ($fo)" test "$fo" -gt 0
tap_check "both paths connected again" sh -c "grep -qx connected $p1/state && grep -qx connected $p2/state"
tap_check "reconnects counted on path 1 ($(cat $p1/stats/reconnects))" sh -c "[ \$(cut -d' ' -f1 $p1/stats/reconnects) -ge $NCYC ]"
inflight=$(awk '{s += $5} END {print s + 0}' $cls/fo/paths/*/stats/rdma)
tap_check "inflight back to 0 ($inflight)" test "$inflight" -eq 0

# 2. disconnect leaves the path closed ("disconnected", no auto reconnect:
#    still closed after rnbd's 30 s reconnect delay in the full tier).
echo 1 > $p2/disconnect
sleep "$(by_tier 2 35)"
tap_check "disconnected path reads 'disconnected'" test "$(cat $p2/state)" = disconnected
tap_check "IO on the remaining path verifies" fio_verify "$dev" 4k 2M
tap_check "and stays disconnected until a reconnect" test "$(cat $p2/state)" = disconnected
echo 1 > $p2/reconnect
tap_check "reconnect brings it back" test "$(cat $p2/state)" = connected

# 3. All paths down: rnbd gets DISCONNECTED, then RECONNECTED when one returns.
dmesg -C
echo 1 > $p1/disconnect; echo 1 > $p2/disconnect
rs=/sys/block/${dev#/dev/}/rnbd/state
tap_check "link_ev DISCONNECTED reaches rnbd (device '$(cat $rs)')" test "$(cat $rs)" = closed
echo 1 > $p2/reconnect
tap_check "one path back: RECONNECTED, rnbd remaps the device" wait_for 30 sh -c "[ \$(cat $rs) = open ]"
tap_check "IO after the session came back verifies" fio_verify "$dev" 4k 2M
diag "$(dmesg | grep -i rnbd | tail -5)"

# 4. Server-side disconnect: the client sees the CM DISCONNECTED, recovers
#    (reconnect_delay_sec is rnbd's 30 s), and IO fails over meanwhile.
echo 1 > $p1/reconnect
fo0=$(failovers)
r0=$(cut -d' ' -f1 $p2/stats/reconnects)
io0=$(awk '{print $1 + $3}' $p2/stats/rdma)
fio_bg 45
# Disconnect while IO runs on path 2.
wait_for 30 sh -c "[ \$(awk '{print \$1 + \$3}' $p2/stats/rdma) -gt $io0 ]" ||
	diag "no IO on path 2 after 30 s"
# The server names its path from its side: <its addr>@<client addr>.
sp=$(ls -d $srv/fo/paths/*$A2* 2>/dev/null | head -1)
tap_check "the server disconnects its side of path 2 ($sp)" sh -c "echo 1 > '$sp/disconnect'"
wait $FIO_PID; rc=$?
tap_check "fio verify across a server-side disconnect (rc $rc)" test $rc -eq 0
[ $rc -eq 0 ] || diag "$(cat /tmp/fio.out)"
tap_check "path 2 reconnected by itself after the delay (reconnects $r0 -> more)" wait_for 40 \
	sh -c "grep -qx connected $p2/state && [ \$(cut -d' ' -f1 $p2/stats/reconnects) -gt $r0 ]"
diag "failover: $fo0 -> $(failovers); reconnects p2: $(cat $p2/stats/reconnects)"

unmap_rnbd fo
unload_modules rnbd_client rtrs_client_rs
stop_server
tap_check "everything unloads" test -z "$(rtrs_modules_loaded)"
tap_done
