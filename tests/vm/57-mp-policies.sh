#!/bin/bash
# Two paths of one rnbd session over this module: the policies read from the
# stats (round-robin spreads evenly, min-inflight avoids a loaded path),
# 1337 mpath_policy flips over the 4 policies during IO leave inflight at 0,
# the heartbeat finds a silent peer (netem loss 100%) and the path comes
# back by itself, max_reconnect_attempts=2 gives up ("disconnected")
# until a sysfs reconnect, and `rdma link del` under a connected path fails its IO over
# without a hang. In the quick tier also this module's latency_hist and
# service-time, briefly (tests/vm/59-beyond-c.sh checks them in full).
# Path 1 is path 1 of the tests/lib-mp.sh topology (netem delays it and
# silences it); path 2 is path 2 of it in the full tier (cut, rdma link del),
# and in the quick tier the VM's own rxe_eth0 address (ip:10.0.2.15 both
# ends), which nothing shapes: one topology path less to build.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-mp.sh"
PLAN=18
skip_all_unless_api $PLAN
tap_plan $PLAN
S=pol
cls=/sys/class/rtrs-client/$S
# ts <text>: a TAP comment and a kernel log line with the seconds since the
# start (builtins only).
ts() { echo "# [+${SECONDS}s] $*"; echo "rtrs-test: 57 [+${SECONDS}s] $*" > /dev/kmsg 2>/dev/null; }

# The volume of each tier (if, not by_tier: a process costs about 0.3 s
# under TCG, 0.5 s in this test): the seconds of verified IO for the
# round-robin shares (T_RR) within a run (T_RRF) that then carries the flips,
# for service-time and min-inflight; the flips of each of the 4 policies.
if [ "$RTRS_TIER" = quick ]; then
	# Path 2 over the VM's own rxe_eth0 (lib-mp.sh MP_LOOP).
	# shellcheck disable=SC2034 # MP_LOOP is read by lib-mp.sh
	MP_N=1 MP_LOOP=1 T_RRF=6 T_RR=3 T_ST=4 T_MI=3 NFLIP=100
	# The quick tier finds the silent peer below with a 1 s heartbeat (3
	# misses); the full tier at C's values (59 covers both in its own way).
	HB_ARGS="hb_interval_ms=1000 hb_missed_max=3"
else
	# shellcheck disable=SC2034 # MP_N is read by lib-mp.sh
	MP_N=2 T_RRF=28 T_RR=8 T_MI=8 NFLIP=334 HB_ARGS=
fi
# Not through tap_check: mp_setup sets MP_PATHS in this shell.
if mp_setup; then
	tap_ok "two paths up: $MP_PATHS"
else
	tap_not_ok "two-path topology up"
fi
c1=$(mp_cdev 1)
# Path 1 comes first in MP_PATHS (mp_path_name 1).
p1d=$cls/paths/${MP_PATHS%% *}
p2d=$(mp_path_dir $S 2)
tap_check "server side loads" start_server 65536
# shellcheck disable=SC2086 # HB_ARGS is zero or two words
tap_check "client stack loads ${HB_ARGS:-with the default heartbeat}" load_rnbd_rs $HB_ARGS

# Builtins only (a process costs about 0.3 s under TCG):
# reqs <dir>: REQS = read + write requests sent over the path so far, from
# stats/rdma ("rd_cnt rd_bytes wr_cnt wr_bytes inflight failover").
reqs() { local a='' c=''; { read -r a _ c _ < "$1/stats/rdma"; } 2>/dev/null; REQS=$(( ${a:-0} + ${c:-0} )); }
# shares_start, then shares_end: D1 and D2 = requests over path 1 and 2 meanwhile.
shares_start() { reqs "$p1d"; R1=$REQS; reqs "$p2d"; R2=$REQS; }
shares_end() { reqs "$p1d"; D1=$(( REQS - R1 )); reqs "$p2d"; D2=$(( REQS - R2 )); }
# io_moved: requests went out on either path since shares_start.
io_moved() { reqs "$p1d"; local a=$REQS; reqs "$p2d"; [ $(( a + REQS )) -gt $(( R1 + R2 )) ]; }
# inflight: INFL = inflight summed over the paths' stats/rdma, NINFL = how
# many of them were read (an unreadable one is not an inflight of 0).
inflight() {
	local f i; INFL=0 NINFL=0
	for f in "$cls"/paths/*/stats/rdma; do
		i=; { read -r _ _ _ _ i _ < "$f"; } 2>/dev/null; [ -n "$i" ] && NINFL=$(( NINFL + 1 ))
		INFL=$(( INFL + ${i:-0} ))
	done
}
# hist_sum <file>: HR, HW = the reads and writes of a latency_hist, summed
# over its buckets (the lines after the header: "<bounds> <reads> <writes>").
hist_sum() { local n=0 r w; HR=0 HW=0; while read -r _ r w; do n=$(( n + 1 )); [ $n -gt 1 ] && HR=$(( HR + r )) HW=$(( HW + w )); done < "$1"; }
# policy <name>: writes mpath_policy; POL = what it reads back.
policy() { echo "$1" > $cls/mpath_policy; POL=; _read_line $cls/mpath_policy && POL=$_LINE; }
# status: both paths for a diagnostic.
status() {
	local d n=0 r l
	for d in "$p1d" "$p2d"; do
		n=$(( n + 1 )); pstate "$d"; r=; l=
		_read_line "$d/stats/rdma" && r=$_LINE; _read_line "$d/cur_latency" && l=$_LINE
		echo "path$n ${d##*/}: $ST; rdma $r; latency $l"
	done
}

