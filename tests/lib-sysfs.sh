#!/bin/bash
# Helpers for the /sys/class/rtrs-client ABI tests (tests/vm/60-sysfs-diff.sh,
# tests/vm/65-sysfs-hostile.sh). Source it after tests/lib.sh.
#
# Every read and write goes through a small python3 helper so that the bytes
# are exact (trailing spaces, NULs, non-UTF-8) and a write reports the errno
# of the write(2) itself, not the shell's idea of it. Reads are printed as a
# Python bytes repr without the b prefix: 'connected\n'. Volatile numbers are
# masked (see sysfs_read's masks) so that two runs, or the C and the Rust
# client, give the same transcript when they behave the same.

SYSFS_CLASS=/sys/class/rtrs-client
SYSFS_SESS=${SYSFS_SESS:-abi}
# Files this module has and C has not (sysfs/ABI.md, "Extensions"): left out
# of the transcripts, which compare the files C has; tests/vm/59 checks them.
SYSFS_EXT_RE='(^|/)stats/latency_hist$'
SYSFS_ADDR2=10.0.2.16          # secondary address on eth0, for a second path
PY=/usr/bin/python3

# The python helper. It runs as one coprocess (python3 starts slowly under
# TCG) and answers one line per request line; fields are tab-separated.
#   r MASK FILE          the file's bytes (masked)
#   show FILE            "R <file below the class> <mode> <masked content>"
#   w FILE INPUT         write INPUT (a name from INPUTS, or "s:<text>" with
#                        \n, \t, \0 and \xHH escapes) in one write(2): ok,
#                        ok(N) for a short write of N bytes, or the errno name
#   try FILE INPUT       "W <file> <input> -> <result> | <afterwards>"
#   par N FILE INPUT     N processes open FILE, start together, write INPUT
#                        once each: "P<N> <file> <input> -> <sorted results> | <afterwards>"
#   paths                the path directories and their states
#   inputs NAME          an input's length and first bytes
# Afterwards is the file's masked content, or for reconnect, disconnect,
# remove_path and add_path the session's paths and their states.
SYSFS_PY=$(cat <<'PYEOF'
import os, sys, errno, re, time

CLASS = '/sys/class/rtrs-client'
SESS = sys.argv[1]

def unesc(s):
    return s.encode('latin-1').decode('unicode_escape').encode('latin-1')

INPUTS = {
    'empty': b'',
    'ws': b' \t  \n',
    'nul-nl': b'\x00\n',
    'nl': b'\n',
    '4096x1': b'1' * 4096,
    '4096-1-nulpad': b'1\n' + b'\x00' * 4094,
    '4096-addr': b'ip:' + b'1' * 4093,
    '5000x1': b'1' * 5000,
    'non-utf8': b'\xff\xfe\x80',
    'non-utf8-1': b'1\xff',
    'neg': b'-1',
    'neg2': b'-2',
    'int-max+1': b'2147483648',
    'int-min-1': b'-2147483649',
    'uint-max+1': b'4294967296',
    'plus': b'+1',
    'hex': b'0x1',
    'octal': b'01',
    'lead-sp': b' 1',
    'trail-sp': b'1 ',
    'nl-nl': b'1\n\n',
    'crlf': b'1\r\n',
    'zero': b'0',
    'two': b'2',
}

def getin(name):
    if name.startswith('s:'):
        return unesc(name[2:])
    return INPUTS[name]

def ename(e):
    return errno.errorcode.get(e, 'E%d' % e)

def write1(path, data):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return 'open:' + ename(e.errno)
    try:
        n = os.write(fd, data)
        return 'ok' if n == len(data) else 'ok(%d)' % n
    except OSError as e:
        return ename(e.errno)
    finally:
        os.close(fd)

def par(n, path, data):
    rfd, wfd = os.pipe()
    res_r, res_w = os.pipe()
    kids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(wfd)
            try:
                fd = os.open(path, os.O_WRONLY)
            except OSError as e:
                fd = None; r = 'open:' + ename(e.errno)
            os.read(rfd, 1)                     # start together
            if fd is not None:
                try:
                    k = os.write(fd, data)
                    r = 'ok' if k == len(data) else 'ok(%d)' % k
                except OSError as e:
                    r = ename(e.errno)
                os.close(fd)
            os.write(res_w, (r + '\n').encode())
            os._exit(0)
        kids.append(pid)
    os.close(rfd)
    os.close(res_w)
    time.sleep(0.5)
    os.close(wfd)                               # EOF releases every child
    out = b''
    while True:
        c = os.read(res_r, 4096)
        if not c:
            break
        out += c
    os.close(res_r)
    for p in kids:
        os.waitpid(p, 0)
    return ' '.join(sorted(out.decode().split()))

def mask(kind, b):
    if kind == 'exact':
        return b
    s = b.decode('latin-1')
    if kind == 'num':            # every number -> N (counts, latencies)
        s = re.sub(r'[0-9]+', 'N', s)
    elif kind == 'zn':           # 0 stays 0, any other number -> N
        s = re.sub(r'[0-9]+', lambda m: '0' if int(m.group()) == 0 else 'N', s)
    elif kind == 'rdma':         # 4 counters zero/non-zero, inflight and failover exact
        f = s.split(' ')
        for i in range(min(4, len(f))):
            if f[i].isdigit():
                f[i] = '0' if int(f[i]) == 0 else 'N'
        s = ' '.join(f)
    return s.encode('latin-1')

def mask_of(path):
    base = os.path.basename(path)
    if base in ('cpu_migration_from', 'cpu_migration_to', 'cur_latency'):
        return 'num'             # keeps the CPU count and the trailing space
    if base == 'rdma':
        return 'rdma'
    return 'exact'

def rd(kind, path):
    try:
        with open(path, 'rb', buffering=0) as f:
            b = f.read()
    except OSError as e:
        return 'read:' + ename(e.errno)
    return repr(mask(kind, b))[1:]

def rel(path):
    return path[len(CLASS) + 1:] if path.startswith(CLASS + '/') else path

def paths():
    d = os.path.join(CLASS, SESS, 'paths')
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        return 'paths: ' + ename(e.errno)
    out = []
    for n in names:
        try:
            st = open(os.path.join(d, n, 'state')).read().strip()
        except OSError as e:
            st = ename(e.errno)
        out.append('%s=%s' % (n, st))
    return 'paths: ' + (' '.join(out) if out else 'none')

def after(path):
    if os.path.basename(path) in ('reconnect', 'disconnect', 'remove_path', 'add_path'):
        return paths()
    return rd(mask_of(path), path)

def show(path):
    try:
        mode = '%o' % (os.stat(path).st_mode & 0o7777)
    except OSError:
        mode = '-'
    return 'R %s %s %s' % (rel(path), mode, rd(mask_of(path), path))

def handle(a):
    c = a[0]
    if c == 'r':
        return rd(a[1], a[2])
    if c == 'show':
        return show(a[1])
    if c == 'w':
        return write1(a[1], getin(a[2]))
    if c == 'try':
        r = write1(a[1], getin(a[2]))
        return 'W %s %s -> %s | %s' % (rel(a[1]), a[2], r, after(a[1]))
    if c == 'par':
        r = par(int(a[1]), a[2], getin(a[3]))
        return 'P%s %s %s -> %s | %s' % (a[1], rel(a[2]), a[3], r, after(a[2]))
    if c == 'paths':
        return paths()
    if c == 'inputs':
        d = getin(a[1])
        return '%d:%r' % (len(d), d[:16])
    return 'bad request ' + c

for line in sys.stdin:
    a = line.rstrip('\n').split('\t')
    try:
        r = handle(a)
    except Exception as e:       # keep serving; the transcript shows it
        r = 'helper error: %r' % (e,)
    sys.stdout.write(r.replace('\n', ' ') + '\n')
    sys.stdout.flush()
PYEOF
)

