"""Many-rank load benchmark (issue 17): one job of many rank files loaded in one
`duckprof load`, against loading the same files one by one (one load call per
file, into the same database) and against HTA loading the same directory;
with one file of the same total size for the throughput to compare with.

    python benchmarks/bench_ranks.py                       # 16x100MB and 1000x1MB, one run each
    python benchmarks/bench_ranks.py --jobs 1000x1MB --tools duckprof,duckprof-each
    python benchmarks/bench_ranks.py --single 1GB           # also one 1 GB file (throughput reference)
    python benchmarks/bench_ranks.py --jobs 1000x1MB --single 1GB --same-job --tools duckprof-cli --repeat 3
        # the issue's throughput target, as a user loads: `duckprof load X --db NEW -q` of the 1000
        # ranks, of synth_1gb.json and of one 1 GB file of the same job, interleaved, 3 rounds

Each (tool, input) runs in a fresh subprocess (peak RSS is that tool's own:
ru_maxrss; CPU s: its user + system seconds, with its worker processes', the
figure to compare when other work shares the machine); the rank files are made
once by duckprof.synth (seed r for rank r) into --data-dir
(benchmarks/common.py). Two files to compare a job's throughput with:
`--single SIZE` is the usual synthetic trace of one GPU (synth_1gb.json: 12
transformer blocks a step, no "Process Group Ranks" of a big world), lighter
per event than a rank of a big job; `--same-job` adds, for each job, one file
of the job's total size with the rank files' events per event
(common.synthetic_job_trace: rank 0 of the same world, the rank files' blocks
a step, hence their collectives and 5.3 KB args per event): the job against
that file is the per-file cost alone. With --repeat N the runs go in rounds,
each round every input and tool once in turn (a machine slowing down slows
them alike); the tables give medians and ranges, and for each job the
throughput ratio job / file of every round (> 1: the job loads more MB/s).

Tools: `duckprof` (the Python API: connect(db).load, as bench_load.py),
`duckprof-cli` (`python -m duckprof load PATH --db NEW -q`: the command a user
runs, through session.load_into, with the load's own connection and its
memory settings), `duckprof-each`, `hta`. HTA runs with --hta-python, else
$DUCKPROF_REFERENCE_PYTHON, else this Python if it can `import hta`. HTA keeps
every rank in pandas: on the 16x100MB job it needs many GB of memory; skip it
with --tools on a machine that cannot spare them. --env K=V (repeatable) sets
an environment variable for the duckprof runs (e.g. DUCKPROF_LOAD_MEMORY=2GB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from bench_load import CHILD, run_child
from common import DATA_DIR, reference_python, synthetic_job_trace, synthetic_ranks, synthetic_trace

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
# the CLI, as a user runs it: its own process (CPU and peak RSS are the
# command's: this child's RUSAGE_CHILDREN, its only child), counted after
CHILD["duckprof-cli"] = """
        import subprocess, duckdb
        db = os.path.join(tmp, 'bench.duckdb')
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, '-m', 'duckprof', 'load', path, '--db', db, '-q'],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=sys.path[0]))  # the repo (PRELUDE)
        secs = time.perf_counter() - t0
        if r.returncode:
            raise SystemExit(r.stderr[-300:])
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        cli = {'cpu_user': c.ru_utime, 'cpu_sys': c.ru_stime, 'rss': c.ru_maxrss * 1024}
        with duckdb.connect(db, read_only=True) as con:
            n = con.execute("select count(*) from events").fetchall()[0][0]
