#!/bin/bash
# rnbd-client-rs (rnbd_clt/, work in progress) over this module, against the
# unmodified rnbd-server: the ctl files, a map with its sysfs files and its
# devices/ link, verified fio at 4k, 64k and 1M, the disk's size, a repeated map
# (EEXIST) and bad options (EINVAL); the link events: the path's disconnect
# makes the device "closed", its reconnect remaps it "open" and IO verifies
# again; a normal unmap that closes the session on both sides; a force unmap
# under IO; two devices on a session with 8 permits, one unmapped under the
# other's IO; and the module's unload.
. "$(dirname "$0")/../lib.sh"
RNBD_RS_KO=$RTRS_REPO/rnbd_clt/rnbd-client-rs.ko
PLAN=31
skip_all_unless_api $PLAN
[ -f "$RNBD_RS_KO" ] || skip_all $PLAN "rnbd_clt is not built (make test-tools)"
tap_plan $PLAN
CTL=/sys/class/rnbd-client/ctl
SRV=/sys/class/rtrs-server
S=rs1

tap_check "server side loads" start_server 65536
tap_check "rtrs-client-rs and rnbd-client-rs load" \
	sh -c "modprobe rtrs_core && insmod '$RS_KO' && insmod '$RNBD_RS_KO'"
# C's usage text, byte for byte.
want=$(printf '%s\n\n%s' 'Usage: echo "[dest_port=server port number] sessname=<name of the rtrs session> path=<[srcaddr@]dstaddr> [path=<[srcaddr@]dstaddr>] device_path=<full path on remote side> [access_mode=<ro|rw|migration>] [nr_poll_queues=<number of queues>]" > map_device' 'addr ::= [ ip:<ipv4> | ip:<ipv6> | gid:<gid> ]')
tap_check "ctl/map_device shows C's usage" test "$(cat $CTL/map_device)" = "$want"

