#!/bin/bash
# Every allocation failure of each client operation, one per run.
#
# Operations: module load; an rnbd map (rtrs_clt_open) over one and over two
# paths; add_path; remove_path; reconnect and disconnect through sysfs; an
# rnbd unmap (rtrs_clt_close, from rnbd's work); a reconnect after a link
# loss. Three ways reach the allocations made with the client's code on the
# stack (tests/lib-fault.sh): fail-nth in the task that writes the sysfs
# file ("task"), failslab and fail_page_alloc in any context ("slab",
# "page": work items, CM handlers, completions). Module load runs only in
# its own task; a link loss has no writing task.
#
# A census run without faults (traced) counts an operation's allocations
# and the call path through the client of each. One map allocates ~21000
# times at the server's default queue depth (a buffer per receive of every
# connection; FS_QD lowers it) on ~55 call paths:
# failing every N-th would take days under TCG, so each call path is failed
# once, at its first allocation (the 2nd..n-th buffer of a ring take the
# same path and the same error handling). The task way goes first; the
# others fail the paths it did not reach. A last run per way arms
# allocation total + 1, which must find no fault left.
#
# After each run: the operation returned (a bound on every wait), with
# success or an errno; the sysfs files say what is there (a session and its
# paths exist exactly when the operation left them, a path that reads
# connected carries verified IO); the state is then restored without faults
# and the next run starts. At the end every session unmaps, the modules
# unload, and the harness's kmemleak scan and dmesg check must be clean.
#
# The same sweep over the C client is the oracle, run on demand (make
# check-full sweeps this module only, to fit its time): FS_CLIENTS="rs c"
# prints C's figures beside this module's, e.g.
#   make vm CMD='FS_CLIENTS="rs c" bash tests/vm/70-fault-sweep.sh'
# The quick tier fails the first two new paths of a few operations, in any
# context.
#
# Environment: FS_CLIENTS ("rs"; "rs c" adds the C oracle), FS_OPS,
# FS_MODES ("task slab page"), FS_MAX (cap on runs per way, 0 = none),
# FS_QUICK_PATHS, FS_QD (the server's sess_queue_depth, 32), FS_DEDUP (1: a
# call path failed in an earlier operation is not failed again; 0: each
# operation fails all of its own), FS_ONLY_N (only the runs whose first
# allocation on their call path is one of these numbers, to replay a
# failed run: "N=15" in a diagnostic is FS_ONLY_N=15), FS_C_SKIP (call
# paths of the C client not to fail: each word a substring of a path's
# frames; by default the path-kobject failure that crashes 6.12's C client,
# fixed upstream on 2026-07-14 by "RDMA/rtrs-clt: Fix double free on path
# sysfs failure"; "" fails them all).
. "$(dirname "$0")/../lib.sh"
# Path 2 crosses the routers of lib-mp.sh (MP_N=1), so that it can lose its link.
MP_N=1
. "$(dirname "$0")/../lib-mp.sh"
. "$(dirname "$0")/../lib-fault.sh"

