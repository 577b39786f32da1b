#!/bin/bash
# Path churn over the two-path topology of tests/lib-mp.sh, through the
# unmodified rnbd-client over this module (MP_CLIENT=rs, the default; make
# check runs it as tests/vm/55-mp-churn.sh) or over the in-tree C client
# (MP_CLIENT=c, a baseline run by hand): map over both paths; verified randrw
# fio (crc32c, QD 64, one job per CPU, 240 s; 75 s with the fast actions only
# in the quick tier) while a loop takes one path at a
# time away and back: ip link down/up of path 1's middle link, a silent cut
# of path 2 (blackhole routes), remove_path/add_path of path 1, then sysfs
# disconnect/reconnect flips until fio ends; no verify error, failovers counted, both paths back; then netem delay
# on path 1 and the min-latency policy must steer the IO to path 2.
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$TESTS_DIR/lib.sh"
. "$TESTS_DIR/lib-mp.sh"
MP_CLIENT=${MP_CLIENT:-rs}
case $MP_CLIENT in
	c) CLT_MOD=rtrs_client; load_client() { modprobe rnbd_client; } ;;
	rs) CLT_MOD=rtrs_client_rs; load_client() { load_rnbd_rs; } ;;
	*) echo "MP_CLIENT must be c or rs" >&2; exit 2 ;;
esac
# The quick tier (make check) runs 75 s of fio with the fast actions only
# (remove_path/add_path and disconnect/reconnect); a link down and a silent
# cut each cost 40-70 s until the path is back, remove_path/add_path 20-45 s
# under IO. The full tier starts the slow ones first and gives fio 240 s, so
# that every kind of action starts while fio runs.
FIO_RT=${MP_FIO_RUNTIME:-$(by_tier 75 240)}
ACTIONS=${MP_ACTIONS:-$(by_tier "remove_add disc:2 disc:1 disc:2 disc:1" \
	"link cut remove_add disc:2 disc:1 disc:2 disc:1 disc:2 disc:1")}
# Multipath policy during the cuts; empty keeps the client's default
# (min-inflight for the C client). round-robin makes the C client splat
# "BUG: using smp_processor_id() in preemptible code" (get_next_path_rr) on
# this CONFIG_PREEMPT kernel, for every request.
CUT_POLICY=${MP_CUT_POLICY:-}
SESS=mpc
PLAN=14
tap_plan $PLAN
t0=$(date +%s)
ts() { diag "[+$(( $(date +%s) - t0 ))s] $*"; }

# bail <reason>: report the remaining tests as failed, clean up, and stop.
bail() {
	diag "bailing out: $1"
	while [ "$TAP_N" -lt $PLAN ]; do tap_not_ok "not run: $1"; done
	cleanup
	exit 1
}
cleanup() {
	local n
	for n in $(seq 1 "$MP_N"); do mp_path_clear "$n"; done
	timeout 60 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $SESS" 2>/dev/null
	unload_modules rnbd_client $CLT_MOD
	stop_server
	mp_teardown
}

