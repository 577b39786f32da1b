#!/bin/bash
# In the VM (scripts/bench.sh boots it): the C client against this module,
# through the unmodified rnbd-client, in one boot, alternated (C, this
# module, C, ... : ABAB). It writes one fio JSON per run and a line per run
# to $OUT/runs.tsv; scripts/bench-report.py turns them into the tables.
#
# Sections (BENCH_SECTIONS, in this order by default):
#   ceiling  fio on the server's own brd disk, and raw verbs over rxe_eth0
#            (perftest ib_read_lat, ib_write_bw, ib_read_bw)
#   matrix   randread/randwrite x 4k/64k x QD 1/32/128 x 1 job/one per CPU,
#            over one path and over two paths under each policy (MATRIX_TWO=0:
#            one path only)
#   cpu      system+irq+softirq CPU time per IO at a fixed IO rate
#   scale    IOPS and CPU per IO at 1, 8, 32 and 127 paths, each policy
#   stall    longest completion under QD 32 when one of two paths is cut
#            silently, disconnected, or loses its RDMA device
#   memory   Slab/SUnreclaim/vmalloc/percpu after the map and after each
#            added path, up to 32 paths
#   profile  (only when named) a cpu-clock profile over one path for each
#            client: where the CPU goes per IO (perf record -a); the cells
#            are PROF_CELLS, "rw bs qd" separated by commas, each in the
#            server modes PROF_INV (always_invalidate), ROUNDS times
#   insn     (only when named; scripts/bench.sh boots a VM of its own for
#            it, under the TCG plugin scripts/qemu-insn-count.c) exact
#            instruction counts of the guest kernel per address, for each
#            client over one path: INSN_CELLS ("rw bs qd" separated by
#            commas), in the server modes PROF_INV, ROUNDS times; counters
#            reset after the ramp and dumped after INSN_SECS, the rnbd
#            device's completed IOs read around both (insn.tsv; raw/ holds
#            the module symbols and /proc/modules of each client load)
#   rnbd-rs  (only when named) the Rust stack, rnbd-client-rs on this module
#            (RNBD_RS_KO), against C's rnbd-client on this module and on C's
#            rtrs-client: 4k randread/randwrite at QD 1 and 32 over one path,
#            then CPU per IO at a fixed rate (4k QD 32), the three stacks
#            alternated round by round (client c, rs and rsrs in runs.tsv)
#   rnbd-rs-few  (only when named) few permits: 4k randread and randwrite,
#            4 jobs of QD 32 over two devices of one session whose server
#            gives 8 permits (FEW_QD); then one job of QD 1 on one device
#            beside 4 jobs of QD 32 on the other (its IOPS and latency);
#            C/C against RS/RS (and rsrs2, another rnbd-client-rs build,
#            with RNBD_RS2_KO)
# BENCH=quick runs a small version of each (development only).
set -uo pipefail
. "$(dirname "$0")/../tests/lib.sh"
OUT=${BENCH_OUT:-/run/vm-out/bench}
mkdir -p "$OUT/raw"
QUICK=0; [ "${BENCH:-full}" = quick ] && QUICK=1
ROUNDS=${ROUNDS:-$([ $QUICK = 1 ] && echo 2 || echo 3)}
RUNTIME=${RUNTIME:-$([ $QUICK = 1 ] && echo 3 || echo 5)}
RAMP=${RAMP:-1}
SECTIONS=${BENCH_SECTIONS:-ceiling matrix cpu scale stall memory}
NCPU=$(nproc)
DISK_MB=128
SRV=10.0.2.15
RUNS=$OUT/runs.tsv
[ -e "$RUNS" ] || printf 'id\tsection\tclient\tround\tpaths\tpolicy\trw\tbs\tqd\tjobs\trc\textra\n' > "$RUNS"
RUN_ID=0
FIO_NRM=--norandommap

log() { echo "bench [$(date +%T)] $*"; echo "rtrs-bench: $*" > /dev/kmsg 2>/dev/null; }

# --- the two stacks ------------------------------------------------------------
# client_load <c|rs> [server args]: the server side (brd disks and rnbd-server,
# if not loaded) and the client stack.
server_load() {
	module_loaded rnbd_server && return 0
	modprobe brd rd_nr=2 rd_size=$(( DISK_MB * 1024 )) max_part=0 &&
	modprobe rtrs_server "$@" && modprobe rnbd_server || return 1
	# Allocate the disks' pages, so that reads touch memory.
	dd if=/dev/zero of=/dev/ram0 bs=1M count=$DISK_MB oflag=direct status=none
	dd if=/dev/zero of=/dev/ram1 bs=1M count=$DISK_MB oflag=direct status=none
}
server_unload() { unload_modules rnbd_server rtrs_server brd; }
client_load() {
	case $1 in
	c) modprobe rnbd_client ;;
	rs2) RS_KO=$RS2_KO load_rnbd_rs ;;
	*) load_rnbd_rs ;;
	esac
}
client_unload() {
	if [ "$1" = c ]; then unload_modules rnbd_client rtrs_client; else unload_modules rnbd_client rtrs_client_rs; fi
}

