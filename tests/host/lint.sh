#!/bin/bash
# Lint gates: rustfmt over all Rust (the kernel's settings, rustfmt.toml),
# clippy with -D warnings over rtrs_core and its host tests, the module built
# with the kernel's CLIPPY=1 without a single warning (and the Rust API's
# example consumer, tests/consumer-rs, and rnbd_clt on it), and shellcheck
# (warnings and errors) over scripts/ and tests/, the module's layering
# (scripts/check-layers.sh: each file imports only from layers below it), and
# the count of its `unsafe` blocks and impls (scripts/check-unsafe.sh, whose
# limits the check's name quotes: in all and outside the FFI layer,
# rtrs_clt/ffi/; it prints them per file).
#
# The module's clippy build runs in a scratch copy of the sources, so the
# tree's own objects (what the VM tests load) stay rustc-built. It needs the
# cached kernel (make kernel); without it that point is skipped.
. "$(dirname "$0")/../lib.sh"
cd "$RTRS_REPO" || exit 1
export PATH="$HOME/.cargo/bin:$PATH"
tap_plan 6

# Every Rust file but bindgen's output and cargo's target/.
mapfile -t rs < <(find . -name '*.rs' -not -path './target/*' -not -path './.git/*' \
	-not -name rdma_generated.rs | sort)
tap_check "rustfmt --check over ${#rs[@]} Rust files" rustfmt --check --config-path rustfmt.toml "${rs[@]}"

tap_check "cargo clippy -D warnings (rtrs_core and its tests)" \
	cargo clippy --workspace --all-targets --quiet -- -D warnings

# module_clippy: build a scratch copy with CLIPPY=1; any warning fails.
module_clippy() {
	local kdir=$1 tmp out rc
	tmp=$(mktemp -d /tmp/rtrs-clippy.XXXXXX)
	# Tracked files (plus uncommitted edits), not build products.
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp"
	out=$(make -C "$kdir" M="$tmp" LLVM=1 CLIPPY=1 modules 2>&1 &&
		make -C "$tmp/tests/consumer-rs" KDIR="$kdir" CLIPPY=1 modules 2>&1 &&
		make -C "$tmp/rnbd_clt" KDIR="$kdir" CLIPPY=1 modules 2>&1); rc=$?
	rm -rf "$tmp"
	if [ $rc -ne 0 ] || grep -qE '(^|[^a-z_])(warning|error)(\[[A-Za-z0-9_:]+\])?:' <<<"$out"; then
		grep -E -A12 '(warning|error)(\[[A-Za-z0-9_:]+\])?:' <<<"$out" | head -n 80
		[ $rc -ne 0 ] && echo "make exited $rc"
		return 1
	fi
}
. scripts/kernel-env.sh
if [ -f "$KCACHE_DIR/.done" ]; then
	tap_check "the module, the Rust API's example and rnbd-client-rs built with CLIPPY=1: no warnings" module_clippy "$KDIR_BUILT"
else
	tap_skip "the module built with CLIPPY=1" "no cached kernel (make kernel)"
fi

mapfile -t sh < <(find scripts tests -name '*.sh' | sort)
tap_check "shellcheck -S warning over ${#sh[@]} scripts" shellcheck -S warning -x -P SCRIPTDIR "${sh[@]}"
tap_check "module files import downward only (the crate root's layer list)" scripts/check-layers.sh
# The per-file counts go to the log whether or not the limits hold.
unsafe_ok=0
unsafe_counts=$(scripts/check-unsafe.sh 2>&1) || unsafe_ok=1
# The name: the script's own summary (its counts and limits).
unsafe_name=$(grep '^unsafe blocks: ' <<<"$unsafe_counts" || echo "unsafe blocks and impls within scripts/check-unsafe.sh's limits")
if [ $unsafe_ok -eq 0 ]; then tap_ok "$unsafe_name"; else tap_not_ok "$unsafe_name"; fi
diag "$unsafe_counts"
tap_done
