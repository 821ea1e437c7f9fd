"""Where a load's time goes: per phase, wall and CPU seconds, for each input,
side by side with `json.load` and `duckdb-raw` (bench_load.py's floor: the same
chunks parsed by one read_json into a table, nothing else) in one run.

    python benchmarks/bench_load_phases.py FILE_OR_DIR ...        # into a database file
    python benchmarks/bench_load_phases.py --memory FILE ...      # in memory, as `duckprof query` does
    python benchmarks/bench_load_phases.py --corpus               # every trace of ../shared/traces
    python benchmarks/bench_load_phases.py --shapes stack:40MB,serving:34MB,mi300x_resnet_act_checkpoint:40MB
                      # real-shaped traces, generated once (benchmarks/common.py shaped_trace): synthetic
                      # with_stack / serving (fractional epoch ts) traces, corpus traces grown by replicate_trace.py
    python benchmarks/bench_load_phases.py --profile FILE         # also DuckDB's per-operator profile
    python benchmarks/bench_load_phases.py --joined RANK_DIR      # and one file of the same events

Phases (duckprof's Loader and Session methods, timed by wrapping them; no
change to the loader): split (copy/decompress into chunk files; the chunks'
parses start in the background meanwhile, so its CPU includes some parsing),
parse+validate (wait for the staged chunks, validate.sql; since issue 19 also
the exact text of fractional absolute timestamps, read from each chunk as it is
parsed), exact_ts (before issue 19: the second read of the file for those),
nesting, insert (insert_events.sql, the
traces rows; one file into memory since 2026-12-07: the parse too, which that
insert reads itself, and its direct_check.sql), estimates, trace_facts, derived (schema 4's derived tables,
session.fill_derived: the sum of derived_launches, derived_kernel_estimates,
derived_memory_events and derived_call_totals, each also shown), rest
(what no phase holds: the schema, the COMMIT, the count query, Python
between phases; it was called `commit` before 2026-11-25, and its CPU was
not measured), checkpoint (and close). In memory (--memory) the estimates, trace_facts and
derived tables are left to first use since issue 19 (session.DEFERRED): 0 here
unless the query reads them; so is the nesting (its phase then counts the
fill: the nesting of the stored events and the UPDATE of their columns). CPU is
the process's CPU seconds during the phase (every thread). `load+count` is
what the issue's targets measure: connect, load, `select count(*) from
events`. Each tool runs in a fresh subprocess, --repeat times; the median is
shown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

from common import REPO, add_trace_args, joined_ranks, trace_paths

DERIVED = ["derived_launches", "derived_kernel_estimates", "derived_memory_events", "derived_call_totals"]
PHASES = ["split", "parse+validate", "exact_ts", "nesting", "insert", "estimates", "trace_facts", "derived", *DERIVED,
          "rest", "checkpoint"]

DUCKPROF = """
import duckprof, duckprof.load as L, duckprof.session as S, duckprof.estimators as E
wall = {}; cpu = {}
stack = []
def timed(name, f):
    def g(*a, **k):
        w0, c0 = time.perf_counter(), time.process_time()
        stack.append([name, 0.0, 0.0])
        try:
            return f(*a, **k)
        finally:
            _, cw, cc = stack.pop()
            dw, dc = time.perf_counter() - w0, time.process_time() - c0
            wall[name] = wall.get(name, 0) + dw - cw
            cpu[name] = cpu.get(name, 0) + dc - cc
            if stack:  # time of a nested phase is not its caller's
                stack[-1][1] += dw; stack[-1][2] += dc
    return g
L.Loader._split = timed('split', L.Loader._split)
if hasattr(L, '_Grouper'):  # a small file's events written into its group's file: part of the split
    L._Grouper.add = timed('split', L._Grouper.add)
L.Loader._finish = timed('parse+validate', L.Loader._finish)
if hasattr(L.Loader, '_finish_group'):  # small files parsed in groups (issue 17/19)
    L.Loader._finish_group = timed('parse+validate', L.Loader._finish_group)
if hasattr(L.Loader, '_exact_ts'):  # before: a second read of the file at nesting
    L.Loader._exact_ts = timed('exact_ts', L.Loader._exact_ts)
L.Loader._nest = timed('nesting', L.Loader._nest)
if hasattr(S, '_nest_deferred'):  # an in-memory load's nesting, at first use (issue 19)
    S._nest_deferred = timed('nesting', S._nest_deferred)
    S.DEFERRED[S.NESTING] = timed('nesting', S.DEFERRED[S.NESTING])
