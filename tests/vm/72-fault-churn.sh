#!/bin/bash
# Random allocation faults under path churn and verified IO: rnbd over this
# module maps a session over the two routed paths of tests/lib-mp.sh; fio
# writes and verifies (crc32c) while a loop disconnects and reconnects a
# path, removes and re-adds one and takes a link down and up, with failslab
# and fail_page_alloc failing every k-th allocation made with this module on
# the stack (k drawn anew for each action, 20 to 150, any context).
#
# While the faults last, fio may see IO errors (continue_on_error=io); it
# must see no verify error (no corrupted data), and nothing may hang. Then
# the faults stop: both paths must come back, and a fresh write-and-verify
# pass over the whole region must be clean. The harness's kmemleak scan and
# dmesg check cover leaks and splats.
. "$(dirname "$0")/../lib.sh"
MP_N=2
. "$(dirname "$0")/../lib-mp.sh"
. "$(dirname "$0")/../lib-fault.sh"
PLAN=10
skip_all_unless_api $PLAN
if ! fi_available; then
	skip_all $PLAN "no fault injection in this kernel"
fi
# (The full tier only: mapping two paths and one action under faults take
# four minutes under TCG, more than the quick tier has.)
if [ "$RTRS_TIER" = quick ]; then
	skip_all $PLAN "the full tier only"
fi
tap_plan $PLAN
SECONDS=0
ts() { echo "# [+${SECONDS}s] $*"; }
SESS=fchurn
# (A link down costs a minute until the path is back: the in-tree server
# keeps its side until its own heartbeat gives up; the quick tier has none.)
# The actions run in this order, one after another, while fio runs (a
# disconnect under faults took 50 and 125 s in two runs until both paths
# were back). The first four are each kind once and a disconnect of each
# path; each of them runs even if fio has ended first (then without IO), the
# repeats only while fio runs.
FIO_RT=300
ACTIONS="disc:2 remove_add link disc:1 disc:2 remove_add link disc:2"

bail() {
	diag "bailing out: $1"
	while [ "$TAP_N" -lt $PLAN ]; do tap_not_ok "not run: $1"; done
	for a in $FI_ATTRS; do _fi_w $a/times 0; done
	timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $SESS"
	unload_modules rnbd_client rtrs_client_rs
	stop_server
	mp_teardown
	exit 1
}

mp_setup || { tap_not_ok "two-path topology"; bail "no topology"; }
tap_ok "two-path topology up: $MP_PATHS"
tap_check "server side loads" start_server 65536
# A 1 s heartbeat (3 misses): a path cut while idle shows within 4 s.
tap_check "client stack loads" load_rnbd_rs hb_interval_ms=1000 hb_missed_max=3
dev=$(mp_map_two $SESS)
mp_two_mapped $SESS "$dev" || { tap_not_ok "mapped over both paths"; bail "no device"; }
tap_ok "mapped $dev over both paths"

ts "mapped"
fi_filter_module rtrs_client_rs && fi_setup "$FI_START" "$FI_END" || bail "fault injection setup"
ts "fault injection set up"
FI_TIMES=1000000
# faults_on <k>: both attributes fail every k-th call that passes the filter.
faults_on() {
	local a
	for a in $FI_ATTRS; do
		_fi_w $a/interval "$1"
		_fi_w $a/times $FI_TIMES
	done
}
FAULTS=0
# faults_off: disarmed; FAULTS counts what they injected.
faults_off() {
	local a
	for a in $FI_ATTRS; do
		_read_line "$FI_DIR/$a/times"
		_fi_w $a/times 0
		_fi_w $a/interval 1
		FAULTS=$(( FAULTS + FI_TIMES - _LINE ))
	done
}
pd() { mp_path_dir $SESS "$1"; }
# back <n>: path n reconnected by sysfs writes; with the faults on they
# may fail, so this only tries for a while.
back() { mp_path_reconnect $SESS "$1" "$2" 2>/dev/null; }

act_disc() { echo 1 > "$(pd "$1")/disconnect"; _sleep 1; back "$1" 20; }
act_remove_add() {
	local d; d=$(pd 1)
	echo 1 > "$d/remove_path"
	wait_for 30 _absent "/sys/class/rtrs-server/$SESS/paths/$(mp_path_name 1)"
	echo "$(mp_path_name 1)" > /sys/class/rtrs-client/$SESS/add_path
	wait_for 20 mp_path_connected $SESS 1 || back 1 20
}
act_link() {
	mp_path_link_down 1
	wait_for 30 mp_path_down $SESS 1
	mp_path_link_up 1
	back 1 20
}

