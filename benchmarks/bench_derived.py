"""The statements a load runs after its inserts (sql/load/derived_*.sql and
trace_facts.sql), each alone on a database that holds loaded traces: wall and
CPU seconds, optionally DuckDB's JSON profile of each, and an alternative SQL
file for one table checked against the stored rows.

    cp /tmp/final_1gb.duckdb /tmp/me_1gb.duckdb          # never a database someone else reads
    python benchmarks/bench_derived.py --db /tmp/me_1gb.duckdb
    python benchmarks/bench_derived.py --db DB --only derived_call_totals --profile /tmp/prof
    python benchmarks/bench_derived.py --db DB --only derived_launches --sql NEW.sql --repeat 3

Each statement runs in a transaction that is rolled back: the table's rows of
every trace are deleted, then computed again, as a load computes them for its
traces. With --sql, NEW.sql (a Jinja template like sql/load/derived_*.sql) runs
after the packaged one in each round, and the rows it writes are compared with
those the database holds (EXCEPT ALL both ways). CPU seconds are the process's, every
thread.
"""

from __future__ import annotations

import argparse
import os
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


def run(con, table, sql, ids, profile=None, compare=False):
    """Seconds (wall, CPU) of sql filling `table` again; with compare, also
    (rows of the stored table missing, extra rows)."""
    con.execute("BEGIN TRANSACTION")
    try:
        if compare:
            con.execute(f"CREATE TEMP TABLE bench_stored AS SELECT * FROM {table}")
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
        diff = None
        if compare:
            diff = tuple(con.execute(f"SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})")
                         .fetchall()[0][0] for a, b in (("bench_stored", table), (table, "bench_stored")))
        return secs, diff
    finally:
        con.execute("ROLLBACK")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="a duckprof database file (it is not changed)")
    ap.add_argument("--only", default=",".join(TABLES), help="comma-separated: " + ", ".join(TABLES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", default=None, help="directory for DuckDB's JSON profile of each statement")
    ap.add_argument("--sql", default=None, help="an alternative SQL file for the one table of --only")
    args = ap.parse_args(argv)
    tables = args.only.split(",")
    if args.sql and len(tables) != 1:
        ap.error("--sql compares one table: give it with --only")
    with duckprof.connect(args.db) as s:
        con = s.con
        ids = [r[0] for r in con.execute("SELECT trace_id FROM traces ORDER BY 1").fetchall()]
        for _ in range(args.repeat):
            for t in tables:
                secs, _ = run(con, t, statement(t), ids, args.profile)
                print(f"{t}: {secs[0]:.2f} s wall, {secs[1]:.2f} CPU-s", flush=True)
                if args.sql:
                    with open(args.sql) as f:
                        secs, diff = run(con, t, statement(t, f.read()), ids, compare=True)
                    print(f"{t} ({args.sql}): {secs[0]:.2f} s wall, {secs[1]:.2f} CPU-s; rows of the database "
                          f"missing: {diff[0]}, extra: {diff[1]}", flush=True)


if __name__ == "__main__":
    main()
