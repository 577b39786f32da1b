#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Fault-injection helpers for the VM tests (tests/lib-fault.sh).

Kernel addresses are 64-bit: bash arithmetic overflows on them, so the
address work is done here.

  fault.py range-module <module>     text range of a loaded module, "start end"
  fault.py range-kmemleak <vmlinux-objdir>
                                     text range of mm/kmemleak.o (its own metadata
                                     allocations are rejected by the stack filter)
  fault.py resync <attr-dir> <N>
                                     makes the attribute's hidden call count a
                                     multiple of N: see below
  fault.py save-raw <tracefs> <file>  drains the trace's ring buffer into file
  fault.py census <file> <start> <end> <rej-start> <rej-end> <slab|page|all> [pid]
                                     the allocations of a traced run that the filter
                                     passes, in order (see census())
  fault.py hits <dmesg-file> <mark> <module|*>
                                     the call path of each fault printed after mark
  fault.py nth-insmod <N> <ko> [params]
                                     finit_module with /proc/thread-self/fail-nth = N;
                                     prints "rc=<errno or 0> left=<fail-nth after>"

resync: failslab and fail_page_alloc count the calls that pass their filters in
a hidden counter when `interval` > 1, and fail a call when the counter reaches
a multiple of `interval`. The counter cannot be read or reset, and whatever
ran before (an earlier test in this boot, a run that did not fire) left it
anywhere. resync sets `interval` to N, points the stack filter at a system
call this process makes (eventfd2 for failslab, pipe writes for
fail_page_alloc), and makes calls until the fault fires: the counter is then
a multiple of N, so that with `interval` N the N-th call that passes the
filters next is the one that fails (fi_arm). The filter and the other
settings are restored.
"""
import bisect
import ctypes
import glob
import os
import re
import struct
import sys

PAGE = 4096


KSYMS_CACHE = "/run/rtrs-fault-kallsyms"


def kallsyms(modules=True):
    """Text symbols as (addr, name, module) sorted by address. The core
    kernel's are cached in KSYMS_CACHE (reading /proc/kallsyms is slow
    under TCG); modules=False reads only that cache once it exists."""
    if not modules and os.path.exists(KSYMS_CACHE):
        with open(KSYMS_CACHE) as f:
            return [(int(a, 16), n, "") for a, n in (line.split() for line in f)]
    out = []
    with open("/proc/kallsyms") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3 or parts[1] not in "tT":
                continue
            addr = int(parts[0], 16)
            if addr == 0:
                sys.exit("fault.py: /proc/kallsyms shows no addresses (kptr_restrict?)")
            mod = parts[3].strip("[]") if len(parts) > 3 else ""
            out.append((addr, parts[2], mod))
    # By address only (a stable sort): aliases (functions merged as
    # identical, common in the module's Rust generics) keep the order of
    # /proc/kallsyms, whose first is the name the kernel prints.
    out.sort(key=lambda s: s[0])
    core = [(a, n, m) for a, n, m in out if not m]
    if not os.path.exists(KSYMS_CACHE):
        tmp = KSYMS_CACHE + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(f"{a:x} {n}\n" for a, n, _ in core)
        os.rename(tmp, KSYMS_CACHE)
    return out if modules else core


def range_module(mod):
    """The module's text: its symbols' longest unbroken run in address
    order, up to the next symbol of anything else. (A text symbol of the
    module outside its text area, or another module's text between two of
    its symbols, would otherwise stretch the range over that module: C's
    rtrs_client's range once held rnbd_client's frames.)"""
    syms = kallsyms()
    runs = []
    for i, (a, _, m) in enumerate(syms):
        if m != mod:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    if not runs:
        sys.exit(f"fault.py: no text symbols of module {mod}")
    first, last = max(runs, key=lambda r: r[1] - r[0])
    # A module's text is its own page-aligned area followed by a guard page:
    # one page past the last symbol's page stays inside both.
    end = ((syms[last][0] + PAGE) & ~(PAGE - 1)) + PAGE
    if last + 1 < len(syms):
        end = min(end, syms[last + 1][0])
    return syms[first][0], end


def base_name(n):
    # clang's suffixes on local symbols (foo.llvm.123, foo.cold)
    return n.split(".")[0]


def range_kmemleak(objdir):
    path = os.path.join(objdir, "mm", "kmemleak.o")
    names = set()
    with os.popen(f"nm --defined-only '{path}'") as p:
        for line in p:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tT":
                names.add(base_name(parts[2]))
    if not names:
        sys.exit(f"fault.py: no text symbols in {path}")
    syms = [(a, n) for a, n, m in kallsyms(False)]
    # The exported kmemleak_* hooks sit in .ref.text and tail-call into
    # .text, where its metadata allocation happens (__alloc_object).
    idx = [i for i, (_, n) in enumerate(syms) if base_name(n) in ("__alloc_object", "__create_object")]
    if not idx:
        sys.exit("fault.py: no __alloc_object or __create_object in /proc/kallsyms")
    lo = hi = idx[0]
    while lo > 0 and base_name(syms[lo - 1][1]) in names:
        lo -= 1
    while hi + 1 < len(syms) and base_name(syms[hi + 1][1]) in names:
        hi += 1
    if hi + 1 >= len(syms):
        sys.exit("fault.py: kmemleak's text runs to the end of the kernel")
    return syms[lo][0], syms[hi + 1][0]


def sym_range(name):
    syms = [(a, n) for a, n, m in kallsyms(False)]
    for i, (a, n) in enumerate(syms):
        if n == name and i + 1 < len(syms):
            return a, syms[i + 1][0]
    sys.exit(f"fault.py: no symbol {name}")


def rd(d, f):
    with open(os.path.join(d, f)) as fh:
        return fh.read().strip()


def wr(d, f, v):
    with open(os.path.join(d, f), "w") as fh:
        fh.write(str(v))


def resync(attr, interval):
    if interval <= 1:
        return 0  # not counted: every count is a multiple of 1
    keep = {f: rd(attr, f) for f in ("require-start", "require-end", "times", "verbose")}
    page = attr.rstrip("/").endswith("fail_page_alloc")
    start, end = sym_range("pipe_write" if page else "__x64_sys_eventfd2")
    wr(attr, "times", 0)
    wr(attr, "verbose", 0)
    wr(attr, "require-start", hex(start))
    wr(attr, "require-end", hex(end))
    wr(attr, "interval", interval)
    wr(attr, "times", 1)
    calls = 0
    buf = b"x" * 64
    try:
        # Once the fault fired (times 0) the counter stands still: the
        # calls after it in a batch do not move it.
        while rd(attr, "times") != "0":
            if calls > 4 * interval + 100000:
                sys.exit(f"fault.py: resync of {attr} did not fire after {calls} calls")
            for _ in range(64):
                calls += 1
                try:
                    if page:
                        r, w = os.pipe()
                        os.write(w, buf)
                        os.close(r)
                        os.close(w)
                    else:
                        os.close(os.eventfd(0))
                except OSError:
                    pass
    finally:
        wr(attr, "times", 0)
        wr(attr, "require-start", keep["require-start"])
        wr(attr, "require-end", keep["require-end"])
        wr(attr, "verbose", keep["verbose"])
        wr(attr, "interval", 1)
    return calls


SLAB_MAX = 8192
TRACE_FLAG_IRQ = 0x08 | 0x10 | 0x40  # hardirq, softirq, NMI


FORMATS = ("kmem/kmalloc", "kmem/kmem_cache_alloc", "kmem/mm_page_alloc", "ftrace/kernel_stack")


def parse_format(text):
    """An event's id and its fields' (offset, size) from its format file."""
    eid, fields = None, {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ID:"):
            eid = int(line.split()[1])
        elif line.startswith("field:"):
            parts = [x.strip() for x in line.split(";") if x.strip()]
            name = parts[0].split()[-1].split("[")[0]
            fields[name] = (int(parts[1].split(":")[1]), int(parts[2].split(":")[1]))
    return eid, fields


def drain_raw(tracefs):
    """Each CPU's ring buffer pages (trace_pipe_raw, read until empty)."""
    pages = {}
    for d in sorted(glob.glob(os.path.join(tracefs, "per_cpu", "cpu*"))):
        cpu = int(d.rsplit("cpu", 1)[1])
        fd = os.open(os.path.join(d, "trace_pipe_raw"), os.O_RDONLY | os.O_NONBLOCK)
        out = []
        try:
            while True:
                try:
                    b = os.read(fd, PAGE)
                except BlockingIOError:
                    break
                if not b:
                    break
                out.append(b)
        finally:
            os.close(fd)
        pages[cpu] = out
    return pages


