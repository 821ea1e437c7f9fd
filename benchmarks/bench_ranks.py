"""Many-rank load benchmark (issue 17): one job of many rank files loaded in one
`duckprof load`, against loading the same files one by one (one load call per
file, into the same database) and against HTA loading the same directory;
with one file of the same total size for the throughput to compare with.

    python benchmarks/bench_ranks.py                       # 16x100MB and 1000x1MB, one run each
    python benchmarks/bench_ranks.py --jobs 1000x1MB --tools duckprof,duckprof-each
    python benchmarks/bench_ranks.py --single 1GB           # also one 1 GB file (throughput reference)

Each (tool, input) runs once in a fresh subprocess (peak RSS is that tool's own:
ru_maxrss; CPU s: its user + system seconds, with its worker processes', the figure
to compare when other work shares the machine); the rank files are made once by duckprof.synth (seed r for rank r)
into --data-dir (benchmarks/common.py). HTA runs with --hta-python, else
$DUCKPROF_REFERENCE_PYTHON, else this Python if it can `import hta`. HTA keeps
every rank in pandas: on the 16x100MB job it needs many GB of memory; skip it
with --tools on a machine that cannot spare them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from bench_load import CHILD, run_child
from common import DATA_DIR, reference_python, synthetic_ranks, synthetic_trace

# one load call per file, into one database: what a user's loop over the rank
# files does (each call is its own transaction)
CHILD = dict(CHILD)
CHILD["duckprof-each"] = """
        import duckprof
        db = os.path.join(tmp, 'bench.duckdb')
        t0 = time.perf_counter()
        with duckprof.connect(db) as s:
            for p in files:
                s.load([p], run='bench')
            n = s.sql("select count(*) from events").fetchall()[0][0]
        secs = time.perf_counter() - t0
"""


def main(argv=None):
    import bench_load
    bench_load.CHILD.update(CHILD)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="16x100MB,1000x1MB", help="NxSIZE rank jobs, comma-separated")
    ap.add_argument("--single", default="", help="also one file of this size (e.g. 1GB), for its throughput")
    ap.add_argument("--tools", default="duckprof,duckprof-each,hta")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--hta-python", default=None)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    tools = args.tools.split(",")
    hta_py = reference_python(args.hta_python, "hta") if "hta" in tools else None
    cases = [synthetic_ranks(j, False, args.data_dir) for j in args.jobs.split(",") if j]
    if args.single:
        cases.append(synthetic_trace(args.single, False, args.data_dir))
    rows, results = [], []
    for path in cases:
        files = sorted(os.listdir(path)) if os.path.isdir(path) else [os.path.basename(path)]
        json_bytes = (sum(os.path.getsize(os.path.join(path, f)) for f in files) if os.path.isdir(path)
                      else os.path.getsize(path))
        for tool in tools:
            if not os.path.isdir(path) and tool == "duckprof-each":
                continue
            py = hta_py if tool == "hta" else sys.executable
            if py is None:
                r = {"error": "HolisticTraceAnalysis not installed"}
            else:
                print(f"{tool} on {os.path.basename(path)} ...", file=sys.stderr)
                r = run_child(tool, path, py, args.timeout)
            r.update(tool=tool, input=os.path.basename(path), files=len(files), json_bytes=json_bytes)
            results.append(r)
            if "error" in r:
                rows.append([tool, r["input"], len(files), json_bytes / 1e6, None, None, None, None, r["error"]])
            else:
                rows.append([tool, r["input"], len(files), json_bytes / 1e6, r["seconds"],
                             json_bytes / 1e6 / r["seconds"], r.get("cpu_seconds"), r["peak_rss_bytes"] / 1e6,
                             f"{r['events']:,} events"])
            print(rows[-1], file=sys.stderr, flush=True)
    from tabulate import tabulate
    print(tabulate(rows, headers=["tool", "input", "files", "JSON MB", "seconds", "MB/s", "CPU s", "peak RSS MB",
                                  "note"], floatfmt=",.1f", tablefmt="github"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
