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
#    reaches them and remove_path of some runs under IO (the quick tier: 16
#    paths, 4 removed under IO, and no 128th or 129th);
#  - close (rnbd unmap) while a path's reconnect work is connecting.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib-mp.sh"
PLAN=23
skip_all_unless_api $PLAN
tap_plan $PLAN
S=lim
cls=/sys/class/rtrs-client/$S
srv_cls=/sys/class/rtrs-server/$S
t0=$(date +%s)
ts() { diag "[+$(( $(date +%s) - t0 ))s] $*"; }
# werr <value> <file>: write; print "ok" or the shell's error text.
werr() { local e; e=$( (echo "$1" > "$2") 2>&1) && echo ok || echo "${e##*: }"; }
# load_srv <depth>: the server side with sess_queue_depth=<depth>.
load_srv() { modprobe rtrs_server sess_queue_depth="$1" && modprobe rnbd_server; }
p1=$(mp_path_name 1)
d1() { mp_path_dir $S 1; }

# shellcheck disable=SC2034 # read by mp_setup (lib-mp.sh)
MP_N=2
if mp_setup; then tap_ok "topology up: $MP_PATHS"; else tap_not_ok "topology up"; fi
modprobe brd rd_nr=1 rd_size=65536 max_part=0
tap_check "server side loads with sess_queue_depth=16" load_srv 16
tap_check "client stack loads" load_rnbd_rs
dev=$(timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; . '$RTRS_REPO/tests/lib-mp.sh'; MP_PATHS='$p1'; mp_map_rnbd $S /dev/ram0")
if [ -b "$dev" ] && wait_for 30 mp_path_connected $S 1; then
	tap_ok "mapped $dev over one path"
else
	tap_not_ok "map over one path"; diag "$(mp_status $S)"
fi
dd if=/dev/urandom of=/tmp/lim.dat bs=1M count=4 2>/dev/null
dd if=/tmp/lim.dat of="$dev" bs=1M oflag=direct 2>/dev/null
sum0=$(md5sum < /tmp/lim.dat)
data_ok() { [ "$(dd if="$dev" bs=1M count=4 iflag=direct 2>/dev/null | md5sum)" = "$sum0" ]; }

# --- max_reconnect_attempts=0; the server forgets the session -----------------
echo 0 > $cls/max_reconnect_attempts
for f in "$srv_cls"/paths/*/disconnect; do echo 1 > "$f"; done
wait_for 30 mp_path_down $S 1
wait_for 30 sh -c "[ ! -e $srv_cls ]"
ts "server session gone: $([ -e $srv_cls ] && echo no || echo yes); path 1 $(mp_path_state $S 1)"
r=$(werr 1 "$(d1)/reconnect")
tap_check "max_reconnect_attempts=0: reconnect gives up at once ($r) and the path reads disconnected" \
	sh -c "[ '$r' = 'Transport endpoint is not connected' ] && [ '$(mp_path_state $S 1)' = disconnected ]"

# --- add_path to a server that does not know the session -------------------
mark=$(kmsg_mark)
r=$(werr "$(mp_path_name 2)" $cls/add_path)
n=$(ls $cls/paths | wc -l)
tap_check "add_path to a server that does not know the session: refused ($r), $n path listed" \
	sh -c "[ '$r' = 'No such device or address' ] && [ $n -eq 1 ] && [ ! -e '$(mp_path_dir $S 2)' ]"
tap_check "the server said why" dmesg_since "$mark" 'Not the first connection request'

# --- -1: a reconnect revives the path and rnbd remaps ----------------------------
echo -1 > $cls/max_reconnect_attempts
if mp_path_reconnect $S 1 60 && wait_for 60 data_ok; then
	tap_ok "max_reconnect_attempts=-1: reconnect revives the path, rnbd remaps, data intact"
else
	tap_not_ok "reconnect after -1"; diag "$(mp_status $S)"
fi

# --- the server comes back with another queue depth -----------------------------
unload_modules rnbd_server rtrs_server
wait_for 30 mp_path_down $S 1
load_srv 32
mark=$(kmsg_mark)
r=$(werr 1 "$(d1)/reconnect")
qd_refused() {
	[ "$r" != ok ] && dmesg_since "$mark" 'queue depth changed' &&
		dmesg_since "$mark" 'Disabling auto-reconnect' && [ "$(mp_path_state $S 1)" = disconnected ]
}
tap_check "queue depth 16 -> 32 on reconnect: refused ($r), 'queue depth changed' logged, auto-reconnect disabled" qd_refused
unload_modules rnbd_server rtrs_server
load_srv 16
if mp_path_reconnect $S 1 90 && wait_for 60 data_ok; then
	tap_ok "server back at queue depth 16: manual reconnect works, data intact"
else
	tap_not_ok "reconnect with the queue depth restored"; diag "$(mp_status $S)"
fi
ts "$(mp_status $S)"

# --- the last path removed: the next add_path is a first connection ---------------
# (2021-07-30 "During add_path change for_new_clt according to path_num").
echo 1 > "$(d1)/remove_path"
n=$(ls $cls/paths | wc -l)
wait_for 30 sh -c "[ ! -e $srv_cls ]"
r=$(werr "$(mp_path_name 2)" $cls/add_path)
if [ $n -eq 0 ] && [ "$r" = ok ] && wait_for 30 mp_path_connected $S 2 && wait_for 60 data_ok; then
	tap_ok "remove_path of the last path, then add_path: a new session for the server, rnbd remaps, data intact"
else
	tap_not_ok "remove the last path, add another (listed after remove: $n, add_path: $r)"; diag "$(mp_status $S)"
fi
r=$(werr "$p1" $cls/add_path)
tap_check "path 1 added back ($r) next to path 2" sh -c "[ '$r' = ok ] && [ '$(mp_path_state $S 1)' = connected ]"

# --- add_path writers interrupted by SIGINT ----------------------------------------
# (2023-04-10 "Avoid use-after-free in rtrs_clt_rdma_cm_handler": the wait in
# create_cm returned -ERESTARTSYS while a CM handler was still running.)
# An unanswered address (ARP pending) and a live one, interrupted at several
# points of the connect; the session's paths must not notice.
rdma link add rxe_eth0 type rxe netdev eth0 2>/dev/null
wait_for 20 _mp_port_active rxe_eth0
for i in $(seq 100 110) $(seq 200 211); do ip addr add 10.0.2.$i/24 dev eth0 2>/dev/null; done
intr_bad=0
for t in 1 2; do
	timeout -s INT $t sh -c "echo ip:10.0.2.99 > $cls/add_path" 2>/dev/null
	[ $? -eq 124 ] || { diag "add_path ip:10.0.2.99 not interrupted at ${t}s"; intr_bad=1; }
done
for t in 0.05 0.1 0.2 0.3 0.5 0.8; do
	pp=ip:10.0.2.110@ip:10.0.2.211
	timeout -s INT $t sh -c "echo $pp > $cls/add_path" 2>/dev/null
	sleep 1
	# Connected before the signal: remove it again.
	[ -e "$cls/paths/$pp" ] && echo 1 > "$cls/paths/$pp/remove_path"
	[ -e "$cls/paths/$pp" ] && { diag "$pp still listed after ${t}s"; intr_bad=1; }
done
n=$(ls $cls/paths | wc -l)
if [ $intr_bad -eq 0 ] && [ $n -eq 2 ] && mp_path_connected $S 1 && mp_path_connected $S 2 && data_ok; then
	tap_ok "interrupted add_path writers leave the 2 paths connected, data intact"
else
	tap_not_ok "interrupted add_path writers ($n paths)"; diag "$(mp_status $S)"
fi

# --- 128 paths ---------------------------------------------------------------
# Distinct src@dst pairs over rxe on eth0: 11 sources x 12 destinations, all
# local addresses (rxe loops them back), after path 1 on the topology.
# The server WARNs (rtrs-srv.c __add_path_to_srv: WARN_ON(paths_num >=
# MAX_PATHS_NUM) right after the increment) when one session reaches 128
# paths there, so at most 127 are connected at once: 127 connected, then
# path 1 disconnected, then the 128th added.
pairs=()
for s in $(seq 100 110); do for d in $(seq 200 211); do pairs+=("ip:10.0.2.$s@ip:10.0.2.$d"); done; done
NP=$(by_tier 16 127) NRM=$(by_tier 4 16)
added=0 fails=0 k=0
while [ "$(ls $cls/paths | wc -l)" -lt "$NP" ] && [ $k -lt ${#pairs[@]} ]; do
	r=$(werr "${pairs[$k]}" $cls/add_path)
	k=$(( k + 1 ))
	if [ "$r" = ok ]; then added=$(( added + 1 )); else fails=$(( fails + 1 )); diag "add_path ${pairs[$k-1]}: $r"; fi
done
ts "added $added paths ($fails failed)"
n=$(ls $cls/paths | wc -l)
nc=$(cat $cls/paths/*/state | grep -c '^connected$')
tap_check "$(( NP - 2 )) add_path writes: $n paths listed, $nc connected" \
	sh -c "[ $added -eq $(( NP - 2 )) ] && [ $fails -eq 0 ] && [ $n -eq $NP ] && [ $nc -eq $NP ]"
