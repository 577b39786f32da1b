#!/bin/bash
# Poll queues: rnbd maps a device with nr_poll_queues, so this module opens
# the session with IB_POLL_DIRECT connections after the IRQ ones, and polled
# IO (RWF_HIPRI through pvsync2, io_uring hipri) reaches
# rtrs_clt_rdma_cq_direct. Data is verified with crc32c; the server must see
# the extra connections; blk-mq's debugfs must show the poll callback ran.
. "$(dirname "$0")/../lib.sh"
PLAN=14
skip_all_unless_api $PLAN
tap_plan $PLAN
npoll=2

tap_check "server side loads" start_server 65536
tap_check "client stack loads" load_rnbd_rs
dmesg -C
dev=$(map_rnbd pq /dev/ram0 nr_poll_queues=$npoll)
if [ -b "$dev" ]; then tap_ok "mapped $dev with nr_poll_queues=$npoll"; else tap_not_ok "map with poll queues"; diag "$(dmesg | tail)"; fi
b=${dev#/dev/}
tap_check "rnbd maps poll queues (dmesg)" sh -c "dmesg | grep -q 'mapped $(nproc)/$(nproc)/$npoll default/read/poll queues'"
tap_check "queue/io_poll is 1" test "$(cat /sys/block/$b/queue/io_poll 2>/dev/null)" = 1
# The server counts the client's connections of the path (con_num).
srvpath=$(ls -d /sys/class/rtrs-server/pq/paths/* 2>/dev/null | head -1)
diag "server path: $srvpath"
tap_check "client state CONNECTED" sh -c "grep -qx connected /sys/class/rtrs-client/pq/paths/*/state"

# blk-mq debugfs (6.12 keeps no per-hctx counters): a poll hctx (numbered
# after the nproc shared default/read ones) is TAG_ACTIVE while requests are
# allocated on it (cleared by the timeout work once the queue is idle), so
# it is sampled while polled IO runs.
poll_hctx_active() {
	local i
	for i in $(seq "$(nproc)" $(( $(nproc) + npoll - 1 ))); do
		grep -q TAG_ACTIVE /sys/kernel/debug/block/$b/hctx$i/state 2>/dev/null && return 0
	done
	return 1
}
no_poll_active() {
	[ -e "/sys/kernel/debug/block/$b/hctx$(nproc)/state" ] && ! poll_hctx_active
}
tap_check "no poll hctx active before polled IO" no_poll_active
# pvsync2 hipri: the sync direct-IO path ignores HIPRI in 6.12, so this is
# data verification only; io_uring hipri (IOPOLL) uses the poll hctxs.
for eng in pvsync2 io_uring; do
	out=$(fio --name=poll-$eng --filename="$dev" --direct=1 --ioengine=$eng --hipri=1 \
		--iodepth="$([ $eng = io_uring ] && echo 8 || echo 1)" --rw=randwrite --bs=4k --size=2M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		--output-format=terse --terse-version=3 2>&1)
	if [ $? -eq 0 ]; then tap_ok "polled fio ($eng hipri) verifies"; else tap_not_ok "polled fio ($eng hipri)"; diag "$out"; fi
done
fio --name=sample --filename="$dev" --direct=1 --ioengine=io_uring --hipri=1 --iodepth=8 \
	--rw=randread --bs=4k --size=8M --time_based --runtime=6 --output-format=terse >/dev/null 2>&1 &
fpid=$!
# Sampled for as long as fio runs (under TCG it may take seconds to start).
seen=0
while kill -0 $fpid 2>/dev/null; do
	poll_hctx_active && { seen=1; break; }
	sleep 0.1
done
wait $fpid; frc=$?
tap_check "io_uring hipri requests go through a poll hctx (fio rc $frc)" test $seen = 1 -a $frc = 0

out=$(fio --name=mixed --filename="$dev" --direct=1 --ioengine=libaio --iodepth=32 --numjobs=2 \
	--rw=randrw --bs=64k --size=2M --offset_increment=2M --verify=crc32c --do_verify=1 \
	--verify_fatal=1 --verify_state_save=0 --randrepeat=0 --output-format=terse 2>&1)
if [ $? -eq 0 ]; then tap_ok "interrupt-driven IO on the same session verifies"; else tap_not_ok "libaio IO"; diag "$out"; fi
# shellcheck disable=SC2046 # split into the stats fields
set -- $(path_rdma_stats pq)
tap_check "inflight back to 0 (${5:-?})" test "${5:-1}" -eq 0
tap_check "unmap" unmap_rnbd pq
unload_modules rnbd_client rtrs_client_rs
stop_server
tap_check "everything unloads" test -z "$(rtrs_modules_loaded)"
tap_done
