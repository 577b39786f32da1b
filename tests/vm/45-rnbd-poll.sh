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
ncpu=$(nproc)
# The quick tier moves less data per fio run.
URING_SZ=$(by_tier 512k 2M) SYNC_SZ=$(by_tier 256k 2M) MIXED_SZ=$(by_tier 512k 2M)
# Sleeps and reads without a process (each costs ~0.3 s under TCG): a
# timed read on a pipe nobody writes to.
exec {nap_fd}<> <(:)
nap() { read -r -t "$1" -u "$nap_fd" _ || true; }

tap_check "server side loads" start_server 65536
tap_check "client stack loads" load_rnbd_rs
dmesg -C
dev=$(map_rnbd pq /dev/ram0 nr_poll_queues=$npoll)
if [ -b "$dev" ]; then tap_ok "mapped $dev with nr_poll_queues=$npoll"; else tap_not_ok "map with poll queues"; diag "$(dmesg | tail)"; fi
b=${dev#/dev/}
tap_check "rnbd maps poll queues (dmesg)" sh -c "dmesg | grep -q 'mapped $ncpu/$ncpu/$npoll default/read/poll queues'"
iopoll=; { read -r iopoll < "/sys/block/$b/queue/io_poll"; } 2>/dev/null
tap_check "queue/io_poll is 1" test "$iopoll" = 1
# The server counts the client's connections of the path (con_num).
srvpath=(/sys/class/rtrs-server/pq/paths/*)
diag "server path: ${srvpath[0]}"
path_connected() {
	local f s
	for f in /sys/class/rtrs-client/pq/paths/*/state; do
		read -r s < "$f" && [ "$s" = connected ] && return 0
	done
	return 1
}
tap_check "client state CONNECTED" path_connected

# blk-mq debugfs (6.12 keeps no per-hctx counters): a poll hctx (numbered
# after the nproc shared default/read ones) is TAG_ACTIVE while requests are
# allocated on it (cleared by the timeout work once the queue is idle), so
# it is sampled while polled IO runs, and once right after.
poll_hctx_active() {
	local i l
	for (( i = ncpu; i < ncpu + npoll; i++ )); do
		while read -r l; do
			[[ $l == *TAG_ACTIVE* ]] && return 0
		done < "/sys/kernel/debug/block/$b/hctx$i/state"
	done 2>/dev/null
	return 1
}
no_poll_active() {
	[ -e "/sys/kernel/debug/block/$b/hctx$ncpu/state" ] && ! poll_hctx_active
}
tap_check "no poll hctx active before polled IO" no_poll_active
# io_uring hipri (IOPOLL) uses the poll hctxs: sampled while its verified
# write and read back runs (under TCG fio may take seconds to start).
fout=/tmp/rtrs-45-fio.out
fio --name=poll-io_uring --filename="$dev" --direct=1 --ioengine=io_uring --hipri=1 \
	--iodepth=8 --rw=randwrite --bs=4k --size="$URING_SZ" \
	--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
	--output-format=terse --terse-version=3 > "$fout" 2>&1 &
fpid=$!
seen=0
while kill -0 $fpid 2>/dev/null; do
	poll_hctx_active && { seen=1; break; }
	nap 0.1
done
wait $fpid; frc=$?
poll_hctx_active && seen=1
if [ $frc -eq 0 ]; then tap_ok "polled fio (io_uring hipri) verifies"; else tap_not_ok "polled fio (io_uring hipri)"; diag "$(cat "$fout")"; fi
tap_check "io_uring hipri requests go through a poll hctx (fio rc $frc)" test $seen = 1 -a $frc = 0
rm -f "$fout"
# pvsync2 hipri: the sync direct-IO path ignores HIPRI in 6.12, so this is
# data verification only.
out=$(fio --name=poll-pvsync2 --filename="$dev" --direct=1 --ioengine=pvsync2 --hipri=1 \
	--iodepth=1 --rw=randwrite --bs=4k --size="$SYNC_SZ" \
	--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
	--output-format=terse --terse-version=3 2>&1)
if [ $? -eq 0 ]; then tap_ok "polled fio (pvsync2 hipri) verifies"; else tap_not_ok "polled fio (pvsync2 hipri)"; diag "$out"; fi

out=$(fio --name=mixed --filename="$dev" --direct=1 --ioengine=libaio --iodepth=32 --numjobs=2 \
	--rw=randrw --bs=64k --size="$MIXED_SZ" --offset_increment=2M --verify=crc32c --do_verify=1 \
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
