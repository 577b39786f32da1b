#!/bin/bash
# What this module adds to the C client's sysfs (sysfs/ABI.md, "Extensions"),
# on two paths of the tests/lib-mp.sh topology under rnbd:
# - stats/latency_hist: its shape, its counts equal to stats/rdma's after a
#   verified fio run, its reset (echo 1, reset_all) and its -EINVAL;
# - mpath_policy service-time: by name only ("3" stays -EINVAL as in C), and
#   with one path slowed by netem it sends that path a small share of IO;
# - heartbeat tunables: out-of-range module parameters are refused at load
#   with a log line; with hb_interval_ms=1000 hb_missed_max=3 an idle path
#   whose peer goes silent (netem loss 100%, the other path up) is found by
#   the heartbeat in seconds, and with IO on it the longest IO stall stays
#   under 8 s, fio verify clean;
# - full tier: the same silent peer at C's heartbeat values (figures for the
#   notes).
# Not here: how fast service-time and min-latency move IO off a path that
# turns slow under load. Slowing a loaded path with netem (replaced or
# changed in place) makes the server's RC give up on it on rxe under TCG,
# so that measure failed on the transport, not on the policy.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-mp.sh"
PLAN=17
skip_all_unless_api $PLAN
tap_plan $PLAN
if [ "$RTRS_TIER" = quick ]; then
	# Its two-path set-up costs minutes; 57 checks the histogram, service-time
	# and a 1 s heartbeat in the quick tier.
	for i in $(seq 1 $PLAN); do tap_skip "test $i" "full tier (57 covers the quick tier)"; done
	exit 0
fi
S=lat
cls=/sys/class/rtrs-client/$S

if mp_setup; then tap_ok "two-path topology up: $MP_PATHS"; else tap_not_ok "two-path topology up"; fi
tap_check "server side loads" start_server 65536
# --- heartbeat tunables refused out of range, taken in range ------------------
modprobe rtrs_core
mark=$(kmsg_mark)
bad=
for p in hb_interval_ms=99 hb_interval_ms=60001 hb_missed_max=0 hb_missed_max=101; do
	if load_rs "$p" 2>/dev/null; then bad+=" $p:loaded"; rmmod rtrs_client_rs; fi
	dmesg_since "$mark" "$p is outside" || bad+=" $p:no-log"
done
tap_check "out-of-range heartbeat parameters refused at load with a log line${bad:+ (wrong:$bad)}" test -z "$bad"
HB_MS=1000 HB_MISS=3
tap_check "client stack loads with hb_interval_ms=$HB_MS hb_missed_max=$HB_MISS" \
	load_rnbd_rs hb_interval_ms=$HB_MS hb_missed_max=$HB_MISS
tap_check "the parameters read back ($(cat /sys/module/rtrs_client_rs/parameters/hb_interval_ms 2>&1) $(cat /sys/module/rtrs_client_rs/parameters/hb_missed_max 2>&1))" \
	test "$(cat /sys/module/rtrs_client_rs/parameters/hb_interval_ms) $(cat /sys/module/rtrs_client_rs/parameters/hb_missed_max)" = "$HB_MS $HB_MISS"
dev=$(mp_map_two $S)
tap_check "mapped ${dev:-nothing} over two connected paths" mp_two_mapped $S "$dev"

run_io() { mp_run_io "$dev" /tmp/l-fio.out "$@"; } # run_io <seconds> [extra fio args]
hist() { cat "$(mp_path_dir $S "$1")/stats/latency_hist"; }
# hist_sums <n>: "<reads> <writes>" summed over path n's buckets.
hist_sums() { hist "$1" | awk 'NR > 1 {r += $2; w += $3} END {print r + 0, w + 0}'; }
# rdma_rw <n>: "<read_cnt> <write_cnt>" of path n's stats/rdma.
rdma_rw() { mp_path_rdma $S "$1" | awk '{print $1, $3}'; }
# write_errno <file> <text>: "ok" or the errno name of the write.
write_errno() {
	python3 -c 'import os, sys, errno
try:
    fd = os.open(sys.argv[1], os.O_WRONLY); os.write(fd, sys.argv[2].encode()); print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])' "$1" "$2"
}

