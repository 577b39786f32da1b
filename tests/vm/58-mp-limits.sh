#!/bin/bash
# Refused paths and the recovery knobs, through rnbd over this module, with
# the server's sess_queue_depth at 16 (so 128 paths fit in the VM):
#  - max_reconnect_attempts=0: a sysfs reconnect gives up at once (ENOTCONN);
#  - add_path to a server that no longer knows the session (its last path was
#    closed on the server side) is refused with the server's errno (ENXIO);
#  - -1 again, a reconnect revives the path, rnbd remaps, the data is intact;
#  - the server comes back with another queue depth: the reconnect fails
#    ("queue depth changed"), auto-reconnect is off, and a reconnect after
#    the server is back to 16 works;
#  - remove_path of the last path, then add_path: a first connection again;
#  - add_path writers killed by SIGINT while connecting;
#  - 128 paths per session: 125 add_path writes succeed, all connected (127
#    with paths 1 and 2), a 128th once path 1 is disconnected, the 129th is refused
#    (ECONNRESET, as the C client gets it from the server); round-robin
#    reaches them and remove_path of some runs under IO (the quick tier: 8
#    paths, 2 removed under IO, and no 128th or 129th);
#  - close (rnbd unmap) while a path's reconnect work is connecting.
# Path 1 is path 1 of the tests/lib-mp.sh topology (it is cut below); path 2
# is path 2 of it in the full tier, and in the quick tier the VM's own
# rxe_eth0 address (ip:10.0.2.15 both ends): one topology path less to build.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-mp.sh"
PLAN=23
skip_all_unless_api $PLAN
tap_plan $PLAN
S=lim
cls=/sys/class/rtrs-client/$S
srv_cls=/sys/class/rtrs-server/$S
# ts <text>: a TAP comment and a kernel log line with the seconds since the
# start (builtins only).
ts() { echo "# [+${SECONDS}s] $*"; echo "rtrs-test: 58 [+${SECONDS}s] $*" > /dev/kmsg 2>/dev/null; }
# werr <value> <file>: write; R = "ok" or the shell's error text (builtins only).
werr() {
	if { echo "$1" > "$2"; } 2>/tmp/lim-werr.txt; then R=ok; else R=; _read_line /tmp/lim-werr.txt && R=${_LINE##*: }; fi
}
# npaths: NP_NOW = the paths the session lists.
npaths() { local a=("$cls"/paths/*); NP_NOW=${#a[@]}; [ -e "${a[0]}" ] || NP_NOW=0; }
# rdma_sum: IOSUM = read + write requests over all paths so far.
rdma_sum() {
	local f a c; IOSUM=0
	for f in "$cls"/paths/*/stats/rdma; do
		a=; c=; { read -r a _ c _ < "$f"; } 2>/dev/null; IOSUM=$(( IOSUM + ${a:-0} + ${c:-0} ))
	done
}
io_since() { rdma_sum; [ "$IOSUM" -gt "$1" ]; }
# load_srv <depth>: the server side with sess_queue_depth=<depth>.
load_srv() { modprobe rtrs_server sess_queue_depth="$1" && modprobe rnbd_server; }

# kmark: MARK = a unique line, written to the kernel log (kmsg_mark's, without
# its process); dmesg_since "$MARK" sees what came after it.
kmark() { MARK="rtrs-test: mark $$.$RANDOM.$RANDOM"; echo "$MARK" > /dev/kmsg; }
# count_lines <pattern> <file...>: NL = the files whose first line is <pattern>.
count_lines() { local p=$1 f; NL=0; shift; for f in "$@"; do _read_line "$f" && [ "$_LINE" = "$p" ] && NL=$(( NL + 1 )); done; }
# rdma_fields: USED = paths whose stats/rdma show requests, INFL = their
# inflight summed, NREAD = how many of those files were read.
rdma_fields() {
	local f a c i; USED=0 INFL=0 NREAD=0
	for f in "$cls"/paths/*/stats/rdma; do
		a=; c=; i=; { read -r a _ c _ i _ < "$f"; } 2>/dev/null
		[ -n "$i" ] && NREAD=$(( NREAD + 1 ))
		[ $(( ${a:-0} + ${c:-0} )) -gt 0 ] && USED=$(( USED + 1 ))
		INFL=$(( INFL + ${i:-0} ))
	done
}

# The volume of each tier (if, not by_tier: a process costs about 0.3 s
# under TCG): topology paths; MiB that data_ok compares; the timeouts of the
# interrupted add_path writers (an unanswered address, a live one); the
# paths of the session and those removed under IO; NSRC x NDST local address
# pairs over rxe on eth0 (rxe loops them back) for the add_path writers.
if [ "$RTRS_TIER" = quick ]; then
	# Path 2 over the VM's own rxe_eth0 (lib-mp.sh MP_LOOP).
	# shellcheck disable=SC2034 # MP_LOOP is read by lib-mp.sh
	MP_N=1 MP_LOOP=1 DMB=1 T_DEAD="2" T_LIVE="0.3 0.5" NP=8 NRM=2 NSRC=3 NDST=3
else
	# shellcheck disable=SC2034 # MP_N is read by lib-mp.sh
	MP_N=2 DMB=4 T_DEAD="1 2" T_LIVE="0.05 0.1 0.2 0.3 0.5 0.8" NP=127 NRM=16 NSRC=11 NDST=12
fi
pairs=() addrs=()
for (( s = 100; s < 100 + NSRC; s++ )); do
	addrs+=("10.0.2.$s")
	for (( d = 200; d < 200 + NDST; d++ )); do pairs+=("ip:10.0.2.$s@ip:10.0.2.$d"); done
done
for (( d = 200; d < 200 + NDST; d++ )); do addrs+=("10.0.2.$d"); done
# eth0_addrs add|del: all of them, in one process.
eth0_addrs() { local a c=; for a in "${addrs[@]}"; do c+="addr $1 $a/24 dev eth0"$'\n'; done; ip -force -batch - <<< "$c" 2>/dev/null; }

if mp_setup; then tap_ok "topology up: $MP_PATHS"; else tap_not_ok "topology up"; fi
# Path 1 comes first in MP_PATHS (mp_path_name 1).
p1=${MP_PATHS%% *}
p1d=$cls/paths/$p1
# (The suite keeps rxe_eth0 up between tests.)
[ -e /sys/class/infiniband/rxe_eth0 ] ||
	{ rdma link add rxe_eth0 type rxe netdev eth0; wait_for 20 _mp_port_active rxe_eth0; }
eth0_addrs add
p2=$(mp_path_name 2)
p2d=$cls/paths/$p2
# The pair of the interrupted add_path writers: the last one, which the
# add_path loop below never reaches.
pp=${pairs[${#pairs[@]} - 1]}
modprobe brd rd_nr=1 rd_size=65536 max_part=0
tap_check "server side loads with sess_queue_depth=16" load_srv 16
tap_check "client stack loads" load_rnbd_rs
dev=$(timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; . '$RTRS_REPO/tests/lib-mp.sh'; MP_PATHS='$p1'; mp_map_rnbd $S /dev/ram0")
if [ -b "$dev" ] && wait_for 30 pconn "$p1d"; then
	tap_ok "mapped $dev over one path"
else
	tap_not_ok "map over one path"; diag "$(mp_status $S)"
fi
dd if=/dev/urandom of=/tmp/lim.dat bs=1M count="$DMB" 2>/dev/null
dd if=/tmp/lim.dat of="$dev" bs=1M oflag=direct 2>/dev/null
sum0=$(md5sum < /tmp/lim.dat)
data_ok() { [ "$(dd if="$dev" bs=1M count="$DMB" iflag=direct 2>/dev/null | md5sum)" = "$sum0" ]; }
ts "mapped, $DMB MiB written"

# --- max_reconnect_attempts=0; the server forgets the session -----------------
echo 0 > $cls/max_reconnect_attempts
for f in "$srv_cls"/paths/*/disconnect; do echo 1 > "$f"; done
wait_for 30 pdown "$p1d"
wait_for 30 _absent $srv_cls
pstate "$p1d"
gone=yes; [ -e $srv_cls ] && gone=no
ts "server session gone: $gone; path 1 $ST"
werr 1 "$p1d/reconnect"; r=$R
pstate "$p1d"
tap_if "max_reconnect_attempts=0: reconnect gives up at once ($r) and the path reads disconnected" \
	eval "[ '$r' = 'Transport endpoint is not connected' ] && [ '$ST' = disconnected ]"

# --- add_path to a server that does not know the session -------------------
kmark
werr "$p2" $cls/add_path; r=$R
npaths
tap_if "add_path to a server that does not know the session: refused ($r), $NP_NOW path listed" \
	eval "[ '$r' = 'No such device or address' ] && [ $NP_NOW -eq 1 ] && [ ! -e '$p2d' ]"
tap_if "the server said why" dmesg_since "$MARK" 'Not the first connection request'

# --- -1: a reconnect revives the path and rnbd remaps ----------------------------
echo -1 > $cls/max_reconnect_attempts
if mp_path_reconnect $S 1 60 && wait_for 60 data_ok; then
	tap_ok "max_reconnect_attempts=-1: reconnect revives the path, rnbd remaps, data intact"
else
	tap_not_ok "reconnect after -1"; diag "$(mp_status $S)"
fi

# --- the server comes back with another queue depth -----------------------------
unload_modules rnbd_server rtrs_server
wait_for 30 pdown "$p1d"
load_srv 32
kmark
werr 1 "$p1d/reconnect"; r=$R
qd_refused() {
	[ "$r" != ok ] && dmesg_since "$MARK" 'queue depth changed' &&
		dmesg_since "$MARK" 'Disabling auto-reconnect' && pstate "$p1d" && [ "$ST" = disconnected ]
}
tap_if "queue depth 16 -> 32 on reconnect: refused ($r), 'queue depth changed' logged, auto-reconnect disabled" qd_refused
unload_modules rnbd_server rtrs_server
load_srv 16
if mp_path_reconnect $S 1 90 && wait_for 60 data_ok; then
	tap_ok "server back at queue depth 16: manual reconnect works, data intact"
else
	tap_not_ok "reconnect with the queue depth restored"; diag "$(mp_status $S)"
fi
pstate "$p1d"
ts "path 1 $ST"

# --- the last path removed: the next add_path is a first connection ---------------
# (2021-07-30 "During add_path change for_new_clt according to path_num").
echo 1 > "$p1d/remove_path"
npaths; n=$NP_NOW
wait_for 30 _absent $srv_cls
werr "$p2" $cls/add_path; r=$R
if [ $n -eq 0 ] && [ "$r" = ok ] && wait_for 30 pconn "$p2d" && wait_for 60 data_ok; then
	tap_ok "remove_path of the last path, then add_path: a new session for the server, rnbd remaps, data intact"
else
	tap_not_ok "remove the last path, add another (listed after remove: $n, add_path: $r)"; diag "$(mp_status $S)"
fi
werr "$p1" $cls/add_path; r=$R
pstate "$p1d"
tap_if "path 1 added back ($r) next to path 2" eval "[ '$r' = ok ] && [ '$ST' = connected ]"

# --- add_path writers interrupted by SIGINT ----------------------------------------
# (2023-04-10 "Avoid use-after-free in rtrs_clt_rdma_cm_handler": the wait in
# create_cm returned -ERESTARTSYS while a CM handler was still running.)
# An unanswered address (ARP pending) and a live one, interrupted at several
# points of the connect; the session's paths must not notice.
intr_bad=0
kmark
for t in $T_DEAD; do
	timeout -s INT $t sh -c "echo ip:10.0.2.99 > $cls/add_path" 2>/dev/null
	[ $? -eq 124 ] || { diag "add_path ip:10.0.2.99 not interrupted at ${t}s"; intr_bad=1; }
done
# settled: the interrupted path is gone, or connected (the signal came late).
settled() { [ ! -e "$cls/paths/$pp" ] || pconn "$cls/paths/$pp"; }
for t in $T_LIVE; do
	timeout -s INT $t sh -c "echo $pp > $cls/add_path" 2>/dev/null
	wait_for 5 settled
	# Connected before the signal: remove it again.
	[ -e "$cls/paths/$pp" ] && echo 1 > "$cls/paths/$pp/remove_path"
	[ -e "$cls/paths/$pp" ] && { diag "$pp still listed after ${t}s"; intr_bad=1; }
done
nint=$(dmesg | awk -v m="$MARK" 'index($0, m) { f = 1; next } f && /init_conns\(\) failed: err=-512/ { n++ } END { print n + 0 }')
npaths
if [ $intr_bad -eq 0 ] && [ $NP_NOW -eq 2 ] && pconn "$p1d" && pconn "$p2d" && data_ok; then
	tap_ok "interrupted add_path writers leave the 2 paths connected, data intact ($nint connects interrupted)"
else
	tap_not_ok "interrupted add_path writers ($NP_NOW paths, $nint connects interrupted)"; diag "$(mp_status $S)"
fi
ts "interrupted writers done"

# --- 128 paths ---------------------------------------------------------------
# Distinct src@dst pairs over rxe on eth0 (set up above), after paths 1 and 2.
# The server WARNs (rtrs-srv.c __add_path_to_srv: WARN_ON(paths_num >=
# MAX_PATHS_NUM) right after the increment) when one session reaches 128
# paths there, so at most 127 are connected at once: 127 connected, then
# path 1 disconnected, then the 128th added.
added=0 fails=0 k=0
npaths
while [ "$NP_NOW" -lt "$NP" ] && [ $k -lt ${#pairs[@]} ]; do
	werr "${pairs[$k]}" $cls/add_path
	k=$(( k + 1 ))
	if [ "$R" = ok ]; then added=$(( added + 1 )); else fails=$(( fails + 1 )); diag "add_path ${pairs[$k-1]}: $R"; fi
	npaths
done
ts "added $added paths ($fails failed)"
n=$NP_NOW
count_lines connected "$cls"/paths/*/state; nc=$NL
tap_if "$(( NP - 2 )) add_path writes: $n paths listed, $nc connected" \
	eval "[ $added -eq $(( NP - 2 )) ] && [ $fails -eq 0 ] && [ $n -eq $NP ] && [ $nc -eq $NP ]"
if [ "$NP" -eq 127 ]; then
	echo 1 > "$p1d/disconnect"
	werr "${pairs[$k]}" $cls/add_path; r=$R
	k=$(( k + 1 ))
	npaths; n=$NP_NOW
	count_lines connected "$cls"/paths/*/state; nc=$NL
	tap_if "path 1 disconnected, a 128th added ($r): $n paths listed, $nc connected" \
		eval "[ '$r' = ok ] && [ $n -eq 128 ] && [ $nc -eq 127 ]"
	kmark
	werr "${pairs[$k]}" $cls/add_path; r=$R
	npaths; n=$NP_NOW
	tap_if "the 129th path is refused ($r), still $n paths" \
		eval "[ '$r' = 'Connection reset by peer' ] && [ $n -eq 128 ] && [ ! -e '$cls/paths/${pairs[$k]}' ]"
	tap_if "and the refusal is logged" dmesg_since "$MARK" 'add_path: the session has 128 paths already'
else
	for d in "a 128th path" "the 129th path is refused" "and the refusal is logged"; do
		tap_skip "$d" "full tier (125 add_path writes take minutes)"
	done
	echo 1 > "$p1d/disconnect"
fi

npaths; n0=$NP_NOW
echo round-robin > $cls/mpath_policy
# Past the 4 MiB that data_ok checks.
fio --name=rr --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k --iodepth=16 \
	--offset=8M --size=16M --time_based --runtime=8 --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --randrepeat=0 --output-format=terse > /tmp/lim-fio.out 2>&1 &
fio_pid=$!
# remove_path of NRM paths while the IO runs over all of them.
rdma_sum; io0=$IOSUM
wait_for 30 io_since "$io0" || diag 'no IO on the paths after 30 s'
ts "IO on the paths, removing $NRM"
rm_fail=0
for p in "${pairs[@]:0:$NRM}"; do
	[ -e "$cls/paths/$p" ] || continue
	werr 1 "$cls/paths/$p/remove_path"
	[ "$R" = ok ] && [ ! -e "$cls/paths/$p" ] || rm_fail=$(( rm_fail + 1 ))
done
if kill -0 $fio_pid 2>/dev/null; then during=yes; else during=no; fi
ts "removed (fio still running: $during)"
wait $fio_pid
rc=$?
rdma_fields; used=$USED inf=$INFL nread=$NREAD
npaths; n=$NP_NOW
tap_if "round-robin IO over the paths with $NRM removed under it (fio still running after: $during): fio rc $rc, $n paths left, $used carried IO" \
	eval "[ $rc -eq 0 ] && [ $rm_fail -eq 0 ] && [ $n -eq $(( n0 - NRM )) ] && [ $used -ge $(( (n0 - NRM - 1) * 9 / 10 )) ]"
[ $rc -eq 0 ] || diag "$(tail -n 20 /tmp/lim-fio.out)"
# (Over every listed path's file: an unreadable one is not an inflight of 0.)
tap_if "inflight sums to 0 once the IO stopped ($inf, over $nread of $n paths)" eval "[ $n -gt 0 ] && [ $nread -eq $n ] && [ $inf -eq 0 ]"
echo min-inflight > $cls/mpath_policy
# Path 1 was disconnected above (and a sysfs disconnect stays): a path that
# never went would pass the reconnect without one.
pstate "$p1d"; p1_was=$ST
if [ "$p1_was" = disconnected ] && mp_path_reconnect $S 1 60 && data_ok; then
	tap_ok "path 1 reconnects ($n paths up), data intact"
else
	tap_not_ok "path 1 ($p1_was before) reconnects, data intact"; diag "$(mp_status $S)"
fi

# --- close while a reconnect work is connecting -----------------------------------
# Path 1 is disconnected cleanly, then cut silently; a sysfs reconnect then
# blocks in the connect (the CM REQ goes unanswered, up to the 30 s connect
# timeout) while rnbd unmaps the device and closes the session, whose first
# step (device_del of the sysfs root) waits for that store.
echo 1 > "$p1d/disconnect"
mp_path_cut 1
rm -f /tmp/lim-rc.txt /tmp/lim-wpid
(timeout 200 sh -c "echo \$\$ > /tmp/lim-wpid; echo 1 > '$p1d/reconnect'" 2>/dev/null; echo "reconnect store returned $?" > /tmp/lim-rc.txt) &
rc_pid=$!
# The race needs the store still running (blocked in the connect) when
# close starts: wait until the writer is inside write(2) (syscall 1).
in_write() { local w='' nr=''; { read -r w < /tmp/lim-wpid && read -r nr _ < "/proc/$w/syscall"; } 2>/dev/null && [ "$nr" = 1 ]; }
wait_for 20 in_write || diag "the reconnect store is not in write(2) after 20 s"
blocked=yes; [ -e /tmp/lim-rc.txt ] && blocked=no
ts "unmap with path 1 reconnecting (store still running: $blocked) and $(( n - 1 )) paths up"
if timeout 200 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S" && [ "$blocked" = yes ]; then
	tap_ok "unmap (rtrs_clt_close) while the reconnect work runs: the session is gone"
else
	tap_not_ok "unmap while a reconnect runs"; diag "$(ls $cls 2>&1 | head)"
fi
wait $rc_pid
_read_line /tmp/lim-rc.txt; ts "$_LINE"
tap_if "the sysfs reconnect returned, with an error (no hang)" eval "[[ '$_LINE' == 'reconnect store returned '[1-9]* ]]"

# --- teardown -------------------------------------------------------------------
# (Path 1 stays cut: mp_teardown removes the router netns with its routes.)
unload_modules rnbd_client rtrs_client_rs
stop_server
mp_teardown
eth0_addrs del
left=$(rtrs_modules_loaded)
tap_check "modules unloaded, topology removed (left: ${left:-none})" test -z "$left"
ts total
tap_done
