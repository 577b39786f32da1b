# shellcheck shell=bash
# TAP 13 helpers for kselftest-style scripts (host and VM), plus the RDMA/RNBD
# plumbing the VM tests share. Source it; call tap_plan first and tap_done last.

TAP_N=0
TAP_FAILED=0

tap_plan() { echo "TAP version 13"; echo "1..$1"; }
tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N $*"; }
tap_not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N $*"; }
tap_skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N $1 # SKIP ${2:-}"; }
# diag <text...>: each line of each argument as a TAP comment (builtins only).
diag() {
	local a l
	for a in "$@"; do
		while IFS= read -r l; do printf '# %s\n' "$l"; done <<< "$a"
	done
}
# tap_check "<description>" <command...>: one test point from a command's status.
tap_check() {
	local desc=$1; shift
	local out
	if out=$("$@" 2>&1); then tap_ok "$desc"; else tap_not_ok "$desc"; diag "$out"; fi
}
# tap_if <description> <command...>: tap_check in this shell, for conditions
# that print nothing (no subshell: they may set variables).
tap_if() { local d=$1; shift; if "$@"; then tap_ok "$d"; else tap_not_ok "$d"; fi; }
tap_done() { [ "$TAP_FAILED" -eq 0 ]; exit $?; }

# The test tier: quick (make check) or full (make check-full, and the
# default when a script runs by itself). by_tier <quick value> <full value>.
RTRS_TIER=${RTRS_TIER:-full}
by_tier() { if [ "$RTRS_TIER" = quick ]; then echo "$1"; else echo "$2"; fi; }

# A process costs about 0.3 s in the TCG VM, so the helpers that poll use
# builtins only. _sleep <seconds>: sleeps by a timed read on a pipe that
# nobody writes to (this shell holds both ends), without a fork.
exec {_SLEEP_FD}<> <(:)
_sleep() { read -r -t "$1" -u "$_SLEEP_FD" _ || true; }

# wait_for <seconds> <command...>: poll until the command succeeds.
wait_for() {
	local t=$1; shift
	local end=$(( SECONDS + t ))
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -ge "$end" ] && return 1
		_sleep 0.2
	done
}

# _read_line <file>: sets _LINE to the file's first line; false if unreadable.
_read_line() { _LINE=; { read -r _LINE < "$1"; } 2>/dev/null; }

# module_loaded <name>: the module is loaded (a loadable module has
# /sys/module/<name>/refcnt only while it is).
module_loaded() { [ -e "/sys/module/$1/refcnt" ]; }