# --- latency_hist: a header and 24 contiguous log2-µs buckets -----------------
shape_ok() {
	hist "$1" | awk 'NR == 1 {ok = ($0 == "usecs read write"); next_lo = 0; next}
		{split($1, b, "-"); if (b[1] != next_lo || NF != 3) ok = 0; next_lo = b[2] + 1; last = $1}
		END {exit !(ok && NR == 25 && last == "4194304-")}'
}
both_shapes_ok() { shape_ok 1 && shape_ok 2 || { hist 1; return 1; }; }
tap_check "latency_hist of both paths: header and 24 contiguous buckets, the last '4194304-'" both_shapes_ok

# --- after reset_all and a verified run, its counts are stats/rdma's ---------
for n in 1 2; do echo 1 > "$(mp_path_dir $S $n)/stats/reset_all"; done
run_io 4; rc=$?
s1=$(hist_sums 1); s2=$(hist_sums 2); r1=$(rdma_rw 1); r2=$(rdma_rw 2)
tot=$(echo "$s1 $s2" | awk '{print $1 + $2 + $3 + $4}')
tap_check "counts equal stats/rdma's reads and writes (path1 hist '$s1' rdma '$r1', path2 hist '$s2' rdma '$r2', fio rc $rc)" \
	sh -c "[ $rc -eq 0 ] && [ '$s1' = '$r1' ] && [ '$s2' = '$r2' ] && [ $tot -gt 0 ]"

# --- echo 1 clears it, and only it; anything else is EINVAL -------------------
p1=$(mp_path_dir $S 1)
res=$(write_errno "$p1/stats/latency_hist" 1)
tap_check "echo 1 > latency_hist clears it ($res, now '$(hist_sums 1)'), stats/rdma kept ('$(rdma_rw 1)')" \
	sh -c "[ $res = ok ] && [ '$(hist_sums 1)' = '0 0' ] && [ '$(rdma_rw 1)' = '$r1' ]"
res0=$(write_errno "$p1/stats/latency_hist" 0); resx=$(write_errno "$p1/stats/latency_hist" x)
tap_check "latency_hist refuses '0' ($res0) and 'x' ($resx)" sh -c "[ $res0 = EINVAL ] && [ $resx = EINVAL ]"

# --- mpath_policy service-time: by name; '3' stays EINVAL as in C -------------
echo min-inflight > $cls/mpath_policy
res3=$(write_errno $cls/mpath_policy 3)
tap_check "mpath_policy '3' is EINVAL ($res3) and changes nothing ($(cat $cls/mpath_policy))" \
	sh -c "[ $res3 = EINVAL ] && [ '$(cat $cls/mpath_policy)' = 'min-inflight (MI: 1)' ]"
echo service-time > $cls/mpath_policy
tap_check "mpath_policy 'service-time' reads back as 'service-time (ST: 3)' ($(cat $cls/mpath_policy))" \
	test "$(cat $cls/mpath_policy)" = "service-time (ST: 3)"

