# shellcheck shell=bash
# Multipath test topology for the VM (source after tests/lib.sh).
#
# Two (MP_N) independent RoCE (rdma_rxe) paths between the RTRS client and the
# in-kernel rtrs-server, in ONE kernel, each of which can be cut / restored,
# have a link in its middle set down / up, and be given delay or loss
# independently of the others.
#
#   init netns             netns "mpr" (router)          netns "mpq" (router)           init netns
#   client side                                                                          server side
#   mpc<n> ==veth== mprc<n> --fwd-- mprs<n> ==veth (the path's middle link)== mpqc<n> --fwd-- mpqs<n> ==veth== mps<n>
#   10.10.<n>.1                                                                          10.10.<n>.2
#   (rxe_mpc<n>)                                                                         (rxe_mps<n>)
#
# Path n is "ip:10.10.<n>.1@ip:10.10.<n>.2". Why it works, and why it has to
# look like this:
#  * rxe loops a packet back inside the driver, never touching a netdev, when
#    the destination MAC equals the sending netdev's own MAC (rxe_prepare ->
#    RXE_LOOPBACK_MASK). Plain addresses on one NIC (or two addresses on eth0)
#    therefore bypass netem and link state. Here each path has its own pair of
#    netdevs with distinct MACs, so every RoCE packet really leaves mpc<n>.
#  * Both endpoints' addresses are local to this kernel, which would normally
#    short-circuit routing through "lo". But rdma_cm (addr4_resolve) and rxe
#    (rxe_find_route4) always look routes up with the oif bound to the GID's
#    netdev; the local route of 10.10.<n>.2 lives on mps<n>, so it fails the oif
#    match and the /32 route "10.10.<n>.2 dev mpc<n>" below is used instead (no
#    policy routing needed: CONFIG_IP_MULTIPLE_TABLES is off in the test
#    kernel). The next hop's MAC comes from a static neighbour entry.
#  * A packet coming back in on mps<n>/mpc<n> carries a local source address:
#    accept_local=1 and rp_filter=0 let it in; it then reaches rxe's UDP 4791
#    socket with skb->dev = the rxe netdev of that end.
#  * A path is cut in the routers, never on the rxe netdevs, so mpc<n>/mps<n>
#    keep their carrier, like hosts behind a failing switch:
#    - mp_path_cut: the /32 routes in "mpr" become blackholes; every packet of
#      the path, both directions, is dropped silently.
#    - mp_path_link_down: "ip link set mprs<n> down", the link between the two
#      routers: its peer mpqc<n> loses carrier and the routers have no route
#      for the path any more (mp_path_link_up sets it up and reinstalls them).
#    In-flight RC work then fails with retry-exceeded and RTRS fails over;
#    idle, its heartbeat notices (5 x 5 s). There is no bridge in the test
#    kernel, hence L3 forwarding (RoCE's hop limit comes from the route, 64,
#    so two hops are fine; ICRC masks the TTL).
#  * Why not a link down on an rxe netdev itself (carrier off)? With no carrier
#    the netdev's qdisc is noop, dev_queue_xmit returns NET_XMIT_CN, and rxe
#    (rxe_xmit_packet) counts any non-zero ip_local_out() return as a send
#    error and moves the sending QP to ERROR - also the GSI QP1 that carries
#    the CM MADs (a DREQ or REQ sent during the cut does it). ib_mad cannot
#    bring it back, so after the restore every connect on that rxe device
#    times out ("init_conns() failed: err=-110" forever). Setting the rxe
#    netdev admin down is worse (route lookups fail, same QP1 death). The
#    carrier cut is still offered (mp_path_carrier_off) for port-event tests,
#    but a path cut that way cannot reconnect once RTRS noticed. The same
#    happens with the C client; it is an rxe limitation, hence the middle link.
#  * netem sits on the rxe netdevs themselves (mpc<n> egress = client->server,
#    mps<n> egress = server->client), so it shapes that path only.
#
# RTRS ignores port events (it only logs "Handling event: port error"); a cut
# path is noticed by RC retry exhaustion on in-flight IO (a few seconds) or by
# the heartbeat (5 x 5 s) when idle. rnbd opens sessions with
# reconnect_delay_sec=30, so mp_path_reconnect forces the reconnect by sysfs.

