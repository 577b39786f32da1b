#!/bin/bash
# In the VM: the main job's steps, printed as they run.
set -euo pipefail
. "$(dirname "$0")/../tests/lib.sh"
step() { echo; echo "== $*"; }

step "RDMA device bound to the NIC"
rdma link show
step "C server: brd disk exported by the in-tree rnbd-server"
start_server 65536
lsmod | grep -E '^(rnbd|rtrs|brd)' || true
step "C client: map /dev/ram0 through the in-tree rnbd-client and rtrs-client"
modprobe rnbd_client
dev=$(map_rnbd demo /dev/ram0)
echo "mapped $dev"
step "fio randwrite with crc32c verify, 4k, 8 MiB"
fio_verify "$dev" 4k 8M --output-format=normal | grep -E 'write:|read:|verify|err' || true
step "path stats of the C client"
for p in /sys/class/rtrs-client/demo/paths/*; do
	echo "${p##*/}: state=$(cat "$p/state") rdma=[$(cat "$p/stats/rdma")]"
done
step "unmap and unload the C client"
unmap_rnbd demo
unload_modules rnbd_client rtrs_client
step "this module: rtrs-client-rs"
load_rs
lsmod | grep rtrs_client_rs
ls -ld /sys/class/rtrs-client
dmesg | grep 'rtrs_client_rs:' | tail -n 5
rmmod rtrs_client_rs
stop_server
echo; echo "demo: ok"
