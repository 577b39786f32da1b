#!/bin/bash
# Two paths of the tests/lib-mp.sh topology under rnbd over this module:
# the policies read from the stats (round-robin spreads evenly, min-inflight
# avoids a loaded path), 1000 mpath_policy flips during IO leave inflight at
# 0, the heartbeat finds a silent peer (netem loss 100%) and the path comes
# back by itself, max_reconnect_attempts=2 gives up ("disconnected") until a
# sysfs reconnect, and `rdma link del` under a connected path fails its IO
# over without a hang. In the quick tier also this module's latency_hist and
# service-time, briefly (tests/vm/59-beyond-c.sh checks them in full).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-mp.sh"
PLAN=17
skip_all_unless_api $PLAN
tap_plan $PLAN
S=pol
cls=/sys/class/rtrs-client/$S

# Not through tap_check: mp_setup sets MP_PATHS in this shell.
if mp_setup; then tap_ok "two-path topology up: $MP_PATHS"; else tap_not_ok "two-path topology up"; fi
tap_check "server side loads" start_server 65536
# The quick tier finds the silent peer below with a 1 s heartbeat (3 misses);
# the full tier at C's values (59 covers both in its own way).
HB_ARGS=$(by_tier "hb_interval_ms=1000 hb_missed_max=3" "")
# shellcheck disable=SC2086 # HB_ARGS is zero or two words
tap_check "client stack loads ${HB_ARGS:-with the default heartbeat}" load_rnbd_rs $HB_ARGS
dev=$(mp_map_two $S)
tap_check "mapped ${dev:-nothing} over two connected paths" mp_two_mapped $S "$dev"

run_io() { mp_run_io "$dev" /tmp/p-fio.out "$@"; } # run_io <seconds> [extra fio args]

# --- round-robin: equal paths get shares within 10% ---------------------------
echo round-robin > $cls/mpath_policy
r1=$(mp_path_reqs $S 1); r2=$(mp_path_reqs $S 2)
run_io 8; rc=$?
d1=$(( $(mp_path_reqs $S 1) - r1 )); d2=$(( $(mp_path_reqs $S 2) - r2 ))
tot=$(( d1 + d2 ))
tap_check "round-robin: path shares within 10% (path1 $d1, path2 $d2, fio rc $rc)" \
	sh -c "[ $rc -eq 0 ] && [ $tot -gt 0 ] && [ \$(( ($d1 - $d2) * 100 / $tot )) -le 10 ] && [ \$(( ($d2 - $d1) * 100 / $tot )) -le 10 ]"

# --- min-inflight: a path slowed by netem holds requests longer, gets fewer ---
echo min-inflight > $cls/mpath_policy
mp_path_delay 1 20 || diag "netem on path 1 failed"
r1=$(mp_path_reqs $S 1); r2=$(mp_path_reqs $S 2)
run_io 8; rc=$?
d1=$(( $(mp_path_reqs $S 1) - r1 )); d2=$(( $(mp_path_reqs $S 2) - r2 ))
delayed=$(tc qdisc show dev "$(mp_cdev 1)" | grep -q netem && echo yes || echo no)
mp_path_clear 1
tap_check "min-inflight: more to the less loaded path (slow path1 $d1, path2 $d2, fio rc $rc)" \
	sh -c "[ $rc -eq 0 ] && [ $d2 -gt $d1 ] && [ '$delayed' = yes ]"

# --- this module's extensions, briefly (tests/vm/59-beyond-c.sh in full) -------
if [ "$RTRS_TIER" = quick ]; then
	# The delayed run above can make rxe's RC give up on path 1.
	mp_path_reconnect $S 1 90 >/dev/null 2>&1
	for n in 1 2; do echo 1 > "$(mp_path_dir $S $n)/stats/reset_all"; done
	run_io 3; rc=$?
	h=$(for n in 1 2; do awk 'NR > 1 {r += $2; w += $3} END {printf "%d %d ", r, w}' "$(mp_path_dir $S $n)/stats/latency_hist"; done)
	r=$(for n in 1 2; do mp_path_rdma $S $n | awk '{printf "%d %d ", $1, $3}'; done)
	tap_check "latency_hist counts equal stats/rdma's after reset_all and a verified run (hist '$h', rdma '$r', fio rc $rc)" \
		sh -c "[ $rc -eq 0 ] && [ '$h' = '$r' ] && [ '$h' != '0 0 0 0 ' ]"
	if echo 3 > $cls/mpath_policy 2>/dev/null; then three=accepted; else three=refused; fi
	echo service-time > $cls/mpath_policy
	pol=$(cat $cls/mpath_policy)
	mp_path_delay 1 20 || diag "netem on path 1 failed"
	r1=$(mp_path_reqs $S 1); r2=$(mp_path_reqs $S 2)
	run_io 6; rc=$?
	d1=$(( $(mp_path_reqs $S 1) - r1 )); d2=$(( $(mp_path_reqs $S 2) - r2 ))
	mp_path_clear 1
	echo min-inflight > $cls/mpath_policy
	tap_check "'3' $three as C does; '$pol': path 1 slowed by 20 ms gets under 20% (path1 $d1, path2 $d2, fio rc $rc)" \
		sh -c "[ $three = refused ] && [ '$pol' = 'service-time (ST: 3)' ] && [ $rc -eq 0 ] && [ $(( d1 + d2 )) -gt 0 ] && [ $(( d1 * 5 )) -lt $(( d1 + d2 )) ]"
