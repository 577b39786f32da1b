#!/bin/bash
# scripts/bench-insn.py on a synthetic insn section (plugin dumps, kallsyms,
# /proc/modules, insn.tsv): instructions per IO by module, the client
# module's calls and locked instructions, medians, spreads, the rs / C ratio,
# symbols attributed and demangled; bad input (a missing or cut dump, no IOs)
# fails.
. "$(dirname "$0")/../lib.sh"
tool=$RTRS_REPO/scripts/bench-insn.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# make_dir <dir>: three rounds of C and rs, 4k randread QD 1, server inv=Y.
make_dir() {
	local d=$1
	mkdir -p "$d/raw"
	cat > "$d/raw/insn-kallsyms-kernel.txt" <<-'EOF'
	ffffffff81000000 T _stext
	ffffffff81001000 T do_thing
	ffffffff81002000 D some_data
	ffffffff81003000 T other_thing
	EOF
	# Load 1: C's client; load 2: this module, at the same address.
	cat > "$d/raw/insn-kallsyms-1.txt" <<-'EOF'
	ffffffffa0000000 t rtrs_clt_read_req	[rtrs_client]
	ffffffffa0000100 T rtrs_clt_request	[rtrs_client]
	ffffffffa0010000 t rnbd_queue_rq	[rnbd_client]
	ffffffffa0020000 t rtrs_iu_post_send	[rtrs_core]
	EOF
	cat > "$d/raw/insn-kallsyms-2.txt" <<-'EOF'
	ffffffffa0000000 t _RNvMs6_NtCs9ltRlbeQrcK_11rtrs_clt_rs4sessNtB5_4Sess5issue	[rtrs_client_rs]
	ffffffffa0000200 t _ZN4core3ptr13drop_in_place17h0123456789abcdefE	[rtrs_client_rs]
	ffffffffa0010000 t rnbd_queue_rq	[rnbd_client]
	ffffffffa0020000 t rtrs_iu_post_send	[rtrs_core]
	EOF
	printf '%s\n' "rtrs_client 4096 1 - Live 0xffffffffa0000000" "rnbd_client 4096 0 - Live 0xffffffffa0010000" \
		"rtrs_core 4096 2 - Live 0xffffffffa0020000" > "$d/raw/insn-modules-1.txt"
	printf '%s\n' "rtrs_client_rs 4096 1 - Live 0xffffffffa0000000" "rnbd_client 4096 0 - Live 0xffffffffa0010000" \
		"rtrs_core 4096 2 - Live 0xffffffffa0020000" > "$d/raw/insn-modules-2.txt"
	printf 'id\tclient\tround\tinv\trw\tbs\tqd\tmodule\tload\tdump\tios\tios_reset\tios_dump\n' > "$d/insn.tsv"
	local r
	for r in 1 2 3; do
		printf 'insn-%05d\tc\t%s\tinv=Y\trandread\t4k\t1\trtrs_client\t1\t%s\t100.0\t0 0\t100 100\n' \
			$(( 2 * r - 1 )) $r $(( 2 * r - 1 )) >> "$d/insn.tsv"
		printf 'insn-%05d\trs\t%s\tinv=Y\trandread\t4k\t1\trtrs_client_rs\t2\t%s\t%s\t0 0\t200 200\n' \
			$(( 2 * r )) $r $(( 2 * r )) "$([ $r = 2 ] && echo 200.0 || echo 100.0)" >> "$d/insn.tsv"
	done
	# C per round: rtrs_clt_read_req 1500 (500 of them calls), rtrs_clt_request
	# 500 (700 in round 3; 100 locked); rtrs_core 300, rnbd 700, kernel 10000:
	# module 20, 20, 22 per IO. rs: issue 2000 (rounds 1, 3) or 4000 (round
	# 2, 200 IOs), drop_in_place 1000 (2060 in round 2): 30, 30.3, 30 per IO;
	# an address past the module's 4096 bytes, 5000 times, is nobody's;
	# rtrs_core 1 per IO (the server's).
	{
		echo "# qemu-insn-count x86_64"
		for r in 1 2 3; do
			echo "# reset $(( 2 * r - 1 ))"; echo "# dump $(( 2 * r - 1 ))"
			echo "ffffffff81001010 10000 0 0"
			echo "ffffffffa0000010 1000 0 0"
			echo "ffffffffa0000020 500 500 0"
			echo "ffffffffa0000110 $([ $r = 3 ] && echo 700 || echo 500) 0 100"
			echo "ffffffffa0010004 700 0 0"
			echo "ffffffffa0020008 300 0 0"
			echo "# end $(( 2 * r - 1 )) 6"
			echo "# reset $(( 2 * r ))"; echo "# dump $(( 2 * r ))"
			echo "ffffffff81001010 10000 0 0"
			if [ $r = 2 ]; then
				echo "ffffffffa0000010 4000 1000 0"; echo "ffffffffa0000210 2060 0 20"
			else
				echo "ffffffffa0000010 2000 500 0"; echo "ffffffffa0000210 1000 0 10"
			fi
			echo "ffffffffa0005000 5000 0 0"
			echo "ffffffffa0020010 $([ $r = 2 ] && echo 200 || echo 100) 0 0"
			echo "# end $(( 2 * r )) 5"
		done
	} > "$d/insn.dump"
	echo "date 2026-12-06" > "$d/meta.txt"
}

