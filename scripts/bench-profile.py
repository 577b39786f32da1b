#!/usr/bin/env python3
"""Where the CPU goes per IO: the bench's profile section, C against this module.

  scripts/bench-profile.py <bench dir> [<out.md>]

<bench dir> holds runs.tsv and raw/ (scripts/bench-vm.sh, BENCH_SECTIONS=profile).
Each profile run is a fio run over one path with `perf record -a -e cpu-clock`
beside it; its raw/<id>.perf holds the sample counts by module and by symbol.
A symbol's CPU time per IO is samples / rate / (IOPS x seconds), in
microseconds, over both CPUs; the idle loop is left out. Medians over rounds,
with the spread (max - min) / median.

The client's own CPU per IO: this module's is its .ko's samples. C's is
rtrs_client.ko's plus its share of rtrs_core.ko, which the server uses too:
the rtrs_core time of the same cell with this module (whose client calls
rtrs_core only at map time) is taken as the server's, and the rest as C's
client's.

Rust symbols (v0 mangling, `_R...`) are shown as their path.
"""
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([\d.]+)%\s+(\d+)\s+(\S+)(?:\s+\[(.)\]\s+(.*?))?\s*$")
IDLE = re.compile(r"idle|safe_halt|native_halt|mwait|cpuidle|do_idle")
CLIENT_DSO = {"[rtrs_client]", "[rtrs_client_rs]", "[rtrs_core]"}
OWN_DSO = {"c": "[rtrs_client]", "rs": "[rtrs_client_rs]", "rs2": "[rtrs_client_rs]"}
KERNEL_DSO = {"[kernel.kallsyms]", "[kernel.vmlinux]"}


def demangle(sym):
    """The path of a Rust v0 symbol (`_RNvMs6_NtCs..._11rtrs_clt_rs4sessNtB5_4Sess5issue`
    -> `rtrs_clt_rs::sess::Sess::issue`): its identifiers in order, without
    the disambiguators, back references and generic arguments' details.
    Anything else as it is."""
    m = re.match(r"^_R([0-9A-Za-z_]+?)((?:\.[\w.]+)?)$", sym)
    if not m:
        return sym
    s, i, parts = m.group(1), 0, []
    while i < len(s):
        c = s[i]
        if c in "sB" and i + 1 < len(s):
            # A disambiguator or back reference: <base-62>_.
            j = s.find("_", i + 1)
            if j > 0 and re.fullmatch(r"[0-9A-Za-z]*", s[i + 1:j]):
                i = j + 1
                continue
        if c.isdigit():
            j = i
            while j < len(s) and s[j].isdigit():
                j += 1
            n = int(s[i:j])
            if j < len(s) and s[j] == "_":
                j += 1
            ident = s[j:j + n]
            if len(ident) == n and n > 0:
                parts.append(ident)
                i = j + n
                continue
        i += 1
    return "::".join(parts) if parts else sym


def parse_perf(path):
    """(hz, secs, {dso: samples}, {(dso, sym): samples}, idle samples)."""
    hz = secs = None
    dsos, syms, section, idle = {}, {}, None, 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("hz "):
            f = line.split()
            hz, secs = float(f[1]), float(f[3])
        elif line.startswith("## "):
            section = line[3:].strip()
        elif not line.startswith("#"):
            m = LINE.match(line)
            if not m:
                continue
            n, dso = int(m.group(2)), m.group(3)
            if section == "dso":
                dsos[dso] = dsos.get(dso, 0) + n
            elif section in ("sym", "client") and m.group(5) is not None:
                # Every symbol of the client modules comes from "client".
                if (section == "sym") == (dso in CLIENT_DSO):
                    continue
                sym = demangle(m.group(5))
                if dso in KERNEL_DSO and IDLE.search(sym):
                    idle += n
                else:
                    syms[(dso, sym)] = syms.get((dso, sym), 0) + n
    return hz, secs, dsos, syms, idle


def iops_of(raw, rid):
    try:
        j = json.load(open(raw / f"{rid}.json"))["jobs"][0]
        return j["read"]["iops"] + j["write"]["iops"]
    except (OSError, ValueError, KeyError, IndexError):
        return 0.0


def group(dso):
    if dso in CLIENT_DSO:
        return "rtrs modules (client; rtrs_core shared with the server)"
    if dso in KERNEL_DSO:
        return "kernel (idle left out)"
    if dso.startswith("["):
        return dso.strip("[]")
    return "user space (fio, libc)"


def med(xs):
    return statistics.median(xs) if xs else 0.0


def spread(xs):
    m = med(xs)
    return (max(xs) - min(xs)) / m if xs and m else 0.0


