#!/bin/bash
# In the VM: the main job's steps, printed as they run. rnbd over this module
# with two paths (eth0's address and a second one on eth0), a verified fio
# run during which path 2 is disconnected and reconnected, per-path stats.
set -euo pipefail
. "$(dirname "$0")/../tests/lib.sh"
step() { echo; echo "== $*"; }
A2=10.0.2.16

# show_paths <sess>: each path's state and stats.
show_paths() {
	local p
	for p in /sys/class/rtrs-client/"$1"/paths/*; do
		echo "${p##*/}: state=$(cat "$p/state") cur_latency=$(cat "$p/cur_latency")"
		echo "    rdma (rd_cnt rd_bytes wr_cnt wr_bytes inflight failover): $(cat "$p/stats/rdma")"
		echo "    reconnects (ok fail): $(cat "$p/stats/reconnects")"
	done
}

step "RDMA device bound to the NIC; a second address for a second path"
ip addr add $A2/24 dev eth0
rdma link show
step "server: brd disk exported by the in-tree rnbd-server and rtrs-server"
start_server 65536

step "client: the unmodified in-tree rnbd-client over rtrs-client-rs (insmod)"
load_rnbd_rs
lsmod | grep -E '^(rnbd_client|rtrs_client_rs|rtrs_core)'
echo "sessname=demo path=ip:$SRV_ADDR path=ip:$A2 device_path=/dev/ram0" > $RNBD_CTL/map_device
dev=/dev/$(basename "$(ls -d /sys/block/rnbd* | head -1)")
echo "mapped $dev over rtrs_client_rs, policy: $(cat /sys/class/rtrs-client/demo/mpath_policy)"
show_paths demo

step "fio randrw with crc32c verify while path 2 flaps"
fio --name=demo --filename="$dev" --direct=1 --ioengine=libaio --iodepth=32 --numjobs=2 \
	--rw=randrw --bs=4k --size=8M --offset_increment=8M --time_based --runtime=15 \
	--verify=crc32c --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
	--group_reporting --output-format=normal > /tmp/demo-fio.out 2>&1 &
fpid=$!
p2=/sys/class/rtrs-client/demo/paths/ip:$SRV_ADDR@ip:$A2
sleep 4
echo "disconnect path 2"; echo 1 > "$p2/disconnect"; echo "path 2: $(cat "$p2/state")"
sleep 3
echo "reconnect path 2"; echo 1 > "$p2/reconnect"; echo "path 2: $(cat "$p2/state")"
rc=0; wait $fpid || rc=$?
grep -E 'read:|write:|verify|err' /tmp/demo-fio.out || true
echo "fio exit status: $rc"
step "per-path stats"
show_paths demo
step "unmap and unload"
unmap_rnbd demo
unload_modules rnbd_client rtrs_client_rs
stop_server
[ $rc -eq 0 ]
echo; echo "demo: ok"
