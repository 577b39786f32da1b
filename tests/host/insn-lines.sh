#!/bin/bash
# scripts/insn-lines.py on a synthetic insn run: a small C function built
# without and with debug information stands for the module as run and its
# debug build; every instruction executed 100 times in a window of 50 IOs.
# Checks the total, the inlined call sites by source line, the innermost
# lines, and the errors (no such cell, no such symbol, a bad cell).
. "$(dirname "$0")/../lib.sh"
tool=$RTRS_REPO/scripts/insn-lines.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tap_plan 8

mkdir -p "$tmp/rtrs_clt" "$tmp/bench/raw"
cat > "$tmp/rtrs_clt/t.c" <<'EOF'
static inline int twice(int x)
{
	return 2 * x + 1;
}

int work(int a, int b)
{
	int s = twice(a);

	if (b > 3)
		s += twice(b) * a;
	return s;
}
EOF
(cd "$tmp" && gcc -O1 -c -o run.o rtrs_clt/t.c && gcc -O1 -g -c -o dbg.o rtrs_clt/t.c) || {
	diag "gcc failed"; for _ in 1 2 3 4 5 6 7 8; do tap_not_ok "gcc builds the test object"; done; tap_done; }
# The instructions of work() in the object as run.
mapfile -t offs < <(objdump -d --no-show-raw-insn "$tmp/run.o" |
	awk '/<work>:/{f=1; next} /^$/{f=0} f && /^ +[0-9a-f]+:/{sub(":", "", $1); print $1}')
n=${#offs[@]}
printf 'ffffffffa0001000 t work\t[rtrs_client_rs]\n' > "$tmp/bench/raw/insn-kallsyms-1.txt"
printf 'id\tclient\tround\tinv\trw\tbs\tqd\tmodule\tload\tdump\tios\tios_reset\tios_dump\tfio_alive\n' > "$tmp/bench/insn.tsv"
printf 'insn-00001\trs\t1\tinv=N\trandread\t4k\t1\trtrs_client_rs\t1\t1\t50.0\t0 0\t50 50\t1\n' >> "$tmp/bench/insn.tsv"
{
	echo "# qemu-insn-count x86_64"; echo "# reset 1"; echo "# dump 1"
	for o in "${offs[@]}"; do printf '%x 100 0 0\n' $(( 0xffffffffa0001000 + 0x$o )); done
	echo "# end 1 $n"
} > "$tmp/bench/insn.dump"

out=$(python3 "$tool" "$tmp/bench" rs "N randread 4k 1" work "$tmp/run.o" "$tmp/dbg.o" 2>"$tmp/err"); rc=$?
tap_if "exit 0 on a good run" [ $rc -eq 0 ]
[ $rc -eq 0 ] || diag "$(cat "$tmp/err")"
want=$(printf '%.1f' "$(( 2 * n ))")
tap_if "total: $n instructions, 2 per IO each: $want" grep -qF "work: $want instructions per IO (rs, N randread 4k 1, 1 round); unmatched 0.0" <<< "$out"
[ "$n" -gt 5 ] || diag "only $n instructions found in work()"
# Every instruction is work's: the tree's top rows sum to the total.
sum=$(awk '/^## by inlined/{f=1; next} /^## /{f=0} f && /^ +[0-9.]+ work@/{s+=$1} END{printf "%.1f", s}' <<< "$out")
tap_if "the top-level call sites sum to the total ($sum)" [ "$sum" = "$want" ]
[ "$sum" = "$want" ] || diag "$out"
tap_if "twice() shows as inlined into work(), by file and line" grep -qE '^ +[0-9.]+ +twice@t\.c:3$' <<< "$out"
tap_if "the innermost lines name the file under the own directory" grep -qE '^ +[0-9.]+ rtrs_clt/t\.c:3$' <<< "$out"

python3 "$tool" "$tmp/bench" rs "N randread 4k 32" work "$tmp/run.o" "$tmp/dbg.o" > /dev/null 2>"$tmp/err"; rc=$?
tap_if "no run in the cell: exit 1, said" eval '[ $rc -eq 1 ] && grep -q "no run of rs in cell" "$tmp/err"'
python3 "$tool" "$tmp/bench" rs "N randread 4k 1" nosuch "$tmp/run.o" "$tmp/dbg.o" > /dev/null 2>"$tmp/err"; rc=$?
tap_if "no such symbol: exit 1, said" eval '[ $rc -eq 1 ] && grep -q "no text symbol containing" "$tmp/err"'
python3 "$tool" "$tmp/bench" rs "randread 4k" work "$tmp/run.o" "$tmp/dbg.o" > /dev/null 2>&1; rc=$?
tap_if "a cell without four fields: exit 2" [ $rc -eq 2 ]
tap_done
