#!/bin/bash
# Installed as a user installs it, against the running (cached) kernel:
#  - `make install` (as sudo runs it) puts rtrs-client-rs.ko under the
#    kernel's extra/ (depmod) and the modprobe.d file; `modprobe rnbd_client`
#    then loads rtrs_client_rs and not the C rtrs_client, and a mapped device
#    moves verified data; `modprobe rtrs_client` loads rtrs_client_rs;
#  - the drop-in's documented switch back loads the C client with this module
#    still installed; with the module gone the drop-in falls back to the C
#    client and says so in the kernel log; `make uninstall` removes both;
#  - `make dkms-install` (as sudo runs it): DKMS builds the module from
#    /usr/src for this kernel with the recorded toolchain, installs it, and
#    `modprobe rnbd_client` loads that build (the build runs in the VM, under
#    TCG: full tier only).
# The VM's root is read-only: /lib/modules/<release>, /etc/modprobe.d,
# /usr/src and /var/lib/dkms get writable copies first, as on a real host.
. "$(dirname "$0")/../lib.sh"
TIER=${RTRS_TIER:-full}
PLAN=16
skip_all_unless_api $PLAN
tap_plan $PLAN
KREL=$RTRS_KREL
MODDIR=/lib/modules/$KREL
CONF=/etc/modprobe.d/rtrs-client-rs.conf

# writable <dir> [empty]: a tmpfs copy of <dir> (or an empty one) mounted over it.
writable() {
	local copy; copy=/tmp/w$(echo "$1" | tr / _)
	mkdir -p "$copy" "$1" && { [ "${2:-}" = empty ] || cp -a "$1/." "$copy/"; } && mount --bind "$copy" "$1"
}
writable "$MODDIR" && writable /etc/modprobe.d && writable /usr/src empty && writable /var/lib/dkms empty
# The copies go with the test, however it ends (the quick tier runs the
# next tests in this boot).
trap 'umount "$MODDIR" /etc/modprobe.d /usr/src /var/lib/dkms 2>/dev/null' EXIT
tap_check "writable copies of $MODDIR, /etc/modprobe.d, /usr/src and /var/lib/dkms" \
	sh -c "touch $MODDIR/.w /etc/modprobe.d/.w /usr/src/.w /var/lib/dkms/.w"
rm -f "$MODDIR/.w" /etc/modprobe.d/.w /usr/src/.w /var/lib/dkms/.w
KDIR=$MODDIR/build
# As `sudo make ...` runs: root's HOME, a plain PATH without rustup's tools,
# SUDO_USER naming whoever owns the toolchain (here root, /root/.cargo).
as_sudo() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent SUDO_USER=root TERM=dumb "$@"; }

# loaded_client: which RTRS client module is loaded ("rs", "c", "none", "both").
loaded_client() {
	local rs=0 c=0
	grep -q '^rtrs_client_rs ' /proc/modules && rs=1
	grep -q '^rtrs_client ' /proc/modules && c=1
	case $rs$c in 10) echo rs ;; 01) echo c ;; 00) echo none ;; *) echo both ;; esac
}
# The server side keeps rtrs_core.
unload_all() { unload_modules rnbd_client rtrs_client_rs rtrs_client; }

# --- make install ---------------------------------------------------------------
out=$(as_sudo make -s -C "$RTRS_REPO" KDIR="$KDIR" install 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -f "$MODDIR/extra/rtrs-client-rs.ko" ] && [ -f "$CONF" ] &&
	grep -q 'extra/rtrs-client-rs.ko:' "$MODDIR/modules.dep"; then
	tap_ok "make install: extra/rtrs-client-rs.ko in modules.dep, $CONF installed"
else
	tap_not_ok "make install (rc $rc)"; diag "$out"
fi
info=$(modinfo rtrs_client_rs 2>&1)
diag "$(grep -E '^(filename|version|description|license|source|srcversion|depends|name):' <<<"$info")"
modinfo_ok() {
	grep -q "^filename: *$MODDIR/extra/rtrs-client-rs.ko" <<<"$info" &&
		grep -qE '^version: +[0-9]+\.[0-9]+\.[0-9]+$' <<<"$info" &&
		grep -q '^description: *RDMA Transport Client (Rust)' <<<"$info" &&
		grep -q '^license: *GPL' <<<"$info" &&
		grep -qE '^source: +git [0-9a-f]{12}(-dirty)?$' <<<"$info"
}
tap_check "modinfo rtrs_client_rs: the installed file, with version, description, licence and source" modinfo_ok

start_server 65536
out=$(modprobe -v rnbd_client 2>&1); rc=$?
diag "modprobe -v rnbd_client:" "$out"
tap_check "modprobe rnbd_client (rc $rc) loads rtrs_client_rs, not rtrs_client ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.rs
dev=$(map_rnbd inst /dev/ram0)
if [ -b "$dev" ] && [ -d /sys/class/rtrs-client/inst ]; then
	tap_ok "map_device over the installed module gives $dev"
