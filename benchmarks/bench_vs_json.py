"""Issue 19's small- and medium-trace goal, both ways: load + `select count(*)
from events` against Python's `json.load` of the same file, per trace.

    python benchmarks/bench_vs_json.py --corpus --shapes stack:40MB,serving:34MB,mi300x_resnet_act_checkpoint:40MB
    python benchmarks/bench_vs_json.py --tree /work/wt-base,. --repeat 5 FILE ...

In process: a fresh process per run whose imports (duckprof, duckdb, json,
gzip) are done before the clock starts; duckprof's figure is connect, load,
the count query and close (what bench_load_phases.py calls load+count),
json's is `json.load` of the file as the user has it (a .json.gz through
gzip.open: the decompression is part of reading it, as for duckprof).
Whole process: `python -m duckprof query "select count(*) from events"
TRACE` against `python -c "import json, gzip, sys; json.load(...)" TRACE`,
the interpreter's start and imports included. CPU seconds are user + sys of
the whole child (every thread; wait4), the figure to read on a shared
machine; walls are shown too. Every tool, tree and mode runs once per round,
interleaved, --repeat rounds, after one uncounted round; medians. Bytecode is
cached per tree (/tmp/duckprof-pyc/<tree>, PYTHONDONTWRITEBYTECODE unset),
as an installed package has it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from common import REPO, add_trace_args, run_measured, trace_paths  # noqa: E402

COUNT = "select count(*) from events"

INPROC_DUCKPROF = r"""
import sys, time, json, gzip, os
import duckdb, duckprof, duckprof.load, duckprof.session
path = sys.argv[1]
c0, w0 = time.process_time(), time.perf_counter()
s = duckprof.connect()
s.load([path], run="bench")
n = s.sql("select count(*) from events").fetchall()[0][0]
s.close()
print("RESULT", json.dumps([time.process_time() - c0, time.perf_counter() - w0, n]))
"""

INPROC_JSON = r"""
import sys, time, json, gzip
path = sys.argv[1]
c0, w0 = time.process_time(), time.perf_counter()
with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
    n = len(json.load(f)["traceEvents"])
print("RESULT", json.dumps([time.process_time() - c0, time.perf_counter() - w0, n]))
"""

PROCESS_JSON = ("import json, gzip, sys; p = sys.argv[1]; "
                "json.load(gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb'))")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_trace_args(ap)
    ap.add_argument("--tree", default=REPO, help="comma-separated duckprof checkouts (PYTHONPATH)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--modes", default="inproc,process")
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args(argv)
    py = sys.executable
    trees = [os.path.abspath(t.strip()) for t in a.tree.split(",") if t.strip()]
    modes = a.modes.split(",")
    paths = trace_paths(a)
    jobs = []  # (key, cmd, tree)
    for path in paths:
        for mode in modes:
            if mode == "inproc":
                jobs.append(((path, mode, "json"), [py, "-c", INPROC_JSON, path], trees[0]))
                for t in trees:
                    jobs.append(((path, mode, t), [py, "-c", INPROC_DUCKPROF, path], t))
            else:
                jobs.append(((path, mode, "json"), [py, "-c", PROCESS_JSON, path], trees[0]))
                for t in trees:
                    jobs.append(((path, mode, t), [py, "-m", "duckprof", "query", COUNT, path], t))
    for _, cmd, t in jobs:  # one uncounted round: bytecode, page cache
        run_measured(cmd, t)
    got = {k: [] for k, _, _ in jobs}
    load0 = open("/proc/loadavg").read().split()[0]
    started = time.strftime("%H:%M", time.gmtime())
    for _ in range(a.repeat):
        for path in paths:  # each trace's jobs back to back, interleaved per round
            for k, cmd, t in jobs:
                if k[0] != path:
                    continue
                cpu, wall, res = run_measured(cmd, t)
                # in process: the timed part's CPU and wall (the child's own clocks)
                got[k].append((res[0], res[1]) if k[1] == "inproc" else (cpu, wall))
    load1 = open("/proc/loadavg").read().split()[0]
    print(f"{started}-{time.strftime('%H:%M', time.gmtime())} UTC, load average {load0}-{load1}, "
          f"median of {a.repeat}: CPU-s (wall s); ratio = json.load / duckprof (> 1: duckprof faster)")
    head = ["trace", "MB"]
    for mode in modes:
        head += [f"{mode} json.load"] + [f"{mode} {os.path.basename(t)}" for t in trees] + \
                [f"{mode} x {os.path.basename(t)} CPU (wall)" for t in trees]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    out = []
    for path in paths:
        from bench_load_phases import json_bytes
        row = [os.path.basename(path), f"{json_bytes(path) / 1e6:.3g}"]
        rec = {"trace": os.path.basename(path)}
        for mode in modes:
            med = {}
            for who in ["json"] + trees:
                v = got[(path, mode, who)]
                med[who] = (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
                rec[f"{mode}:{os.path.basename(who)}"] = {"cpu": [x[0] for x in v], "wall": [x[1] for x in v]}
            row.append(f"{med['json'][0]:.4f} ({med['json'][1]:.4f})")
            row += [f"{med[t][0]:.3f} ({med[t][1]:.3f})" for t in trees]
            row += [f"{med['json'][0] / med[t][0]:.2f} ({med['json'][1] / med[t][1]:.2f})" for t in trees]
        print("| " + " | ".join(row) + " |")
        out.append(rec)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
