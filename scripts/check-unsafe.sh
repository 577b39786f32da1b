#!/bin/bash
# Counts the `unsafe` of the module (rtrs_clt/ and sysfs/), per file: its
# `unsafe {` blocks and its `unsafe impl`s (Send, Sync, and the unsafe
# traits), in total and outside the FFI layer, and exits 1 if a count is
# above its limit, so that none can creep back. Every occurrence counts (two
# on one line are two). The last line sums them up with their limits.
#
# The FFI layer, where `unsafe` is to live, is the folder rtrs_clt/ffi/ (the
# FFI wrappers and ownership types; any file in it, new ones too). Every
# other file counts as outside: the connection, path, session, IO code, the
# statistics, any new file, and the entry points that C calls with raw
# pointers (api.rs: 8 blocks, sysfs/attrs.rs: 5, each turning C's pointers
# into references once).
set -u
cd "$(dirname "$0")/.." || exit 2
# The figures as they are (no headroom): one more block or impl fails the
# check; lower a limit when one goes.
# 119: the two %gs-relative loads of ffi/misc.rs (the CPU id and per-CPU
# offset read inline, as C's this_cpu_read) came in 2026-12-05.
# 123 (2026-12-06, CPU per IO): ib_post_send/ib_post_recv through the
# device's ops (ffi/verbs/qp.rs, 2) and the unlocked per-CPU add of the
# statistics (ffi/misc.rs and ffi/percpu.rs, 2).
MAX_TOTAL=123
MAX_OUTSIDE=21
MAX_IMPL_TOTAL=51
MAX_IMPL_OUTSIDE=2
ffi_dir=rtrs_clt/ffi/
total=0 outside=0 impls=0 impls_outside=0
printf '%-34s %6s %6s\n' file blocks impls
while IFS= read -r f; do
	n=$(grep -o 'unsafe {' "$f" | wc -l)
	i=$(grep -o 'unsafe impl\b' "$f" | wc -l)
	total=$((total + n)) impls=$((impls + i))
	if [[ $f == "$ffi_dir"* ]]; then
		where=""
	else
		outside=$((outside + n)) impls_outside=$((impls_outside + i)) where=" (outside)"
	fi
	[ $((n + i)) -gt 0 ] && printf '%-34s %6d %6d%s\n' "$f" "$n" "$i" "$where"
done < <(find rtrs_clt sysfs -name '*.rs' | sort)
bad=0
[ "$total" -le "$MAX_TOTAL" ] || { echo "check-unsafe: $total unsafe blocks, more than $MAX_TOTAL"; bad=1; }
[ "$outside" -le "$MAX_OUTSIDE" ] ||
	{ echo "check-unsafe: $outside unsafe blocks outside the FFI layer, more than $MAX_OUTSIDE"; bad=1; }
[ "$impls" -le "$MAX_IMPL_TOTAL" ] || { echo "check-unsafe: $impls unsafe impls, more than $MAX_IMPL_TOTAL"; bad=1; }
[ "$impls_outside" -le "$MAX_IMPL_OUTSIDE" ] ||
	{ echo "check-unsafe: $impls_outside unsafe impls outside the FFI layer, more than $MAX_IMPL_OUTSIDE"; bad=1; }
printf 'unsafe blocks: %d (at most %d), %d outside the FFI layer (at most %d); unsafe impls: %d (at most %d), %d outside (at most %d)\n' \
	"$total" "$MAX_TOTAL" "$outside" "$MAX_OUTSIDE" "$impls" "$MAX_IMPL_TOTAL" "$impls_outside" "$MAX_IMPL_OUTSIDE"
exit $bad