L.Loader._insert = timed('insert', L.Loader._insert)
E.add_estimates = timed('estimates', E.add_estimates)
S.fill_trace_facts = timed('trace_facts', S.fill_trace_facts)
if hasattr(S, 'fill_derived'):  # schema 4's derived tables (called by fill_trace_facts): each table
    _fill = S.fill_derived        # a phase of its own, 'derived' their sum
    def fill_each(con, ids, _all=tuple(S.DERIVED), _from=getattr(S, 'DERIVED_FROM', None)):
        # one table per call: the skip of a table whose sources got no rows
        # (DERIVED_FROM) cannot see the other calls, so every table is filled
        try:
            if _from is not None:
                S.DERIVED_FROM = {}
            for t in _all:
                S.DERIVED = (t,)
                timed(t, _fill)(con, ids)
        finally:
            S.DERIVED = _all
            if _from is not None:
                S.DERIVED_FROM = _from
    S.fill_derived = fill_each
if hasattr(S, 'checkpoint_without_vacuum'):  # a function of the module since issue 17
    S.checkpoint_without_vacuum = timed('checkpoint', S.checkpoint_without_vacuum)
else:
    S.Session._checkpoint_without_vacuum = timed('checkpoint', S.Session._checkpoint_without_vacuum)
db = None if MEMORY else os.path.join(tmp, 'bench.duckdb')
t0 = time.perf_counter(); c0 = time.process_time()
s = duckprof.connect(db)
t1 = time.perf_counter(); c1 = time.process_time()
if PROFILE:
    s.con.execute("PRAGMA enable_profiling = 'json'")
    s.con.execute("PRAGMA profiling_output = '" + os.path.join(tmp, 'profile.json') + "'")
s.load(files, run='bench')
n = s.sql("select count(*) from events").fetchall()[0][0]
t2 = time.perf_counter(); c2 = time.process_time()
s.close()
secs = time.perf_counter() - t0
close = time.perf_counter() - t2
wall['checkpoint'] = wall.get('checkpoint', 0) + close
cpu['checkpoint'] = cpu.get('checkpoint', 0) + time.process_time() - c2
accounted = sum(wall.values())
accounted_cpu = sum(cpu.values())
for d in (wall, cpu):
    d['derived'] = sum(d.get(t, 0) for t in ['derived_launches', 'derived_kernel_estimates', 'derived_memory_events', 'derived_call_totals'])
