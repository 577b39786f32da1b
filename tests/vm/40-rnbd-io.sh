#!/bin/bash
# Verified IO through the unmodified rnbd-client over this module, with the
# server at always_invalidate=Y (default) and =N: fio crc32c, randwrite then
# read back, and randrw, over block sizes, queue depths and job counts; the
# path's stats/rdma must agree with what fio wrote. The full tier runs the
# cross product at always_invalidate=Y and a reduced set at =N (TCG is
# slow); the quick tier runs fewer sizes, depths and job counts in each.
. "$(dirname "$0")/../lib.sh"
ncpu=$(nproc)
Y_BS=$(by_tier "512 4k max" "512 4k 64k 128k max") Y_QD=$(by_tier 64 "1 64") Y_NJ=$(by_tier "$ncpu" "1 $ncpu")
N_BS=$(by_tier "4k max" "4k 128k max") N_QD=64 N_NJ=$ncpu
words() { echo $#; }
# shellcheck disable=SC2086 # the lists are split into words on purpose
PLAN=$(( (5 + $(words $Y_BS) * $(words $Y_QD) * $(words $Y_NJ) * 2 + 1) +
	(5 + $(words $N_BS) * $(words $N_QD) * $(words $N_NJ) * 2 + 1) + 1 ))
skip_all_unless_api $PLAN
tap_plan $PLAN

# run_matrix <always_invalidate> <block sizes> <queue depths> <job counts>
run_matrix() {
	local inval=$1 bss=$2 qds=$3 njs=$4
	srv_up() {
		modprobe rtrs_server always_invalidate="$1" && start_server 131072 &&
			[ "$(cat /sys/module/rtrs_server/parameters/always_invalidate)" = "$1" ]
	}
	tap_check "[inval=$inval] server side loads with always_invalidate=$inval" srv_up "$inval"
	tap_check "[inval=$inval] client stack loads" load_rnbd_rs
	local dev; dev=$(map_rnbd io /dev/ram0)
	if [ -b "$dev" ]; then tap_ok "[inval=$inval] mapped $dev"; else tap_not_ok "[inval=$inval] map"; fi
	local maxio; maxio=$(( $(cat /sys/block/${dev#/dev/}/queue/max_hw_sectors_kb) * 1024 ))
	tap_check "[inval=$inval] max_io_size is sane ($maxio)" test "$maxio" -ge 4096
	local before; before=$(path_rdma_stats io); set -- $before; local wc0=${3:-0} wb0=${4:-0}
	tap_ok "[inval=$inval] stats before: $before"
	local written=0 bs b qd nj rw out
	for bs in $bss; do
		b=$bs; [ "$bs" = max ] && b=$maxio
		for qd in $qds; do
			for nj in $njs; do
				for rw in randwrite randrw; do
					out=$(fio --name=v --filename="$dev" --direct=1 --ioengine=libaio \
						--iodepth=$qd --numjobs=$nj --rw=$rw --bs=$b --size=1M \
						--offset_increment=1M --verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
						--randrepeat=0 --group_reporting --output-format=json 2>&1)
					if [ $? -eq 0 ]; then
						tap_ok "[inval=$inval] fio $rw bs=$bs iodepth=$qd numjobs=$nj"
						written=$(( written + $(echo "$out" | sed -n '/^{/,$p' | jq '.jobs[0].write.io_bytes' 2>/dev/null || echo 0) ))
					else
						tap_not_ok "[inval=$inval] fio $rw bs=$bs iodepth=$qd numjobs=$nj"; diag "$out"
					fi
				done
			done
		done
	done
	# stats/rdma counts each request's user header (rnbd's IO message) with
	# its data, as the C client does: the excess over fio's data bytes must be
	# the same whole number of header bytes for every write request.
	local after; after=$(path_rdma_stats io); set -- $after
	local dwc=$(( ${3:-0} - wc0 )) dwb=$(( ${4:-0} - wb0 ))
	local extra=$(( dwb - written ))
	diag "stats after: $after; fio wrote $written bytes in $dwc write requests; excess $extra"
	if [ "$dwc" -gt 0 ] && [ "$extra" -ge 0 ] && [ $(( extra % dwc )) -eq 0 ] &&
		[ $(( extra / dwc )) -le 128 ] && [ "${5:-1}" -eq 0 ]; then
		tap_ok "[inval=$inval] stats/rdma write bytes = fio's $written + $(( extra / dwc )) header bytes x $dwc requests, inflight 0"
	else
		tap_not_ok "[inval=$inval] stats/rdma write bytes agree with fio, inflight 0"
	fi
	unmap_rnbd io
	unload_modules rnbd_client rtrs_client_rs
	stop_server
}

run_matrix Y "$Y_BS" "$Y_QD" "$Y_NJ"
run_matrix N "$N_BS" "$N_QD" "$N_NJ"
left=$(rtrs_modules_loaded)
tap_check "nothing left loaded" test -z "$left"
tap_done
