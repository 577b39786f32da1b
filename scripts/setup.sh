#!/bin/bash
# Idempotent machine set-up: Debian packages, rust-src and a pinned bindgen-cli.
# Nothing is assumed to be installed beforehand.
set -euo pipefail

BINDGEN_VERSION=0.73.2

APT_PKGS=(
	linux-source-6.12
	clang lld llvm libclang-dev
	make flex bison bc libelf-dev libssl-dev cpio kmod xz-utils
	qemu-system-x86 iproute2 fio jq util-linux procps
	shellcheck dkms git
	python3
	perftest ibverbs-providers linux-perf
	librdmacm-dev libibverbs-dev gcc
)

missing=()
for p in "${APT_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The VM mounts the cached kernel modules over this directory.
mkdir -p /lib/modules

if ! command -v rustup >/dev/null 2>&1; then
	[ -x "$HOME/.cargo/bin/rustup" ] || { echo "setup: rustup not found" >&2; exit 1; }
	export PATH="$HOME/.cargo/bin:$PATH"
fi
rustup component list --installed 2>/dev/null | grep -q '^rust-src' || rustup component add rust-src

if ! bindgen --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$"; then
	echo "setup: installing bindgen-cli $BINDGEN_VERSION"
	cargo install --locked --quiet --version "$BINDGEN_VERSION" bindgen-cli
fi
echo "setup: ok (rustc $(rustc --version | cut -d' ' -f2), bindgen $(bindgen --version | cut -d' ' -f2), clang $(clang --version | head -1 | grep -o '[0-9]*\.[0-9.]*' | head -1))"
