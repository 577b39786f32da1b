#!/bin/bash
# check-kdir.sh [--no-tools] <KDIR>: can rtrs-client-rs be built against
# this kernel build tree? Prints nothing and exits 0 if so; otherwise prints
# one line naming what is missing and exits 1. `make` runs it before every
# build; install and uninstall run it with --no-tools (they build nothing).
#
# Environment: RUSTC and BINDGEN (default: rustc, bindgen from PATH), the
# tools the kernel build will use for this module.
set -uo pipefail

TOOLS=1
[ "${1:-}" = --no-tools ] && { TOOLS=0; shift; }
KDIR=${1:-}
RUSTC=${RUSTC:-rustc}
BINDGEN=${BINDGEN:-bindgen}

refuse() {
	echo "rtrs-client-rs: cannot build against KDIR=$KDIR: $*" >&2
	exit 1
}

[ -n "$KDIR" ] || refuse "no kernel build tree given (make KDIR=<build tree>)"
[ -d "$KDIR" ] || refuse "no such directory (install the kernel's headers or build tree, or pass KDIR=)"
[ -f "$KDIR/.config" ] || refuse "not a configured kernel build tree (no .config)"
[ -f "$KDIR/include/config/kernel.release" ] ||
	refuse "not a prepared kernel build tree (no include/config/kernel.release; run 'make modules_prepare' there)"

krel=$(cat "$KDIR/include/config/kernel.release")
case "$krel" in
	6.12|6.12.*|6.12-*|6.12+*) ;;
	*) refuse "kernel $krel is not 6.12 (this module is for the 6.12 LTS kernel)" ;;
esac

# cfg <OPTION>: the option's value in .config, empty when unset. The options
# are read in one pass (this also runs in the TCG VM, where a process costs
# about 0.3 s).
declare -A CFG=()
while IFS='=' read -r k v; do
	k=${k#CONFIG_}
	[ -n "${CFG[$k]+set}" ] || CFG[$k]=$v
done < <(grep -E '^CONFIG_(RUST|CC_IS_CLANG|MODULES|INFINIBAND|INFINIBAND_ADDR_TRANS|INFINIBAND_RTRS|INFINIBAND_RTRS_CLIENT|BLK_DEV_RNBD_CLIENT|RUSTC_VERSION_TEXT|BINDGEN_VERSION_TEXT)=' "$KDIR/.config" 2>/dev/null)
cfg() { echo "${CFG[$1]:-}"; }
unq() { local v=${1#\"}; echo "${v%\"}"; }

[ "$(cfg RUST)" = y ] || refuse "kernel $krel has no Rust support (CONFIG_RUST is not set)"
[ "$(cfg CC_IS_CLANG)" = y ] ||
	refuse "kernel $krel was built with GCC; this module builds with LLVM=1 and needs a kernel built with clang (CONFIG_CC_IS_CLANG)"
[ "$(cfg MODULES)" = y ] || refuse "kernel $krel has no loadable module support (CONFIG_MODULES is not set)"

# The RDMA stack this module links against: ib_core and rdma_cm.
for opt in INFINIBAND INFINIBAND_ADDR_TRANS; do
	case "$(cfg $opt)" in
		y|m) ;;
		*) refuse "kernel $krel lacks CONFIG_$opt (the RDMA core and rdma_cm this module links against)" ;;
	esac
done

# rnbd-client, this module's user, links against the in-tree RTRS core
# (rtrs_core: address parsing) and against the rtrs_clt_* API, which the C
# client it depends on in Kconfig also exports: both must be modules, or
# rnbd-client is bound to the C client for good.
case "$(cfg INFINIBAND_RTRS)" in
	y|m) ;;
	*) refuse "kernel $krel lacks CONFIG_INFINIBAND_RTRS (the RTRS core that rnbd-client links against; enable CONFIG_BLK_DEV_RNBD_CLIENT=m)" ;;
esac
case "$(cfg INFINIBAND_RTRS_CLIENT)$(cfg BLK_DEV_RNBD_CLIENT)" in
	mm) ;;
	y*|*y) refuse "kernel $krel has the C RTRS client or rnbd-client built in (CONFIG_INFINIBAND_RTRS_CLIENT and CONFIG_BLK_DEV_RNBD_CLIENT must be =m for rnbd-client to run over this module)" ;;
	*) refuse "kernel $krel lacks CONFIG_BLK_DEV_RNBD_CLIENT=m (rnbd-client, this module's user; it needs CONFIG_INFINIBAND_RTRS_CLIENT=m)" ;;
esac

# A tree with CONFIG_RUST but without its built Rust crates cannot build
# external Rust modules.
[ -f "$KDIR/rust/libkernel.rmeta" ] ||
	refuse "kernel $krel has CONFIG_RUST but no built Rust crates (rust/libkernel.rmeta): build the kernel (or 'make modules_prepare') in that tree first"
[ -f "$KDIR/Module.symvers" ] ||
	refuse "kernel $krel has no Module.symvers (build the kernel's modules in that tree first)"
[ $TOOLS = 1 ] || exit 0

# The Rust toolchain must be the one the kernel was built with: the kernel
# crate's metadata only loads into the same rustc.
want=$(unq "$(cfg RUSTC_VERSION_TEXT)")
have=$("$RUSTC" --version 2>/dev/null) || refuse "no rustc ($RUSTC) on PATH; the kernel was built with '$want'"
[ -z "$want" ] || [ "$have" = "$want" ] ||
	refuse "rustc is '$have' but kernel $krel was built with '$want' (set RUSTC= or PATH to that rustc)"
want=$(unq "$(cfg BINDGEN_VERSION_TEXT)")
have=$("$BINDGEN" --version 2>/dev/null) || refuse "no bindgen ($BINDGEN) on PATH; the kernel was built with '$want'"
[ -z "$want" ] || [ "$have" = "$want" ] ||
	refuse "bindgen is '$have' but kernel $krel was built with '$want' (set BINDGEN= or PATH to that bindgen)"
exit 0
