"""`duckprof report ops` against HTA's CPU operator summary, on the same trace, in
one run.

    python benchmarks/bench_ops_vs_hta.py                              # 100 MB synthetic trace
    python benchmarks/bench_ops_vs_hta.py --trace /work/bench/synth_1gb.json --db /tmp/runs.duckdb
    python benchmarks/bench_ops_vs_hta.py --hta-python /work/venv-ref/bin/python

duckprof: the trace loaded into a database file once (timed: `load`), then `duckprof
report ops --db DB` as a user runs it, a fresh CLI process each time (start-up,
read-only open, the report, printing), median of --repeat runs; and `duckprof report
ops TRACE` from the file (load into memory + report, one process).
HTA (HolisticTraceAnalysis, in --hta-python): what a user runs for a CPU operator
summary: hta.trace_diff.LabeledTrace(trace_dir=...) (parses the trace) and
get_ops_summary(extract_ops(iteration=<every step>, device_type=CPU)) (count and
total duration per category and name), timed as parse and summary. HTA has no
report from a stored database: every question starts by parsing the trace.
ratio = HTA (parse + summary) / duckprof report ops --db; e2e ratio = HTA (parse +
summary) / duckprof report ops from the trace file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import textwrap

from common import reference_python, run_once, synthetic_trace  # noqa: E402

HTA_CHILD = textwrap.dedent("""
    import json, os, sys, tempfile, time
    trace = sys.argv[1]
    d = tempfile.mkdtemp(prefix="hta_ops_bench_")
    os.symlink(os.path.abspath(trace), os.path.join(d, "rank0" + (".json.gz" if trace.endswith(".gz") else ".json")))
    from hta.trace_diff import DeviceType, LabeledTrace
    t0 = time.perf_counter()
    lt = LabeledTrace(trace_dir=d)
    t1 = time.perf_counter()
    ops = lt.extract_ops(iteration=lt.iterations(), device_type=DeviceType.CPU)
    summary = lt.get_ops_summary(ops)
    t2 = time.perf_counter()
    print(json.dumps({"parse": t1 - t0, "summary": t2 - t1, "rows": len(summary), "ops": len(ops)}))
""")


def cli(args) -> float:
    return run_once(args)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", help="trace file (default: the 100 MB synthetic trace)")
    ap.add_argument("--db", help="database file to load it into (default: a temporary one)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hta-python", help="Python with HolisticTraceAnalysis installed")
    ap.add_argument("--json", help="write the results to this file")
    a = ap.parse_args()
    trace = a.trace or synthetic_trace("100MB")
    tmp = tempfile.mkdtemp(prefix="duckprof_ops_bench_")
    db = a.db or os.path.join(tmp, "runs.duckdb")
    result = {"trace": trace, "bytes": os.path.getsize(trace)}
    if not os.path.exists(db):
        result["load_s"] = cli(["load", trace, "--db", db, "--run", "base", "-q"])
    report = [cli(["report", "ops", "--db", db, "--run", "base"]) for _ in range(a.repeat)]
    result["report_ops_db_s"] = statistics.median(report)
    result["report_ops_file_s"] = cli(["report", "ops", trace, "-q"])
    hta_python = reference_python(a.hta_python, "hta")
    if hta_python:
        p = subprocess.run([hta_python, "-c", HTA_CHILD, trace], capture_output=True, text=True)
        result["hta"] = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else \
            {"error": p.stderr.strip().splitlines()[-1][:300]}
    hta = result.get("hta", {})
    print(f"trace {trace} ({result['bytes'] / 1e6:,.0f} MB)")
    if "load_s" in result:
        print(f"duckprof load --db:                  {result['load_s']:8.2f} s")
    print(f"duckprof report ops --db (median {a.repeat}):  {result['report_ops_db_s']:8.2f} s  "
          f"(runs: {', '.join(f'{x:.2f}' for x in report)})")
    print(f"duckprof report ops TRACE (file):     {result['report_ops_file_s']:8.2f} s")
    if "parse" in hta:
        h = hta["parse"] + hta["summary"]
        result["ratio"] = h / result["report_ops_db_s"]
        result["e2e_ratio"] = h / result["report_ops_file_s"]
        print(f"HTA parse + CPU op summary:           {h:8.2f} s  (parse {hta['parse']:.2f}, "
              f"summary {hta['summary']:.2f}; {hta['rows']} rows)")
        print(f"ratio (HTA / report ops --db):        {result['ratio']:8.1f}x")
        print(f"e2e ratio (HTA / report ops TRACE):   {result['e2e_ratio']:8.1f}x")
    elif hta:
        print(f"HTA: {hta}")
    else:
        print("HTA: not installed (pass --hta-python)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
