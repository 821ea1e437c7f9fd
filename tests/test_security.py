"""Secure by default (issue 14, items 7-8): a database file runs no SQL that
duckprof did not write, and `query` reads the database, not the machine.

A database file is someone else's data. Planted here: views under duckprof's
names that read a file of the host with read_text (a "secret" the tests look
for in every output), macros named like DuckDB's own functions (DuckDB would
run them in place of the built-in ones), a view where duckprof keeps a table,
a type named like a built-in one, an index. A read-only session runs the
packaged views (TEMP objects, found first); a writer re-creates the stored
ones; what TEMP objects cannot shadow is refused, naming it."""

from __future__ import annotations

import json
import os
import shutil

import duckdb
import pytest

import duckprof
from conftest import (HANDMADE, assert_one_line_error, cli_app, db_state, invoke, rows, run_cli,  # noqa: F401
                      slow_when)

NESTING3 = HANDMADE / "nesting3.json"
SECRET = "the-host-file-secret-4711"


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text(SECRET + "\n")
    return path


@pytest.fixture
def good_db(base_db):
    """A file of its own per test (it plants objects in it): nesting3.json
    as run 'base' (conftest base_db, a copy of one load per process)."""
    return base_db


def plant(db, *statements):
    con = duckdb.connect(str(db))
    for s in statements:
        con.execute(s)
    con.close()


def read_secret(secret) -> str:
    return f"(SELECT content FROM read_text('{secret}'))"


def outputs_of(*results) -> str:
    return "\n".join((r.stdout or "") + (r.stderr or "") for r in results)


# -- views under duckprof's names -------------------------------------------------------

def test_planted_views_never_run(cli_app, good_db, secret):
    """`runs`, `kernels` and `cpu_ops` replaced by views that read a host file,
    and a user's view over duckprof's: every query path (runs, query, a report,
    the Python API's sql/report/runs) runs the packaged SQL; the file is not
    changed by reading it."""
    plant(good_db,
          f"CREATE OR REPLACE VIEW runs AS SELECT {read_secret(secret)} AS run, 1 AS traces",
          f"CREATE OR REPLACE VIEW kernels AS SELECT {read_secret(secret)} AS name",
          f"CREATE OR REPLACE VIEW cpu_ops AS SELECT {read_secret(secret)} AS name, 1 AS self_ns",
          "CREATE VIEW my_ops AS SELECT name FROM cpu_ops")
    before = db_state(good_db)
    results = [invoke(cli_app, "runs", "--db", good_db, "-f", "csv"),
               invoke(cli_app, "query", "select name from cpu_ops order by name limit 3", "--db", good_db),
               invoke(cli_app, "query", "select count(*) from launches", "--db", good_db),  # reads kernels
               invoke(cli_app, "query", "select * from my_ops order by 1 limit 2", "--db", good_db),
               invoke(cli_app, "report", "ops-by-step", "--db", good_db, "-f", "csv")]
    for r in results:
        assert r.exit_code == 0, r.stderr
    assert SECRET not in outputs_of(*results)
    assert results[0].stdout.splitlines()[1].startswith("base,1,")
    cpu_op_names = sorted(e["name"] for e in json.loads(NESTING3.read_text())["traceEvents"]
                          if e.get("cat") == "cpu_op")
    assert results[3].stdout.split()[-2:] == cpu_op_names[:2]  # the user's view reads duckprof's cpu_ops
    with duckprof.connect(good_db, read_only=True) as s:
        assert rows(s, "select run from runs") == [("base",)]
        assert SECRET not in str(s.sql("select * from kernels").fetchall())
        assert SECRET not in str(s.report("ops-by-step").fetchall())
        assert SECRET not in str(s.runs().fetchall())
    assert db_state(good_db) == before


def test_planted_table_macros_never_run(cli_app, good_db, secret):
    plant(good_db, f"CREATE OR REPLACE MACRO gpu_activity(exclude_last_step := false, round_to_us := false) "
                   f"AS TABLE SELECT {read_secret(secret)} AS x")
    with duckprof.connect(good_db, read_only=True) as s:
        got = s.sql("select * from gpu_activity()").fetchall()
    assert SECRET not in str(got)
    r = invoke(cli_app, "report", "gpu-time", "--db", good_db, "-f", "csv")
    assert r.exit_code == 0 and SECRET not in outputs_of(r)


