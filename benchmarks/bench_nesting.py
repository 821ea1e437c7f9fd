"""nesting.sql alone, each of its variants on the same host events, alternating,
with the rows compared (a hash of all four nesting columns of every event):

    python benchmarks/bench_nesting.py --db DB [--repeat 3] [--variants check,packed] [--profile DIR]
    python benchmarks/bench_nesting.py --db DB --sql NEW.sql [--base OLD.sql] --variants packed,all --repeat 5

DB: a loaded database (opened read-only; e.g. a copy of a 1 GB load). Its
host events (the rows nesting.sql's `host` CTE selects, read from `events`
instead of the staged chunks) are copied into an in-memory table once; each
variant then runs nesting.sql's statement with that CTE replaced by a read of
the table: 'check' (the six sort keys), 'packed' (one HUGEINT key), 'all'
(crossings looked for on every thread), 'threads' (crossings looked for on
the threads given, here every thread: the host filter is replaced too), each
also 'packed-' (one key). CPU seconds of the process (every thread) per
statement; the median of --repeat is shown. --profile writes DuckDB's JSON
profile of each variant's last run into DIR. With --sql, NEW.sql (a template
like sql/load/nesting.sql) runs each variant too, alternating with the
packaged statement (or --base OLD.sql), and its rows are compared with those
of the same variant ("same rows" covers every statement and variant).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time

import duckdb
import jinja2


from duckprof import sqlfiles
from duckprof.load import NESTING_BLOCK

HOST = """{% from "templates/categories.sql" import not_host_cats, sql_list %}
SELECT trace_id, event_id, hash(trace_id, pid_label, tid_label) AS thread,
       (cat = 'cpu_op')::INTEGER AS op, ts_ns, end_ns, dur_ns
FROM db.events
WHERE ph = 'X' AND dur_ns >= 0 AND ts_ns IS NOT NULL AND cat NOT IN {{ sql_list(not_host_cats) }}"""

VARIANTS = {"check": dict(crossing="check", packed=False), "packed": dict(crossing="check", packed=True),
            "all": dict(crossing="all", packed=False), "packed-all": dict(crossing="all", packed=True),
            "threads": dict(crossing="threads", packed=False), "packed-threads": dict(crossing="threads", packed=True)}

HASH = ("SELECT count(*), bit_xor(hash(trace_id, event_id, parent_event_id, depth, self_ns, op_event_id)), "
        "sum(depth), sum(self_ns), count(parent_event_id), count(op_event_id) FROM nest")


def statement(variant: str, source: str | None = None) -> str:
    """nesting.sql (or the template source) of the variant, its host CTE
    reading the table host."""
    env = sqlfiles._env()
    source = source if source is not None else sqlfiles.read("load/nesting.sql")
    # the host CTE's body: from "WITH host AS (" to the first line ")," after it
    source = re.sub(r"WITH host AS \(.*?\n\),", "WITH host AS (SELECT * FROM host),", source, count=1, flags=re.S)
    return env.from_string(source).render(raws=[], exact={}, nest="nest", block=NESTING_BLOCK, **VARIANTS[variant])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", default="check,packed")
    ap.add_argument("--profile")
    ap.add_argument("--sql", help="an alternative nesting.sql, timed and compared against the packaged one")
    ap.add_argument("--base", help="with --sql: the SQL file it is compared against (default: the packaged one)")
    a = ap.parse_args()
    con = duckdb.connect()
    con.execute(f"ATTACH '{a.db}' AS db (READ_ONLY)")
    con.execute("CREATE TABLE host AS " + sqlfiles._env().from_string(HOST).render())
    con.execute("DETACH db")
    print(f"{con.execute('SELECT count(*) FROM host').fetchone()[0]:,} host events")
    con.execute(sqlfiles.render("load/nesting_table.sql", nest="nest", temp=False))
    sources = {"": open(a.base).read() if a.base else None}
    if a.sql:
        sources = {"base:": sources[""], "new:": open(a.sql).read()}
    # label: statement, every variant of every source
    sqls = {p + v: statement(v, src) for v in a.variants.split(",") for p, src in sources.items()}
    variants = list(sqls)
    cpu = {v: [] for v in variants}
    hashes = {}
    for r in range(a.repeat):
        for v in variants:
            con.execute("DELETE FROM nest")
            sql = sqls[v]
            if a.profile and r == a.repeat - 1:
                os.makedirs(a.profile, exist_ok=True)
                con.execute("PRAGMA enable_profiling = 'json'")
                con.execute(f"PRAGMA profiling_output = '{os.path.join(a.profile, v.replace(':', '-') + '.json')}'")
            c0 = time.process_time()
            con.execute(sql)
            cpu[v].append(time.process_time() - c0)
            con.execute("PRAGMA disable_profiling")
            hashes[v] = con.execute(HASH).fetchone()
    for v in variants:
        print(f"{v:12} CPU-s {' '.join(f'{x:.2f}' for x in cpu[v])}  median {statistics.median(cpu[v]):.2f}  rows {hashes[v]}")
    if a.sql:  # each variant against itself: 'check' marks crossings that 'all' resolves
        same = all(hashes["base:" + v] == hashes["new:" + v] for v in a.variants.split(","))
    else:
        same = len(set(hashes.values())) == 1
    print("same rows" if same else "ROWS DIFFER")


if __name__ == "__main__":
    main()
