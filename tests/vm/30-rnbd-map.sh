#!/bin/bash
# The unmodified in-tree rnbd-client over this module: map and unmap, the
# server sees the session, 20 cycles (1 in the quick tier) without a leak or
# splat; rmmod while mapped is refused.
. "$(dirname "$0")/../lib.sh"
PLAN=9
skip_all_unless_api $PLAN
tap_plan $PLAN

srv=/sys/class/rtrs-server
tap_check "in-tree server side loads" start_server 65536
tap_check "rtrs_core, this module and the unmodified rnbd-client load" load_rnbd_rs
# Without a process where a builtin does (each costs ~0.3 s under TCG).
tap_check "rnbd-client is bound to rtrs_client_rs" test -e /sys/module/rtrs_client_rs/holders/rnbd_client

dev=$(map_rnbd s1 /dev/ram0)
if [ -b "$dev" ]; then tap_ok "map_device gives $dev"; else tap_not_ok "map_device"; diag "$(dmesg | tail -20)"; fi
tap_check "server and client sysfs show the session" eval "[ -d $srv/s1 ] && [ -d /sys/class/rtrs-client/s1 ]"
# As in C, the path directory is "src@dst" with the source the route resolved to.
tap_check "path directory is named with the resolved source: ip:$SRV_ADDR@ip:$SRV_ADDR" \
	test -d "/sys/class/rtrs-client/s1/paths/ip:$SRV_ADDR@ip:$SRV_ADDR"
rmmod_refused() { ! rmmod rtrs_client_rs 2>/dev/null && [ -e /sys/module/rtrs_client_rs/holders/rnbd_client ]; }
tap_check "rmmod refused: rnbd_client holds rtrs_client_rs" rmmod_refused
unmap_rnbd s1

gone() { [ ! -e "$1" ]; }
N=$(by_tier 1 20)
fails=0
for (( i = 1; i <= N; i++ )); do
	d=$(map_rnbd c$i /dev/ram0) || { fails=$((fails + 1)); diag "map $i failed"; continue; }
	[ -b "$d" ] || fails=$((fails + 1))
	unmap_rnbd c$i || { fails=$((fails + 1)); diag "unmap $i failed"; }
	wait_for 20 gone "/sys/class/rtrs-client/c$i" || { fails=$((fails + 1)); diag "session c$i left"; }
done
tap_check "$N map/unmap cycles ($fails failures)" test $fails -eq 0

unload_modules rnbd_client rtrs_client_rs
stop_server
left=$(rtrs_modules_loaded)
tap_check "unmap and unload leave nothing loaded" test -z "$left"
tap_done
