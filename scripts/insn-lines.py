#!/usr/bin/env python3
"""Instructions per IO of one symbol, by source line and inlined call site.

  scripts/insn-lines.py <bench dir> <client> <cell> <symbol> <ko> <debug ko>
                        [--own DIR,...] [--depth N] [--annotate]

<bench dir> is an insn section's VM output (vm-insn/bench: insn.tsv,
insn.dump[.gz], raw/insn-kallsyms-<load>.txt; see scripts/bench-insn.py),
<client> c, rs or rs2, <cell> "<inv> <rw> <bs> <qd>" as in insn.tsv (for
example "N randread 4k 1"), <symbol> a substring of the mangled name of
the module function to look at (the first text symbol of the run's module
that contains it). <ko> is the module that ran (for rs, the bench's build:
the kernel cache's bench-module/rtrs-client-rs.ko), <debug ko> the same
source built with debug information, which the perf kernel's builds lack:

  make -C <copy of the source> KDIR=<perf kernel build> modules \\
      KRUSTFLAGS=-Cdebuginfo=2      (C: KCFLAGS=-g)

Debug information can change the code a little, so the two functions are
aligned instruction by instruction (by mnemonic and operands, addresses
left out) and each count moves to its match; an instruction of the debug
build without a match takes its fall-through predecessor's count, or the
next matched one's. "unmatched" says how many instructions per IO had no
partner in the debug build (they are left out).

Per round of the cell, the counts of the symbol's addresses are divided
by the run's IOs; the output is their mean over the rounds: the total,
then the instructions per IO by inlined call site, as a tree of the frames
whose file is under one of the --own directories (default rtrs_clt,
rtrs_core, rnbd_clt), outer to inner, down to --depth frames (default 6),
rows of at least 1.5; then by innermost own line. --annotate adds every
executed instruction with its count and its three innermost frames.

Exit status 1 when the cell, the symbol or the runs' dumps are not found, 2
on usage.
"""
import argparse
import collections
import difflib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "bench_insn", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-insn.py"))
bench_insn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_insn)

OWN_MOD = {"c": "rtrs_client", "rs": "rtrs_client_rs", "rs2": "rtrs_client_rs"}


def die(msg, rc=1):
    print("insn-lines: " + msg, file=sys.stderr)
    sys.exit(rc)