if mp_setup; then tap_ok "two-path topology up: $MP_PATHS"; else tap_not_ok "two-path topology up"; bail "no topology"; fi
tap_check "in-tree rnbd-server and a brd disk load" start_server 65536
tap_check "rnbd-client over $CLT_MOD loads" load_client
dev=$(timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; . '$RTRS_REPO/tests/lib-mp.sh'; MP_PATHS='$MP_PATHS'; mp_map_rnbd $SESS /dev/ram0")
if [ -b "$dev" ]; then tap_ok "mapped $dev over $MP_PATHS"; else tap_not_ok "map over both paths"; bail "no device"; fi
if wait_for 30 mp_path_connected $SESS 1 && wait_for 30 mp_path_connected $SESS 2; then
	tap_ok "both paths connected"
else
	tap_not_ok "both paths connected"; diag "$(mp_status $SESS)"; bail "paths not connected"
fi
ts "$(mp_status $SESS)"

# --- churn under verified IO ----------------------------------------------------
# One job per CPU on disjoint 8M regions; verify_backlog checks blocks while
# running, and the final verify pass reads everything back.
[ -n "$CUT_POLICY" ] && echo "$CUT_POLICY" > /sys/class/rtrs-client/$SESS/mpath_policy
ts "policy during the churn: $(cat /sys/class/rtrs-client/$SESS/mpath_policy)"
fio_out=/tmp/mp-fio.json
njobs=$(nproc)
# nice: under TCG the IO can starve this shell, whose loop must keep going.
timeout -k 10 $(( FIO_RT + 300 )) nice -n 19 fio --name=mp --filename="$dev" --direct=1 --ioengine=libaio \
	--rw=randrw --bs=4k --iodepth=64 --numjobs="$njobs" --size=8M --offset_increment=8M \
	--cpus_allowed=0-$(( njobs - 1 )) --cpus_allowed_policy=split --time_based --runtime="$FIO_RT" --verify=crc32c --verify_backlog=512 --do_verify=1 \
	--verify_fatal=1 --verify_state_save=0 --randrepeat=0 --group_reporting \
	--output-format=json --output="$fio_out" >/tmp/mp-fio.log 2>&1 &
fio_pid=$!
churn_ok=1
declare -A done_n=()
# Reconnects each path must have counted: a link down/up or a disconnect of
# path 1 after its remove/add (which starts its counters anew), a cut or a
# disconnect of path 2.
want_rc=(0 0 0)
fio_running() { kill -0 $fio_pid 2>/dev/null; }
both_up() { mp_path_connected $SESS 1 && mp_path_connected $SESS 2; }
# back <n> <what>: path n must come back (forced reconnect), else a failure.
back() {
	MP_VERBOSE=1 mp_path_reconnect $SESS "$1" 90 2>&1 | sed 's/^/# /'
	if [ "${PIPESTATUS[0]}" -eq 0 ]; then ts "$2: path $1 back"; else ts "$2: path $1 did not come back"; churn_ok=0; fi
}
# noticed <n> <what>: RTRS saw path n go (IO in flight fails, or the heartbeat).
noticed() {
	if wait_for 60 mp_path_down $SESS "$1"; then ts "$2: path $1 noticed down"; else ts "$2: path $1 still connected after 60 s"; churn_ok=0; fi
}
act_remove_add() {
	local d; d=$(mp_path_dir $SESS 1)
	if echo 1 > "$d/remove_path" && [ ! -e "$d" ]; then ts "remove_path: path 1 gone"; else ts "remove_path of path 1 failed"; churn_ok=0; return; fi
	sleep 2
	if echo "$(mp_path_name 1)" > /sys/class/rtrs-client/$SESS/add_path; then ts "add_path: path 1 added"; else ts "add_path of path 1 failed"; churn_ok=0; fi
	wait_for 30 mp_path_connected $SESS 1 || back 1 add_path
}
act_link() {
	mp_path_link_down 1; noticed 1 "link down"; sleep 2
	mp_path_link_up 1 || { ts "link up of path 1 failed"; churn_ok=0; }
	back 1 "link up"
}
act_disc() {
	if echo 1 > "$(mp_path_dir $SESS "$1")/disconnect"; then ts "disconnect: path $1"; else ts "disconnect of path $1 failed"; churn_ok=0; fi
	sleep 1; back "$1" disconnect
}
act_cut() {
	mp_path_cut 2; noticed 2 "silent cut"; sleep 2
	mp_path_restore 2 || { ts "restore of path 2 failed"; churn_ok=0; }
	back 2 "restore"
}
sleep 3
# The slow actions first (a cut path's teardown waits for DISCONNECTED
# events that never come, 30 s as in C): each must start while fio runs.
want=()
for a in $ACTIONS; do
	[[ " ${want[*]} " == *" ${a%%:*} "* ]] || want+=("${a%%:*}")
done
for a in $ACTIONS; do
	fio_running || break
	wait_for 60 both_up || { ts "not both paths up before $a"; churn_ok=0; diag "$(mp_status $SESS)"; break; }
	ts "action: $a"
	# shellcheck disable=SC2046 # "disc:2" is act_disc 2
	act_${a%%:*} $(tr : ' ' <<<"${a#"${a%%:*}"}")
	done_n[${a%%:*}]=1
	case $a in
		remove_add) want_rc[1]=0 ;;
		link|disc:1) want_rc[1]=$(( want_rc[1] + 1 )) ;;
		cut|disc:2) want_rc[2]=$(( want_rc[2] + 1 )) ;;
	esac
done
ts "$(mp_status $SESS)"
wait $fio_pid
fio_rc=$?
ts "fio done (rc $fio_rc); actions done: ${!done_n[*]}"
all_done=1
for a in "${want[@]}"; do [ -n "${done_n[$a]:-}" ] || all_done=0; done
if [ $churn_ok = 1 ] && [ $all_done = 1 ]; then
	tap_ok "${want[*]}: each noticed and recovered under IO"
else
	tap_not_ok "${want[*]}: each noticed and recovered under IO (done: ${!done_n[*]})"
