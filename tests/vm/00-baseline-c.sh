#!/bin/bash
# Baseline: the in-tree C rtrs-client and rtrs-server over rdma_rxe map an rnbd
# device; fio writes and reads it back with crc32c at 4k and 128k. This is the
# comparison baseline and the proof that the test bed's RDMA stack works.
. "$(dirname "$0")/../lib.sh"
tap_plan 9

tap_check "rdma_rxe is bound to eth0" sh -c 'rdma link show | grep -q "netdev eth0"'
tap_check "in-tree rnbd-server and a brd disk load" start_server 65536
tap_check "in-tree rnbd-client loads with modprobe" modprobe rnbd_client
tap_check "rnbd-client resolves to the in-tree rtrs-client" \
	sh -c 'modinfo -n rtrs_client | grep -q "/kernel/drivers/infiniband/ulp/rtrs/rtrs-client.ko"'

dev=$(map_rnbd base /dev/ram0)
if [ -b "$dev" ]; then tap_ok "map_device over the C client gives $dev"; else tap_not_ok "map_device over the C client"; fi

for bs in 4k 128k; do
	if out=$(fio_verify "$dev" $bs "$(by_tier 4M 16M)" 2>&1); then
		tap_ok "fio randwrite+verify crc32c bs=$bs"
	else
		tap_not_ok "fio randwrite+verify crc32c bs=$bs"; diag "$out"
	fi
done

# The C client's own counters must have seen the IO: stats/rdma is
# "<read cnt> <read bytes> <write cnt> <write bytes> <inflight> <failover>".
rdma=$(cat /sys/class/rtrs-client/base/paths/*/stats/rdma 2>/dev/null)
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