def func_range(ko, sub):
    """(name, start, size) of the first text symbol of ko containing sub."""
    out = subprocess.run(["nm", "-S", ko], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tT" and sub in p[3] and not p[3].startswith("__pfx_"):
            return p[3], int(p[0], 16), int(p[1], 16)
    return None


def disasm(ko, start, size):
    """[(offset, text, normalized text)] of the function's instructions."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                          "--start-address=%#x" % start, "--stop-address=%#x" % (start + size), ko],
                         capture_output=True, text=True).stdout
    ins = []
    for line in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s*(\S+)\s*(.*)", line)
        if m:
            ops = re.sub(r"\s+#.*$", "", m.group(3))
            norm = m.group(2) + " " + re.sub(r"0x[0-9a-f]+|[0-9a-f]{4,} <[^>]*>", "N", ops)
            ins.append((int(m.group(1), 16) - start, m.group(2) + " " + ops, norm))
    return ins


def frames(dko, addrs):
    """{address: [(function, file:line)], innermost first}, by addr2line -i."""
    res = {}
    if not addrs:
        return res
    out = subprocess.run(["addr2line", "-a", "-i", "-f", "-C", "-e", dko] + ["%#x" % a for a in addrs],
                         capture_output=True, text=True).stdout.splitlines()
    cur, pend = None, None
    for line in out:
        if re.match(r"^0x[0-9a-f]+$", line):
            cur = int(line, 16)
            res[cur] = []
            pend = None
        elif cur is not None:
            if pend is None:
                pend = line
            else:
                res[cur].append((pend, line.split(" ")[0]))
                pend = None
    return res


def short_fn(f):
    f = re.sub(r"\[[0-9a-f]+\]", "", f)
    while True:
        g = re.sub(r"<[^<>]*>", "", f)
        if g == f:
            break
        f = g
    parts = [p for p in f.split("::") if p]
    return parts[-1] if parts else f


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("dir")
    ap.add_argument("client")
    ap.add_argument("cell")
    ap.add_argument("symbol")
    ap.add_argument("ko")
    ap.add_argument("dko")
    ap.add_argument("--own", default="rtrs_clt,rtrs_core,rnbd_clt")
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--annotate", action="store_true")
    try:
        a = ap.parse_args()
    except SystemExit:
        sys.exit(2)
    cell = a.cell.split()
    if len(cell) != 4:
        die("cell is \"<inv> <rw> <bs> <qd>\"", 2)
    inv, rw, bs, qd = cell
    inv = inv if inv.startswith("inv=") else "inv=" + inv
    try:
        runs = bench_insn.read_tsv(os.path.join(a.dir, "insn.tsv"))
    except OSError as e:
        die(str(e))
    runs = [r for r in runs if r.get("client") == a.client and r.get("inv") in (inv, inv[4:])
            and r.get("rw") == rw and r.get("bs") == bs and r.get("qd") == qd]
    if not runs:
        die("no run of %s in cell %s" % (a.client, a.cell))
    f0, f1 = func_range(a.ko, a.symbol), func_range(a.dko, a.symbol)
    if not f0 or not f1:
        die("no text symbol containing %r in %s" % (a.symbol, a.ko if not f0 else a.dko))
    name, s0, sz0 = f0
    _, s1, sz1 = f1
    dumps, problems = bench_insn.read_dumps(a.dir, {int(r["dump"]) for r in runs})
    counts = collections.Counter()
    used = 0
    for r in runs:
        rows = dumps.get(int(r["dump"]))
        ios = float(r["ios"])
        mod = r.get("module") or OWN_MOD.get(a.client, "")
        base = None
        for addr, sym, m in bench_insn.read_syms(os.path.join(a.dir, "raw", "insn-kallsyms-%s.txt" % r["load"])):
            if sym == name and m == mod:
                base = addr
        if rows is None or ios <= 0 or base is None:
            print("insn-lines: %s: left out (dump, IOs or symbol missing)" % r["id"], file=sys.stderr)
            continue
        used += 1
        for addr, c, _, _ in rows:
            if base <= addr < base + sz0:
                counts[addr - base] += c / ios
    if not used:
        die("no usable run (%s)" % "; ".join(problems) if problems else "no usable run")
    for k in counts:
        counts[k] /= used
    A, B = disasm(a.ko, s0, sz0), disasm(a.dko, s1, sz1)
    sm = difflib.SequenceMatcher(None, [x[2] for x in A], [x[2] for x in B], autojunk=False)
    moved, matched = {}, set()
    for blk in sm.get_matching_blocks():
        for i in range(blk.size):
            moved[B[blk.b + i][0]] = counts.get(A[blk.a + i][0], 0.0)
            matched.add(A[blk.a + i][0])
    for i, (off, text, _) in enumerate(B):
        if off in moved or i == 0:
            continue
        prev = B[i - 1][1].split()[0]
        if not (prev == "jmp" or prev.startswith(("ret", "j"))):
            moved[off] = moved.get(B[i - 1][0], 0.0)
        else:
            nxt = next((B[j][0] for j in range(i + 1, len(B)) if B[j][0] in moved), None)
            moved[off] = moved.get(nxt, 0.0) if nxt is not None else 0.0
    total = sum(counts.values())
    unmatched = sum(c for off, c in counts.items() if off not in matched)
    hot = [off for off, _, _ in B if moved.get(off, 0.0) >= 0.05]
    fr = frames(a.dko, [s1 + off for off in hot])
    own = tuple("/%s/" % d.strip("/") for d in a.own.split(",") if d)
    tree, inner = collections.Counter(), collections.Counter()

    def rel(loc):
        for d in own:
            i = loc.find(d)
            if i >= 0:
                return loc[i + 1:]
        return None

    for off in hot:
        c = moved[off]
        fs = [(short_fn(f), rel(loc)) for f, loc in fr.get(s1 + off, [])]
        mine = [(f, l) for f, l in fs if l]
        inner[mine[0][1] if mine else "(outside --own)"] += c
        path = []
        for f, l in reversed(mine):
            path.append("%s@%s" % (f, l.split("/")[-1]))
            if len(path) <= a.depth:
                tree[tuple(path)] += c
    print("# %s: %.1f instructions per IO (%s, %s, %d round%s); unmatched %.1f"
          % (name, total, a.client, a.cell, used, "" if used == 1 else "s", unmatched))
    print("## by inlined call site (own frames, outer to inner)")
    for k in sorted(tree):
        if tree[k] >= 1.5:
            print("%7.1f %s%s" % (tree[k], "  " * (len(k) - 1), k[-1]))
    print("## by innermost own line")
    for k, c in inner.most_common():
        if c >= 1.5:
            print("%7.1f %s" % (c, k))
    if a.annotate:
        print("## instructions (debug build offsets)")
        text = {off: t for off, t, _ in B}
        for off in hot:
            fs = [l for _, l in fr.get(s1 + off, [])][:3]
            print("%7.2f %5x %-44s %s" % (moved[off], off, text[off][:44],
                                          " <- ".join(re.sub(r"^.*/(?=[^/]+/[^/]+$)", "", l) for l in fs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
