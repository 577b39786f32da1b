#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Markdown table of a tests/vm/75-hostile-server.sh run: one row per case,
this module's outcome beside the C client's, from the test's TAP output
(its "case | client | outcome" lines) and the server's case table.

  table.py <tap output> <rtrs-hostile-srv>
"""
import re
import subprocess
import sys


def cell(text):
    t = re.sub(r"posted=(\d+) post_err=\[\] nopermit=0 ok=(\d+) err=\[\] pending=0", r"\2 ok", text)
    for empty in (" post_err=[]", " nopermit=0", " err=[]", " pending=0"):
        t = t.replace(empty, "")
    return t.replace("|", "/").strip() or "-"


def main(tap, srv):
    what = {}
    out = subprocess.run([srv, "--help"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"^  (\S+)\s+(\S+)\s+(.*)$", line)
        if m:
            what[m.group(1)] = (m.group(2), m.group(3))
    res, order, verdict = {}, [], {}
    with open(tap, errors="replace") as f:
        lines = f.read().splitlines()
    on = False
    last = None
    for line in lines:
        m = re.match(r"^(ok|not ok) \d+ (rs|c) (\S+)", line)
        if m:
            verdict[(m.group(2), m.group(3))] = m.group(1)
            last = (m.group(3), m.group(2))
            continue
        # Each case's outcome follows its test point (the final table may
        # be missing from a run that died).
        if last and line.startswith("#   alone:") and not on:
            case, cl = last
            if case not in res:
                order.append(case)
                res[case] = {}
            res[case][cl] = line[4:]
            last = None
            continue
        if line.startswith("# case | client | outcome"):
            on = True
            continue
        if not on or not line.startswith("# "):
            continue
        parts = line[2:].split(" | ", 2)
        if len(parts) != 3:
            continue
        case, cl, outcome = parts
        if case not in res:
            order.append(case)
            res[case] = {}
        res[case][cl] = outcome
    print("| case | phase | what the server does | this module | C client |")
    print("|---|---|---|---|---|")
    for case in order:
        phase, desc = what.get(case, ("", ""))
        rs = res[case].get("rs", "")
        if verdict.get(("rs", case)) == "not ok":
            rs = "**FAILED** " + rs
        print(f"| {case} | {phase} | {cell(desc)} | {cell(rs)} | {cell(res[case].get('c', ''))} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