MP_N=${MP_N:-2}
MP_NS=mpr
MP_NS2=mpq
RTRS_CLT_SYSFS=/sys/class/rtrs-client

mp_cdev() { echo "mpc$1"; }
mp_sdev() { echo "mps$1"; }
mp_caddr() { echo "10.10.$1.1"; }
mp_saddr() { echo "10.10.$1.2"; }
# MP_LOOP=1 (with MP_N=1, for quick tiers): one more path, number 2, over
# the VM's own rxe_eth0 (ip:10.0.2.15@ip:10.0.2.15; rxe loops it back inside
# the driver, so it cannot be cut or shaped). It saves a second topology path
# (two rxe devices: ~10 s each to add and to remove under TCG) where path 2
# only has to stay up.
MP_LOOP=${MP_LOOP:-0}
MP_LOOP_PATH=ip:10.0.2.15@ip:10.0.2.15
# _mp_pathname <n>: sets _MP_PATH to path n as rnbd/rtrs spell it (also its
# sysfs dir name); mp_path_name prints it.
_mp_pathname() {
	if [ "$MP_LOOP" = 1 ] && [ "$1" -gt "$MP_N" ]; then
		_MP_PATH=$MP_LOOP_PATH
	else
		_MP_PATH="ip:10.10.$1.1@ip:10.10.$1.2"
	fi
}
mp_path_name() { _mp_pathname "$1"; echo "$_MP_PATH"; }
mp_path_dir() { _mp_dir "$1" "$2"; echo "$_MP_DIR"; }
# _mp_dir <sess> <n>: sets _MP_DIR to path n's sysfs dir (no subshell: the
# pollers below run without forks, a process costing ~0.3 s under TCG).
_mp_dir() { _mp_pathname "$2"; _MP_DIR="$RTRS_CLT_SYSFS/$1/paths/$_MP_PATH"; }

# _mp_mac <dev>: sets _MAC to the fixed MAC that mp_setup gives <dev> (a role
# byte and the path number), so routes and neighbours need no lookups.
_mp_mac() {
	local r n
	case $1 in
	mprc*) r=3 n=${1#mprc} ;; mprs*) r=4 n=${1#mprs} ;;
	mpqc*) r=5 n=${1#mpqc} ;; mpqs*) r=6 n=${1#mpqs} ;;
	mpc*) r=1 n=${1#mpc} ;; mps*) r=2 n=${1#mps} ;;
	*) return 1 ;;
	esac
	printf -v _MAC '02:52:54:%02x:%02x:00' "$r" "$n"
}

# _mp_batch <netns|-> : run the ip commands that arrive on stdin, one per
# line, in one ip process in that netns ("-": this one). Each process costs
# about 0.3 s under TCG; a path used to take ~40 of them.
_mp_batch() {
	if [ "$1" = - ]; then ip -batch -; else ip -n "$1" -batch -; fi
}

# _mp_routes_cmds <n> <side>: append path n's routes and static neighbours for
# one side (init, the netns $MP_NS or $MP_NS2) to _CMDS as ip batch lines.
_mp_routes_cmds() {
	local n=$1 A=10.10.$1.1 B=10.10.$1.2 l=$'\n'
	case $2 in
	init)
		_mp_mac "mprc$n"; _CMDS+="route replace $B/32 dev mpc$n src $A$l"
		_CMDS+="neigh replace $B lladdr $_MAC dev mpc$n nud permanent$l"
		_mp_mac "mpqs$n"; _CMDS+="route replace $A/32 dev mps$n src $B$l"
		_CMDS+="neigh replace $A lladdr $_MAC dev mps$n nud permanent$l" ;;
	"$MP_NS")
		_mp_mac "mpc$n"; _CMDS+="route replace $A/32 dev mprc$n$l"
		_CMDS+="neigh replace $A lladdr $_MAC dev mprc$n nud permanent$l"
		_mp_mac "mpqc$n"; _CMDS+="route replace $B/32 dev mprs$n$l"
		_CMDS+="neigh replace $B lladdr $_MAC dev mprs$n nud permanent$l" ;;
	"$MP_NS2")
		_mp_mac "mprs$n"; _CMDS+="route replace $A/32 dev mpqc$n$l"
		_CMDS+="neigh replace $A lladdr $_MAC dev mpqc$n nud permanent$l"
		_mp_mac "mps$n"; _CMDS+="route replace $B/32 dev mpqs$n$l"
		_CMDS+="neigh replace $B lladdr $_MAC dev mpqs$n nud permanent$l" ;;
	esac
}

