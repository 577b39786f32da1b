#!/bin/bash
# rnbd-client-rs (rnbd_clt/) over this module, both Rust, with no C RTRS or
# RNBD client module loaded, against the unmodified rnbd-server: a device
# mapped over the two paths of the tests/lib-mp.sh topology (cut in the
# router netns, never on an rxe netdev).
#  1. Failover under verified IO: fio randrw crc32c runs (in segments, so
#     that every action starts with IO in flight) while path 1 is cut
#     silently and comes back, then path 2 the same, then churn through the
#     rtrs-client sysfs (remove_path/add_path; the full tier adds
#     disconnect/reconnect and the other path's remove/add). Each action:
#     the path is noticed down, comes back (waited for by its state), counts
#     a reconnect, and a cut fails the requests in flight over to the other
#     path. Every fio segment exits 0 with no verify error; at the end both
#     paths are connected with nothing in flight.
#  2. Remap after the session went down: a pattern written first; then every
#     path lost (the quick tier: sysfs disconnect of both; the full tier: a
#     silent cut of both, idle, until the heartbeat gives up, then the sysfs
#     disconnect as well); rnbd's link event makes the device "closed" and
#     IO on it fails with EIO at once; one path back remaps it ("open", the
#     remap logged), the other comes back, the pattern reads back identical
#     and a verified fio run passes.
# The quick tier: the cuts and one remove/add under IO at a 1 s heartbeat
# (3 misses), the disconnect case of 2. The full tier: C's heartbeat, the
# churn above, and both cases of 2.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-mp.sh"
RNBD_RS_KO=$RTRS_REPO/rnbd_clt/rnbd-client-rs.ko
# shellcheck disable=SC2034 # MP_N is read by lib-mp.sh
MP_N=2
if [ "$RTRS_TIER" = quick ]; then
	ACTIONS="cut:1 cut:2 remove_add:1"
	REMAP_CASES="disconnect"
	# A path cut under IO is found by RC's retries in seconds, or by the
	# heartbeat: 4 s at 1 s x 3 (C's 5 s x 5 can take 30 s).
	HB_ARGS="hb_interval_ms=1000 hb_missed_max=3"
	SEG=70 VERIFY_BACKLOG=64 AFTER_MB=1M
else
	ACTIONS="cut:1 cut:2 remove_add:1 disc:2 remove_add:2 disc:1"
	REMAP_CASES="cut disconnect"
	HB_ARGS=
	SEG=120 VERIFY_BACKLOG=512 AFTER_MB=4M
fi
NACT=$(wc -w <<< "$ACTIONS")
NCASE=$(wc -w <<< "$REMAP_CASES")
PLAN=$(( 6 + NACT + 2 + 7 * NCASE + 2 ))
skip_all_unless_api $PLAN
[ -f "$RNBD_RS_KO" ] || skip_all $PLAN "rnbd_clt is not built (make test-tools)"
tap_plan $PLAN
S=rsmp
CLS=/sys/class/rtrs-client
SRVCLS=/sys/class/rtrs-server
SECONDS=0
FIO_PID=
T_IO=0
dev=
# ts <text>: a TAP comment and a kernel log line with the seconds since the
# start (builtins only).
ts() { echo "# [+${SECONDS}s] $*"; echo "rtrs-test: 66 [+${SECONDS}s] $*" > /dev/kmsg 2>/dev/null; }

cleanup() {
	local b
	[ -n "$FIO_PID" ] && kill "$FIO_PID" 2>/dev/null && wait "$FIO_PID" 2>/dev/null
	FIO_PID=
	mp_path_restore 1 > /dev/null 2>&1; mp_path_restore 2 > /dev/null 2>&1
	timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S" > /dev/null 2>&1
	for b in /sys/block/rnbd*; do
		[ -e "$b/rnbd/unmap_device" ] && echo force > "$b/rnbd/unmap_device" 2>/dev/null
	done
	unload_modules rnbd_client_rs rtrs_client_rs
	stop_server
	mp_teardown
}
# bail <reason>: report the remaining tests as failed, clean up, and stop.
bail() {
	diag "bailing out: $1"
	while [ "$TAP_N" -lt "$PLAN" ]; do tap_not_ok "not run: $1"; done
	cleanup
	exit 1
}
# Killed by the suite's timeout (30 s before its KILL): force the unmap and
# unload rnbd_client_rs, which the suite's reset does not know (it would
# keep rtrs_client_rs loaded for the tests after this one); the reset does
# the rest.
on_term() {
	local f
	trap - TERM
	[ -n "$FIO_PID" ] && kill "$FIO_PID" 2>/dev/null
	for f in /sys/block/rnbd*/rnbd/unmap_device; do [ -e "$f" ] && echo force > "$f"; done
	wait_for 20 _absent "$CLS/$S"
	unload_modules rnbd_client_rs
	exit 143
}
trap on_term TERM

