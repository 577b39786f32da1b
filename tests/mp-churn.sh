#!/bin/bash
# Path churn over the two-path topology of tests/lib-mp.sh, through the
# unmodified rnbd-client over this module (MP_CLIENT=rs, the default; make
# check runs it as tests/vm/55-mp-churn.sh) or over the in-tree C client
# (MP_CLIENT=c, a baseline run by hand): map over both paths; verified randrw
# fio (crc32c, QD 64, one job per CPU, 240 s) while a loop takes one path at a
# time away and back: ip link down/up of path 1's middle link, a silent cut
# of path 2 (blackhole routes), remove_path/add_path of path 1, then sysfs
# disconnect/reconnect flips until fio ends; no verify error, failovers
# counted, both paths back; then netem delay on path 1 and the min-latency
# policy must steer the IO to path 2. The quick tier runs the fast actions
# once each under less fio, with a 1 s heartbeat (3 misses) for the latency
# measurement.
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$TESTS_DIR/lib.sh"
. "$TESTS_DIR/lib-mp.sh"
MP_CLIENT=${MP_CLIENT:-rs}
# The quick tier's heartbeat (this module's parameters; the C client has
# none): cur_latency is measured every second, and a path cut while idle is
# noticed within 4 s.
HB_ARGS=$(by_tier "hb_interval_ms=1000 hb_missed_max=3" "")
# shellcheck disable=SC2086 # HB_ARGS is zero or two words
case $MP_CLIENT in
	c) CLT_MOD=rtrs_client; HB_ARGS=; load_client() { modprobe rnbd_client; } ;;
	rs) CLT_MOD=rtrs_client_rs; load_client() { load_rnbd_rs $HB_ARGS; } ;;
	*) echo "MP_CLIENT must be c or rs" >&2; exit 2 ;;
esac
# The quick tier (make check) runs the fast actions once each:
# remove_path/add_path of path 1 (20-60 s), then a sysfs disconnect/reconnect
# of the new path 1 (30-50 s under IO); path 2 counts the failovers of both
# (a path counts the requests failed over to it, and a re-added one counts
# anew: a disconnect of path 2 before the remove would leave no trace). A
# link down or a silent cut costs 60-110 s until the path is back, whatever
# the client's heartbeat (measured with a 1 s one): the in-tree server keeps
# its side of the path until its own heartbeat (5 x 5 s) gives up (44 s after
# a link down), and connects under IO are slow; 57 and 61 cut a path under IO
# in the quick tier. fio must still run when the last action starts (60 s
# covers the remove_path/add_path with a margin). The full tier starts the
# slow ones first and gives fio 240 s, so that every kind of action starts
# while fio runs.
FIO_RT=${MP_FIO_RUNTIME:-$(by_tier 60 240)}
ACTIONS=${MP_ACTIONS:-$(by_tier "remove_add disc:1" \
	"link cut remove_add disc:2 disc:1 disc:2 disc:1 disc:2 disc:1")}