# _mp_routes <n>: (re)install path n's routes and static neighbours; needed at
# setup and after a restore (downing a link flushes its routes and neighbours).
_mp_routes() {
	local side
	for side in - $MP_NS $MP_NS2; do
		_CMDS=
		if [ "$side" = - ]; then _mp_routes_cmds "$1" init; else _mp_routes_cmds "$1" "$side"; fi
		_mp_batch "$side" <<< "$_CMDS" || return 1
	done
}

# _mp_port_active <rxe>: the rxe device's port 1 is ACTIVE ("4: ACTIVE").
_mp_port_active() { _read_line "/sys/class/infiniband/$1/ports/1/state" && [ "${_LINE#*: }" = ACTIVE ]; }

# _mp_sysctl <key> <value>: write an init-netns sysctl with a builtin.
_mp_sysctl() { echo "$2" > "/proc/sys/${1//.//}"; }

# mp_setup: build the topology and export MP_PATHS (the rnbd "path=" values,
# space separated). Idempotent only against a clean VM; call mp_teardown after.
# It runs about ten processes whatever MP_N is, and adds the rxe devices
# side by side (each add takes the kernel several seconds under TCG).
mp_setup() {
	local n d ns k m1 m2 cmds pids=() rc=0
	modprobe rdma_rxe || return 1
	for k in net.ipv4.conf.all.rp_filter net.ipv4.conf.default.rp_filter; do
		_mp_sysctl $k 0 || return 1
	done
	for k in net.ipv4.conf.all.accept_local net.ipv4.conf.default.accept_local; do
		_mp_sysctl $k 1 || return 1
	done
	# The two routers side by side (a netns costs the kernel seconds too). A
	# router's devices are created after this, so its defaults cover them.
	for ns in $MP_NS $MP_NS2; do
		{ ip netns add "$ns" && ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 \
			net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
			net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.default.send_redirects=0 \
			net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1; } & pids+=($!)
	done
	for k in "${pids[@]}"; do wait "$k" || rc=1; done
	pids=()
	[ $rc = 0 ] || return 1
	# The veths, MACs fixed by name.
	cmds=
	for (( n = 1; n <= MP_N; n++ )); do
		_mp_mac "mpc$n"; m1=$_MAC; _mp_mac "mprc$n"; m2=$_MAC
		cmds+="link add mpc$n address $m1 type veth peer name mprc$n address $m2 netns $MP_NS"$'\n'
		_mp_mac "mps$n"; m1=$_MAC; _mp_mac "mpqs$n"; m2=$_MAC
		cmds+="link add mps$n address $m1 type veth peer name mpqs$n address $m2 netns $MP_NS2"$'\n'
	done
	_mp_batch - <<< "$cmds" || return 1
	cmds=
	for (( n = 1; n <= MP_N; n++ )); do
		_mp_mac "mprs$n"; m1=$_MAC; _mp_mac "mpqc$n"; m2=$_MAC
		cmds+="link add mprs$n address $m1 type veth peer name mpqc$n address $m2 netns $MP_NS2"$'\n'
	done
	_mp_batch $MP_NS <<< "$cmds" || return 1
	# The client and server ends live in this netns: their own settings,
	# before they come up.
	for (( n = 1; n <= MP_N; n++ )); do
		for d in "mpc$n" "mps$n"; do
			_mp_sysctl "net.ipv6.conf.$d.disable_ipv6" 1 &&
			_mp_sysctl "net.ipv4.conf.$d.rp_filter" 0 &&
			_mp_sysctl "net.ipv4.conf.$d.accept_local" 1 || return 1
		done
	done
	# The rxe devices come up in the background meanwhile: each add keeps
	# the kernel busy for several seconds under TCG, the rest is user space.
	MP_PATHS=
	for (( n = 1; n <= MP_N; n++ )); do
		for d in "mpc$n" "mps$n"; do
			rdma link add "rxe_$d" type rxe netdev "$d" & pids+=($!)
		done
		MP_PATHS+="${MP_PATHS:+ }ip:10.10.$n.1@ip:10.10.$n.2"
	done
	# Links up, addresses, routes and neighbours: one ip per netns.
	_CMDS=
	for (( n = 1; n <= MP_N; n++ )); do
		_CMDS+="link set mpc$n up"$'\n'"link set mps$n up"$'\n'
		_CMDS+="addr add 10.10.$n.1/32 dev mpc$n"$'\n'"addr add 10.10.$n.2/32 dev mps$n"$'\n'
		_mp_routes_cmds "$n" init
	done
	_mp_batch - <<< "$_CMDS" || rc=1
	for ns in $MP_NS $MP_NS2; do
		_CMDS="link set lo up"$'\n'
		for (( n = 1; n <= MP_N; n++ )); do
			if [ "$ns" = "$MP_NS" ]; then
				_CMDS+="link set mprc$n up"$'\n'"link set mprs$n up"$'\n'
			else
				_CMDS+="link set mpqc$n up"$'\n'"link set mpqs$n up"$'\n'
			fi
			_mp_routes_cmds "$n" "$ns"
		done
		_mp_batch "$ns" <<< "$_CMDS" || rc=1
	done
	for k in "${pids[@]}"; do wait "$k" || rc=1; done
	[ $rc = 0 ] || return 1
	for (( n = 1; n <= MP_N; n++ )); do
		wait_for 20 _mp_port_active "rxe_mpc$n" || return 1
		wait_for 20 _mp_port_active "rxe_mps$n" || return 1
	done
	if [ "$MP_LOOP" = 1 ]; then
		# (The suite keeps rxe_eth0 up between tests.)
		[ -e /sys/class/infiniband/rxe_eth0 ] ||
			{ rdma link add rxe_eth0 type rxe netdev eth0 && wait_for 20 _mp_port_active rxe_eth0; } ||
			return 1
		MP_PATHS+=" $MP_LOOP_PATH"
	fi
	export MP_PATHS
}

