#!/bin/bash
# The /sys/class/rtrs-client ABI, C client against this module: one scenario
# (map over rnbd, short fio, read every file of the session, its paths and
# their stats, valid and invalid writes with the errno and the content
# afterwards, disconnect and reconnect, add and remove a path, unmap) runs
# over each client in turn and prints a transcript in which volatile numbers
# are masked (lib-sysfs.sh). The transcripts must be identical.
#
#   60-sysfs-diff.sh [A B]     clients to compare, default "c rs";
#                              "c c" runs the C half twice (the self-check)
#
# c  = in-tree rtrs-client (modprobe rnbd_client)
# rs = this module under the unmodified rnbd-client (load_rnbd_rs)
#
# Transcripts are kept in $SYSFS_OUT (default /run/vm-out if it exists, so
# that VM_OUT=dir scripts/vm-run.sh leaves them in dir).
#
# The quick tier does not run the C half: it compares with the C client's
# transcript recorded in tests/golden/sysfs-c.txt. The full tier runs both
# and also checks that the recorded one is still what the C client prints.
#
# The quick tier also cuts volume, and compares with the recorded transcript
# as it would print it: each add_path that reaches the server costs a
# connect (seconds under TCG), so of the three that the server refuses
# (EEXIST) it writes the src@dst one, and it leaves out the second add and
# remove of path 2 (the "src,dst" form); its IO check (4 times) is dd's
# ("io ok": fresh random data written and read back with O_DIRECT, compared)
# instead of fio's ("fio ok"), whose own start costs about 9 s.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-sysfs.sh"

A=${1:-c} B=${2:-rs}
OUTD=${SYSFS_OUT:-/run/vm-out}; [ -d "$OUTD" ] && [ -w "$OUTD" ] || OUTD=$(mktemp -d)

