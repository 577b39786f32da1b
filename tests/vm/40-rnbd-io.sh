#!/bin/bash
# Verified IO through the unmodified rnbd-client over this module, with the
# server at always_invalidate=Y (default) and =N: fio crc32c, randwrite then
# read back, and randrw, over block sizes, queue depths and job counts; the
# path's stats/rdma must agree with what fio wrote. The full tier runs the
# cross product at always_invalidate=Y and a reduced set at =N (TCG is
# slow), each job moving 1 MB per thread (128 KB at 512 bytes); the quick
# tier runs fewer sizes, depths and job counts in each, and less data per job
# (still a few requests at max_io_size). Each matrix is
# one fio process whose jobs run one after another (stonewall), each job
# one test point; the client stack stays loaded while the server side is
# reloaded with the other always_invalidate.
. "$(dirname "$0")/../lib.sh"
ncpu=$(nproc)
Y_BS=$(by_tier "512 4k max" "512 4k 64k 128k max") Y_QD=$(by_tier 64 "1 64") Y_NJ=$(by_tier "$ncpu" "1 $ncpu")
N_BS=$(by_tier "4k max" "4k 128k max") N_QD=64 N_NJ=$ncpu
QUICK=$(by_tier 1 0)
# shellcheck disable=SC2206 # the lists are split into words on purpose
ybs=($Y_BS) yqd=($Y_QD) ynj=($Y_NJ) nbs=($N_BS)
PLAN=$(( (5 + ${#ybs[@]} * ${#yqd[@]} * ${#ynj[@]} * 2 + 1) +
	(5 + ${#nbs[@]} * 1 * 1 * 2 + 1) + 1 ))
skip_all_unless_api $PLAN
tap_plan $PLAN

# io_size <bs bytes>: the bytes each job moves. The full tier: 1M, but
# 128K at 512 bytes (256 requests, as many as 1M at 4k: 1M took some 2048
# writes and their verify reads per job thread, ~43000 requests over the
# matrix at 25-50 IOPS under TCG); the quick tier: 128 sub-sector requests,
# 64 of 4k, 4 of any larger size.
io_size() {
	if [ "$QUICK" = 0 ]; then
		if [ "$1" = 512 ]; then SZ=131072; else SZ=1048576; fi
		return
	fi
	case $1 in
	512) SZ=65536 ;;
	4096) SZ=262144 ;;
	*) SZ=$(( 4 * $1 )) ;;
	esac
}

# job_io_ok <expected write bytes, 0 for randrw> <written> <read>: a
# randwrite job wrote all of its range and read it back; a randrw job both
# wrote and read.
job_io_ok() {
	if [ "$1" != 0 ]; then
		[ "$2" = "$1" ] && [ "$3" -ge "$2" ]
	else
		[ "$2" -gt 0 ] && [ "$3" -gt 0 ]
	fi
}

# client_idle: the client stack is loaded and has no session.
client_idle() {
	local s=(/sys/class/rtrs-client/*)
	[ -e /sys/module/rnbd_client/refcnt ] && [ -e /sys/module/rtrs_client_rs/refcnt ] &&
		[ ! -e "${s[0]}" ] || { echo "sessions: ${s[*]}"; false; }
}

# fresh_rdma_stats <stats/rdma line>: six counters ("rc rb wc wb inflight
# failover"), as a session just opened has them: no write, no failover yet
# (rnbd's open and the first reads are reads; one may still be in flight).
fresh_rdma_stats() {
	[[ $1 =~ ^[0-9]+\ [0-9]+\ 0\ 0\ [0-9]+\ 0$ ]] || { echo "stats/rdma: '$1'"; false; }
}

srv_up() {
	local p
	modprobe rtrs_server always_invalidate="$1" && start_server 131072 &&
		read -r p < /sys/module/rtrs_server/parameters/always_invalidate && [ "$p" = "$1" ]
}

# run_matrix <always_invalidate> <block sizes> <queue depths> <job counts>
run_matrix() {
	local inval=$1 bss=$2 qds=$3 njs=$4
	tap_check "[inval=$inval] server side loads with always_invalidate=$inval" srv_up "$inval"
	if [ "$inval" = Y ]; then
		tap_check "[inval=$inval] client stack loads" load_rnbd_rs
	else
		# The client stack stayed loaded over the server's reload.
		tap_check "[inval=$inval] client stack still loaded, no session left from the last matrix" client_idle
	fi
	local dev; dev=$(map_rnbd io /dev/ram0)
	if [ -b "$dev" ]; then tap_ok "[inval=$inval] mapped $dev"; else tap_not_ok "[inval=$inval] map"; fi
	local maxio; read -r maxio < "/sys/block/${dev#/dev/}/queue/max_hw_sectors_kb"; maxio=$(( ${maxio:-0} * 1024 ))
	tap_check "[inval=$inval] max_io_size is sane ($maxio)" test "$maxio" -ge 4096
	local before; before=$(path_rdma_stats io)
	tap_check "[inval=$inval] stats/rdma of the new session before the IO: ${before:-unreadable}" fresh_rdma_stats "$before"
	set -- $before; local wc0=${3:-0} wb0=${4:-0}
	# One job (a reporting group: stonewall) per combination, in order.
	local args=() descs=() expect=() bs b qd nj rw
	for bs in $bss; do
		b=$bs; [ "$bs" = 4k ] && b=4096; [ "$bs" = 64k ] && b=65536; [ "$bs" = 128k ] && b=131072
		[ "$bs" = max ] && b=$maxio
		io_size "$b"
		for qd in $qds; do
			for nj in $njs; do
				for rw in randwrite randrw; do
					args+=(--name="j${#descs[@]}" --rw="$rw" --bs="$b" --size="$SZ" --iodepth="$qd" --numjobs="$nj" --stonewall)
					descs+=("$rw bs=$bs iodepth=$qd numjobs=$nj")
					# randwrite writes all of it (then reads it back to verify).
					if [ $rw = randwrite ]; then expect+=($(( nj * (SZ / b) * b ))); else expect+=(0); fi
				done
			done
		done
	done
	local json=/tmp/rtrs-40-$inval.json out rc
	out=$(fio --filename="$dev" --direct=1 --ioengine=libaio --offset_increment=1M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--randrepeat=0 --group_reporting --output-format=json --output="$json" "${args[@]}" 2>&1)
	rc=$?
	# Per job: name, errno, bytes written, bytes read (the verify reads count).
	local res=() written=0 nerr=0 i name err wb rb line
	while read -r line; do res+=("$line"); done < <(sed -n '/^{/,$p' "$json" 2>/dev/null |
		jq -r '.jobs[] | "\(.jobname) \(.error) \(.write.io_bytes) \(.read.io_bytes)"' 2>/dev/null)
	for line in "${res[@]}"; do
		read -r name err wb rb <<<"$line"; [ "$err" = 0 ] || nerr=$((nerr + 1))
	done
	[ $rc -eq 0 ] || diag "fio rc $rc: $out"
	for i in "${!descs[@]}"; do
		name="" err="" wb=0 rb=0
		[ -n "${res[i]}" ] && read -r name err wb rb <<<"${res[i]}"
		written=$(( written + ${wb:-0} ))
		# fio failing as a whole with no job to blame fails every job.
		if [ "$name" = "j$i" ] && [ "$err" = 0 ] && { [ $rc -eq 0 ] || [ $nerr -gt 0 ]; } &&
			job_io_ok "${expect[i]}" "$wb" "$rb"; then
			tap_ok "[inval=$inval] fio ${descs[i]}"
		else
			tap_not_ok "[inval=$inval] fio ${descs[i]}"; diag "job ${res[i]:-missing} (expected j$i, error 0, ${expect[i]} bytes written and read back)"
		fi
	done
	rm -f "$json"
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
	# The server side goes for the next matrix (brd and rtrs_core stay:
	# the client holds rtrs_core).
	unload_modules rnbd_server rtrs_server
}

run_matrix Y "$Y_BS" "$Y_QD" "$Y_NJ"
run_matrix N "$N_BS" "$N_QD" "$N_NJ"
unload_modules rnbd_client rtrs_client_rs
stop_server
left=$(rtrs_modules_loaded)
tap_check "nothing left loaded" test -z "$left"
tap_done