# mp_teardown: remove the rxe devices, the veths and the router netns. Call it
# after the RTRS sessions are gone and the modules unloaded.
mp_teardown() {
	local n d cmds=
	# (One by one: side by side they took longer, 34 s against 27 s.)
	for (( n = 1; n <= MP_N; n++ )); do
		for d in "mpc$n" "mps$n"; do
			[ -e "/sys/class/infiniband/rxe_$d" ] && rdma link del "rxe_$d" 2>/dev/null
		done
		cmds+="link del mpc$n"$'\n'"link del mps$n"$'\n'
	done
	# (-force: go on past devices that are already gone.)
	ip -force -batch - <<< "$cmds" 2>/dev/null
	for d in $MP_NS $MP_NS2; do
		[ -e "/run/netns/$d" ] && ip netns del "$d" 2>/dev/null
	done
	return 0
}

# mp_path_cut <n>: cut path n: both its routes in the router become
# blackholes, so all its packets are dropped silently from now on.
mp_path_cut() {
	ip -n $MP_NS route replace blackhole "$(mp_caddr "$1")/32" &&
	ip -n $MP_NS route replace blackhole "$(mp_saddr "$1")/32"
}

# mp_path_restore <n>: undo mp_path_cut (and mp_path_carrier_off): the link is
# up, the routes and neighbours are back, and rxe_mpc<n> is ACTIVE (waits up
# to 15 s). RTRS reconnects by itself after reconnect_delay_sec (30 s for
# rnbd); mp_path_reconnect makes it happen now.
mp_path_restore() {
	ip -n $MP_NS link set "mprc$1" up || return 1
	ip -n $MP_NS link set "mprs$1" up || return 1
	wait_for 15 _mp_carrier $MP_NS "mprs$1" || return 1
	_mp_routes "$1" || return 1
	wait_for 15 _mp_port_active "rxe_$(mp_cdev "$1")"
}

# _mp_carrier <netns> <dev>: the link has carrier (operstate UP).
_mp_carrier() { ip -n "$1" -o link show "$2" | grep -q 'state UP'; }

