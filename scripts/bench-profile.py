#!/usr/bin/env python3
"""Where the CPU goes per IO: the bench's profile section, C against this module.

  scripts/bench-profile.py <bench dir> [<out.md>]

<bench dir> holds runs.tsv and raw/ (scripts/bench-vm.sh, BENCH_SECTIONS=profile).
Each profile run is a fio run over one path with `perf record -a -e cpu-clock`
beside it; its raw/<id>.perf holds the sample counts by module and by symbol.
A symbol's CPU time per IO is samples / rate / (IOPS x seconds), in
microseconds, over both CPUs; the idle loop is left out. Medians over rounds.
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
KERNEL_DSO = {"[kernel.kallsyms]", "[kernel.vmlinux]"}


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
                sym = m.group(5)
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
        return "rtrs client (C or this module; C's includes rtrs_core, which its server shares)"
    if dso in KERNEL_DSO:
        return "kernel (idle left out)"
    if dso.startswith("["):
        return dso.strip("[]")
    return "user space (fio, libc)"


def main():
    bench = Path(sys.argv[1])
    raw = bench / "raw"
    runs = [line.rstrip("\n").split("\t") for line in open(bench / "runs.tsv")][1:]
    # per (cell, client): list of (per-group us/IO, per-symbol us/IO, iops)
    data = defaultdict(list)
    for r in runs:
        if len(r) < 11 or r[1] != "profile" or r[10] != "0":
            continue
        rid, cl, cell = r[0], r[2], f"{r[6]} {r[7]} QD {r[8]}"
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
        symbols = {f"{d} {s}": n * per_io for (d, s), n in syms.items()}
        data[(cell, cl)].append((groups, symbols, iops))

    out = ["# Where the CPU goes per IO (one path, one job)", ""]
    out.append("CPU time per completed IO in microseconds, both CPUs, idle left out "
               "(perf cpu-clock samples / IOs; median over rounds). Under TCG every figure is "
               "inflated alike; the ratios are what count.")
    for cell in sorted({k[0] for k in data}, reverse=True):
        c, rs = data.get((cell, "c"), []), data.get((cell, "rs"), [])
        if not c or not rs:
            continue

        def med(rows, idx, key):
            return statistics.median(row[idx].get(key, 0.0) for row in rows)
        out += ["", f"## {cell}", "",
                f"IOPS during the profile: C {statistics.median(x[2] for x in c):.0f}, "
                f"this module {statistics.median(x[2] for x in rs):.0f} ({len(c)}/{len(rs)} rounds)", "",
                "| part | C us/IO | this module us/IO | difference |", "|---|---:|---:|---:|"]
        keys = sorted({k for row in c + rs for k in row[0]},
                      key=lambda k: (k != "all busy CPU", -max(med(c, 0, k), med(rs, 0, k))))
        for k in keys:
            a, b = med(c, 0, k), med(rs, 0, k)
            if max(a, b) < 1:
                continue
            out.append(f"| {k} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
        out += ["", "Symbols whose cost per IO differs most (either way):", "",
                "| symbol | C us/IO | this module us/IO | difference |", "|---|---:|---:|---:|"]
        syms = {k for row in c + rs for k in row[1]}
        diffs = sorted(syms, key=lambda k: (-abs(med(rs, 1, k) - med(c, 1, k)), k))[:25]
        for k in diffs:
            a, b = med(c, 1, k), med(rs, 1, k)
            out.append(f"| `{k}` | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
        for cl, rows in (("C", c), ("this module", rs)):
            mods = sorted((k for k in syms if k.split(" ", 1)[0] in CLIENT_DSO),
                          key=lambda k: (-med(rows, 1, k), k))
            top = [(k, med(rows, 1, k)) for k in mods[:12] if med(rows, 1, k) > 0]
            out += ["", f"The client module's own top symbols, {cl}:", ""]
            out += [f"- `{k.split(' ', 1)[1]}` {v:.1f} us" for k, v in top] or ["- (none sampled)"]
    text = "\n".join(out) + "\n"
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
