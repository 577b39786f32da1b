# shellcheck shell=bash disable=SC2034  # sets variables for the scripts that source it
# Sourced by the build and VM scripts: where the cached kernel for a flavour lives.
# FLAVOUR=test (base + debug checkers, the default) or perf (base + -O2).
# The cache key is the kernel package version plus a hash of the config
# fragments, the build script and the toolchain versions.
SCRIPTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FLAVOUR=${FLAVOUR:-test}
RTRS_CACHE=${RTRS_CACHE:-/var/cache/rtrs-rs}
case "$FLAVOUR" in
	test) FRAGMENTS=("$SCRIPTS_DIR/kconfig/base.config" "$SCRIPTS_DIR/kconfig/debug.config") ;;
	perf) FRAGMENTS=("$SCRIPTS_DIR/kconfig/base.config" "$SCRIPTS_DIR/kconfig/perf.config") ;;
	*) echo "unknown FLAVOUR=$FLAVOUR" >&2; return 1 ;;
esac
export PATH="$HOME/.cargo/bin:$PATH"
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz
KPKG_VERSION=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo none)
KCONFIG_HASH=$( { cat "${FRAGMENTS[@]}" "$SCRIPTS_DIR/build-kernel.sh"; \
	rustc --version 2>/dev/null; bindgen --version 2>/dev/null; \
	clang --version 2>/dev/null | head -1; } | sha256sum | cut -c1-12)
KCACHE_DIR=$RTRS_CACHE/kernel/$KPKG_VERSION-$FLAVOUR-$KCONFIG_HASH
KDIR_BUILT=$KCACHE_DIR/build
KMODS_DIR=$KCACHE_DIR/mods
