#!/bin/bash
# The main job (make demo): set up, build the kernel (cached) and the module,
# then in the VM map an rnbd device over this module with two paths to the
# in-tree C server, flap one path during a verified fio run, print per-path
# stats, unmap (scripts/demo-vm.sh).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
scripts/setup.sh
scripts/build-kernel.sh >/dev/null
make -s modules
exec scripts/vm-run.sh "$REPO/scripts/demo-vm.sh"
