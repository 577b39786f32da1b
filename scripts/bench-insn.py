#!/usr/bin/env python3
"""Exact instructions per IO: the bench's insn section, C against this module.

  scripts/bench-insn.py <bench dir> [<out.md>]

<bench dir> (scripts/bench-vm.sh, BENCH_SECTIONS=insn, in a VM under the TCG
plugin scripts/qemu-insn-count.c) holds:
  insn.tsv      one line per run: client, round, server mode (inv), cell,
                the client's module, the client load it ran in, the plugin's
                dump number, the rnbd device's completed IOs in the window and
                whether fio still ran at the dump
  insn.dump     the plugin's file (or insn.dump.gz): "# reset N", then
                "# dump N", lines "<addr hex> <count> <calls> <locked>", and
                "# end N <lines>"
  raw/insn-kallsyms-kernel.txt   the kernel's own symbols (/proc/kallsyms)
  raw/insn-kallsyms-<load>.txt   the modules' symbols during that load
  raw/insn-modules-<load>.txt    /proc/modules during that load

Each executed address goes to the text symbol at or below it (the load's
kallsyms), and to that symbol's module ("kernel" for the kernel's own); a
module address past the module's extent (/proc/modules) goes to "?". Per run:
instructions / IOs for the whole kernel, the client's module (rtrs_client for
C, rtrs_client_rs for rs and rs2), rtrs_core (shared with the server, which
runs in the same guest) and rnbd_client; the client module's calls and locked
instructions per IO; its symbols. Over the rounds: the median and the spread
(max - min) / median. Ratio: rs (or rs2) over C, of the client modules.

Symbols are demangled with rustfilt if installed, else c++filt (both read
Rust's v0 and legacy manglings), without crate hashes ([..]) and legacy
::h<hash> suffixes.

Exit status 1 when a run's dump is missing or malformed, its IO count is not
positive, or fio ended before its dump (those runs are left out and named on stderr); 2 on usage.
"""
import bisect
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

OWN = {"c": "rtrs_client", "rs": "rtrs_client_rs", "rs2": "rtrs_client_rs"}
TOP = 15


def err(msg):
    print("bench-insn: " + msg, file=sys.stderr)


def read_tsv(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, l.rstrip("\n").split("\t"))) for l in f if l.strip()]


