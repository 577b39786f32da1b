#!/bin/bash
# The test harness (make check): set-up, kernel (cached), module build, host
# tests, then the tests/vm scripts in one VM boot. Prints kselftest-style TAP
# 13 and ends with "N passed, N failed, N skipped" over all test points.
#
# A VM test also fails when its kernel log or kmemleak report shows a splat
# (scripts/dmesg-check.sh), unless the script declares that kind with an
# "# expect-splat: KIND" line, in which case exactly those kinds must appear.
#
# Two tiers (RTRS_TIER): quick (make check, what CI runs: every feature at
# least once, within 35 minutes warm) and full (make check-full, the
# default: every scenario at full length, within about 150 minutes). The VM
# tests read RTRS_TIER. Both tiers run all VM tests in one boot
# (scripts/vm-suite.sh), cut the kernel log at each test's marks for its
# dmesg check, and report the rest of the log and the kmemleak scan at the
# end of the boot as a last point, vm-suite. The full tier also scans
# kmemleak after each test (SUITE_LEAKCHECK_EACH), whose report goes to that
# test's dmesg check, and gives a test up to 3600 s (the quick tier: 1200)
# and the boot 4 hours (the quick tier: 3300 s). Each test's wall time is
# printed on its result line.
#
# Environment: RTRS_TIER=quick|full, TESTS="pattern ..." to select scripts by
# name, TEST_OUT=dir to keep the per-test outputs (default: a fresh /tmp
# dir), NO_SETUP=1 to skip scripts/setup.sh, SUITE_TIMEOUT=<s> for the
# boot, VM_BOOT_EACH=1 to boot one VM per test instead (with a kmemleak
# scan after each; what the full tier did before, some 70 s per test more).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 1
OUT=${TEST_OUT:-$(mktemp -d /tmp/rtrs-tests.XXXXXX)}
mkdir -p "$OUT"
export PATH="$HOME/.cargo/bin:$PATH"
export RTRS_TIER=${RTRS_TIER:-full}
case $RTRS_TIER in quick|full) ;; *) echo "Bail out! RTRS_TIER must be quick or full"; exit 1 ;; esac

t0=$(date +%s)
stage() { echo "# [$(( $(date +%s) - t0 ))s] $*"; }

if [ "${NO_SETUP:-0}" != 1 ]; then
	stage "setup"
	scripts/setup.sh 2>&1 | sed 's/^/# /' || { echo "Bail out! setup failed"; exit 1; }
fi
stage "kernel"
scripts/build-kernel.sh > "$OUT/kernel.out" 2>&1 || { sed 's/^/# /' "$OUT/kernel.out" | tail -40; echo "Bail out! kernel build failed"; exit 1; }
sed 's/^/# /' "$OUT/kernel.out"
scripts/prune-kernel-cache.sh 2>&1 | sed 's/^/# /'
stage "module"
make -s modules > "$OUT/module.out" 2>&1 || { sed 's/^/# /' "$OUT/module.out" | tail -60; echo "Bail out! module build failed"; exit 1; }
grep -E 'warning|error' "$OUT/module.out" | sed 's/^/# /'
stage "test tools"
make -s test-tools > "$OUT/tools.out" 2>&1 || { sed 's/^/# /' "$OUT/tools.out" | tail -40; echo "Bail out! test tools build failed"; exit 1; }
grep -E 'warning|error' "$OUT/tools.out" | sed 's/^/# /'