# sysfs_helper_start: start the helper coprocess. Call it from the main
# shell before any sysfs_* call (one started inside $(...) dies with it).
sysfs_helper_start() {
	if [ -z "${SYSPY_PID:-}" ] || ! kill -0 "$SYSPY_PID" 2>/dev/null; then
		coproc SYSPY { "$PY" -u -c "$SYSFS_PY" "$SYSFS_SESS"; }
	fi
}

# sysfs_call <request fields...>: one request to the helper; the answer is
# left in SYSFS_REPLY.
sysfs_call() {
	sysfs_helper_start
	local IFS=$'\t'
	printf '%s\n' "$*" >&"${SYSPY[1]}"
	IFS= read -r SYSFS_REPLY <&"${SYSPY[0]}" || SYSFS_REPLY="helper died"
}

# sysfs_read <mask> <file>: prints the file's bytes, masked (exact|num|zn|rdma).
sysfs_read() { sysfs_call r "$1" "$2"; echo "$SYSFS_REPLY"; }
# sysfs_write <file> <input>: prints ok | ok(N) | errno name.
sysfs_write() { sysfs_call w "$1" "$2"; echo "$SYSFS_REPLY"; }
# sysfs_show <file>: prints "R <file> <mode> <content>".
sysfs_show() { sysfs_call show "$1"; echo "$SYSFS_REPLY"; }
# sysfs_try <file> <input>: prints "W <file> <input> -> <result> | <afterwards>".
sysfs_try() { sysfs_call try "$1" "$2"; echo "$SYSFS_REPLY"; }
# sysfs_try_par <n> <file> <input>: as sysfs_try with n simultaneous writers.
sysfs_try_par() { sysfs_call par "$1" "$2" "$3"; echo "$SYSFS_REPLY"; }
# sysfs_paths: prints "paths: <name>=<state> ...".
sysfs_paths() { sysfs_call paths; echo "$SYSFS_REPLY"; }

