#!/bin/bash
# DKMS on the host, in scratch trees (nothing under /usr/src, /var/lib/dkms
# or /lib/modules is touched): dkms.conf builds the module for the cached
# kernel, installs it into a copy of that kernel's modules tree where depmod
# makes rnbd-client depend on it, and removes it again; a kernel without
# CONFIG_RUST is skipped (BUILD_EXCLUSIVE), not failed. The build runs with
# a bare environment (no rustup on PATH, HOME elsewhere), as DKMS does from a
# kernel package's hooks: the toolchain comes from the copy's toolchain.mk.
# The VM test 15-install runs `make dkms-install` for real (full tier).
. "$(dirname "$0")/../lib.sh"
cd "$RTRS_REPO" || exit 1
export PATH="$HOME/.cargo/bin:$PATH"
PLAN=6
. scripts/kernel-env.sh
if [ ! -f "$KCACHE_DIR/.done" ] || ! command -v dkms >/dev/null || [ "$(id -u)" != 0 ]; then
	tap_plan $PLAN
	for i in $(seq 1 $PLAN); do tap_skip "dkms $i" "needs root, dkms and the cached kernel (make setup; make kernel)"; done
	exit 0
fi
tap_plan $PLAN
KREL=$(cat "$KDIR_BUILT/include/config/kernel.release")
NAME=rtrs-client-rs
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
T=$(mktemp -d /tmp/rtrs-dkms.XXXXXX)
trap 'rm -rf "$T"' EXIT
D=(--sourcetree "$T/src" --dkmstree "$T/dkms" --installtree "$T/root/lib/modules")
# No module signing: it would make a key in /var/lib/dkms.
export sign_file=/nonexistent/sign-file
# dkms as DKMS's own hooks run it: a bare environment.
bare_dkms() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent sign_file="$sign_file" dkms "$@"; }

# The source as make dkms-install lays it out in /usr/src.
mkdir -p "$T/src/$NAME-$VER" "$T/dkms" "$T/root/lib/modules"
git ls-files -z | xargs -0 cp --parents -t "$T/src/$NAME-$VER"
scripts/source-version.sh . > "$T/src/$NAME-$VER/.source-version"
printf 'RUSTC := %s\nBINDGEN := %s\n' "$(rustc --print sysroot)/bin/rustc" "$(command -v bindgen)" \
	> "$T/src/$NAME-$VER/toolchain.mk"
cp -a "$KMODS_DIR/lib/modules/$KREL" "$T/root/lib/modules/"

out=$(bare_dkms add -m $NAME -v "$VER" "${D[@]}" 2>&1 &&
	bare_dkms build -m $NAME -v "$VER" -k "$KREL" --kernelsourcedir "$KDIR_BUILT" "${D[@]}" 2>&1); rc=$?
ko=$T/dkms/$NAME/$VER/$KREL/$(uname -m)/module/$NAME.ko
if [ $rc -eq 0 ] && [ -f "$ko" ]; then tap_ok "dkms add + build for $KREL, in a bare environment"; else tap_not_ok "dkms build (rc $rc)"; diag "$out"; cat "$T/dkms/$NAME/$VER/build/make.log" 2>/dev/null | tail -n 30 | sed 's/^/# /'; fi
src=$(modinfo -F source "$ko" 2>/dev/null)
tap_check "the DKMS build records its version ($(modinfo -F version "$ko" 2>/dev/null)) and source ($src)" \
	test "$(modinfo -F version "$ko" 2>/dev/null).$src" = "$VER.$(cat "$T/src/$NAME-$VER/.source-version")"

out=$(dkms install -m $NAME -v "$VER" -k "$KREL" --no-depmod "${D[@]}" 2>&1) &&
	depmod -b "$T/root" "$KREL"; rc=$?
dep=$(grep '/rnbd-client.ko:' "$T/root/lib/modules/$KREL/modules.dep")
installed() { [ $rc -eq 0 ] && grep -q "updates/dkms/$NAME.ko" <<<"$dep"; }
tap_check "dkms install: rnbd-client now depends on updates/dkms/$NAME.ko" installed
[ $rc -eq 0 ] || diag "$out"

st=$(dkms status -m $NAME "${D[@]}" 2>&1)
tap_check "dkms status: $st" grep -q "$NAME/$VER, $KREL, .*: installed" <<<"$st"

out=$(dkms remove -m $NAME -v "$VER" --all --no-depmod "${D[@]}" 2>&1); rc=$?
removed() { [ $rc -eq 0 ] && [ -z "$(find "$T/root" -name "$NAME.ko*")" ] && [ -z "$(dkms status -m $NAME "${D[@]}" 2>/dev/null)" ]; }
tap_check "dkms remove takes it out again" removed

# A 6.12 kernel without Rust: DKMS skips it (exit 77) instead of failing.
K2=$T/norust
mkdir -p "$K2/include/config"
echo 6.12.999 > "$K2/include/config/kernel.release"
# Everything dkms.conf asks for but CONFIG_RUST.
grep -v '^CONFIG_RUST=' "$KDIR_BUILT/.config" > "$K2/.config"
mkdir -p "$T/root/lib/modules/6.12.999"
dkms add -m $NAME -v "$VER" "${D[@]}" >/dev/null 2>&1
out=$(dkms build -m $NAME -v "$VER" -k 6.12.999 --kernelsourcedir "$K2" "${D[@]}" 2>&1); rc=$?
tap_check "a 6.12 kernel without CONFIG_RUST is skipped by BUILD_EXCLUSIVE (rc $rc)" test $rc -eq 77
[ $rc -eq 77 ] || diag "$out"
tap_done