scripts=(tests/host/*.sh tests/vm/*.sh)
if [ -n "${TESTS:-}" ]; then
	sel=()
	for s in "${scripts[@]}"; do for p in $TESTS; do [[ $s == *$p* ]] && { sel+=("$s"); break; }; done; done
	scripts=("${sel[@]}")
fi

vm_scripts=()
for s in "${scripts[@]}"; do [[ $s == tests/vm/* ]] && vm_scripts+=("$REPO/$s"); done
SUITE=
[ ${#vm_scripts[@]} -gt 0 ] && [ "${VM_BOOT_EACH:-0}" != 1 ] && SUITE=$OUT/vm-suite

# run_suite: the one boot for every VM test. The full tier scans kmemleak
# after each test and gives each more time (70's full sweep takes about 40
# minutes, 78 about 33), and the boot 4 hours.
run_suite() {
	stage "vm-suite: ${#vm_scripts[@]} VM tests in one boot"
	mkdir -p "$SUITE"
	local pre='' vm_to=${SUITE_TIMEOUT:-3300}
	if [ "$RTRS_TIER" = full ]; then
		pre="SUITE_LEAKCHECK_EACH=1 SUITE_TEST_TIMEOUT=3600 " vm_to=${SUITE_TIMEOUT:-14400}
	fi
	# Its progress lines stream through as TAP comments.
	VM_OUT=$SUITE VM_LEAKCHECK=1 VM_TIMEOUT=$vm_to \
		scripts/vm-run.sh "${pre}bash $REPO/scripts/vm-suite.sh /run/vm-out ${vm_scripts[*]}" \
		2> "$SUITE/stderr" | tee "$SUITE/stdout" | sed -u 's/^/# /'
	suite_rc=${PIPESTATUS[0]}
	tr -d '\r' < "$SUITE/console.log" > "$SUITE/console.txt" 2>/dev/null
}

# slice <name> <begin|outside>: a test's part of the suite's kernel log, or
# everything outside the tests' parts.
slice() {
	awk -v n="$1" -v mode="$2" '
		/rtrs-suite: begin / { f = 1; cur = $NF }
		(mode == "outside" && !f) || (mode != "outside" && f && cur == n) { print }
		/rtrs-suite: end / { f = 0 }' "$SUITE/console.txt"
}

passed=0 failed=0 skipped=0 idx=0 times=()
echo "# tier: $RTRS_TIER"
echo "TAP version 13"
plan=${#scripts[@]}
[ -n "${SUITE:-}" ] && plan=$((plan + 1)) # the suite's own point
echo "1..$plan"
for s in "${scripts[@]}"; do
	idx=$((idx + 1))
	name=${s#tests/}; name=${name%.sh}
	dir=$OUT/${name//\//_}
	mkdir -p "$dir"
	stage "$name"
	echo "# selftests: $name"
	ts0=$(date +%s)
	secs=
	case "$s" in
	tests/vm/*)
		if [ -n "$SUITE" ]; then
			[ -d "$SUITE" ] || run_suite
			sn=${name//\//_}
			cp "$SUITE/$sn.tap" "$dir/tap" 2>/dev/null || : > "$dir/tap"
			cp "$SUITE/$sn.stderr" "$dir/stderr" 2>/dev/null
			rc=$(cat "$SUITE/$sn.rc" 2>/dev/null || echo 255)
			secs=$(cat "$SUITE/$sn.secs" 2>/dev/null)
			slice "$sn" begin > "$dir/console.log"
			# The full tier's scan after the test (empty in the quick tier).
			cp "$SUITE/$sn.kmemleak" "$dir/kmemleak" 2>/dev/null || : > "$dir/kmemleak"
			[ -s "$SUITE/$sn.reset" ] && sed 's/^/left behind: /' "$SUITE/$sn.reset" >> "$dir/stderr"
		else
			VM_OUT=$dir VM_LEAKCHECK=1 scripts/vm-run.sh "bash $REPO/$s" > "$dir/tap" 2>"$dir/stderr"; rc=$?
		fi ;;
	*) bash "$s" > "$dir/tap" 2>"$dir/stderr"; rc=$? ;;
	esac
	sed 's/^/# /' "$dir/tap"
	[ -s "$dir/stderr" ] && sed 's/^/# stderr: /' "$dir/stderr" | tail -n 40

	p=$(grep -cE '^ok [0-9]+' "$dir/tap" | head -1)
	sk=$(grep -cE '^ok [0-9]+ .*# SKIP' "$dir/tap")
	f=$(grep -cE '^not ok [0-9]+' "$dir/tap")
	plan=$(grep -m1 -oE '^1\.\.[0-9]+' "$dir/tap" | cut -d. -f3)
	p=$((p - sk)); problems=()
	[ -n "$plan" ] || problems+=("no TAP plan")
	[ -n "$plan" ] && [ $((p + sk + f)) -ne "$plan" ] && problems+=("ran $((p + sk + f)) of $plan planned tests")
	[ $rc -ne 0 ] && [ $f -eq 0 ] && problems+=("exit status $rc")

	# The kernel log check, for VM tests.
	if [[ $s == tests/vm/* ]]; then
		findings=$(scripts/dmesg-check.sh "$dir/console.log" "$dir/kmemleak" 2>&1)
		kinds=$(printf '%s\n' "$findings" | grep -oE '^[A-Z_]+:' | tr -d : | sort -u | tr '\n' ' ')
		expected=$(grep -oE '^# expect-splat: [A-Z_]+' "$s" | awk '{print $3}' | sort -u | tr '\n' ' ')
		if [ "$kinds" = "$expected" ]; then
			[ -n "$expected" ] && echo "# dmesg: planted splats found as expected: $expected"
			echo "# dmesg: clean${expected:+ apart from the planted $expected}"; p=$((p + 1))
		else
			problems+=("kernel log shows [${kinds% }], expected [${expected% }]")
			printf '%s\n' "$findings" | head -n 20 | sed 's/^/# dmesg: /'
			f=$((f + 1))
		fi
	fi
	if [ ${#problems[@]} -gt 0 ]; then
		f=$((f + 1))
		printf '# problem: %s\n' "${problems[@]}"
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + sk))
	secs=${secs:-$(( $(date +%s) - ts0 ))}; times+=("$secs $name")
	if [ $f -eq 0 ]; then echo "ok $idx selftests: $name (${secs} s)"; else echo "not ok $idx selftests: $name (${secs} s)"; fi
done
# The suite's boot itself: the log outside the tests (boot, resets), the
# kmemleak scan at its end (in the full tier: what leaked since the last
# test's scan), and the VM's own status.
if [ -n "$SUITE" ]; then
	idx=$((idx + 1)); f=0
	echo "# selftests: vm-suite (the boot, what tests left behind, kmemleak)"
	slice - outside > "$SUITE/outside.log"
	findings=$(scripts/dmesg-check.sh "$SUITE/outside.log" "$SUITE/kmemleak" 2>&1)
	if [ -n "$(printf '%s\n' "$findings" | grep -E '^[A-Z_]+:')" ]; then
		printf '%s\n' "$findings" | head -n 30 | sed 's/^/# dmesg: /'; f=1
	else
		echo "# dmesg and kmemleak: clean"
	fi
	[ "${suite_rc:-255}" -eq 0 ] || { echo "# problem: the suite VM exited $suite_rc"; tail -n 20 "$SUITE/stderr" | sed 's/^/# stderr: /'; f=1; }
	if [ $f -eq 0 ]; then passed=$((passed + 1)); echo "ok $idx selftests: vm-suite"; else failed=$((failed + 1)); echo "not ok $idx selftests: vm-suite"; fi
fi
stage "done; outputs in $OUT"
echo "# wall time per test, slowest first:"
printf '%s\n' "${times[@]}" | sort -rn | awk '{printf "#   %5d s  %s\n", $1, $2}'
echo "# total: $(( $(date +%s) - t0 )) s (tier $RTRS_TIER)"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