"""


def json_bytes(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def summarize(runs: list) -> dict:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return dict(runs[-1])
    med = lambda k: statistics.median(x[k] for x in ok)  # noqa: E731
    out = {"seconds": med("seconds"), "runs": [x["seconds"] for x in ok], "events": ok[0]["events"],
           "cpu_seconds": med("cpu_seconds"), "cpu_runs": [x["cpu_seconds"] for x in ok],
           "peak_rss_bytes": max(x["peak_rss_bytes"] for x in ok),
           "rss_runs": [x["peak_rss_bytes"] for x in ok]}
    if "cpu_sys" in ok[0]:
        out["cpu_user"], out["cpu_sys"] = med("cpu_user"), med("cpu_sys")
    return out


def span(xs, fmt="{:.2f}") -> str:
    xs = sorted(xs)
    if len(xs) == 1:
        return fmt.format(xs[0])
    return fmt.format(statistics.median(xs)) + " (" + fmt.format(xs[0]) + "-" + fmt.format(xs[-1]) + ")"


def main(argv=None):
    import bench_load
    bench_load.CHILD.update(CHILD)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="16x100MB,1000x1MB", help="NxSIZE rank jobs, comma-separated")
    ap.add_argument("--single", default="", help="also one file of this size (e.g. 1GB), for its throughput")
    ap.add_argument("--same-job", action="store_true",
                    help="also, for each job, one file of its size with its events per event "
                         "(common.synthetic_job_trace)")
    ap.add_argument("--tools", default="duckprof,duckprof-each,hta")
    ap.add_argument("--repeat", type=int, default=1, help="rounds over every input and tool")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="environment of the duckprof runs (repeatable)")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--hta-python", default=None)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    tools = args.tools.split(",")
    hta_py = reference_python(args.hta_python, "hta") if "hta" in tools else None
    jobs = [j for j in args.jobs.split(",") if j]
    cases = [synthetic_ranks(j, False, args.data_dir) for j in jobs]
    singles = []
    if args.same_job:
        singles += [synthetic_job_trace(j, args.data_dir) for j in jobs]
    if args.single:
        singles += [synthetic_trace(s, False, args.data_dir) for s in args.single.split(",")]
    cases += singles
    env = dict(kv.split("=", 1) for kv in args.env)
    os.environ.update(env)  # the children inherit it
    runs = {(c, t): [] for c in cases for t in tools}
    for rnd in range(args.repeat):
        for path in cases:
            for tool in tools:
                if not os.path.isdir(path) and tool == "duckprof-each":
                    continue
                py = hta_py if tool == "hta" else sys.executable
                if py is None:
                    runs[path, tool].append({"error": "HolisticTraceAnalysis not installed"})
                    continue
                print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}: {tool} on "
                      f"{os.path.basename(path)} (round {rnd + 1}) ...", file=sys.stderr)
                r = run_child(tool, path, py, args.timeout)
                r["utc"] = time.strftime("%H:%M:%S", time.gmtime())
                runs[path, tool].append(r)
                print("   ", json.dumps({k: v for k, v in r.items() if k != "events"}), file=sys.stderr, flush=True)
    rows, results = [], []
    for (path, tool), rs in runs.items():
        if not rs:
            continue
        size, files = json_bytes(path), len(os.listdir(path)) if os.path.isdir(path) else 1
        r = summarize(rs)
        r.update(tool=tool, input=os.path.basename(path), files=files, json_bytes=size, env=env, all=rs)
        results.append(r)
        if "error" in r:
            rows.append([tool, r["input"], files, size / 1e6, None, None, None, None, None, r["error"]])
            continue
        ok = [x for x in rs if "error" not in x]
        cpu = span(r["cpu_runs"]) + (f" = {r['cpu_user']:.1f} + {r['cpu_sys']:.1f}" if "cpu_user" in r else "")
        rows.append([tool, r["input"], files, size / 1e6, span(r["runs"]), size / 1e6 / r["seconds"], cpu,
                     span([x / 1e6 for x in r["rss_runs"]], "{:,.0f}"), r["peak_rss_bytes"] / size,
                     f"{r['events']:,} events, {len(ok)} run(s)"])
    from tabulate import tabulate
    print(tabulate(rows, headers=["tool", "input", "files", "JSON MB", "seconds: median (range)", "MB/s",
                                  "CPU s (user + sys)", "peak RSS MB", "RSS / JSON", "note"],
                   floatfmt=",.2f", tablefmt="github"))
    # per round: the job's throughput over each file's (MB/s ratio = file seconds /
    # job seconds x job bytes / file bytes), and its CPU-s per MB over the file's
    ratios = []
    for job in cases[:len(jobs)]:
        for single in singles:
            for tool in tools:
                a, b = runs.get((job, tool), []), runs.get((single, tool), [])
                pairs = [(x, y) for x, y in zip(a, b) if "error" not in x and "error" not in y]
                if not pairs:
                    continue
                jb, sb = json_bytes(job), json_bytes(single)
                thr = [(jb / x["seconds"]) / (sb / y["seconds"]) for x, y in pairs]
                cpu = [(x["cpu_seconds"] / jb) / (y["cpu_seconds"] / sb) for x, y in pairs]
                ratios.append([tool, os.path.basename(job), os.path.basename(single), span(thr), span(cpu),
                               len(pairs)])
    if ratios:
        print()
        print(tabulate(ratios, headers=["tool", "job", "against", "throughput job / file: median (range)",
                                        "CPU-s per MB job / file", "rounds"], tablefmt="github"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