dev=$(mp_map_two $S)
if [ -b "$dev" ] && wait_for 30 pconn "$p1d" && wait_for 30 pconn "$p2d"; then
	tap_ok "mapped $dev over two connected paths"
else
	tap_not_ok "mapped ${dev:-nothing} over two connected paths"; diag "$(status)"
fi
ts "mapped"

run_io() { mp_run_io "$dev" /tmp/p-fio.out "$@"; } # run_io <seconds> [extra fio args]

# --- silent peer: all traffic of path 1 lost; the heartbeat notices -------------
# First, while both paths are fresh (the netem runs below can make rxe's RC
# give up on path 1).
# The heartbeat's misses of path 1 are traced (rtrs_clt_hb_miss, this
# module's; tests/vm/61-trace-events.sh checks the events themselves).
T=/sys/kernel/tracing hb_ev=/sys/kernel/tracing/events/rtrs_clt/rtrs_clt_hb_miss
[ -d $T/events ] || mount -t tracefs nodev $T 2>/dev/null
if [ -d $hb_ev ]; then echo > $T/trace; echo 1 > $hb_ev/enable; echo 1 > $T/tracing_on; fi
mp_path_loss 1 100
t_cut=$SECONDS
if wait_for 60 pdown "$p1d"; then
	pstate "$p1d"; tap_ok "heartbeat marks the silent path 1 down ($ST after $(( SECONDS - t_cut )) s)"
else
	tap_not_ok "silent path 1 noticed"; diag "$(status)"
fi
# Idle, only the heartbeat's own RDMA write is at stake: its misses count
# from 1 (RC's retries of that write, 8 x 537 ms on rxe, may end the count
# before it passes the limit, hence only the first two; a miss that a late
# answer undid may come before them).
misses=
if [ -d $hb_ev ]; then
	echo 0 > $hb_ev/enable
	mapfile -t lines < $T/trace
	for l in "${lines[@]}"; do
		[[ $l == *" rtrs_clt_hb_miss: "*"path='${MP_PATHS%% *}' "* && $l =~ (missed=[0-9]+) ]] &&
			misses+="${BASH_REMATCH[1]} "
	done
fi
tap_if "the silent path's heartbeat misses are traced from 1 (${misses:-none})" \
	eval '[[ $misses == "missed=1 "* && $misses == *"missed=1 missed=2 "* ]]'
t_down=$SECONDS
# Traffic back at once: the path's teardown then ends (its disconnect
# request is answered) and rnbd's 30 s reconnect delay runs while path 2
# carries the IO below.
mp_path_clear 1
if [ "$RTRS_TIER" = quick ]; then
	for d in "$p1d" "$p2d"; do echo 1 > "$d/stats/reset_all"; done
