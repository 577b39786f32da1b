#!/bin/bash
# The safe Rust API (rtrs_api/rtrs_api.rs) through its example module
# (tests/consumer-rs), over this module and over C's rtrs-client, against
# the in-tree rnbd-server: loading the example opens a session, queries it,
# exchanges RNBD's SESS_INFO with a wait, sends a burst of them at once on
# IO permits and checks each answer, opens /dev/ram0 on the server and
# closes it; removing it closes the session on both sides. A path that does
# not parse, a device the server does not have and a server that is not
# there fail the load with an errno and leave no session behind.
. "$(dirname "$0")/../lib.sh"
EX_KO=$RTRS_REPO/tests/consumer-rs/rtrs_api_example.ko
CLIENTS="rs c"
PLAN=$(( 2 + 10 * 2 + 2 ))
skip_all_unless_api $PLAN
[ -f "$EX_KO" ] || skip_all $PLAN "tests/consumer-rs is not built (make test-tools)"
tap_plan $PLAN
CLS=/sys/class/rtrs-client
SRV=/sys/class/rtrs-server

tap_check "server side loads" start_server 65536
modprobe -a ib_core rdma_cm rtrs_core
tap_check "no session before" test ! -e "$CLS"/apiex-rs -a ! -e "$CLS"/apiex-c

# logged <mark> <text>: the example logged the text after the mark.
logged() { dmesg_since "$1" "rtrs_api_example: $2"; }
gone() { [ ! -e "$CLS/$1" ] && [ ! -e "$SRV/$1" ]; }
# ex_load <args...>: insmod's error text in EX_ERR (empty on success).
ex_load() {
	EX_ERR=$(insmod "$EX_KO" "$@" 2>&1) && EX_ERR=
}

for cl in $CLIENTS; do
	s=apiex-$cl
	case $cl in
	rs) mod=rtrs_client_rs; load() { load_rs; } ;;
	c) mod=rtrs_client; load() { modprobe rtrs_client; } ;;
	esac
	tap_check "$cl: client loads" load
	m=$(kmsg_mark)
	ex_load sessname=$s path=ip:$SRV_ADDR device=/dev/ram0
	if [ -z "$EX_ERR" ]; then tap_ok "$cl: example loads"; else tap_not_ok "$cl: example loads"; diag "$EX_ERR; $(dmesg | tail -n 15)"; fi
	tap_check "$cl: the server's protocol version through SESS_INFO" logged "$m" "$s: rnbd protocol version 2"
	# The server's queue depth is 512: a burst of 64, every answer checked.
	tap_check "$cl: a burst of 64 SESS_INFO on IO permits, every answer good" \
		logged "$m" "$s: burst of 64 SESS_INFO, 0 failed"
	tap_check "$cl: /dev/ram0 opened and closed on the server" \
		sh -c "dmesg | grep -q 'rtrs_api_example: $s: opened /dev/ram0 as device' && dmesg | grep -q 'rtrs_api_example: $s: closed device'"
	tap_check "$cl: the session is up on both sides" test -d "$CLS/$s" -a -d "$SRV/$s"
	rmmod rtrs_api_example
	tap_check "$cl: rmmod closes the session on both sides" wait_for 30 gone $s

	# Failures: each load fails, nothing is left.
	m=$(kmsg_mark)
	ex_load sessname=$s path=bogus
	tap_check "$cl: a path that does not parse fails the load (EPROTONOSUPPORT, as C's rtrs_addr_to_sockaddr answers an address without ip: or gid:)" \
		sh -c "[ -n '$EX_ERR' ] && dmesg | awk -v m='$m' 'index(\$0, m) { f = 1 } f' | grep -q 'rtrs_api_example: cannot parse path bogus: -93'"
	m=$(kmsg_mark)
	ex_load sessname=$s path=ip:$SRV_ADDR device=/dev/rtrs-no-such-dev
	tap_check "$cl: a device the server lacks fails the load with the server's errno, session closed" \
		sh -c "[ -n '$EX_ERR' ] && dmesg | awk -v m='$m' 'index(\$0, m) { f = 1 } f' | grep -qE 'open of /dev/rtrs-no-such-dev failed: -[0-9]+' && ! lsmod | grep -q '^rtrs_api_example ' && [ ! -e $CLS/$s ]"
	tap_check "$cl: client unloads" unload_modules "$mod"
done

# No server: the open fails and the load with it.
unload_modules rnbd_server rtrs_server
load_rs
m=$(kmsg_mark)
ex_load sessname=apiex-none path=ip:$SRV_ADDR
tap_check "no server: the load fails, nothing is left" \
	sh -c "[ -n '$EX_ERR' ] && ! lsmod | grep -q '^rtrs_api_example ' && [ ! -e $CLS/apiex-none ]"
unload_modules rtrs_client_rs
stop_server
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
