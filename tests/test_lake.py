"""The Parquet lake (issue 17): `duckprof export --parquet DIR` writes every
table hive-partitioned by run (and rank); exporting again adds only new runs;
`query/report --lake DIR` run the views over the files; `load DIR` loads them
back, equal table by table; a second engine (pyarrow.dataset, a test-only
dependency) reads the lake with the documented schema."""

from __future__ import annotations

import json
import os

import pytest

from conftest import HANDMADE, REPO, corpus_path, invoke

import pyarrow as pa  # a test-only dependency (the `test` extra): the second engine
import pyarrow.dataset as ds

import duckprof
from duckprof import lake

COLLECTIVES = REPO / "fixtures" / "collectives" / "bus_bandwidth_rank0.json"
ODD_RUN = "a/b c=d%"  # partition values are percent-encoded in paths
TABLES = ["traces", "devices", "events", "op_estimates", "trace_facts", "run_tags", "device_peaks",
          "interconnect_peaks"]


def snapshot(con, table, catalog=""):
    """Every row of a table, trace ids replaced by the trace's content hash (ids
    are per database), sorted."""
    cols = [r[0] for r in con.execute(f"DESCRIBE {catalog}{table}").fetchall()]
    if "trace_id" in cols and table != "traces":
        sel = ", ".join("t.content_hash" if c == "trace_id" else f"x.{c}" for c in cols)
        sql = f"SELECT {sel} FROM {catalog}{table} x JOIN {catalog}traces t USING (trace_id)"
    elif table == "traces":
        sql = f"SELECT * EXCLUDE (trace_id) FROM {catalog}traces"
    else:
        sql = f"SELECT * FROM {catalog}{table}"
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.fixture(scope="module")
def source_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("lake_src") / "perf.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(corpus_path("sampled_rank0_no_devprops.json.gz")),
                str(corpus_path("sampled_rank1_no_devprops.json.gz"))], run="job", tags={"commit": "abc", "batch": 64})
        s.load([str(COLLECTIVES)], run=ODD_RUN, tags={"commit": "def"})
        s.load([str(HANDMADE / "nesting3.json")], run="norank")  # rank NULL
    return db


@pytest.mark.slow
def test_round_trip_every_table_equal(source_db, tmp_path, cli_app):
    d = tmp_path / "lake"
    r = invoke(cli_app, "export", "--db", source_db, "--parquet", d, "-q")
    assert r.exit_code == 0, r.stderr
    assert "added 3 run(s), 4 trace(s)" in r.stdout
    assert (d / "events" / "run=job" / "rank=1").is_dir()
    assert (d / "events" / "run=a%2Fb%20c%3Dd%25" / "rank=0").is_dir()
    assert (d / "events" / "run=norank" / "rank=__HIVE_DEFAULT_PARTITION__").is_dir()
    back = tmp_path / "back.duckdb"
    r = invoke(cli_app, "load", d, "--db", back, "-q")
    assert r.exit_code == 0, r.stderr
    with duckprof.connect(source_db, read_only=True) as a, duckprof.connect(back, read_only=True) as b:
        for t in TABLES:
            want = snapshot(a.con, t)
            assert want, t  # every table has rows to compare
            assert snapshot(b.con, t) == want, t
        # and the stored ids too, since the lake took them in order from an empty lake
        assert a.sql("SELECT trace_id, path FROM traces ORDER BY 1").fetchall() == \
            b.sql("SELECT trace_id, path FROM traces ORDER BY 1").fetchall()
    # loading it again changes nothing (same content, same runs)
    with duckprof.connect(back) as b:
        rep = b.load([str(d)])
        assert not rep.loaded and len(rep.files) == 4
        assert b.sql("SELECT count(*) FROM traces").fetchall() == [(4,)]


@pytest.mark.slow  # two exports of a database of its own
def test_incremental_export_adds_only_new_runs(source_db, tmp_path):
    d = tmp_path / "lake"
    db = tmp_path / "grow.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(COLLECTIVES)], run="first")
        rep = lake.export_lake(s, d)
    assert rep.added == [("first", 1, 10)]
    before = {p: p.stat().st_mtime_ns for p in d.rglob("*.parquet") if "run=first" in str(p)}
    assert len(before) == 4  # traces, trace_facts, devices, events
    with duckprof.connect(db) as s:
        s.load([str(HANDMADE / "nesting3.json")], run="second")
        rep = lake.export_lake(s, d)
        assert rep.added == [("second", 1, 19)] and rep.skipped == [("first", "already in the lake")]
        rep = lake.export_lake(s, d)  # nothing new
        assert rep.added == []
    after = {p: p.stat().st_mtime_ns for p in d.rglob("*.parquet") if "run=first" in str(p)}
    assert after == before  # the first run's files were not rewritten
    assert lake.read_marker(d)["runs"]["second"]["trace_ids"] == [2, 2]
    with lake.open_lake(d) as s:
        assert s.sql("SELECT run, trace_id, events FROM runs JOIN trace_files USING (run) "
                     "ORDER BY run").fetchall() == [("first", 1, 10), ("second", 2, 19)]