else
	tap_not_ok "map_device over the installed module"; diag "$(dmesg | tail -n 20)"
fi
tap_check "verified IO through it" fio_verify "$dev" 4k 4M
unmap_rnbd inst
unload_all
# A request for the C client by name gets this one (the drop-in's line).
out=$(modprobe -v rtrs_client 2>&1); rc=$?
diag "modprobe -v rtrs_client:" "$out"
tap_check "modprobe rtrs_client (rc $rc) loads rtrs_client_rs by way of the drop-in ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.rs
unload_all

# --- the way back -----------------------------------------------------------------
# The drop-in's documented switch to the C client, module still installed.
cp "$CONF" /tmp/conf.orig
sed -i -e 's/^install rtrs_client /#&/' -e 's/^#install rtrs_client_rs /install rtrs_client_rs /' "$CONF"
out=$(modprobe -v rnbd_client 2>&1); rc=$?
diag "$out"
tap_check "drop-in switched to the C client: modprobe rnbd_client (rc $rc) loads rtrs_client ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.c
dev=$(map_rnbd back /dev/ram0)
tap_check "and maps over it" test -b "$dev"
unmap_rnbd back
unload_all
cp /tmp/conf.orig "$CONF"
# The file is in place but the module is gone: the C client, and a log line.
mv "$MODDIR/extra/rtrs-client-rs.ko" /tmp/ && depmod -a "$KREL"
out=$(modprobe rnbd_client 2>&1); rc=$?
fell_back() {
	[ "$rc.$(loaded_client)" = 0.c ] &&
		dmesg | grep -q 'rtrs-client-rs: cannot load rtrs_client_rs, loading the in-tree rtrs_client'
}
tap_check "module gone, file in place: modprobe rnbd_client (rc $rc) falls back to the C client ($(loaded_client)) and logs it" fell_back
unload_all
mv /tmp/rtrs-client-rs.ko "$MODDIR/extra/" && depmod -a "$KREL"
out=$(as_sudo make -s -C "$RTRS_REPO" KDIR="$KDIR" uninstall 2>&1); rc=$?
uninstalled() {
	[ ! -e "$MODDIR/extra/rtrs-client-rs.ko" ] && [ ! -e "$CONF" ] && ! grep -q rtrs-client-rs "$MODDIR/modules.dep"
}
tap_check "make uninstall (rc $rc) removes the module and the modprobe.d file" uninstalled
out=$(modprobe rnbd_client 2>&1); rc=$?
tap_check "after uninstall, modprobe rnbd_client (rc $rc) loads the C client ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.c
unload_all

# --- DKMS -------------------------------------------------------------------------
if [ "$TIER" != full ]; then
	for d in "dkms-install builds and installs for $KREL" "modprobe rnbd_client loads the DKMS build" \
		"dkms-uninstall removes it"; do
		tap_skip "$d" "full tier (a module build under TCG takes minutes; tests/host/dkms.sh builds on the host)"
	done
else
	t=$(date +%s)
	out=$(as_sudo make -s -C "$RTRS_REPO" KDIR="$KDIR" dkms-install 2>&1); rc=$?
	diag "make dkms-install: rc $rc in $(( $(date +%s) - t )) s" "$(tail -n 12 <<<"$out")"
	ko=$(find "$MODDIR/updates" "$MODDIR/extra" -name 'rtrs-client-rs.ko*' 2>/dev/null | head -n 1)
	st=$(dkms status rtrs-client-rs 2>&1)
	dkms_installed() {
		[ $rc -eq 0 ] && [ -n "$ko" ] && grep -q 'installed' <<<"$st" && [ -f "$CONF" ] &&
			grep -q '^RUSTC := /.*/bin/rustc$' /usr/src/rtrs-client-rs-*/toolchain.mk
	}
	tap_check "dkms-install builds and installs for $KREL ($st; $ko)" dkms_installed
	out=$(modprobe rnbd_client 2>&1); rc=$?
	tap_check "modprobe rnbd_client (rc $rc) loads the DKMS build ($(loaded_client), $(modinfo -F filename rtrs_client_rs))" \
		test "$rc.$(loaded_client).$(modinfo -F filename rtrs_client_rs)" = "0.rs.$ko"
	unload_all
	out=$(as_sudo make -s -C "$RTRS_REPO" KDIR="$KDIR" dkms-uninstall 2>&1); rc=$?
	dkms_removed() {
		[ -z "$(find "$MODDIR" -name 'rtrs-client-rs.ko*')" ] && [ ! -e "$CONF" ] &&
			[ -z "$(dkms status rtrs-client-rs 2>/dev/null)" ]
	}
	tap_check "dkms-uninstall (rc $rc) removes the module and the drop-in" dkms_removed
fi

stop_server
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
