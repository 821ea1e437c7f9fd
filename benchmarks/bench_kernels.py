"""Kernels report and augment benchmark (GitHub issue 3).

    python benchmarks/bench_kernels.py                                   # 100 MB synthetic trace
    python benchmarks/bench_kernels.py --trace synth_1gb.json.gz        # duckprof synth --events ... -o
    python benchmarks/bench_kernels.py --torch-python /path/to/venv-with-torch/bin/python

1. The trace is loaded once into a persistent database (--db; kept, reused when
   it exists). `duckprof report kernels` is then timed the way the CLI runs it
   with --db: open the database read-only, run the report (default options,
   and --group-by-launch --limit 0), fetch every row; best and median of
   --repeat runs (the first includes DuckDB's cold cache). Target: < 2 s on a
   1 GB trace.
2. `duckprof augment IN OUT` runs in a fresh interpreter (its peak RSS is its
   own): seconds and peak RSS.
3. With --torch-python (an interpreter with torch), the same file through
   `python -m torch._inductor.analysis.profile_analysis --analysis FILE float`
   and `--augment_trace FILE OUT float` (the tool cannot read .json.gz: the
   file is decompressed first, not timed). Ratios: torch time / duckprof time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from common import REPO, reference_python, synthetic_trace  # noqa: E402  (puts the repository on sys.path)

import duckprof  # noqa: E402
from duckprof.peaks import seed_peaks  # noqa: E402
from duckprof.cli_common import open_data  # noqa: E402

VARIANTS = {
    "report kernels": dict(),
    "report kernels --group-by-launch --limit 0": dict(group_by_launch=True, limit=0),
    "report kernels --sort compute --device 0": dict(sort="compute", device=0),
}

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    sys.path.insert(0, {repo!r})
    from duckprof.augment import augment
    t = time.perf_counter()
    rep = augment({src!r}, {dst!r})
    secs = time.perf_counter() - t
    print("RESULT " + json.dumps({{"seconds": secs, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                                  "kernels": rep.kernels, "ops": rep.ops, "exact_scan": rep.exact_scan}}))
""")


def build_db(trace, db):
    if os.path.exists(db):
        print(f"reusing {db}", file=sys.stderr)
        return None
    t = time.perf_counter()
    with duckprof.connect(db) as s:
        seed_peaks(s.con)  # schema creation does this once wired; idempotent
        s.load([trace], run="bench")
    return time.perf_counter() - t


def time_report(db, kw, repeat):
    times, nrows = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        with open_data(None, db) as s:
            rel = s.report("kernels", **kw)
            nrows = len(rel.fetchall())
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times), nrows


def run_augment(trace, out_dir, timeout):
    dst = os.path.join(out_dir, "augmented" + (".json.gz" if trace.endswith(".gz") else ".json"))
    p = subprocess.run([sys.executable, "-c", CHILD.format(repo=REPO, src=trace, dst=dst)],
                       capture_output=True, text=True, timeout=timeout)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1][:200]}


def run_torch(py, trace, out_dir, timeout):
    plain = os.path.join(out_dir, "plain.json")
    if trace.endswith(".gz"):
        with gzip.open(trace, "rb") as fi, open(plain, "wb") as fo:
            shutil.copyfileobj(fi, fo)
    else:
        shutil.copyfile(trace, plain)
    out = {}
    for label, args in (("analysis", ["--analysis", plain, "float"]),
                        ("augment_trace", ["--augment_trace", plain, os.path.join(out_dir, "t.json"), "float"])):
        code = ("import resource, subprocess, sys, time, json\n"
                "t = time.perf_counter()\n"
                f"p = subprocess.run([sys.executable, '-m', 'torch._inductor.analysis.profile_analysis', *{args!r}],"
                " capture_output=True, text=True)\n"
                "secs = time.perf_counter() - t\n"
                "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
                "err = (p.stderr.strip().splitlines() or [''])[-1]\n"
                "print('RESULT ' + json.dumps({'seconds': secs, 'rss': rss, 'rc': p.returncode, 'err': err[:200]}))\n")
        try:
            p = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=timeout)
            r = next((json.loads(l[7:]) for l in p.stdout.splitlines() if l.startswith("RESULT ")),
                     {"rc": -1, "err": p.stderr[-200:]})
        except subprocess.TimeoutExpired:
            r = {"rc": -1, "err": f"timed out after {timeout} s"}
        out[label] = r
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", help="trace file (default: the 100 MB synthetic trace, see benchmarks/common.py)")
    ap.add_argument("--db", default=None, help="database file (default: next to the trace, .kernels.duckdb)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-augment", action="store_true")
    ap.add_argument("--torch-python", default=None,
                    help="Python with torch (default: $DUCKPROF_REFERENCE_PYTHON or this one, if either has it)")
    ap.add_argument("--timeout", type=int, default=3600)
    args = ap.parse_args(argv)

    trace = args.trace or synthetic_trace("100MB", gz=True)
    json_bytes = os.path.getsize(trace[:-3]) if trace.endswith(".gz") and os.path.exists(trace[:-3]) else None
    db = args.db or os.path.join(tempfile.gettempdir(), os.path.basename(trace) + ".kernels.duckdb")
    load_s = build_db(trace, db)
    with duckprof.connect(db, read_only=True) as s:
        n_kernels = s.con.execute("SELECT count(*) FROM kernels").fetchall()[0][0]
        n_events = s.con.execute("SELECT sum(event_count) FROM traces").fetchall()[0][0]
    print(f"trace {trace}: {n_events:,} events, {n_kernels:,} kernels"
          + (f", {json_bytes / 1e6:,.0f} MB JSON" if json_bytes else "")
          + (f"; loaded into {db} in {load_s:.1f} s" if load_s else ""))
    rows = []
    report_best = None
    for label, kw in VARIANTS.items():
        best, med, n = time_report(db, kw, args.repeat)
        report_best = report_best or best
        rows.append([f"duckprof {label} --db", f"{best:.3f}", f"{med:.3f}", "", f"{n} rows"])
    aug = None
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as out_dir:
        if not args.no_augment:
            aug = run_augment(trace, out_dir, args.timeout)
            if "error" in aug:
                rows.append(["duckprof augment", "", "", "", aug["error"]])
            else:
                rows.append(["duckprof augment", f"{aug['seconds']:.2f}", "", f"{aug['rss'] / 1e6:,.0f}",
                             f"{aug['kernels']:,} kernels, {aug['ops']:,} ops"
                             + (" (exact scan)" if aug["exact_scan"] else "")])
        torch_python = reference_python(args.torch_python, "torch")
        if torch_python:
            t = run_torch(torch_python, trace, out_dir, args.timeout)
            for label, r in t.items():
                base = report_best if label == "analysis" else (aug or {}).get("seconds")
                ratio = f"{r['seconds'] / base:,.1f}x duckprof" if r.get("seconds") and base else ""
                note = "" if r.get("rc") == 0 else f"exit {r.get('rc')}: {r.get('err')}"
                rows.append([f"torch profile_analysis --{label}", f"{r.get('seconds', 0):.2f}", "",
                             f"{r.get('rss', 0) / 1e6:,.0f}", "; ".join(x for x in (ratio, note) if x)])
    from tabulate import tabulate
    print(tabulate(rows, headers=["what", "best s", "median s", "peak RSS MB", "note"], tablefmt="github"))


if __name__ == "__main__":
    main()
