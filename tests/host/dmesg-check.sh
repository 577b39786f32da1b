#!/bin/bash
# The dmesg checker on canned kernel logs: each kind of report is caught and
# named, and a clean log passes.
. "$(dirname "$0")/../lib.sh"
chk=$RTRS_REPO/scripts/dmesg-check.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# expect <kind|clean> <description> <log text>
expect() {
	local kind=$1 desc=$2
	printf '%s\n' "$3" > "$tmp/log"
	local out rc
	out=$("$chk" "$tmp/log"); rc=$?
	if [ "$kind" = clean ]; then
		[ $rc -eq 0 ] && [ -z "$out" ] && tap_ok "$desc" || { tap_not_ok "$desc"; diag "$out"; }
	else
		[ $rc -eq 1 ] && echo "$out" | grep -q "^$kind: " && ! echo "$out" | grep -vq "^$kind: " &&
			tap_ok "$desc" || { tap_not_ok "$desc"; diag "rc=$rc" "$out"; }
	fi
}

tap_plan 14
expect clean "clean boot log passes" "[    0.000000] Linux version 6.12.117
[    1.234567] rtrs_client_rs: loaded
[    2.000000] kmemleak: Kernel memory leak detector initialized (mem pool available: 15000)
[    3.000000] rnbd_client L1234: Mapping device /dev/ram0 on session base"
expect WARN "WARN_ON splat" "[   12.1] ------------[ cut here ]------------
[   12.2] WARNING: CPU: 1 PID: 88 at drivers/misc/lkdtm/bugs.c:101 lkdtm_WARNING+0x1d/0x30 [lkdtm]"
expect BUG "BUG splat" "[    5.0] BUG: sleeping function called from invalid context at kernel/locking/mutex.c:585"
expect BUG "kernel BUG at" "[    5.0] kernel BUG at lib/list_debug.c:30!"
expect KASAN "KASAN report" "[    7.0] ==================================================================
[    7.0] BUG: KASAN: slab-use-after-free in lkdtm_SLAB_USE_AFTER_FREE+0x1/0x2 [lkdtm]"
expect LOCKDEP "lockdep circular dependency" "[    9.0] ======================================================
[    9.0] WARNING: possible circular locking dependency detected"
expect LOCKDEP "lockdep suspicious RCU usage" "[    9.0] WARNING: suspicious RCU usage"
expect KMEMLEAK "kmemleak summary line" "[   30.0] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"
expect HUNG_TASK "hung task" "[  250.0] INFO: task kworker/0:1:42 blocked for more than 122 seconds."
expect SOFTLOCKUP "soft lockup" "[  250.0] watchdog: BUG: soft lockup - CPU#0 stuck for 130s! [fio:99]"
expect PANIC "Rust panic" "[   10.0] rust_kernel: panicked at rtrs_clt/rtrs_clt_rs.rs:10:5:"
expect UBSAN "UBSAN report" "[   10.0] UBSAN: array-index-out-of-bounds in drivers/x.c:1:2"

printf 'unreferenced object 0xffff888003e1c000 (size 64):\n  comm "insmod", pid 100\n' > "$tmp/leaks"
: > "$tmp/log"
out=$("$chk" "$tmp/log" "$tmp/leaks"); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q '^KMEMLEAK: 1 unreferenced' && tap_ok "kmemleak report file" || { tap_not_ok "kmemleak report file"; diag "$out"; }
"$chk" /nonexistent >/dev/null 2>&1; [ $? -eq 2 ] && tap_ok "unreadable log is a usage error" || tap_not_ok "unreadable log is a usage error"
tap_done
