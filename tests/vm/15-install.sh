#!/bin/bash
# Installed as a user installs it, against the running (cached) kernel:
#  - `make install` (as sudo runs it) puts rtrs-client-rs.ko under the
#    kernel's extra/ (depmod) and the modprobe.d file; `modprobe rnbd_client`
#    then loads rtrs_client_rs and not the C rtrs_client, and a mapped device
#    moves verified data; `modprobe rtrs_client` loads rtrs_client_rs;
#  - the drop-in's documented switch back loads the C client with this module
#    still installed; `make uninstall` removes both; with the drop-in put back
#    but the module gone (as after a kernel update without DKMS) the drop-in
#    falls back to the C client and says so in the kernel log;
#  - `make dkms-install` (as sudo runs it): DKMS builds the module from
#    /usr/src for this kernel with the recorded toolchain, installs it, and
#    `modprobe rnbd_client` loads that build (the build runs in the VM, under
#    TCG: full tier only).
# The VM's root is read-only: /lib/modules/<release>, /etc/modprobe.d,
# /usr/src and /var/lib/dkms get writable copies first, as on a real host.
# The quick tier's verified IO is dd's (512 KB of random data written and
# read back with O_DIRECT, compared); the full tier runs fio over 1 MB.
# A process costs about 0.5 s under TCG: the checks use builtins where they can.
. "$(dirname "$0")/../lib.sh"
TIER=${RTRS_TIER:-full}
PLAN=16
skip_all_unless_api $PLAN
tap_plan $PLAN
KREL=$RTRS_KREL
MODDIR=/lib/modules/$KREL
CONF=/etc/modprobe.d/rtrs-client-rs.conf

# The writable copies: /tmp/w<dir with / as _> (the suite's reset unmounts
# those), tmpfs, each mounted over its directory; /usr/src and /var/lib/dkms
# start empty. Of $MODDIR the top level is copied (what install, uninstall
# and depmod write) and kernel/ links to the read-only original, which cp
# would take 6 s to copy under TCG; depmod and modprobe follow the link.
W_MODS=/tmp/w${MODDIR//\//_}
make_writable() {
	local orig=${RTRS_KMODS:-}/lib/modules/$KREL e top=()
	mkdir -p "$W_MODS" /tmp/w_etc_modprobe.d /tmp/w_usr_src /tmp/w_var_lib_dkms \
		"$MODDIR" /etc/modprobe.d /usr/src /var/lib/dkms || return 1
	if [ -d "$orig/kernel" ]; then
		for e in "$MODDIR"/*; do [ "${e##*/}" = kernel ] || top+=("$e"); done
		cp -a "${top[@]}" "$W_MODS/" && ln -sfn "$orig/kernel" "$W_MODS/kernel" || return 1
	else
		cp -a "$MODDIR/." "$W_MODS/" || return 1
	fi
	cp -a /etc/modprobe.d/. /tmp/w_etc_modprobe.d/ &&
		mount --bind "$W_MODS" "$MODDIR" && mount --bind /tmp/w_etc_modprobe.d /etc/modprobe.d &&
		mount --bind /tmp/w_usr_src /usr/src && mount --bind /tmp/w_var_lib_dkms /var/lib/dkms
}
make_writable
# The copies go with the test, however it ends (both tiers of make check
# run the next tests in this boot).
trap 'umount "$MODDIR" /etc/modprobe.d /usr/src /var/lib/dkms 2>/dev/null; rm -f /tmp/dd15.pat /tmp/dd15.back' EXIT
are_writable() {
	local d
	for d in "$MODDIR" /etc/modprobe.d /usr/src /var/lib/dkms; do : > "$d/.w" || return 1; done
	rm -f "$MODDIR/.w" /etc/modprobe.d/.w /usr/src/.w /var/lib/dkms/.w
}
tap_check "writable copies of $MODDIR, /etc/modprobe.d, /usr/src and /var/lib/dkms" are_writable
KDIR=$MODDIR/build
# As `sudo make ...` runs: root's HOME, a plain PATH without rustup's tools,
# SUDO_USER naming whoever owns the toolchain (here root, /root/.cargo).
as_sudo() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent SUDO_USER=root TERM=dumb "$@"; }

# say <text...>: diag without its sed.
say() {
	local t l
	for t in "$@"; do while IFS= read -r l; do echo "# $l"; done <<<"$t"; done
}
# has_line <string> <file>: a line of the file contains the string (grep -qF).
has_line() {
	local l
	[ -r "$2" ] || return 1
	while IFS= read -r l || [ -n "$l" ]; do [[ $l == *"$1"* ]] && return 0; done < "$2"
	return 1
}
# loaded_client: which RTRS client module is loaded ("rs", "c", "none", "both").
loaded_client() {
	local rs=0 c=0 m
	while read -r m _; do
		case $m in rtrs_client_rs) rs=1 ;; rtrs_client) c=1 ;; esac
	done < /proc/modules
	case $rs$c in 10) echo rs ;; 01) echo c ;; 00) echo none ;; *) echo both ;; esac
}
# dd_verify <dev> <KiB, a multiple of 256>: fresh random data written with
# O_DIRECT, read back with O_DIRECT and compared.
dd_verify() {
	local n=$(( $2 / 256 ))
	dd if=/dev/urandom of=/tmp/dd15.pat bs=256k count=$n status=none &&
		dd if=/tmp/dd15.pat of="$1" bs=256k oflag=direct status=none &&
		dd if="$1" of=/tmp/dd15.back bs=256k count=$n iflag=direct status=none &&
		cmp /tmp/dd15.pat /tmp/dd15.back
}
# The server side keeps rtrs_core.
unload_all() { unload_modules rnbd_client rtrs_client_rs rtrs_client; }

