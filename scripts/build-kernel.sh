#!/bin/bash
# Build (or reuse) the cached Rust-enabled 6.12 kernel for FLAVOUR=test|perf.
# Prints the build tree (KDIR) on its last line.
set -euo pipefail
. "$(dirname "$0")/kernel-env.sh"

if [ -f "$KCACHE_DIR/.done" ]; then
	echo "kernel: cached $KCACHE_DIR" >&2
	echo "$KDIR_BUILT"
	exit 0
fi
# One build per cache entry at a time: a second run waits for the first
# (and then finds it cached) instead of removing the tree under it.
mkdir -p "$RTRS_CACHE/kernel"
exec 9>"$KCACHE_DIR.lock"
if ! flock -n 9; then
	echo "kernel: another build of $KCACHE_DIR is running; waiting for it" >&2
	flock 9
fi
if [ -f "$KCACHE_DIR/.done" ]; then
	echo "kernel: cached $KCACHE_DIR" >&2
	echo "$KDIR_BUILT"
	exit 0
fi
src=$KCACHE_DIR/src
out=$KCACHE_DIR/build
mk() { make -C "$src" O="$out" LLVM=1 "$@"; }

if [ -f "$KCACHE_DIR/.configured" ]; then
	# An interrupted build of the same key: make carries on where it stopped.
	echo "kernel: resuming the build in $KCACHE_DIR" >&2
else
	[ -f "$KSRC_TARBALL" ] || { echo "kernel: $KSRC_TARBALL missing, run scripts/setup.sh" >&2; exit 1; }
	tmp=$KCACHE_DIR.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	echo "kernel: unpacking linux-source-6.12 $KPKG_VERSION into $tmp" >&2
	tar -xf "$KSRC_TARBALL" -C "$tmp"
	mv "$tmp"/linux-source-6.12 "$tmp/src"
	# The build tree records absolute paths, so build where the cache will live.
	rm -rf "$KCACHE_DIR"
	mv "$tmp" "$KCACHE_DIR"

	mk -s tinyconfig >&2
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${FRAGMENTS[@]}" >/dev/null
	mk -s olddefconfig >&2

	# Every option the fragments ask for must survive olddefconfig.
	bad=0
	for f in "${FRAGMENTS[@]}"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*) grep -qxF "$line" "$out/.config" || { echo "kernel: $line did not stick" >&2; bad=1; } ;;
			"# CONFIG_"*" is not set")
				opt=${line#\# }; opt=${opt%% *}
				! grep -q "^$opt=" "$out/.config" || { echo "kernel: $opt is still set" >&2; bad=1; } ;;
			esac
		done < "$f"
	done
	[ $bad -eq 0 ] || exit 1
	touch "$KCACHE_DIR/.configured"
fi

start=$(date +%s)
mk -j"$(nproc)" >"$KCACHE_DIR/build.log" 2>&1 || { tail -40 "$KCACHE_DIR/build.log" >&2; exit 1; }
mk -s INSTALL_MOD_PATH="$KMODS_DIR" modules_install >&2
echo "kernel: built in $(( $(date +%s) - start ))s" >&2
touch "$KCACHE_DIR/.done"
echo "$KDIR_BUILT"