@pytest.mark.slow
def test_views_and_reports_over_the_lake_equal_the_database(source_db, tmp_path, cli_app):
    d = tmp_path / "lake"
    with duckprof.connect(source_db, read_only=True) as s:
        lake.export_lake(s, d)
    for args in (["report", "collectives", "--run", ODD_RUN], ["report", "ranks", "--run", "job"],
                 ["report", "kernels", "--run", "job", "-n", "5"],
                 ["query", "select run, count(*) as n, sum(dur_ns) as ns from kernels join trace_files "
                           "using (trace_id) group by 1 order by 1"]):
        from_db = invoke(cli_app, *args, "--db", source_db, "-f", "csv")
        from_lake = invoke(cli_app, *args, "--lake", d, "-f", "csv")
        assert from_db.exit_code == 0 and from_lake.exit_code == 0, (from_db.stderr, from_lake.stderr)
        assert from_lake.stdout == from_db.stdout, args
    r = invoke(cli_app, "report", "ranks", "--lake", d, "--run", "nope")
    assert r.exit_code == 2 and "no run named 'nope'" in r.stderr


# DuckDB type -> the Arrow type a reader sees in the Parquet files
ARROW = {"INTEGER": pa.int32(), "BIGINT": pa.int64(), "UBIGINT": pa.uint64(), "DOUBLE": pa.float64(),
         "VARCHAR": pa.string(), "JSON": pa.string(), "TIMESTAMP": pa.timestamp("us"), "BOOLEAN": pa.bool_()}


@pytest.mark.slow
def test_pyarrow_reads_the_lake_with_the_documented_schema(source_db, tmp_path):
    """pyarrow.dataset, hive partitioning with the documented keys (run: string,
    rank: int32): every table has exactly the columns and types of the
    database's table (sql/schema.sql), plus the partition keys it is split by,
    and the same number of rows."""
    d = tmp_path / "lake"
    with duckprof.connect(source_db, read_only=True) as s:
        lake.export_lake(s, d)
        for t in TABLES:
            documented = {c: ARROW[typ] for c, typ, *_ in s.con.execute(f"DESCRIBE {t}").fetchall()}
            keys = [k for k in lake.PARTITIONED.get(t, []) if k not in documented]
            part = pa.schema([(k, pa.string() if k == "run" else pa.int32()) for k in
                              lake.PARTITIONED.get(t, []) + (["export"] if t == "op_estimates" else [])])
            data = ds.dataset(os.fspath(d / t), format="parquet", partitioning=ds.partitioning(part, flavor="hive"))
            got = {f.name: f.type for f in data.schema}
            extra = set(keys) | ({"export"} if t == "op_estimates" else set())
            assert {c: typ for c, typ in got.items() if c not in extra} == documented, t
            assert set(got) - set(documented) == extra, t
            assert data.count_rows() == s.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0], t
        # partition values decode to the run names
        runs = ds.dataset(os.fspath(d / "events"), format="parquet", partitioning=ds.partitioning(
            pa.schema([("run", pa.string()), ("rank", pa.int32())]), flavor="hive")).to_table(columns=["run", "rank"])
        assert set(zip(runs["run"].to_pylist(), runs["rank"].to_pylist())) == {
            ("job", 0), ("job", 1), (ODD_RUN, 0), ("norank", None)}


@pytest.mark.slow
def test_export_refuses_a_directory_that_is_not_a_lake(source_db, tmp_path, cli_app):
    d = tmp_path / "busy"
    d.mkdir()
    (d / "notes.txt").write_text("x")
    r = invoke(cli_app, "export", "--db", source_db, "--parquet", d)
    assert r.exit_code == 2 and "not a duckprof Parquet lake" in r.stderr


def test_a_lake_written_at_schema_version_4_opens(tmp_path):
    # version 5 added report_results, which a lake does not hold: a v4 lake is the same lake
    # (but for events.unfinished, version 6, read from its args: lake.OLD_LAKE_COLUMNS)
    d = tmp_path / "lake"
    with duckprof.connect() as s:
        s.load([str(HANDMADE / "nesting3.json")], run="r")
        lake.export_lake(s, d)
    marker = d / lake.MARKER
    meta = json.loads(marker.read_text())
    assert meta["schema_version"] == duckprof.SCHEMA_VERSION == 6
    marker.write_text(json.dumps(dict(meta, schema_version=4)))
    with lake.open_lake(d) as s:
        assert s.sql("SELECT count(*) FROM trace_files").fetchall() == [(1,)]
    marker.write_text(json.dumps(dict(meta, schema_version=3)))
    with pytest.raises(duckprof.DuckprofError, match="a lake of schema version 3"):
        lake.open_lake(d)


