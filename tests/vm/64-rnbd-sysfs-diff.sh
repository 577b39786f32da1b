#!/bin/bash
# The sysfs differential of rnbd-client-rs against C's rnbd-client, both over
# this module in the same boot: the files of /sys/class/rnbd-client/ctl and
# of a mapped disk's rnbd/ directory (names, modes, contents), the answer of
# each write to them (good and bad values: the errno, and the client's log
# line without its module prefix), and ctl/devices/. The transcripts must be
# identical. The C client's "L<line>" prefix and the disk's index are masked.
. "$(dirname "$0")/../lib.sh"
RNBD_RS_KO=$RTRS_REPO/rnbd_clt/rnbd-client-rs.ko
PLAN=8
skip_all_unless_api $PLAN
[ -f "$RNBD_RS_KO" ] || skip_all $PLAN "rnbd_clt is not built (make test-tools)"
tap_plan $PLAN
S=rdiff

tap_check "server side loads" start_server 65536
tap_check "rtrs-client-rs loads" sh -c "modprobe rtrs_core && insmod '$RS_KO'"

# transcript <out>: every file, and each write's answer, as the lines say.
transcript() {
	SRV_ADDR=$SRV_ADDR S=$S python3 - > "$1" <<'PYEOF'
import os, re, subprocess, errno, glob, time

CTL = '/sys/class/rnbd-client/ctl'
S = os.environ['S']
SRV = os.environ['SRV_ADDR']
PREFIX = re.compile(r'^(rnbd_client L\d+|rnbd_client_rs): ')

def kmsg_mark():
    m = 'rnbd-diff %d' % time.monotonic_ns()
    with open('/dev/kmsg', 'w') as f:
        f.write(m + '\n')
    return m

def logs_after(mark):
    out = subprocess.run(['dmesg', '--notime'], capture_output=True).stdout.decode(errors='replace')
    lines = out.splitlines()
    i = max((k for k, l in enumerate(lines) if mark in l), default=len(lines))
    res = []
    for l in lines[i + 1:]:
        if PREFIX.match(l):
            res.append(PREFIX.sub('', l))
    return res

def mask(s):
    return re.sub(r'rnbd\d+', 'rnbdN', s)

def show(path, name):
    st = os.stat(path)
    try:
        with open(path, 'rb') as f:
            c = repr(f.read())[2:-1]
    except OSError as e:
        c = 'read error ' + errno.errorcode[e.errno]
    print('R %s %o %s' % (name, st.st_mode & 0o777, mask(c)))

def write(path, name, data):
    mark = kmsg_mark()
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
            r = 'ok'
        finally:
            os.close(fd)
    except OSError as e:
        r = errno.errorcode[e.errno]
    time.sleep(0.2)
    print('W %s %r -> %s' % (name, data, r))
    for l in logs_after(mark):
        print('  L ' + mask(l))

def files(d, name):
    for f in sorted(os.listdir(d)):
        p = os.path.join(d, f)
        if os.path.isfile(p) and f not in ('uevent',):
            show(p, name + '/' + f)

files(CTL, 'ctl')
print('D ctl/devices: %s' % sorted(os.listdir(CTL + '/devices')))
for bad in [b'', b'sessname=' + S.encode(), b'device_path=/dev/ram0',
            b'sessname=%s path=bogus device_path=/dev/ram0' % S.encode(),
            b'sessname=%s dest_port=70000 device_path=/dev/ram0' % S.encode(),
            b'sessname=%s access_mode=RW device_path=/dev/ram0' % S.encode(),
            b'sessname=%s nr_poll_queues=-2 device_path=/dev/ram0' % S.encode(),
            b'sessname=%s foo=1 device_path=/dev/ram0' % S.encode(),
            b'sessname=%s device_path=/dev/ram0' % S.encode()]:
    write(CTL + '/map_device', 'map_device', bad)
good = b'sessname=%s path=ip:%s device_path=/dev/ram0 access_mode=ro' % (S.encode(), SRV.encode())
write(CTL + '/map_device', 'map_device', good)
disks = [d for d in glob.glob('/sys/block/rnbd*') if open(d + '/rnbd/session').read().strip() == S]
if not disks:
    print('no disk')
    raise SystemExit(0)
d = disks[0] + '/rnbd'
files(d, 'rnbd')
print('D ctl/devices: %s' % sorted(os.listdir(CTL + '/devices')))
write(CTL + '/map_device', 'map_device', good)
for f, v in [('unmap_device', b'bogus'), ('unmap_device', b'Normal'), ('resize', b'x'),
             ('resize', b' 1'), ('remap_device', b'2'), ('remap_device', b'1'),
             ('resize', b'131072\n')]:
    write(d + '/' + f, 'rnbd/' + f, v)
files(d, 'rnbd')
write(d + '/unmap_device', 'rnbd/unmap_device', b'normal\n')
time.sleep(1)
print('D ctl/devices: %s' % sorted(os.listdir(CTL + '/devices')))
PYEOF
}

load_c() { insmod "$(modinfo -n rnbd_client)"; }
load_r() { insmod "$RNBD_RS_KO"; }
# The unmap's session close runs in the rnbd client's work after the write
# returned, and the directory goes at its start: rmmod before the end (this
# module's "session closed") trips C's rnbd_client_exit WARN and runs freed
# code (an Oops in CI at 2016ac3).
for cl in c rs; do
	mark="rtrs-test: 64 $cl $$.$RANDOM"
	echo "$mark" > /dev/kmsg
	if [ $cl = c ]; then load_c; else load_r; fi
	transcript /tmp/rnbd-diff.$cl
	tap_check "$cl: the unmap closed the session before rmmod" \
		wait_for 60 _rs_closed_after "$mark" "$S"
	wait_for 60 _absent /sys/class/rtrs-client/$S
	unload_modules rnbd_client rnbd_client_rs
done
tap_check "C's transcript has its disk" sh -c "! grep -q '^no disk' /tmp/rnbd-diff.c && grep -q '^R rnbd/state 444' /tmp/rnbd-diff.c"
diag "$(wc -l < /tmp/rnbd-diff.c) lines in C's transcript"
if diff -u /tmp/rnbd-diff.c /tmp/rnbd-diff.rs > /tmp/rnbd-diff.out; then
	tap_ok "rnbd-client-rs's transcript is C's"
else
	tap_not_ok "rnbd-client-rs's transcript is C's"
	diag "$(head -n 80 /tmp/rnbd-diff.out)"
fi
tap_check "rtrs-client-rs unloads" unload_modules rtrs_client_rs
stop_server
tap_check "nothing left loaded" test -z "$(rtrs_modules_loaded)"
tap_done