ALL_OPS="load map1 map2 add remove reconnect disconnect unmap linkloss"
FS_OPS=${FS_OPS:-$(by_tier map1 "$ALL_OPS")}
FS_MODES=${FS_MODES:-$(by_tier task "task slab page")}
# The quick tier fails the first few call paths of each census.
FS_QUICK_PATHS=${FS_QUICK_PATHS:-2}
FS_CLIENTS=${FS_CLIENTS:-rs}
FS_MAX=${FS_MAX:-0}
FS_QD=${FS_QD:-32}
FS_DEDUP=${FS_DEDUP:-1}
FS_ONLY_N=${FS_ONLY_N:-}
FS_C_SKIP=${FS_C_SKIP-rtrs_clt_create_path_files}
QUICK=$(by_tier 1 0)
read -r -a _ops <<< "$FS_OPS"; n_ops=${#_ops[@]}
read -r -a _cls <<< "$FS_CLIENTS"; n_cl=${#_cls[@]}
PLAN=$(( 3 + n_cl * (n_ops + 2) ))
skip_all_unless_api $PLAN
if ! fi_available; then
	skip_all $PLAN "no fault injection in this kernel"
fi
tap_plan $PLAN
SECONDS=0
mark() { echo "# [+${SECONDS}s] $*"; }

CLS=/sys/class/rtrs-client
SESS=fs
SD=$CLS/$SESS
P1=ip:$SRV_ADDR
P1DIR=$SD/paths/ip:$SRV_ADDR@ip:$SRV_ADDR
P2=ip:10.10.1.1@ip:10.10.1.2
P2DIR=$SD/paths/$P2

# The server's queue depth sets the client's per-connection rings (a
# receive buffer per slot, the permits, the requests): at its default of
# 512 a map makes ~21000 allocations, at 32 ~1500 on the same call paths,
# and a run takes a fraction of the time (the server's 64 MiB of chunks too).
start_fs_server() {
	unload_modules rnbd_server rtrs_server &&
	modprobe rtrs_server sess_queue_depth="$FS_QD" && start_server 65536
}
tap_check "server side loads (queue depth $FS_QD)" start_fs_server
tap_check "two-path topology (loopback and routed)" mp_setup
modprobe -a ib_core rdma_cm rtrs_core

# --- the client under test ----------------------------------------------------

# use_client <rs|c>: CL_MOD, CL_KO, CL_PARAMS.
use_client() {
	CL=$1
	case $1 in
	rs) CL_MOD=rtrs_client_rs CL_KO=$RS_KO
	    # A silent path shows within 3 s (linkloss).
	    CL_PARAMS="hb_interval_ms=1000 hb_missed_max=3" ;;
	c) CL_MOD=rtrs_client CL_KO=$(modinfo -n rtrs_client) CL_PARAMS= ;;
	esac
}
client_load() {
	# shellcheck disable=SC2086 # zero or more parameters
	module_loaded "$CL_MOD" || insmod "$CL_KO" $CL_PARAMS || return 1
	module_loaded rnbd_client || insmod "$(modinfo -n rnbd_client)"
}
client_unload() { unload_modules rnbd_client "$CL_MOD"; }
# The stack filter on the client's text (the loaded module's), looked up
# again only when the module was loaded anew.
FILTER_TEXT=
filter_client() {
	_read_line "/sys/module/$CL_MOD/sections/.text" || return 1
	[ "$_LINE" = "$FILTER_TEXT" ] && [ "$FI_START" != $FI_MODULES_START ] && return 0
	fi_filter_module "$CL_MOD" && FILTER_TEXT=$_LINE
}

# --- state and checks ---------------------------------------------------------

