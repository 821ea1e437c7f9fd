"""The statements a load runs after its inserts (sql/load/derived_*.sql and
trace_facts.sql), each alone on a database that holds loaded traces: wall and
CPU seconds, optionally DuckDB's JSON profile of each, and an alternative SQL
file for one table checked against the packaged statement.

    cp /tmp/final_1gb.duckdb /tmp/me_1gb.duckdb          # never a database someone else reads
    python benchmarks/bench_derived.py --db /tmp/me_1gb.duckdb
    python benchmarks/bench_derived.py --db DB --only derived_call_totals --profile /tmp/prof
    python benchmarks/bench_derived.py --db DB --only derived_launches --sql NEW.sql --repeat 5
    python benchmarks/bench_derived.py --db DB --only derived_launches --sql NEW.sql --base OLD.sql --repeat 5

Each statement runs in a transaction that is rolled back: the table's rows of
every trace are deleted, then computed again, as a load computes them for its
traces. With --sql, NEW.sql (a Jinja template like sql/load/derived_*.sql) is
first checked against the packaged statement (or --base OLD.sql): both run in one
transaction and the rows they write are compared (EXCEPT ALL both ways); then
the two alternate for --repeat rounds and the medians are printed. CPU seconds
are the process's, every thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import duckprof  # noqa: E402
from duckprof import session as S, sqlfiles  # noqa: E402

TABLES = list(S.DERIVED) + ["trace_facts"]


def statement(table: str, text: str | None = None) -> str:
    if text is not None:
        return sqlfiles._env().from_string(text).render()
    if table == "trace_facts":
        return sqlfiles.read("load/trace_facts.sql")
    return sqlfiles.render(f"load/{table}.sql")


def run(con, table, sql, ids, profile=None):
    """Seconds (wall, CPU) of sql filling `table` again."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {table}")
        if profile:
            os.makedirs(profile, exist_ok=True)
            con.execute("PRAGMA enable_profiling = 'json'")
            con.execute(f"PRAGMA profiling_output = '{os.path.join(profile, table + '.json')}'")
        w, c = time.perf_counter(), time.process_time()
        con.execute(sql, {"trace_ids": ids})
        secs = (time.perf_counter() - w, time.process_time() - c)
        if profile:
            con.execute("PRAGMA disable_profiling")
        return secs
    finally:
        con.execute("ROLLBACK")


def compare(con, table, base, new, ids):
    """(rows base writes, rows new writes, rows of base missing from new, rows of new
    not in base), counted with duplicates."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {table}")
        con.execute(base, {"trace_ids": ids})
        con.execute(f"CREATE TEMP TABLE bench_base AS SELECT * FROM {table}")
        con.execute(f"DELETE FROM {table}")
        con.execute(new, {"trace_ids": ids})
        q = "SELECT count(*) FROM (SELECT * FROM {} EXCEPT ALL SELECT * FROM {})"
        return (con.execute("SELECT count(*) FROM bench_base").fetchall()[0][0],
                con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0],
                con.execute(q.format("bench_base", table)).fetchall()[0][0],
                con.execute(q.format(table, "bench_base")).fetchall()[0][0])
    finally:
        con.execute("ROLLBACK")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="a duckprof database file (it is not changed)")
    ap.add_argument("--only", default=",".join(TABLES), help="comma-separated: " + ", ".join(TABLES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", default=None, help="directory for DuckDB's JSON profile of each statement")
    ap.add_argument("--sql", default=None, help="an alternative SQL file for the one table of --only")
    ap.add_argument("--base", default=None, help="with --sql: the SQL file it is checked and timed against "
                                                  "(default: the packaged statement)")
    args = ap.parse_args(argv)
    tables = args.only.split(",")
    if args.sql and len(tables) != 1:
        ap.error("--sql compares one table: give it with --only")
    with duckprof.connect(args.db) as s:
        con = s.con
        ids = [r[0] for r in con.execute("SELECT trace_id FROM traces ORDER BY 1").fetchall()]
        runs = {}  # label: [(wall, CPU), ...]
        labels = {t: statement(t) if not args.base else statement(t, open(args.base).read()) for t in tables}
        if args.sql:
            t, new = tables[0], statement(tables[0], open(args.sql).read())
            n_base, n_new, missing, extra = compare(con, t, labels[t], new, ids)
            print(f"{t}: {n_base} rows, {args.sql}: {n_new}; rows missing from it: {missing}, extra: {extra}",
                  flush=True)
            labels[args.sql] = new
        for _ in range(args.repeat):
            for label, sql in labels.items():
                secs = run(con, tables[0] if label == args.sql else label, sql, ids, args.profile)
                runs.setdefault(label, []).append(secs)
                print(f"{label}: {secs[0]:.2f} s wall, {secs[1]:.2f} CPU-s", flush=True)
        if args.repeat > 1:
            for label, secs in runs.items():
                print(f"{label}: median of {len(secs)}: {statistics.median(w for w, _ in secs):.2f} s wall, "
                      f"{statistics.median(c for _, c in secs):.2f} CPU-s", flush=True)


if __name__ == "__main__":
    main()
