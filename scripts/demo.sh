#!/bin/bash
# The main job (make demo): set up, build the kernel (cached) and the module,
# then in the VM map an rnbd device over the in-tree C client and C server,
# run a short verified fio, and show this module loaded and seeing the RDMA device.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
scripts/setup.sh
scripts/build-kernel.sh >/dev/null
make -s modules
exec scripts/vm-run.sh "$REPO/scripts/demo-vm.sh"
