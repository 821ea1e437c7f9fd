"""Persistent databases (--db): stand-alone files, atomic loads, readers in
other processes, reload detection, schema version check, removing runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import duckdb
import pytest

import duckprof
from conftest import (HANDMADE, REPO, assert_one_line_error, cli_app, db_state, invoke, rows,  # noqa: F401
                      run_cli, scalar)

NESTING3 = HANDMADE / "nesting3.json"          # 19 events
FRACTIONAL = HANDMADE / "fractional_base.json"  # 11 events


@pytest.fixture(scope="module")
def loaded_template(tmp_path_factory):
    db = tmp_path_factory.mktemp("template") / "runs.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(NESTING3), str(FRACTIONAL)], run="base")
    assert not os.path.exists(str(db) + ".wal")
    return db


@pytest.fixture
def loaded_db(loaded_template, tmp_db):
    """A database file of its own for each test, with NESTING3 and FRACTIONAL
    loaded as run 'base': a copy of one made once per module."""
    shutil.copyfile(loaded_template, tmp_db)
    return tmp_db


@pytest.mark.slow  # three processes
def test_load_in_one_process_query_in_another(tmp_db):
    r = run_cli("load", NESTING3, FRACTIONAL, "--db", tmp_db, "--run", "base", "-q")
    assert r.returncode == 0, r.stderr
    assert "loaded 2 trace(s), 30 events" in r.stdout
    r = run_cli("query", "select name, self_ns from cpu_ops where name in ('B2', 'C6') order by name",
                "--db", tmp_db, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"name": "B2", "self_ns": 15000}, {"name": "C6", "self_ns": 10000}]
    # the file stands alone: plain DuckDB (no duckprof) can read tables and views
    code = ("import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); "
            "print(c.execute('select count(*) from events').fetchone()[0], "
            "c.execute('select count(*) from cpu_ops').fetchone()[0])")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_db)], capture_output=True, text=True,
                         cwd="/", timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["30", str(15 + 8)]  # nesting3: 15 cpu_ops; fractional_base: 8


@pytest.mark.slow  # two more processes
def test_two_concurrent_readers(loaded_db):
    sql = "select count(*) as n from events"
    env = dict(__import__("os").environ, PYTHONPATH=str(REPO))
    code = "import sys; from duckprof.cli import main; main()"
    procs = [subprocess.Popen([sys.executable, "-c", code, "query", sql, "--db", str(loaded_db), "-f", "csv"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    # and a third reader in this process while they run
    with duckprof.connect(loaded_db, read_only=True) as s:
        assert scalar(s, sql) == 30
        outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.splitlines() == ["n", "30"]


def test_reload_is_a_noop(cli_app, loaded_db):
    def counts():
        with duckprof.connect(loaded_db, read_only=True) as s:
            return [scalar(s, f"select count(*) from {t}") for t in ("traces", "events", "devices")]

    before = counts()
    assert before[:2] == [2, 30]
    with duckprof.connect(loaded_db) as s:
        rep = s.load([str(NESTING3), str(FRACTIONAL)], run="base")
    assert [f.skipped != "" for f in rep.files] == [True, True]
    assert "already loaded" in rep.summary()
    assert counts() == before
    # the CLI says so too, and exits 0
    r = invoke(cli_app, "load", NESTING3, "--db", loaded_db, "--run", "base", "-q")
    assert r.exit_code == 0 and "already loaded in run 'base'" in r.stdout
    assert counts() == before
    # a copy with the same bytes under another name is the same content
    # but the same file into another run is a new trace
    with duckprof.connect(loaded_db) as s:
        s.load([str(NESTING3)], run="other")
        assert rows(s, "select run, traces, events from runs order by run") == [("base", 2, 30), ("other", 1, 19)]


def test_failing_load_leaves_file_byte_identical(loaded_db, tmp_path):
    bad = tmp_path / "corrupt.json"
    bad.write_bytes(NESTING3.read_bytes()[:-200] + b"@@@@" + NESTING3.read_bytes()[-196:])
    before = db_state(loaded_db)
    r = run_cli("load", FRACTIONAL, bad, "--db", loaded_db, "--run", "new", "-q")
    assert r.returncode == 2
    assert_one_line_error(r.stderr, "corrupt.json")
    assert db_state(loaded_db) == before
    # in-process too, with a good new file first in the list
    other = tmp_path / "good.json"
    other.write_bytes(FRACTIONAL.read_bytes().replace(b'"schemaVersion": 1', b'"schemaVersion": 2'))
    with duckprof.connect(loaded_db) as s:
        with pytest.raises(duckprof.TraceError) as ei:
            s.load([str(other), str(bad)], run="new")
        assert "corrupt.json" in str(ei.value)
        assert scalar(s, "select count(*) from traces") == 2
        assert scalar(s, "select count(*) from events") == 30
    assert db_state(loaded_db)[0] == before[0]


def test_failing_load_into_new_database(cli_app, tmp_db, tmp_path):
    bad = tmp_path / "trunc.json"
    bad.write_bytes(NESTING3.read_bytes()[:700])
    r = invoke(cli_app, "load", NESTING3, bad, "--db", tmp_db, "-q")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, ["trunc.json", "--salvage"])
    # nothing loaded (the file may exist, holding the empty schema)
    if tmp_db.exists():
        with duckprof.connect(tmp_db, read_only=True) as s:
            assert scalar(s, "select count(*) from traces") == 0


def test_schema_version_mismatch(cli_app, loaded_db):
    con = duckdb.connect(str(loaded_db))
    con.execute("UPDATE duckprof_meta SET value = '0' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(duckprof.DuckprofError) as ei:
        duckprof.connect(loaded_db, read_only=True)
    msg = str(ei.value)
    assert str(loaded_db) in msg and "schema version 0" in msg and str(duckprof.SCHEMA_VERSION) in msg
    before = db_state(loaded_db)
    for args in (["query", "select 1", "--db", loaded_db], ["load", FRACTIONAL, "--db", loaded_db],
                 ["runs", "--db", loaded_db]):
        r = invoke(cli_app, *args)
        assert r.exit_code == 2
        assert_one_line_error(r.stderr, [str(loaded_db), "schema version"])
    assert db_state(loaded_db) == before


def test_not_a_duckprof_database(cli_app, tmp_path):
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    r = invoke(cli_app, "query", "select 1", "--db", db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, [str(db), "not a duckprof database"])
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"this is not a database at all" * 100)
    r = invoke(cli_app, "runs", "--db", junk)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, str(junk))
    r = invoke(cli_app, "runs", "--db", tmp_path / "missing.duckdb")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "missing.duckdb")
    assert not (tmp_path / "missing.duckdb").exists()


@pytest.mark.slow  # the quick run has test_cli.py's test_load_runs_rm_schema
def test_rm_run(cli_app, loaded_db):
    with duckprof.connect(loaded_db) as s:
        s.load([str(NESTING3)], run="second")
    r = invoke(cli_app, "rm", "base", "--db", loaded_db)
    assert r.exit_code == 0, r.stderr
    assert "removed run 'base' (2 trace(s))" in r.stdout
    with duckprof.connect(loaded_db, read_only=True) as s:
        assert rows(s, "select run, traces, events from runs") == [("second", 1, 19)]
        for t in ("events", "devices"):
            assert scalar(s, f"select count(*) from {t} where trace_id not in (select trace_id from traces)") == 0
        # nested: the host X events, not the kernel or the instant
        assert scalar(s, "select count(*) from events where depth is not null") == 17
    before = db_state(loaded_db)
    r = invoke(cli_app, "rm", "base", "--db", loaded_db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "base")
    assert db_state(loaded_db) == before


def test_read_only_query_does_not_modify(cli_app, loaded_db):
    before = db_state(loaded_db)
    r = invoke(cli_app, "query", "select count(*) from kernels", "--db", loaded_db)
    assert r.exit_code == 0, r.stderr
    r = invoke(cli_app, "query", "delete from events", "--db", loaded_db)
    assert r.exit_code == 2
    assert "Traceback" not in r.stderr
    assert db_state(loaded_db) == before


@pytest.mark.slow  # two more databases
def test_json_columns_use_zstd_and_old_storage_formats_still_load(tmp_path):
    """events' JSON columns are stored with zstd; a database file created in a
    storage format older than DuckDB 1.2 (no zstd) gets the schema without it,
    and the same trace loads to the same rows."""
    trace = str(HANDMADE / "nesting3.json")
    new_db, old_db = tmp_path / "new.duckdb", tmp_path / "old.duckdb"
    with duckprof.connect(new_db) as s:
        s.load([trace])
        s.con.execute("CHECKPOINT")
        got = dict(rows(s, "SELECT column_name, any_value(compression) FROM pragma_storage_info('events') "
                           "WHERE column_name IN ('args', 'input_dims') AND segment_type = 'JSON' "
                           "GROUP BY 1"))
        new_rows = rows(s, "SELECT * EXCLUDE (trace_id) FROM events ORDER BY event_id")
    assert got == {"args": "ZSTD", "input_dims": "ZSTD"}
    duckdb.connect(str(old_db), config={"storage_compatibility_version": "v1.0.0"}).close()
    with duckprof.connect(old_db) as s:
        s.load([trace])
        s.con.execute("CHECKPOINT")
        assert rows(s, "SELECT count(*) FROM pragma_storage_info('events') WHERE compression = 'ZSTD'") == [(0,)]
        assert rows(s, "SELECT * EXCLUDE (trace_id) FROM events ORDER BY event_id") == new_rows
        assert len(new_rows) == 19


@pytest.mark.slow  # writes and loads a 17 MB trace
def test_content_hash_is_sha256_of_the_file_bytes(tmp_db, tmp_path):
    import gzip
    import hashlib
    from duckprof import split
    big = tmp_path / "big.json"  # > 2 blocks: the fast path hashes it in a background thread
    big.write_bytes(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "op" * 20, "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(2 * split.BLOCK // 60)]}).encode())
    assert big.stat().st_size > 2 * split.BLOCK
    gz = tmp_path / "small.json.gz"
    gz.write_bytes(gzip.compress(FRACTIONAL.read_bytes()))
    files = [NESTING3, big, gz]
    with duckprof.connect(tmp_db) as s:
        s.load([str(f) for f in files], run="base")
        assert rows(s, "select path, content_hash from traces order by trace_id") == [
            (str(f), hashlib.sha256(f.read_bytes()).hexdigest()) for f in files]


def test_run_loaded_with_the_older_blake2b_hash_still_detects_reloads(tmp_db):
    import hashlib
    # what an earlier duckprof stored: blake2b-128 of the file bytes
    with duckprof.connect(tmp_db) as s:
        s.load([str(NESTING3)], run="old")
        s.sql("update traces set content_hash = $h",
              {"h": hashlib.blake2b(NESTING3.read_bytes(), digest_size=16).hexdigest()})
        rep = s.load([str(NESTING3), str(FRACTIONAL)], run="old")
        assert [f.skipped != "" for f in rep.files] == [True, False]
        # the run keeps its hash, so the new trace is stored with blake2b too
        assert scalar(s, "select content_hash from traces where path = $p", {"p": str(FRACTIONAL)}) == \
            hashlib.blake2b(FRACTIONAL.read_bytes(), digest_size=16).hexdigest()
        assert scalar(s, "select count(*) from traces") == 2


@pytest.mark.slow
def test_newer_packaged_peaks_reach_an_existing_database_without_undoing_user_edits(cli_app, tmp_db):
    with duckprof.connect(tmp_db) as s:
        n = scalar(s, "select count(*) from device_peaks")
        m = scalar(s, "select count(*) from interconnect_peaks")
        # as an older duckprof left it: devices missing (GB200; the T4, MI100 and RTX 4090 rows and the L40
        # and H20 links, added later), another edited by the user
        s.sql("delete from device_peaks where device in ('NVIDIA GB200', 'NVIDIA T4', 'AMD Instinct MI100', "
              "'NVIDIA GeForce RTX 4090')")
        s.sql("delete from interconnect_peaks where device in ('NVIDIA L40', 'NVIDIA H20')")
        s.sql("update device_peaks set dram_gbps = 1234 where device = 'NVIDIA B200'")
        s.sql("update duckprof_meta set value = 'older' where key = 'peaks_hash'")
    before = db_state(tmp_db)
    for read_only in (True, False):  # opening never writes, not even for writing
        with duckprof.connect(tmp_db, read_only=read_only) as s:
            assert scalar(s, "select count(*) from device_peaks") == n - 4
        assert db_state(tmp_db) == before
    # the next write adds them: `migrate` here (a load or `rm` too, in their transaction)
    assert invoke(cli_app, "migrate", "--db", tmp_db).exit_code == 0
    with duckprof.connect(tmp_db, read_only=True) as s:
        assert scalar(s, "select count(*) from device_peaks") == n
        assert scalar(s, "select count(*) from interconnect_peaks") == m
        assert scalar(s, "select dram_gbps from device_peaks where device = 'NVIDIA GB200'") == 8000
        assert scalar(s, "select fp16_tflops from device_peaks where device = 'NVIDIA T4'") == 65
        assert scalar(s, "select bf16_tflops from device_peaks where device = 'AMD Instinct MI100'") == 92.3
        assert scalar(s, "select gbps from interconnect_peaks where device = 'NVIDIA L40'") == 32
        assert scalar(s, "select dram_gbps from device_peaks where device = 'NVIDIA GeForce RTX 4090'") == 1008
        assert scalar(s, "select gbps from interconnect_peaks where device = 'NVIDIA H20'") == 450
        assert scalar(s, "select dram_gbps from device_peaks where device = 'NVIDIA B200'") == 1234
    after = db_state(tmp_db)
    assert invoke(cli_app, "migrate", "--db", tmp_db).exit_code == 0  # up to date: writes nothing
    assert db_state(tmp_db) == after


def test_an_error_while_inserting_a_batch_names_the_files_and_changes_nothing(loaded_db, monkeypatch, tmp_path):
    """Validation catches bad input before the transaction; should an insert
    still fail, the load rolls back and says which files it was inserting."""
    from duckprof import sqlfiles
    real_render = sqlfiles.render

    def failing_render(rel, **kw):
        sql = real_render(rel, **kw)
        return (sql.replace("ts_ns + dur_ns AS end_ns", "CAST('x' || ts_ns AS BIGINT) AS end_ns", 1)
                if rel == "load/insert_events.sql" else sql)

    monkeypatch.setattr(sqlfiles, "render", failing_render)
    other = tmp_path / "other.json"
    other.write_bytes(NESTING3.read_bytes().replace(b'"schemaVersion": 1', b'"schemaVersion": 3'))
    before = db_state(loaded_db)
    with duckprof.connect(loaded_db) as s:
        with pytest.raises(duckprof.TraceError) as ei:
            s.load([str(other), str(FRACTIONAL)], run="new")
        msg = str(ei.value)
        assert msg.startswith(str(other)) and "inserted together with 1 other file(s)" in msg, msg
        assert "\n" not in msg and "Could not convert" in msg
        assert scalar(s, "select count(*) from traces") == 2
        assert scalar(s, "select current_setting('preserve_insertion_order')") is True
    assert db_state(loaded_db) == before


@pytest.mark.slow  # two traces of 135,000 events
def test_a_load_is_checkpointed_without_rewriting_row_groups(tmp_db, tmp_path):
    """A big trace's INSERT writes full row groups straight to the file and
    ends in a partly filled one; DuckDB's checkpoint would merge such groups
    by rewriting them (slow, and the old blocks stay in the file). The load
    checkpoints with vacuuming off: the file is complete when load() returns,
    and the row groups are as inserted."""
    import os
    from duckprof import synth
    files = []
    for seed in range(2):
        files.append(str(tmp_path / f"rank{seed}.json"))
        synth.generate(files[-1], events=135_000, seed=seed, rank=seed)
    with duckprof.connect(tmp_db) as s:
        s.load(files, run="r")
        assert not os.path.exists(str(tmp_db) + ".wal")
        per_trace = [n for (n,) in rows(s, "SELECT count(*) FROM events GROUP BY trace_id ORDER BY trace_id")]
        assert len(per_trace) == 2 and all(122_880 < n < 2 * 122_880 for n in per_trace), per_trace
        # one full and one partial row group each; merged, the 2 partials would fit in one
        assert sum(n - 122_880 for n in per_trace) < 122_880
        assert scalar(s, "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('events')") == 4
        assert scalar(s, "SELECT current_setting('max_vacuum_tasks')") == 100


def test_runs_lists_ranks_in_numeric_order_with_ranges():
    with duckprof.connect() as s:
        for t, run, rank in [(1, "a", 0), (2, "a", 1), (3, "a", 2), (4, "a", 5), (5, "a", 7), (6, "a", 8),
                             (7, "a", 10), (8, "b", None), (9, "c", 10), (10, "c", 10), (11, "c", 2)]:
            s.sql("INSERT INTO traces (trace_id, run, rank, path, content_hash, event_count, json_bytes) "
                  "VALUES ($t, $run, $rank, 'p', 'h', 1, 2)", {"t": t, "run": run, "rank": rank})
        assert rows(s, "SELECT run, traces, ranks, events FROM runs ORDER BY run") == [
            ("a", 7, "0-2,5,7-8,10", 7), ("b", 1, None, 1), ("c", 3, "2,10", 3)]


@pytest.mark.slow  # test_security.py's test of the same name runs in the quick run
def test_planted_views_never_run(tmp_db, tmp_path, cli_app):
    """A view planted in a shared database under one of duckprof's names (here
    `runs`, reading a file of the host) is not what duckprof runs: a reader
    uses the packaged views (TEMP), a write (here `migrate`) replaces the
    planted one; opening for writing alone changes nothing in the file."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    with duckprof.connect(tmp_db) as s:
        s.load([str(NESTING3)], run="base")
        s.con.execute(f"CREATE OR REPLACE VIEW runs AS SELECT content AS run FROM read_text('{secret}')")
    res = invoke(cli_app, "runs", "--db", tmp_db, "--format", "csv")
    assert res.exit_code == 0 and "TOP-SECRET" not in res.stdout and "base" in res.stdout, res.output
    stored = "SELECT sql FROM duckdb_views() WHERE view_name = 'runs' AND NOT temporary"
    with duckprof.connect(tmp_db) as s:
        assert "TOP-SECRET" not in str(s.runs().fetchall())
        assert "read_text" in s.con.execute(stored).fetchall()[0][0]
        s.migrate()  # a write puts the packaged view back
        assert "read_text" not in s.con.execute(stored).fetchall()[0][0]


