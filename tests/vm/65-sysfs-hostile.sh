#!/bin/bash
# Hostile writes to every writable file of /sys/class/rtrs-client, C client
# against this module. For each file: empty, whitespace only, "\0\n", 4096 and
# 5000 bytes, "1\n" padded with NULs to 4096 bytes, non-UTF-8, negative,
# INT_MAX+1, leading '+', hex, octal-looking, leading/trailing space, "\r\n",
# out of range, valid with and without a newline, and several processes
# writing at once. Each write is recorded with its errno (or ok) and the
# file's content (or the paths' states) afterwards. The expected results are
# the C client's, taken in the same boot; the test compares, file by file.
#
#   65-sysfs-hostile.sh [A B]    clients, default "c rs" ("c c": self-check)
#
# The quick tier compares with the C client's transcript recorded in
# tests/golden/hostile-c.txt instead of running the C half; the full tier
# runs both and checks that the recorded one is still what C prints.
#
# Destructive writes run on a second path (ip:SRV@ip:10.0.2.16) and are
# undone (reconnect, add_path) so the session survives; at the end the first
# path must still be connected and a verified fio run must pass.
#
# Most of the time goes into the ~17 path connects (reconnect, restore,
# add_path) and the process spawns (~0.3 s each under TCG): the loops run on
# builtins, and both tiers load the server with sess_queue_depth=16 (each
# connect allocates and registers a buffer per slot on both sides; no
# transcript line depends on the depth); the quick tier verifies 128k
# instead of 512k.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-sysfs.sh"

A=${1:-c} B=${2:-rs}
OUTD=${SYSFS_OUT:-/run/vm-out}; [ -d "$OUTD" ] && [ -w "$OUTD" ] || OUTD=$(mktemp -d)

COMMON="empty ws nul-nl nl 4096x1 4096-1-nulpad 5000x1 non-utf8 non-utf8-1 neg int-max+1 int-min-1
	uint-max+1 plus hex octal lead-sp trail-sp nl-nl crlf"
SECTIONS="setup mpath_policy max_reconnect_attempts stats/reset_all stats/cpu_migration_from
	stats/cpu_migration_to stats/reconnects stats/rdma reconnect disconnect add_path remove_path
	concurrent final"

# The session's and its two paths' directories.
SD=$(sysfs_sess_dir) P1D=$(sysfs_path1) P2D=$(sysfs_path2)

# p2_state_is <state>: the second path's state file reads <state> (builtins).
p2_state_is() { local st=; { read -r st < "$P2D/state"; } 2>/dev/null; [ "$st" = "$1" ]; }

# restore_p2: bring the second path back to connected (reconnect it, or add
# it again if it was removed); prints what it did. No subshells: it runs
# after every write of the disconnect and remove_path loops.
restore_p2() {
	if [ ! -d "$P2D" ]; then
		sysfs_call w "$SD/add_path" "s:ip:$SYSFS_ADDR2"
		echo "  restore: add_path -> $SYSFS_REPLY"
	elif ! p2_state_is connected; then
		sysfs_call w "$P2D/reconnect" s:1
		echo "  restore: reconnect -> $SYSFS_REPLY"
	fi
}

# hostile_fio <dev>: sysfs_fio's verified run, of $FIO_SIZE.
FIO_SIZE=$(by_tier 128k 512k)
hostile_fio() {
	if fio_verify "$1" 4k "$FIO_SIZE" >/dev/null 2>&1; then echo "fio ok"; else echo "fio FAILED"; fi
}

