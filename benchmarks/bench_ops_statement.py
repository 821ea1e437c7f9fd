"""`report ops` alone (the statement and its notes: process CPU from after the
database is open to the last row), this checkout against another on the same
traces, alternating, in fresh processes; and whether both give the same rows
and notes.

    git archive main | tar -x -C /tmp/before
    python benchmarks/bench_ops_statement.py --before /tmp/before TRACE ... [--repeat 5]

Each trace is loaded once per side into DIR/<stem>_{before,after}.duckdb
(--dir, default the system temp dir; kept: delete them to load again).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r'''
import json, sys, time, duckprof
with duckprof.connect(sys.argv[1], read_only=True) as s:
    t0, w0 = time.process_time(), time.perf_counter()
    res = s.report_result("ops", limit=0)
    rows, notes = res.relation.fetchall(), list(res.notes)
    print(json.dumps([time.process_time() - t0, time.perf_counter() - w0, notes,
                      sorted([repr(v) for v in r[3:]] for r in rows)]))
'''


def child(repo, args):
    env = dict(os.environ, PYTHONPATH=repo)
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd="/")
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--before", required=True, help="the other checkout")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args()
    sides = (("before", a.before), ("after", REPO))
    for trace in a.traces:
        stem = os.path.basename(trace).split(".")[0]
        dbs = {side: os.path.join(a.dir, f"{stem}_{side}.duckdb") for side, _ in sides}
        for side, repo in sides:
            if not os.path.exists(dbs[side]):
                child(repo, ["-m", "duckprof", "load", trace, "--db", dbs[side], "-q"])
        got = {}
        for i in range(a.repeat):
            for side, repo in (sides if i % 2 == 0 else sides[::-1]):
                got.setdefault(side, []).append(json.loads(child(repo, ["-c", CHILD, dbs[side]])))
        for side, _ in sides:
            cpu = [g[0] for g in got[side]]
            print(f"{stem} {side}: report ops CPU s median {statistics.median(cpu):.3f} "
                  f"({', '.join(f'{c:.2f}' for c in cpu)}), wall {statistics.median(g[1] for g in got[side]):.3f}")
        b, f = got["before"][0], got["after"][0]
        print(f"  same rows: {b[3] == f[3]} ({len(f[3])}), same notes: {b[2] == f[2]}")
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