TEMP_OBJECTS = ("SELECT count(*) FROM duckdb_views() WHERE temporary AND database_name = 'temp' "
                "AND view_name NOT LIKE 'duckdb_%' AND view_name NOT LIKE 'sqlite_%' AND view_name NOT LIKE 'pragma_%'")


@pytest.mark.slow  # the quick run has test_planted_views_never_run
def test_only_a_file_whose_views_differ_gets_temp_views(good_db, secret):
    """The fast path: when the file's views and macros under duckprof's names
    are exactly the packaged ones (a fingerprint of their normalised SQL), an
    open creates no TEMP objects; one changed definition (a view, or a scalar
    macro under a duckprof name), and the packaged ones are created again."""
    with duckprof.connect(good_db, read_only=True) as s:
        assert rows(s, TEMP_OBJECTS) == [(0,)]
        assert rows(s, "select run from runs") == [("base",)]
    for planted in (f"CREATE OR REPLACE VIEW steps AS SELECT {read_secret(secret)} AS name",
                    f"CREATE OR REPLACE MACRO launches(x) AS {read_secret(secret)}"):
        plant(good_db, planted)
        with duckprof.connect(good_db, read_only=True) as s:
            assert rows(s, TEMP_OBJECTS)[0][0] > 20
            assert SECRET not in str(rows(s, "select * from steps"))
        with duckprof.connect(good_db) as s:
            s.migrate()  # puts the packaged ones back
        with duckprof.connect(good_db, read_only=True) as s:
            assert rows(s, TEMP_OBJECTS) == [(0,)]


def test_a_write_replaces_planted_views_in_the_file(cli_app, good_db, secret):
    """A load re-creates the stored views (in its transaction), so even a plain
    DuckDB client then reads duckprof's views; the hash in duckprof_meta is not
    trusted (the planted view kept it)."""
    plant(good_db, f"CREATE OR REPLACE VIEW runs AS SELECT {read_secret(secret)} AS run")
    assert invoke(cli_app, "load", HANDMADE / "fractional_base.json", "--db", good_db, "-q", "-r", "b").exit_code == 0
    con = duckdb.connect(str(good_db), read_only=True)
    assert con.execute("select run from runs order by run").fetchall() == [("b",), ("base",)]
    con.close()


# -- what a TEMP object cannot shadow is refused --------------------------------------------

#: each case runs five commands on its own file: the quick run keeps two (the
#: function and the table checks), the full run all
REFUSED_QUICK = ("a macro named like a built-in function", "a table with a default that runs SQL")


@pytest.mark.parametrize("what,statements,words", slow_when([
    ("a macro named like a built-in function",
     ["CREATE MACRO sum(x) AS (SELECT content FROM read_text('SECRET'))"], ["macro 'sum'", "DROP MACRO sum"]),
    ("a table macro named like a built-in one",
     ["CREATE MACRO read_json(x) AS TABLE SELECT content FROM read_text('SECRET')"], ["macro 'read_json'"]),
    ("a type named like a built-in one", ["CREATE TYPE json AS INTEGER"], ["type 'json'"]),
    ("a view where duckprof keeps a table",
     ["DROP TABLE devices", "CREATE VIEW devices AS SELECT * FROM read_text('SECRET')"], ["'devices' is a view"]),
    ("a table with a default that runs SQL",
     ["ALTER TABLE devices ADD COLUMN x VARCHAR DEFAULT (current_setting('home_directory'))"],
     ["table 'devices' differs"]),
    ("an index", ["CREATE INDEX planted ON events (name)"], ["index 'planted'"]),
    ("a table where duckprof keeps a view", ["DROP VIEW trace_files", "CREATE TABLE trace_files (x INTEGER)"],
     ["'trace_files' is a table"]),
], lambda case: case[0] not in REFUSED_QUICK))
def test_objects_that_would_run_in_duckprofs_queries_are_refused(cli_app, good_db, secret, what, statements, words):
    plant(good_db, *[s.replace("SECRET", str(secret)) for s in statements])
    before = db_state(good_db)
    for args in (["runs", "--db", good_db], ["query", "select 1", "--db", good_db],
                 ["load", HANDMADE / "fractional_base.json", "--db", good_db, "-q", "-r", "new"],
                 ["rm", "base", "--db", good_db], ["migrate", "--db", good_db]):
        r = invoke(cli_app, *args)
        assert r.exit_code == 2, (what, args, r.stdout)
        assert_one_line_error(r.stderr, [str(good_db), "refusing to use this database"] + words)
        assert SECRET not in outputs_of(r)
    assert db_state(good_db) == before
    with pytest.raises(duckprof.DuckprofError):
        duckprof.connect(good_db, read_only=True)