scenario() {
	local client=$1 dev S=$SD P1=$P1D P2=$P2D in f

	echo "[setup]"
	sysfs_client_up "$client" >/dev/null 2>&1 && echo "load ok" || { echo "load FAILED"; return 1; }
	dev=$(sysfs_map 2>/dev/null)
	if [ -b "$dev" ]; then echo "map ok"; else echo "map FAILED"; sysfs_client_down "$client"; return 1; fi
	sysfs_add_ip2
	sysfs_try "$S/add_path" "s:ip:$SYSFS_ADDR2"
	hostile_fio "$dev"

	echo "[mpath_policy]"
	for in in $COMMON s:3 s:-0 s:0 s:rr s:ML 's:min-inflight\n' 's:round-robinX' s:2 's:2\n'; do
		sysfs_try "$S/mpath_policy" "$in"
	done
	sysfs_try "$S/mpath_policy" 's:1\n'

	echo "[max_reconnect_attempts]"
	for in in $COMMON s:-2 s:10000 s:-0 s:9999 s:0 s:3 's:3\n'; do
		sysfs_try "$S/max_reconnect_attempts" "$in"
	done
	sysfs_try "$S/max_reconnect_attempts" s:-1

	for f in reset_all cpu_migration_from cpu_migration_to reconnects rdma; do
		echo "[stats/$f]"
		for in in $COMMON zero two s:1 's:1\n'; do
			sysfs_try "$P1/stats/$f" "$in"
		done
	done

	echo "[reconnect]"
	for in in $COMMON zero two s:1 's:1\n'; do
		sysfs_try "$P1/reconnect" "$in"
	done

	echo "[disconnect]"
	for in in $COMMON zero two s:1 's:1\n'; do
		sysfs_try "$P2/disconnect" "$in"
		restore_p2
	done
	# max_reconnect_attempts 0: the reconnect work gives up at once (C
	# compares the attempts with it as unsigned), closes the path and the
	# write fails with ENOTCONN.
	sysfs_try "$S/max_reconnect_attempts" s:0
	sysfs_try "$P2/reconnect" s:1
	wait_for 10 p2_state_is disconnected
	sysfs_try "$S/max_reconnect_attempts" s:-1
	sysfs_try "$P2/reconnect" s:1
	restore_p2
	hostile_fio "$dev"

	echo "[add_path]"
	for in in $COMMON 4096-addr s:ip:10.0.2.256 s:ip:1.2.3 "s:ip:$SYSFS_ADDR2@" "s:@ip:$SYSFS_ADDR2" \
		"s:ip:$SYSFS_ADDR2 " "s: ip:$SYSFS_ADDR2" "s:IP:$SYSFS_ADDR2" "s:ip:$SYSFS_ADDR2\\0junk" \
		"s:ip:$SYSFS_ADDR2:99" "s:gid:zz" "s:ip:127.0.0.1" "s:ip:$SYSFS_ADDR2"; do
		sysfs_try "$S/add_path" "$in"
	done
	sysfs_try "$P2/remove_path" s:1
	sysfs_try "$S/add_path" "s:ip:$SYSFS_ADDR2"
	sysfs_try "$P2/remove_path" s:1
	sysfs_try "$S/add_path" "s:ip:$SYSFS_ADDR2\\n"

	echo "[remove_path]"
	for in in $COMMON zero two s:1 's:1\n'; do
		sysfs_try "$P2/remove_path" "$in"
		restore_p2
	done
	hostile_fio "$dev"

	echo "[concurrent]"
	sysfs_try_par 4 "$S/mpath_policy" s:rr
	sysfs_try_par 4 "$S/mpath_policy" 's:1\n'
	sysfs_try_par 4 "$S/max_reconnect_attempts" s:7
	sysfs_try_par 4 "$S/max_reconnect_attempts" s:-1
	for f in reset_all cpu_migration_from cpu_migration_to reconnects rdma; do
		sysfs_try_par 4 "$P1/stats/$f" s:1
	done
	sysfs_try_par 4 "$P1/reconnect" two
	sysfs_try_par 4 "$P2/disconnect" two
	sysfs_try_par 4 "$P2/remove_path" two
	sysfs_try_par 4 "$S/add_path" s:foo
	# Valid concurrent actions race in the C client too; their exact results
	# are recorded, and the state afterwards must be the same.
	sysfs_try_par 3 "$P2/disconnect" s:1
	restore_p2
	sysfs_try_par 3 "$P2/reconnect" s:1
	sysfs_try_par 3 "$P2/remove_path" s:1
	sysfs_try_par 3 "$S/add_path" "s:ip:$SYSFS_ADDR2"
	fio_verify "$dev" 4k 512k >/dev/null 2>&1 &
	local fpid=$!
	sysfs_try_par 3 "$P1/reconnect" s:1
	if wait $fpid; then echo "fio during concurrent reconnect ok"; else echo "fio during concurrent reconnect FAILED"; fi

	echo "[final]"
	sysfs_show "$P1/state"
	sysfs_show "$S/mpath_policy"
	sysfs_show "$S/max_reconnect_attempts"
	hostile_fio "$dev"
	unmap_rnbd "$SYSFS_SESS" && echo "unmap ok" || echo "unmap FAILED"
	wait_for 30 test ! -e "$S" && echo "session directory gone" || echo "session directory still there FAILED"
	echo "class after unmap: $(ls $SYSFS_CLASS 2>&1 | tr '\n' ' ')"
	sysfs_client_down "$client"
}

