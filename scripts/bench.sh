#!/bin/bash
# make bench: the C client against this module through rnbd, in one VM boot
# of the perf kernel (FLAVOUR=perf: no KASAN, lockdep, kmemleak), and the
# report (scripts/bench-report.py): tables, JSON and a plot.
#
#   scripts/bench.sh                      the whole benchmark (about 2-3 h under TCG), then
#                                         the insn section in a boot of its own (BENCH_INSN=0: not)
#   BENCH=quick scripts/bench.sh          a short version, for development
#   BENCH_SECTIONS="matrix cpu" ...       only some sections (see bench-vm.sh)
#   BENCH_SECTIONS=profile ...            where the CPU goes per IO (perf), into profile.md
#   PROF_SECS=<s> PROF_HZ=<hz> ...        the profile's window per run (10 s) and rate (997 Hz)
#   PROF_INV=Y ...                        the profile under one server mode only (both: Y N)
#   BENCH_SECTIONS=insn ...               exact instructions per IO of each client (a TCG plugin,
#                                         in a VM boot of its own), into insn.md; INSN_CELLS,
#                                         INSN_SECS, PROF_INV and ROUNDS choose the runs
#   BENCH_SECTIONS=rnbd-rs ...            the Rust stack (rnbd-client-rs on this module) against
#                                         C's rnbd-client on this module and on C's rtrs-client
#   BENCH_DIR=<dir>                       where the results go (default bench-out/<date>)
#   BENCH_RS2_REF=<commit> ...            that commit's module as a third client (rs2)
#   BENCH_RNBD_RS2_REF=<commit> ...       that commit's rnbd-client-rs in the rnbd-rs-few
#                                         section (stack rsrs2)
#
# The module is built for the perf kernel in a copy of the checkout under
# the kernel cache, so the checkout's own build (for the test kernel) stays.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
export FLAVOUR=${FLAVOUR:-perf}
KDIR=$(scripts/build-kernel.sh | tail -n 1)
. scripts/kernel-env.sh
BUILD=$KCACHE_DIR/bench-module
rm -rf "$BUILD"; mkdir -p "$BUILD"
git ls-files -z | xargs -0 cp --parents -t "$BUILD"
scripts/source-version.sh . > "$BUILD/.source-version"
make -s -C "$BUILD" KDIR="$KDIR" modules
# rnbd-client-rs for the same kernel, when its section is named (empty: the
# section says it is not built).
RNBD_RS_KO=
case " ${BENCH_SECTIONS:-} " in
*" rnbd-rs "* | *" rnbd_rs "* | *" rnbd-rs-few "*)
	if make -s -C "$BUILD/rnbd_clt" KDIR="$KDIR" modules; then
		RNBD_RS_KO=$BUILD/rnbd_clt/rnbd-client-rs.ko
	else
		echo "bench: rnbd_clt does not build; the rnbd-rs section is skipped" >&2
	fi ;;
esac
# BENCH_RS2_REF=<commit>: that commit's module too, as client "rs2" (the
# profile section compares it with this checkout's in the same boot).
RS2_KO=
if [ -n "${BENCH_RS2_REF:-}" ]; then
	BUILD2=$KCACHE_DIR/bench-module2
	rm -rf "$BUILD2"; mkdir -p "$BUILD2"
	git archive "$BENCH_RS2_REF" | tar -x -C "$BUILD2"
	git rev-parse --short "$BENCH_RS2_REF" > "$BUILD2/.source-version"
	make -s -C "$BUILD2" KDIR="$KDIR" modules
	RS2_KO=$BUILD2/rtrs-client-rs.ko
fi
# BENCH_RNBD_RS2_REF=<commit>: that commit's rnbd-client-rs too, as stack
# "rsrs2" of the rnbd-rs-few section (a before/after in one boot).
RNBD_RS2_KO='' RNBD_RS2_REF=''
if [ -n "${BENCH_RNBD_RS2_REF:-}" ]; then
	BUILD3=$KCACHE_DIR/bench-rnbd2
	rm -rf "$BUILD3"; mkdir -p "$BUILD3"
	git archive "$BENCH_RNBD_RS2_REF" | tar -x -C "$BUILD3"
	cp "$BUILD/Module.symvers" "$BUILD3/"
	make -s -C "$BUILD3/rnbd_clt" KDIR="$KDIR" modules
	RNBD_RS2_KO=$BUILD3/rnbd_clt/rnbd-client-rs.ko
	RNBD_RS2_REF=$(git rev-parse --short "$BENCH_RNBD_RS2_REF")
