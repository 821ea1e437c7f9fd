"""Benchmark `duckprof diff` (issue 4) against what users run today, on the same inputs.

Inputs: two synthetic traces of the chosen size, A = <bench-data>/synth_<size>.json (seed 0,
made by `duckprof synth`) and B = the same size with seed 7 (generated into --workdir when
missing). Both are loaded once into a persistent database (runs 'base' and 'cand'; the load
is timed but not part of the diff).

Measured (median of --repeat runs, wall clock):
  api <level>      duckprof.diff.diff('base', 'cand', db=...) + fetching the table and the
                   summary, in process, for --by kernel / op / category / device
  cli db           `duckprof diff base cand --db DB` as a subprocess (Python start-up included)
  cli files        `duckprof diff A.json B.json` as a subprocess: loads both files into memory, then diffs
  hta parse+diff   HTA 0.5.0 TraceDiff.compare_traces(all iterations, GPU kernels) including
                   parsing both traces (venv --reference-python); run once
  hta diff         the compare_traces call alone, traces already parsed
  profile_analysis torch._inductor.analysis.profile_analysis --diff (torch 2.13), run once; note
                   that it prints header-only tables on Kineto traces (see
                   fixtures/golden/profile_analysis/README.md)
Ratios are reference time / duckprof time on the comparable pair (cli files vs parse+diff;
api kernel vs hta diff).

Usage (from the repository root):
    python benchmarks/bench_diff.py                     # 100 MB traces
    python benchmarks/bench_diff.py --size 1gb          # the issue's target: `diff` < 2 s
    python benchmarks/bench_diff.py --db runs.duckdb --run-a base --run-b cand   # an existing database
    python benchmarks/bench_diff.py --no-reference      # duckprof only
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import reference_python, synthetic_trace  # noqa: E402
import duckprof  # noqa: E402
from duckprof.diff import diff  # noqa: E402
from duckprof.synth import generate  # noqa: E402

SIZES = {"100mb": 100_000_000, "1gb": 1_000_000_000}
CLI = [sys.executable, "-c", "import sys; sys.argv[0] = 'duckprof'; from duckprof.cli import main; main()"]

HTA_SCRIPT = r"""
import json, os, sys, tempfile, time, logging
logging.disable(logging.WARNING)
from hta.trace_diff import TraceDiff, LabeledTrace, DeviceType
dirs = []
for p in sys.argv[1:3]:
    d = tempfile.mkdtemp(prefix="hta-bench-")
    os.symlink(os.path.abspath(p), os.path.join(d, os.path.basename(p)))
    dirs.append(d)
t0 = time.perf_counter()
a = LabeledTrace("A", trace_dir=dirs[0]); b = LabeledTrace("B", trace_dir=dirs[1])
t1 = time.perf_counter()
df = TraceDiff.compare_traces(a, b, control_iteration=a.iterations(), test_iteration=b.iterations(),
                              device_type=DeviceType.GPU)