# The quick tier verifies every 64 writes as it goes, which keeps the final
# verify pass short (up to 512 reads per job at ~40 IOPS otherwise).
VERIFY_BACKLOG=$(by_tier 64 512)
# Multipath policy during the cuts; empty keeps the client's default
# (min-inflight for the C client). round-robin makes the C client splat
# "BUG: using smp_processor_id() in preemptible code" (get_next_path_rr) on
# this CONFIG_PREEMPT kernel, for every request.
CUT_POLICY=${MP_CUT_POLICY:-}
SESS=mpc
PLAN=14
tap_plan $PLAN
SECONDS=0
# ts <what>: a diagnostic with the time since the start (no fork for one line).
ts() { if [[ $* == *$'\n'* ]]; then diag "[+${SECONDS}s] $*"; else echo "# [+${SECONDS}s] $*"; fi; }

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
tap_check "rnbd-client over $CLT_MOD loads${HB_ARGS:+ ($HB_ARGS)}" load_client
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
	--cpus_allowed=0-$(( njobs - 1 )) --cpus_allowed_policy=split --time_based --runtime="$FIO_RT" --verify=crc32c --verify_backlog="$VERIFY_BACKLOG" --do_verify=1 \
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
# brief: the paths' state and counters (mp_status without the port state).
brief() {
	local n
	for n in 1 2; do
		echo "path$n: $(mp_path_state $SESS $n); rdma $(mp_path_rdma $SESS $n); reconnects $(field $n stats/reconnects 1 2)"
	done
}
# field <n> <file> <i...>: fields i of the first line of path n's <file>
# (read(1), no process).
field() {
	local n=$1 f=$2 v=() i out=; shift 2
	read -r -a v < "$(mp_path_dir $SESS "$n")/$f" 2>/dev/null
	for i in "$@"; do out+="${out:+ }${v[$(( i - 1 ))]:-0}"; done
	echo "$out"
}
both_up() { mp_path_connected $SESS 1 && mp_path_connected $SESS 2; }
# back <n> <what>: path n must come back (forced reconnect), else a failure.
back() {
	MP_VERBOSE=1 mp_path_reconnect $SESS "$1" 90 2>&1 | sed 's/^/# /'
	if [ "${PIPESTATUS[0]}" -eq 0 ]; then ts "$2: path $1 back"; else ts "$2: path $1 did not come back"; churn_ok=0; fi
}
# noticed <n> <what>: RTRS saw path n go (IO in flight fails, or the
# heartbeat): listed and not connected; a path that vanished fails.
noticed() {
	if wait_for 60 mp_path_down $SESS "$1"; then ts "$2: path $1 noticed down"; else ts "$2: path $1 not down after 60 s: $(mp_path_state $SESS "$1")"; churn_ok=0; fi
}
act_remove_add() {
	local d; d=$(mp_path_dir $SESS 1)
	if echo 1 > "$d/remove_path" && [ ! -e "$d" ]; then ts "remove_path: path 1 gone"; else ts "remove_path of path 1 failed"; churn_ok=0; return; fi
	# The server must have dropped the path first: it refuses an address it
	# still has.
	wait_for 30 _absent "/sys/class/rtrs-server/$SESS/paths/$(mp_path_name 1)" ||
		ts "remove_path: the server still lists path 1 after 30 s"
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
# The first action needs IO in flight (fio takes seconds to start under TCG).
io0=$(( $(mp_path_reqs $SESS 1) + $(mp_path_reqs $SESS 2) ))
io_flowing() { [ $(( $(mp_path_reqs $SESS 1) + $(mp_path_reqs $SESS 2) )) -gt $(( io0 + 64 )) ]; }
wait_for 60 io_flowing || { ts "no IO after 60 s"; churn_ok=0; }
ts "IO flowing"
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
ts "$(brief)"
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
# Path 1 counts anew once re-added; path 2 lived throughout.
rc1=$(field 1 stats/reconnects 1 2); rc2=$(field 2 stats/reconnects 1 2)
tap_check "each path counted its successful reconnects (path1: '$rc1' >= ${want_rc[1]}, path2: '$rc2' >= ${want_rc[2]})" \
	test "${rc1%% *}" -ge "${want_rc[1]}" -a "${rc2%% *}" -ge "${want_rc[2]}" -a $(( want_rc[1] + want_rc[2] )) -gt 0

# --- netem delay on path 1, min-latency policy ----------------------------------
# min-latency picks the path with the lowest heartbeat RTT (cur_latency), which
# is measured every heartbeat (5 s; 1 s in the quick tier), so wait until both
# paths have been measured with it.
lat() { field "$1" cur_latency 1; }
lat_ok() { [ "$(lat 1)" -gt 80000000 ] && [ "$(lat 2)" -lt "$(lat 1)" ]; }
# mp_path_delay_up reconnects path 1 once if rxe lost it when netem came
# (lib-mp.sh); a path that stays up without its RTT following fails.
if mp_path_delay_up $SESS 1 40 30 lat_ok; then
	tap_ok "40 ms netem on path 1 raises only its heartbeat RTT (path1 $(lat 1) ns, path2 $(lat 2) ns)"
else
	tap_not_ok "40 ms netem on path 1 raises only its heartbeat RTT (path1 $(lat 1) ns, path2 $(lat 2) ns, $(mp_path_state $SESS 1))"
fi
echo min-latency > /sys/class/rtrs-client/$SESS/mpath_policy
pol=$(cat /sys/class/rtrs-client/$SESS/mpath_policy)
r1=$(mp_path_reqs $SESS 1); r2=$(mp_path_reqs $SESS 2)
out=$(timeout -k 10 120 fio --name=ml --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw \
	--bs=4k --iodepth=32 --numjobs=2 --size=8M --offset_increment=8M --time_based --runtime="$(by_tier 5 10)" \
	--verify=crc32c --verify_backlog="$VERIFY_BACKLOG" --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
	--group_reporting --output-format=terse 2>&1)
ml_rc=$?
d1=$(( $(mp_path_reqs $SESS 1) - r1 )); d2=$(( $(mp_path_reqs $SESS 2) - r2 ))
ts "min-latency ($pol): path1 +$d1 requests, path2 +$d2 requests, fio rc $ml_rc"
# (A count that went back, d1 < 0, is a path that vanished: mp_path_reqs reads 0.)
if [ $ml_rc -eq 0 ] && [ $d1 -ge 0 ] && [ $d2 -gt 0 ] && [ $(( d2 * 100 / (d1 + d2) )) -ge 90 ]; then
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
mp_tap_all_gone
ts "total"
tap_done
