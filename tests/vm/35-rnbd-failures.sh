#!/bin/bash
# Failed opens through the unmodified rnbd-client, differentially: the same
# bad map_device writes go through the in-tree C client and through this
# module, and must fail with the same errno (the C client is the oracle).
# The server side is loaded once for both clients: the C client meets no
# server first, then the server; this module the server first, then none.
. "$(dirname "$0")/../lib.sh"
PLAN=7
skip_all_unless_api $PLAN
tap_plan $PLAN

# try_map <sessname> <device>: the error text of the write, or "ok", and
# seconds taken (without a process but the subshell: each costs ~0.3 s under
# TCG).
try_map() {
	local t0=$SECONDS out
	out=$(echo "sessname=$1 path=ip:$SRV_ADDR device_path=$2" 2>&1 > "$RNBD_CTL/map_device")
	out=${out##*write error: }
	echo "${out:-ok} ($(( SECONDS - t0 ))s)"
}

# No server listening at the address.
case_noserver() { echo "noserver: $(try_map nosrv /dev/ram0)"; }
# A session name with '.' (and one with '/'), and a device the server does
# not have.
cases_server() {
	echo "dot: $(try_map 'a.b' /dev/ram0)"
	echo "slash: $(try_map 'a/b' /dev/ram0)"
	echo "nodev: $(try_map nodev /dev/ram9)"
}
loaded() { [ -e "/sys/module/$1/refcnt" ]; }
# no_sessions: no session directory in /sys/class/rtrs-client. rnbd drops
# the session of a failed open from its open-response work, after the
# map_device write returned (msg_open_conf), so the close can still be
# running; rmmod rnbd_client meanwhile WARNs in rnbd_destroy_sessions and the
# work then runs freed code (a GPF seen at 1209cb3). C removes the session's
# directory last (free_clt); this module first, and logs the end.
no_sessions() { local l=(/sys/class/rtrs-client/*); [ ! -e "${l[0]}" ]; }

modprobe rnbd_client
c_loaded=0; loaded rtrs_client && c_loaded=1
# The server's load is part of the output: without it both clients would
# meet no server in cases_server, and agree.
c_out=$(case_noserver; if start_server 65536; then echo "server: up"; else echo "server: FAILED"; fi; cases_server)
# The oracle must be the C client (not this module through a drop-in).
[ "$c_loaded" = 1 ] || { diag "C client not loaded: $(rtrs_modules_loaded)"; c_out=; }
wait_for 120 no_sessions || diag "C sessions still open: $(ls /sys/class/rtrs-client)"
# rtrs_core stays: the server side uses it.
unload_modules rnbd_client rtrs_client
diag "C client:" "$c_out"

load_rnbd_rs
mark="rtrs-test: 35 rs cases $$.$RANDOM"
echo "$mark" > /dev/kmsg
rs_out=$(cases_server; unload_modules rnbd_server rtrs_server brd; case_noserver)
rs_left=
if [ -d /sys/class/rtrs-client ]; then
	l=(/sys/class/rtrs-client/*); [ -e "${l[0]}" ] && rs_left=${l[*]##*/}
else
	rs_left="no /sys/class/rtrs-client"
fi
# nodev's session was opened; its close runs after the map write (above).
wait_for 120 _rs_closed_after "$mark" nodev || diag "no 'nodev: session closed' logged"
unload_modules rnbd_client rtrs_client_rs rtrs_core
diag "rtrs-client-rs:" "$rs_out"

# parse <array> <output>: <array>[case] = result.
parse() {
	local -n _a=$1
	local l
	while IFS= read -r l; do [[ $l == *": "* ]] && _a[${l%%: *}]=${l#*: }; done <<<"$2"
}
declare -A C=() R=()
parse C "$c_out"; parse R "$rs_out"
# Compare the errno text of each case; times only loosely (both under 60 s).
srv=${C[server]:-not run}
for k in noserver dot slash nodev; do
	c=${C[$k]:-} r=${R[$k]:-}
	c=${c% (*s)} r=${r% (*s)}
	# Past noserver, the cases need the server side loaded.
	if [ -n "$c" ] && [ "$c" = "$r" ] && { [ $k = noserver ] || [ "$srv" = up ]; }; then
		tap_ok "$k: same result as the C client ($r)"
	else
		tap_not_ok "$k: C gives '$c', this module '$r' (server side: $srv)"
	fi
done
rt=${R[noserver]:-}; rt=${rt##* (}; rt=${rt%s)}
[[ $rt =~ ^[0-9]+$ ]] || rt=
tap_check "open without a server fails within 60 s (${rt}s)" test "${rt:-99}" -le 60
tap_check "no session left behind by the failed opens ($rs_left)" test -z "$rs_left"
left=$(rtrs_modules_loaded)
tap_check "nothing left loaded" test -z "$left"
tap_done