def test_a_table_that_differs_only_by_a_check_is_refused(good_db):
    """Same columns, types and defaults as duckprof's `devices`, plus a CHECK
    that would run SQL on every insert: refused (the table's catalog SQL is
    compared, constraints included)."""
    con = duckdb.connect(str(good_db))
    sql = con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 'devices'").fetchone()[0]
    con.execute("DROP TABLE devices")
    con.execute(sql.replace(");", ", CHECK (length(current_setting('home_directory')) >= 0));"))
    con.close()
    before = db_state(good_db)
    with pytest.raises(duckprof.DuckprofError, match="refusing to use this database: table 'devices' differs"):
        duckprof.connect(good_db, read_only=True)
    assert db_state(good_db) == before


def test_a_users_own_macros_and_views_with_other_names_are_kept(cli_app, good_db):
    """Objects that shadow nothing of DuckDB's or duckprof's are the user's business."""
    plant(good_db, "CREATE MACRO my_ms(x) AS x / 1e6", "CREATE VIEW my_runs AS SELECT run FROM runs")
    r = invoke(cli_app, "query", "select my_ms(2000000) as ms, (select count(*) from my_runs) as n",
               "--db", good_db, "-f", "csv")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["ms,n", "2.0,1"]


# -- `query` reads the database, not the machine ---------------------------------------------

@pytest.mark.parametrize("sql", [
    "select content from read_text('{secret}')",
    "copy (select 1 as x) to '{out}'",
    "export database '{out}'",
    "attach '{out}' as other",
    "install httpfs",
    "load httpfs",
    "set enable_external_access = true",
    "select * from read_csv('{secret}')",
])
def test_query_cannot_touch_the_machine(cli_app, good_db, secret, tmp_path, sql):
    out = tmp_path / "written"
    sql = sql.format(secret=secret, out=out)
    for source in (["--db", good_db], [NESTING3]):
        r = invoke(cli_app, "query", sql, *source)
        assert r.exit_code == 2, (sql, r.stdout)
        assert_one_line_error(r.stderr, ["refused", "--allow-external"])
        assert SECRET not in outputs_of(r)
        assert not out.exists()


def test_allow_external_opts_back_in(cli_app, good_db, secret, tmp_path):
    r = invoke(cli_app, "query", f"select content from read_text('{secret}')", "--db", good_db,
               "--allow-external", "-f", "csv")
    assert r.exit_code == 0, r.stderr
    assert SECRET in r.stdout
    out = tmp_path / "copy.csv"
    r = invoke(cli_app, "query", f"copy (select run from runs) to '{out}'", "--db", good_db, "--allow-external")
    assert r.exit_code == 0, r.stderr
    assert out.read_text().splitlines() == ["run", "base"]


def test_locked_down_query_still_reads_its_traces_and_writes_its_output(cli_app, tmp_path):
    """The trace files named on the command line are loaded before the lock-down;
    --format parquet --output FILE is allowed that one file."""
    out = tmp_path / "ops.parquet"
    r = invoke(cli_app, "query", "select name, self_ns from cpu_ops where name = 'B2'", NESTING3,
               "-f", "parquet", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert duckdb.sql(f"select * from read_parquet('{out}')").fetchall() == [("B2", 15000)]


def test_a_query_can_read_every_view_and_macro_after_lock_down(cli_app, good_db):
    """The lock-down refuses file access, not duckprof's own views and macros:
    the same answers with and without it."""
    sql = ("select (select count(*) from cpu_ops) as ops, (select count(*) from gpu_activity()) as activity, "
           "(select count(*) from queue_depth()) as queue, (select count(*) from trace_devices) as devices")
    locked = invoke(cli_app, "query", sql, "--db", good_db, "-f", "csv")
    free = invoke(cli_app, "query", sql, "--db", good_db, "-f", "csv", "--allow-external")
    assert locked.exit_code == 0 and free.exit_code == 0, locked.stderr + free.stderr
    assert locked.stdout == free.stdout
    assert locked.stdout.splitlines()[1].startswith("15,")  # nesting3 has 15 cpu_ops