# --- the stack ---------------------------------------------------------------
if mp_setup; then tap_ok "two-path topology up: $MP_PATHS"; else tap_not_ok "two-path topology up"; bail "no topology"; fi
tap_check "server side loads" start_server 65536
# shellcheck disable=SC2086 # HB_ARGS is zero or two words
load_stack() { modprobe rtrs_core && load_rs $HB_ARGS && insmod "$RNBD_RS_KO"; }
tap_check "rtrs-client-rs${HB_ARGS:+ ($HB_ARGS)} and rnbd-client-rs load" load_stack
# /proc/modules: "name size refs users, state addr"; rnbd_client_rs must use
# this module's exports, and neither C client may be there.
only_rust() {
	! module_loaded rtrs_client && ! module_loaded rnbd_client &&
		grep -qE '^rtrs_client_rs [0-9]+ [0-9]+ ([a-z_]+,)*rnbd_client_rs,' /proc/modules ||
		{ grep -E '^(rtrs|rnbd)' /proc/modules; false; }
}
tap_check "only the Rust stack: rnbd_client_rs uses rtrs_client_rs, no rtrs_client or rnbd_client" only_rust
module_loaded rnbd_client_rs || bail "rnbd-client-rs is not loaded"

dev=$(mp_map_two $S)
b=/sys/block/${dev#/dev/}
# dev_state <state>: the device's rnbd/state reads <state> (builtins only).
dev_state() { _read_line "$b/rnbd/state" && [ "$_LINE" = "$1" ]; }
mapped() {
	mp_two_mapped $S "$dev" && dev_state open &&
		[ "$(blockdev --getsize64 "$dev")" = 67108864 ] || { echo "state $(cat "$b/rnbd/state")"; false; }
}
if [ -b "$dev" ]; then
	tap_check "mapped $dev over both paths: connected, device open, 64 MiB" mapped
else
	tap_not_ok "map over $MP_PATHS"; diag "$(dmesg | tail -n 20)"; bail "no device"
fi
ts "mapped"

# --- 1. failover and churn under verified IO -----------------------------------
# Builtins only (a process costs about 0.3 s under TCG, and the IO starves
# this shell): REQS = requests sent over both paths so far; REQ1, REQ2 each.
reqs() {
	mp_path_field $S 1 stats/rdma 1; REQ1=$MP_FIELD; mp_path_field $S 1 stats/rdma 3; REQ1=$(( REQ1 + MP_FIELD ))
	mp_path_field $S 2 stats/rdma 1; REQ2=$MP_FIELD; mp_path_field $S 2 stats/rdma 3; REQ2=$(( REQ2 + MP_FIELD ))
	REQS=$(( REQ1 + REQ2 ))
}
io_since() { reqs; [ "$REQS" -gt $(( $1 + 64 )) ]; }
both_up() { mp_path_connected $S 1 && mp_path_connected $S 2; }
fio_running() { [ -n "$FIO_PID" ] && kill -0 "$FIO_PID" 2>/dev/null; }

# The IO runs in segments of SEG seconds, one job per CPU at QD 64 on
# disjoint 8M regions (the first 16 MiB on two CPUs; the pattern of 2 lives
# at 48 MiB, the runs after a remap at 32 MiB). Before each action a segment
# must have IO flowing and a few seconds left (fio_ensure), else the next
# one starts; each segment is judged when it ends (fio_end).
NJOBS=$(nproc)
SEGS=0 SEG_BAD=0 SEG_MB=0
fio_start() {
	SEGS=$(( SEGS + 1 ))
	FIO_OUT=/tmp/rs-mp-fio.$SEGS.json FIO_LOG=/tmp/rs-mp-fio.$SEGS.log
	reqs; local io0=$REQS
	# nice: under TCG the IO can starve this shell, whose loop must go on.
	timeout -k 10 $(( SEG + 300 )) nice -n 19 fio --name=rsmp --filename="$dev" --direct=1 --ioengine=libaio \
		--rw=randrw --bs=4k --iodepth=64 --numjobs="$NJOBS" --size=8M --offset_increment=8M \
		--cpus_allowed=0-$(( NJOBS - 1 )) --cpus_allowed_policy=split --time_based --runtime="$SEG" \
		--verify=crc32c --verify_backlog="$VERIFY_BACKLOG" --do_verify=1 --verify_fatal=1 \
		--verify_state_save=0 --randrepeat=0 --group_reporting \
		--output-format=json --output="$FIO_OUT" > "$FIO_LOG" 2>&1 &
	FIO_PID=$!
	# fio takes 10-15 s to start under TCG.
	if wait_for 90 io_since "$io0"; then T_IO=$SECONDS; ts "fio segment $SEGS: IO flowing"; return 0; fi
	ts "fio segment $SEGS: no IO after 90 s"
	return 1
}
fio_end() {
	local rc err mb
	[ -n "$FIO_PID" ] || return 0
	wait "$FIO_PID"; rc=$?
	FIO_PID=
	# fio may put warnings before the JSON object in its output file.
	err=$(sed -n '/^{/,$p' "$FIO_OUT" | jq '[.jobs[].error] | add' 2>/dev/null)
	mb=$(sed -n '/^{/,$p' "$FIO_OUT" | jq '[.jobs[].read.io_bytes, .jobs[].write.io_bytes] | add / 1048576 | floor' 2>/dev/null)
	ts "fio segment $SEGS ended: rc $rc, error ${err:-?}, ${mb:-?} MiB"
	if [ "$rc" -eq 0 ] && [ "$err" = 0 ] && ! grep -qi 'verify.*fail\|bad magic\|crc32c' "$FIO_LOG"; then
		SEG_MB=$(( SEG_MB + ${mb:-0} ))
	else
		SEG_BAD=$(( SEG_BAD + 1 ))
		diag "fio segment $SEGS: rc $rc, error ${err:-unreadable JSON}" "$(tail -n 20 "$FIO_LOG")"
	fi
}
# fio_ensure: a segment runs with IO flowing and at least 10 s of its
# runtime left (its runtime counts from about T_IO).
fio_ensure() {
	fio_running && [ $(( SECONDS - T_IO )) -lt $(( SEG - 10 )) ] && return 0
	fio_end
	fio_start
}

# The actions. Each sets MSG and succeeds only if the path went and came
# back as it should. other <n>: the other path's number.
other() { echo $(( 3 - $1 )); }
# act_cut <n>: a silent cut of path n in the router (blackhole routes):
# noticed down (RC's retries on the requests in flight, or the heartbeat),
# requests failed over to the other path, the routes back, then the path
# reconnected (a sysfs reconnect until it is connected: rnbd's own delay is
# 30 s, and the server refuses the path until it dropped its old side).
act_cut() {
	local n=$1 o f0 r0 t0 td ok=1
	o=$(other "$n")
	mp_path_field $S "$o" stats/rdma 6; f0=$MP_FIELD
	mp_path_field $S "$n" stats/reconnects 1; r0=$MP_FIELD
	t0=$SECONDS
	mp_path_cut "$n" || { MSG="the cut failed"; return 1; }
	if wait_for 90 mp_path_down $S "$n"; then td="down after $(( SECONDS - t0 )) s"; else td="not down after 90 s ($(mp_path_state $S "$n"))"; ok=0; fi
	mp_path_restore "$n" || { td+=", restore failed"; ok=0; }
	if mp_path_reconnect $S "$n" 120; then td+=", back after $(( SECONDS - t0 )) s"; else td+=", not back ($(mp_path_state $S "$n"))"; ok=0; fi
	mp_path_field $S "$o" stats/rdma 6; f0=$(( MP_FIELD - f0 ))
	mp_path_field $S "$n" stats/reconnects 1
	MSG="$td; $f0 requests failed over to path $o; reconnects $r0 -> $MP_FIELD"
	[ $ok = 1 ] && [ "$f0" -gt 0 ] && [ "$MP_FIELD" -gt "$r0" ]
}
# act_disc <n>: sysfs disconnect: the path reads "disconnected" at once,
# then a sysfs reconnect brings it back and counts.
act_disc() {
	local n=$1 o d f0 r0 t0 st
	o=$(other "$n"); d=$(mp_path_dir $S "$n")
	mp_path_field $S "$o" stats/rdma 6; f0=$MP_FIELD
	mp_path_field $S "$n" stats/reconnects 1; r0=$MP_FIELD
	t0=$SECONDS
	echo 1 > "$d/disconnect" || { MSG="the disconnect write failed"; mp_path_reconnect $S "$n" 60; return 1; }
	# (C's disconnect returns once the path is closed; a few seconds' grace.)
	wait_for 10 mp_path_down $S "$n"
	st=$(mp_path_state $S "$n")
	mp_path_reconnect $S "$n" 90 || { MSG="read '$st' after the disconnect, not back ($(mp_path_state $S "$n"))"; return 1; }
	mp_path_field $S "$o" stats/rdma 6; f0=$(( MP_FIELD - f0 ))
	mp_path_field $S "$n" stats/reconnects 1
	MSG="read '$st' after the disconnect, back after $(( SECONDS - t0 )) s; $f0 requests failed over to path $o; reconnects $r0 -> $MP_FIELD"
	[ "$st" = disconnected ] && [ "$MP_FIELD" -gt "$r0" ]
}
# act_remove_add <n>: sysfs remove_path: the path is gone from the client at
# once and from the server (which refuses an address it still has), then
# add_path brings it back connected (add_path connects before it returns).
act_remove_add() {
	local n=$1 d t0
	d=$(mp_path_dir $S "$n")
	t0=$SECONDS
	mp_srv_path_listed $S "$n" || { MSG="the server does not list the path before"; return 1; }
	echo 1 > "$d/remove_path" || { MSG="the remove_path write failed"; return 1; }
	[ ! -e "$d" ] || { MSG="still listed after remove_path"; return 1; }
	srv_gone() { ! mp_srv_path_listed $S "$n"; }
	wait_for 60 srv_gone || { MSG="the server still lists the path 60 s after remove_path"; return 1; }
	echo "$(mp_path_name "$n")" > $CLS/$S/add_path || { MSG="add_path failed"; return 1; }
	wait_for 30 mp_path_connected $S "$n" || { MSG="not connected 30 s after add_path ($(mp_path_state $S "$n"))"; return 1; }
	wait_for 30 mp_srv_path_listed $S "$n" || { MSG="added, but the server does not list it"; return 1; }
	MSG="gone from both sides, added back and connected after $(( SECONDS - t0 )) s"
}

reqs; p10=$REQ1 p20=$REQ2
if fio_start; then
	both_moved() { reqs; [ "$REQ1" -gt "$p10" ] && [ "$REQ2" -gt "$p20" ]; }
	wait_for 30 both_moved
	reqs
	tap_if "both paths carry the verified IO (path 1 +$(( REQ1 - p10 )), path 2 +$(( REQ2 - p20 )) requests)" both_moved
else
	tap_not_ok "both paths carry the verified IO: fio did not start"; diag "$(cat "$FIO_LOG")"
fi
for a in $ACTIONS; do
	k=${a%%:*} n=${a#*:}
	MSG=
	if ! wait_for 60 both_up; then
		tap_not_ok "$a under verified IO: not both paths up before it"; diag "$(mp_status $S)"
		continue
	fi
	if ! fio_ensure; then
		tap_not_ok "$a under verified IO: no IO flowing before it"; diag "$(tail -n 20 "$FIO_LOG")"
		continue
	fi
	ts "action $a"
	if "act_$k" "$n"; then tap_ok "$a under verified IO: $MSG"; else tap_not_ok "$a under verified IO: $MSG"; diag "$(mp_status $S)"; fi
done
fio_end
tap_if "every fio segment ($SEGS) exits 0 with no verify error (${SEG_MB} MiB moved and checked)" \
	test "$SEG_BAD" -eq 0 -a "$SEGS" -gt 0
# inflight <n>: path n's stats/rdma is readable and counts nothing in flight.
inflight0() { _mp_dir $S "$1"; [ -r "$_MP_DIR/stats/rdma" ] && mp_path_field $S "$1" stats/rdma 5 && [ "$MP_FIELD" -eq 0 ]; }
settled() { both_up && inflight0 1 && inflight0 2; }
if wait_for 60 settled; then
	tap_ok "both paths connected at the end, nothing in flight"
else
	tap_not_ok "both paths connected at the end, nothing in flight"; diag "$(mp_status $S)"
fi
ts "churn done"

# --- 2. remap after the session went down ----------------------------------------
PAT=/tmp/rs-mp-pat PAT_BLK=12288 # 64 blocks of 4k at 48 MiB
pattern_reads_back() { dd if="$dev" bs=4k skip=$PAT_BLK count=64 iflag=direct status=none | cmp - $PAT; }
write_pattern() {
	dd if=/dev/urandom of=$PAT bs=4k count=64 status=none &&
		dd if=$PAT of="$dev" bs=4k seek=$PAT_BLK oflag=direct status=none && pattern_reads_back
}
# eio_at_once: a read of the closed device fails with EIO within 30 s.
eio_at_once() {
	local out rc
	out=$(timeout 30 dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct 2>&1); rc=$?
	echo "dd rc $rc: $out"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && [[ $out == *"Input/output error"* ]]
}
verify_after() {
	fio_verify "$dev" 4k "$AFTER_MB" --offset=32M > /dev/null &&
		[ "$(blockdev --getsize64 "$dev")" = 67108864 ]
}
# remap_case <disconnect|cut>: seven points.
remap_case() {
	local how=$1 m r1 r2 n t0 ok lost
	tap_check "$how: a pattern written before the loss reads back" write_pattern
	mp_path_field $S 1 stats/reconnects 1; r1=$MP_FIELD
	mp_path_field $S 2 stats/reconnects 1; r2=$MP_FIELD
	m=$(kmsg_mark)
	t0=$SECONDS
	case $how in
	# Both at once; the DISCONNECTED event comes with the second.
	disconnect) lost="sysfs disconnect of both paths"
		for n in 1 2; do echo 1 > "$(mp_path_dir $S $n)/disconnect" || diag "disconnect of path $n failed"; done ;;
	# Idle: only the heartbeat finds it (at C's 5 s x 5 in the full tier).
	cut) lost="both paths cut silently"
		mp_path_cut 1 && mp_path_cut 2 || diag "a cut failed" ;;
	esac
	# Held until the session is down: both paths listed and not connected,
	# rnbd's device closed by the link event.
	down() { mp_path_down $S 1 && mp_path_down $S 2 && dev_state closed; }
	if wait_for 150 down && dmesg_since "$m" "rnbd_client_rs: </dev/ram0@$S> Device disconnected"; then
		tap_ok "$how: $lost: the session is down after $(( SECONDS - t0 )) s, the device reads 'closed'"
	else
		tap_not_ok "$how: $lost: the session down, the device 'closed'"
		diag "device '$(cat "$b/rnbd/state")'" "$(mp_status $S)"
	fi
	tap_check "$how: IO on the closed device fails at once with EIO" eio_at_once
	if [ "$how" = cut ]; then
		mp_path_restore 1 || diag "restore of path 1 failed"
		mp_path_restore 2 || diag "restore of path 2 failed"
	fi
	# One path back: RTRS's RECONNECTED, and rnbd remaps the device.
	t0=$SECONDS
	ok=1
	mp_path_reconnect $S 1 150 || { ok=0; diag "path 1 not back: $(mp_path_state $S 1)"; }
	if [ $ok = 1 ] && wait_for 60 dev_state open &&
		dmesg_since "$m" "rnbd_client_rs: </dev/ram0@$S> session reconnected, remapping device"; then
		tap_ok "$how: path 1 back: the device is remapped (logged) and reads 'open' $(( SECONDS - t0 )) s later"
	else
		tap_not_ok "$how: path 1 back: the device remapped, 'open'"
		diag "device '$(cat "$b/rnbd/state")'" "$(dmesg | grep rnbd_client_rs | tail -n 5)"
	fi
	ok=1
	mp_path_reconnect $S 2 150 || ok=0
	mp_path_field $S 1 stats/reconnects 1; n=$MP_FIELD
	mp_path_field $S 2 stats/reconnects 1
	if [ $ok = 1 ] && both_up && [ "$n" -gt "$r1" ] && [ "$MP_FIELD" -gt "$r2" ]; then
		tap_ok "$how: path 2 back too: both connected, each counted a reconnect ($r1 -> $n, $r2 -> $MP_FIELD)"
	else
		tap_not_ok "$how: both paths back, each counting a reconnect ($r1 -> $n, $r2 -> $MP_FIELD)"; diag "$(mp_status $S)"
	fi
	tap_check "$how: the data written before the loss reads back identical" pattern_reads_back
	tap_check "$how: fio crc32c verify of $AFTER_MB after the remap, the disk still 64 MiB" verify_after
	ts "remap case $how done"
}
for c in $REMAP_CASES; do remap_case "$c"; done

# --- teardown ------------------------------------------------------------------
gone_both_sides() { [ ! -e "$b" ] && [ ! -e "$CLS/$S" ] && [ ! -e "$SRVCLS/$S" ] && [ ! -e "$RNBD_CTL/devices/!dev!ram0@$S" ]; }
timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S" || diag "unmap_rnbd $S failed"
if wait_for 60 gone_both_sides; then
	tap_ok "unmap: the disk and the session are gone on both sides"
else
	tap_not_ok "unmap: the disk and the session gone on both sides"; diag "$(ls $CLS $SRVCLS /sys/block 2>&1)"
fi
unload_modules rnbd_client_rs rtrs_client_rs
stop_server
mp_teardown
mp_tap_all_gone
ts "total"
tap_done