# A process costs about 0.5 s under TCG: these replace lib-sysfs.sh's
# helpers of the same name with ones that run on builtins where those fork
# (the same output).
# sysfs_read_all [regex]: the files are found by globbing, in sort(1)'s order.
_find_files() {
	local e
	for e in "$1"/*; do
		if [ -L "$e" ]; then continue
		elif [ -d "$e" ]; then _find_files "$e"
		elif [ -f "$e" ]; then FILES+=("$e")
		fi
	done
}
sysfs_read_all() {
	local d f i j; d=$(sysfs_sess_dir)
	FILES=(); _find_files "$d"
	for ((i = 1; i < ${#FILES[@]}; i++)); do
		f=${FILES[i]}
		for ((j = i; j > 0; j--)); do
			[[ ${FILES[j-1]} > $f ]] || break
			FILES[j]=${FILES[j-1]}
		done
		FILES[j]=$f
	done
	for f in "${FILES[@]}"; do
		[[ $f =~ $SYSFS_EXT_RE ]] && continue
		[[ -z "${1:-}" || $f =~ $1 ]] && sysfs_show "$f"
	done
}
# sysfs_tree [string]: without awk and sed; with a string, only the lines
# that contain it.
sysfs_tree() {
	local d l; d=$(sysfs_sess_dir)
	(cd "$d" && find . -mindepth 1 -printf '%y %m %P\n') | sort -k3 | while IFS= read -r l; do
		[[ ${l#* * } =~ $SYSFS_EXT_RE ]] && continue
		[[ $l == *"${1:-}"* ]] && echo "T $l"
	done
}
# sysfs_add_ip2: adds the address unless it is there (ip's EEXIST).
sysfs_add_ip2() {
	ip addr add "$SYSFS_ADDR2/24" dev eth0 2>/dev/null
	wait_gid "$SYSFS_ADDR2"
}
if [ "$RTRS_TIER" = quick ]; then
	# dd_verify <dev>: 512 KB of fresh random data written with O_DIRECT,
	# read back with O_DIRECT and compared.
	dd_verify() {
		dd if=/dev/urandom of=/tmp/dd60.pat bs=256k count=2 status=none &&
			dd if=/tmp/dd60.pat of="$1" bs=256k oflag=direct status=none &&
			dd if="$1" of=/tmp/dd60.back bs=256k count=2 iflag=direct status=none &&
			cmp /tmp/dd60.pat /tmp/dd60.back
	}
	sysfs_fio() { if dd_verify "$1" >/dev/null 2>&1; then echo "io ok"; else echo "io FAILED"; fi; }
fi
# try_full <file> <input>: sysfs_try in the full tier; the quick tier leaves
# the write out and records its transcript line's start in CUT.
try_full() {
	if [ "$RTRS_TIER" = quick ]; then CUT+=("W ${1#"$SYSFS_CLASS"/} $2 -> "); else sysfs_try "$1" "$2"; fi
}
# golden_expected <recorded> <out>: the recorded transcript as the quick tier
# prints it: without the lines CUT names (each must name exactly one), "io
# ok" for "fio ok".
golden_expected() {
	local l c
	local -A hits=()
	while IFS= read -r l || [ -n "$l" ]; do
		for c in "${CUT[@]}"; do
			[[ $l == "$c"* ]] && { hits[$c]=$(( ${hits[$c]:-0} + 1 )); continue 2; }
		done
		[ "$l" = "fio ok" ] && l="io ok"
		printf '%s\n' "$l"
	done < "$1" > "$2"
	for c in "${CUT[@]}"; do
		[ "${hits[$c]:-0}" = 1 ] ||
			echo "the quick tier's cut matches ${hits[$c]:-0} lines of the recorded transcript: $c" >> "$2"
	done
}

scenario() {
	local client=$1 dev S P1 P2 in f
	S=$(sysfs_sess_dir); P1=$(sysfs_path1); P2=$(sysfs_path2)
	CUT=()
	echo "== load"
	sysfs_client_up "$client" >/dev/null 2>&1 && echo "load ok" || { echo "load FAILED"; return 1; }
	dev=$(sysfs_map 2>/dev/null)
	if [ -b "$dev" ]; then echo "map ok"; else echo "map FAILED"; sysfs_client_down "$client"; return 1; fi
	echo "class link: $(readlink "$SYSFS_CLASS/$SYSFS_SESS")"

	echo "== tree and first read"
	sysfs_tree
	sysfs_read_all
	echo "== fio"
	sysfs_fio "$dev"
	sysfs_read_all '/(stats/|cur_latency|state)'

	echo "== mpath_policy"
	for in in s:0 s:1 s:2 s:3 neg s:rr s:RR s:mi s:ml 's:Ml\n' s:round-robin s:min-inflight \
		s:min-latency s:min-latency-xyz s:MIN-LATENCY s:rrx s:round s:foo empty nl 's:1\n' 's:2\n' \
		's:rr\n' 's:rr\n\n' hex plus; do
		sysfs_try "$S/mpath_policy" "$in"
	done
	sysfs_try "$S/mpath_policy" 's:min-inflight\n'

	echo "== max_reconnect_attempts"
	for in in s:5 's:5\n' s:9999 s:10000 s:0 neg neg2 s:abc hex plus int-max+1 int-min-1 \
		lead-sp trail-sp nl empty; do
		sysfs_try "$S/max_reconnect_attempts" "$in"
	done
	sysfs_try "$S/max_reconnect_attempts" 's:-1\n'

	echo "== stats"
	for f in rdma cpu_migration_from cpu_migration_to reconnects reset_all; do
		for in in zero two s:abc 's:1\n' s:1; do
			sysfs_try "$P1/stats/$f" "$in"
		done
	done
	sysfs_read_all /stats/

	echo "== reconnect, disconnect"
	for in in zero two s:yes; do
		sysfs_try "$P1/reconnect" "$in"
		sysfs_try "$P1/disconnect" "$in"
		sysfs_try "$P1/remove_path" "$in"
	done
	sysfs_try "$P1/reconnect" s:1
	sysfs_show "$P1/stats/reconnects"
	sysfs_try "$P1/disconnect" 's:1\n'
	sysfs_show "$P1/state"
	sysfs_show "$P1/stats/reconnects"
	sysfs_try "$P1/disconnect" s:1
	sysfs_try "$P1/reconnect" 's:1\n'
	sysfs_show "$P1/stats/reconnects"
	sysfs_fio "$dev"

	echo "== add_path"
	sysfs_add_ip2
	sysfs_try "$S/add_path" "s:ip:$SYSFS_ADDR2"
	sysfs_tree "$SYSFS_ADDR2"
	for f in "$P2"/* "$P2"/stats/*; do [ -f "$f" ] && ! [[ $f =~ $SYSFS_EXT_RE ]] && sysfs_show "$f"; done
	try_full "$S/add_path" "s:ip:$SYSFS_ADDR2\\n"
	try_full "$S/add_path" "s:ip:$SRV_ADDR"
	sysfs_try "$S/add_path" "s:ip:$SRV_ADDR@ip:$SYSFS_ADDR2"
	sysfs_try "$S/add_path" s:foo
	sysfs_try "$S/add_path" s:ip:1.2.3.256
	sysfs_try "$S/add_path" s:ip:127.0.0.1
	sysfs_try "$S/add_path" empty
	sysfs_show "$S/add_path"
	sysfs_fio "$dev"
	sysfs_show "$P2/state"
	echo "R $(sysfs_read num "$P2/stats/rdma") (path 2 rdma, all numbers masked)"

	echo "== remove_path"
	sysfs_try "$P2/remove_path" s:1
	sysfs_paths
	sysfs_fio "$dev"
	sysfs_try "$S/add_path" "s:$SRV_ADDR@ip:$SYSFS_ADDR2"
	try_full "$S/add_path" "s:ip:$SRV_ADDR,ip:$SYSFS_ADDR2"
	try_full "$P2/remove_path" 's:1\n'
	sysfs_paths

	echo "== unmap"
	unmap_rnbd "$SYSFS_SESS" && echo "unmap ok" || echo "unmap FAILED"
	wait_for 30 test ! -e "$S" && echo "session directory gone" || echo "session directory still there FAILED"
	if [ -d "$SYSFS_CLASS" ]; then
		f=; for in in "$SYSFS_CLASS"/*; do [ -e "$in" ] && f+="${in##*/} "; done
		echo "class after unmap: $f"
	else
		echo "class after unmap: $(ls $SYSFS_CLASS 2>&1 | tr '\n' ' ')"
	fi
	sysfs_client_down "$client"
	# rtrs_modules_loaded without the server side, on builtins.
	f=
	while read -r in _; do
		[[ $in =~ ^(rnbd|rtrs)[a-z_]* ]] || continue
		case ${BASH_REMATCH[0]} in *rtrs_core* | *rtrs_server* | *rnbd_server*) ;; *) f+="${BASH_REMATCH[0]} " ;; esac
	done < /proc/modules
	echo "modules left: $f"
}

