"""Where `duckprof query "select count(*) from events" TRACE` spends its CPU,
end to end, as a new user runs it: a fresh process per run, from the
interpreter's start (its imports, the session's connect, each phase of the
load, the query and its output, the close), beside `json.load` of the same
file in a fresh process of its own.

    python benchmarks/profile_query.py TRACE ... [--repeat 3] [--tree DIR,DIR] [--query SQL]

--tree: duckprof checkouts to run (PYTHONPATH), interleaved in each round
(default: this one). Bytecode is cached under /tmp/duckprof-pyc/<tree> (an
installed package has it compiled; with PYTHONDONTWRITEBYTECODE a checkout
would compile every module in every run). CPU is the process's (every
thread: DuckDB's too); the median of the runs is shown, after one run of
each that is not counted (it compiles the bytecode).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
marks = [("interpreter start", time.process_time(), time.perf_counter())]
def mark(name):
    marks.append((name, time.process_time(), time.perf_counter()))
if sys.argv[1] == "json":
    with open(sys.argv[2], "rb") as f:
        n = len(json.load(f)["traceEvents"])
    mark("json.load")
    print("RESULT " + json.dumps({"marks": marks, "phases": {}}))
    raise SystemExit
import duckdb
mark("import duckdb")
import duckprof.cli as cli
mark("import duckprof.cli (typer, jinja2, ...)")
import duckprof.load as L, duckprof.session as S, duckprof.render as R
phases = {}
def timed(name, f):
    def g(*a, **k):
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            c, w = phases.get(name, (0, 0))
            phases[name] = (c + time.process_time() - c0, w + time.perf_counter() - w0)
    return g
for name, attr in (("split", "_split"), ("parse+validate", "_finish"), ("parse+validate", "_finish_group"),
                   ("nesting", "_nest"), ("insert", "_insert")):
    if hasattr(L.Loader, attr):
        setattr(L.Loader, attr, timed(name, getattr(L.Loader, attr)))
S.Session.__init__ = timed("connect", S.Session.__init__)
S.Session.load = timed("load", S.Session.load)
S.Session.sql = timed("query (fills included)", S.Session.sql)
R.emit = timed("query: run and output", R.emit)
S.Session.close = timed("close", S.Session.close)
try:
    cli.app(["query", sys.argv[3], sys.argv[2], "--quiet", "--format", "csv"])
except SystemExit as e:
    if e.code:
        raise
mark("the command")
print("RESULT " + json.dumps({"marks": marks, "phases": phases}))
"""


def run(tree: str | None, path: str, query: str) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join("/tmp/duckprof-pyc", (tree or "json").strip("/").replace("/", "_"))
    if tree:
        env["PYTHONPATH"] = tree
    # run in the checkout: `python -c` puts the working directory first on sys.path
    p = subprocess.run([sys.executable, "-c", CHILD, "json" if tree is None else "duckprof", path, query],
                       env=env, capture_output=True, text=True, cwd=tree or "/")
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            got = json.loads(line[7:])
            marks = got["marks"]
            out = {"interpreter start": marks[0][1]}
            for (_, c0, _), (name, c1, _) in zip(marks, marks[1:]):
                out[name] = c1 - c0
            load = got["phases"].get("load")
            if load:
                inner = sum(v[0] for k, v in got["phases"].items()
                            if k in ("split", "parse+validate", "nesting", "insert"))
                out.update({f"  {k}": v[0] for k, v in got["phases"].items() if k != "load"})
                out["  load: the rest (snapshot, transaction, Python)"] = load[0] - inner
            out["total"] = marks[-1][1]
            return out
    raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "no output")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", default=REPO, help="duckprof checkouts, comma-separated")
    ap.add_argument("--query", default="select count(*) from events")
    a = ap.parse_args()
    trees = a.tree.split(",")
    for path in a.traces:
        runs: dict = {}
        for tree in trees + [None]:  # its bytecode cached (not counted)
            run(tree, path, a.query)
        for _ in range(a.repeat):
            for tree in trees + [None]:
                runs.setdefault(tree, []).append(run(tree, path, a.query))
        print(f"\n{os.path.basename(path)}: CPU-s, median of {a.repeat} (load average {os.getloadavg()[0]:.1f})")
        names = [k for k in runs[trees[0]][0]]
        print("| phase | " + " | ".join(os.path.basename(t.rstrip('/')) for t in trees) + " |")
        print("|---|" + "---|" * len(trees))
        for k in names:
            print(f"| {k} | " + " | ".join(f"{statistics.median(r.get(k, 0) for r in runs[t]):.3f}" for t in trees)
                  + " |")
        print(f"| json.load, whole process | {statistics.median(r['total'] for r in runs[None]):.3f} |")


if __name__ == "__main__":
    main()
