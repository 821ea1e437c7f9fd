"""A database written by duckprof before issue 12 (schema version 1, nesting in
its own table) opens in this version: a read-only open names the one command
that migrates it, `duckprof migrate` (or any load) migrates it in place, and
every run's data is intact. The database and the figures it must keep were
made by fixtures/legacy_db/make_legacy_db.py v1 at commit 0f2c9b9."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from conftest import REPO, assert_one_line_error, db_state, invoke, slow_when

import duckprof
from duckprof.html import store

LEGACY = REPO / "fixtures" / "legacy_db"
EXPECTED = json.loads((LEGACY / "schema_v1.json").read_text())


def unpacked(tmp_path, version: str):
    """fixtures/legacy_db/schema_<version>.duckdb.gz as a database file in tmp_path."""
    db = tmp_path / f"{version}.duckdb"
    with gzip.open(LEGACY / f"schema_{version}.duckdb.gz", "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


@pytest.fixture
def v1_db(tmp_path):
    return unpacked(tmp_path, "v1")


def figures(s, run):
    one = lambda sql: s.con.execute(sql, {"run": run}).fetchall()[0]  # noqa: E731
    scope = "trace_id IN (SELECT trace_id FROM trace_files WHERE run = $run)"
    return {
        "traces": one("SELECT count(*) FROM trace_files WHERE run = $run")[0],
        "events": one(f"SELECT count(*) FROM events WHERE {scope}")[0],
        "cpu_ops": list(one(f"SELECT count(*), sum(self_ns)::BIGINT FROM cpu_ops WHERE {scope}")),
        "kernels": list(one(f"SELECT count(*), sum(dur_ns)::BIGINT FROM kernels WHERE {scope}")),
        "kernel_flops": one(f"SELECT sum(flops)::BIGINT FROM kernel_estimates WHERE {scope}")[0],
    }


def test_read_only_open_names_the_migrate_command_and_changes_nothing(v1_db, cli_app):
    before = db_state(v1_db)
    with pytest.raises(duckprof.DuckprofError, match=r"schema version 1\); migrate it once with "
                                                     r"`duckprof migrate --db "):
        duckprof.connect(v1_db, read_only=True)
    res = invoke(cli_app, "runs", "--db", v1_db)
    assert res.exit_code == 2
    assert_one_line_error(res.stderr, [str(v1_db), "duckprof migrate --db"])
    assert db_state(v1_db) == before


def test_migrate_keeps_every_run(v1_db, cli_app):
    migrated(cli_app, v1_db, 3)
    with duckprof.connect(v1_db, read_only=True) as s:
        for run, want in EXPECTED.items():
            assert figures(s, run) == want, run
        # through every step to the current version: the table version 5 added is there, empty
        assert s.sql("SELECT count(*) FROM report_results").fetchall() == [(0,)]
        # the window every trace now stores, from its events
        assert s.sql("SELECT count(*) FROM trace_files WHERE wall_ns > 0").fetchall() == [(3,)]
        assert "nesting" not in {r[0] for r in s.sql("SELECT table_name FROM information_schema.tables").fetchall()}
    before = db_state(v1_db)
    assert invoke(cli_app, "migrate", "--db", v1_db).exit_code == 0  # again: nothing to do
    assert db_state(v1_db) == before


def test_a_load_migrates_then_adds(v1_db):
    with duckprof.connect(v1_db) as s:
        s.load([str(REPO / "fixtures" / "handmade" / "nesting3.json")], run="new")
        for run, want in EXPECTED.items():
            assert figures(s, run) == want, run
        # the new run and the migrated ones answer the same query
        assert s.sql("SELECT run, count(*) FROM cpu_ops JOIN trace_files USING (trace_id) "
                     "GROUP BY run ORDER BY run").fetchall() == [("cpu", 123), ("gpu", 8), ("new", 15)]


# -- schema version 2, as released (commit 5addfac), to 3 -------------------------------

def migrated(cli_app, db, traces: int):
    """`duckprof migrate` brings the file of `traces` traces to the current version."""
    res = invoke(cli_app, "migrate", "--db", db)
    assert res.exit_code == 0, res.output
    assert f"schema version {duckprof.SCHEMA_VERSION} ({traces} trace(s))" in res.stdout


def refused_then_migrated(cli_app, db, traces: int):
    """A released older file: a command refuses it in one line and leaves it
    as it was; `duckprof migrate` brings it to the current version."""
    before = db_state(db)
    res = invoke(cli_app, "runs", "--db", db)
    assert res.exit_code == 2
    assert_one_line_error(res.stderr, [str(db), "duckprof migrate --db"])
    assert db_state(db) == before
    migrated(cli_app, db, traces)


@pytest.fixture
def v2_db(tmp_path):
    return unpacked(tmp_path, "v2")


@pytest.mark.slow  # the quick run migrates the released v3 file
def test_released_v2_database_migrates_and_keeps_every_run(v2_db, cli_app):
    # written by fixtures/legacy_db/make_legacy_db.py v2 at 5addfac: no run_tags, trace_facts,
    # interconnect_peaks, no estimator names in op_estimates
    expected = json.loads((LEGACY / "schema_v2.json").read_text())
    refused_then_migrated(cli_app, v2_db, traces=3)
    with duckprof.connect(v2_db, read_only=True) as s:
        for run, want in expected.items():
            got = figures(s, run)
            # FLOPs are recomputed by today's estimators (their code hash changed): not compared
            assert {k: v for k, v in got.items() if k != "kernel_flops"} == \
                {k: v for k, v in want.items() if k != "kernel_flops"}, run
        assert s.con.execute("SELECT count(*) FROM trace_facts").fetchall() == [(3,)]
        assert s.con.execute("SELECT count(*) > 0 FROM interconnect_peaks").fetchall() == [(True,)]
    res = invoke(cli_app, "tag", "gpu", "commit=abc", "--db", v2_db)
    assert res.exit_code == 0, res.output


# -- schema version 3, as released (commit fff1bcf), to 4 -------------------------------

V3_REPORTS = [("kernels", {}), ("kernels", {"group_by_launch": True}), ("ops", {}), ("ops", {"group_by_input_shape": True}),
              ("categories", {}),
              ("steps", {}), ("memory", {}), ("memory", {"ops": True}), ("patterns", {}), ("queue", {})]


DERIVED_COUNTS = ("SELECT (SELECT count(*) FROM derived_launches), (SELECT count(*) FROM derived_kernel_estimates), "
                  "(SELECT count(*) FROM derived_memory_events), (SELECT count(*) FROM derived_call_totals)")


#: one report per derived table (kernels: launches and kernel estimates; memory
#: --ops: memory events and call totals): the quick run's set
V3_REPORTS_QUICK = [("kernels", {}), ("memory", {"ops": True})]


def report_rows(s, run, reports):
    return {f"{name} {opts}": s.report(name, run=run, **opts).fetchall() for name, opts in reports}


@pytest.mark.parametrize("reports", slow_when(["quick", "all"], {"all"}))
def test_released_v3_database_migrates_and_reports_as_a_fresh_load(tmp_path, cli_app, reports):
    """A v3 file (made by fixtures/legacy_db/make_legacy_db.py v3 at fff1bcf) has
    no derived tables: the migration creates them and fills them for every
    trace, so each report on each run equals that of the same files loaded
    fresh, and the views read stored rows, not an empty table."""
    v3_db = unpacked(tmp_path, "v3")
    expected = json.loads((LEGACY / "schema_v3.json").read_text())
    refused_then_migrated(cli_app, v3_db, traces=4)
    fresh = tmp_path / "fresh.duckdb"
    with duckprof.connect(fresh) as s:
        fix = REPO / "fixtures"
        s.load([str(fix / "gpu_time" / "two_streams.json"), str(fix / "kernels" / "h100_two_kernels_one_op.json")],
               run="gpu")
        s.load([str(fix / "cpu_small_model.json"), str(fix / "memory" / "memory.json")], run="cpu")
        chosen = V3_REPORTS if reports == "all" else V3_REPORTS_QUICK
        want = {run: report_rows(s, run, chosen) for run in expected}
    with duckprof.connect(v3_db, read_only=True) as s:
        for run, figs in expected.items():
            assert figures(s, run) == figs, run
            assert report_rows(s, run, chosen) == want[run], run
        counts = s.sql(DERIVED_COUNTS).fetchall()
        assert counts == [(17, 15, 8, 17)]  # 15 kernels + 2 memcpy/memset; 8 [memory] events; 17 calls with some
    with duckprof.connect(fresh, read_only=True) as s:
        assert s.sql(DERIVED_COUNTS).fetchall() == counts
    before = db_state(v3_db)
    assert invoke(cli_app, "migrate", "--db", v3_db).exit_code == 0  # again: nothing to do
    assert db_state(v3_db) == before


# -- schema version 4, as released (commit da25d24), to 5 -------------------------------

def test_released_v4_database_migrates_and_stores_report_results(tmp_path, cli_app):
    """A v4 file (made by fixtures/legacy_db/make_legacy_db.py v4 at da25d24) has
    no report_results, and no events.unfinished (version 6), which the views
    read: a read-only open (up to version 5, read as it was) now refuses it in
    one line and leaves it as it was. The migration creates the table (empty),
    every run's data is kept, and results stored for a run are read back for
    that run only."""
    v4_db = unpacked(tmp_path, "v4")
    expected = json.loads((LEGACY / "schema_v4.json").read_text())
    before = db_state(v4_db)
    with pytest.raises(duckprof.DuckprofError, match=r"schema version 4\); migrate it once"):
        duckprof.connect(v4_db, read_only=True)
    refused_then_migrated(cli_app, v4_db, 4)
    assert db_state(v4_db) != before
    with duckprof.connect(v4_db, read_only=True) as s:
        for run, figs in expected.items():
            assert figures(s, run) == figs, run
        assert s.sql("SELECT count(*) FROM report_results").fetchall() == [(0,)]
    with duckprof.connect(v4_db) as s:  # results stored and read back (pages: tests/test_html_store.py)
        key = store.inputs_key(s, "gpu")
        store.write(s.con, store.Pending("gpu", key, [("traces", "{}", ["n"], "[[1],[2.5]]", ["a note"], [])]))
        got = store.read(s.con, "gpu", key)
        assert list(got) == [("traces", "{}")] and got["traces", "{}"].rows == [[1], [2.5]]
        assert got["traces", "{}"].notes == ["a note"] and store.read(s.con, "cpu", store.inputs_key(s, "cpu")) == {}
    before = db_state(v4_db)
    assert invoke(cli_app, "migrate", "--db", v4_db).exit_code == 0  # again: nothing to do
    assert db_state(v4_db) == before


def test_the_v4_to_v5_step_makes_the_table_schema_sql_makes(tmp_path):
    # the step alone (a session's migrate also re-runs schema.sql when it recreates the views)
    import duckdb
    from duckprof import session, sqlfiles
    con = duckdb.connect(str(unpacked(tmp_path, "v4")))
    ref = duckdb.connect()
    try:
        con.execute("BEGIN TRANSACTION")
        session.migrate(con, 4)
        ref.execute(sqlfiles.read("schema.sql"))
        assert con.execute("DESCRIBE report_results").fetchall() == ref.execute("DESCRIBE report_results").fetchall()
        con.execute("ROLLBACK")
    finally:
        con.close()
        ref.close()


# -- schema version 5 (commit 1144ad0) to 6 ---------------------------------------------

NESTING = ("SELECT t.path, e.event_id, e.parent_event_id, e.depth, e.self_ns, e.op_event_id, e.unfinished "
           "FROM events e JOIN traces t USING (trace_id) WHERE t.run = 'unfinished' AND e.depth IS NOT NULL "
           "ORDER BY 1, 2")


def test_v5_database_migrates_its_unfinished_ranges_to_torchs_nesting(tmp_path, cli_app):
    """A v5 file (make_legacy_db.py v5 at 1144ad0) has no events.unfinished and
    nested the fixes18 traces' '"finished": false' record_function as any
    range: 'outer', which it crosses, closed at its start (self 20.9 ms, torch
    2.48 ms), the calls after its start its children. The migration flags the
    two ranges, nests those traces again (the other runs are kept as they
    were) and fills the derived tables again: the same nesting, flags and
    report ops as a load by this duckprof."""
    v5_db = unpacked(tmp_path, "v5")
    expected = json.loads((LEGACY / "schema_v5.json").read_text())
    import duckdb
    with duckdb.connect(str(v5_db), read_only=True) as con:  # as v5 wrote it: the old nesting
        assert con.execute("SELECT name, self_ns FROM events WHERE trace_id = 5 AND cat = 'user_annotation' "
                           "ORDER BY ts_ns").fetchall() == [("outer", 20940755), ("cross_thread", 12012191)]
        assert "unfinished" not in {r[0] for r in con.execute("DESCRIBE events").fetchall()}
    refused_then_migrated(cli_app, v5_db, 6)
    files = [str(REPO / "fixtures" / "fixes18" / f"{n}.json.gz") for n in ("cross_thread", "still_open")]
    with duckprof.connect() as fresh:
        fresh.load(files, run="unfinished")
        want = [r[1:] for r in fresh.sql(NESTING).fetchall()]
        want_ops = [r[:2] + r[3:] for r in fresh.report("ops", limit=0).fetchall()]  # (not trace_id)
        want_totals = fresh.sql("SELECT count(*), sum(device_ns), sum(cpu_mem_bytes) FROM call_totals").fetchall()
    with duckprof.connect(v5_db, read_only=True) as s:
        for run in ("gpu", "cpu"):
            assert figures(s, run) == expected[run], run
        got = [r[1:] for r in s.sql(NESTING).fetchall()]
        assert got == want
        assert sum(1 for r in got if r[-1]) == 2  # cross_thread and still_open: no parent, depth 0, self 0
        assert all(r[1:5] == (None, 0, 0, None) for r in got if r[-1])
        outer = s.sql("SELECT self_ns FROM user_annotations WHERE name = 'outer' ORDER BY trace_id").fetchall()
        assert outer[0][0] == 2479275  # cross_thread's: torch's 2.48 ms (its key_averages, fixes18)
        assert [r[:2] + r[3:] for r in s.report("ops", limit=0, run="unfinished").fetchall()] == want_ops
        assert s.sql("SELECT count(*), sum(device_ns), sum(cpu_mem_bytes) FROM call_totals WHERE trace_id IN "
                     "(SELECT trace_id FROM trace_files WHERE run = 'unfinished')").fetchall() == want_totals