if [ "$NP" -eq 127 ]; then
	echo 1 > "$(d1)/disconnect"
	r=$(werr "${pairs[$k]}" $cls/add_path)
	k=$(( k + 1 ))
	n=$(ls $cls/paths | wc -l)
	nc=$(cat $cls/paths/*/state | grep -c '^connected$')
	tap_check "path 1 disconnected, a 128th added ($r): $n paths listed, $nc connected" \
		sh -c "[ '$r' = ok ] && [ $n -eq 128 ] && [ $nc -eq 127 ]"
	mark=$(kmsg_mark)
	r=$(werr "${pairs[$k]}" $cls/add_path)
	n=$(ls $cls/paths | wc -l)
	tap_check "the 129th path is refused ($r), still $n paths" \
		sh -c "[ '$r' = 'Connection reset by peer' ] && [ $n -eq 128 ] && [ ! -e '$cls/paths/${pairs[$k]}' ]"
	tap_check "and the refusal is logged" dmesg_since "$mark" 'add_path: the session has 128 paths already'
else
	for d in "a 128th path" "the 129th path is refused" "and the refusal is logged"; do
		tap_skip "$d" "full tier (125 add_path writes take minutes)"
	done
	echo 1 > "$(d1)/disconnect"
fi

n0=$(ls $cls/paths | wc -l)
echo round-robin > $cls/mpath_policy
# Past the 4 MiB that data_ok checks.
fio --name=rr --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k --iodepth=16 \
	--offset=8M --size=16M --time_based --runtime=8 --verify=crc32c --verify_fatal=1 \
	--verify_state_save=0 --randrepeat=0 --output-format=terse > /tmp/lim-fio.out 2>&1 &
fio_pid=$!
# remove_path of NRM paths while the IO runs over all of them.
io0=$(cat $cls/paths/*/stats/rdma | awk '{s += $1 + $3} END {print s + 0}')
wait_for 30 sh -c "[ \$(cat $cls/paths/*/stats/rdma | awk '{s += \$1 + \$3} END {print s + 0}') -gt $io0 ]" ||
	diag 'no IO on the paths after 30 s'