def read_syms(path):
    """[(addr, name, module)] of the text symbols of a kallsyms file."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 3 or p[1] not in "tTwW":
                continue
            try:
                a = int(p[0], 16)
            except ValueError:
                continue
            if a == 0:
                continue
            mod = p[3].strip("[]") if len(p) > 3 else "kernel"
            out.append((a, p[2], mod))
    return out


def read_modules(path):
    """{module: (base, size)} from /proc/modules."""
    mods = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 6:
                    try:
                        mods[p[0]] = (int(p[5], 16), int(p[1]))
                    except ValueError:
                        pass
    except OSError:
        pass
    return mods


class SymTab:
    def __init__(self, syms, mods):
        syms = sorted(set(syms))
        self.addr = [s[0] for s in syms]
        self.name = [s[1] for s in syms]
        self.mod = [s[2] for s in syms]
        self.mods = mods
        self.cache = {}

    def lookup(self, a):
        """(module, symbol) of address a."""
        r = self.cache.get(a)
        if r is not None:
            return r
        i = bisect.bisect_right(self.addr, a) - 1
        if i < 0:
            r = ("?", "?")
        else:
            mod = self.mod[i]
            ext = self.mods.get(mod)
            if mod != "kernel" and ext and not (ext[0] <= a < ext[0] + ext[1]):
                r = ("?", "?")
            else:
                r = (mod, self.name[i])
        self.cache[a] = r
        return r


def open_dump(d):
    p = os.path.join(d, "insn.dump")
    if os.path.exists(p):
        return open(p, errors="replace")
    if os.path.exists(p + ".gz"):
        return gzip.open(p + ".gz", "rt", errors="replace")
    return None


def read_dumps(d, want):
    """{dump number: [(addr, count, calls, locked)]} for the numbers in want;
    a dump counts only when its reset came just before it and its "# end"
    line has its line count. Also the list of problems found."""
    dumps, problems = {}, []
    f = open_dump(d)
    if f is None:
        return dumps, ["no insn.dump in %s" % d]
    cur, rows, last_reset = None, None, None
    with f:
        for line in f:
            if line.startswith("#"):
                p = line.split()
                if len(p) >= 3 and p[1] == "reset":
                    last_reset = int(p[2])
                elif len(p) >= 3 and p[1] == "dump":
                    cur = int(p[2])
                    if last_reset != cur:
                        problems.append("dump %d without its reset" % cur)
                        cur = None
                    else:
                        rows = [] if cur in want else None
                elif len(p) >= 4 and p[1] == "end":
                    n, lines = int(p[2]), int(p[3])
                    if cur == n and rows is not None:
                        if len(rows) == lines:
                            dumps[n] = rows
                        else:
                            problems.append("dump %d: %d lines, its end says %d" % (n, len(rows), lines))
                    cur, rows, last_reset = None, None, None
                continue
            if rows is None:
                continue
            p = line.split()
            if len(p) != 4:
                problems.append("dump %s: bad line %r" % (cur, line.strip()))
                rows = None
                continue
            try:
                rows.append((int(p[0], 16), int(p[1]), int(p[2]), int(p[3])))
            except ValueError:
                problems.append("dump %s: bad line %r" % (cur, line.strip()))
                rows = None
    if cur is not None and rows is not None:
        problems.append("dump %d has no end (cut off)" % cur)
    return dumps, problems


def demangle_all(names):
    """{name: readable name}."""
    names = sorted(set(names))
    out = {n: n for n in names}
    tool = shutil.which("rustfilt") or shutil.which("c++filt")
    cand = [n for n in names if n.startswith(("_R", "_ZN"))]
    if tool and cand:
        try:
            res = subprocess.run([tool], input="\n".join(cand) + "\n", capture_output=True,
                                 text=True, check=True).stdout.splitlines()
            if len(res) == len(cand):
                out.update(zip(cand, res))
        except (OSError, subprocess.CalledProcessError):
            pass
    for n in names:
        s = re.sub(r"\[[0-9a-f]+\]", "", out[n])
        s = re.sub(r"::h[0-9a-f]{16}$", "", s)
        out[n] = s
    return out


def med(xs):
    return statistics.median(xs) if xs else None


def spread(xs):
    m = med(xs)
    if not xs or not m:
        return None
    return (max(xs) - min(xs)) / m


def fnum(x, nd=0):
    if x is None:
        return "-"
    return "{:,.{}f}".format(x, nd)


def fpct(x):
    return "-" if x is None else "%.1f%%" % (100 * x)


def analyse(d):
    """(runs with their figures, problems)."""
    rows = read_tsv(os.path.join(d, "insn.tsv"))
    want = set()
    for r in rows:
        try:
            want.add(int(r["dump"]))
        except (KeyError, ValueError):
            pass
    dumps, problems = read_dumps(d, want)
    raw = os.path.join(d, "raw")
    kern = read_syms(os.path.join(raw, "insn-kallsyms-kernel.txt"))
    tabs = {}
    runs = []
    for r in rows:
        rid = r.get("id", "?")
        try:
            n = int(r["dump"])
            ios = float(r["ios"])
        except (KeyError, ValueError):
            problems.append("%s: bad line in insn.tsv" % rid)
            continue
        if n not in dumps:
            problems.append("%s: dump %d missing" % (rid, n))
            continue
        if ios <= 0:
            problems.append("%s: %s IOs in the window" % (rid, r["ios"]))
            continue
        if r.get("fio_alive", "1") != "1":
            problems.append("%s: fio ended before the dump" % rid)
            continue
        load = r["load"]
        if load not in tabs:
            tabs[load] = SymTab(kern + read_syms(os.path.join(raw, "insn-kallsyms-%s.txt" % load)),
                                read_modules(os.path.join(raw, "insn-modules-%s.txt" % load)))
        tab = tabs[load]
        own = r.get("module") or OWN.get(r["client"], "?")
        by_mod = defaultdict(int)
        own_syms = defaultdict(int)
        calls = locked = total = 0
        for a, c, ca, lk in dumps[n]:
            mod, sym = tab.lookup(a)
            total += c
            by_mod[mod] += c
            if mod == own:
                own_syms[sym] += c
                calls += ca
                locked += lk
        runs.append({
            "id": rid, "client": r["client"], "round": r["round"], "inv": r["inv"],
            "cell": (r["rw"], r["bs"], int(r["qd"])), "module": own, "ios": ios,
            "total": total / ios, "own": by_mod.get(own, 0) / ios,
            "core": by_mod.get("rtrs_core", 0) / ios, "rnbd": by_mod.get("rnbd_client", 0) / ios,
            "calls": calls / ios, "locked": locked / ios,
            "syms": {s: v / ios for s, v in own_syms.items()},
        })
    return runs, problems


def report(d, runs, problems):
    meta = {}
    try:
        for l in open(os.path.join(d, "meta.txt")):
            k, _, v = l.strip().partition(" ")
            meta.setdefault(k, v)
    except OSError:
        pass
    groups = defaultdict(list)
    for r in runs:
        groups[(r["inv"], r["cell"], r["client"])].append(r)
    clients = [c for c in ("c", "rs", "rs2") if any(k[2] == c for k in groups)]
    invs = sorted({k[0] for k in groups}, reverse=True)
    cells = sorted({k[1] for k in groups}, key=lambda c: (c[2], c[1] != "4k", c[1], c[0]))
    names = demangle_all(s for r in runs for s in r["syms"])

    def stat(inv, cell, cl, key):
        xs = [r[key] for r in groups.get((inv, cell, cl), [])]
        return med(xs), spread(xs), len(xs)

    md = ["# Instructions per IO, C against this module (exact counts)", ""]
    md.append("%s; kernel %s; commit %s; module %s. Guest kernel instructions counted exactly "
              "by a QEMU TCG plugin (scripts/qemu-insn-count.c), by address, over a window "
              "of %s s per run after a %s s ramp; fio over one path, 1 job; IOs from the rnbd "
              "device's /proc/diskstats around the window. Medians over rounds, spread = "
              "(max - min) / median."
              % (meta.get("date", "?"), meta.get("kernel", "?"), meta.get("commit", "?"),
                 meta.get("rs_version", "?"), meta.get("insn_secs", "?"), meta.get("ramp", "?")))
    md.append("")
    md.append("The client module: rtrs_client (C), rtrs_client_rs (rs, rs2). rtrs_core serves "
              "the server in the same guest too, and C's client calls it per IO; its column is "
              "everyone's.")
    md.append("")
    md.append("## Summary: the client module's instructions per IO")
    md.append("")
    others = [c for c in clients if c != "c"]
    share = "c" in clients and "rs" in clients
    hdr = "| server inv | cell | " + " | ".join(
        "%s insn/IO (spread, rounds)" % c for c in clients) + "".join(
        " | %s / C" % c for c in others)
    if share:
        hdr += " | C + its rtrs_core share | rs / that"
    md.append(hdr + " |")
    md.append("|" + "---|" * (2 + len(clients) + len(others) + (2 if share else 0)))
    summary = []
    for inv in invs:
        for cell in cells:
            vals = {cl: stat(inv, cell, cl, "own") for cl in clients}
            row = "| %s | %s %s QD %d |" % (inv.replace("inv=", ""), cell[0], cell[1], cell[2])
            for cl in clients:
                m, s, n = vals[cl]
                row += " %s (%s, %d) |" % (fnum(m), fpct(s), n) if n else " - |"
            for cl in clients:
                if cl == "c":
                    continue
                a, b = vals.get("c", (None,))[0], vals[cl][0]
                row += " %s |" % ("%.2f" % (b / a) if a and b is not None else "-")
            if share:
                # C's client calls rtrs_core per IO, this module does not: the
                # excess of rtrs_core's count with C over the one with rs is C's.
                c_own, rs_own = vals["c"][0], vals["rs"][0]
                cc, rc_ = stat(inv, cell, "c", "core")[0], stat(inv, cell, "rs", "core")[0]
                tot = c_own + max(0.0, cc - rc_) if None not in (c_own, cc, rc_) else None
                row += " %s | %s |" % (fnum(tot), "%.2f" % (rs_own / tot) if tot and rs_own is not None else "-")
            md.append(row)
            summary.append(row)
    md.append("")
    md.append("## Per client: instructions per IO by module")
    md.append("")
    md.append("| server inv | cell | client | kernel total | client module | rtrs_core | rnbd_client "
              "| calls/IO (module) | locked/IO (module) | spread module / total | rounds |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for inv in invs:
        for cell in cells:
            for cl in clients:
                if (inv, cell, cl) not in groups:
                    continue
                t, ts, n = stat(inv, cell, cl, "total")
                o, os_, _ = stat(inv, cell, cl, "own")
                md.append("| %s | %s %s QD %d | %s | %s | %s | %s | %s | %s | %s | %s / %s | %d |" % (
                    inv.replace("inv=", ""), cell[0], cell[1], cell[2], cl, fnum(t), fnum(o),
                    fnum(stat(inv, cell, cl, "core")[0]), fnum(stat(inv, cell, cl, "rnbd")[0]),
                    fnum(stat(inv, cell, cl, "calls")[0], 1), fnum(stat(inv, cell, cl, "locked")[0], 1),
                    fpct(os_), fpct(ts), n))
    md.append("")
    md.append("## Top %d symbols of each client module, instructions per IO" % TOP)
    for cl in clients:
        for inv in invs:
            cs = [c for c in cells if (inv, c, cl) in groups]
            if not cs:
                continue
            per = {}
            for c in cs:
                acc = defaultdict(list)
                rs = groups[(inv, c, cl)]
                for r in rs:
                    for s, v in r["syms"].items():
                        acc[s].append(v)
                # A symbol missing from a round ran 0 times in it.
                per[c] = {s: med(v + [0.0] * (len(rs) - len(v))) for s, v in acc.items()}
            tot = defaultdict(float)
            for c in cs:
                for s, v in per[c].items():
                    tot[s] += v
            top = sorted(tot, key=lambda s: (-tot[s], s))[:TOP]
            md.append("")
            md.append("### %s (%s), server %s" % (cl, OWN[cl], inv))
            md.append("")
            md.append("| symbol | " + " | ".join("%s %s QD %d" % c for c in cs) + " |")
            md.append("|---|" + "---|" * len(cs))
            for s in top:
                md.append("| `%s` | " % names.get(s, s) + " | ".join(
                    fnum(per[c].get(s)) for c in cs) + " |")
    if problems:
        md.append("")
        md.append("## Problems")
        md.append("")
        for p in problems:
            md.append("- " + p)
    return md, summary


def main():
    if len(sys.argv) not in (2, 3):
        err("usage: bench-insn.py <bench dir> [<out.md>]")
        return 2
    d = sys.argv[1]
    if not os.path.exists(os.path.join(d, "insn.tsv")):
        err("no insn.tsv in %s" % d)
        return 1
    runs, problems = analyse(d)
    md, _ = report(d, runs, problems)
    text = "\n".join(md) + "\n"
    if len(sys.argv) == 3:
        with open(sys.argv[2], "w") as f:
            f.write(text)
    print(text, end="")
    for p in problems:
        err(p)
    return 1 if problems or not runs else 0


if __name__ == "__main__":
    sys.exit(main())