def main():
    bench = Path(sys.argv[1])
    raw = bench / "raw"
    runs = [line.rstrip("\n").split("\t") for line in open(bench / "runs.tsv")][1:]
    # per (mode, cell, client): rows of (per-group us/IO, per-dso us/IO,
    # per-symbol us/IO, iops)
    data = defaultdict(list)
    for r in runs:
        if len(r) < 11 or r[1] != "profile" or r[10] != "0":
            continue
        rid, cl, mode = r[0], r[2], r[5] if r[5] != "-" else "inv=Y"
        cell = f"{r[6]} {r[7]} QD {r[8]}"
        perf = raw / f"{rid}.perf"
        if not perf.exists():
            continue
        hz, secs, dsos, syms, idle = parse_perf(perf)
        iops = iops_of(raw, rid)
        if not hz or not iops:
            continue
        per_io = 1e6 / (hz * iops * secs)
        groups = defaultdict(float)
        for dso, n in dsos.items():
            groups[group(dso)] += n * per_io
        groups["kernel (idle left out)"] -= idle * per_io
        groups["all busy CPU"] = sum(v for k, v in groups.items())
        per_dso = {d: n * per_io for d, n in dsos.items()}
        symbols = {f"{d} {s}": n * per_io for (d, s), n in syms.items()}
        data[(mode, cell, cl)].append((groups, per_dso, symbols, iops))

    def own(mode, cell, cl):
        """The client's own us/IO per round (see the module's doc)."""
        rows = data.get((mode, cell, cl), [])
        vals = [row[1].get(OWN_DSO[cl], 0.0) for row in rows]
        if cl == "c":
            server_core = med([row[1].get("[rtrs_core]", 0.0)
                               for row in data.get((mode, cell, "rs"), [])])
            vals = [v + max(0.0, row[1].get("[rtrs_core]", 0.0) - server_core)
                    for v, row in zip(vals, rows)]
        return vals

    out = ["# Where the CPU goes per IO (one path, one job)", ""]
    out.append("CPU time per completed IO in microseconds, both CPUs, idle left out "
               "(perf cpu-clock samples / IOs; median over rounds, spread = (max - min) / median). "
               "Under TCG every figure is inflated alike; the ratios are what count.")
    keys = sorted({(k[0], k[1]) for k in data}, key=lambda k: (k[0], k[1]), reverse=True)
    out += ["", "## The client's own CPU per IO", "",
            "| server | cell | C us/IO | spread | this module us/IO | spread | ratio |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for mode, cell in keys:
        a, b = own(mode, cell, "c"), own(mode, cell, "rs")
        if not a or not b:
            continue
        ratio = med(b) / med(a) if med(a) else float("inf")
        out.append(f"| {mode} | {cell} | {med(a):.1f} | {spread(a):.0%} | "
                   f"{med(b):.1f} | {spread(b):.0%} | {ratio:.2f} |")
    if any(k[2] == "rs2" for k in data):
        out += ["", "## The second build (rs2, bench.sh's BENCH_RS2_REF) against this one", "",
                "| server | cell | this module us/IO | spread | rs2 us/IO | spread | rs2 / this | rs2 / C |",
                "|---|---|---:|---:|---:|---:|---:|---:|"]
        for mode, cell in keys:
            a, b, c0 = own(mode, cell, "rs"), own(mode, cell, "rs2"), own(mode, cell, "c")
            if not a or not b:
                continue
            r1 = med(b) / med(a) if med(a) else float("inf")
            r2 = med(b) / med(c0) if c0 and med(c0) else float("inf")
            out.append(f"| {mode} | {cell} | {med(a):.1f} | {spread(a):.0%} | "
                       f"{med(b):.1f} | {spread(b):.0%} | {r1:.2f} | {r2:.2f} |")
    for mode, cell in keys:
        c, rs = data.get((mode, cell, "c"), []), data.get((mode, cell, "rs"), [])
        if not c or not rs:
            continue

        def mcol(rows, idx, key):
            return med([row[idx].get(key, 0.0) for row in rows])
        out += ["", f"## {cell}, {mode}", "",
                f"IOPS during the profile: C {med([x[3] for x in c]):.0f}, "
                f"this module {med([x[3] for x in rs]):.0f} ({len(c)}/{len(rs)} rounds)", "",
                "| part | C us/IO | this module us/IO | difference |", "|---|---:|---:|---:|"]
        gkeys = sorted({k for row in c + rs for k in row[0]},
                       key=lambda k: (k != "all busy CPU", -max(mcol(c, 0, k), mcol(rs, 0, k))))
        for k in gkeys:
            a, b = mcol(c, 0, k), mcol(rs, 0, k)
            if max(a, b) < 1:
                continue
            out.append(f"| {k} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
        out += ["", "Symbols whose cost per IO differs most (either way):", "",
                "| symbol | C us/IO | this module us/IO | difference |", "|---|---:|---:|---:|"]
        syms = {k for row in c + rs for k in row[2]}
        diffs = sorted(syms, key=lambda k: (-abs(mcol(rs, 2, k) - mcol(c, 2, k)), k))[:25]
        for k in diffs:
            a, b = mcol(c, 2, k), mcol(rs, 2, k)
            out.append(f"| `{k}` | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
        for cl, rows in (("c", c), ("rs", rs)):
            total = med(own(mode, cell, cl)) or 1.0
            mods = sorted((k for k in syms if k.split(" ", 1)[0] == OWN_DSO[cl]),
                          key=lambda k: (-mcol(rows, 2, k), k))
            top = [(k, mcol(rows, 2, k)) for k in mods[:12] if mcol(rows, 2, k) > 0]
            name = "C" if cl == "c" else "this module"
            out += ["", f"The client module's own top symbols, {name} (share of its own time):", ""]
            out += [f"- `{k.split(' ', 1)[1]}` {v:.2f} us ({v / total:.0%})" for k, v in top] \
                or ["- (none sampled)"]
    text = "\n".join(out) + "\n"
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
