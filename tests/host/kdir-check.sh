#!/bin/bash
# `make KDIR=<tree>` checks the tree first (scripts/check-kdir.sh) and stops
# with one line naming what is missing. Each refusal is tried on a fake
# build tree that lacks exactly one thing; the complete fake tree and the
# cached test kernel's tree pass.
. "$(dirname "$0")/../lib.sh"
cd "$RTRS_REPO" || exit 1
export PATH="$HOME/.cargo/bin:$PATH"
CHECK=scripts/check-kdir.sh
tap_plan 21

T=$(mktemp -d /tmp/rtrs-kdir.XXXXXX)
trap 'rm -rf "$T"' EXIT

# fake_tree <dir>: a build tree with everything the check asks for.
fake_tree() {
	mkdir -p "$1/include/config" "$1/rust"
	echo 6.12.117 > "$1/include/config/kernel.release"
	cat > "$1/.config" <<CFG
CONFIG_CC_IS_CLANG=y
CONFIG_MODULES=y
CONFIG_RUST=y
CONFIG_RUSTC_VERSION_TEXT="$(rustc --version)"
CONFIG_BINDGEN_VERSION_TEXT="$(bindgen --version)"
CONFIG_INFINIBAND=m
CONFIG_INFINIBAND_ADDR_TRANS=y
CONFIG_INFINIBAND_RTRS=m
CONFIG_INFINIBAND_RTRS_CLIENT=m
CONFIG_BLK_DEV_RNBD_CLIENT=m
CFG
	: > "$1/rust/libkernel.rmeta"
	: > "$1/Module.symvers"
}
# variant <name> <sed script | command>: a copy of the complete tree, changed.
variant() {
	local d=$T/$1; shift
	fake_tree "$d"
	(cd "$d" && eval "$*")
	echo "$d"
}
# refuses <description> <tree> <expected text>: exit 1, one line, naming it.
refuses() {
	local desc=$1 tree=$2 want=$3 out rc
	out=$("$CHECK" "$tree" 2>&1); rc=$?
	if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [[ $out == *"$want"* ]]; then
		tap_ok "refuses $desc: $out"
	else
		tap_not_ok "refuses $desc (rc $rc)"; diag "$out"
	fi
}

fake_tree "$T/good"
passes_silently() { local out; out=$("$CHECK" "$@" 2>&1) && [ -z "$out" ]; }
tap_check "a complete (fake) 6.12 tree passes, silently" passes_silently "$T/good"
refuses "a missing directory" "$T/nonexistent" "no such directory"
refuses "a tree without .config" "$(variant noconfig rm .config)" "no .config"
refuses "an unprepared tree" "$(variant noprep rm include/config/kernel.release)" "make modules_prepare"
refuses "a 6.1 kernel (Debian 12's own)" "$(variant v61 'echo 6.1.0-28-amd64 > include/config/kernel.release')" \
	"kernel 6.1.0-28-amd64 is not 6.12"
refuses "a kernel without CONFIG_RUST" "$(variant norust "sed -i '/^CONFIG_RUST=/d' .config")" \
	"CONFIG_RUST is not set"
refuses "a kernel built with GCC" "$(variant gcc "sed -i 's/^CONFIG_CC_IS_CLANG=y/CONFIG_CC_IS_GCC=y/' .config")" \
	"built with GCC"
refuses "a kernel without modules" "$(variant nomod "sed -i '/^CONFIG_MODULES=/d' .config")" "CONFIG_MODULES"
refuses "a kernel without INFINIBAND" "$(variant noib "sed -i '/^CONFIG_INFINIBAND=/d' .config")" \
	"lacks CONFIG_INFINIBAND "
refuses "a kernel without INFINIBAND_ADDR_TRANS" \
	"$(variant noat "sed -i 's/^CONFIG_INFINIBAND_ADDR_TRANS=y/# CONFIG_INFINIBAND_ADDR_TRANS is not set/' .config")" \
	"lacks CONFIG_INFINIBAND_ADDR_TRANS"
refuses "a kernel without the RTRS core" "$(variant nortrs "sed -i '/^CONFIG_INFINIBAND_RTRS=/d' .config")" \
	"lacks CONFIG_INFINIBAND_RTRS"
refuses "a built-in C client" "$(variant rtrsy "sed -i 's/^CONFIG_INFINIBAND_RTRS_CLIENT=m/CONFIG_INFINIBAND_RTRS_CLIENT=y/' .config")" \
	"built in"
refuses "a kernel without rnbd-client" "$(variant nornbd "sed -i '/^CONFIG_BLK_DEV_RNBD_CLIENT=/d' .config")" \
	"lacks CONFIG_BLK_DEV_RNBD_CLIENT=m"
refuses "another rustc than the kernel's" \
	"$(variant rustc "sed -i 's/^CONFIG_RUSTC_VERSION_TEXT=.*/CONFIG_RUSTC_VERSION_TEXT=\"rustc 1.78.0 (9b00956e5 2024-04-29)\"/' .config")" \
	"kernel 6.12.117 was built with 'rustc 1.78.0"
refuses "another bindgen than the kernel's" \
	"$(variant bindgen "sed -i 's/^CONFIG_BINDGEN_VERSION_TEXT=.*/CONFIG_BINDGEN_VERSION_TEXT=\"bindgen 0.65.1\"/' .config")" \
	"built with 'bindgen 0.65.1'"
RUSTC=/nonexistent/rustc refuses "no rustc at all" "$T/good" "no rustc"
refuses "a tree whose Rust crates are not built" "$(variant normeta rm rust/libkernel.rmeta)" "rust/libkernel.rmeta"
refuses "a tree without Module.symvers" "$(variant nosymvers rm Module.symvers)" "no Module.symvers"
# install and uninstall build nothing: they check the tree, not the tools.
tap_check "--no-tools passes a tree built with another rustc" passes_silently --no-tools "$T/rustc"

# Through make, as a user runs it: the one line, and no build attempted.
out=$(make -s KDIR="$T/v61" modules 2>&1); rc=$?
if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c 'rtrs-client-rs: cannot build')" -eq 1 ] &&
	! grep -q BINDGEN <<<"$out"; then
	tap_ok "make KDIR=<6.1 tree> stops before building: $(head -n 1 <<<"$out")"
else
	tap_not_ok "make KDIR=<6.1 tree> stops before building (rc $rc)"; diag "$out"
fi

. scripts/kernel-env.sh
if [ -f "$KCACHE_DIR/.done" ]; then
	tap_check "the cached test kernel's tree passes" "$CHECK" "$KDIR_BUILT"
else
	tap_skip "the cached test kernel's tree passes" "no cached kernel (make kernel)"
fi
tap_done