t2 = time.perf_counter()
print(json.dumps({"parse_s": t1 - t0, "diff_s": t2 - t1, "rows": len(df)}))
"""


def timed(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise RuntimeError(f"exit code {p.returncode}: {last[:200]}")
    return dt, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=SIZES, default="100mb")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "duckprof-bench-diff"))
    ap.add_argument("--db", help="existing database with both runs (skips generation and loading)")
    ap.add_argument("--run-a", default="base")
    ap.add_argument("--run-b", default="cand")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--reference", action=argparse.BooleanOptionalAction, default=True,
                    help="also time HTA TraceDiff and profile_analysis --diff")
    ap.add_argument("--reference-python", default=None,
                    help="Python with HolisticTraceAnalysis and torch (default: $DUCKPROF_REFERENCE_PYTHON, "
                         "else this one)")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    results = {}

    file_b = work / f"synth_{args.size}_seed7.json"
    if args.db:
        db = args.db
    else:
        file_a = Path(synthetic_trace(args.size))  # seed 0, shared with the other benchmarks
        if not file_b.exists():
            print(f"generating {file_b}", file=sys.stderr)
            generate(file_b, seed=7, target_bytes=SIZES[args.size])
        db = str(work / f"bench_diff_{args.size}.duckdb")
        with duckprof.connect(db) as s:
            have = {r[0] for r in s.con.execute("SELECT DISTINCT run FROM traces").fetchall()}
            for run_name, f in ((args.run_a, file_a), (args.run_b, file_b)):
                if run_name not in have:
                    t0 = time.perf_counter()
                    s.load([str(f)], run=run_name)
                    results[f"load {run_name}"] = time.perf_counter() - t0

    with duckprof.connect(db, read_only=True) as s:
        s.con.execute("SELECT 1").fetchall()
        info = s.con.execute("SELECT run, sum(json_bytes), sum(event_count) FROM traces "
                             "WHERE run IN ($a, $b) GROUP BY run ORDER BY run",
                             {"a": args.run_a, "b": args.run_b}).fetchall()
        kernels = s.con.execute("SELECT count(*) FROM gpu_ops").fetchall()[0][0]
    print(f"database {db}: " + "; ".join(f"run {r}: {b / 1e6:,.0f} MB JSON, {n:,} events" for r, b, n in info)
          + f"; {kernels:,} device events in all")

    for by in ("kernel", "op", "category", "device"):
        def once(by=by):
            with diff(args.run_a, args.run_b, db=db, by=by) as d:
                return len(d.table.fetchall()), len(d.summary.fetchall())
        once()  # warm the OS file cache
        results[f"api {by}"], (n, _) = timed(once, args.repeat)
        results[f"api {by} rows"] = n

    results["cli db"], _ = timed(lambda: run(CLI + ["diff", args.run_a, args.run_b, "--db", db, "-o", os.devnull],
                                             cwd=ROOT), max(1, args.repeat // 2))
    if not args.db:
        results["cli files"], _ = timed(lambda: run(CLI + ["diff", str(file_a), str(file_b), "-q", "-o", os.devnull],
                                                    cwd=ROOT), 1)

    reference = reference_python(args.reference_python, "hta") if args.reference and not args.db else None
    if reference:
        try:
            dt, out = run([reference, "-c", HTA_SCRIPT, str(file_a), str(file_b)])
            hta = json.loads(out.strip().splitlines()[-1])
            results["hta parse+diff"] = dt
            results["hta diff"] = hta["diff_s"]
            results["hta rows"] = hta["rows"]
        except (RuntimeError, ValueError) as e:
            results["hta error"] = str(e)
        try:
            dt, _ = run([reference, "-m", "torch._inductor.analysis.profile_analysis",
                         "--diff", str(file_a), "A", str(file_b), "B", "float"])
            results["profile_analysis --diff"] = dt
        except RuntimeError as e:
            results["profile_analysis --diff"] = f"crashed ({e})"

    width = max(len(k) for k in results)
    for k, v in results.items():
        print(f"{k:<{width}}  {v:10.3f} s" if isinstance(v, float) else f"{k:<{width}}  {v}")
    if "hta parse+diff" in results and "cli files" in results:
        print(f"ratio HTA parse+diff / duckprof diff from files: {results['hta parse+diff'] / results['cli files']:.1f}x")
    if "hta diff" in results:
        print(f"ratio HTA compare_traces / duckprof diff (db, api, by kernel): "
              f"{results['hta diff'] / results['api kernel']:.1f}x")
    if "profile_analysis --diff" in results and "cli files" in results:
        print(f"ratio profile_analysis --diff / duckprof diff from files: "
              f"{results['profile_analysis --diff'] / results['cli files']:.1f}x")
    target = results["api kernel"]
    print(f"`diff` on the database, by kernel: {target:.3f} s (issue target at 1 GB: < 2 s)")


if __name__ == "__main__":
    main()