fi
OUTDIR=${BENCH_DIR:-$REPO/bench-out/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR"
echo "bench: results in $OUTDIR"
# The policies' selection cost by path count, on the host, before the VM
# takes the CPUs (rtrs_core/examples/select_cost.rs).
(cd rtrs_core && cargo run -q --release --example select_cost) > "$OUTDIR/select_cost.txt" 2>&1 || true
# Min-inflight's flat picks against its scan, on one and two threads
# (select_tree: a lock-free tournament tree; select_lock: an exact index
# under a session lock); why the module keeps the scan.
(cd rtrs_core && for ex in select_tree select_lock; do
	cargo run -q --release --example "$ex" || exit
done) > "$OUTDIR/select_flat.txt" 2>&1 || true
# The insn section runs in a boot of its own, under the counting plugin
# (which slows TCG down); the others in one boot without it.
SECTIONS_MAIN='' WANT_INSN=0
if [ -z "${BENCH_SECTIONS:-}" ]; then
	# The default: every section of bench-vm.sh's default list, and the
	# client modules' own instructions per IO (insn), which results.md
	# reports beside C's.
	RUN_MAIN=1
	[ "${BENCH_INSN:-1}" = 0 ] || WANT_INSN=1
else
	RUN_MAIN=0
	for s in $BENCH_SECTIONS; do
		if [ "$s" = insn ]; then WANT_INSN=1; else SECTIONS_MAIN+="${SECTIONS_MAIN:+ }$s"; RUN_MAIN=1; fi
	done
fi
host_meta() {
	{
		echo "host $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores, QEMU TCG (no KVM)"
		echo "date $(date -u +%Y-%m-%d)"
		echo "commit $(scripts/source-version.sh .)"
	} >> "$1/meta.txt"
}
vm_cmd() {
	echo "BENCH=${BENCH:-full} BENCH_SECTIONS='$1' ROUNDS=${ROUNDS:-} MATRIX_TWO=${MATRIX_TWO:-1} RUNTIME=${RUNTIME:-} PROF_CELLS='${PROF_CELLS:-}' PROF_SECS='${PROF_SECS:-}' PROF_HZ='${PROF_HZ:-}' PROF_INV='${PROF_INV:-}' \
	 INSN_CELLS='${INSN_CELLS:-}' INSN_SECS='${INSN_SECS:-}' INSN_MARK='${INSN_MARK:-}' \
	 RS_KO=$BUILD/rtrs-client-rs.ko RS2_KO=$RS2_KO RNBD_RS_KO='$RNBD_RS_KO' RNBD_RS2_KO='$RNBD_RS2_KO' RNBD_RS2_REF='$RNBD_RS2_REF' BENCH_OUT=/run/vm-out/bench bash $REPO/scripts/bench-vm.sh"
}
rc=0
if [ $RUN_MAIN = 1 ]; then
	VM_OUT=$OUTDIR/vm VM_MEM=${VM_MEM:-4G} VM_TIMEOUT=${VM_TIMEOUT:-21600} scripts/vm-run.sh \
		"$(vm_cmd "$SECTIONS_MAIN")" || rc=$?
	host_meta "$OUTDIR/vm/bench"
	python3 scripts/bench-report.py "$OUTDIR/vm/bench" "$OUTDIR"
	if grep -q '	profile	' "$OUTDIR/vm/bench/runs.tsv" 2>/dev/null; then
		python3 scripts/bench-profile.py "$OUTDIR/vm/bench" "$OUTDIR/profile.md" > /dev/null
		echo "bench: profile $OUTDIR/profile.md"
	fi
fi
if [ $WANT_INSN = 1 ]; then
	# The plugin (no QEMU header needed: it declares the API it uses) and the
	# guest's trigger, under the kernel cache, which the guest sees.
	gcc -O2 -Wall -shared -fPIC -o "$BUILD/qemu-insn-count.so" scripts/qemu-insn-count.c -lpthread
	gcc -O2 -Wall -static -o "$BUILD/insn-mark" scripts/insn-mark.c
	INSN_OUT=$OUTDIR/vm-insn
	mkdir -p "$INSN_OUT/bench"
	rm -f "$INSN_OUT/bench/insn.dump" "$INSN_OUT/bench/insn.dump.gz"
	irc=0
	INSN_MARK=$BUILD/insn-mark VM_OUT=$INSN_OUT VM_MEM=${VM_MEM:-4G} VM_TIMEOUT=${VM_TIMEOUT:-21600} \
		VM_QEMU_ARGS="-plugin $BUILD/qemu-insn-count.so,out=$INSN_OUT/bench/insn.dump" \
		scripts/vm-run.sh "$(INSN_MARK=$BUILD/insn-mark vm_cmd insn)" || irc=$?
	[ $rc = 0 ] && rc=$irc
	host_meta "$INSN_OUT/bench"
	python3 scripts/bench-insn.py "$INSN_OUT/bench" "$OUTDIR/insn.md" || { [ $rc != 0 ] || rc=1; }
	gzip -f "$INSN_OUT/bench/insn.dump" 2>/dev/null || true
	echo "bench: instructions per IO $OUTDIR/insn.md"
	# results.md from this boot when it is the only one (bench-report.py adds
	# insn.md's summary to results.md).
	if [ $RUN_MAIN = 0 ]; then
		python3 scripts/bench-report.py "$INSN_OUT/bench" "$OUTDIR" > /dev/null
	else
		python3 scripts/bench-report.py "$OUTDIR/vm/bench" "$OUTDIR" > /dev/null
	fi
fi
echo "bench: VM status $rc; report $OUTDIR/results.md"
exit $rc