# --- make install ---------------------------------------------------------------
out=$(as_sudo make -s -C "$RTRS_REPO" KDIR="$KDIR" install 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -f "$MODDIR/extra/rtrs-client-rs.ko" ] && [ -f "$CONF" ] &&
	has_line 'extra/rtrs-client-rs.ko:' "$MODDIR/modules.dep"; then
	tap_ok "make install: extra/rtrs-client-rs.ko in modules.dep, $CONF installed"
else
	tap_not_ok "make install (rc $rc)"; say "$out"
fi
info=$(modinfo rtrs_client_rs 2>&1)
while IFS= read -r l; do
	case $l in filename:* | version:* | description:* | license:* | source:* | srcversion:* | depends:* | name:*) say "$l" ;; esac
done <<<"$info"
# Each field has a line of its own that matches.
modinfo_ok() {
	local l ok=
	local re_f="^filename: *$MODDIR/extra/rtrs-client-rs.ko" re_v='^version: +[0-9]+\.[0-9]+\.[0-9]+$'
	local re_d='^description: *RDMA Transport Client \(Rust\)' re_l='^license: *GPL'
	local re_s='^source: +git [0-9a-f]{12}(-dirty)?$'
	while IFS= read -r l; do
		[[ $l =~ $re_f ]] && ok+=f
		[[ $l =~ $re_v ]] && ok+=v
		[[ $l =~ $re_d ]] && ok+=d
		[[ $l =~ $re_l ]] && ok+=l
		[[ $l =~ $re_s ]] && ok+=s
	done <<<"$info"
	[[ $ok == *f* && $ok == *v* && $ok == *d* && $ok == *l* && $ok == *s* ]]
}
tap_check "modinfo rtrs_client_rs: the installed file, with version, description, licence and source" modinfo_ok

start_server 65536
out=$(modprobe -v rnbd_client 2>&1); rc=$?
say "modprobe -v rnbd_client:" "$out"
tap_check "modprobe rnbd_client (rc $rc) loads rtrs_client_rs, not rtrs_client ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.rs
dev=$(map_rnbd inst /dev/ram0)
if [ -b "$dev" ] && [ -d /sys/class/rtrs-client/inst ]; then
	tap_ok "map_device over the installed module gives $dev"
else
	tap_not_ok "map_device over the installed module"; say "$(dmesg | tail -n 20)"
fi
if [ "$TIER" = full ]; then
	tap_check "verified IO through it" fio_verify "$dev" 4k 1M
else
	tap_check "verified IO through it (dd, 512 KB)" dd_verify "$dev" 512
fi
unmap_rnbd inst
unload_all
# A request for the C client by name gets this one (the drop-in's line).
out=$(modprobe -v rtrs_client 2>&1); rc=$?
say "modprobe -v rtrs_client:" "$out"
tap_check "modprobe rtrs_client (rc $rc) loads rtrs_client_rs by way of the drop-in ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.rs
unload_all

# --- the way back -----------------------------------------------------------------
# The drop-in's documented switch to the C client, module still installed:
# its "install rtrs_client" line commented out, "install rtrs_client_rs" in.
mapfile -t conf_orig < "$CONF"
conf=()
for l in "${conf_orig[@]}"; do
	case $l in
	"install rtrs_client "*) conf+=("#$l") ;;
	"#install rtrs_client_rs "*) conf+=("${l#\#}") ;;
	*) conf+=("$l") ;;
	esac
done
printf '%s\n' "${conf[@]}" > "$CONF"
out=$(modprobe -v rnbd_client 2>&1); rc=$?
say "$out"
tap_check "drop-in switched to the C client: modprobe rnbd_client (rc $rc) loads rtrs_client ($(loaded_client))" \
	test "$rc.$(loaded_client)" = 0.c
dev=$(map_rnbd back /dev/ram0)
tap_check "and maps over it" test -b "$dev"
unmap_rnbd back
unload_all
printf '%s\n' "${conf_orig[@]}" > "$CONF"
out=$(as_sudo make -s -C "$RTRS_REPO" KDIR="$KDIR" uninstall 2>&1); rc=$?
uninstalled() {
	[ ! -e "$MODDIR/extra/rtrs-client-rs.ko" ] && [ ! -e "$CONF" ] && [ -f "$MODDIR/modules.dep" ] &&
		! has_line rtrs-client-rs "$MODDIR/modules.dep"
}
tap_check "make uninstall (rc $rc) removes the module and the modprobe.d file" uninstalled
# The file put back, the module gone (uninstall's depmod left it out): the C
# client, and a log line after this mark.
printf '%s\n' "${conf_orig[@]}" > "$CONF"
mark=$(kmsg_mark)
out=$(modprobe rnbd_client 2>&1); rc=$?
fell_back() {
	[ "$rc.$(loaded_client)" = 0.c ] &&
		dmesg_since "$mark" 'rtrs-client-rs: cannot load rtrs_client_rs, loading the in-tree rtrs_client'
}
tap_check "module gone, file in place: modprobe rnbd_client (rc $rc) falls back to the C client ($(loaded_client)) and logs it" fell_back
unload_all
rm -f "$CONF"
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
	say "make dkms-install: rc $rc in $(( $(date +%s) - t )) s" "$(tail -n 12 <<<"$out")"
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