fi
run_io 3; rc=$?
pstate "$p1d"
tap_if "IO over path 2 meanwhile verifies (fio rc $rc, path 1 $ST)" test $rc -eq 0
ts "IO over path 2 done, path 1 $ST"
# --- this module's latency_hist, briefly (tests/vm/59-beyond-c.sh in full) -----
if [ "$RTRS_TIER" = quick ]; then
	# Per path: the reads and writes summed over the buckets, and the read and
	# write counts of stats/rdma; path 1 was down, so its own are 0 0.
	h='' r=''
	for d in "$p1d" "$p2d"; do
		hist_sum "$d/stats/latency_hist"; h+="$HR $HW "
		a=; c=; { read -r a _ c _ < "$d/stats/rdma"; } 2>/dev/null; r+="$a $c "
	done
	tap_if "latency_hist counts equal stats/rdma's after reset_all and a verified run (hist '$h', rdma '$r', fio rc $rc)" \
		eval "[ $rc -eq 0 ] && [ '$h' = '$r' ] && [ '$h' != '0 0 0 0 ' ]"
else
	tap_skip "latency_hist counts equal stats/rdma's" "quick tier; 59 in full"
fi
# rnbd opens sessions with reconnect_delay_sec=30: the path returns by itself.
if wait_for 120 pconn "$p1d"; then
	tap_ok "path 1 reconnects by itself once traffic returns ($(( SECONDS - t_down )) s after it went down)"
else
	tap_not_ok "path 1 back"; diag "$(status)"
fi
ts "path 1 back"

# --- round-robin: equal paths get shares within 10%; then, during the same
# verified IO, 1337 mpath_policy flips (401 in the quick tier) ----------------
policy round-robin; pol=$POL
shares_start
run_io "$T_RRF" & fpid=$!
# Measure and flip while requests are in flight, not while fio starts.
wait_for 60 io_moved || diag "no IO 60 s after fio started"
shares_start
_sleep "$T_RR"
shares_end
for (( i = 0; i < NFLIP; i++ )); do
	# Each policy issues through its own copy of the walk, and the two
	# that count inflight (min-inflight, service-time) hand over to those
	# that do not: inflight must still come back to 0.
	echo round-robin > $cls/mpath_policy; echo min-inflight > $cls/mpath_policy
	echo min-latency > $cls/mpath_policy; echo service-time > $cls/mpath_policy
done
if kill -0 $fpid 2>/dev/null; then during=yes; else during=no; fi
echo min-inflight > $cls/mpath_policy
wait $fpid; rc=$?
tot=$(( D1 + D2 )) rr_pct=0
[ $tot -gt 0 ] && rr_pct=$(( D1 * 100 / tot ))
tap_if "round-robin: path shares within 10% over ${T_RR} s of IO (path1 $D1, path2 $D2, fio rc $rc, '$pol')" \
	eval "[ '$pol' = 'round-robin (RR: 0)' ] && [ $rc -eq 0 ] && [ $tot -gt 0 ] && [ \$(( ($D1 - $D2) * 100 / $tot )) -le 10 ] && [ \$(( ($D2 - $D1) * 100 / $tot )) -le 10 ]"
inflight
tap_if "$(( NFLIP * 4 + 1 )) mpath_policy flips during that verified IO (fio still running after them: $during): fio rc $rc, inflight back to 0 ($INFL, over $NINFL paths)" \
	eval "[ $rc -eq 0 ] && [ $NINFL -eq 2 ] && [ $INFL -eq 0 ]"
ts "round-robin and flips done"

# --- service-time keeps IO off a slow path (tests/vm/59-beyond-c.sh in full) ---
# Path 1 slowed by 100 ms each way before the IO starts, so that it is slow
# whatever TCG's own latency (tens of ms); the IO runs at QD 1, where the
# path that a policy picks does not change the other's latency. Round-robin
# ignores latency and gave path 1 rr_pct% above; service-time must give it
# under a quarter of that (min-inflight would pick path 1 at each tie, all
# of it at QD 1).
if [ "$RTRS_TIER" = quick ]; then
	if echo 3 > $cls/mpath_policy 2>/dev/null; then three=accepted; else three=refused; fi
	policy service-time; pol=$POL
	ST_MS=100
	# slow_seen: path 1 is connected and a heartbeat crossed it since the
	# delay (its round trip, cur_latency, is at least 2 x ST_MS); path 2 is
	# connected and has a round trip too.
	slow_seen() {
		local v1='' v2=
		pconn "$p1d" && pconn "$p2d" || return 1
		{ read -r v1 _ < "$p1d/cur_latency"; read -r v2 _ < "$p2d/cur_latency"; } 2>/dev/null
		[ "${v1:-0}" -ge $(( 2 * ST_MS * 1000000 )) ] && [ "${v2:-0}" -gt 0 ]
	}
	slow=yes
	mp_path_delay_up $S 1 $ST_MS 30 slow_seen || { slow=no; diag "no slow heartbeat on path 1: $(status)"; }
	l1=; l2=; { read -r l1 _ < "$p1d/cur_latency"; read -r l2 _ < "$p2d/cur_latency"; } 2>/dev/null
	shares_start
	run_io "$T_ST" --numjobs=1 --iodepth=1; rc=$?
	shares_end
	pstate "$p1d"; st1=$ST
	tot=$(( D1 + D2 ))
	tap_if "'3' $three as C does; '$pol': path 1 slowed by $ST_MS ms each way (heartbeat round trips $(( ${l1:-0} / 1000000 )) ms and $(( ${l2:-0} / 1000000 )) ms, slow seen: $slow) gets $D1 of $tot requests at QD 1, under a quarter of round-robin's $rr_pct%; path 1 $st1 after it (fio rc $rc)" \
		eval "[ $three = refused ] && [ '$pol' = 'service-time (ST: 3)' ] && [ $slow = yes ] && [ $rc -eq 0 ] && [ '$st1' = connected ] && [ $D1 -ge 0 ] && [ $tot -ge 20 ] && [ $(( D1 * 100 * 4 )) -lt $(( rr_pct * tot )) ]"
	ts "service-time done"