UNFINISHED_NESTING = ("SELECT t.path, e.event_id, e.parent_event_id, e.depth, e.self_ns, e.op_event_id, e.unfinished "
                      "FROM events e JOIN traces t USING (trace_id) WHERE e.depth IS NOT NULL ORDER BY 1, 2")


def test_a_version_5_lake_reads_unfinished_from_args_and_an_import_nests_again(tmp_path, cli_app):
    """A lake written at version 5 has no events.unfinished, and its nesting of
    a '"finished": false' range is the old one (fixes18's cross_thread: 'outer'
    closed at the range's start, self 20.9 ms for torch's 2.48 ms). Read as it
    is, the flag comes from the args (lake.OLD_LAKE_COLUMNS); an import nests
    those traces again, as a load does; an export into it is refused (one
    lake, one schema)."""
    import duckdb
    files = [str(REPO / "fixtures" / "fixes18" / f"{n}.json.gz") for n in ("cross_thread", "still_open")]
    d = tmp_path / "lake"
    with duckprof.connect() as s:
        s.load(files, run="u")
        want = s.sql(UNFINISHED_NESTING).fetchall()
        lake.export_lake(s, d)
    assert sum(1 for r in want if r[-1]) == 2
    # as version 5 wrote it: no unfinished column, outer's self time as that nesting gave it
    con = duckdb.connect()
    for root, _dirs, names in os.walk(d / "events"):
        for n in names:
            f = os.path.join(root, n)
            con.execute(f"COPY (SELECT * EXCLUDE (unfinished) REPLACE (CASE WHEN name = 'outer' THEN 20940755 "
                        f"ELSE self_ns END AS self_ns) FROM read_parquet('{f}')) TO '{f}.old' (FORMAT parquet)")
            os.replace(f + ".old", f)
    marker = d / lake.MARKER
    marker.write_text(json.dumps(dict(json.loads(marker.read_text()), schema_version=5)))
    with lake.open_lake(d) as s:
        assert s.sql("SELECT name FROM user_annotations WHERE unfinished ORDER BY 1").fetchall() == [
            ("cross_thread",), ("still_open",)]
        assert s.sql("SELECT DISTINCT self_ns FROM user_annotations WHERE name = 'outer'").fetchall() == [(20940755,)]
    with duckprof.connect() as s:
        lake.import_lake(s, d)
        assert s.sql(UNFINISHED_NESTING).fetchall() == want
        assert s.sql("SELECT self_ns FROM user_annotations WHERE name = 'outer' ORDER BY trace_id").fetchall()[0] \
            == (2479275,)  # torch's 2.48 ms (fixes18's key_averages)
    with duckprof.connect() as s:
        s.load(files[:1], run="v")
        with pytest.raises(duckprof.DuckprofError, match="a lake of schema version 5, this duckprof writes version 6"):
            lake.export_lake(s, d)


def test_a_lake_computes_a_derived_table_when_a_statement_reads_it(source_db, tmp_path):
    """The derived tables are not in the lake: opening it computed all four
    (0.5 s on this lake, in every `query/report --lake` process, the
    `--run` check taking the connection did too); now a statement computes
    those it reads, as after a load into memory, with the database's rows."""
    from duckprof.session import DERIVED
    d = tmp_path / "lake"
    with duckprof.connect(source_db, read_only=True) as s:
        lake.export_lake(s, d)
        want = {t: s.sql(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in DERIVED}
        launches = sorted(s.sql("SELECT * EXCLUDE (trace_id) FROM launches").fetchall(), key=repr)
    assert want["derived_launches"] and want["derived_kernel_estimates"] and want["derived_call_totals"]

    def filled(s):  # past the session, which would fill what the query reads
        return {t: s._con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in DERIVED}
    with lake.open_lake(d) as s:
        assert filled(s) == dict.fromkeys(DERIVED, 0)
        assert s.sql("SELECT count(*) FROM events").fetchall()[0][0] > 0
        assert filled(s) == dict.fromkeys(DERIVED, 0)
        assert sorted(s.sql("SELECT * EXCLUDE (trace_id) FROM launches").fetchall(), key=repr) == launches
        assert filled(s) == {**dict.fromkeys(DERIVED, 0), "derived_launches": want["derived_launches"]}
        s.con  # taking the connection computes the rest
        assert filled(s) == want
