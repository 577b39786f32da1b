#!/bin/bash
# Benchmark: 4k randread QD32 through rnbd over the in-tree C client and over
# this module, in the same VM boot, and their ratio. For information only:
# on QEMU TCG with soft-RoCE (and KASAN with FLAVOUR=test) the absolute
# numbers say little; the ratio is what to watch.
#
#   scripts/bench.sh [runtime-seconds]        (FLAVOUR=perf for a kernel without checkers)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
scripts/build-kernel.sh >/dev/null
make -s modules
exec scripts/vm-run.sh "RUNTIME=${1:-20} $REPO/scripts/bench-vm.sh"
