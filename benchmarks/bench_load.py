"""Load benchmark: duckprof vs Python json.load vs HTA on the same synthetic traces,
with duckdb-raw, the floor of duckprof's design (DuckDB parsing the same chunks
into a table file with no normalisation), to show how much of the time is parsing.

    python benchmarks/bench_load.py                      # 100 MB and 1 GB, .json and .json.gz,
                                                         # and two jobs of many rank files
    python benchmarks/bench_load.py --sizes 100MB --ranks '' --tools duckprof,json
    python benchmarks/bench_load.py --hta-python /path/to/venv/bin/python

Each (tool, file) runs in a fresh subprocess so peak RSS (ru_maxrss) is that
tool's own, --repeat times (runs slower than --repeat-below seconds once), in
rounds over the tools; the table shows the median time and the highest RSS.
MB/s is uncompressed JSON bytes per second of load time (interpreter start-up
excluded). Files are generated once by duckprof.synth into --data-dir.
HTA (HolisticTraceAnalysis) is run with --hta-python if given, else with
$DUCKPROF_REFERENCE_PYTHON, else with this Python if it can `import hta`;
otherwise it is reported as not installed. Files: see benchmarks/common.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

from common import DATA_DIR, REPO, reference_python, synthetic_ranks, synthetic_trace

CHILD = {
    "duckprof": """
        import duckprof
        db = os.path.join(tmp, 'bench.duckdb')
        t0 = time.perf_counter()
        with duckprof.connect(db) as s:
            s.load([path], run='bench')
            n = s.sql("select count(*) from events").fetchall()[0][0]
        secs = time.perf_counter() - t0
    """,
    "duckprof-mem": """
        import duckprof
        t0 = time.perf_counter()
        s = duckprof.connect()
        s.load([path], run='bench')
        n = s.sql("select count(*) from events").fetchall()[0][0]
        secs = time.perf_counter() - t0
    """,
    # The floor of this design (benchmarks/raw_load.py): the same chunking, then
    # one read_json of every chunk into a table of a database file, as written.
    "duckdb-raw": """
        from raw_load import raw_load
        t0 = time.perf_counter()
        n = raw_load(files, tmp, os.path.join(tmp, 'raw.duckdb'))
        secs = time.perf_counter() - t0
    """,
    "json": """
        import json, gzip
        t0 = time.perf_counter()
        n = 0
        for p in files:
            with (gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb')) as f:
                n += len(json.load(f)['traceEvents'])
        secs = time.perf_counter() - t0
    """,
    "hta": """
        import logging
        logging.disable(logging.CRITICAL)
        d = path
        if not os.path.isdir(path):
            d = os.path.join(tmp, 'trace_dir')
            os.makedirs(d)
            os.symlink(path, os.path.join(d, os.path.basename(path)))
        from hta.trace_analysis import TraceAnalysis
        t0 = time.perf_counter()
        ta = TraceAnalysis(trace_dir=d)
        n = sum(len(t.get_trace(r)) for t in [ta.t] for r in t.get_ranks())
        secs = time.perf_counter() - t0
    """,
}

PRELUDE = """
import os, sys, time, json, resource, tempfile, shutil
sys.path.insert(0, {repo!r})
sys.path.append({bench!r})  # raw_load
path = {path!r}  # a trace, or a directory of rank traces
files = sorted(os.path.join(path, f) for f in os.listdir(path)) if os.path.isdir(path) else [path]
tmp = tempfile.mkdtemp(prefix='duckprof-bench-')
"""
POSTLUDE = """
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
cpu = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                            resource.getrusage(resource.RUSAGE_CHILDREN)))
out = {{'seconds': secs, 'events': int(n), 'peak_rss_bytes': rss, 'cpu_seconds': cpu}}
if 'cli' in dir():  # a command run in its own process (bench_ranks.py's duckprof-cli): its figures
    out.update(peak_rss_bytes=cli['rss'], cpu_seconds=cli['cpu_user'] + cli['cpu_sys'], **cli)