# Client source addresses on eth0 besides 10.0.2.15 (rxe loops them back):
# path k of a session (k >= 2) leaves from 10.0.2.(100 + k), so that the
# server, which refuses a second path from the same address, takes it.
alias_addr() { echo "10.0.2.$(( 100 + $1 ))"; }
# ensure_aliases <n>: addresses for paths 1..n on eth0 (call it in this
# shell, not in a command substitution: it remembers what it added).
ALIASES=1
ensure_aliases() {
	local n=$1 k cmds=
	[ "$n" -le "$ALIASES" ] && return 0
	for (( k = ALIASES + 1; k <= n; k++ )); do
		cmds+="addr replace $(alias_addr $k)/24 dev eth0"$'\n'
	done
	ip -batch - <<< "$cmds" || return 1
	ALIASES=$n
	wait_gid "$(alias_addr "$n")"
}
# path_of <k>: path k of a session, as rnbd and rtrs write it.
path_of() { if [ "$1" = 1 ]; then echo "ip:$SRV@ip:$SRV"; else echo "ip:$(alias_addr "$1")@ip:$SRV"; fi; }

# map_paths <sess> <disk> <n>: map /dev/<disk> over paths 1..n (after
# ensure_aliases n); prints the device.
map_paths() {
	local s=$1 disk=$2 n=$3 k p=
	for (( k = 1; k <= n; k++ )); do p+=" path=$(path_of $k)"; done
	echo "sessname=$s$p device_path=/dev/$disk" > $RNBD_CTL/map_device || return 1
	rnbd_dev_of "$s"
}
# add_paths <sess> <from> <to>: add_path k for k in from..to (after
# ensure_aliases to); prints failures.
add_paths() {
	local s=$1 k
	for (( k = $2; k <= $3; k++ )); do
		echo "$(path_of $k)" > "/sys/class/rtrs-client/$s/add_path" || echo "add_path $k failed"
	done
}
connected_paths() {
	local f n=0
	for f in /sys/class/rtrs-client/"$1"/paths/*/state; do
		_read_line "$f" && [ "$_LINE" = connected ] && n=$(( n + 1 ))
	done
	echo $n
}
set_policy() { echo "$2" > "/sys/class/rtrs-client/$1/mpath_policy"; }

# --- one fio run -----------------------------------------------------------------
# cpu_ticks: CPU_T = system + irq + softirq ticks of all CPUs so far.
cpu_ticks() {
	local _c _u _n sys _i _w irq sirq
	read -r _c _u _n sys _i _w irq sirq _ < /proc/stat
	CPU_T=$(( sys + irq + sirq ))
}
# fio_run <section> <client> <round> <paths> <policy> <dev> <rw> <bs> <qd> <jobs> [fio args...]
# One fio run with JSON output into raw/<id>.json and a line in runs.tsv
# (extra: the CPU ticks of system+irq+softirq during the run).
fio_run() {
	local sec=$1 cl=$2 rd=$3 np=$4 pol=$5 dev=$6 rw=$7 bs=$8 qd=$9 jobs=${10}
	shift 10
	RUN_ID=$(( RUN_ID + 1 ))
	local id; id=$(printf '%s-%05d' "$sec" $RUN_ID)
	local t0 t1 rc
	cpu_ticks; t0=$CPU_T
	fio --name=b --filename="$dev" --direct=1 --ioengine=libaio --rw="$rw" --bs="$bs" \
		--iodepth="$qd" --numjobs="$jobs" --group_reporting --time_based \
		--runtime="$RUNTIME" --ramp_time="$RAMP" --size=${DISK_MB}M $FIO_NRM \
		--randrepeat=0 --output-format=json --output="$OUT/raw/$id.json" "$@" \
		> "$OUT/raw/$id.err" 2>&1
	rc=$?
	cpu_ticks; t1=$CPU_T
	[ $rc -ne 0 ] && dmesg | tail -n 20 >> "$OUT/raw/$id.err"
	[ -s "$OUT/raw/$id.err" ] || rm -f "$OUT/raw/$id.err"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\tcpu_ticks=%s\n' "$id" "$sec" "$cl" "$rd" "$np" "$pol" \
		"$rw" "$bs" "$qd" "$jobs" "$rc" $(( t1 - t0 )) >> "$RUNS"
}
# iops_of <id>: the run's IOPS, whole (for the rate of the cpu section).
iops_of() {
	python3 -c 'import json,sys
j=json.load(open(sys.argv[1]))["jobs"][0]
print(int(j["read"]["iops"]+j["write"]["iops"]))' "$OUT/raw/$1.json" 2>/dev/null || echo 0
}

CLIENTS="c rs"
# A second build of this module (bench.sh: BENCH_RS2_REF) as a third client,
# "rs2", for a before/after comparison in one boot.
[ -n "${RS2_KO:-}" ] && CLIENTS="c rs rs2"
policies() { if [ "$1" = c ]; then echo "round-robin min-inflight min-latency"; else echo "round-robin min-inflight min-latency service-time"; fi; }
# The cells of the matrix: "rw bs qd jobs".
cells() {
	local rw bs qd j
	if [ $QUICK = 1 ]; then
		echo "randread 4k 32 1"; echo "randwrite 4k 32 1"; echo "randread 64k 32 1"
		return
	fi
	for rw in randread randwrite; do
		for bs in 4k 64k; do
			for qd in 1 32 128; do
				for j in 1 "$NCPU"; do echo "$rw $bs $qd $j"; done
			done
		done
	done
}

# --- sections --------------------------------------------------------------------
sec_ceiling() {
	log "ceiling: fio on the server's brd disk"
	server_load || return 1
	local rw bs qd j
	while read -r rw bs qd j; do
		fio_run ceiling local 1 0 - /dev/ram0 "$rw" "$bs" "$qd" "$j"
	done < <(cells)
	log "ceiling: raw verbs over rxe_eth0 (perftest)"
	local t
	for t in "ib_read_lat -s 4096 -n 2000" "ib_write_bw -s 4096 -n 5000" "ib_read_bw -s 4096 -n 5000" \
		"ib_write_bw -s 65536 -n 2000" "ib_read_bw -s 65536 -n 2000"; do
		RUN_ID=$(( RUN_ID + 1 ))
		local id; id=$(printf 'verbs-%05d' $RUN_ID)
		# shellcheck disable=SC2086 # $t is a command line
		timeout 120 $t -d rxe_eth0 -R -F > "$OUT/raw/$id.srv" 2>&1 &
		local spid=$!
		sleep 2
		# shellcheck disable=SC2086
		timeout 120 $t -d rxe_eth0 -R -F $SRV > "$OUT/raw/$id.txt" 2>&1
		local rc=$?
		wait $spid
		printf '%s\tverbs\tverbs\t1\t0\t-\t%s\t-\t-\t-\t%s\t\n' "$id" "${t// /_}" $rc >> "$RUNS"
	done
}

# MATRIX_TWO=0: the one-path cells only (about a fifth of the section's time).
MATRIX_TWO=${MATRIX_TWO:-1}
sec_matrix() {
	server_load || return 1
	local r cl dev1 dev2 rw bs qd j pol
	for (( r = 1; r <= ROUNDS; r++ )); do
		for cl in $CLIENTS; do
			log "matrix: round $r, client $cl"
			client_load $cl || { log "matrix: $cl does not load"; continue; }
			ensure_aliases 2
			dev1=$(map_paths b1 ram0 1); dev2=
			[ "$MATRIX_TWO" = 1 ] && dev2=$(map_paths b2 ram1 2)
			if [ ! -b "$dev1" ] || { [ "$MATRIX_TWO" = 1 ] &&
				{ [ ! -b "$dev2" ] || [ "$(connected_paths b2)" != 2 ]; }; }; then
				log "matrix: $cl: map failed ($dev1, $dev2)"
			else
				while read -r rw bs qd j; do
					fio_run matrix $cl $r 1 - "$dev1" "$rw" "$bs" "$qd" "$j"
					[ "$MATRIX_TWO" = 1 ] || continue
					for pol in $(policies $cl); do
						[ $QUICK = 1 ] && [ "$pol" != min-inflight ] && [ "$pol" != service-time ] && continue
						set_policy b2 "$pol"
						fio_run matrix $cl $r 2 "$pol" "$dev2" "$rw" "$bs" "$qd" "$j"
					done
				done < <(cells)
			fi
			unmap_rnbd b1; [ "$MATRIX_TWO" = 1 ] && unmap_rnbd b2
			client_unload $cl
		done
	done
}

# The fixed rate of the cpu and scale sections: half of what the C client
# did at 4k randread QD 32 over one path in this boot (or CPU_RATE).
CPU_RATE=${CPU_RATE:-}
pick_rate() {
	[ -n "$CPU_RATE" ] && return 0
	local id
	id=$(awk -F'\t' '$2=="matrix" && $3=="c" && $5==1 && $7=="randread" && $8=="4k" && $9==32 && $10==1 && $11==0 {print $1; exit}' "$RUNS")
	local i=0
	[ -n "$id" ] && i=$(iops_of "$id")
	CPU_RATE=$(( i / 2 ))
	[ "$CPU_RATE" -ge 100 ] || CPU_RATE=500
	log "fixed rate for CPU per IO: $CPU_RATE IOPS"
}

sec_cpu() {
	server_load || return 1
	pick_rate
	local r cl dev1 rw
	for (( r = 1; r <= ROUNDS; r++ )); do
		for cl in $CLIENTS; do
			client_load $cl || continue
			dev1=$(map_paths b1 ram0 1)
			if [ -b "$dev1" ]; then
				for rw in randread randwrite; do
					fio_run cpu $cl $r 1 - "$dev1" "$rw" 4k 32 1 --rate_iops=$CPU_RATE
				done
			fi
			unmap_rnbd b1
			client_unload $cl
		done
	done
}

sec_scale() {
	# sess_queue_depth 128 so that 127 paths fit in the VM's memory.
	server_unload; server_load sess_queue_depth=128 || return 1
	pick_rate
	local counts="1 8 32 127" r cl dev n have pol
	[ $QUICK = 1 ] && counts="1 8"
	local rounds=$(( ROUNDS < 2 ? ROUNDS : 2 ))
	for (( r = 1; r <= rounds; r++ )); do
		for cl in $CLIENTS; do
			client_load $cl || continue
			dev=$(map_paths bs ram0 1); have=1
			for n in $counts; do
				[ -b "$dev" ] || break
				if [ "$n" -gt "$have" ]; then
					log "scale: $cl adds paths $(( have + 1 ))..$n"
					ensure_aliases "$n"
					add_paths bs $(( have + 1 )) "$n" | head -n 3
					have=$n
					wait_for 120 eval "[ \$(connected_paths bs) -ge $n ]" ||
						log "scale: $cl: only $(connected_paths bs) of $n paths connected"
				fi
				for pol in $(policies $cl); do
					[ $QUICK = 1 ] && [ "$pol" != min-inflight ] && continue
					set_policy bs "$pol"
					fio_run scale $cl $r "$(connected_paths bs)" "$pol" "$dev" randread 4k 32 1
					fio_run scalecpu $cl $r "$(connected_paths bs)" "$pol" "$dev" randread 4k 32 1 --rate_iops=$CPU_RATE
				done
			done
			unmap_rnbd bs
			client_unload $cl
		done
	done
	server_unload
}

sec_stall() {
	. "$RTRS_REPO/tests/lib-mp.sh"
	# shellcheck disable=SC2034 # read by lib-mp.sh
	MP_N=2
	server_unload
	log "stall: two-path topology"
	mp_setup || { log "stall: topology failed"; mp_teardown; return 1; }
	server_load || return 1
	local cl dev kind d2 rounds=$(( QUICK == 1 ? 1 : 2 )) r
	for (( r = 1; r <= rounds; r++ )); do
		for cl in $CLIENTS; do
			client_load $cl || continue
			dev=$(mp_map_rnbd st /dev/ram0)
			if [ -b "$dev" ] && wait_for 30 mp_path_connected st 1 && wait_for 30 mp_path_connected st 2; then
				set_policy st min-inflight
				for kind in cut disconnect devloss; do
					wait_for 90 mp_path_connected st 1 && mp_path_reconnect st 2 90 ||
						log "stall: $cl: paths not both up before $kind: $(mp_status st | tr '\n' ' ')"
					d2=$(mp_path_dir st 2)
					# The action 3 s into a 15 s verified QD 32 run.
					( sleep 3
					  case $kind in
					  cut) mp_path_cut 2 ;;
					  disconnect) echo 1 > "$d2/disconnect" ;;
					  devloss) rdma link del rxe_mpc2 ;;
					  esac ) &
					local apid=$!
					# (The whole disk: a verified run must not write a block twice.)
					RUNTIME=15 RAMP=0 FIO_NRM='' fio_run stall $cl $r 2 "$kind" "$dev" randrw 4k 32 1 \
						--verify=crc32c --verify_fatal=1 --verify_state_save=0
					wait $apid
					case $kind in
					cut) mp_path_restore 2 ;;
					devloss) rdma link add rxe_mpc2 type rxe netdev mpc2; wait_for 20 _mp_port_active rxe_mpc2 ;;
					esac
				done
			else
				log "stall: $cl: map failed: $(mp_status st | tr '\n' ' ')"
			fi
			unmap_rnbd st
			client_unload $cl
		done
	done
	server_unload
	mp_teardown
}

# meminfo <client> <label> <paths>: a line of Slab, SUnreclaim, VmallocUsed
# and Percpu (kB) after dropping caches.
meminfo() {
	local k v slab=0 sunr=0 vm=0 pc=0
	sync; echo 3 > /proc/sys/vm/drop_caches
	while read -r k v _; do
		case $k in
		Slab:) slab=$v ;; SUnreclaim:) sunr=$v ;; VmallocUsed:) vm=$v ;; Percpu:) pc=$v ;;
		esac
	done < /proc/meminfo
	RUN_ID=$(( RUN_ID + 1 ))
	printf 'mem-%05d\tmemory\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t0\tslab=%s sunreclaim=%s vmalloc=%s percpu=%s\n' \
		$RUN_ID "$1" "$R" "$3" "$2" "$slab" "$sunr" "$vm" "$pc" >> "$RUNS"
}
sec_memory() {
	server_unload; server_load || return 1
	local cl dev n last=32 step
	[ $QUICK = 1 ] && last=4
	local rounds=$(( ROUNDS < 2 ? ROUNDS : 2 ))
	for (( R = 1; R <= rounds; R++ )); do
		for cl in $CLIENTS; do
			meminfo $cl unloaded 0
			client_load $cl || continue
			meminfo $cl loaded 0
			dev=$(map_paths bm ram0 1)
			[ -b "$dev" ] || { log "memory: $cl map failed"; client_unload $cl; continue; }
			meminfo $cl mapped 1
			ensure_aliases $last
			for (( n = 2; n <= last; n++ )); do
				add_paths bm $n $n
				step=$n
				wait_for 60 eval "[ \$(connected_paths bm) -ge $step ]"
				[ $n = 2 ] || [ $n = 8 ] || [ $n = $last ] || [ $(( n % 8 )) = 0 ] || continue
				meminfo $cl added "$(connected_paths bm)"
			done
			unmap_rnbd bm
			client_unload $cl
			meminfo $cl after 0
		done
	done
}

# perf samples every CPU at PROF_HZ while fio runs; the report keeps the
# sample count per module and symbol, and fio's IO count, so that
# scripts/bench-profile.py can give each symbol's CPU time per IO. Each cell
# runs in both server modes (always_invalidate Y and N: the policy column
# says which), ROUNDS times, C and this module alternated.
PROF_HZ=${PROF_HZ:-997}
PROF_SECS=${PROF_SECS:-10}
PROF_CELLS=${PROF_CELLS:-randread 4k 1,randwrite 4k 1,randread 64k 1,randread 4k 32,randwrite 4k 32,randread 64k 32}
PROF_INV=${PROF_INV:-Y N}
sec_profile() {
	command -v perf > /dev/null || { log "profile: no perf"; return 1; }
	local r cl dev rw bs qd id data cells cell inv
	IFS=, read -r -a cells <<< "$PROF_CELLS"
	for inv in $PROF_INV; do
		server_unload
		server_load always_invalidate="$inv" || return 1
		for (( r = 1; r <= ROUNDS; r++ )); do
			for cl in $CLIENTS; do
				client_load $cl || continue
				dev=$(map_paths bp ram0 1)
				if [ -b "$dev" ]; then
					for cell in "${cells[@]}"; do
						read -r rw bs qd <<< "$cell"
						data=/tmp/prof.data
						# perf's window lies inside fio's: fio starts first and
						# runs one second longer.
						# (fio_run runs in a subshell: count its id here too.)
						id=$(printf 'profile-%05d' $(( RUN_ID + 1 )))
						RUNTIME=$(( PROF_SECS + 1 )) RAMP=0 fio_run profile $cl $r 1 "inv=$inv" "$dev" "$rw" "$bs" "$qd" 1 &
						local fpid=$!
						sleep 0.5
						perf record -q -a -e cpu-clock -F "$PROF_HZ" -o $data -- sleep "$PROF_SECS" \
							> /dev/null 2>&1
						wait $fpid
						RUN_ID=$(( RUN_ID + 1 ))
						echo "hz $PROF_HZ secs $PROF_SECS" > "$OUT/raw/$id.perf"
						{
							echo "## dso"
							perf report -i $data --stdio -n --sort dso
							echo "## sym"
							perf report -i $data --stdio -n --sort dso,sym --percent-limit 0.1 \
								--kallsyms /proc/kallsyms
							# The client modules' symbols, however small each is.
							echo "## client"
							perf report -i $data --stdio -n --sort dso,sym --kallsyms /proc/kallsyms \
								--dsos '[rtrs_client],[rtrs_client_rs],[rtrs_core]'
						} >> "$OUT/raw/$id.perf" 2> /dev/null
						rm -f $data
					done
				fi
				unmap_rnbd bp
				client_unload $cl
			done
		done
	done
	server_unload
}

# Exact instructions per IO (scripts/qemu-insn-count.c counts every kernel
# instruction executed, by address; scripts/bench-insn.py attributes them to
# modules and symbols). Needs the plugin in the VM (bench.sh's own boot for
# this section) and INSN_MARK, the guest's trigger (scripts/insn-mark.c).
# Each run: fio over one path (time-based, INSN_SECS plus the ramp and one
# second of margin); after the ramp insn-mark resets the counters, INSN_SECS
# later it dumps them; each prints the rnbd device's completed IOs just before
# and after its magic no-op, and the window's IOs are the difference of the
# midpoints. One line per run in insn.tsv (dump: the plugin's dump number).
INSN_SECS=${INSN_SECS:-$([ $QUICK = 1 ] && echo 2 || echo 4)}
INSN_CELLS=${INSN_CELLS:-randread 4k 1,randwrite 4k 1,randread 64k 1,randread 4k 32,randwrite 4k 32,randread 64k 32}
# insn_wait_io <disk>: until the disk's completed IOs move (60 s at most).
insn_wait_io() {
	local n0 n i
	n0=$(awk -v d="$1" '$3 == d {print $4 + $8}' /proc/diskstats)
	for (( i = 0; i < 300; i++ )); do
		sleep 0.2
		n=$(awk -v d="$1" '$3 == d {print $4 + $8}' /proc/diskstats)
		[ "$n" != "$n0" ] && return 0
	done
	log "insn: no IO on $1 after 60 s"
	return 1
}
sec_insn() {
	[ -x "${INSN_MARK:-}" ] || { log "insn: no trigger program ('${INSN_MARK:-}')"; return 1; }
	# The plugin's file, which bench.sh puts beside this output.
	grep -q '^# qemu-insn-count' "$OUT/insn.dump" 2>/dev/null ||
		{ log "insn: no $OUT/insn.dump: is the VM under the plugin (bench.sh)?"; return 1; }
	local r cl dev rw bs qd id cells cell inv mod load=0 fpid a0 a1 b0 b1 ios alive
	local tsv=$OUT/insn.tsv
	[ -e "$tsv" ] || printf 'id\tclient\tround\tinv\trw\tbs\tqd\tmodule\tload\tdump\tios\tios_reset\tios_dump\tfio_alive\n' > "$tsv"
	{ echo "insn_secs $INSN_SECS"; echo "insn_cells $INSN_CELLS"; echo "insn_inv $PROF_INV"; } >> "$OUT/meta.txt"
	echo 0 > /proc/sys/kernel/kptr_restrict
	# The kernel's own symbols do not move in a boot: once.
	grep -v '\[' /proc/kallsyms > "$OUT/raw/insn-kallsyms-kernel.txt"
	IFS=, read -r -a cells <<< "$INSN_CELLS"
	# The plugin numbers its dumps from 1 in this boot.
	INSN_DUMP=${INSN_DUMP:-0}
	for inv in $PROF_INV; do
		server_unload
		server_load always_invalidate="$inv" || return 1
		for (( r = 1; r <= ROUNDS; r++ )); do
			for cl in $CLIENTS; do
				client_load $cl || continue
				mod=rtrs_client_rs; [ "$cl" = c ] && mod=rtrs_client
				dev=$(map_paths bi ram0 1)
				load=$(( load + 1 ))
				# The modules' symbols of this load (their addresses change
				# from load to load).
				grep '\[' /proc/kallsyms > "$OUT/raw/insn-kallsyms-$load.txt"
				cat /proc/modules > "$OUT/raw/insn-modules-$load.txt"
				if [ -b "$dev" ]; then
					for cell in "${cells[@]}"; do
						read -r rw bs qd <<< "$cell"
						id=$(printf 'insn-%05d' $(( RUN_ID + 1 )))
						# fio's time runs from its first IO; under the plugin it
						# can take seconds to get there: the ramp starts when
						# the device's IO count moves.
						RUNTIME=$(( INSN_SECS + RAMP + 3 )) RAMP=0 fio_run insn $cl $r 1 "inv=$inv" "$dev" "$rw" "$bs" "$qd" 1 &
						fpid=$!
						insn_wait_io "${dev#/dev/}"
						sleep "$RAMP"
						read -r a0 a1 < <("$INSN_MARK" reset "${dev#/dev/}")
						sleep "$INSN_SECS"
						read -r b0 b1 < <("$INSN_MARK" dump "${dev#/dev/}")
						INSN_DUMP=$(( INSN_DUMP + 1 ))
						# fio must have run until after the dump.
						alive=0; kill -0 $fpid 2>/dev/null && alive=1
						wait $fpid
						RUN_ID=$(( RUN_ID + 1 ))
						# Twice the IOs, so that it stays whole: the midpoints' difference.
						ios=$(( (${b0:-0} + ${b1:-0}) - (${a0:-0} + ${a1:-0}) ))
						printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$cl" "$r" "$inv" \
							"$rw" "$bs" "$qd" "$mod" "$load" "$INSN_DUMP" "$(( ios / 2 )).$(( ios % 2 * 5 ))" \
							"${a0:-?} ${a1:-?}" "${b0:-?} ${b1:-?}" $alive >> "$tsv"
					done
				else
					log "insn: $cl: map failed: $(dmesg | tail -n 5 | tr '\n' ' ')"
				fi
				unmap_rnbd bi
				client_unload $cl
			done
		done
	done
	server_unload
}

# --- rnbd-rs: the Rust stack against both C ones ---------------------------------
# rnbd-client-rs built for this kernel (scripts/bench.sh builds it when the
# section is named; empty: not built).
RNBD_RS_KO=${RNBD_RS_KO-$RTRS_REPO/rnbd_clt/rnbd-client-rs.ko}
# The stacks: c (C's rnbd-client on C's rtrs-client), rs (C's rnbd-client on
# this module), rsrs (rnbd-client-rs on this module).
RRS_STACKS="c rs rsrs"
rrs_load() {
	if [ "$1" = rsrs ]; then modprobe rtrs_core && load_rs && insmod "$RNBD_RS_KO"; else client_load "$1"; fi
}
rrs_unload() {
	if [ "$1" = rsrs ]; then unload_modules rnbd_client_rs rtrs_client_rs; else client_unload "$1"; fi
}
# The cells: "rw bs qd", one job.
rrs_cells() { printf '%s\n' "randread 4k 1" "randwrite 4k 1" "randread 4k 32" "randwrite 4k 32"; }
# rrs_rate: RRS_RATE, the fixed rate of the section's CPU runs: CPU_RATE if
# given, else half of C's 4k randread QD 32 over one path in this boot (the
# matrix's or this section's own, which runs C first), else 500.
RRS_RATE=
rrs_rate() {
	[ -n "$RRS_RATE" ] && return 0
	local id i=0
	if [ -n "$CPU_RATE" ]; then
		RRS_RATE=$CPU_RATE
	else
		id=$(awk -F'\t' '($2=="matrix" || $2=="rnbdrs") && $3=="c" && $5==1 && $7=="randread" && $8=="4k" && $9==32 && $10==1 && $11==0 {print $1; exit}' "$RUNS")
		[ -n "$id" ] && i=$(iops_of "$id")
		RRS_RATE=$(( i / 2 ))
		[ "$RRS_RATE" -ge 100 ] || RRS_RATE=500
	fi
	log "rnbd-rs: fixed rate for CPU per IO: $RRS_RATE IOPS"
	echo "rnbdrs_rate $RRS_RATE" >> "$OUT/meta.txt"
}
sec_rnbd_rs() {
	if [ -z "$RNBD_RS_KO" ] || [ ! -f "$RNBD_RS_KO" ]; then
		log "rnbd-rs: rnbd-client-rs is not built ('$RNBD_RS_KO')"
		return 1
	fi
	{
		echo "rnbd_rs_ko $RNBD_RS_KO"
		echo "rnbd_rs_version $(modinfo -F version "$RNBD_RS_KO" 2>/dev/null) $(modinfo -F srcversion "$RNBD_RS_KO" 2>/dev/null)"
	} >> "$OUT/meta.txt"
	server_load || return 1
	local r cl dev1 rw bs qd
	for (( r = 1; r <= ROUNDS; r++ )); do
		for cl in $RRS_STACKS; do
			log "rnbd-rs: round $r, stack $cl"
			if ! rrs_load $cl; then
				log "rnbd-rs: $cl does not load"
				rrs_unload $cl
				continue
			fi
			dev1=$(map_paths br ram0 1)
			if [ -b "$dev1" ]; then
				while read -r rw bs qd; do
					fio_run rnbdrs $cl $r 1 - "$dev1" "$rw" "$bs" "$qd" 1
				done < <(rrs_cells)
				rrs_rate
				for rw in randread randwrite; do
					fio_run rnbdrscpu $cl $r 1 - "$dev1" "$rw" 4k 32 1 --rate_iops="$RRS_RATE"
				done
			else
				log "rnbd-rs: $cl: map failed ($dev1): $(dmesg | tail -n 5 | tr '\n' ' ')"
			fi
			unmap_rnbd br
			rrs_unload $cl
		done
	done
}

# --- rnbd-rs-few: few permits, two devices on one session ---------------------
# The server gives 8 permits a session (sess_queue_depth=8); 4 jobs of QD 32
# on two devices of one session, so most requests find no permit and wait
# for one: what rnbd-client's requeue lists are for. Stacks: c (C/C), rsrs
# (rnbd-client-rs on this module) and, with RNBD_RS2_KO (bench.sh:
# BENCH_RNBD_RS2_REF), rsrs2, another build of rnbd-client-rs.
FEW_QD=${FEW_QD:-8}
few_stacks() { echo "c rsrs${RNBD_RS2_KO:+ rsrs2}"; }
sec_rnbd_rs_few() {
	if [ -z "$RNBD_RS_KO" ] || [ ! -f "$RNBD_RS_KO" ]; then
		log "rnbd-rs-few: rnbd-client-rs is not built ('$RNBD_RS_KO')"
		return 1
	fi
	{
		echo "few_qd $FEW_QD"
		[ -n "${RNBD_RS2_KO:-}" ] && echo "rnbd_rs2_ref ${RNBD_RS2_REF:-?}"
	} >> "$OUT/meta.txt"
	server_unload
	server_load sess_queue_depth="$FEW_QD" || return 1
	local r cl d1 d2 rw ko hog
	for (( r = 1; r <= ROUNDS; r++ )); do
		for cl in $(few_stacks); do
			log "rnbd-rs-few: round $r, stack $cl"
			ko=$RNBD_RS_KO; [ "$cl" = rsrs2 ] && ko=$RNBD_RS2_KO
			if [ "$cl" = c ]; then client_load c; else modprobe rtrs_core && load_rs && insmod "$ko"; fi || {
				log "rnbd-rs-few: $cl does not load"; rrs_unload "${cl%2}"; continue; }
			map_paths fw ram0 1 > /dev/null
			echo "sessname=fw path=$(path_of 1) device_path=/dev/ram1" > $RNBD_CTL/map_device
			d1=$(rnbd_dev_of_path fw /dev/ram0); d2=$(rnbd_dev_of_path fw /dev/ram1)
			if [ -b "$d1" ] && [ -b "$d2" ]; then
				for rw in randread randwrite; do
					fio_run rnbdrsfew $cl $r 1 - "$d1:$d2" "$rw" 4k 32 4
				done
				# One job of QD 1 on d1 beside 4 jobs of QD 32 on d2: d1's
				# queue has nothing in flight of its own when it waits.
				fio --name=hog --filename="$d2" --direct=1 --ioengine=libaio --rw=randread \
					--bs=4k --iodepth=32 --numjobs=4 --time_based --runtime=$(( RUNTIME + RAMP + 3 )) \
					--size=${DISK_MB}M $FIO_NRM --output=/dev/null > /dev/null 2>&1 & hog=$!
				_sleep 1
				fio_run rnbdrsfewlight $cl $r 1 - "$d1" randread 4k 1 1
				wait $hog
			else
				log "rnbd-rs-few: $cl: map failed ($d1 $d2): $(dmesg | tail -n 5 | tr '\n' ' ')"
			fi
			unmap_rnbd fw
			rrs_unload "${cl%2}"
		done
	done
	server_unload
}

log "start: sections '$SECTIONS', rounds $ROUNDS, runtime $RUNTIME s, $NCPU CPUs, kernel $(uname -r)"
{
	echo "kernel $(uname -r)"; echo "cpus $NCPU"; echo "mem_kb $(awk '/MemTotal/ {print $2}' /proc/meminfo)"
	echo "rounds $ROUNDS"; echo "runtime $RUNTIME"; echo "ramp $RAMP"; echo "bench ${BENCH:-full}"
	echo "rs_ko $RS_KO"; echo "rs_version $(modinfo -F version "$RS_KO" 2>/dev/null) $(modinfo -F source "$RS_KO" 2>/dev/null)"
	[ -n "${RS2_KO:-}" ] && { echo "rs2_ko $RS2_KO"; echo "rs2_version $(modinfo -F version "$RS2_KO" 2>/dev/null) $(modinfo -F source "$RS2_KO" 2>/dev/null)"; }
	echo "fio $(fio --version)"
} > "$OUT/meta.txt"
for s in $SECTIONS; do
	log "section $s"
	# (rnbd-rs runs as sec_rnbd_rs.)
	"sec_${s//-/_}" || log "section $s failed"
	for m in rnbd_client rnbd_client_rs rtrs_client rtrs_client_rs; do
		module_loaded $m && log "section $s left $m loaded"
	done
done
echo "cpu_rate $CPU_RATE" >> "$OUT/meta.txt"
server_unload
log "done"
