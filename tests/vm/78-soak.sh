#!/bin/bash
# Soak (the full tier only; SOAK_SECS, default 1800): cycles of map over the
# two routed paths of tests/lib-mp.sh, verified fio while path 2 is
# disconnected and reconnected and path 1 removed and re-added, then unmap;
# after each cycle the kernel's slab and vmalloc use are sampled, with
# KASAN's quarantine drained (each cache shrunk) and page caches dropped, so
# that what is counted is what is alive. After the first two cycles (warm
# caches, KASAN's stack depot) neither may grow past a bound: 2 MiB of slab
# and 512 KiB of vmalloc above the largest warm-up sample, and the slab's
# slope over the second half of the cycles (least squares) may not pass
# 256 KiB per cycle. The caches that grew most after the warm-up are
# printed. The harness's kmemleak scan at the end must be clean. A cycle
# that fails prints its kernel log, with each churn step marked in it.
#
# SOAK_CLIENT=c soaks the C client (rtrs-client) the same way, to compare
# its figures (rnbd's default policy, min-inflight, which does not trip
# C's round-robin splat).
. "$(dirname "$0")/../lib.sh"
MP_N=2
. "$(dirname "$0")/../lib-mp.sh"
PLAN=8
skip_all_unless_api $PLAN
if [ "$RTRS_TIER" = quick ]; then
	skip_all $PLAN "the full tier only"
fi
tap_plan $PLAN
SECONDS=0
ts() { echo "# [+${SECONDS}s] $*"; }
SOAK_SECS=${SOAK_SECS:-1800}
SESS=soak
SLAB_BOUND_KB=2048
VMALLOC_BOUND_KB=512
SLAB_SLOPE_KB=256
SOAK_CLIENT=${SOAK_CLIENT:-rs}
case $SOAK_CLIENT in
rs) CL_MOD=rtrs_client_rs ;;
c) CL_MOD=rtrs_client ;;
*) echo "SOAK_CLIENT is rs or c" >&2; exit 2 ;;
esac

mp_setup || { tap_not_ok "two-path topology"; exit 1; }
tap_ok "two-path topology up: $MP_PATHS"
tap_check "server side loads" start_server 65536
if [ "$SOAK_CLIENT" = rs ]; then
	tap_check "client stack loads" load_rnbd_rs hb_interval_ms=1000 hb_missed_max=3
else
	tap_check "client stack loads (C's rtrs-client)" modprobe rnbd_client
fi

# meminfo_kb <field>: MEMKB = the field's value in kB (builtins only).
meminfo_kb() {
	local k v _u
	MEMKB=0
	while read -r k v _u; do [ "$k" = "$1:" ] && { MEMKB=$v; return; }; done < /proc/meminfo
}
# sample: SLAB_KB and VMALLOC_KB of what is alive.
sample() {
	local c
	sync; echo 3 > /proc/sys/vm/drop_caches
	# Shrinking a cache also empties KASAN's quarantine of its objects.
	# Only the kmalloc caches, where this client's objects live: every
	# cache takes more than ten minutes under TCG and KASAN.
	for c in /sys/kernel/slab/kmalloc-*/shrink; do echo 1 > "$c" 2>/dev/null; done
	_sleep 1
	meminfo_kb Slab; SLAB_KB=$MEMKB
	meminfo_kb VmallocUsed; VMALLOC_KB=$MEMKB
}

# slab_kb <file>: each cache's live objects in kB ("name kB" lines), from
# /proc/slabinfo.
slab_kb() {
	awk 'NR > 2 { printf "%s %d\n", $1, $2 * $4 / 1024 }' /proc/slabinfo > "$1"
}
# slab_growers <before> <after>: the caches that grew most between the two
# snapshots, "name +kB" each.
slab_growers() {
	awk 'NR == FNR { b[$1] = $2; next } { d = $2 - b[$1]; if (d > 0) printf "%d %s\n", d, $1 }' "$1" "$2" |
		sort -rn | head -n 8 | awk '{ printf "%s%s +%d kB", (NR > 1 ? ", " : ""), $2, $1 }'
}

# step <what>: the churn step, in the kernel log beside what it causes.
step() { echo "rtrs-test: soak cycle $cycles: $*" > /dev/kmsg; }
# cycle_log: this cycle's kernel log, for a cycle that failed.
cycle_log() {
	dmesg | awk -v m="$mark" 'index($0, m) { f = 1 } f' | tail -n 120 | sed 's/^/# # /'
}

