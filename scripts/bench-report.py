#!/usr/bin/env python3
"""The report of scripts/bench-vm.sh's runs: results.json, results.md and
bench.svg in the output directory.

    scripts/bench-report.py <bench dir (runs.tsv, raw/, meta.txt)> <out dir>

Per cell, each client's median over the rounds that succeeded, the min-max
of the rounds (the spread), and the ratio of the medians, this module over
C. A ratio is called above or below 1 only beyond the spread: this module's
worst round better than C's best, or its best worse than C's worst.
"""
import json
import os
import re
import statistics
import sys

USER_HZ = 100  # /proc/stat ticks per second


def load_runs(d):
    runs = []
    with open(os.path.join(d, "runs.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            v = line.rstrip("\n").split("\t")
            r = dict(zip(head, v + [""] * (len(head) - len(v))))
            extra = {}
            for kv in r.get("extra", "").split():
                k, _, val = kv.partition("=")
                extra[k] = val
            r["extra"] = extra
            runs.append(r)
    return runs


def fio_json(d, rid):
    p = os.path.join(d, "raw", rid + ".json")
    try:
        t = open(p).read()
        return json.JSONDecoder().raw_decode(t[t.index("{"):])[0]
    except (OSError, ValueError):
        return None


def run_metrics(d, rid):
    """fio_metrics of a run's JSON, or None when it is missing or malformed."""
    j = fio_json(d, rid)
    if j is None:
        return None
    try:
        return fio_metrics(j)
    except (KeyError, IndexError, TypeError):
        return None


def fio_err(d, rid):
    p = os.path.join(d, "raw", rid + ".err")
    try:
        lines = [l.strip() for l in open(p) if l.strip()]
    except OSError:
        return ""
    keep = [l for l in lines if "error" in l.lower() or "err=" in l][:3]
    return " | ".join(keep or lines[:2])


def fio_metrics(j):
    """IOPS, bandwidth (KiB/s), clat p50/p99/p99.9 and max (us), IOs, error."""
    job = j["jobs"][0]
    iops = bw = ios = 0.0
    pct = {}
    lat_max = 0.0
    for dirn in ("read", "write"):
        s = job[dirn]
        iops += s["iops"]
        bw += s["bw"]
        ios += s.get("total_ios", 0)
        if s.get("total_ios", 0) > 0:
            p = s["clat_ns"].get("percentile", {})
            for k, name in (("50.000000", "p50"), ("99.000000", "p99"), ("99.900000", "p999")):
                if k in p:
                    pct[name] = max(pct.get(name, 0.0), p[k] / 1000.0)
            lat_max = max(lat_max, s["clat_ns"]["max"] / 1000.0)
    return {
        "iops": iops,
        "bw_kib": bw,
        "p50_us": pct.get("p50"),
        "p99_us": pct.get("p99"),
        "p999_us": pct.get("p999"),
        "max_us": lat_max,
        "ios": ios,
        "error": job.get("error", 0),
    }


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(rounds):
    """rounds: list of metric dicts of successful runs."""
    out = {"rounds": len(rounds)}
    if not rounds:
        return out
    for k in ("iops", "bw_kib", "p50_us", "p99_us", "p999_us", "cpu_us_per_io"):
        m = med([r.get(k) for r in rounds])
        if m is not None:
            out[k] = round(m, 2)
    iops = [r["iops"] for r in rounds]
    out["iops_min"] = round(min(iops), 1)
    out["iops_max"] = round(max(iops), 1)
    return out


def verdict(c, rs):
    if not c.get("rounds") or not rs.get("rounds"):
        return None, "n/a"
    ratio = rs["iops"] / c["iops"] if c["iops"] else None
    if rs["iops_min"] > c["iops_max"]:
        v = "faster"
    elif rs["iops_max"] < c["iops_min"]:
        v = "slower"
    else:
        v = "within spread"
    return (round(ratio, 3) if ratio else None), v


def cell_key(r):
    return (int(r["paths"]), r["policy"], r["rw"], r["bs"], int(r["qd"]), int(r["jobs"]))


def collect(d, runs, section, key=cell_key):
    """{key: {client: {"ok": [metrics], "fail": [errors]}}}."""
    cells = {}
    for r in runs:
        if r["section"] != section:
            continue
        k = key(r)
        slot = cells.setdefault(k, {}).setdefault(r["client"], {"ok": [], "fail": []})
        m = run_metrics(d, r["id"])
        ticks = r["extra"].get("cpu_ticks")
        if m is not None and ticks is not None and m["ios"] > 0:
            m["cpu_us_per_io"] = int(ticks) * (1e6 / USER_HZ) / m["ios"]
        if r["rc"] == "0" and m is not None and not m["error"]:
            slot["ok"].append(m)
        else:
            err = fio_err(d, r["id"])
            if m is not None and m["error"]:
                err = "fio error %s%s" % (m["error"], (": " + err) if err else "")
            slot["fail"].append("rc %s%s" % (r["rc"], (": " + err) if err else ""))
            if m is not None:
                m["failed"] = True
                slot.setdefault("failed_metrics", []).append(m)
    return cells


def parse_perftest(path):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    for i, l in enumerate(lines):
        if l.strip().startswith("#bytes"):
            # Two-word columns: "BW peak[MB/sec]", "99% percentile[usec]".
            cols = []
            for t in l.split():
                if cols and (cols[-1] == "BW" or cols[-1].endswith("%")):
                    cols[-1] += " " + t
                else:
                    cols.append(t)
            for row in lines[i + 1:]:
                nums = row.split()
                if nums and nums[0].isdigit():
                    return dict(zip(cols, nums))
    return None


def fmt(x, nd=0):
    if x is None:
        return "-"
    if nd == 0:
        return "%d" % round(x)
    return ("%." + str(nd) + "f") % x


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    meta = {}
    try:
        for l in open(os.path.join(src, "meta.txt")):
            k, _, v = l.strip().partition(" ")
            meta[k] = v
    except OSError:
        pass
    runs = load_runs(src)
    res = {"meta": meta}
    md = []
    md.append("# Benchmark: rtrs-client-rs against the C rtrs-client")
    md.append("")
    md.append("%s; kernel %s (perf flavour: no KASAN, lockdep, kmemleak); guest %s CPUs, %s kB; "
              "host %s; %s rounds per cell, ABAB, %s s each after %s s ramp; fio %s; module %s."
              % (meta.get("date", "?"), meta.get("kernel", "?"), meta.get("cpus", "?"),
                 meta.get("mem_kb", "?"), meta.get("host", "?"), meta.get("rounds", "?"),
                 meta.get("runtime", "?"), meta.get("ramp", "?"), meta.get("fio", "?"),
                 meta.get("commit", "?")))
    md.append("")
    md.append("Ratio: this module's median IOPS over C's. Verdict: faster/slower only when "
              "every round of one beats every round of the other, else within spread. "
              "Latencies are fio's completion latency (clat) percentiles, medians over rounds.")
    md.append("")

    # --- ceiling ------------------------------------------------------------
    ceil = {}
    for k, v in collect(src, runs, "ceiling").items():
        s = summarize(v.get("local", {}).get("ok", []))
        if s.get("rounds"):
            ceil[(k[2], k[3], k[4], k[5])] = s
    verbs = {}
    for r in runs:
        if r["section"] == "verbs":
            row = parse_perftest(os.path.join(src, "raw", r["id"] + ".txt"))
            verbs[r["rw"].replace("_", " ")] = {"rc": r["rc"], "row": row}
    res["ceiling"] = {
        "local_fio": {"%s %s qd%d j%d" % k: v for k, v in ceil.items()},
        "verbs": verbs,
    }

    # --- matrix -------------------------------------------------------------
    cells = collect(src, runs, "matrix")
    rows = []
    for k in sorted(cells, key=lambda k: (k[0], k[1] != "-", k[1], k[2], k[3] != "4k", k[4], k[5])):
        v = cells[k]
        c = summarize(v.get("c", {}).get("ok", []))
        rs = summarize(v.get("rs", {}).get("ok", []))
        ratio, verd = verdict(c, rs)
        cl = ceil.get((k[2], k[3], k[4], k[5]))
        row = {
            "paths": k[0], "policy": k[1], "rw": k[2], "bs": k[3], "qd": k[4], "jobs": k[5],
            "c": c, "rs": rs, "ratio": ratio, "verdict": verd,
            "c_failures": v.get("c", {}).get("fail", []),
            "rs_failures": v.get("rs", {}).get("fail", []),
        }
        if v.get("rs2"):
            # bench.sh's BENCH_RS2_REF: another commit of this module.
            rs2 = summarize(v["rs2"].get("ok", []))
            row["rs2"] = rs2
            row["rs2_ratio"], row["rs2_verdict"] = verdict(c, rs2)
            row["rs2_vs_rs"], row["rs2_vs_rs_verdict"] = verdict(rs, rs2)
        if cl and cl.get("iops"):
            if c.get("iops"):
                row["c_of_ceiling"] = round(c["iops"] / cl["iops"], 3)
            if rs.get("iops"):
                row["rs_of_ceiling"] = round(rs["iops"] / cl["iops"], 3)
            row["ceiling_iops"] = cl["iops"]
        rows.append(row)
    res["matrix"] = rows

    def matrix_table(sel, title):
        md.append("## " + title)
        md.append("")
        md.append("| paths | policy | rw | bs | QD | jobs | C IOPS (min-max) | RS IOPS (min-max) | ratio | verdict "
                  "| C p50/p99/p99.9 us | RS p50/p99/p99.9 us | C, RS of ceiling |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if not sel(r):
                continue
            c, rs = r["c"], r["rs"]

            def iops(s, fails):
                if not s.get("rounds"):
                    return "failed: " + "; ".join(fails[:1]) if fails else "-"
                t = "%s (%s-%s)" % (fmt(s["iops"]), fmt(s["iops_min"]), fmt(s["iops_max"]))
                if fails:
                    t += ", %d failed: %s" % (len(fails), fails[0])
                return t

            def lat(s):
                if not s.get("rounds"):
                    return "-"
                return "%s/%s/%s" % (fmt(s.get("p50_us")), fmt(s.get("p99_us")), fmt(s.get("p999_us")))

            ceil_t = "-"
            if "ceiling_iops" in r:
                ceil_t = "%s, %s" % (fmt(r.get("c_of_ceiling"), 2), fmt(r.get("rs_of_ceiling"), 2))
            md.append("| %d | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                r["paths"], r["policy"], r["rw"], r["bs"], r["qd"], r["jobs"],
                iops(c, r["c_failures"]), iops(rs, r["rs_failures"]),
                fmt(r["ratio"], 2), r["verdict"], lat(c), lat(rs), ceil_t))
        md.append("")

    matrix_table(lambda r: r["paths"] == 1, "One path")
    matrix_table(lambda r: r["paths"] == 2, "Two paths, by policy")
    if any("rs2" in r for r in rows):
        md.append("## One path, the second build (rs2, BENCH_RS2_REF)")
        md.append("")
        md.append("| rw | bs | QD | jobs | C IOPS | RS IOPS | RS2 IOPS | RS2/C | verdict | RS2/RS | verdict |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r["paths"] != 1 or "rs2" not in r:
                continue
            md.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                r["rw"], r["bs"], r["qd"], r["jobs"], fmt(r["c"].get("iops")), fmt(r["rs"].get("iops")),
                fmt(r["rs2"].get("iops")), fmt(r["rs2_ratio"], 2), r["rs2_verdict"],
                fmt(r["rs2_vs_rs"], 2), r["rs2_vs_rs_verdict"]))
        md.append("")
    one = [r for r in rows if r["paths"] == 1 and r["ratio"] is not None]
    if one:
        n_f = sum(r["verdict"] == "faster" for r in one)
        n_s = sum(r["verdict"] == "slower" for r in one)
        md.append("One path: %d cells; this module faster beyond the spread in %d, slower in %d, "
                  "within the spread in %d; median ratio %.2f." % (
                      len(one), n_f, n_s, len(one) - n_f - n_s,
                      statistics.median(r["ratio"] for r in one)))
        md.append("")

    md.append("## The ceiling (same boot)")
    md.append("")
    md.append("fio on the server's brd disk directly (no RDMA, no client):")
    md.append("")
    md.append("| rw | bs | QD | jobs | IOPS |")
    md.append("|---|---|---|---|---|")
    for k in sorted(ceil):
        md.append("| %s | %s | %d | %d | %s |" % (k[0], k[1], k[2], k[3], fmt(ceil[k]["iops"])))
    md.append("")
    if verbs:
        md.append("Raw verbs over rxe_eth0 (perftest, rdma_cm):")
        md.append("")
        md.append("| test | result |")
        md.append("|---|---|")
        for t, v in verbs.items():
            row = v["row"]
            md.append("| %s | %s |" % (t, ", ".join("%s %s" % kv for kv in row.items()) if row else "failed (rc %s)" % v["rc"]))
        md.append("")

    # --- cpu ----------------------------------------------------------------
    cpu = collect(src, runs, "cpu")
    md.append("## CPU per IO at a fixed rate (%s IOPS), system+irq+softirq of the guest" % meta.get("cpu_rate", "?"))
    md.append("")
    md.append("| rw | C us/IO (IOPS) | RS us/IO (IOPS) | RS/C |")
    md.append("|---|---|---|---|")
    res["cpu"] = []
    for k in sorted(cpu):
        c = summarize(cpu[k].get("c", {}).get("ok", []))
        rs = summarize(cpu[k].get("rs", {}).get("ok", []))
        r = {"rw": k[2], "bs": k[3], "qd": k[4], "c": c, "rs": rs}
        res["cpu"].append(r)
        ratio = (rs["cpu_us_per_io"] / c["cpu_us_per_io"]) if c.get("cpu_us_per_io") and rs.get("cpu_us_per_io") else None
        md.append("| %s %s QD%d | %s (%s) | %s (%s) | %s |" % (
            k[2], k[3], k[4], fmt(c.get("cpu_us_per_io"), 1), fmt(c.get("iops")),
            fmt(rs.get("cpu_us_per_io"), 1), fmt(rs.get("iops")), fmt(ratio, 2)))
    md.append("")

    # --- scale --------------------------------------------------------------
    sc = collect(src, runs, "scale")
    scc = collect(src, runs, "scalecpu")
    res["scale"] = []
    if sc:
        md.append("## Scaling with paths (4k randread QD32, 1 job)")
        md.append("")
        md.append("IOPS at full speed, and CPU per IO at the fixed rate.")
        md.append("")
        md.append("| policy | paths | C IOPS | RS IOPS | C us/IO | RS us/IO |")
        md.append("|---|---|---|---|---|---|")
        for k in sorted(sc, key=lambda k: (k[1], k[0])):
            c = summarize(sc[k].get("c", {}).get("ok", []))
            rs = summarize(sc[k].get("rs", {}).get("ok", []))
            cc = summarize(scc.get(k, {}).get("c", {}).get("ok", []))
            rc = summarize(scc.get(k, {}).get("rs", {}).get("ok", []))
            res["scale"].append({"paths": k[0], "policy": k[1], "c": c, "rs": rs, "c_cpu": cc, "rs_cpu": rc})
            md.append("| %s | %d | %s | %s | %s | %s |" % (
                k[1], k[0], fmt(c.get("iops")), fmt(rs.get("iops")),
                fmt(cc.get("cpu_us_per_io"), 1), fmt(rc.get("cpu_us_per_io"), 1)))
        md.append("")

    # --- selection cost on the host -------------------------------------------
    def host_text(name, key, intro):
        try:
            text = open(os.path.join(os.path.dirname(src.rstrip("/")), "..", name)).read()
        except OSError:
            return
        if text.strip():
            res[key] = text
            md.extend([intro, "", "```", text.rstrip(), "```", ""])

    host_text("select_cost.txt", "select_cost_host",
              "Selection cost per request on the host (`rtrs_core/examples/select_cost.rs`, the "
              "policy code the module runs, each path's fields on their own cache line):")
    host_text("select_flat.txt", "select_flat_host",
              "Min-inflight's flat picks against its scan on the host, ns per request (pick, "
              "submit and completion), one thread and two issuing on one session "
              "(`rtrs_core/examples/select_tree.rs`, `select_lock.rs`):")

    # --- stall --------------------------------------------------------------
    st = {}
    for r in runs:
        if r["section"] != "stall":
            continue
        m = run_metrics(src, r["id"])
        e = st.setdefault((r["policy"], r["client"]), [])
        e.append({"rc": int(r["rc"]), "max_ms": round(m["max_us"] / 1000.0, 1) if m else None,
                  "error": (m or {}).get("error"), "err": fio_err(src, r["id"]) if r["rc"] != "0" else ""})
    res["stall"] = {"%s %s" % k: v for k, v in st.items()}
    if st:
        md.append("## Failover stall: longest completion under QD32 verified IO, one of two paths lost")
        md.append("")
        md.append("| what happens to path 2 | C | RS |")
        md.append("|---|---|---|")
        for kind in ("cut", "disconnect", "devloss"):
            def s(cl):
                v = st.get((kind, cl), [])
                return "; ".join(
                    ("%s ms" % fmt(x["max_ms"])) if x["rc"] == 0 else
                    ("failed (rc %d%s)" % (x["rc"], (", " + x["err"][:80]) if x["err"] else "")) for x in v) or "-"
            md.append("| %s | %s | %s |" % ({"cut": "cut silently", "disconnect": "sysfs disconnect",
                                             "devloss": "RDMA device deleted"}[kind], s("c"), s("rs")))
        md.append("")

    # --- memory -------------------------------------------------------------
    mem = {}
    for r in runs:
        if r["section"] != "memory":
            continue
        e = r["extra"]
        mem.setdefault((r["client"], r["round"]), []).append(
            (r["policy"], int(r["paths"]), {k: int(e.get(k, 0)) for k in ("slab", "sunreclaim", "vmalloc", "percpu")}))
    res["memory"] = []
    if mem:
        md.append("## Kernel memory (kB, after drop_caches; client and server share the kernel)")
        md.append("")
        md.append("| client | round | session (map of 1 path): SUnreclaim / vmalloc / percpu | per added path: SUnreclaim / vmalloc / percpu | paths |")
        md.append("|---|---|---|---|---|")
        for (cl, rd), pts in sorted(mem.items()):
            by = {}
            for label, n, v in pts:
                by.setdefault(label, []).append((n, v))
            loaded = by.get("loaded", [(0, None)])[0][1]
            mapped = by.get("mapped", [(1, None)])[0][1]
            added = by.get("added", [])
            if not loaded or not mapped:
                continue
            sess = {k: mapped[k] - loaded[k] for k in mapped}
            per = None
            n_last = 1
            if added:
                n_last, last = added[-1]
                if n_last > 1:
                    per = {k: round((last[k] - mapped[k]) / (n_last - 1), 1) for k in last}
            res["memory"].append({"client": cl, "round": rd, "session_kb": sess, "per_path_kb": per, "paths": n_last})
            md.append("| %s | %s | %s / %s / %s | %s | %d |" % (
                cl, rd, sess["sunreclaim"], sess["vmalloc"], sess["percpu"],
                ("%s / %s / %s" % (per["sunreclaim"], per["vmalloc"], per["percpu"])) if per else "-", n_last))
        md.append("")

    rnbd_rs_section(src, runs, meta, res, md)
    rnbd_rs_few_section(src, runs, meta, res, md)
    insn_section(out, md)

    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    write_svg(os.path.join(out, "bench.svg"), rows, meta)
    print("\n".join(md))


def insn_section(out, md):
    """insn.md's summary table (scripts/bench-insn.py), when bench.sh wrote it."""
    try:
        lines = open(os.path.join(out, "insn.md")).read().splitlines()
    except OSError:
        return
    try:
        i = lines.index("## Summary: the client module's instructions per IO")
    except ValueError:
        return
    j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    md.append("## Instructions per IO (exact, a TCG plugin; see insn.md)")
    md.extend(l for l in lines[i + 1:j])


# The stacks of the rnbd-rs section (client column of runs.tsv).
RRS_STACKS = (("c", "C/C"), ("rs", "C/RS"), ("rsrs", "RS/RS"))


def rnbd_rs_section(src, runs, meta, res, md):
    """BENCH_SECTIONS=rnbd-rs: rnbd-client-rs on this module (RS/RS) against
    C's rnbd-client on this module (C/RS) and on C's rtrs-client (C/C), one
    path: IOPS and CPU per IO at full speed (section rnbdrs), CPU per IO at
    a fixed rate (rnbdrscpu)."""
    full = collect(src, runs, "rnbdrs")
    fixed = collect(src, runs, "rnbdrscpu")
    if not full and not fixed:
        return

    def summ(cells, k):
        return {cl: summarize(cells[k].get(cl, {}).get("ok", [])) for cl, _ in RRS_STACKS}

    def fails(cells, k):
        return {cl: cells[k].get(cl, {}).get("fail", []) for cl, _ in RRS_STACKS}

    def iops(s, fl):
        if not s.get("rounds"):
            return ("failed: " + fl[0]) if fl else "-"
        t = "%s (%s-%s)" % (fmt(s["iops"]), fmt(s["iops_min"]), fmt(s["iops_max"]))
        if fl:
            t += ", %d failed: %s" % (len(fl), fl[0])
        return t

    def cpu_ratio(a, b):
        if a.get("cpu_us_per_io") and b.get("cpu_us_per_io"):
            return a["cpu_us_per_io"] / b["cpu_us_per_io"]
        return None

    md.append("## The Rust stack: rnbd-client-rs on this module, against C's rnbd-client")
    md.append("")
    md.append("One path, one job, the three stacks alternated round by round in this boot. "
              "C/C: C's rnbd-client on C's rtrs-client; C/RS: C's rnbd-client on this module; "
              "RS/RS: rnbd-client-rs on this module. IOPS: median of the rounds (min-max). "
              "CPU: system+irq+softirq of the guest per IO (fio and the server included), "
              "median of the rounds. Ratios: RS/RS over the other stack, IOPS with the verdict "
              "as above.")
    md.append("")
    md.append("| rw | bs | QD | C/C IOPS | C/RS IOPS | RS/RS IOPS | RS/RS over C/C | RS/RS over C/RS "
              "| C/C us/IO | C/RS us/IO | RS/RS us/IO |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for k in sorted(full, key=lambda k: (k[2], k[3], k[4], k[5])):
        s, fl = summ(full, k), fails(full, k)
        r_cc, v_cc = verdict(s["c"], s["rsrs"])
        r_crs, v_crs = verdict(s["rs"], s["rsrs"])
        rows.append({"rw": k[2], "bs": k[3], "qd": k[4], "jobs": k[5],
                     "c": s["c"], "rs": s["rs"], "rsrs": s["rsrs"],
                     "ratio_over_c": r_cc, "verdict_over_c": v_cc,
                     "ratio_over_rs": r_crs, "verdict_over_rs": v_crs,
                     "failures": fl})
        md.append("| %s | %s | %d | %s | %s | %s | %s (%s) | %s (%s) | %s | %s | %s |" % (
            k[2], k[3], k[4], iops(s["c"], fl["c"]), iops(s["rs"], fl["rs"]), iops(s["rsrs"], fl["rsrs"]),
            fmt(r_cc, 2), v_cc, fmt(r_crs, 2), v_crs,
            fmt(s["c"].get("cpu_us_per_io"), 1), fmt(s["rs"].get("cpu_us_per_io"), 1),
            fmt(s["rsrs"].get("cpu_us_per_io"), 1)))
    md.append("")
    res["rnbd_rs"] = rows

    cpu_rows = []
    if fixed:
        md.append("CPU per IO at a fixed rate (%s IOPS), 4k QD 32:" % meta.get("rnbdrs_rate", "?"))
        md.append("")
        md.append("| rw | C/C us/IO (IOPS) | C/RS us/IO (IOPS) | RS/RS us/IO (IOPS) | RS/RS over C/C | RS/RS over C/RS |")
        md.append("|---|---|---|---|---|---|")
        for k in sorted(fixed, key=lambda k: (k[2], k[3], k[4])):
            s, fl = summ(fixed, k), fails(fixed, k)
            cpu_rows.append({"rw": k[2], "bs": k[3], "qd": k[4], "c": s["c"], "rs": s["rs"],
                             "rsrs": s["rsrs"], "failures": fl})

            def cell(cl):
                if not s[cl].get("rounds"):
                    return ("failed: " + fl[cl][0]) if fl[cl] else "-"
                return "%s (%s)" % (fmt(s[cl].get("cpu_us_per_io"), 1), fmt(s[cl].get("iops")))
            md.append("| %s %s QD%d | %s | %s | %s | %s | %s |" % (
                k[2], k[3], k[4], cell("c"), cell("rs"), cell("rsrs"),
                fmt(cpu_ratio(s["rsrs"], s["c"]), 2), fmt(cpu_ratio(s["rsrs"], s["rs"]), 2)))
        md.append("")
    res["rnbd_rs_cpu"] = cpu_rows


def rnbd_rs_few_section(src, runs, meta, res, md):
    """BENCH_SECTIONS=rnbd-rs-few: 4 jobs of QD 32 on two devices of one
    session with few permits; C/C against RS/RS (and RS/RS of another
    rnbd-client-rs build, rsrs2)."""
    def short(err):
        # One line of a failure's text, fit for a table cell.
        return err.split(" | ")[0].splitlines()[0][:90].replace("|", "/")

    cells = collect(src, runs, "rnbdrsfew")
    light = collect(src, runs, "rnbdrsfewlight")
    if not cells and not light:
        return
    stacks = [("c", "C/C"), ("rsrs", "RS/RS")]
    if any("rsrs2" in v for v in cells.values()):
        stacks.append(("rsrs2", "RS/RS at %s" % meta.get("rnbd_rs2_ref", "?")))
    md.append("## Few permits: two devices on one session, %s permits" % meta.get("few_qd", "?"))
    md.append("")
    md.append("4k, 4 jobs of QD 32 over both devices (128 requests for the permits). IOPS: median "
              "of the rounds (min-max); us/IO: guest system+irq+softirq CPU per IO. Ratios over "
              "C/C with the verdict as above.")
    md.append("")
    md.append("| rw | " + " | ".join("%s IOPS | %s us/IO" % (n, n) for _, n in stacks) + " | "
              + " | ".join("%s over C/C" % n for _, n in stacks[1:]) + " |")
    md.append("|---|" + "---|---|" * len(stacks) + "---|" * (len(stacks) - 1))
    rows = []
    for k in sorted(cells, key=lambda k: k[2]):
        s = {cl: summarize(cells[k].get(cl, {}).get("ok", [])) for cl, _ in stacks}
        fl = {cl: cells[k].get(cl, {}).get("fail", []) for cl, _ in stacks}
        row = {"rw": k[2], "bs": k[3], "qd": k[4], "jobs": k[5], "failures": fl}
        cols = []
        for cl, _ in stacks:
            row[cl] = s[cl]
            if s[cl].get("rounds"):
                cols.append("%s (%s-%s) | %s" % (fmt(s[cl]["iops"]), fmt(s[cl]["iops_min"]),
                                                 fmt(s[cl]["iops_max"]), fmt(s[cl].get("cpu_us_per_io"), 1)))
            else:
                cols.append("%s | -" % (("failed: " + short(fl[cl][0])) if fl[cl] else "-"))
        ratios = []
        for cl, _ in stacks[1:]:
            r, v = verdict(s["c"], s[cl])
            row["ratio_" + cl] = r
            row["verdict_" + cl] = v
            ratios.append("%s (%s)" % (fmt(r, 2), v))
        rows.append(row)
        md.append("| %s | %s | %s |" % (k[2], " | ".join(cols), " | ".join(ratios)))
    md.append("")
    res["rnbd_rs_few"] = rows
    lrows = []
    if light:
        md.append("One job of QD 1 (4k randread) on one device while 4 jobs of QD 32 read the other: "
                  "IOPS (min-max) and completion latency p50 / p99 in us, medians of the rounds.")
        md.append("")
        md.append("| " + " | ".join("%s IOPS | %s p50 / p99 us" % (n, n) for _, n in stacks) + " |")
        md.append("|" + "---|---|" * len(stacks))
        for k in sorted(light):
            s = {cl: summarize(light[k].get(cl, {}).get("ok", [])) for cl, _ in stacks}
            fl = {cl: light[k].get(cl, {}).get("fail", []) for cl, _ in stacks}
            cols = []
            for cl, _ in stacks:
                if s[cl].get("rounds"):
                    cols.append("%s (%s-%s) | %s / %s" % (
                        fmt(s[cl]["iops"]), fmt(s[cl]["iops_min"]), fmt(s[cl]["iops_max"]),
                        fmt(s[cl].get("p50_us")), fmt(s[cl].get("p99_us"))))
                else:
                    cols.append("%s | -" % (("failed: " + short(fl[cl][0])) if fl[cl] else "-"))
            lrows.append({"rw": k[2], "bs": k[3], "qd": k[4], "failures": fl,
                          **{cl: s[cl] for cl, _ in stacks}})
            md.append("| %s |" % " | ".join(cols))
        md.append("")
    res["rnbd_rs_few_light"] = lrows


def write_svg(path, rows, meta):
    """Bars: this module's IOPS over C's per one- and two-path cell, with
    whiskers from the worst to the best pairing of rounds."""
    pts = [r for r in rows if r["ratio"] is not None]
    if not pts:
        open(path, "w").write('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40">'
                              '<text x="10" y="25">no data</text></svg>\n')
        return
    bw, gap, left, top, h = 14, 4, 60, 56, 300
    # Room for the title on the left and for the last rotated label on the right.
    width = max(520, left + len(pts) * (bw + gap) + 100)
    lo = min(0.5, min(r["rs"]["iops_min"] / r["c"]["iops_max"] for r in pts) - 0.05)
    hi = max(1.5, max(r["rs"]["iops_max"] / r["c"]["iops_min"] for r in pts) + 0.05)

    def y(v):
        return top + h - (v - lo) / (hi - lo) * h

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="10">'
         % (width, top + h + 150)]
    o.append('<text x="10" y="20" font-size="13">IOPS ratio rtrs-client-rs / C, median of rounds</text>')
    o.append('<text x="10" y="36">whiskers: worst..best pairing of rounds; kernel %s, %s</text>'
             % (meta.get("kernel", ""), meta.get("date", "")))
    for t in [x / 10 for x in range(int(lo * 10), int(hi * 10) + 1)]:
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/>' % (
            left, width - 10, y(t), y(t), "#000" if abs(t - 1) < 1e-9 else "#ddd"))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 4, y(t) + 3, t))
    for i, r in enumerate(pts):
        x = left + i * (bw + gap)
        col = {"faster": "#2a9d4a", "slower": "#d04040"}.get(r["verdict"], "#7f8fa6")
        y0, y1 = y(1.0), y(r["ratio"])
        o.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>' % (x, min(y0, y1), bw, abs(y1 - y0), col))
        wlo = r["rs"]["iops_min"] / r["c"]["iops_max"]
        whi = r["rs"]["iops_max"] / r["c"]["iops_min"]
        o.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#000"/>' % (x + bw / 2, x + bw / 2, y(wlo), y(whi)))
        lab = "%dp %s %s %s q%d j%d" % (r["paths"], "" if r["policy"] == "-" else r["policy"][:6],
                                       r["rw"].replace("rand", ""), r["bs"], r["qd"], r["jobs"])
        o.append('<text transform="translate(%d,%d) rotate(60)">%s</text>' % (x + 3, top + h + 6, lab))
    o.append("</svg>")
    open(path, "w").write("\n".join(o) + "\n")


if __name__ == "__main__":
    main()