# split_sections <file> <array>: the transcript's lines by section, into the
# associative array (key "[name]"; a line starting with "[" opens a
# section). Builtins only: 14 sections, two transcripts.
split_sections() {
	local -n _sec=$2
	local line cur=
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ $line == "["* ]]; then cur=$line; _sec[$cur]+=; continue; fi
		[ -n "$cur" ] && _sec[$cur]+=$line$'\n'
	done < "$1"
}

n=0; for s in $SECTIONS; do n=$((n + 1)); done
GOLDEN=$RTRS_REPO/tests/golden/hostile-c.txt
tap_plan $((n + 4))
# srv_up: the server side, at sess_queue_depth=16. Both scenarios map a
# disk of it: without it they would only compare failures.
srv_up() {
	modprobe rtrs_server sess_queue_depth=16 && start_server
}
tap_check "server side loads with sess_queue_depth=16" srv_up
sysfs_helper_start
TA=$OUTD/hostile-$A.1.txt TB=$OUTD/hostile-$B.2.txt
if sysfs_use_golden "$GOLDEN" "$A"; then
	cp "$GOLDEN" "$TA"
	tap_skip "hostile scenario over $A leaves the session working" "quick tier: the C client's transcript recorded in tests/golden/hostile-c.txt"
else
	scenario "$A" > "$TA" 2>&1
	if grep -q FAILED "$TA"; then tap_not_ok "hostile scenario over $A leaves the session working"; diag "$(grep FAILED "$TA")"
	else tap_ok "hostile scenario over $A leaves the session working"; fi
fi
scenario "$B" > "$TB" 2>&1
if grep -q FAILED "$TB"; then tap_not_ok "hostile scenario over $B leaves the session working"; diag "$(grep FAILED "$TB")"
else tap_ok "hostile scenario over $B leaves the session working"; fi
declare -A SEC_A=() SEC_B=()
split_sections "$TA" SEC_A; split_sections "$TB" SEC_B
for s in $SECTIONS; do
	if [ "${SEC_A[[$s]]-}" = "${SEC_B[[$s]]-}" ]; then tap_ok "$s: $B answers as $A"; continue; fi
	tap_not_ok "$s: $B answers as $A"
	# Temporary files, not <(...): the VM has no /dev/fd.
	printf '%s' "${SEC_A[[$s]]-}" > "$OUTD/.sec-a"; printf '%s' "${SEC_B[[$s]]-}" > "$OUTD/.sec-b"
	diag "$(diff -u "$OUTD/.sec-a" "$OUTD/.sec-b" 2>&1)"
	rm -f "$OUTD/.sec-a" "$OUTD/.sec-b"
done
sysfs_golden_point "$GOLDEN" "$TA" "$A"
stop_server
tap_done