fi
# fio may put warnings before the JSON object in its output file.
vfy_err=$(sed -n '/^{/,$p' "$fio_out" | jq '[.jobs[].error] | add' 2>/dev/null)
io_mb=$(sed -n '/^{/,$p' "$fio_out" | jq '[.jobs[].read.io_bytes, .jobs[].write.io_bytes] | add / 1048576 | floor' 2>/dev/null)
[ -n "$vfy_err" ] || diag "fio JSON unreadable: $(head -c 600 "$fio_out")"
if [ "$fio_rc" -eq 0 ] && [ "$vfy_err" = 0 ] && ! grep -qi 'verify.*fail\|bad magic\|crc32c' /tmp/mp-fio.log; then
	tap_ok "fio randrw crc32c QD64 x $njobs jobs, ${FIO_RT}s, through the churn: rc 0, 0 errors, ${io_mb} MiB moved"
else
	tap_not_ok "fio randrw crc32c through the churn (rc $fio_rc, error $vfy_err)"
	diag "$(tail -n 30 /tmp/mp-fio.log)"
fi
fo=$(mp_failovers $SESS)
tap_check "failover count summed over the paths is > 0 ($fo)" test "$fo" -gt 0
if wait_for 60 mp_path_connected $SESS 1 && wait_for 60 mp_path_connected $SESS 2; then
	tap_ok "both paths CONNECTED at the end"
else
	tap_not_ok "both paths CONNECTED at the end"
fi
# Path 1 was re-added before its link went down; path 2 lived throughout.
rc1=$(cat "$(mp_path_dir $SESS 1)/stats/reconnects"); rc2=$(cat "$(mp_path_dir $SESS 2)/stats/reconnects")
tap_check "each path counted its successful reconnects (path1: '$rc1' >= ${want_rc[1]}, path2: '$rc2' >= ${want_rc[2]})" \
	test "${rc1%% *}" -ge "${want_rc[1]}" -a "${rc2%% *}" -ge "${want_rc[2]}" -a $(( want_rc[1] + want_rc[2] )) -gt 0
ts "$(mp_status $SESS)"

# --- netem delay on path 1, min-latency policy ----------------------------------
# min-latency picks the path with the lowest heartbeat RTT (cur_latency), which
# is measured every 5 s, so wait until both paths have been measured with it.
lat() { cat "$(mp_path_dir $SESS "$1")/cur_latency" | cut -d' ' -f1; }
mp_path_delay 1 40
lat_ok() { [ "$(lat 1)" -gt 80000000 ] && [ "$(lat 2)" -lt "$(lat 1)" ]; }
if wait_for 30 lat_ok; then
	tap_ok "40 ms netem on path 1 raises only its heartbeat RTT (path1 $(lat 1) ns, path2 $(lat 2) ns)"
else
	tap_not_ok "40 ms netem on path 1 raises only its heartbeat RTT (path1 $(lat 1) ns, path2 $(lat 2) ns)"
fi
echo min-latency > /sys/class/rtrs-client/$SESS/mpath_policy
pol=$(cat /sys/class/rtrs-client/$SESS/mpath_policy)
r1=$(mp_path_reqs $SESS 1); r2=$(mp_path_reqs $SESS 2)
out=$(timeout -k 10 120 fio --name=ml --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw \
	--bs=4k --iodepth=32 --numjobs=2 --size=8M --offset_increment=8M --time_based --runtime=10 \
	--verify=crc32c --verify_backlog=512 --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
	--group_reporting --output-format=terse 2>&1)
ml_rc=$?
d1=$(( $(mp_path_reqs $SESS 1) - r1 )); d2=$(( $(mp_path_reqs $SESS 2) - r2 ))
ts "min-latency ($pol): path1 +$d1 requests, path2 +$d2 requests, fio rc $ml_rc"
if [ $ml_rc -eq 0 ] && [ $d2 -gt 0 ] && [ $(( d2 * 100 / (d1 + d2) )) -ge 90 ]; then
	tap_ok "min-latency sends >= 90% of the IO over the fast path 2 (path1 $d1, path2 $d2)"
else
	tap_not_ok "min-latency sends >= 90% of the IO over the fast path 2 (path1 $d1, path2 $d2, fio rc $ml_rc)"
	diag "$out"
fi
mp_path_clear 1

# --- teardown ------------------------------------------------------------------
if timeout 60 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $SESS"; then tap_ok "unmap"; else tap_not_ok "unmap"; fi
unload_modules rnbd_client $CLT_MOD
stop_server
mp_teardown
left=$(rtrs_modules_loaded)
if [ -z "$left" ] && ! rdma link show 2>/dev/null | grep -q rxe_mp; then
	tap_ok "modules unloaded and topology removed"
else
	tap_not_ok "modules unloaded and topology removed"; diag "left: $left $(rdma link show)"
fi
ts "total"
tap_done