wall['connect'] = t1 - t0; cpu['connect'] = c1 - c0
wall['rest'] = secs - wall['connect'] - accounted  # the schema, COMMIT, count query, Python
cpu['rest'] = time.process_time() - c0 - cpu['connect'] - accounted_cpu
extra = {'phases': wall, 'cpu': cpu, 'cpu_total': time.process_time() - c0}
"""

RAW = """
from raw_load import raw_load
t0 = time.perf_counter(); c0 = time.process_time()
n = raw_load(files, tmp, None if MEMORY else os.path.join(tmp, 'raw.duckdb'))
secs = time.perf_counter() - t0
extra = {'cpu_total': time.process_time() - c0}
"""

JSON = """
import gzip
t0 = time.perf_counter(); c0 = time.process_time()
n = 0
for p in files:
    with (gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb')) as f:
        n += len(json.load(f)['traceEvents'])
secs = time.perf_counter() - t0
extra = {'cpu_total': time.process_time() - c0}
"""

PRELUDE = """
import os, sys, time, json, resource, tempfile
sys.path.insert(0, {repo!r})
sys.path.append({bench!r})  # raw_load
path = {path!r}
MEMORY = {memory!r}
PROFILE = {profile!r}
files = sorted(os.path.join(path, f) for f in os.listdir(path)) if os.path.isdir(path) else [path]
tmp = tempfile.mkdtemp(prefix='duckprof-bench-')
"""
POSTLUDE = """
import shutil
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if PROFILE and os.path.exists(os.path.join(tmp, 'profile.json')):
    extra['profile'] = open(os.path.join(tmp, 'profile.json')).read()
shutil.rmtree(tmp, ignore_errors=True)
print('RESULT ' + json.dumps({'seconds': secs, 'events': int(n), 'peak_rss_bytes': rss, **extra}))
"""
TOOLS = {"duckprof": DUCKPROF, "duckdb-raw": RAW, "json": JSON}


def run_child(tool, path, memory, profile=False, timeout=1800, repo=REPO):
    code = PRELUDE.format(repo=repo, bench=os.path.dirname(os.path.abspath(__file__)), path=path, memory=memory,
                          profile=profile) \
        + textwrap.dedent(TOOLS[tool]) + POSTLUDE
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{tool} on {path}: " + (p.stderr.strip().splitlines() or ["no output"])[-1])


def json_bytes(path):
    import gzip
    files = [os.path.join(path, f) for f in os.listdir(path)] if os.path.isdir(path) else [path]
    total = 0
    for f in files:
        if f.endswith(".gz"):
            with gzip.open(f, "rb") as g:
                while chunk := g.read(1 << 24):
                    total += len(chunk)
        else:
            total += os.path.getsize(f)
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_trace_args(ap)
    ap.add_argument("--before", default=None,
                    help="another duckprof checkout (e.g. `git archive main | tar -x -C DIR`): its load is "
                         "measured too, as tool 'before', in the same rounds")
    ap.add_argument("--memory", action="store_true", help="load into memory (as `duckprof query FILE` does)")
    ap.add_argument("--joined", action="store_true",
                    help="after each rank directory, one file of all its events (common.joined_ranks): "
                         "what the job costs beyond its events")
    ap.add_argument("--tools", default="duckprof,duckdb-raw,json")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="print DuckDB's JSON profile of the slowest statements (one duckprof run)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    paths = trace_paths(args)
    if args.joined:
        paths = [q for p in paths for q in ([p, joined_ranks(p, args.data_dir)] if os.path.isdir(p) else [p])]
    tools = args.tools.split(",")
    if args.before:
        tools.insert(1, "before")
        TOOLS["before"] = DUCKPROF
    rows, phase_rows, results = [], [], []
    for path in paths:
        size = json_bytes(path)
        runs = {t: [] for t in tools}
        for _ in range(args.repeat):
            for t in tools:  # rounds over the tools: a machine slowing down slows all alike
                runs[t].append(run_child(t, path, args.memory, repo=args.before if t == "before" else REPO))
        med = {t: statistics.median(r["seconds"] for r in rs) for t, rs in runs.items()}
        name = os.path.basename(path.rstrip("/"))
        for t in tools:
            rs = runs[t]
            r = {"tool": t, "file": name, "json_bytes": size, "seconds": med[t],
                 "runs": [x["seconds"] for x in rs], "events": rs[0]["events"],
                 "cpu_seconds": statistics.median(x["cpu_total"] for x in rs),
                 "peak_rss_bytes": max(x["peak_rss_bytes"] for x in rs)}
            if "phases" in rs[0]:
                r["phases"] = {p: statistics.median(x["phases"].get(p, 0) for x in rs) for p in PHASES + ["connect"]}
                r["cpu"] = {p: statistics.median(x["cpu"].get(p, 0) for x in rs) for p in PHASES + ["connect"]}
            results.append(r)
        row = [name, size / 1e6, runs[tools[0]][0]["events"]]
        for t in tools:
            row.append(f"{med[t]:.2f} ({statistics.median(x['cpu_total'] for x in runs[t]):.2f})")
        for t in tools[1:]:
            row.append(med[t] / med[tools[0]])  # > 1: duckprof faster
        row.append(max(x["peak_rss_bytes"] for x in runs[tools[0]]) / size)
        rows.append(row)
        for dp in (r for r in results if r["file"] == name and "phases" in r):
            phase_rows.append([name, dp["tool"]] + [f"{dp['phases'][p]:.2f} ({dp['cpu'][p]:.2f})" for p in PHASES])
        if args.profile and "duckprof" in tools:
            prof = run_child("duckprof", path, args.memory, profile=True)
            print(prof.get("profile", "no profile written")[:20000])
    from tabulate import tabulate
    where = "in memory" if args.memory else "into a database file"
    print(f"load + count(*), {where}: median wall seconds of {args.repeat} runs (CPU seconds, every thread); "
          "'/ duckprof' columns: that tool's wall time / duckprof's (> 1: duckprof faster)")
    print(tabulate(rows, headers=["file", "JSON MB", "events"] + tools + [f"{t} / duckprof" for t in tools[1:]]
                   + [f"{tools[0]} RSS / JSON"], floatfmt=",.2f", tablefmt="github"))
    if phase_rows:
        print("\nduckprof per phase: wall seconds (CPU seconds of every thread)")
        print(tabulate(phase_rows, headers=["file", "tool"] + PHASES, tablefmt="github"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