d=$tmp/good
make_dir "$d"
out=$(python3 "$tool" "$d" "$d/insn.md" 2>"$tmp/err"); rc=$?
tap_plan 15
tap_if "exit 0 on good input" [ $rc -eq 0 ]
[ $rc -eq 0 ] || diag "$(cat "$tmp/err")"
tap_if "insn.md written" [ -s "$d/insn.md" ]
row=$(grep -F '| Y | randread 4k QD 1 |' <<< "$out" | head -n 1)
# C: 20, 20, 22 -> median 20, spread 2 / 20 = 10.0 %; rs: 30, 30.3, 30 ->
# 30, 1.0 %; ratio 1.50.
tap_if "summary: C 20 insn/IO, spread 10.0%" grep -qF "| 20 (10.0%, 3) |" <<< "$row"
tap_if "summary: rs 30 insn/IO, spread 1.0%" grep -qF '| 30 (1.0%, 3) |' <<< "$row"
tap_if "summary: ratio rs / C 1.50" grep -qF '| 1.50 |' <<< "$row"
# C's rtrs_core 3 per IO, rs's 1: C with its share 22, rs / that 30 / 22.
tap_if "summary: C with its rtrs_core share 22, rs / that 1.36" grep -qE '\| 22 \| 1\.36 \|$' <<< "$row"
[ -n "$row" ] || diag "$out"
crow=$(grep -F '| Y | randread 4k QD 1 | c |' <<< "$out")
rsrow=$(grep -F '| Y | randread 4k QD 1 | rs |' <<< "$out")
# C's kernel total: 13000 / 100 = 130; rtrs_core 3, rnbd 7; calls 5, locked 1.
tap_if "C: kernel total, module, rtrs_core, rnbd_client per IO" \
	grep -qF '| c | 130 | 20 | 3 | 7 | 5.0 | 1.0 |' <<< "$crow"
[ -n "$crow" ] || diag "$out"
# rs: the address past the module is counted in the total only: 18100 / 100
# = 181 (rounds 1, 3), 21260 / 200 = 106.3; median 181; calls 5, locked 0.1.
tap_if "rs: an address past the module's extent is not the module's" \
	grep -qF '| rs | 181 | 30 | 1 | 0 | 5.0 | 0.1 |' <<< "$rsrow"
[ -n "$rsrow" ] || diag "$out"
tap_if "C's symbols: rtrs_clt_read_req 15 per IO" grep -qE '^\| `rtrs_clt_read_req` \| 15 \|$' <<< "$out"
tap_if "C's symbols: rtrs_clt_request 5 per IO" grep -qE '^\| `rtrs_clt_request` \| 5 \|$' <<< "$out"
tap_if "rs's v0 symbol demangled, without the crate hash" \
	grep -qE '^\| `<rtrs_clt_rs::sess::Sess>::issue` \| 20 \|$' <<< "$out"
tap_if "rs's legacy symbol demangled, without ::h<hash>" \
	grep -qE '^\| `core::ptr::drop_in_place` \| 10 \|$' <<< "$out"

# Bad input: one dump gone, one dump cut short, no IOs in a window.
b=$tmp/missing; make_dir "$b"
sed -i '/^# reset 6$/,$d' "$b/insn.dump"
python3 "$tool" "$b" > /dev/null 2>"$tmp/err"; rc=$?
tap_if "a missing dump fails and is named" eval '[ $rc -eq 1 ] && grep -q "insn-00006: dump 6 missing" "$tmp/err"'
b=$tmp/cut; make_dir "$b"
sed -i '/^ffffffffa0000210 2060/d' "$b/insn.dump"
python3 "$tool" "$b" > /dev/null 2>"$tmp/err"; rc=$?
tap_if "a dump short of its end's line count fails" eval '[ $rc -eq 1 ] && grep -q "dump 4: 4 lines, its end says 5" "$tmp/err"'
b=$tmp/noio; make_dir "$b"
sed -i 's/\t100\.0\t0 0\t100 100$/\t0.0\t0 0\t0 0/' "$b/insn.tsv"
python3 "$tool" "$b" > /dev/null 2>"$tmp/err"; rc=$?
tap_if "a window without IOs fails" eval '[ $rc -eq 1 ] && grep -q "insn-00001: 0.0 IOs in the window" "$tmp/err"'
tap_done
