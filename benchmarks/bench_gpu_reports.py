"""GPU time reports benchmark (GitHub issue 5): `duckprof report idle | gpu-time | queue |
temporal` on a synthetic trace in a persistent database, and HTA's idle-time,
temporal and queue-length analyses on the same file when HTA is available.

    python benchmarks/bench_gpu_reports.py                          # 100 MB synthetic trace
    python benchmarks/bench_gpu_reports.py --trace synth_1gb.json.gz    # duckprof synth --events ... -o
    python benchmarks/bench_gpu_reports.py --hta-python /path/to/venv-with-hta/bin/python

The database is built once (load time printed) and kept next to the trace's
cache (--db). Each report is then timed the way the CLI runs it with --db: open
the database read-only, run the report, fetch every row; best and median of
--repeat runs in this process (the first run includes DuckDB's cold cache).
Target (issue 5): each report under 3 s on a 1 GB trace.
HTA (HolisticTraceAnalysis) runs in its own interpreter (--hta-python): trace
load time, then each analysis. ratio = HTA analysis / duckprof report, both on data
already loaded; e2e ratio = (HTA load + analysis) / (duckprof load + report), both
from the trace file (printed when this run loaded the database: --rebuild).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from common import reference_python, synthetic_trace  # noqa: E402  (puts the repository on sys.path)

import duckprof  # noqa: E402
from duckprof.cli_common import open_data  # noqa: E402

REPORTS = {
    "idle": lambda s: s.report("idle"),
    "idle --by event": lambda s: s.report("idle", by="event"),
    "gpu-time": lambda s: s.report("gpu-time"),
    "gpu-time --by-step": lambda s: s.report("gpu-time", by_step=True),
    "queue": lambda s: s.report("queue"),
    "temporal": lambda s: s.report("temporal"),
}

HTA_CHILD = textwrap.dedent("""
    import json, logging, os, sys, tempfile, time
    logging.disable(logging.CRITICAL)
    path = sys.argv[1]
    d = tempfile.mkdtemp(prefix="hta_bench_")
    os.symlink(os.path.abspath(path), os.path.join(d, os.path.basename(path)))
    from hta.trace_analysis import TraceAnalysis
    out = {}
    t = time.perf_counter(); a = TraceAnalysis(trace_dir=d); out["load"] = time.perf_counter() - t
    rank = a.t.get_ranks()[0]
    calls = {
        "idle_time_breakdown": lambda: a.get_idle_time_breakdown(ranks=[rank], visualize=False),
        "temporal_breakdown": lambda: a.get_temporal_breakdown(visualize=False),
        "queue_length_summary": lambda: a.get_queue_length_summary(ranks=[rank]),
    }
    for k, f in calls.items():
        t = time.perf_counter(); f(); out[k] = time.perf_counter() - t
    print(json.dumps(out))
""")

HTA_EQUIV = {"gpu-time": "idle_time_breakdown", "temporal": "temporal_breakdown", "queue": "queue_length_summary"}


def build_db(trace, db, rebuild):
    if os.path.exists(db) and not rebuild:
        return None
    for p in (db, db + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    t = time.perf_counter()
    with duckprof.connect(db) as s:
        s.load([trace], run="bench")
    return time.perf_counter() - t


def time_reports(db, repeat):
    res = {}
    for name, fn in REPORTS.items():
        times, rows = [], 0
        for _ in range(repeat):
            t = time.perf_counter()
            with open_data(None, db) as s:
                rows = len(fn(s).fetchall())
            times.append(time.perf_counter() - t)
        res[name] = {"best_s": min(times), "median_s": statistics.median(times), "rows": rows}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", help="trace file (default: the 100 MB synthetic trace, see benchmarks/common.py)")
    ap.add_argument("--db", help="database to build/reuse (default: <tmp>/bench_gpu_<trace name>.duckdb)")
    ap.add_argument("--rebuild", action="store_true", help="reload the trace even if --db exists")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hta-python", help="Python with HolisticTraceAnalysis installed, to time HTA "
                                         "(default: $DUCKPROF_REFERENCE_PYTHON or this one, if either has it)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    trace = args.trace or synthetic_trace("100MB", gz=True)
    db = args.db or os.path.join(tempfile.gettempdir(), f"bench_gpu_{os.path.basename(trace)}.duckdb")
    load_s = build_db(trace, db, args.rebuild)

    with open_data(None, db) as s:
        counts = dict(s.con.execute("""
            SELECT 'events', count(*) FROM events UNION ALL SELECT 'gpu_ops', count(*) FROM gpu_ops
            UNION ALL SELECT 'cpu_ops', count(*) FROM cpu_ops""").fetchall())
    result = {"trace": trace, "db": db, "load_s": load_s, "counts": counts,
              "reports": time_reports(db, args.repeat)}

    hta_python = reference_python(args.hta_python, "hta")
    if hta_python:
        p = subprocess.run([hta_python, "-c", HTA_CHILD, trace], capture_output=True, text=True)
        result["hta"] = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else \
            {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}

    print(f"trace {trace}: {counts['events']:,} events, {counts['gpu_ops']:,} GPU ops, "
          f"{counts['cpu_ops']:,} CPU ops; db {db}" + (f" (loaded in {load_s:.1f} s)" if load_s else ""))
    # ratio: HTA analysis / duckprof report on loaded data; e2e: (HTA load + analysis) /
    # (duckprof load into the database + report), from the trace file (needs a fresh load)
    print(f"{'report':<22}{'best s':>9}{'median s':>10}{'rows':>8}{'HTA s':>9}{'ratio':>8}{'e2e ratio':>11}")
    hta = result.get("hta", {})
    for name, r in result["reports"].items():
        hta_s = hta.get(HTA_EQUIV.get(name, ""), None)
        ok = isinstance(hta_s, float)
        ratio = f"{hta_s / r['best_s']:.1f}x" if ok else ""
        e2e = f"{(hta['load'] + hta_s) / (load_s + r['best_s']):.1f}x" if ok and load_s else ""
        r.update({"hta_s": hta_s, "ratio": ratio, "e2e_ratio": e2e})
        print(f"{name:<22}{r['best_s']:>9.3f}{r['median_s']:>10.3f}{r['rows']:>8}"
              f"{(f'{hta_s:.2f}' if ok else ''):>9}{ratio:>8}{e2e:>11}")
    if "hta" in result:
        print("HTA: " + ", ".join(f"{k} {v:.2f} s" if isinstance(v, float) else f"{k}: {v}"
                                  for k, v in result["hta"].items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
