#!/bin/bash
# Counts the `unsafe {` blocks of the module (rtrs_clt/ and sysfs/), per file,
# in total and outside the FFI wrappers and ownership types, and exits 1 if
# either count is above its limit, so that the figure cannot creep back.
# Every occurrence counts (two blocks on one line are two).
#
# The FFI wrappers and ownership types, where `unsafe` is to live, are
# listed below; any other file (the session, path, connection, IO code, and
# any new file) counts as outside.
set -u
cd "$(dirname "$0")/.." || exit 2
MAX_TOTAL=117
MAX_OUTSIDE=25
ffi=(
	rtrs_clt/verbs.rs      # ib_verbs wrappers, QP ring, completion trampolines
	rtrs_clt/cm.rs         # rdma_cm id wrapper and its handler trampoline
	rtrs_clt/dev_event.rs  # a device's ib_event_handler (bindings/rtrs_dev_event.c)
	rtrs_clt/sync.rs       # completion, RCU; RcuBox, RcuArray, OnceBox, SlotCell
	rtrs_clt/misc.rs       # uuid, CPU ids, clock, msleep, random numbers
	rtrs_clt/trace.rs      # trace events (bindings/rtrs_trace.c)
	rtrs_clt/percpu.rs     # per-CPU area
	rtrs_clt/wq.rs         # workqueue and DelayedWork
	rtrs_clt/kobj.rs       # sysfs objects (bindings/rtrs_sysfs.c)
	rtrs_clt/abi.rs        # rtrs.h's types and rnbd's callbacks
	rtrs_clt/addr.rs       # sockaddr_storage
	rtrs_clt/api.rs        # the exported rtrs_clt_* entry points
	rtrs_clt/permits.rs    # the permit pool rnbd gets pointers into
	sysfs/mod.rs           # the class
	sysfs/attrs.rs         # show/store entry points called from C
)
declare -A is_ffi
for f in "${ffi[@]}"; do is_ffi[$f]=1; done
total=0 outside=0
printf '%-22s %5s\n' file blocks
for f in rtrs_clt/*.rs sysfs/*.rs; do
	n=$(grep -o 'unsafe {' "$f" | wc -l)
	total=$((total + n))
	if [ -n "${is_ffi[$f]:-}" ]; then
		where=""
	else
		outside=$((outside + n)); where=" (outside)"
	fi
	[ "$n" -gt 0 ] && printf '%-22s %5d%s\n' "$f" "$n" "$where"
done
printf 'total %d (at most %d), outside the FFI wrappers and ownership types %d (at most %d)\n' \
	"$total" "$MAX_TOTAL" "$outside" "$MAX_OUTSIDE"
bad=0
[ "$total" -le "$MAX_TOTAL" ] || { echo "check-unsafe: $total unsafe blocks, more than $MAX_TOTAL"; bad=1; }
[ "$outside" -le "$MAX_OUTSIDE" ] || { echo "check-unsafe: $outside unsafe blocks outside the FFI wrappers, more than $MAX_OUTSIDE"; bad=1; }
exit $bad
