#!/bin/bash
# The dmesg checker must be able to fail: plant a WARN and a KASAN report with
# LKDTM and show that the checker names both. The harness reads the lines
# below and requires exactly these kinds in this test's kernel log.
# expect-splat: WARN
# expect-splat: KASAN
. "$(dirname "$0")/../lib.sh"
tap_plan 4

d=/sys/kernel/debug/provoke-crash/DIRECT
tap_check "lkdtm loads" modprobe lkdtm
log=/tmp/planted.log
# Only this test's part of the log: earlier tests ran in this boot (make
# check, both tiers), and their findings are theirs.
mark=$(kmsg_mark)
dmesg_after() { dmesg | awk -v m="$mark" 'index($0, m) { f = 1; next } f'; }
dmesg_after > /tmp/before.log
tap_check "log is clean before planting" "$RTRS_REPO/scripts/dmesg-check.sh" /tmp/before.log
echo WARNING > $d
echo READ_AFTER_FREE > $d
dmesg_after > $log
out=$("$RTRS_REPO/scripts/dmesg-check.sh" $log); rc=$?
diag "$out"
[ $rc -eq 1 ] && echo "$out" | grep -q '^WARN: ' && tap_ok "checker reports the planted WARN" || tap_not_ok "checker reports the planted WARN"
[ $rc -eq 1 ] && echo "$out" | grep -q '^KASAN: ' && tap_ok "checker reports the planted KASAN use-after-free" || tap_not_ok "checker reports the planted KASAN use-after-free"
tap_done
