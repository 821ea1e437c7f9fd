"""One load statement by statement: the CPU seconds of the process around each
statement the loader's connection runs (every thread), and DuckDB's JSON
profile of each, with its costliest operators.

    python benchmarks/profile_load.py TRACE --db /tmp/me_prof.duckdb --out /tmp/prof [--top 8]
    python benchmarks/profile_load.py TRACE --out /tmp/prof     # into memory, as `duckprof query TRACE`
    python benchmarks/profile_load.py TRACE --db F --out /tmp/prof --cli   # as `duckprof load TRACE --db F`

The database file is replaced. Statements on the stagers' cursors (the
parses of the chunks, which run beside the split) are not wrapped: the
difference between the total and the sum of the statements is mostly theirs.
Operator times in DuckDB's profile are summed over threads and include
waiting on a loaded machine: read them as shares of a statement.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import duckprof  # noqa: E402
import duckprof.load as L  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Profiled:
    """The loader's connection, each execute profiled into OUT/NNN.json."""

    def __init__(self, con, out: str, stats: list):
        self._c, self._out, self._stats = con, out, stats

    def __getattr__(self, name):
        return getattr(self._c, name)

    def execute(self, sql, params=None):
        n = len(self._stats) + 1
        path = os.path.join(self._out, f"{n:03d}.json")
        # set before the statement: a PRAGMA after it would replace its result
        self._c.execute("PRAGMA enable_profiling = 'json'")
        self._c.execute(f"PRAGMA profiling_output = '{path}'")
        c0, w0 = cpu(), time.perf_counter()
        try:
            return self._c.execute(sql) if params is None else self._c.execute(sql, params)
        finally:
            self._stats.append((n, cpu() - c0, time.perf_counter() - w0, sql.strip().splitlines()[0][:80]))


def operators(node, acc, depth=0):
    acc.append((node.get("timing", 0) or 0, depth, node.get("type"), node.get("intermediate_rows"),
                {k: v for k, v in node.get("extra_info", {}).items() if k not in ("Projections",
                                                                                 "Estimated Cardinality")}))
    for child in node.get("children", []):
        operators(child, acc, depth + 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--db", default=None, help="the database file (default: in memory)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--top", type=int, default=8, help="statements whose operators are listed")
    ap.add_argument("--cli", action="store_true",
                    help="load as `duckprof load TRACE --db DB` does (session.load_into: its own connection, "
                         "its memory settings) instead of through a Session on the file")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    stats: list = []
    init = L.Loader.__init__

    def profiled_init(self, con, *args, **kw):
        init(self, Profiled(con, a.out, stats), *args, **kw)

    L.Loader.__init__ = profiled_init
    if a.db and os.path.exists(a.db):
        os.remove(a.db)
    c0, w0 = cpu(), time.perf_counter()
    if a.cli:
        if not a.db:
            ap.error("--cli needs --db")
        from duckprof.session import load_into
        load_into(a.db, [a.trace], run="profile")
    else:
        with duckprof.connect(a.db) as s:
            s.load([a.trace], run="profile")
    print(f"total: {cpu() - c0:.2f} CPU-s, {time.perf_counter() - w0:.2f} s wall; "
          f"statements: {sum(x[1] for x in stats):.2f} CPU-s")
    kinds: dict = {}
    for _, c, w, first in stats:
        k = kinds.setdefault(first, [0, 0.0, 0.0])
        k[0] += 1
        k[1] += c
        k[2] += w
    print("by statement (count, CPU-s, wall s):")
    for first, (count, c, w) in sorted(kinds.items(), key=lambda x: -x[1][1])[:15]:
        print(f"  {count:4d} x {c:6.2f} CPU-s {w:6.2f} s  {first}")
    ranked = sorted(stats, key=lambda x: -x[1])
    for n, c, w, first in ranked[:25]:
        print(f"{n:03d}  {c:6.2f} CPU-s {w:6.2f} s  {first}")
    for n, c, _, first in ranked[:a.top]:
        path = os.path.join(a.out, f"{n:03d}.json")
        if not os.path.exists(path):
            continue
        acc: list = []
        for node in json.load(open(path)).get("operator", []):
            operators(node, acc)
        total = sum(x[0] for x in acc) or 1
        print(f"\n{n:03d} {first} ({c:.2f} CPU-s): operators over 2% of {total:.2f} s")
        for t, depth, kind, rows, extra in acc:
            if t > 0.02 * total:
                print(f"  {100 * t / total:5.1f}% {'  ' * depth}{kind} rows={rows} {json.dumps(extra)[:140]}")


if __name__ == "__main__":
    main()