# --- RDMA / RNBD plumbing (VM only) ------------------------------------------
RTRS_REPO=${RTRS_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
RS_KO=${RS_KO:-$RTRS_REPO/rtrs-client-rs.ko}
SRV_ADDR=10.0.2.15
RNBD_CTL=/sys/devices/virtual/rnbd-client/ctl

# load_rs [params]: insmod this module after the in-tree modules it links
# against (insmod does not resolve dependencies).
load_rs() {
	modprobe -a ib_core rdma_cm && insmod "$RS_KO" "$@"
}

# The in-tree server side: a brd disk exported by rnbd-server.
start_server() {
	local size_kb=${1:-65536}
	modprobe brd rd_nr=1 rd_size="$size_kb" max_part=0 &&
	modprobe rnbd_server
}

stop_server() {
	unload_modules rnbd_server rtrs_server rtrs_core brd
}

# unload_modules <name...>: rmmod each loaded module in order, retrying while
# it is still busy (unmap and session close finish asynchronously).
unload_modules() {
	local m rc=0
	for m in "$@"; do
		module_loaded "$m" || continue
		wait_for 30 rmmod "$m" || { echo "cannot unload $m" >&2; rc=1; }
	done
	return $rc
}

# Modules of the RTRS/RNBD stacks still loaded, one per line.
rtrs_modules_loaded() {
	grep -oE '^(rnbd|rtrs)[a-z_]*' /proc/modules
}

# map_rnbd <sessname> <device_path> [extra options]: map and print the rnbd device.
map_rnbd() {
	local sess=$1 dev=$2; shift 2
	echo "sessname=$sess path=ip:$SRV_ADDR device_path=$dev $*" > $RNBD_CTL/map_device || return 1
	rnbd_dev_of "$sess"
}

# rnbd_dev_of <sessname>: print the first rnbd device mapped over a session.
rnbd_dev_of() {
	local b
	for b in /sys/block/rnbd*; do
		_read_line "$b/rnbd/session" && [ "$_LINE" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# rnbd_dev_of_path <sessname> <device_path>: the session's device mapping
# that path on the server.
rnbd_dev_of_path() {
	local b
	for b in /sys/block/rnbd*; do
		_read_line "$b/rnbd/session" && [ "$_LINE" = "$1" ] &&
			_read_line "$b/rnbd/mapping_path" && [ "$_LINE" = "$2" ] &&
			{ echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# unmap_rnbd <sessname>: unmap every device of a session.
unmap_rnbd() {
	local b rc=0 mark
	# A mark in the kernel log, so that the close is found after it (the
	# ring buffer wraps in long tests, so counting lines would not do).
	mark="rtrs-test: unmap_rnbd $1 $$.$RANDOM"
	echo "$mark" > /dev/kmsg 2>/dev/null || true
	local n=0
	for b in /sys/block/rnbd*; do
		[ -e "$b/rnbd/session" ] || continue
		_read_line "$b/rnbd/session" && [ "$_LINE" = "$1" ] || continue
		echo normal > "$b/rnbd/unmap_device" || rc=1
		n=$((n + 1))
	done
	# Nothing was mapped: there is no close to wait for (a second call after
	# the session closed would otherwise wait 240 s for a line that came before
	# its mark), only one already under way.
	if [ $n -eq 0 ]; then
		wait_for 240 _absent "/sys/class/rtrs-client/$1" || rc=1
		return $rc
	fi
	# rnbd puts its session (and calls rtrs_clt_close) from the close
	# message's completion work on system_wq, after unmap_device returned;
	# rmmod rnbd_client before that finishes trips rnbd's own WARN in
	# rnbd_client_exit and frees the code the work runs. Wait for it.
	# The directory goes at the start of rtrs_clt_close (after running
	# sysfs writes returned, e.g. a reconnect); this module logs the end.
	wait_for 240 _absent "/sys/class/rtrs-client/$1" || rc=1
	if module_loaded rtrs_client_rs; then
		wait_for 240 _rs_closed_after "$mark" "$1" || rc=1
	fi
	return $rc
}

_absent() { [ ! -e "$1" ]; }

# _rs_closed_after <mark> <sess>: this module logged "<sess>: session closed"
# after the kernel log line <mark>.
_rs_closed_after() {
	dmesg | awk -v m="$1" -v s="rtrs_client_rs: $2: session closed" \
		'index($0, m) { f = 1 } f && index($0, s) { found = 1 } END { exit !found }'
}

# wait_gid <ipv4 addr> [rxe dev]: rxe picks a new address up as a GID
# asynchronously; true once it has (rdma_cm can then resolve it).
wait_gid() {
	local a b c d hex
	IFS=. read -r a b c d <<<"$1"
	hex=$(printf '%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	wait_for 20 sh -c "grep -qx '0000:0000:0000:0000:0000:ffff:$hex' /sys/class/infiniband/${2:-rxe_eth0}/ports/1/gids/*"
}

# kmsg_mark: writes a unique line to the kernel log and prints it; with
# dmesg_since <mark> <pattern>, a check sees only what was logged after it
# (make check and make check-full run every test in one boot).
kmsg_mark() {
	local m="rtrs-test: mark $$.$RANDOM.$RANDOM"
	echo "$m" > /dev/kmsg
	echo "$m"
}
dmesg_since() {
	dmesg | awk -v m="$1" 'index($0, m) { f = 1; next } f' | grep -q -- "$2"
}

# fio_verify <dev> <bs> <size> [extra fio args]: write then read back with crc32c.
fio_verify() {
	local dev=$1 bs=$2 size=$3; shift 3
	fio --name="verify-$bs" --filename="$dev" --direct=1 --ioengine=libaio \
		--iodepth=16 --rw=randwrite --bs="$bs" --size="$size" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		--output-format=terse --terse-version=3 "$@"
}

# --- rnbd-client over this module ---------------------------------------------

# True once this module exports the rtrs_clt_* API that rnbd-client imports.
rs_api_exported() {
	local n
	n=$(grep -cE '^0x[0-9a-f]+[[:space:]]+rtrs_clt_(open|close|get_permit|put_permit|request|rdma_cq_direct|query)[[:space:]]' \
		"$RTRS_REPO/Module.symvers" 2>/dev/null)
	[ "${n:-0}" -eq 7 ]
}

# skip_all_unless_api <plan>: if the API is not exported yet, report every
# planned test as skipped and exit.
skip_all_unless_api() {
	rs_api_exported && return 0
	skip_all "$1" "rtrs_clt_* API not exported by rtrs-client-rs yet"
}

# skip_all <plan> <reason>: every planned test reported as skipped; exits.
skip_all() {
	tap_plan "$1"
	local i
	for i in $(seq 1 "$1"); do tap_skip "test $i" "$2"; done
	exit 0
}

# The unmodified in-tree rnbd-client on top of this module: rtrs_core (for
# rtrs_addr_to_sockaddr), this module, then rnbd-client with insmod, since
# modprobe would pull in the in-tree rtrs-client.
load_rnbd_rs() {
	modprobe rtrs_core && load_rs "$@" && insmod "$(modinfo -n rnbd_client)"
}

# Bytes and counts of stats/rdma of a session's first path: "rc rb wc wb inflight failover".
path_rdma_stats() {
	cat /sys/class/rtrs-client/"$1"/paths/*/stats/rdma 2>/dev/null | head -n 1
}