# mp_path_link_down <n>: "ip link set ... down" of path n's middle link (the
# veth between the two routers). Neither rxe netdev sees it.
mp_path_link_down() { ip -n $MP_NS link set "mprs$1" down; }

# mp_path_link_up <n>: undo mp_path_link_down (same as mp_path_restore).
mp_path_link_up() { mp_path_restore "$1"; }

# mp_path_carrier_off <n>: a real link down seen by the client's HCA: the
# router end of mpc<n> goes down, mpc<n> loses carrier, rxe_mpc<n> raises
# IB_EVENT_PORT_ERR and its port goes DOWN. CAUTION (see the top): any send
# on rxe_mpc<n> meanwhile puts that QP into ERROR, including the CM's QP1,
# after which rxe_mpc<n> cannot establish connections any more. Use it only
# for short flaps or for tests that do not reconnect over the path.
mp_path_carrier_off() {
	ip -n $MP_NS link set "mprc$1" down
}

# _mp_netem <n> <netem args...>: the same netem qdisc on both ends of path n.
# One tc process for both ends (a process costs ~0.3 s under TCG).
_mp_netem() {
	local n=$1; shift
	tc -batch - <<< "qdisc replace dev mpc$n root netem limit 10000 $*"$'\n'"qdisc replace dev mps$n root netem limit 10000 $*"
}

# mp_path_delay <n> <ms>: add <ms> one-way delay in each direction (RTT +2*ms).
mp_path_delay() { _mp_netem "$1" delay "${2}ms"; }

# mp_path_delay_up <sess> <n> <ms> <secs> <cond>: mp_path_delay on a live
# path, then wait up to <secs> for the command <cond>. Installing netem swaps
# the root qdisc, and for that moment it is noop: a packet rxe sends then
# gets NET_XMIT_CN, which rxe takes as a send error (see the top). Now and
# then path n is lost a few seconds later ("HB missed max reached" on an idle
# path; tests/vm/57 at 22d8dfe, 1 time in 6 in a loop). Path n lost before
# <cond> holds is reconnected once, with the delay kept (no second swap),
# and <cond> waited for again; that retry is logged. False if <cond> never
# held, or if path n vanished (it is not reconnected then).
mp_path_delay_up() {
	_MP_S=$1 _MP_N=$2 _MP_COND=$5
	local ms=$3 t=$4
	mp_path_delay "$_MP_N" "$ms" || { diag "netem on path $_MP_N failed"; return 1; }
	wait_for "$t" _mp_cond_or_down
	"$_MP_COND" && return 0
	# A path rxe lost silently stays connected until a heartbeat side gives
	# up on it: give that its time before calling the path merely slow.
	if mp_path_connected "$_MP_S" "$_MP_N"; then
		wait_for "$(_mp_hb_detect_secs)" _mp_cond_or_down
		"$_MP_COND" && return 0
		mp_path_connected "$_MP_S" "$_MP_N" && return 1
	fi
	mp_path_gone "$_MP_S" "$_MP_N" && { diag "path $_MP_N vanished after its netem delay was added"; return 1; }
	diag "path $_MP_N lost after its netem delay was added ($(mp_path_state "$_MP_S" "$_MP_N")): reconnected once, the delay kept"
	mp_path_reconnect "$_MP_S" "$_MP_N" 90 || return 1
	wait_for "$t" "$_MP_COND"
}
# _mp_hb_detect_secs: the most a heartbeat takes to find a silent path, from
# this module's parameters (interval x (missed max + 2), C's 5 s x 5 when the
# module is not loaded), plus a second.
_mp_hb_detect_secs() {
	local p=/sys/module/rtrs_client_rs/parameters iv mm
	iv=$(cat $p/hb_interval_ms 2>/dev/null || echo 5000)
	mm=$(cat $p/hb_missed_max 2>/dev/null || echo 5)
	echo $(( iv * (mm + 2) / 1000 + 1 ))
}
# _mp_cond_or_down: <cond> holds, or path n is not connected: down or gone,
# either ends the wait (mp_path_delay_up tells them apart after it).
_mp_cond_or_down() { "$_MP_COND" || ! mp_path_connected "$_MP_S" "$_MP_N"; }

