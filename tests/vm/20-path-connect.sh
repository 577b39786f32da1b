#!/bin/bash
# One path of this module against the in-tree rtrs-server: conn_req/conn_rsp,
# one admin plus one IO connection per CPU, the INFO exchange, heartbeat acks,
# and teardown. Driven by the TEST-ONLY debug_connect parameter until
# rtrs_clt_open is exported.
. "$(dirname "$0")/../lib.sh"
tap_plan 10

srv=/sys/class/rtrs-server
tap_check "in-tree rnbd-server and a brd disk load" start_server 65536

dmesg -C
load_rs debug_connect=dbg@ip:$SRV_ADDR
line=$(dmesg | grep -m1 'rtrs_client_rs: path dbg connected:')
diag "$line"
if echo "$line" | grep -q 'queue_depth=512 max_io_size=[1-9][0-9]* chunks=512'; then
	tap_ok "path connects; server's queue_depth and chunks learnt from INFO_RSP"
else
	tap_not_ok "path connects; server's queue_depth and chunks learnt from INFO_RSP"; diag "$(dmesg | tail -20)"
fi
cons=$(dmesg | grep -m1 -oE 'path dbg: cons=[0-9]+' | grep -oE '[0-9]+$')
tap_check "one admin and one IO connection per CPU ($cons)" test "${cons:-0}" -eq $(( $(nproc) + 1 ))
tap_check "server shows the session and its path" test -d "$srv/dbg/paths/ip:$SRV_ADDR@ip:$SRV_ADDR"

# The server closes a session after 5 missed heartbeats of 5 s; acks keep it up.
sleep 32
tap_check "session still up on the server after 32 s (heartbeats acked)" test -d "$srv/dbg"

rmmod rtrs_client_rs
tap_check "rmmod closes the session on the server" wait_for 20 sh -c "[ ! -e $srv/dbg ]"

# Five more cycles, for leaks (the harness runs kmemleak after the script).
fails=0
for i in 1 2 3 4 5; do
	dmesg -C
	load_rs debug_connect=cyc$i@ip:$SRV_ADDR || fails=$((fails + 1))
	dmesg | grep -q "path cyc$i connected" || fails=$((fails + 1))
	rmmod rtrs_client_rs || fails=$((fails + 1))
	wait_for 20 sh -c "[ ! -e $srv/cyc$i ]" || fails=$((fails + 1))
done
tap_check "5 connect/teardown cycles ($fails failures)" test $fails -eq 0

dmesg -C
load_rs 'debug_connect=a.b@ip:10.0.2.15'
tap_check "session name with '.' is refused with EINVAL" sh -c 'dmesg | grep -qE "invalid session name.*(EINVAL|Error\\(22\\)|-22)"'
rmmod rtrs_client_rs

# No server listening: the C client fails with -ECONNRESET.
unload_modules rnbd_server rtrs_server
dmesg -C
load_rs debug_connect=nosrv@ip:$SRV_ADDR
tap_check "connect without a server fails with -ECONNRESET" sh -c 'dmesg | grep -q "path nosrv connect failed: errno -104"'
rmmod rtrs_client_rs
stop_server
left=$(rtrs_modules_loaded)
tap_check "nothing left loaded" test -z "$left"
tap_done