else
	tap_skip "latency_hist counts equal stats/rdma's" "quick tier; 59 in full"
	tap_skip "service-time keeps IO off a slow path" "quick tier; 59 in full"
fi

# --- 1000 policy flips during IO (301 in the quick tier) -------------------------
NFLIP=$(by_tier 100 334)
run_io "$(by_tier 8 20)" & fpid=$!
for _ in $(seq 1 "$NFLIP"); do
	echo round-robin > $cls/mpath_policy; echo min-inflight > $cls/mpath_policy; echo min-latency > $cls/mpath_policy
done
echo min-inflight > $cls/mpath_policy
wait $fpid; rc=$?
infl=$(awk '{s += $5} END {print s + 0}' $cls/paths/*/stats/rdma)
tap_check "$(( NFLIP * 3 + 1 )) mpath_policy flips during verified IO: fio rc $rc, inflight back to 0 ($infl)" \
	sh -c "[ $rc -eq 0 ] && [ $infl -eq 0 ]"

# --- silent peer: all traffic of path 2 lost; the heartbeat notices -------------
# Path 1 first: the netem delay under load above can make rxe's RC give up on
# it (the path then waits out rnbd's 30 s reconnect delay), and with a 1 s
# heartbeat path 2 is found down before that.
mp_path_reconnect $S 1 90 || diag "path 1 not back: $(mp_status $S)"
mp_path_loss 2 100
if wait_for 60 mp_path_down $S 2; then tap_ok "heartbeat marks the silent path 2 down ($(mp_path_state $S 2))"; else tap_not_ok "silent path 2 noticed"; diag "$(mp_status $S)"; fi
tap_check "IO over path 1 meanwhile verifies" run_io 3
mp_path_clear 2
# rnbd opens sessions with reconnect_delay_sec=30: the path returns by itself.
if wait_for 120 mp_path_connected $S 2; then tap_ok "path 2 reconnects by itself once traffic returns"; else tap_not_ok "path 2 back"; diag "$(mp_status $S)"; fi

# --- max_reconnect_attempts=2: give up, then a sysfs reconnect revives ----------
# The path is closed cleanly first (so its teardown has no DISCONNECTED event
# to wait for), then cut, then asked to reconnect: attempt 1 fails (connect
# timeout, ENOTCONN to the writer), attempt 2 follows rnbd's 30 s
# reconnect delay and fails, then the path gives up and stays CLOSED.
if [ "$RTRS_TIER" = quick ]; then
	for d in "gives up after 2 attempts" "no attempt after giving up" "echo 1 > reconnect brings it back"; do
		tap_skip "max_reconnect_attempts=2: $d" "full tier (two 30 s reconnect delays; 58 checks 0 and -1)"
	done
else
	p2dir=$(mp_path_dir $S 2)
	echo 2 > $cls/max_reconnect_attempts
	echo 1 > $p2dir/disconnect
	echo 1 > $p2dir/stats/reconnects
	mp_path_cut 2
	echo 1 > $p2dir/reconnect 2>/dev/null && diag "reconnect over a cut path succeeded?"
	if wait_for 300 sh -c "grep -q '^[0-9]* 2\$' $p2dir/stats/reconnects"; then
		tap_ok "2 failed attempts: '$(cat $p2dir/state)', reconnects '$(cat $p2dir/stats/reconnects)'"
	else
		tap_not_ok "2 failed attempts"; diag "$(mp_status $S)"
	fi
	# A third attempt would start after rnbd's 30 s delay and fail 30 s
	# later (the connect timeout): watch 75 s for the count to move.
	if wait_for 75 sh -c "! grep -q '^[0-9]* 2\$' $p2dir/stats/reconnects"; then
		tap_not_ok "no attempt after giving up: reconnects now '$(cat $p2dir/stats/reconnects)'"
	else
		tap_check "no attempt after giving up (75 s): reconnects still '$(cat $p2dir/stats/reconnects)', disconnected" \
			grep -qx disconnected $p2dir/state
	fi
	mp_path_restore 2
	echo -1 > $cls/max_reconnect_attempts
	echo 1 > "$(mp_path_dir $S 2)/reconnect"
	tap_check "echo 1 > reconnect brings it back" mp_path_connected $S 2
fi

# --- rdma link del under a connected path ---------------------------------------
if [ "$RTRS_TIER" = quick ]; then
	tap_skip "rdma link del under path 2: IO fails over and verifies" "full tier (the teardown waits 30 s twice)"
	tap_skip "path 2 closed after its device went" "full tier"
else
	p2d=$(mp_path_dir $S 2)
	io0=$(awk '{print $1 + $3}' "$p2d/stats/rdma")
	run_io 15 & fpid=$!
	# Delete the device while IO runs on its path.
	wait_for 30 sh -c "[ \$(awk '{print \$1 + \$3}' '$p2d/stats/rdma') -gt $io0 ]" ||
		diag "no IO on path 2 after 30 s"
	rdma link delete "rxe_$(mp_cdev 2)"
	wait $fpid; rc=$?
	tap_check "rdma link del under path 2: IO fails over and verifies (fio rc $rc)" test $rc -eq 0
	tap_check "path 2 closed after its device went ($(mp_path_state $S 2))" test "$(mp_path_state $S 2)" = disconnected
fi

timeout 60 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S"
unload_modules rnbd_client rtrs_client_rs
stop_server
mp_teardown
tap_done
