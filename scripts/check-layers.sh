#!/bin/bash
# The module's files import downward only. The crate root (rtrs_clt_rs.rs)
# lists its layers in order ("//! - `name`: ..."): a file, a folder under
# rtrs_clt/ (a folder is one layer, e.g. con/), or sysfs/. A folder whose
# modules are layers of their own lists them under its entry, indented
# ("//!   - `name`: ...", as ffi/ does).
#
# A file may use `crate::x` only for an x listed before its own layer, or
# its own; in a folder with a list, `crate::f::y` only for a y listed
# before its own module in that folder (and a sibling is named so, not
# through `super::`). Prints each upward import and exits 1 if there is one.
set -u
cd "$(dirname "$0")/.." || exit 2
root=rtrs_clt/rtrs_clt_rs.rs
declare -A rank sub_rank has_subs
n=0 m=0 parent=""
while IFS= read -r line; do
	if [[ $line =~ ^//!\ -\ \`([a-z_]+)\` ]]; then
		parent=${BASH_REMATCH[1]}; rank[$parent]=$n; n=$((n + 1))
	elif [[ $line =~ ^//!\ \ \ -\ \`([a-z_]+)\` ]] && [ -n "$parent" ]; then
		has_subs[$parent]=1
		sub_rank[$parent/${BASH_REMATCH[1]}]=$m; m=$((m + 1))
	fi
done < "$root"
[ $n -gt 5 ] || { echo "check-layers: no module list in $root" >&2; exit 2; }

bad=0
while IFS= read -r f; do
	[ "$f" = "$root" ] && continue
	# The layer: the file's module or folder under rtrs_clt/; in a folder
	# with a list, the module within it too (f/y.rs, f/y/...; f/mod.rs has none).
	case $f in
	sysfs/*) mod=sysfs rest="" ;;
	rtrs_clt/*/*) rest=${f#rtrs_clt/}; mod=${rest%%/*}; rest=${rest#*/} ;;
	*) mod=$(basename "$f" .rs) rest="" ;;
	esac
	[ -n "${rank[$mod]:-}" ] || { echo "$f: module '$mod' is not in the list of $root"; bad=1; continue; }
	sub=""
	if [ -n "${has_subs[$mod]:-}" ] && [ -n "$rest" ] && [ "$rest" != mod.rs ]; then
		sub=${rest%%/*}; sub=${sub%.rs}
		[ -n "${sub_rank[$mod/$sub]:-}" ] ||
			{ echo "$f: module '$mod::$sub' is not in the list of $root"; bad=1; continue; }
		# A sibling through `super::` would escape the check.
		if [ "$rest" = "$sub.rs" ] && grep -q 'super::' "$f"; then
			echo "$f: names a sibling through 'super::'; use 'crate::$mod::...'"; bad=1
		fi
	fi
	for dep in $(grep -o 'crate::[a-z_]*\(::[a-z_]*\)\?' "$f" | sed 's/crate:://' | sort -u); do
		top=${dep%%::*}
		if [ -z "${rank[$top]:-}" ]; then
			echo "$f: imports '$top', which is not in the list of $root"; bad=1
		elif [ "$top" != "$mod" ]; then
			[ "${rank[$top]}" -lt "${rank[$mod]}" ] || { echo "$f: '$mod' imports '$top', a layer above it"; bad=1; }
		elif [ -n "$sub" ] && [ "$dep" != "$top" ]; then
			dsub=${dep#*::}
			[ "$dsub" = "$sub" ] && continue
			if [ -z "${sub_rank[$mod/$dsub]:-}" ]; then
				echo "$f: imports '$mod::$dsub', which is not in the list of $root"; bad=1
			elif [ "${sub_rank[$mod/$dsub]}" -ge "${sub_rank[$mod/$sub]}" ]; then
				echo "$f: '$mod::$sub' imports '$mod::$dsub', a layer above it"; bad=1
			fi
		fi
	done
done < <(find rtrs_clt sysfs -name '*.rs' | sort)
exit $bad