echo "sessname=$S path=ip:$SRV_ADDR device_path=/dev/ram0" > $CTL/map_device 2> /tmp/rs-map.err
dev=$(rnbd_dev_of $S)
if [ -b "$dev" ]; then tap_ok "mapped $dev"; else tap_not_ok "map"; diag "$(cat /tmp/rs-map.err; dmesg | tail -n 20)"; fi
b=/sys/block/${dev#/dev/}
tap_check "rnbd/ files: state open, session, mapping_path, access_mode, nr_poll_queues" \
	test "$(cat $b/rnbd/state) $(cat $b/rnbd/session) $(cat $b/rnbd/mapping_path) $(cat $b/rnbd/access_mode) $(cat $b/rnbd/nr_poll_queues)" = "open $S /dev/ram0 rw 0"
tap_check "rnbd/unmap_device shows its usage" test "$(cat $b/rnbd/unmap_device)" = "Usage: echo <normal|force> > unmap_device"
tap_check "ctl/devices/!dev!ram0@$S links to the disk" test -e "$CTL/devices/!dev!ram0@$S/rnbd"
tap_check "the server shows the session" test -d "$SRV/$S"
tap_check "the disk's size is the server's ram disk (64 MiB)" test "$(blockdev --getsize64 "$dev" 2>/dev/null)" = 67108864
for bs in 4k 64k; do
	tap_check "fio verify $bs" fio_verify "$dev" $bs 4M --iodepth=8
done
# Above max_io_size (124 KiB): the block layer splits each IO.
tap_check "fio verify 1M" fio_verify "$dev" 1M 8M --iodepth=4
tap_check "the same device again: EEXIST" \
	bash -c "! echo 'sessname=$S path=ip:$SRV_ADDR device_path=/dev/ram0' > $CTL/map_device 2> /tmp/rs-e && grep -q 'File exists' /tmp/rs-e"
tap_check "an unknown option: EINVAL" \
	bash -c "! echo 'sessname=$S bogus=1 device_path=/dev/ram0' > $CTL/map_device 2> /tmp/rs-e && grep -q 'Invalid argument' /tmp/rs-e"
p=$(ls -d /sys/class/rtrs-client/$S/paths/* | head -n 1)
st() { [ "$(cat "$b/rnbd/state" 2>/dev/null)" = "$1" ]; }
# path_then <file> <secs> <state>: writes 1 to the path's file, then waits
# for the device's state.
path_then() { echo 1 > "$p/$1" && wait_for "$2" st "$3"; }
tap_check "the path's disconnect: the device reads closed" path_then disconnect 30 closed
tap_check "the path's reconnect: the device is remapped, open" path_then reconnect 60 open
tap_check "fio verify 4k after the remap" fio_verify "$dev" 4k 2M --iodepth=8
tap_check "unmap_device normal" sh -c "echo normal > $b/rnbd/unmap_device"
tap_check "the disk and the session are gone on both sides" \
	wait_for 60 sh -c "[ ! -e $b ] && [ ! -e $SRV/$S ] && [ ! -e '$CTL/devices/!dev!ram0@$S' ]"
# Force unmap under IO: fio may see errors, nothing may hang or splat.
echo "sessname=$S path=ip:$SRV_ADDR device_path=/dev/ram0" > $CTL/map_device
dev=$(rnbd_dev_of $S); b=/sys/block/${dev#/dev/}
tap_check "mapped again ($dev)" test -b "$dev"
timeout -k 5 120 fio --name=f --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=4k --iodepth=16 --size=16M --time_based --runtime=60 > /dev/null 2>&1 &
fpid=$!
_sleep 5
tap_check "force unmap under IO" sh -c "echo force > $b/rnbd/unmap_device"
wait $fpid
tap_check "after it: fio ended, the disk and the session are gone" \
	wait_for 60 sh -c "[ ! -e $b ] && [ ! -e $SRV/$S ]"

# Few permits: two devices on one session whose server gives 8 permits, each
# with 64 requests in flight. A queue that finds no permit is listed and
# rerun when one comes back (C's requeue lists). Unmapping one device while
# the other's IO runs must take its queues off that list: a rerun of a freed
# hctx is a use-after-free KASAN reports.
S2=rs2
reload_server() {
	unload_modules rnbd_server rtrs_server brd &&
		modprobe brd rd_nr=2 rd_size=65536 max_part=0 &&
		modprobe rtrs_server sess_queue_depth=8 && modprobe rnbd_server &&
		grep -qx 8 /sys/module/rtrs_server/parameters/sess_queue_depth
}
tap_check "the server again, with two disks and 8 permits a session" reload_server
for d in ram0 ram1; do
	echo "sessname=$S2 path=ip:$SRV_ADDR device_path=/dev/$d" > $CTL/map_device
done
da=$(rnbd_dev_of_path $S2 /dev/ram0); db=$(rnbd_dev_of_path $S2 /dev/ram1)
tap_check "/dev/ram0 and /dev/ram1 mapped on one session ($da, $db)" test -b "$da" -a -b "$db"
# 2 jobs of 32 requests each, on each device; b's run is 4 times a's (the
# quick tier halves both, to keep make check near its 35 minutes).
few() { fio_verify "$1" 4k "$2" --iodepth=32 --numjobs=2 --offset_increment="$2"; }
FEW_A=$(by_tier 4M 8M)
few "$db" $(( ${FEW_A%M} * 4 ))M > /tmp/rs-fb.out 2>&1 & fb=$!
few "$da" "$FEW_A" > /tmp/rs-fa.out 2>&1; ra=$?
tap_check "fio verify on a, beside b's, with 8 permits: clean" test $ra = 0
kill -0 $fb 2> /dev/null; rb_running=$?
tap_check "unmap a (normal) while b's IO runs" \
	sh -c "echo normal > /sys/block/${da#/dev/}/rnbd/unmap_device"
wait $fb; rb=$?
tap_check "fio verify on b, across a's unmap: clean" test $rb = 0
[ $rb_running = 0 ] || diag "b's fio had ended before a's unmap: the unmap did not run under IO"
tap_check "unmap b" sh -c "echo normal > /sys/block/${db#/dev/}/rnbd/unmap_device"
tap_check "the session is gone on both sides" \
	wait_for 60 sh -c "[ ! -e /sys/class/rtrs-client/$S2 ] && [ ! -e $SRV/$S2 ]"
tap_check "rnbd-client-rs unloads" unload_modules rnbd_client_rs rtrs_client_rs
stop_server
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
