"""Every report as a user runs it: `duckprof report ... --db DB --run RUN`, a
fresh process each time (start-up, opening the database read-only, the
report, printing), median of --repeat runs.

    python benchmarks/bench_reports.py --db runs.duckdb --run base
    python benchmarks/bench_reports.py --db runs.duckdb --run base --only kernels,idle
    python benchmarks/bench_reports.py --db runs.duckdb --run base --json before.json
    python benchmarks/bench_reports.py --db runs.duckdb --run base --compare before.json

Without --db it builds one from the 1 GB synthetic trace (benchmarks/common.py).
--compare prints a before/after table against a --json file of an earlier run
(e.g. of another commit, same machine, same database). The commands are the CLI's,
so the same file measures any version of duckprof.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from common import REPO, run_once, synthetic_trace  # noqa: E402

# name -> arguments after `duckprof`; {db} and {run} are filled in
COMMANDS = {
    "report kernels": ["report", "kernels"],
    "report kernels --group-by-launch --limit 0": ["report", "kernels", "--group-by-launch", "--limit", "0"],
    "report idle": ["report", "idle"],
    "report idle --by event --limit 15": ["report", "idle", "--by", "event", "--limit", "15"],
    "report gpu-time": ["report", "gpu-time"],
    "report gpu-time --by-step": ["report", "gpu-time", "--by-step"],
    "report queue": ["report", "queue"],
    "report temporal": ["report", "temporal"],
    "report ops-by-step": ["report", "ops-by-step"],
    "report ops": ["report", "ops"],
    "report ops --group-by-input-shape": ["report", "ops", "--group-by-input-shape"],
    "report ops --group-by-stack 5": ["report", "ops", "--group-by-stack", "5"],
    "report categories": ["report", "categories"],
    "report categories --by-step": ["report", "categories", "--by-step"],
    "report steps": ["report", "steps"],
    "report steps --breakdown tensorboard": ["report", "steps", "--breakdown", "tensorboard"],
    "report memory": ["report", "memory"],
    "report memory --ops": ["report", "memory", "--ops"],
    "report patterns": ["report", "patterns"],
    "report patterns --list": ["report", "patterns", "--list"],
    "runs": ["runs"],
    "html": ["html", "-o", os.path.join(tempfile.gettempdir(), "duckprof_bench_reports_page.html")],
    "query count(*) from cpu_ops by name": [
        "query", "select name, count(*), sum(self_ns) from cpu_ops group by 1 order by 3 desc limit 20"],
}
NO_RUN = {"runs", "query count(*) from cpu_ops by name"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="database file (default: the 1 GB synthetic trace, loaded once)")
    ap.add_argument("--run", default="base")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", help="comma-separated command names (prefix match)")
    ap.add_argument("--json", help="write the medians to this file")
    ap.add_argument("--compare", help="a --json file of an earlier run: print before/after")
    ap.add_argument("--against", metavar="REPO:DB",
                    help="another checkout of duckprof and its database: run each command with it too, "
                         "interleaved with this one, and print both (same machine, same minutes)")
    a = ap.parse_args()
    db = a.db
    if not db:
        trace = synthetic_trace("1GB")
        db = os.path.splitext(trace)[0] + ".duckdb"
        if not os.path.exists(db):
            subprocess.run([sys.executable, "-m", "duckprof", "load", trace, "--db", db, "--run", a.run, "-q"],
                           check=True, env=dict(os.environ, PYTHONPATH=REPO))
    names = [n for n in COMMANDS if not a.only or any(n.startswith("report " + o) or n.startswith(o)
                                                       for o in a.only.split(","))]
    before = json.load(open(a.compare)) if a.compare else {}
    other_repo, other_db = a.against.split(":", 1) if a.against else (None, None)
    results = {}
    print(f"database {db} ({os.path.getsize(db) / 1e6:,.0f} MB), run {a.run!r}, median of {a.repeat}")
    cols = f"{'command':<44} {'wall s':>7} {'cpu s':>6}"
    if before:
        cols += f" {'before s':>9} {'ratio':>6}"
    if other_repo:
        cols += f" {'other wall':>10} {'other cpu':>9} {'cpu ratio':>9}"
    print(cols)
    for name in names:
        args = [*COMMANDS[name], "--db", db] + ([] if name in NO_RUN else ["--run", a.run])
        try:
            mine, theirs = [], []
            for _ in range(a.repeat):
                mine.append(run_once(args))
                if other_repo:
                    theirs.append(run_once([*COMMANDS[name], "--db", other_db]
                                           + ([] if name in NO_RUN else ["--run", a.run]), repo=other_repo))
        except RuntimeError as e:
            print(f"{name:<44} skipped: {e}")
            continue
        wall, cpu = statistics.median(t for t, _ in mine), statistics.median(c for _, c in mine)
        results[name] = {"wall_s": wall, "cpu_s": cpu}
        line = f"{name:<44} {wall:7.2f} {cpu:6.2f}"
        if name in before:
            b = before[name]["wall_s"] if isinstance(before[name], dict) else before[name]
            line += f" {b:9.2f} {wall / b:6.2f}"
        if theirs:
            ow, oc = statistics.median(t for t, _ in theirs), statistics.median(c for _, c in theirs)
            results[name].update(other_wall_s=ow, other_cpu_s=oc)
            line += f" {ow:10.2f} {oc:9.2f} {cpu / oc:9.2f}"
        print(line, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