sysfs_sess_dir() { echo "$SYSFS_CLASS/$SYSFS_SESS"; }
# The first path's directory (the path rnbd opened with).
sysfs_path1() { echo "$SYSFS_CLASS/$SYSFS_SESS/paths/ip:$SRV_ADDR@ip:$SRV_ADDR"; }
# The path add_path creates for ip:$SYSFS_ADDR2 (source resolved to $SRV_ADDR).
sysfs_path2() { echo "$SYSFS_CLASS/$SYSFS_SESS/paths/ip:$SRV_ADDR@ip:$SYSFS_ADDR2"; }

# sysfs_tree: every entry below the session, with its type and mode, sorted.
sysfs_tree() {
	local d; d=$(sysfs_sess_dir)
	(cd "$d" && find . -mindepth 1 -printf '%y %m %P\n' | sort -k3) |
		awk -v re="$SYSFS_EXT_RE" '$3 !~ re' | sed 's/^/T /'
}

# sysfs_read_all [regex]: every regular file below the session (whose path
# matches regex), masked, in name order.
sysfs_read_all() {
	local d f files; d=$(sysfs_sess_dir)
	# No process substitution: the VM has no /dev/fd.
	local tmp; tmp=$(mktemp)
	find "$d/" -type f | sort > "$tmp"
	mapfile -t files < "$tmp"
	rm -f "$tmp"
	for f in "${files[@]}"; do
		[[ $f =~ $SYSFS_EXT_RE ]] && continue
		[[ -z "${1:-}" || $f =~ $1 ]] && sysfs_show "$f"
	done
}

# sysfs_add_ip2: the secondary address on eth0 that gives a second path to the
# same server (rtrs-server refuses a second path with the same address pair
# with EEXIST, and 127.0.0.1 has no RDMA device: ENODEV). rxe picks the new
# GID up asynchronously; wait until rdma_cm can resolve it.
sysfs_add_ip2() {
	ip addr show dev eth0 | grep -q "inet $SYSFS_ADDR2/" ||
		ip addr add "$SYSFS_ADDR2/24" dev eth0
	wait_gid "$SYSFS_ADDR2"
}

# sysfs_client_up <c|rs>: load the client stack. c = the in-tree rtrs-client
# (modprobe rnbd_client), rs = this repository's module (load_rnbd_rs).
sysfs_client_up() {
	case "$1" in
	c) modprobe rnbd_client ;;
	rs) load_rnbd_rs ;;
	*) echo "unknown client $1" >&2; return 2 ;;
	esac
}

# sysfs_client_down <c|rs>: unmap everything of the session and unload.
sysfs_client_down() {
	unmap_rnbd "$SYSFS_SESS" 2>/dev/null
	wait_for 30 test ! -e "$(sysfs_sess_dir)"
	case "$1" in
	c) unload_modules rnbd_client rtrs_client ;;
	rs) unload_modules rnbd_client rtrs_client_rs ;;
	esac
}

# sysfs_map: map /dev/ram0 in the session; prints the device.
sysfs_map() { map_rnbd "$SYSFS_SESS" /dev/ram0; }

# sysfs_fio <dev>: a short verified IO run; "fio ok" or "fio FAILED".
sysfs_fio() {
	if fio_verify "$1" 4k 512k >/dev/null 2>&1; then echo "fio ok"; else echo "fio FAILED"; fi
}

# sysfs_diff_or_fail <desc> <expected file> <actual file>: one TAP point.
sysfs_diff_or_fail() {
	local d
	if d=$(diff -u "$2" "$3"); then tap_ok "$1"; else tap_not_ok "$1"; diag "$d"; fi
}

# The C client's transcripts recorded in tests/golden (see its README).
# sysfs_use_golden <file> <client A>: the quick tier uses the recorded
# transcript instead of running the C half.
sysfs_use_golden() { [ "$RTRS_TIER" = quick ] && [ "$2" = c ] && [ -f "$1" ]; }
# sysfs_golden_point <file> <live transcript of A> <client A>: the full
# tier's check that the recorded transcript is still C's live one.
sysfs_golden_point() {
	local name d
	name=tests/golden/${1##*/}
	if [ "$RTRS_TIER" = quick ] || [ "$3" != c ]; then
		tap_skip "$name is the C client's live transcript" "full tier, with A = c"
	elif d=$(diff -u "$1" "$2" 2>&1); then
		tap_ok "$name is the C client's live transcript"
	else
		tap_not_ok "$name is the C client's live transcript (if C changed: copy $2 there)"
		diag "$d"
	fi
}
