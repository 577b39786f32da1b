#!/bin/bash
# In the VM: the main job's steps, printed as they run.
set -euo pipefail
. "$(dirname "$0")/../tests/lib.sh"
step() { echo; echo "== $*"; }

# show_paths <sess>: each path's state and stats/rdma.
show_paths() {
	local p
	for p in /sys/class/rtrs-client/"$1"/paths/*; do
		echo "${p##*/}: state=$(cat "$p/state") rdma=[$(cat "$p/stats/rdma" 2>/dev/null || echo n/a)]"
	done
}

step "RDMA device bound to the NIC"
rdma link show
step "server: brd disk exported by the in-tree rnbd-server and rtrs-server"
start_server 65536

if rs_api_exported; then
	step "client: the unmodified in-tree rnbd-client over rtrs-client-rs (insmod)"
	load_rnbd_rs
	lsmod | grep -E '^(rnbd_client|rtrs_client_rs|rtrs_core)'
	dev=$(map_rnbd demo /dev/ram0)
	echo "mapped $dev over rtrs_client_rs"
	step "fio randwrite with crc32c verify, 4k, 8 MiB"
	fio_verify "$dev" 4k 8M --output-format=normal | grep -E 'write:|read:|verify|err' || true
	step "path stats"
	show_paths demo
	step "unmap and unload"
	unmap_rnbd demo
	unload_modules rnbd_client rtrs_client_rs
else
	step "client: rnbd over the in-tree C client (this module does not export the API yet)"
	modprobe rnbd_client
	dev=$(map_rnbd demo /dev/ram0)
	echo "mapped $dev"
	fio_verify "$dev" 4k 8M --output-format=normal | grep -E 'write:|read:|verify|err' || true
	show_paths demo
	unmap_rnbd demo
	unload_modules rnbd_client rtrs_client
	step "this module: rtrs-client-rs"
	load_rs
	lsmod | grep rtrs_client_rs
	ls -ld /sys/class/rtrs-client
	dmesg | grep 'rtrs_client_rs:' | tail -n 5
	unload_modules rtrs_client_rs
fi
stop_server
echo; echo "demo: ok"
