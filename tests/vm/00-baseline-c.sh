#!/bin/bash
# Baseline: the in-tree C rtrs-client and rtrs-server over rdma_rxe map an rnbd
# device; fio writes and reads it back with crc32c at 4k and 128k. This is the
# comparison baseline and the proof that the test bed's RDMA stack works.
# The quick tier moves 512 KB at 4k and 1 MB at 128k, the full tier 2 MB at
# 4k (512 writes and reads, its queue of 16 filled many times over) and 16 MB
# at 128k (under TCG fio does some 40 IOPS at 4k, and its start costs seconds).
# A process costs about 0.5 s under TCG: the checks use builtins where they can.
. "$(dirname "$0")/../lib.sh"
tap_plan 9

rxe_on_eth0() { local l; l=$(rdma link show) && [[ $l == *"netdev eth0"* ]] || { echo "$l"; return 1; }; }
tap_check "rdma_rxe is bound to eth0" rxe_on_eth0
tap_check "in-tree rnbd-server and a brd disk load" start_server 65536
tap_check "in-tree rnbd-client loads with modprobe" modprobe rnbd_client
c_client_ko() {
	local f; f=$(modinfo -n rtrs_client) &&
		[[ $f == */kernel/drivers/infiniband/ulp/rtrs/rtrs-client.ko* ]] || { echo "$f"; return 1; }
}
tap_check "rnbd-client resolves to the in-tree rtrs-client" c_client_ko

dev=$(map_rnbd base /dev/ram0)
if [ -b "$dev" ]; then tap_ok "map_device over the C client gives $dev"; else tap_not_ok "map_device over the C client"; fi

# fio in threads, without disk stats and its clock test (the job and what it
# checks are the same; under TCG that saves at most a second of fio's start,
# which is some 9 s, probably loading its 64 shared libraries).
for bs in 4k 128k; do
	if [ $bs = 4k ]; then size=$(by_tier 512k 2M); else size=$(by_tier 1M 16M); fi
	t=$SECONDS
	if out=$(fio_verify "$dev" $bs "$size" --thread --disk_util=0 --clocksource=clock_gettime 2>&1); then
		echo "# fio bs=$bs size=$size: $((SECONDS - t)) s"
		tap_ok "fio randwrite+verify crc32c bs=$bs"
	else
		tap_not_ok "fio randwrite+verify crc32c bs=$bs"; diag "$out"
	fi
done

# The C client's own counters must have seen the IO: stats/rdma is
# "<read cnt> <read bytes> <write cnt> <write bytes> <inflight> <failover>".
rdma=
for f in /sys/class/rtrs-client/base/paths/*/stats/rdma; do [ -r "$f" ] && read -r rdma < "$f"; done
diag "stats/rdma: $rdma"
set -- $rdma
if [ "${1:-0}" -gt 0 ] && [ "${3:-0}" -gt 0 ] && [ "${5:-1}" -eq 0 ]; then
	tap_ok "C client stats/rdma counted reads and writes, inflight 0"
else
	tap_not_ok "C client stats/rdma counted reads and writes, inflight 0"
fi

unmap_rnbd base
unload_modules rnbd_client rtrs_client
stop_server
left=$(rtrs_modules_loaded)
if [ -z "$left" ]; then tap_ok "unmap and unload leave no rtrs/rnbd module"; else tap_not_ok "unmap and unload leave no rtrs/rnbd module"; diag "still loaded: $left"; fi
tap_done