print('RESULT ' + json.dumps(out))
shutil.rmtree(tmp, ignore_errors=True)  # its database files: up to a few GB a run
"""


def ensure_file(data_dir: str, size_name: str, gz: bool) -> tuple[str, int]:
    path = synthetic_trace(size_name, gz, data_dir)
    # uncompressed size = the plain file's size (same generator, same seed)
    return path, os.path.getsize(synthetic_trace(size_name, False, data_dir))


def ensure_ranks(data_dir: str, spec: str, gz: bool) -> tuple[str, int]:
    path = synthetic_ranks(spec, gz, data_dir)
    plain = synthetic_ranks(spec, False, data_dir)
    return path, sum(os.path.getsize(os.path.join(plain, f)) for f in os.listdir(plain))


def run_child(tool: str, path: str, python: str, timeout: int) -> dict:
    code = PRELUDE.format(repo=REPO, bench=os.path.dirname(os.path.abspath(__file__)), path=path) + textwrap.dedent(CHILD[tool]) \
        + POSTLUDE.format()
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": err[:160]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100MB,1GB")
    ap.add_argument("--ranks", default="200x1MB,8x100MB",
                    help="jobs of many rank files, NxSIZE each ('' for none); each tool loads the whole directory")
    ap.add_argument("--formats", default="json,gz")
    ap.add_argument("--tools", default="duckprof,duckdb-raw,json,hta")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--hta-python", default=None,
                    help="Python with HolisticTraceAnalysis (default: $DUCKPROF_REFERENCE_PYTHON, else this one)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool and input; the median is shown")
    ap.add_argument("--repeat-below", type=float, default=30,
                    help="repeat only runs faster than this many seconds (HTA on 1 GB takes ~10 minutes)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--json-out", default=None, help="also write the results as JSON")
    args = ap.parse_args(argv)

    tools = args.tools.split(",")
    hta_py = reference_python(args.hta_python, "hta") if "hta" in tools else None
    rows, results = [], []
    cases = [(ensure_file, s) for s in args.sizes.split(",") if s] + \
        [(ensure_ranks, r) for r in args.ranks.split(",") if r]
    for ensure, size in cases:
        for fmt in args.formats.split(","):
            path, json_bytes = ensure(args.data_dir, size, fmt == "gz")
            # rounds of every tool in turn, so that a machine slowing down for a
            # while (this one varies by 10-20%) slows every tool alike
            runs = {tool: [] for tool in tools}
            for rnd in range(args.repeat):
                for tool in tools:
                    done = runs[tool]
                    if done and ("error" in done[-1] or done[-1]["seconds"] > args.repeat_below):
                        continue
                    py = hta_py if tool == "hta" else sys.executable
                    if py is None:
                        done.append({"error": "HolisticTraceAnalysis not installed (pip install HolisticTraceAnalysis)"})
                        continue
                    print(f"{tool} on {os.path.basename(path)} (round {rnd + 1}) ...", file=sys.stderr)
                    done.append(run_child(tool, path, py, args.timeout))
            per_tool = {}
            for tool, done in runs.items():
                ok = [r for r in done if "error" not in r]
                r = dict(done[-1]) if not ok else {
                    "seconds": statistics.median(x["seconds"] for x in ok), "runs": [x["seconds"] for x in ok],
                    "events": ok[0]["events"], "peak_rss_bytes": max(x["peak_rss_bytes"] for x in ok)}
                r.update(tool=tool, file=os.path.basename(path), json_bytes=json_bytes)
                per_tool[tool] = r
                results.append(r)
            base = per_tool.get(tools[0], {})
            for tool, r in per_tool.items():
                if "error" in r:
                    rows.append([tool, r["file"], json_bytes / 1e6, None, None, None, None, None, r["error"]])
                    continue
                mbs = json_bytes / 1e6 / r["seconds"]
                ratio = (r["seconds"] / base["seconds"]) if "seconds" in base and tool != tools[0] else None
                rows.append([tool, r["file"], json_bytes / 1e6, r["seconds"], mbs, r["peak_rss_bytes"] / 1e6,
                             r["peak_rss_bytes"] / json_bytes, ratio,
                             f"{r['events']:,} events; {len(r['runs'])} run(s)"])
    from tabulate import tabulate
    print(tabulate(rows, headers=["tool", "file", "JSON MB", "seconds", "MB/s", "peak RSS MB",
                                  "RSS / size", f"time vs {tools[0]}", "note"],
                   floatfmt=",.2f", tablefmt="github"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