else
	tap_skip "service-time keeps IO off a slow path" "quick tier; 59 in full"
fi

# --- min-inflight: a path slowed by netem holds requests longer, gets fewer ---
policy min-inflight; pol=$POL
if [ "$RTRS_TIER" = quick ]; then
	# Service-time's 100 ms stay, at QD 8 (2 jobs x 4): there TCG's own
	# latency is tens of ms, and the 200 ms more per round trip make path 1
	# clearly slower (20 ms at QD 64 hardly show under TCG: 95 vs 125 seen).
	MI_MS=$ST_MS MI_ARGS=--iodepth=4
else
	MI_MS=20 MI_ARGS=
	mp_path_delay 1 $MI_MS || diag "netem on path 1 failed"
fi
shares_start
# shellcheck disable=SC2086 # MI_ARGS is zero or one word
run_io "$T_MI" $MI_ARGS; rc=$?
shares_end
delayed=no
[[ $(tc qdisc show dev "$c1") == *netem* ]] && delayed=yes
mp_path_clear 1
# (A count that went back, D1 < 0, is a path that vanished: reqs reads 0.)
tap_if "min-inflight: more to the less loaded path (path1, $MI_MS ms slower each way: $D1; path2: $D2; fio rc $rc, '$pol')" \
	eval "[ '$pol' = 'min-inflight (MI: 1)' ] && [ $rc -eq 0 ] && [ $D1 -ge 0 ] && [ $D2 -gt $D1 ] && [ '$delayed' = yes ]"
ts "min-inflight done"

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
	# Path 1 first: the netem delay under load above can make rxe's RC give
	# up on it (the path then waits out rnbd's 30 s reconnect delay).
	mp_path_reconnect $S 1 90 || diag "path 1 not back: $(mp_status $S)"
	p2dir=$(mp_path_dir $S 2)
	# Each step counts: a failed one would leave the attempts below unmade
	# or uncounted.
	steps=
	echo 2 > $cls/max_reconnect_attempts || steps+=" max_reconnect_attempts"
	echo 1 > $p2dir/disconnect || steps+=" disconnect"
	echo 1 > $p2dir/stats/reconnects || steps+=" stats/reconnects"
	mp_path_cut 2 || steps+=" mp_path_cut"
	# Attempt 1, the sysfs one: it must fail, with ENOTCONN.
	if { echo 1 > "$p2dir/reconnect"; } 2>/tmp/pol-werr.txt; then r=ok; else r=; _read_line /tmp/pol-werr.txt && r=${_LINE##*: }; fi
	two=no
	wait_for 300 sh -c "grep -q '^[0-9]* 2\$' $p2dir/stats/reconnects" && two=yes
	if [ -z "$steps" ] && [ "$r" = 'Transport endpoint is not connected' ] && [ $two = yes ]; then
		tap_ok "2 failed attempts (the sysfs reconnect over the cut path: $r): '$(cat $p2dir/state)', reconnects '$(cat $p2dir/stats/reconnects)'"
	else
		tap_not_ok "2 failed attempts (the sysfs reconnect over the cut path: '${r:-no error text}', ENOTCONN expected; counted 2: $two${steps:+; failed to set up:$steps})"
		diag "$(mp_status $S)"
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
ts "end"
tap_done
