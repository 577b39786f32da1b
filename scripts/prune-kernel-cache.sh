#!/bin/bash
# Remove cached kernels of this flavour other than the current one (each is a
# few GB), and leftovers of interrupted builds. KEEP_OLD_KERNELS=1 keeps them.
set -euo pipefail
. "$(dirname "$0")/kernel-env.sh"
[ "${KEEP_OLD_KERNELS:-0}" = 1 ] && exit 0
[ -f "$KCACHE_DIR/.done" ] || exit 0
for d in "$RTRS_CACHE"/kernel/*-"$FLAVOUR"-*; do
	[ -d "$d" ] || continue
	[ "$d" = "$KCACHE_DIR" ] && continue
	# A symlink may be how a moved entry keeps its recorded paths working.
	[ -L "$d" ] && continue
	# Never prune a build that is still running (build-kernel.sh holds its lock).
	[[ $d == *.tmp ]] && pgrep -f "build-kernel.sh" >/dev/null && continue
	[ -e "$d.lock" ] && ! flock -n "$d.lock" true && continue
	echo "kernel cache: removing old $d" >&2
	rm -rf "$d"
done