DERIVED_COUNTS = ("SELECT t.run, (SELECT count(*) FROM derived_launches d WHERE d.trace_id = t.trace_id), "
                  "(SELECT count(*) FROM derived_kernel_estimates d WHERE d.trace_id = t.trace_id), "
                  "(SELECT count(*) FROM derived_memory_events d WHERE d.trace_id = t.trace_id), "
                  "(SELECT count(*) > 0 FROM derived_call_totals d WHERE d.trace_id = t.trace_id) "
                  "FROM traces t ORDER BY t.run")


@pytest.mark.slow  # several loads; the quick run has test_reload_is_a_noop
def test_derived_tables_follow_loads_reloads_and_rm(cli_app, tmp_db):
    """The derived tables get a loaded trace's rows in the load (one row per
    kernel/memcpy/memset, per kernel, per [memory] event); loading the same
    file again changes nothing; `rm` deletes the run's rows and keeps the others'."""
    gpu = REPO / "fixtures" / "gpu_time" / "two_streams.json"
    mem = REPO / "fixtures" / "memory" / "memory.json"
    assert invoke(cli_app, "load", gpu, "--db", tmp_db, "-q", "-r", "g").exit_code == 0
    assert invoke(cli_app, "load", mem, "--db", tmp_db, "-q", "-r", "m").exit_code == 0
    with duckprof.connect(tmp_db, read_only=True) as s:
        n_gpu = scalar(s, "select count(*) from gpu_ops where kind in ('kernel', 'memcpy', 'memset')")
        n_kernels = scalar(s, "select count(*) from kernels")
        n_mem = scalar(s, "select count(*) from events where name = '[memory]'")
        assert rows(s, DERIVED_COUNTS) == [("g", n_gpu, n_kernels, 0, True), ("m", 0, 0, n_mem, True)]
        assert n_gpu > 0 and n_kernels > 0 and n_mem > 0
    before = db_state(tmp_db)
    r = invoke(cli_app, "load", gpu, "--db", tmp_db, "-q", "-r", "g")
    assert r.exit_code == 0 and "already loaded" in r.stdout, r.output
    assert db_state(tmp_db) == before
    assert invoke(cli_app, "rm", "g", "--db", tmp_db).exit_code == 0
    with duckprof.connect(tmp_db, read_only=True) as s:
        assert rows(s, DERIVED_COUNTS) == [("m", 0, 0, n_mem, True)]
        for t in ("derived_launches", "derived_kernel_estimates", "derived_memory_events", "derived_call_totals"):
            assert scalar(s, f"select count(*) from {t} where trace_id not in (select trace_id from traces)") == 0
