#!/bin/bash
# Run one shell command as root in the test VM and exit with its status.
#
#   scripts/vm-run.sh '<command>'        (make vm CMD='<command>' calls this)
#
# The VM boots the cached kernel (FLAVOUR=test by default) under QEMU TCG. Its
# root is the host's / read-only over virtio-9p, as virtme-ng does, so host
# tools and this checkout are at the same paths; /tmp, /run and /var/tmp
# are tmpfs (HOME=/tmp). The kernel's modules come from the kernel cache. rdma_rxe is bound
# to the virtio NIC (10.0.2.15) before the command runs. The command's stdout
# and stderr are printed here; the kernel log goes to a file.
#
# Environment:
#   VM_OUT=dir      keep the run's files there (console.log, rc, kmemleak)
#   VM_CPUS=2 VM_MEM=2G VM_TIMEOUT=3600
#   VM_LEAKCHECK=1  run a kmemleak scan after the command, into $VM_OUT/kmemleak
#   VM_NO_RXE=1     do not load rdma_rxe
#   VM_QEMU_ARGS='...'  more qemu arguments, split on blanks (e.g. a TCG plugin:
#                   -plugin scripts/qemu-insn-count.so,out=<file>)
#   VERBOSE=1       print the kernel log after the run
#   RTRS_TIER=quick|full  how long the tests run (make check: quick; default full)
set -uo pipefail
. "$(dirname "$0")/kernel-env.sh"

CMD=${1:-}
[ -n "$CMD" ] || { echo "usage: $0 '<command>'" >&2; exit 2; }
KERNEL=$KDIR_BUILT/arch/x86/boot/bzImage
if [ ! -f "$KCACHE_DIR/.done" ] || [ ! -f "$KERNEL" ]; then
	echo "vm: no cached $FLAVOUR kernel at $KCACHE_DIR; run 'make kernel' first" >&2
	exit 125
fi
KREL=$(cat "$KDIR_BUILT/include/config/kernel.release")
# The guest mounts the cached modules over /lib/modules, which must exist.
[ -d /lib/modules ] || mkdir -p /lib/modules

if [ -n "${VM_OUT:-}" ]; then
	OUT=$VM_OUT; mkdir -p "$OUT"; rm -f "$OUT"/{rc,cmd,cwd,env,kmemleak,console.log}
	keep=1
else
	OUT=$(mktemp -d /tmp/rtrs-vm.XXXXXX); keep=0
fi
printf '%s\n' "$CMD" > "$OUT/cmd"
pwd > "$OUT/cwd"
{
	echo "PATH=$HOME/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	echo "HOME=/tmp"
	echo "RTRS_REPO=$(cd "$SCRIPTS_DIR/.." && pwd)"
	echo "RTRS_KREL=$KREL"
	echo "RTRS_KMODS=$KMODS_DIR"
	echo "RTRS_LEAKCHECK=${VM_LEAKCHECK:-0}"
	echo "RTRS_NO_RXE=${VM_NO_RXE:-0}"
	echo "RTRS_TIER=${RTRS_TIER:-full}"
	echo "RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}"
	echo "CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}"
} > "$OUT/env"

append="console=ttyS0,115200 root=rootfs rootfstype=9p"
append+=" rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose ro"
append+=" init=$SCRIPTS_DIR/vm-init.sh panic=-1 watchdog_thresh=60 loglevel=7"
append+=" printk.devkmsg=on net.ifnames=0 pci=noacpi kasan_multi_shot"
# Room for the fault sweep's stacks (tests/vm/70), so that dmesg holds a
# whole sweep.
append+=" log_buf_len=16M"
# 4-level paging: with -cpu max (LA57) a timer interrupt that lands while
# identify_cpu() has the CPU's feature bits cleared makes KASAN compute the
# 4-level shadow range for 5-level addresses and report wild accesses at boot
# (seen in 2 of 5 boots once the test kernel had tracing).
append+=" no5lvl"

# shellcheck disable=SC2086 # VM_QEMU_ARGS is a list of arguments
timeout --foreground -k 10 "${VM_TIMEOUT:-3600}" \
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "${VM_CPUS:-2}" -m "${VM_MEM:-2G}" \
	-nodefaults -no-reboot -display none -no-user-config \
	-kernel "$KERNEL" -append "$append" \
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=root,mount_tag=rootfs \
	-fsdev local,id=out,path="$OUT",security_model=none,multidevs=remap \
	-device virtio-9p-pci,fsdev=out,mount_tag=vmout \
	-netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 \
	-device virtio-rng-pci \
	-chardev file,id=con,path="$OUT/console.log" -serial chardev:con \
	-chardev stdio,id=cmdout,signal=off -serial chardev:cmdout \
	${VM_QEMU_ARGS:-} </dev/null
qrc=$?

if [ -s "$OUT/rc" ]; then
	rc=$(cat "$OUT/rc")
else
	echo "vm: the VM ended without a command status (qemu exit $qrc); kernel log tail:" >&2
	tail -n 60 "$OUT/console.log" >&2 2>/dev/null
	rc=255
fi
[ "${VERBOSE:-0}" = 1 ] && cat "$OUT/console.log" >&2
[ $keep = 1 ] || rm -rf "$OUT"
exit "$rc"
