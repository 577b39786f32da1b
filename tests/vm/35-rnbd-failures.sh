#!/bin/bash
# Failed opens through the unmodified rnbd-client, differentially: the same
# bad map_device writes go through the in-tree C client and through this
# module, and must fail with the same errno (the C client is the oracle).
. "$(dirname "$0")/../lib.sh"
PLAN=7
skip_all_unless_api $PLAN
tap_plan $PLAN

# try_map <sessname> <device>: the error text of the write, or "ok", and seconds taken.
try_map() {
	local t0 out
	t0=$(date +%s)
	out=$(bash -c "echo 'sessname=$1 path=ip:$SRV_ADDR device_path=$2' > $RNBD_CTL/map_device" 2>&1 | sed 's/.*write error: //')
	echo "${out:-ok} ($(( $(date +%s) - t0 ))s)"
}

# scenario <client>: prints one result line per case.
scenario() {
	# 1. No server listening at the address.
	echo "noserver: $(try_map nosrv /dev/ram0)"
	# 2. A session name with '.' (and one with '/').
	start_server 65536
	echo "dot: $(try_map 'a.b' /dev/ram0)"
	echo "slash: $(try_map 'a/b' /dev/ram0)"
	# 3. A device the server does not have.
	echo "nodev: $(try_map nodev /dev/ram9)"
	# rtrs_core stays: the client side still uses it.
	unload_modules rnbd_server rtrs_server brd
}

modprobe rnbd_client
c_loaded=$(grep -c '^rtrs_client ' /proc/modules)
c_out=$(scenario)
# The oracle must be the C client (not this module through a drop-in).
[ "$c_loaded" = 1 ] || { diag "C client not loaded: $(rtrs_modules_loaded)"; c_out=; }
unload_modules rnbd_client rtrs_client rtrs_core
diag "C client:" "$c_out"

load_rnbd_rs
rs_out=$(scenario)
rs_left=$(ls /sys/class/rtrs-client 2>&1)
unload_modules rnbd_client rtrs_client_rs rtrs_core
diag "rtrs-client-rs:" "$rs_out"

# Compare the errno text of each case; times only loosely (both under 60 s).
for k in noserver dot slash nodev; do
	c=$(echo "$c_out" | grep "^$k:" | sed 's/ ([0-9]*s)$//')
	r=$(echo "$rs_out" | grep "^$k:" | sed 's/ ([0-9]*s)$//')
	if [ -n "$c" ] && [ "$c" = "$r" ]; then tap_ok "$k: same result as the C client (${r#*: })"; else tap_not_ok "$k: C gives '${c#*: }', this module '${r#*: }'"; fi
done
rt=$(echo "$rs_out" | grep '^noserver:' | grep -oE '[0-9]+s\)$' | tr -d 's)')
tap_check "open without a server fails within 60 s (${rt}s)" test "${rt:-99}" -le 60
tap_check "no session left behind by the failed opens ($rs_left)" test -z "$rs_left"
left=$(rtrs_modules_loaded)
tap_check "nothing left loaded" test -z "$left"
tap_done
