"""`report patterns` on a database file: every rule alone, all rules together
(and with --events, and --list), each in a fresh process (opening the
database read-only, the report, fetching its rows), with its wall time, its
peak RSS (the child's ru_maxrss) and CPU seconds (user + system of the whole
child, start-up included: they move less than wall time when other work
shares the machine). --memory-limit sets DuckDB's memory_limit in the child,
to show the rules run within a bound (a rule that cannot fails with DuckDB's
out-of-memory error, reported as such); --max-rss-gb caps the child's address
space, so a runaway rule cannot take the machine.

    python benchmarks/bench_patterns.py --db /tmp/1gb.duckdb
    python benchmarks/bench_patterns.py --db /tmp/1gb.duckdb --memory-limit 1GB --only sync,extra-cuda-copy
    python benchmarks/bench_patterns.py --db /tmp/1gb.duckdb --json results/patterns.json

Without --db it builds one from the 1 GB synthetic trace (benchmarks/common.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from common import REPO, synthetic_trace  # noqa: E402

CHILD = r"""
import sys, time
import duckprof
from duckprof import reports
db, only, limit, variant = sys.argv[1], sys.argv[2] or None, sys.argv[3] or None, sys.argv[4]
s = duckprof.connect(db, read_only=True)
if limit:
    s.con.execute("SET memory_limit = $m", {"m": limit})
t = time.perf_counter()
res = reports.run(s.con, "patterns", only=only, **({variant: True} if variant else {}))
rows = res.relation.fetchall()
print(f"{time.perf_counter() - t:.3f} {len(rows)}")
"""


def run_child(db: str, only: str | None, limit: str | None, max_rss_gb: float | None, variant: str = ""):
    """(wall s of the report, rows, peak RSS bytes, CPU s of the whole child, error
    or None) of one child;
    variant: '' (the findings), 'events' or 'list'."""
    def cap():
        if max_rss_gb:
            b = int(max_rss_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, db, only or "", limit or "", variant], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=cap)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    rss, cpu = usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime
    if status != 0:
        last = (err.strip().splitlines() or ["exit status %d" % status])[-1]
        return wall, None, rss, cpu, last[:160]
    secs, rows = out.split()
    return float(secs), int(rows), rss, cpu, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db")
    ap.add_argument("--only", help="these rules only, comma-separated (default: every rule, then all together)")
    ap.add_argument("--all-only", action="store_true", help="only all rules together (and --events, --list)")
    ap.add_argument("--memory-limit", help="DuckDB memory_limit in the child, e.g. 1GB")
    ap.add_argument("--max-rss-gb", type=float, default=8.0, help="address-space cap of the child (GB)")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    sys.path.insert(0, REPO)
    from duckprof import reports

    db = a.db
    if db is None:
        db = os.path.join(tempfile.gettempdir(), "duckprof-bench-patterns.duckdb")
        if not os.path.exists(db):
            subprocess.run([sys.executable, "-m", "duckprof", "load", synthetic_trace("1GB"), "--db", db],
                           check=True, cwd=REPO)
    names = a.only.split(",") if a.only else [r.name for r in reports.rules_of(reports.lookup("patterns"))]
    cases = [] if a.all_only else [(n, n, "") for n in names]
    if not a.only:
        cases += [("all rules", None, ""), ("all rules --events", None, "events"), ("--list", None, "list")]
    results = []
    print(f"{'rules':<26}{'report s':>10}{'CPU s':>8}{'rows':>6}{'peak RSS MB':>13}  error")
    for label, only, variant in cases:
        secs, rows, rss, cpu, err = run_child(db, only, a.memory_limit, a.max_rss_gb, variant)
        results.append({"rules": label, "seconds": secs, "cpu_seconds": cpu, "rows": rows, "peak_rss_bytes": rss,
                        "error": err})
        print(f"{label:<26}{secs:>10.2f}{cpu:>8.1f}{rows if rows is not None else '-':>6}{rss / 1e6:>13.0f}  "
              f"{err or ''}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"db": db, "memory_limit": a.memory_limit, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
