#!/bin/bash
# This module loads, registers /sys/class/rtrs-client and an ib_client that sees
# the RDMA devices, and unloads without a trace; 20 times (5 in the quick tier).
. "$(dirname "$0")/../lib.sh"
tap_plan 9

tap_check "rtrs-client-rs.ko is built" test -f "$RS_KO"
tap_check "module name is rtrs_client_rs" sh -c "[ \"\$(modinfo -F name '$RS_KO')\" = rtrs_client_rs ]"
# Exactly the seven API symbols rnbd-client imports, as plain EXPORT_SYMBOL
# with no namespace (6.12's rnbd imports none), and none of rtrs-core's.
exports=$(awk -F'\t' '{print $2" "$4" ns="$5}' "$RTRS_REPO/Module.symvers" | sort | tr '\n' ';')
want="rtrs_clt_close EXPORT_SYMBOL ns=;rtrs_clt_get_permit EXPORT_SYMBOL ns=;rtrs_clt_open EXPORT_SYMBOL ns=;rtrs_clt_put_permit EXPORT_SYMBOL ns=;rtrs_clt_query EXPORT_SYMBOL ns=;rtrs_clt_rdma_cq_direct EXPORT_SYMBOL ns=;rtrs_clt_request EXPORT_SYMBOL ns=;"
if [ "$exports" = "$want" ]; then tap_ok "exports exactly the 7 rtrs_clt_* symbols, EXPORT_SYMBOL, no namespace"; else tap_not_ok "exports exactly the 7 rtrs_clt_* symbols, EXPORT_SYMBOL, no namespace"; diag "got: $exports"; fi

N=$(by_tier 5 20)
fails=0 seen=0
for i in $(seq 1 "$N"); do
	dmesg -C
	load_rs || { fails=$((fails + 1)); diag "insmod $i failed"; continue; }
	[ -d /sys/class/rtrs-client ] || { fails=$((fails + 1)); diag "no class after insmod $i"; }
	dmesg | grep -q "rtrs_client_rs: ib device rxe_eth0 added" && seen=$((seen + 1))
	rmmod rtrs_client_rs || { fails=$((fails + 1)); diag "rmmod $i failed"; continue; }
	[ -e /sys/class/rtrs-client ] && { fails=$((fails + 1)); diag "class left after rmmod $i"; }
	dmesg | grep -q "rtrs_client_rs: ib device rxe_eth0 removed" || { fails=$((fails + 1)); diag "no remove $i"; }
done
if [ $fails -eq 0 ]; then tap_ok "$N load/unload cycles with the class created and removed"; else tap_not_ok "$N load/unload cycles ($fails failures)"; fi
if [ "$seen" -eq "$N" ]; then tap_ok "ib_client saw rxe_eth0 on each of the $N loads"; else tap_not_ok "ib_client saw rxe_eth0 on $seen of $N loads"; fi

# A device added and removed while the module is loaded reaches the ib_client.
load_rs
dmesg -C
ip link add d0 type dummy && ip link set d0 up
rdma link add rxe_d0 type rxe netdev d0
tap_check "hot-added RDMA device is seen" sh -c 'dmesg | grep -q "ib device rxe_d0 added"'
rdma link del rxe_d0
tap_check "removed RDMA device is seen" sh -c 'dmesg | grep -q "ib device rxe_d0 removed"'
ip link del d0
rmmod rtrs_client_rs

# Both clients own the rtrs-client class: with the C one loaded, ours must
# refuse to load and leave nothing behind.
modprobe rtrs_client
if ! grep -q '^rtrs_client ' /proc/modules; then
	tap_not_ok "load refused while the in-tree rtrs-client is loaded (it did not load)"
elif load_rs 2>/dev/null; then
	tap_not_ok "load refused while the in-tree rtrs-client is loaded"; rmmod rtrs_client_rs
else
	tap_ok "load refused while the in-tree rtrs-client is loaded"
fi
unload_modules rtrs_client rtrs_core
tap_check "nothing left behind" sh -c '[ ! -e /sys/class/rtrs-client ] && ! grep -q "^rtrs_client" /proc/modules'
tap_done
