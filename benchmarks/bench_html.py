"""duckprof html on a 1 GB trace in a persistent database (GitHub issue 18).

    python benchmarks/bench_html.py --trace /work/bench/synth_1gb.json --db /tmp/html_1gb.duckdb
    python benchmarks/bench_html.py                       # the 1 GB synthetic trace in $DUCKPROF_BENCH_DIR

The trace is loaded once into --db (kept, reused when it exists). Then
`duckprof html --db DB -o OUT` runs as a user runs it, in a fresh process
(start-up, opening the database read-only, every report, writing the file),
--repeat times: best and median wall seconds, and the file's size. Targets:
under 3 s and under 2 MB. With --breakdown, one more run in this process
prints where the time goes: the shared views computed once (SHARED_VIEWS) and
each report, in wall and CPU seconds (CPU counts DuckDB's threads; on a busy
machine wall time is the larger).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_kernels import build_db  # noqa: E402  (loads the trace into --db once)
from common import REPO, synthetic_trace  # noqa: E402  (puts the repository on sys.path)

import duckprof  # noqa: E402


def time_cli(db, out, repeat):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = "import sys; from duckprof.cli import main; sys.argv[0] = 'duckprof'; main()"
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, "html", "--db", db, "-o", out, "-q"], env=env, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - t)
    return times


def breakdown(db):
    """Seconds per shared view and per report of one build, in this process."""
    from duckprof.html import page as P

    rows = []
    get, share = P.Reports.get, P.share_view

    def timed(what, fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        rows.append((what, time.perf_counter() - w, time.process_time() - c))
        return out

    def get_timed(self, name, **options):
        key = (name, tuple(sorted(options.items())))
        if key in self._memo:
            return self._memo[key]
        return timed(f"report {name} {options or ''}".strip(), lambda: get(self, name, **options))

    P.Reports.get = get_timed
    P.share_view = lambda con, name: timed(f"shared view {name}", lambda: share(con, name))
    try:
        w, c = time.perf_counter(), time.process_time()
        with duckprof.connect(db, read_only=True) as s:
            page = s.html()
        total = (time.perf_counter() - w, time.process_time() - c)
    finally:
        P.Reports.get, P.share_view = get, share
    return rows, total, len(page)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", help="trace file (default: the 1 GB synthetic trace, generated if missing)")
    ap.add_argument("--db", help="database file (default: next to the trace)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--breakdown", action="store_true", help="also time each shared view and report")
    ap.add_argument("--json", help="write the results to this file")
    args = ap.parse_args()
    trace = args.trace or synthetic_trace("1GB")
    db = args.db or os.path.splitext(trace)[0] + "_html.duckdb"
    load_s = build_db(trace, db)
    out = os.path.join(tempfile.mkdtemp(prefix="duckprof-html-"), "page.html")
    times = time_cli(db, out, args.repeat)
    size = os.path.getsize(out)
    result = {"trace": trace, "trace_bytes": os.path.getsize(trace), "db": db, "load_s": load_s,
              "cli_best_s": min(times), "cli_median_s": statistics.median(times), "runs": times,
              "html_bytes": size}
    print(f"duckprof html --db (fresh process): best {min(times):.2f} s, median {statistics.median(times):.2f} s "
          f"of {args.repeat}; file {size / 1e6:.2f} MB (targets: < 3 s, < 2 MB)")
    if args.breakdown:
        rows, (wall, cpu), _ = breakdown(db)
        print(f"\nin-process build: {wall:.2f} s wall, {cpu:.2f} s CPU")
        for what, w, c in rows:
            print(f"  {w:6.2f} s  (CPU {c:5.2f})  {what}")
        result["breakdown"] = [{"what": w, "wall_s": a, "cpu_s": b} for w, a, b in rows]
        result["build_wall_s"], result["build_cpu_s"] = wall, cpu
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