pstate() { ST=gone; _read_line "$1/state" && ST=$_LINE; }
pconn() { pstate "$1"; [ "$ST" = connected ]; }
absent() { [ ! -e "$1" ]; }
sess_gone() { [ ! -e "$SD" ]; }
DEV=
# dev_of_sess: DEV = the rnbd device over the session, if any (no fork).
dev_of_sess() {
	local b
	DEV=
	for b in /sys/block/rnbd*; do
		_read_line "$b/rnbd/session" && [ "$_LINE" = $SESS ] && { DEV=/dev/${b##*/}; return 0; }
	done
	return 1
}
dd if=/dev/urandom of=/tmp/fs-pat bs=4k count=4 status=none
# io_ok: 16 KiB written and read back with O_DIRECT, compared.
io_ok() {
	dev_of_sess || { echo "no rnbd device"; return 1; }
	timeout 60 dd if=/tmp/fs-pat of="$DEV" bs=4k seek=1024 oflag=direct status=none &&
	timeout 60 dd if="$DEV" bs=4k skip=1024 count=4 iflag=direct status=none | cmp -s - /tmp/fs-pat ||
		{ echo "IO over $DEV failed or did not compare"; return 1; }
}
map() { echo "sessname=$SESS $* device_path=/dev/ram0" > $RNBD_CTL/map_device; }
MARK=
# unmap_wait: unmaps the session and waits until it is closed: its directory
# gone and, for this module, its "session closed" logged.
unmap_wait() {
	local rc=0
	dev_of_sess && { echo normal > "/sys/block/${DEV#/dev/}/rnbd/unmap_device" || rc=1; }
	wait_for 120 sess_gone || { echo "session directory still there"; return 1; }
	if [ "$CL" = rs ] && [ -n "$MARK" ]; then
		wait_for 120 _rs_closed_after "$MARK" $SESS || { echo "no 'session closed' logged"; return 1; }
	fi
	return $rc
}
# reconnect_path <dir>: sysfs reconnect until connected (90 s); RP_ERR is
# the last write's error ("Device or resource busy" on every try: a path
# stuck where no reconnect can take it).
reconnect_path() {
	local end=$(( SECONDS + 90 ))
	RP_ERR=none
	until pconn "$1"; do
		[ $SECONDS -ge $end ] && return 1
		if ! timeout 60 sh -c "echo 1 > '$1/reconnect'" 2> /tmp/fs-rp.err; then
			_read_line /tmp/fs-rp.err; RP_ERR=${_LINE##*: }; RP_ERR=${RP_ERR:-no answer in 60 s}
			_sleep 1
		fi
	done
}
# ensure <paths...>: the session mapped with exactly these path dirs, all
# connected (it is remapped if anything differs).
ensure() {
	local want=("$@") p ok=1 l
	[ -e "$SD" ] || ok=0
	if [ $ok = 1 ]; then
		# (A path that is gone is remapped, not reconnected for 90 s.)
		for p in "${want[@]}"; do
			[ -e "$p" ] && { pconn "$p" || reconnect_path "$p"; } || { ok=0; break; }
		done
		l=("$SD"/paths/*)
		[ ${#l[@]} -eq ${#want[@]} ] || ok=0
	fi
	[ $ok = 1 ] && return 0
	[ -e "$SD" ] && { unmap_wait > /dev/null || return 1; }
	MARK=$(kmsg_mark)
	local args="path=$P1"
	[ ${#want[@]} -gt 1 ] && args+=" path=$P2"
	map $args || return 1
	for p in "${want[@]}"; do wait_for 30 pconn "$p" || return 1; done
}

# --- the operations -----------------------------------------------------------
# op_<name>_pre brings the state the operation starts from (no fault armed);
# op_<name>_run <how> runs it, where how is "nth N" (fail-nth in this shell)
# or "plain" (a fault is armed elsewhere), and sets OUT (ok or the errno
# text) and, for nth, INJ (1 if the fault was injected); it returns once the
# operation is over, asynchronous parts included. op_<name>_check verifies
# and restores, printing what is wrong.

# write_op <how> <file> <value>
write_op() {
	if [ "${1%% *}" = nth ]; then
		fi_nth_write "${1#nth }" "$2" "$3"
		INJ=0; [ "$FI_LEFT" = 0 ] && INJ=1
	else
		# In this shell too: the census counts the writing task by its pid.
		{ echo "$3" > "$2"; } 2> /tmp/fs-write.err
		_read_line /tmp/fs-write.err; FI_ERR=${_LINE##*write error: }
	fi
	OUT=${FI_ERR:-ok}
}

op_load_pre() { client_unload; }
op_load_run() {
	local r
	[ "$1" = plain ] && set -- "nth 0"
	# shellcheck disable=SC2086 # zero or more parameters
	r=$($FAULT_PY nth-insmod "${1#nth }" "$CL_KO" $CL_PARAMS)
	INJ=0; [ "${r#*left=}" = 0 ] && INJ=1
	r=${r%% *}; r=${r#rc=}
	OUT=ok; [ "$r" = 0 ] || OUT="errno $r"
}
op_load_check() {
	if [ "$OUT" = ok ]; then
		[ -d $CLS ] || echo "loaded without $CLS"
		rmmod "$CL_MOD" || echo "rmmod failed"
	else
		! module_loaded "$CL_MOD" || echo "insmod failed ($OUT) but the module is loaded"
		! [ -e $CLS ] || echo "insmod failed ($OUT) but $CLS is there"
	fi
}

op_map1_pre() { client_load && { [ ! -e "$SD" ] || unmap_wait; }; }
op_map_run() {
	MARK=$(kmsg_mark)
	local v="sessname=$SESS $2 device_path=/dev/ram0"
	write_op "$1" $RNBD_CTL/map_device "$v"
	# A failed map's session is closed by rnbd's work after the write.
	[ "$OUT" = ok ] && return
	wait_for 120 sess_gone
	[ "$CL" = rs ] && wait_for 120 _rs_ended_after "$MARK"
}
# _rs_ended_after <mark>: this module logged that the session's open failed
# or that it closed, after the mark.
_rs_ended_after() {
	dmesg | awk -v m="$1" -v a="rtrs_client_rs: $SESS: rtrs_clt_open failed" \
		-v b="rtrs_client_rs: $SESS: session closed" \
		'index($0, m) { f = 1 } f && (index($0, a) || index($0, b)) { found = 1 } END { exit !found }'
}
op_map1_run() { op_map_run "$1" "path=$P1"; }
op_map_check() {
	if [ "$OUT" = ok ]; then
		local p
		for p in "$@"; do pconn "$p" || echo "mapped, but $p is $ST"; done
		io_ok
		unmap_wait
	else
		dev_of_sess && echo "map failed ($OUT) but $DEV is there"
		sess_gone || echo "map failed ($OUT) but $SD is there"
		[ "$CL" = rs ] && ! _rs_ended_after "$MARK" && echo "neither an open failure nor a close logged"
	fi
}
op_map1_check() { op_map_check "$P1DIR"; }
op_map2_pre() { op_map1_pre; }
op_map2_run() { op_map_run "$1" "path=$P1 path=$P2"; }
op_map2_check() { op_map_check "$P1DIR" "$P2DIR"; }

op_add_pre() { client_load && ensure "$P1DIR"; }
op_add_run() {
	write_op "$1" "$SD/add_path" "$P2"
	[ "$OUT" = ok ] || wait_for 60 absent "$P2DIR"
}
op_add_check() {
	pconn "$P1DIR" || echo "path 1 is $ST after add_path"
	if [ "$OUT" = ok ]; then
		pconn "$P2DIR" || echo "add_path succeeded but path 2 is $ST"
	else
		[ -e "$P2DIR" ] && echo "add_path failed ($OUT) but path 2 is there ($(pstate "$P2DIR"; echo "$ST"))"
	fi
	io_ok
	[ -e "$P2DIR" ] && { echo 1 > "$P2DIR/remove_path" || echo "remove_path after add failed"; }
	wait_for 60 absent "$P2DIR" || echo "path 2 not removed"
}

op_remove_pre() { client_load && ensure "$P1DIR" "$P2DIR"; }
op_remove_run() { write_op "$1" "$P2DIR/remove_path" 1; wait_for 60 absent "$P2DIR"; }
op_remove_check() {
	pconn "$P1DIR" || echo "path 1 is $ST after remove_path"
	if [ "$OUT" = ok ]; then
		[ -e "$P2DIR" ] && echo "remove_path succeeded but path 2 is still there"
	fi
	io_ok
}

op_reconnect_pre() { op_remove_pre; }
op_reconnect_run() { write_op "$1" "$P2DIR/reconnect" 1; }
op_reconnect_check() {
	pconn "$P1DIR" || echo "path 1 is $ST after path 2's reconnect"
	if [ "$OUT" = ok ]; then
		pconn "$P2DIR" || echo "reconnect succeeded but path 2 is $ST"
	else
		pstate "$P2DIR"
		[ "$ST" = connected ] && [ "$OUT" != "Device or resource busy" ] &&
			echo "reconnect failed ($OUT) but path 2 reads connected"
	fi
	io_ok
	reconnect_path "$P2DIR" || echo "path 2 does not come back ($ST; reconnect: $RP_ERR)"
}

op_disconnect_pre() { op_remove_pre; }
op_disconnect_run() { write_op "$1" "$P2DIR/disconnect" 1; }
op_disconnect_check() {
	pconn "$P1DIR" || echo "path 1 is $ST after path 2's disconnect"
	if [ "$OUT" = ok ]; then
		pconn "$P2DIR" && echo "disconnect succeeded but path 2 reads connected"
	fi
	io_ok
	reconnect_path "$P2DIR" || echo "path 2 does not come back ($ST; reconnect: $RP_ERR)"
}

op_unmap_pre() { client_load && ensure "$P1DIR" "$P2DIR"; }
op_unmap_run() {
	dev_of_sess || { OUT="nothing mapped"; return; }
	MARK=$(kmsg_mark)
	write_op "$1" "/sys/block/${DEV#/dev/}/rnbd/unmap_device" normal
	# rtrs_clt_close runs in rnbd's work, after the write.
	wait_for 120 sess_gone
	[ "$CL" = rs ] && wait_for 120 _rs_closed_after "$MARK" $SESS
}
op_unmap_check() {
	if [ "$OUT" = ok ]; then
		sess_gone || echo "unmapped but $SD is there"
		dev_of_sess && echo "unmapped but $DEV is there"
		[ "$CL" = rs ] && ! _rs_closed_after "$MARK" $SESS && echo "no 'session closed' logged"
	fi
	return 0
}

op_linkloss_pre() { op_remove_pre; }
op_linkloss_run() {
	OUT=ok
	mp_path_cut 1
	wait_for 60 pdown_p2 || OUT="path 2 still connected 60 s after the cut"
	mp_path_restore 1 || OUT="restore failed"
	# rnbd's reconnect delay is 30 s: a sysfs reconnect brings it now.
	[ "$OUT" = ok ] && { write_op plain "$P2DIR/reconnect" 1; }
}
# Listed and not connected (a vanished path is not "down").
pdown_p2() { [ -e "$P2DIR" ] && ! pconn "$P2DIR"; }
op_linkloss_check() {
	pconn "$P1DIR" || echo "path 1 is $ST after path 2's link loss"
	io_ok
	reconnect_path "$P2DIR" || echo "path 2 does not come back after its link loss ($ST; reconnect: $RP_ERR)"
}

# --- the sweep ----------------------------------------------------------------
# Per operation and way: a census run without faults (traced, see
# lib-fault.sh) counts the allocations the filter passes (FI_TOTAL) and
# their call paths through the client; then one run per call path fails the
# first allocation on it (the 2nd..n-th buffer of a ring take the same path
# and the same error handling), and a last run arms allocation FI_TOTAL + 1,
# which must find no fault left (else the census missed some). Each fault's
# printed stack is matched against the path it was meant for.

declare -A TOTAL=() PATHS=() NEW=() FIRED=() HIT=() SKIPPED=() OUTCOMES=() BAD=() FAILED_PATHS=()

# arm_run <op> <mode> <N>: the operation with allocation N failing; sets
# FIRED_1 (1 if the fault was injected).
arm_run() {
	local op=$1 mode=$2 n=$3
	if [ "$mode" = task ]; then
		"op_${op}_run" "nth $n"
		FIRED_1=$INJ
	else
		fi_arm "$MODE_ATTR" "$n"
		"op_${op}_run" plain
		if fi_settle; then FIRED_1=1; else FIRED_1=0; fi
	fi
}

# slow_teardowns <mark>: this module's teardowns that timed out waiting
# for the disconnect of their connections, after the mark.
slow_teardowns() {
	dmesg | awk -v m="$1" 'index($0, m) { f = 1 } f && /rtrs_client_rs: .*timed out waiting for the disconnect/ { n++ } END { print n + 0 }'
}

# census <op>: the operation traced without faults, into /tmp/fs-census;
# CENSUS_PID is the task that wrote its sysfs file. False if it failed.
census() {
	local op=$1 msg
	CENSUS_BAD=""
	if ! "op_${op}_pre" > /tmp/fs-pre 2>&1; then
		CENSUS_BAD="census: cannot set up ($(head -c 200 /tmp/fs-pre)); "; return 1
	fi
	[ "$op" = load ] || filter_client
	fi_trace_start
	if [ "$op" = load ]; then "op_${op}_run" "nth 0"; else "op_${op}_run" plain; fi
	fi_trace_stop /tmp/fs-census || CENSUS_BAD+="census: the trace lost events; "
	[ "$OUT" = ok ] || CENSUS_BAD+="census: the operation failed without a fault ($OUT); "
	msg=$("op_${op}_check" 2>&1)
	[ -n "$msg" ] && CENSUS_BAD+="census: ${msg//$'\n'/; }; "
	CENSUS_PID=$$
	return 0
}

# skipped_sig <sig>: the call path matches a word of FS_C_SKIP, or its
# call site (its innermost frame) is a frame outside such a path in this
# census: the run counts the allocations through that site, and one more
# than its census (a retry, a log line) could land inside the skipped
# function (the add operation's slab way reached C's double free so, armed on
# rtrs_clt_create_path_from_sysfs's call of it).
skipped_sig() {
	local w
	for w in $FS_C_SKIP; do [[ "$1" == *"$w"* ]] && return 0; done
	[ -n "${SKIP_OUTER[${1%% < *}]:-}" ]
}

# skip_outer_frames: SKIP_OUTER, the frames outside a skipped function in
# this census's call paths (FI_SIGS, before dedup), and "-" if there is one.
skip_outer_frames() {
	local sig w f rest
	SKIP_OUTER=()
	for sig in "${FI_SIGS[@]}"; do
		for w in $FS_C_SKIP; do
			[[ "$sig" == *"$w"* ]] || continue
			SKIP_OUTER[-]=1
			rest=${sig#*"$w"}
			# Past the skipped function's own frame.
			[[ "$rest" == *" < "* ]] || continue
			rest=${rest#* < }
			while :; do
				f=${rest%% < *}
				SKIP_OUTER[$f]=1
				[[ "$rest" == *" < "* ]] || break
				rest=${rest#* < }
			done
		done
	done
}

# sweep <op> <mode>: the runs of one way, from the census.
sweep() {
	local op=$1 mode=$2 key="$CL $1 $2" outs="" t0=$SECONDS i n sig msg m pid="" tag fired=0 hit=0 max kind skipped=0
	BAD[$key]=$CENSUS_BAD
	case $mode in slab) MODE_ATTR=failslab kind=slab ;; page) MODE_ATTR=fail_page_alloc kind=page ;; task) kind=all ;; esac
	tag=$CL_MOD; [ "$op" = load ] && tag='*'
	# (The loading task is python's: load has no other task allocating.)
	[ "$mode" = task ] && [ "$op" != load ] && pid=$CENSUS_PID
	fi_census /tmp/fs-census $kind $pid || { BAD[$key]+="census failed; "; return; }
	TOTAL[$key]=$FI_TOTAL PATHS[$key]=${#FI_NS[@]}
	local -A known=()
	for sig in "${FI_SIGS[@]}"; do known[$sig]=1; done
	local -A SKIP_OUTER=()
	[ "$CL" = c ] && skip_outer_frames
	# A call path whose fault was taken already, by an earlier way of this
	# operation (the task way runs first) or by an earlier operation
	# (FS_DEDUP=1: the same path through the client is the same code and
	# error handling), is not failed again.
	if [ ${#FAILED_PATHS[@]} -gt 0 ]; then
		local ns=() kns=() sites=() sigs=()
		for (( i = 0; i < ${#FI_NS[@]}; i++ )); do
			[ -n "${FAILED_PATHS["$CL ${FI_SIGS[$i]}"]:-}" ] && continue
			ns+=("${FI_NS[$i]}"); kns+=("${FI_SITE_NS[$i]}")
			sites+=("${FI_SITES[$i]}"); sigs+=("${FI_SIGS[$i]}")
		done
		FI_NS=("${ns[@]}") FI_SITE_NS=("${kns[@]}") FI_SITES=("${sites[@]}") FI_SIGS=("${sigs[@]}")
	fi
	NEW[$key]=${#FI_NS[@]}
	max=${#FI_NS[@]}
	[ "$QUICK" = 1 ] && [ "$max" -gt "$FS_QUICK_PATHS" ] && max=$FS_QUICK_PATHS
	[ "$FS_MAX" -gt 0 ] && [ "$max" -gt "$FS_MAX" ] && max=$FS_MAX
	for (( i = 0; i < max; i++ )); do
		n=${FI_NS[$i]} sig=${FI_SIGS[$i]}
		[ -z "$FS_ONLY_N" ] || [[ " $FS_ONLY_N " == *" $n "* ]] || continue
		if [ "$CL" = c ] && skipped_sig "$sig"; then
			skipped=$(( skipped + 1 ))
			mark "$CL $op $mode: N=$n not failed (FS_C_SKIP): $sig"
			continue
		fi
		if ! "op_${op}_pre" > /tmp/fs-pre 2>&1; then
			BAD[$key]+="N=$n: cannot set up ($(head -c 200 /tmp/fs-pre)); "; break
		fi
		[ "$op" = load ] || filter_client
		m=$(kmsg_mark)
		if [ "$op" = load ]; then
			# (The module's init text moves with each load: no site filter.)
			arm_run "$op" "$mode" "$n"
		else
			# Counting only the allocations through the path's call site
			# puts the fault on it, whatever else allocates: other contexts
			# beside the operation, or in the task an allocation that one
			# run makes and the census did not (a log line, a retry).
			fi_filter_site "${FI_SITES[$i]}"
			arm_run "$op" "$mode" "${FI_SITE_NS[$i]}"
			fi_filter "$FI_START" "$FI_END"
		fi
		msg=$("op_${op}_check" 2>&1)
		# One fault delays one teardown at most: a lost disconnect event
		# must not make the path's later teardowns wait their 30 s too.
		if [ "$CL" = rs ] && [ "$(slow_teardowns "$m")" -gt 1 ]; then
			msg+="${msg:+; }$(slow_teardowns "$m") teardowns timed out waiting for the disconnect"
		fi
		[ -n "$msg" ] && BAD[$key]+="N=$n ($OUT): ${msg//$'\n'/; }; "
		if [ "$FIRED_1" != 1 ]; then
			# (A page allocation that refilled a slab in the census may
			# not recur at the same call: the slab has room this time.)
			mark "$CL $op $mode: N=$n took no fault (site allocation ${FI_SITE_NS[$i]}): $sig"
			continue
		fi
		FAILED_PATHS["$CL $sig"]=1
		fired=$(( fired + 1 ))
		outs+="$OUT|"
		# Where it landed (a fault with __GFP_NOWARN prints nothing).
		fi_hits "$m" "$tag" | grep -qxF -- "$sig" && hit=$(( hit + 1 ))
	done
	# Nothing left after the census's last allocation. (Not for C where the
	# census went through a skipped function: that run counts every
	# allocation, and one more than the census could land in it.)
	if [ -n "${SKIP_OUTER[-]:-}" ]; then
		mark "$CL $op $mode: no run after allocation $FI_TOTAL (the census passed FS_C_SKIP)"
	elif "op_${op}_pre" > /tmp/fs-pre 2>&1; then
		[ "$op" = load ] || filter_client
		m=$(kmsg_mark)
		arm_run "$op" "$mode" $(( FI_TOTAL + 1 ))
		# A run may allocate a few times more than the census did (a ring
		# filled further, a work item's timing); a path it never saw is a
		# census that missed allocations.
		# (Load's census paths are the addresses of a module instance that
		# is gone by then, so no printed path matches them: its "seen"
		# column reads 0, and this check cannot tell a known path there.)
		if [ "$FIRED_1" = 1 ]; then
			sig=$(fi_hits "$m" "$tag" | head -1)
			if [ "$op" != load ] && [ -n "$sig" ] && [ -z "${known[$sig]:-}" ] && [ "$sig" != - ]; then
				BAD[$key]+="allocation $(( FI_TOTAL + 1 )) failed on a path the census did not see ($sig); "
			else
				mark "$CL $op $mode: allocation $(( FI_TOTAL + 1 )) failed too, on a known path (${sig:-no stack})"
			fi
		fi
		msg=$("op_${op}_check" 2>&1)
		[ -n "$msg" ] && BAD[$key]+="N=$(( FI_TOTAL + 1 )) ($OUT): ${msg//$'\n'/; }; "
	fi
	FIRED[$key]=$fired HIT[$key]=$hit SKIPPED[$key]=$skipped
	# The outcomes: how many runs succeeded, and each errno's count.
	OUTCOMES[$key]=$(printf '%s' "$outs" | tr '|' '\n' | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%s x%d", (NR>1?", ":""), substr($0,2), c}')
	mark "$CL $op $mode: $FI_TOTAL allocations on ${PATHS[$key]} call paths, ${NEW[$key]} not failed yet; $fired of $max runs took their fault ($hit seen on their path, $skipped skipped) in $(( SECONDS - t0 )) s: ${OUTCOMES[$key]:-none}"
}

# row <client> <op>: per way, allocations/call paths/paths not failed before
# (FAILED_PATHS)/runs that took their fault/faults seen on their path.
row() {
	local m k r=""
	for m in $FS_MODES; do
		k="$1 $2 $m"
		[ -n "${TOTAL[$k]:-}" ] || continue
		r+="${r:+, }$m ${TOTAL[$k]}/${PATHS[$k]}/${NEW[$k]}/${FIRED[$k]}/${HIT[$k]}"
		[ "${SKIPPED[$k]:-0}" = 0 ] || r+=" (${SKIPPED[$k]} skipped)"
	done
	echo "${r:-not swept}"
}

run_client() {
	use_client "$1"
	local op mode key bad tot ran
	client_unload
	client_load || { tap_not_ok "$CL: client loads"; return; }
	tap_ok "$CL: client stack loads"
	for op in $FS_OPS; do
		bad="" tot=0 ran=0
		if [ "$op" = load ]; then
			fi_setup $FI_MODULES_START $FI_MODULES_END || { tap_not_ok "$CL $op: fault setup"; continue; }
		else
			client_load && filter_client && fi_setup "$FI_START" "$FI_END" ||
				{ tap_not_ok "$CL $op: fault setup"; continue; }
		fi
		if [ "$op" = linkloss ] && [ "$CL" = c ]; then
			tap_skip "$CL $op" "C notices a silent path after 30 s"
			continue
		fi
		local t0=$SECONDS
		census "$op"
		mark "$CL $op: census in $(( SECONDS - t0 )) s"
		# Without FS_DEDUP only the ways of one operation share.
		[ "$FS_DEDUP" = 1 ] || FAILED_PATHS=()
		for mode in $FS_MODES; do
			[ "$op" = load ] && [ "$mode" != task ] && continue
			[ "$op" = linkloss ] && [ "$mode" = task ] && continue
			[ "$op" = load ] || filter_client
			sweep "$op" "$mode"
			key="$CL $op $mode"
			tot=$(( tot + ${NEW[$key]:-0} )) ran=$(( ran + ${FIRED[$key]:-0} ))
			bad+=${BAD[$key]:-}
		done
		if [ -z "$bad" ]; then
			tap_ok "$CL $op: $ran faults on $tot call paths, each answered ($(row "$CL" "$op"))"
		else
			tap_not_ok "$CL $op: $tot call paths ($(row "$CL" "$op"))"
			diag "${bad:-no fault point reached}"
		fi
	done
	# The end: everything unmaps and unloads.
	[ -e "$SD" ] && unmap_wait
	tap_check "$CL: every session unmapped, modules unload" client_unload
}

for c in $FS_CLIENTS; do run_client "$c"; done
for a in $FI_ATTRS; do _fi_w $a/times 0; _fi_w $a/probability 0; done

# The table: per operation and way, allocations / call paths / runs that
# took their fault, and the outcomes of those runs.
diag "per way: allocations/call paths/not failed before (this or an earlier operation)/runs that took their fault/seen on their path; the outcomes of those runs:"
for op in $FS_OPS; do
	for c in $FS_CLIENTS; do
		diag "$c $op: $(row "$c" "$op")  [task: ${OUTCOMES[$c $op task]:-} | slab: ${OUTCOMES[$c $op slab]:-} | page: ${OUTCOMES[$c $op page]:-}]"
	done
done

mp_teardown
stop_server
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