rm_fail=0
for p in "${pairs[@]:0:$NRM}"; do
	[ -e "$cls/paths/$p" ] || continue
	[ "$(werr 1 "$cls/paths/$p/remove_path")" = ok ] && [ ! -e "$cls/paths/$p" ] || rm_fail=$(( rm_fail + 1 ))
done
wait $fio_pid
rc=$?
used=$(cat $cls/paths/*/stats/rdma | awk '$1 + $3 > 0' | wc -l)
n=$(ls $cls/paths | wc -l)
tap_check "round-robin IO over the paths with $NRM removed under it: fio rc $rc, $n paths left, $used carried IO" \
	sh -c "[ $rc -eq 0 ] && [ $rm_fail -eq 0 ] && [ $n -eq $(( n0 - NRM )) ] && [ $used -ge $(( (n0 - NRM - 1) * 9 / 10 )) ]"
[ $rc -eq 0 ] || diag "$(tail -n 20 /tmp/lim-fio.out)"
inf=$(cat $cls/paths/*/stats/rdma | awk '{s += $5} END {print s + 0}')
tap_check "inflight sums to 0 once the IO stopped ($inf)" test "$inf" -eq 0
echo min-inflight > $cls/mpath_policy
if mp_path_reconnect $S 1 60 && data_ok; then
	tap_ok "path 1 reconnects ($n paths up), data intact"
else
	tap_not_ok "path 1 reconnects, data intact"; diag "$(mp_status $S)"
fi

# --- close while a reconnect work is connecting -----------------------------------
# Path 1 is disconnected cleanly, then cut silently; a sysfs reconnect then
# blocks in the connect (the CM REQ goes unanswered, up to the 30 s connect
# timeout) while rnbd unmaps the device and closes the session, whose first
# step (device_del of the sysfs root) waits for that store.
echo 1 > "$(d1)/disconnect"
mp_path_cut 1
rm -f /tmp/lim-rc.txt /tmp/lim-wpid
(timeout 200 sh -c "echo \$\$ > /tmp/lim-wpid; echo 1 > '$(d1)/reconnect'" 2>/dev/null; echo "reconnect store returned $?" > /tmp/lim-rc.txt) &
rc_pid=$!
# The race needs the store still running (blocked in the connect) when
# close starts: wait until the writer is inside write(2) (syscall 1).
wait_for 20 sh -c 'read -r w < /tmp/lim-wpid && read -r nr _ < /proc/$w/syscall && [ "$nr" = 1 ]' ||
	diag "the reconnect store is not in write(2) after 20 s"
blocked=$([ -e /tmp/lim-rc.txt ] && echo no || echo yes)
ts "unmap with path 1 reconnecting (store still running: $blocked) and $(( n - 1 )) paths up"
if timeout 200 bash -c ". '$RTRS_REPO/tests/lib.sh'; unmap_rnbd $S" && [ "$blocked" = yes ]; then
	tap_ok "unmap (rtrs_clt_close) while the reconnect work runs: the session is gone"
else
	tap_not_ok "unmap while a reconnect runs"; diag "$(ls $cls 2>&1 | head)"
fi
wait $rc_pid
ts "$(cat /tmp/lim-rc.txt)"
tap_check "the sysfs reconnect returned, with an error (no hang)" grep -q 'returned [1-9]' /tmp/lim-rc.txt

# --- teardown -------------------------------------------------------------------
unload_modules rnbd_client rtrs_client_rs
stop_server
mp_path_restore 1
mp_teardown
for i in $(seq 100 110) $(seq 200 211); do ip addr del 10.0.2.$i/24 dev eth0 2>/dev/null; done
left=$(rtrs_modules_loaded)
tap_check "modules unloaded, topology removed (left: ${left:-none})" test -z "$left"
ts total
tap_done
