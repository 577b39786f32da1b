#!/bin/bash
# The module's files import downward only: the crate root (rtrs_clt_rs.rs)
# lists its modules in layer order ("//! - `name`: ..."), and a file may use
# `crate::x` only for an x listed before its own module. Prints each upward
# import and exits 1 if there is one.
set -u
cd "$(dirname "$0")/.." || exit 2
root=rtrs_clt/rtrs_clt_rs.rs
mapfile -t order < <(sed -n 's/^\/\/! - `\([a-z_]*\)`.*/\1/p' "$root")
[ ${#order[@]} -gt 5 ] || { echo "check-layers: no module list in $root" >&2; exit 2; }
declare -A rank
for i in "${!order[@]}"; do rank[${order[$i]}]=$i; done
bad=0
for f in rtrs_clt/*.rs sysfs/*.rs; do
	case $f in "$root") continue ;; sysfs/*) mod=sysfs ;; *) mod=$(basename "$f" .rs) ;; esac
	[ -n "${rank[$mod]:-}" ] || { echo "$f: module '$mod' is not in the list of $root"; bad=1; continue; }
	for dep in $(grep -o 'crate::[a-z_]*' "$f" | sed 's/crate:://' | sort -u); do
		[ "$dep" = "$mod" ] && continue
		if [ -z "${rank[$dep]:-}" ]; then
			echo "$f: imports '$dep', which is not in the list of $root"; bad=1
		elif [ "${rank[$dep]}" -ge "${rank[$mod]}" ]; then
			echo "$f: '$mod' imports '$dep', a layer above it"; bad=1
		fi
	done
done
exit $bad
