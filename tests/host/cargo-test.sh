#!/bin/bash
# Host `cargo test` of rtrs_core, one TAP point per Rust test.
. "$(dirname "$0")/../lib.sh"
cd "$RTRS_REPO" || exit 1
export PATH="$HOME/.cargo/bin:$PATH"
out=$(cargo test --workspace --color never 2>&1); rc=$?
points=$(printf '%s\n' "$out" | grep -E '^test .* \.\.\. (ok|FAILED|ignored)$')
n=$(printf '%s\n' "$points" | grep -c .)
tap_plan $((n + 1))
while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=${line#test }; name=${name% ... *}
	case "$line" in
	*"... ok") tap_ok "$name" ;;
	*"... ignored") tap_skip "$name" "ignored" ;;
	*) tap_not_ok "$name" ;;
	esac
done <<< "$points"
if [ $rc -eq 0 ]; then tap_ok "cargo test exit status"; else tap_not_ok "cargo test exit status"; diag "$(printf '%s\n' "$out" | tail -n 30)"; fi
tap_done