cycle_ok=0 cycles=0 fio_bad=0 churn_bad=0
slab=() vmalloc=()
end=$(( SECONDS + SOAK_SECS ))
while [ $SECONDS -lt $end ]; do
	cycles=$(( cycles + 1 ))
	mark=$(kmsg_mark)
	dev=$(mp_map_two $SESS)
	if ! mp_two_mapped $SESS "$dev"; then ts "cycle $cycles: map failed"; cycle_log; break; fi
	timeout -k 10 400 fio --name=soak --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k \
		--iodepth=32 --numjobs=2 --size=8M --offset_increment=8M --time_based --runtime=60 \
		--verify=crc32c --verify_backlog=64 --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		--group_reporting --output-format=terse > /tmp/soak-fio.out 2>&1 &
	fpid=$!
	_sleep 10
	d2=$(mp_path_dir $SESS 2)
	step "disconnect path 2"
	{ echo 1 > "$d2/disconnect" && _sleep 2 && mp_path_reconnect $SESS 2 90; } || { churn_bad=$(( churn_bad + 1 )); ts "cycle $cycles: path 2 disconnect/reconnect failed"; cycle_log; }
	d1=$(mp_path_dir $SESS 1)
	step "remove path 1"
	{ echo 1 > "$d1/remove_path" &&
		wait_for 30 _absent "/sys/class/rtrs-server/$SESS/paths/$(mp_path_name 1)" &&
		step "add path 1" &&
		echo "$(mp_path_name 1)" > /sys/class/rtrs-client/$SESS/add_path &&
		wait_for 60 mp_path_connected $SESS 1; } || { churn_bad=$(( churn_bad + 1 )); ts "cycle $cycles: path 1 remove/add failed"; cycle_log; }
	step "wait for fio"
	wait $fpid || { fio_bad=$(( fio_bad + 1 )); ts "cycle $cycles: fio failed: $(tail -n 3 /tmp/soak-fio.out)"; cycle_log; }
	timeout 150 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $SESS" || { ts "cycle $cycles: unmap failed"; cycle_log; break; }
	sample
	slab+=("$SLAB_KB"); vmalloc+=("$VMALLOC_KB")
	ts "cycle $cycles: slab $SLAB_KB kB, vmalloc $VMALLOC_KB kB"
	# The warm-up's end, and each cycle after it (the last one is kept).
	if [ $cycles -eq 2 ]; then slab_kb /tmp/soak-slab-warm; elif [ $cycles -gt 2 ]; then slab_kb /tmp/soak-slab-last; fi
	cycle_ok=$cycles
done
tap_check "$cycle_ok of $cycles cycles of map, churn under verified fio, unmap in $SOAK_SECS s" \
	test "$cycle_ok" -eq "$cycles" -a "$cycles" -ge 3 -a "$fio_bad" -eq 0 -a "$churn_bad" -eq 0

# Flat after the warm-up: no sample after the first two exceeds their
# maximum by more than the bound.
flat() {
	local -n s=$1
	local bound=$2 base=0 i worst=0
	[ ${#s[@]} -ge 3 ] || { echo "too few samples"; return 1; }
	for i in 0 1; do [ "${s[$i]}" -gt $base ] && base=${s[$i]}; done
	for (( i = 2; i < ${#s[@]}; i++ )); do
		[ $(( s[i] - base )) -gt $worst ] && worst=$(( s[i] - base ))
	done
	echo "warm-up max $base kB, then at most +$worst kB (bound $bound kB): ${s[*]}"
	[ $worst -le "$bound" ]
}
out=$(flat slab $SLAB_BOUND_KB); rc=$?
if [ $rc -eq 0 ]; then tap_ok "slab flat after 2 cycles: $out"; else tap_not_ok "slab flat after 2 cycles"; diag "$out"; fi
# slope <samples> <bound>: the least-squares slope of the second half of
# the samples, in kB per cycle, at most the bound.
slope() {
	local -n s=$1
	local n=${#s[@]} h i
	h=$(( n / 2 ))
	[ $(( n - h )) -ge 3 ] || { echo "too few samples"; return 1; }
	printf '%s\n' "${s[@]:$h}" | awk -v b="$2" -v first=$(( h + 1 )) -v last="$n" '
		{ x = NR; sx += x; sy += $1; sxx += x * x; sxy += x * $1; n++ }
		END {
			k = (n * sxy - sx * sy) / (n * sxx - sx * sx)
			printf "%+.0f kB per cycle over cycles %d..%d (bound %d)", k, first, last, b
			exit !(k <= b)
		}'
}
out=$(slope slab $SLAB_SLOPE_KB); rc=$?
if [ $rc -eq 0 ]; then tap_ok "slab slope: $out"; else tap_not_ok "slab slope"; diag "$out"; fi
if [ -s /tmp/soak-slab-warm ] && [ -s /tmp/soak-slab-last ]; then
	diag "caches grown since cycle 2: $(slab_growers /tmp/soak-slab-warm /tmp/soak-slab-last)"
fi
out=$(flat vmalloc $VMALLOC_BOUND_KB); rc=$?
if [ $rc -eq 0 ]; then tap_ok "vmalloc flat after 2 cycles: $out"; else tap_not_ok "vmalloc flat after 2 cycles"; diag "$out"; fi

unload_modules rnbd_client "$CL_MOD"
stop_server
mp_teardown
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