def records(page):
    """(timestamp, offset, length) of each data record of a buffer page."""
    ts, commit = struct.unpack_from("<QQ", page, 0)
    end = 16 + (commit & 0x3FFFFFFF)
    pos = 16
    while pos + 4 <= end:
        (hdr,) = struct.unpack_from("<I", page, pos)
        tlen, delta = hdr & 0x1F, hdr >> 5
        if tlen == 29:  # padding; no length: the rest of the page
            if delta == 0:
                break
            (ln,) = struct.unpack_from("<I", page, pos + 4)
            pos += 4 + ln
        elif tlen == 30:  # time extend
            (ext,) = struct.unpack_from("<I", page, pos + 4)
            ts += (ext << 27) | delta
            pos += 8
        elif tlen == 31:  # absolute time stamp (low 59 bits)
            (ext,) = struct.unpack_from("<I", page, pos + 4)
            ts = (ts & ~((1 << 59) - 1)) | (ext << 27) | delta
            pos += 8
        else:
            ts += delta
            if tlen == 0:
                (ln,) = struct.unpack_from("<I", page, pos + 4)
                yield ts, pos + 8, ln - 4
                pos += 4 + ln
            else:
                yield ts, pos + 4, tlen * 4
                pos += 4 + tlen * 4


def save_raw(tracefs, path):
    """The ring buffer's pages into a file (cpu, length, page each), with
    the kmem and kernel_stack event formats first."""
    ev = os.path.join(tracefs, "events")
    with open(path, "wb") as out:
        for name in FORMATS:
            with open(os.path.join(ev, name, "format"), "rb") as f:
                data = f.read()
            out.write(struct.pack("<II", 0xFFFFFFFF, len(data)) + data)
        n = 0
        for cpu, pages in drain_raw(tracefs).items():
            for page in pages:
                out.write(struct.pack("<II", cpu, len(page)) + page)
                n += 1
    return n


