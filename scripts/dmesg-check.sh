#!/bin/bash
# Scan a kernel log (and optionally a kmemleak report) for splats.
#
#   scripts/dmesg-check.sh <kernel-log> [<kmemleak-report>]
#
# Prints one line per finding, "<KIND>: <log line>", with KIND one of WARN,
# BUG, KASAN, LOCKDEP, KMEMLEAK, HUNG_TASK, SOFTLOCKUP, RCU_STALL, UBSAN, PANIC.
# Exits 1 if anything was found, 0 if the log is clean, 2 on usage errors.
set -u
log=${1:-}
leaks=${2:-}
[ -n "$log" ] && [ -r "$log" ] || { echo "usage: $0 <kernel-log> [<kmemleak-report>]" >&2; exit 2; }

# Strip the printk timestamp, then classify. Order matters: the first matching
# rule names the finding (KASAN and lockdep reports also say BUG/WARNING).
found=$(sed -e 's/^\[ *[0-9.]*\] //' "$log" | awk '
	/BUG: KASAN:|KASAN: .*(out-of-bounds|use-after-free|double-free|invalid-free)/ { print "KASAN: " $0; next }
	/possible circular locking dependency|possible recursive locking|inconsistent lock state|irq lock inversion|suspicious RCU usage|trying to register non-static key|bad unlock balance|held lock freed|lock held when returning to user space|lock held at task exit|DEBUG_LOCKS_WARN_ON/ { print "LOCKDEP: " $0; next }
	/kmemleak: [0-9]+ new suspected memory leaks/ { print "KMEMLEAK: " $0; next }
	/INFO: task .* blocked for more than/ { print "HUNG_TASK: " $0; next }
	/BUG: soft lockup|BUG: workqueue lockup|hard LOCKUP/ { print "SOFTLOCKUP: " $0; next }
	/rcu_(sched|preempt)? ?(self-)?detected( expedited)? stall|rcu: INFO: .* detected stalls/ { print "RCU_STALL: " $0; next }
	/UBSAN:/ { print "UBSAN: " $0; next }
	/Kernel panic|panicked at|general protection fault|Oops: / { print "PANIC: " $0; next }
	/^WARNING: |WARNING: CPU: [0-9]+ PID: / { print "WARN: " $0; next }
	/BUG: |kernel BUG at|list_(add|del) corruption/ { print "BUG: " $0; next }
')
if [ -n "$leaks" ] && [ -s "$leaks" ]; then
	n=$(grep -c '^unreferenced object' "$leaks")
	[ "$n" -gt 0 ] && found+=${found:+$'\n'}"KMEMLEAK: $n unreferenced object(s) in $leaks: $(grep -m1 '^unreferenced object' "$leaks")"
fi
[ -z "$found" ] && exit 0
printf '%s\n' "$found"
exit 1