# --- service-time keeps IO off a slow path ------------------------------------
mp_path_delay 1 20 || diag "netem on path 1 failed"
q1=$(mp_path_reqs $S 1); q2=$(mp_path_reqs $S 2)
run_io "$(by_tier 6 15)"; rc=$?
d1=$(( $(mp_path_reqs $S 1) - q1 )); d2=$(( $(mp_path_reqs $S 2) - q2 ))
delayed=$(tc qdisc show dev "$(mp_cdev 1)" | grep -q netem && echo yes || echo no)
mp_path_clear 1
# (Over the two paths' files: an unreadable one is not an inflight of 0.)
infl=$(awk '{s += $5; n++} END {print (n == 2 ? s + 0 : "unread")}' $cls/paths/*/stats/rdma 2>/dev/null)
# (A count that went back, d1 < 0, is a path that vanished: mp_path_reqs reads 0.)
tap_check "service-time: path 1 slowed by 20 ms gets under 20% (path1 $d1, path2 $d2, fio rc $rc, netem $delayed)" \
	sh -c "[ $rc -eq 0 ] && [ '$delayed' = yes ] && [ $d1 -ge 0 ] && [ $(( d1 + d2 )) -gt 0 ] && [ $(( d1 * 5 )) -lt $(( d1 + d2 )) ]"
tap_check "inflight back to 0 after the run ($infl)" test "$infl" = 0

# both_up: both paths CONNECTED again (a path can fail in a phase).
both_up() { mp_path_reconnect $S 1 90 && mp_path_reconnect $S 2 90; }
echo min-inflight > $cls/mpath_policy

# --- a silent peer: an idle path found by the heartbeat, a busy one failed over
# idle_cut: all IO on path 1 (min-latency would pick either: path 2 is just
# left idle by stopping IO), path 2's peer goes silent; prints the ms until
# path 2 left CONNECTED, or none within 60 s (or if a path was not
# connected before: a path already down is not found). Only the heartbeat
# can notice: nothing else is posted on path 2.
idle_cut() {
	if ! both_up >/dev/null 2>&1; then echo "# a path not connected before the idle cut" >&2; echo none; return; fi
	mp_path_delay 2 0
	local t0 det=none; t0=$(date +%s%N)
	mp_path_netem_change 2 loss 100%
	while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 60000 ]; do
		if mp_path_down $S 2; then det=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
		sleep 0.1
	done
	mp_path_clear 2
	echo "$det"
}
# p2_moved: path 2 sent 20 requests more than P2_R0.
p2_moved() { [ "$(mp_path_reqs $S 2)" -gt $(( P2_R0 + 20 )) ]; }
# busy_cut: verified IO on both paths, then path 2's peer goes silent:
# prints "<longest IO latency in ms> <fio rc> <IO on path 2 before the cut: yes|no>".
busy_cut() {
	both_up >/dev/null 2>&1 || echo "# a path not connected before the busy cut" >&2
	mp_path_delay 2 0
	fio --name=h --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k \
		--iodepth=16 --numjobs=2 --size=8M --offset_increment=8M --time_based --runtime=12 \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		--group_reporting --output-format=json > /tmp/h-fio.json 2>/tmp/h-fio.err & local fpid=$!
	# The cut must find requests in flight on path 2.
	P2_R0=$(mp_path_reqs $S 2)
	local moved=yes
	wait_for 60 p2_moved || { moved=no; echo "# no IO over path 2 within 60 s" >&2; }
	mp_path_netem_change 2 loss 100%
	wait $fpid; local rc=$?
	mp_path_clear 2
	local max
	max=$(python3 -c 'import json, sys
t = open(sys.argv[1]).read()
j = json.JSONDecoder().raw_decode(t[t.index("{"):])[0]["jobs"][0]
print(max(j[d]["lat_ns"]["max"] for d in ("read", "write")) // 1000000)' /tmp/h-fio.json 2>/tmp/h-py.err || echo -1)
	echo "$max $rc $moved"
}
mark=$(kmsg_mark)
det=$(idle_cut)
bound=$(( (HB_MISS + 2) * HB_MS ))
hb_log=$(dmesg_since "$mark" 'HB missed max reached' && echo yes || echo no)
# The bound is (misses + 2) periods; TCG delays timers and works, hence 3 s more.
tap_check "idle path 2 gone silent: the heartbeat finds it in ${det} ms at ${HB_MS} ms x ${HB_MISS} (bound ${bound} ms + 3000), HB missed max logged: $hb_log" \
	sh -c "[ '$det' != none ] && [ $det -le $(( bound + 3000 )) ] && [ $hb_log = yes ]"
read -r stall rc moved <<< "$(busy_cut)"
both_up >/dev/null 2>&1
p2=$(mp_path_state $S 2)
tap_check "busy path 2 gone silent (IO on it at the cut: $moved): longest IO stall ${stall} ms (under 8000), fio verify rc $rc, path 2 back ($p2)" \
	sh -c "[ '$moved' = yes ] && [ $rc -eq 0 ] && [ $stall -ge 0 ] && [ $stall -lt 8000 ] && [ '$p2' = connected ] || { cat /tmp/h-py.err; false; }"
if [ "$RTRS_TIER" = quick ]; then
	tap_skip "the idle cut at C's heartbeat values (5000 ms x 5)" "full tier"
else
	timeout 60 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S"
	unload_modules rnbd_client rtrs_client_rs
	load_rnbd_rs
	dev=$(mp_map_two $S)
	det0=$(idle_cut)
	read -r stall0 rc0 moved0 <<< "$(busy_cut)"
	diag "silent peer, other path up: idle path found in ${det} ms and busy path's longest IO stall ${stall} ms at ${HB_MS} ms x ${HB_MISS};" \
		"found in ${det0} ms, stall ${stall0} ms at 5000 ms x 5"
	tap_check "at C's heartbeat values: idle path found in ${det0} ms (35000 ms bound + 3000), busy path stall ${stall0} ms (IO on it at the cut: $moved0), fio rc $rc0" \
		sh -c "[ '$det0' != none ] && [ $det0 -le 38000 ] && [ '$moved0' = yes ] && [ $rc0 -eq 0 ]"
fi

timeout 60 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S"
unload_modules rnbd_client rtrs_client_rs
stop_server
mp_teardown
tap_done
