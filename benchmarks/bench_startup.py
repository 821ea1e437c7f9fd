"""The fixed cost of a `duckprof` process: CPU seconds (user + sys of the
child, DuckDB's threads included) and wall of whole commands that do little
besides starting (--help, --version, a query on a 19-event trace or on a
small database, a report on it, `schema`), and of the imports under them,
each run in a fresh process, the checkouts interleaved in every round.

    python benchmarks/bench_startup.py [--tree DIR,DIR] [--repeat 9] [--trace FILE ...]

--tree: duckprof checkouts (PYTHONPATH), e.g. a baseline and this one.
Bytecode is cached under /tmp/duckprof-pyc/<tree> with PYTHONDONTWRITEBYTECODE
unset (an installed package has its bytecode; a checkout without __pycache__
under PYTHONDONTWRITEBYTECODE compiles every module in every run). One
uncounted run of each command first. --trace: also `query "select count(*)
from events" FILE`, and `json.load` of FILE in a process of its own (a .json.gz
through gzip.open: before 2026-12-07 it was opened as text, which fails).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = os.path.join(REPO, "fixtures", "handmade", "nesting3.json")
COUNT = "select count(*) from events"


def run(cmd, tree, env_extra=None):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join("/tmp/duckprof-pyc", os.path.abspath(tree).strip("/").replace("/", "_"))
    env["PYTHONPATH"] = tree
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read()
    p.stderr.close()
    if status:
        raise SystemExit(f"{' '.join(cmd)} in {tree} failed: {err.decode()[-500:]}")
    return ru.ru_utime + ru.ru_stime, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", default=REPO, help="comma-separated duckprof checkouts")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--trace", nargs="*", default=[])
    a = ap.parse_args()
    trees = [t.strip() for t in a.tree.split(",") if t.strip()]
    py = sys.executable
    tmp = tempfile.mkdtemp(prefix="duckprof-startup-")
    db = os.path.join(tmp, "small.duckdb")
    run([py, "-m", "duckprof", "load", SMALL, "--db", db, "-q"], trees[-1])
    cases = [("python -c pass", [py, "-c", "pass"], False),
             ("import duckdb", [py, "-c", "import duckdb"], False),
             ("import duckprof", [py, "-c", "import duckprof"], True),
             ("import duckprof.cli", [py, "-c", "import duckprof.cli"], True),
             ("duckprof --help", [py, "-m", "duckprof", "--help"], True),
             ("duckprof --version", [py, "-m", "duckprof", "--version"], True),
             ("duckprof schema kernels", [py, "-m", "duckprof", "schema", "kernels"], True),
             ("query count, 19-event trace", [py, "-m", "duckprof", "query", COUNT, SMALL], True),
             ("query on --db (small)", [py, "-m", "duckprof", "query", "select 1", "--db", db], True),
             ("report ops, 19-event trace", [py, "-m", "duckprof", "report", "ops", SMALL], True)]
    for f in a.trace:
        cases.append((f"query count, {os.path.basename(f)}", [py, "-m", "duckprof", "query", COUNT, f], True))
        cases.append((f"json.load, {os.path.basename(f)}",
                      [py, "-c", "import json, gzip, sys; p = sys.argv[1]; "
                                 "json.load(gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb'))", f], False))
    jobs = [(label, cmd, t) for label, cmd, per_tree in cases for t in (trees if per_tree else trees[:1])]
    for label, cmd, t in jobs:
        run(cmd, t)  # compiles the bytecode
    got = {(label, t): [] for label, _, t in jobs}
    for _ in range(a.repeat):
        for label, cmd, t in jobs:
            got[(label, t)].append(run(cmd, t))
    print(f"median of {a.repeat} (min-max), load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"| command | {' | '.join(trees)} |")
    print("|---|" + "---|" * len(trees))
    for label, _, per_tree in cases:
        cells = []
        for t in (trees if per_tree else trees[:1]) + ([] if per_tree else [None] * (len(trees) - 1)):
            if t is None:
                cells.append("")
                continue
            v = got[(label, t)]
            cpu = sorted(x[0] for x in v)
            wall = statistics.median(x[1] for x in v)
            cells.append(f"{statistics.median(cpu):.3f} ({cpu[0]:.3f}-{cpu[-1]:.3f}), wall {wall:.3f}")
        print(f"| {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