def load_raw(path):
    """save_raw's file: the formats by event id, and each CPU's pages."""
    fmts, pages = {}, {}
    with open(path, "rb") as f:
        data = f.read()
    pos, i = 0, 0
    while pos + 8 <= len(data):
        cpu, ln = struct.unpack_from("<II", data, pos)
        chunk = data[pos + 8:pos + 8 + ln]
        pos += 8 + ln
        if cpu == 0xFFFFFFFF:
            eid, fields = parse_format(chunk.decode())
            fmts[eid] = (FORMATS[i].split("/")[1], fields)
            i += 1
        else:
            pages.setdefault(cpu, []).append(chunk)
    return fmts, pages


def census(path, start, end, rstart, rend, mode, pid=None):
    """Allocations of a traced run (the kmem events, each with a stacktrace
    trigger, see lib-fault.sh) that failslab (mode slab), fail_page_alloc
    (page) or both (all: what fail-nth counts) would count with this
    filter, in order; each as its signature, the chain of return addresses
    inside [start, end): the call path through the client. With pid, only
    what that task allocated in task context (fail-nth). Reads the raw ring
    buffer (save_raw): printing the trace as text would look every frame up
    in kallsyms, which takes minutes under TCG."""
    fmts, bufs = load_raw(path)
    allocs = []
    for cpu, pages in bufs.items():
        waiting = []  # recorded allocations whose stack has not come yet
        for page in pages:
            for ts, off, ln in records(page):
                rec = page[off:off + ln]
                if len(rec) < 8:
                    continue
                etype, flags, _pc, epid = struct.unpack_from("<HBBi", rec, 0)
                f = fmts.get(etype)
                if f is None:
                    continue
                name, fields = f
                if name != "kernel_stack":
                    size = 0
                    if name != "mm_page_alloc":
                        # The size asked for: bytes_alloc is the cache's
                        # object with its debug padding (KASAN: kmalloc-8k
                        # takes 16 KiB), not what tells slab from pages.
                        o, _ = fields["bytes_req"]
                        (size,) = struct.unpack_from("<Q", rec, o)
                    waiting.append((ts, name, flags, epid, size))
                    continue
                if not waiting:
                    continue
                # The stack of the latest allocation on this CPU (an
                # interrupt's allocation and stack nest inside).
                ts0, ename, eflags, epid, size = waiting.pop()
                o, _ = fields["size"]
                (n,) = struct.unpack_from("<i", rec, o)
                o, _ = fields["caller"]
                n = max(0, min(n, (len(rec) - o) // 8))
                frames = struct.unpack_from("<%dQ" % n, rec, o)
                if ename == "kmalloc":
                    # A large one comes from the page allocator (its own event).
                    if mode == "page" or size > SLAB_MAX:
                        continue
                elif ename == "kmem_cache_alloc":
                    if mode == "page":
                        continue
                elif mode == "slab":
                    continue
                if pid is not None and (epid != pid or eflags & TRACE_FLAG_IRQ):
                    continue
                if any(rstart <= a < rend for a in frames):
                    continue
                sig = tuple(a for a in frames if start <= a < end)
                if sig:
                    allocs.append((ts0, cpu, sig))
    allocs.sort()
    return [sig for _, _, sig in allocs]


def symbolizer():
    """return address -> "symbol+0xoffset", from /proc/kallsyms, named as
    a stack dump names it (%pB, which hits() reads back): the symbol that
    holds address - 1 (a call that ends a function), of several at one
    address the first, as the kernel's lookup picks it."""
    syms = kallsyms()
    addrs = [a for a, _, _ in syms]

    def sym(a):
        i = bisect.bisect_right(addrs, a - 1) - 1
        if i < 0:
            return hex(a)
        i = bisect.bisect_left(addrs, addrs[i])
        return "%s+%#x" % (syms[i][1], a - syms[i][0])
    return sym


DUMP_RE = re.compile(r"^\[[ \d.]+\]\s+(\S+?)(?:/0x[0-9a-f]+)? \[(\S+)\]$")


def hits(path, mark, tag):
    """The call path (module frames, innermost first) of each fault that
    fail_dump printed after the line containing mark."""
    res = []
    on = False
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if mark in line:
                on = True
                continue
            if not on:
                continue
            if "FAULT_INJECTION: forcing a failure" in line:
                if cur is not None:
                    res.append(cur)
                cur = []
                continue
            if cur is None:
                continue
            if "</TASK>" in line:
                res.append(cur)
                cur = None
                continue
            m = DUMP_RE.match(line)
            # ORC's guesses ("? func") are not frames.
            if m and (tag == "*" or m.group(2) == tag):
                cur.append(m.group(1))
    if cur is not None:
        res.append(cur)
    return res


def nth_insmod(n, ko, params):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(ko, os.O_RDONLY)
    nth = os.open("/proc/thread-self/fail-nth", os.O_RDWR)
    os.write(nth, str(n).encode())
    # finit_module(fd, params, 0): x86_64 syscall 313.
    rc = libc.syscall(313, fd, params.encode(), 0)
    err = ctypes.get_errno() if rc != 0 else 0
    os.close(nth)
    with open("/proc/thread-self/fail-nth") as f:
        left = f.read().strip()
    # Disarm whatever is left before anything else runs in this thread.
    with open("/proc/thread-self/fail-nth", "w") as f:
        f.write("0")
    os.close(fd)
    print(f"rc={err} left={left}")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "range-module" and len(argv) == 3:
        s, e = range_module(argv[2])
        print(hex(s), hex(e))
    elif cmd == "range-kmemleak" and len(argv) == 3:
        s, e = range_kmemleak(argv[2])
        print(hex(s), hex(e))
    elif cmd == "resync" and len(argv) == 4:
        print(resync(argv[2], int(argv[3])))
    elif cmd == "save-raw" and len(argv) == 4:
        print(save_raw(argv[2], argv[3]))
    elif cmd == "census" and len(argv) in (8, 9):
        a = [int(x, 16) for x in argv[3:7]]
        allocs = census(argv[2], *a, argv[7], int(argv[8]) if len(argv) == 9 else None)
        # The total, then the first allocation of each call path:
        # "N n site path": its index, its index among the allocations made
        # through its innermost call site in the client (the return address
        # "site": a filter on exactly that address counts those alone, so
        # the fault lands there whatever runs beside it), and its path.
        print(len(allocs))
        seen = set()
        through = {}
        sym = symbolizer()
        for i, sig in enumerate(allocs, 1):
            for a in set(sig):
                through[a] = through.get(a, 0) + 1
            if sig not in seen:
                seen.add(sig)
                print(i, through[sig[0]], hex(sig[0]), " < ".join(sym(x) for x in sig))
    elif cmd == "hits" and len(argv) == 5:
        for h in hits(argv[2], argv[3], argv[4]):
            print(" < ".join(h) if h else "-")
    elif cmd == "nth-insmod" and len(argv) >= 4:
        nth_insmod(int(argv[2]), argv[3], " ".join(argv[4:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