# mp_path_loss <n> <pct>: drop <pct>% of packets in each direction (100 = a
# silent black hole with the link still up, unlike mp_path_cut).
mp_path_loss() { _mp_netem "$1" loss "${2}%"; }

# mp_path_netem_change <n> <netem args...>: change the netem qdisc that
# mp_path_delay or mp_path_loss installed on path n, in place: unlike a
# replace, which drops what the old qdisc held, this keeps the packets in
# flight (a replace under IO can make rxe's RC give up on the path).
mp_path_netem_change() {
	local n=$1; shift
	tc -batch - <<< "qdisc change dev mpc$n root netem limit 10000 $*"$'\n'"qdisc change dev mps$n root netem limit 10000 $*"
}

# mp_path_clear <n>: remove delay/loss from path n.
mp_path_clear() {
	tc -force -batch - <<< "qdisc del dev mpc$1 root"$'\n'"qdisc del dev mps$1 root" 2>/dev/null
	return 0
}

# mp_map_rnbd <sess> <dev> [opts]: map <dev> of the server over all paths and
# print the rnbd device.
mp_map_rnbd() {
	local sess=$1 dev=$2 p paths=; shift 2
	for p in $MP_PATHS; do paths+=" path=$p"; done
	echo "sessname=$sess$paths device_path=$dev $*" > $RNBD_CTL/map_device || return 1
	local b
	for b in /sys/block/rnbd*; do
		[ "$(cat "$b/rnbd/session" 2>/dev/null)" = "$sess" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# mp_map_two <sess>: maps /dev/ram0 in a new session over the paths of the
# topology (2 minutes at most); prints the device.
mp_map_two() {
	timeout 120 bash -c ". '$RTRS_REPO/tests/lib.sh'; . '$RTRS_REPO/tests/lib-mp.sh'; MP_PATHS='$MP_PATHS'; mp_map_rnbd $1 /dev/ram0"
}
# mp_two_mapped <sess> <dev>: dev is a block device and both paths are
# connected (waits 30 s for each); else prints their status.
mp_two_mapped() {
	[ -b "$2" ] && wait_for 30 mp_path_connected "$1" 1 && wait_for 30 mp_path_connected "$1" 2 ||
		{ mp_status "$1"; return 1; }
}
# mp_run_io <dev> <out> <seconds> [extra fio args]: verified 4k randrw,
# 2 jobs at QD 32 on 8 MB each, for that long; fio's terse output in out.
mp_run_io() {
	local dev=$1 out=$2 t=$3; shift 3
	fio --name=mp --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k \
		--iodepth=32 --numjobs=2 --size=8M --offset_increment=8M --time_based --runtime="$t" \
		--verify=crc32c --verify_fatal=1 --verify_state_save=0 --randrepeat=0 \
		--group_reporting --output-format=terse "$@" > "$out" 2>&1
}

# mp_path_state <sess> <n>: "connected" or "disconnected" (the client's view).
mp_path_state() { _mp_dir "$1" "$2"; if _read_line "$_MP_DIR/state"; then echo "$_LINE"; else echo gone; fi; }
mp_path_connected() { _mp_dir "$1" "$2"; _read_line "$_MP_DIR/state" && [ "$_LINE" = connected ]; }
# mp_path_down <sess> <n>: path n is still listed and not connected. A path
# that vanished (no sysfs dir: removed, or its session closed) is not down:
# a cut, a link down or a silent peer must leave the path in place.
mp_path_down() { _mp_dir "$1" "$2"; _read_line "$_MP_DIR/state" && [ "$_LINE" != connected ]; }
# mp_path_gone <sess> <n>: path n is not listed (its sysfs dir is gone).
mp_path_gone() { _mp_dir "$1" "$2"; [ ! -e "$_MP_DIR" ]; }
# pstate <dir>: ST = the path's state at sysfs dir <dir> ("gone" without it);
# pconn and pdown test it (pdown, as mp_path_down: listed, not connected).
pstate() { ST=gone; _read_line "$1/state" && ST=$_LINE; }
pconn() { pstate "$1"; [ "$ST" = connected ]; }
pdown() { pstate "$1"; [ "$ST" != connected ] && [ "$ST" != gone ]; }
# mp_path_rdma <sess> <n>: its stats/rdma: "rd_cnt rd_bytes wr_cnt wr_bytes inflight failover".
mp_path_rdma() { _mp_dir "$1" "$2"; _read_line "$_MP_DIR/stats/rdma" && echo "$_LINE"; }
# mp_path_reqs <sess> <n>: read + write requests sent over path n so far.
mp_path_reqs() {
	local rc=0 wc=0
	_mp_dir "$1" "$2"
	{ read -r rc _ wc _ < "$_MP_DIR/stats/rdma"; } 2>/dev/null
	echo $(( ${rc:-0} + ${wc:-0} ))
}
# mp_failovers <sess>: failover count summed over the paths.
mp_failovers() {
	local sess=$1 n t=0 f
	for (( n = 1; n <= MP_N + MP_LOOP; n++ )); do
		f=0
		_mp_dir "$sess" "$n"
		{ read -r _ _ _ _ _ f _ < "$_MP_DIR/stats/rdma"; } 2>/dev/null
		t=$(( t + ${f:-0} ))
	done
	echo $t
}
# mp_status <sess>: one line per path, for diagnostics.
mp_status() {
	local n d
	for (( n = 1; n <= MP_N + MP_LOOP; n++ )); do
		d=$(mp_path_dir "$1" "$n")
		echo "path$n $(mp_path_name "$n"): $(mp_path_state "$1" "$n"); rdma $(cat "$d/stats/rdma" 2>/dev/null);" \
			"reconnects $(cat "$d/stats/reconnects" 2>/dev/null); latency $(cat "$d/cur_latency" 2>/dev/null);" \
			"port $(rdma link show "rxe_$(mp_cdev "$n")/1" 2>/dev/null | grep -o 'state [A-Z_]*')"
	done
}

# mp_path_reconnect <sess> <n> [timeout=60]: make path n CONNECTED again now,
# writing its sysfs "reconnect" (a synchronous attempt) until it is connected.
# A write fails with EBUSY while a reconnect is already under way and with
# ENOTCONN when the attempt failed; both are retried.
mp_path_reconnect() {
	local sess=$1 n=$2 t=${3:-60} d end
	_mp_dir "$sess" "$n"; d=$_MP_DIR
	end=$(( SECONDS + t ))
	while ! mp_path_connected "$sess" "$n"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		timeout 45 sh -c "echo 1 > '$d/reconnect'" 2>/dev/null || _sleep 1
		[ "${MP_VERBOSE:-0}" = 1 ] && echo "mp_path_reconnect $n: $(mp_path_state "$sess" "$n") at $(date +%T)" >&2
	done
	return 0
}

# mp_path_field <sess> <n> <file> <i>: MP_FIELD = field i (from 1) of the
# first line of path n's sysfs <file> (stats/rdma, stats/reconnects, ...),
# 0 if it cannot be read. Builtins only: no process, no subshell.
mp_path_field() {
	local v=()
	_mp_dir "$1" "$2"
	{ read -r -a v < "$_MP_DIR/$3"; } 2>/dev/null
	# shellcheck disable=SC2034 # read by the caller
	MP_FIELD=${v[$(( $4 - 1 ))]:-0}
}

# mp_srv_path_listed <sess> <n>: the in-tree server lists path n of <sess>
# under /sys/class/rtrs-server/<sess>/paths/ (a directory named with the
# client's address of path n, at either end of its "src@dst" name).
# Builtins only.
mp_srv_path_listed() {
	local d=/sys/class/rtrs-server/$1/paths a=ip:10.10.$2.1 f
	for f in "$d/$a@"* "$d/"*"@$a"; do [ -e "$f" ] && return 0; done
	return 1
}

# mp_tap_all_gone: one TAP point, after the teardown: no RTRS or RNBD module
# is loaded and the topology's rxe links are gone.
mp_tap_all_gone() {
	local left
	left=$(rtrs_modules_loaded)
	if [ -z "$left" ] && ! rdma link show 2>/dev/null | grep -q rxe_mp; then
		tap_ok "modules unloaded and topology removed"
	else
		tap_not_ok "modules unloaded and topology removed"; diag "left: $left $(rdma link show)"
	fi
}