# --- phase 1: faults, churn, IO ---------------------------------------------------
fio_out=/tmp/fc-fio.json
timeout -k 10 $(( FIO_RT + 600 )) nice -n 19 fio --name=fc --filename="$dev" --direct=1 --ioengine=libaio \
	--rw=randrw --bs=4k --iodepth=32 --numjobs=2 --size=8M --offset_increment=8M \
	--time_based --runtime="$FIO_RT" --verify=crc32c --verify_backlog=64 --do_verify=1 \
	--verify_fatal=1 --continue_on_error=io --verify_state_save=0 --randrepeat=0 \
	--group_reporting --output-format=json --output="$fio_out" > /tmp/fc-fio.log 2>&1 &
fio_pid=$!
fio_running() { kill -0 $fio_pid 2>/dev/null; }
io0=$(( $(mp_path_reqs $SESS 1) + $(mp_path_reqs $SESS 2) ))
io_flowing() { [ $(( $(mp_path_reqs $SESS 1) + $(mp_path_reqs $SESS 2) )) -gt $(( io0 + 64 )) ]; }
wait_for 60 io_flowing || ts "no IO after 60 s"
done_acts=() hung=0
for a in $ACTIONS; do
	if ! fio_running; then
		[[ " ${done_acts[*]} " == *" $a "* ]] && continue
		ts "fio has ended; $a has not run yet, so it runs without IO"
	fi
	k=$(( 20 + RANDOM % 131 ))
	ts "action $a with every ${k}th allocation failing"
	faults_on $k
	# shellcheck disable=SC2046 # "disc:2" is act_disc 2
	act_${a%%:*} $(tr : ' ' <<<"${a#"${a%%:*}"}")
	faults_off
	ts "  $(mp_path_state $SESS 1) / $(mp_path_state $SESS 2), $FAULTS faults so far"
	done_acts+=("$a")
	# Without faults both paths come back; the next action needs them.
	for n in 1 2; do
		[ -e "$(pd $n)" ] || echo "$(mp_path_name $n)" > /sys/class/rtrs-client/$SESS/add_path
		back $n 90 || { ts "path $n does not come back"; hung=1; }
	done
	[ $hung = 0 ] || break
done
ts "actions done: ${done_acts[*]}; waiting for fio"
wait $fio_pid
fio_rc=$?
ts "fio done (rc $fio_rc)"
if [ ${#done_acts[@]} -gt 0 ] && [ "$FAULTS" -gt 0 ] && [ $hung = 0 ]; then
	tap_ok "${#done_acts[@]} actions under faults (${done_acts[*]}): $FAULTS allocations failed, every path back once they stopped"
else
	tap_not_ok "actions under faults: ${done_acts[*]}, $FAULTS faults, paths back: $(( 1 - hung ))"
fi
# fio may put warnings before the JSON object in its output file.
json=$(sed -n '/^{/,$p' "$fio_out")
err=$(jq '[.jobs[].error] | add' <<<"$json" 2>/dev/null)
verr=$(grep -ciE 'verify.*(fail|bad)|bad magic|crc32c.*(wanted|fail)' /tmp/fc-fio.log)
ioe=$(grep -cE 'error=|io_u error' /tmp/fc-fio.log)
if [ "$fio_rc" -ne 124 ] && [ "$fio_rc" -ne 137 ] && [ "$verr" -eq 0 ]; then
	tap_ok "fio through faults and churn: no verify error, no hang (rc $fio_rc, error ${err:-?}, $ioe IO error lines)"
else
	tap_not_ok "fio through faults and churn: rc $fio_rc, $verr verify errors"
	diag "$(tail -n 30 /tmp/fc-fio.log)"
fi

# --- phase 2: faults off ------------------------------------------------------------
if wait_for 90 mp_path_connected $SESS 1 && wait_for 90 mp_path_connected $SESS 2; then
	tap_ok "both paths connected with the faults off"
else
	tap_not_ok "both paths connected with the faults off"; diag "$(mp_status $SESS)"
fi
out=$(timeout -k 10 600 fio --name=fcv --filename="$dev" --direct=1 --ioengine=libaio --rw=write \
	--bs=64k --iodepth=16 --size=16M --verify=crc32c --do_verify=1 --verify_fatal=1 \
	--verify_state_save=0 --output-format=terse 2>&1)
vrc=$?
if [ $vrc -eq 0 ]; then tap_ok "write and verify pass over 16 MiB: clean"; else tap_not_ok "write and verify pass (rc $vrc)"; diag "$out"; fi

if timeout 150 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $SESS"; then tap_ok "unmap"; else tap_not_ok "unmap"; fi
unload_modules rnbd_client rtrs_client_rs
stop_server
mp_teardown
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
