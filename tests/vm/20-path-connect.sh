#!/bin/bash
# One path of this module under the unmodified rnbd-client, against the
# in-tree rtrs-server: the connections (one admin plus one IO per CPU id),
# queue_depth learnt from the server, heartbeat acks keeping the session up
# and filling cur_latency, the read-only path files, and teardown on unmap.
. "$(dirname "$0")/../lib.sh"
PLAN=15
skip_all_unless_api $PLAN
tap_plan $PLAN
srv=/sys/class/rtrs-server
cls=/sys/class/rtrs-client

rc_qps() { rdma resource show qp 2>/dev/null | grep -c ' type RC '; }

tap_check "server side loads" start_server 65536
tap_check "client stack loads" load_rnbd_rs
qp0=$(rc_qps)
dev=$(map_rnbd one /dev/ram0)
if [ -b "$dev" ]; then tap_ok "mapped $dev"; else tap_not_ok "map"; diag "$(dmesg | tail)"; fi
p=$(ls -d $cls/one/paths/* 2>/dev/null | head -1)
tap_check "path directory is named src@dst with the resolved source" test "${p##*/}" = "ip:$SRV_ADDR@ip:$SRV_ADDR"
tap_check "server shows the session and its path" test -d "$srv/one/paths/ip:$SRV_ADDR@ip:$SRV_ADDR"
# Client and server each own one RC QP per connection.
qps=$(( $(rc_qps) - qp0 ))
ncon=$(( $(cat /sys/devices/system/cpu/possible | awk -F- '{print $NF + 1}') + 1 ))
tap_check "one admin and one IO connection per CPU id: $qps RC QPs = 2 x $ncon" test "$qps" -eq $((2 * ncon))
# rnbd sizes its tag set from rtrs_clt_query's queue_depth (the server's 512).
tags=$(cat /sys/block/${dev#/dev/}/mq/0/nr_tags 2>/dev/null)
tap_check "queue_depth from the server's INFO ($tags)" test "${tags:-0}" -eq 512
tap_check "hca_name is the rxe device" test "$(cat $p/hca_name)" = rxe_eth0
tap_check "hca_port 1, src_addr, dst_addr" test "$(cat $p/hca_port) $(cat $p/src_addr) $(cat $p/dst_addr)" = "1 ip:$SRV_ADDR ip:$SRV_ADDR"
tap_check "stats/reconnects starts at '0 0'" test "$(cat $p/stats/reconnects)" = "0 0"
ncpu=$(cat /sys/devices/system/cpu/possible | awk -F- '{print $NF + 1}')
tap_check "cpu_migration_from has one '%d ' per possible CPU" \
	sh -c "cat $p/stats/cpu_migration_from | grep -qE '^([0-9]+ ){$ncpu}\$'"

# The server closes a session after 5 missed heartbeats of 5 s; our acks and
# heartbeats keep it up, and HB_ACKs give a round trip.
if [ "$RTRS_TIER" = quick ]; then
	# One heartbeat round trip (the first heartbeat goes after 5 s); the
	# longer tests would fail without them.
	wait_for 20 sh -c "grep -qE '^[1-9][0-9]* ns\$' $p/cur_latency" ||
		diag "no heartbeat ack after 20 s"
	tap_skip "session still up on the server after 32 s (heartbeats)" "full tier"
else
	sleep 32
	tap_check "session still up on the server after 32 s (heartbeats)" test -d "$srv/one"
fi
lat=$(cat $p/cur_latency)
tap_check "cur_latency measured from heartbeat acks ($lat)" sh -c "echo '$lat' | grep -qE '^[1-9][0-9]* ns\$'"

unmap_rnbd one
tap_check "unmap closes the session on the server" wait_for 20 sh -c "[ ! -e $srv/one ]"
unload_modules rnbd_client rtrs_client_rs
stop_server
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