GOLDEN=$RTRS_REPO/tests/golden/sysfs-c.txt
tap_plan 5
# Both scenarios map a disk of it: without it they would only compare
# failures.
tap_check "server side loads" start_server
sysfs_helper_start
golden=0
if sysfs_use_golden "$GOLDEN" "$A"; then
	golden=1
	tap_skip "scenario over $A" "quick tier: the C client's transcript recorded in tests/golden/sysfs-c.txt"
else
	scenario "$A" > "$OUTD/sysfs-$A.1.txt" 2>&1
	if grep -q FAILED "$OUTD/sysfs-$A.1.txt"; then tap_not_ok "scenario over $A"; diag "$(grep FAILED "$OUTD/sysfs-$A.1.txt")"; else tap_ok "scenario over $A"; fi
fi
scenario "$B" > "$OUTD/sysfs-$B.2.txt" 2>&1
if grep -q FAILED "$OUTD/sysfs-$B.2.txt"; then tap_not_ok "scenario over $B"; diag "$(grep FAILED "$OUTD/sysfs-$B.2.txt")"; else tap_ok "scenario over $B"; fi
# In the quick tier, A's is the recorded one as the quick scenario prints it.
[ $golden = 1 ] && golden_expected "$GOLDEN" "$OUTD/sysfs-$A.1.txt"
sysfs_diff_or_fail "sysfs transcript of $B equals that of $A" "$OUTD/sysfs-$A.1.txt" "$OUTD/sysfs-$B.2.txt"
sysfs_golden_point "$GOLDEN" "$OUTD/sysfs-$A.1.txt" "$A"
stop_server
ip addr del "$SYSFS_ADDR2/24" dev eth0 2>/dev/null
rm -f /tmp/dd60.pat /tmp/dd60.back
tap_done
