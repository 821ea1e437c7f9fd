"""Run history (issue 17): tags (load --tag, duckprof tag), the runs view's
facts (stored at load in trace_facts, so listing runs reads no events), and
trend across runs. Expected values are hand-computed or read from the trace
files with Python's json."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest

from conftest import REPO, assert_one_line_error, invoke, read_trace, trace_events

import duckprof
from duckprof.synth import generate

COLLECTIVES = REPO / "fixtures" / "collectives" / "bus_bandwidth_rank0.json"
TWO_STREAMS = REPO / "fixtures" / "gpu_time" / "two_streams.json"


def step_durations_us(path) -> list[float]:
    """ProfilerStep#N host annotations' durations, read with json."""
    return [e["dur"] for e in trace_events(read_trace(path))
            if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op")
            and str(e.get("name", "")).startswith("ProfilerStep#")]


def runs_rows(s):
    rel = s.runs()
    return {r[0]: dict(zip(rel.columns, r)) for r in rel.fetchall()}


def test_runs_facts_hand_computed():
    """bus_bandwidth_rank0.json: device 0 runs [100,150], [200,300] and [250,350] µs:
    busy = 50 + 150 = 200 µs of the window 100..350 = 250 µs -> 80%; no steps.
    two_streams.json: its ProfilerSteps, read with json."""
    with duckprof.connect() as s:
        s.load([str(COLLECTIVES)], run="c")
        s.load([str(TWO_STREAMS)], run="t")
        runs = runs_rows(s)
        summary = s.sql("SELECT busy_ns, window_ns FROM trace_summary WHERE run = 'c'").fetchall()
    c = runs["c"]
    assert (c["devices"], c["steps"], c["step_mean_us"]) == (1, 0, None)
    assert c["busy_pct"] == pytest.approx(80.0) and summary == [(200_000, 250_000)]
    assert (c["ranks"], c["world_size"]) == ("0", 4)
    steps = step_durations_us(TWO_STREAMS)
    assert len(steps) == runs["t"]["steps"] == 2
    assert runs["t"]["step_mean_us"] == pytest.approx(sum(steps) / len(steps))


@pytest.mark.slow
def test_runs_reads_no_events_and_missing_facts_come_back(tmp_path):
    db = tmp_path / "r.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(COLLECTIVES)], run="c")
        before = runs_rows(s)["c"]
        s.con.execute("DELETE FROM events")  # runs does not need them
        assert runs_rows(s)["c"] == before
    with duckprof.connect(db) as s:
        s.load([str(COLLECTIVES)], run="c2")
        s.con.execute("DELETE FROM trace_facts WHERE trace_id = 1")
        assert runs_rows(s)["c"]["devices"] is None  # unknown, not 0
        s.load([str(TWO_STREAMS)], run="t")  # a load fills in what is missing
        assert s.sql("SELECT count(*) FROM trace_facts").fetchall() == [(3,)]


@pytest.mark.slow
def test_tags_on_load_tag_command_and_rm(tmp_path, cli_app):
    db = tmp_path / "perf.duckdb"
    r = invoke(cli_app, "load", COLLECTIVES, "--db", db, "--run", "job42", "--tag", "commit=abc123",
               "--tag", "batch=64", "-q")
    assert r.exit_code == 0, r.stderr
    r = invoke(cli_app, "runs", "--db", db, "-f", "json")
    assert json.loads(r.stdout)[0]["tags"] == {"batch": "64", "commit": "abc123"}
    r = invoke(cli_app, "runs", "--db", db)
    assert "batch=64, commit=abc123" in r.stdout
    r = invoke(cli_app, "tag", "job42", "commit=def456", "lr=3e-4", "--remove", "batch", "--db", db)
    assert r.exit_code == 0 and r.stdout.strip() == "run 'job42': commit=def456, lr=3e-4"
    r = invoke(cli_app, "tag", "job42", "--db", db)
    assert r.stdout.strip() == "run 'job42': commit=def456, lr=3e-4"
    r = invoke(cli_app, "tag", "nope", "a=b", "--db", db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, ["no run named 'nope'", "job42"])
    r = invoke(cli_app, "tag", "job42", "novalue", "--db", db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "KEY=VALUE")
    r = invoke(cli_app, "rm", "job42", "--db", db)
    assert r.exit_code == 0
    with duckprof.connect(db, read_only=True) as s:
        assert s.sql("SELECT (SELECT count(*) FROM run_tags), (SELECT count(*) FROM trace_facts)").fetchall() == [(0, 0)]


@pytest.mark.slow
def test_a_migrated_database_gets_its_facts(tmp_path):
    import gzip
    db = tmp_path / "old.duckdb"
    with gzip.open(REPO / "fixtures" / "legacy_db" / "schema_v1.duckdb.gz", "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with duckprof.connect(db) as s:
        assert s.sql("SELECT count(*) FROM traces").fetchall() == s.sql("SELECT count(*) FROM trace_facts").fetchall()
        assert s.sql("SELECT count(*) FROM runs WHERE devices IS NULL").fetchall() == [(0,)]


# -- trend ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Three runs tagged batch=8, 16, 128 (text order would be 128, 16, 8),
    loaded in the order 16, 128, 8."""
    d = tmp_path_factory.mktemp("history")
    db = d / "perf.duckdb"
    files = {}
    with duckprof.connect(db) as s:
        for seed, batch in ((1, 16), (2, 128), (3, 8)):
            f = d / f"run{seed}.json"
            generate(f, events=3000, seed=seed)
            files[f"r{seed}"] = f
            s.load([str(f)], run=f"r{seed}", tags={"batch": batch, "commit": f"c{seed}"})
    return db, files


@pytest.mark.slow
def test_trend_step_time_by_a_numeric_tag(history, cli_app):
    db, files = history
    r = invoke(cli_app, "trend", "--db", db, "--by", "batch", "-f", "csv")
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(x["run"], x["order_value"]) for x in rows] == [("r3", "8"), ("r1", "16"), ("r2", "128")]
    want = {run: sum(st) / len(st) for run, st in ((run, step_durations_us(f)) for run, f in files.items())}
    for x in rows:
        assert float(x["value_us"]) == pytest.approx(want[x["run"]])
    v = [want[x["run"]] for x in rows]
    for prev, cur, x in zip(v, v[1:], rows[1:]):
        change = 100 * (cur - prev) / prev
        assert float(x["change_pct"]) == pytest.approx(change)
        assert x["moved"] == ("" if abs(change) <= 10 else "up" if change > 0 else "down")
    # the terminal table comes with a bar per run
    r = invoke(cli_app, "trend", "--db", db, "--by", "batch")
    bars = [line for line in r.stdout.splitlines() if "█" in line]
    assert [line.split()[0] for line in bars] == ["r3", "r1", "r2"]


@pytest.mark.slow
def test_trend_of_busy_changes_in_percentage_points(history):
    """busy is a percentage: its change from the run before is the difference
    in percentage points, and --threshold is in points too (failed before: a
    relative change, 60.6% -> 76.7% read +26.6%)."""
    db, _files = history
    with duckprof.connect(db, read_only=True) as s:
        busy = dict(s.sql("SELECT run, busy_pct FROM runs").fetchall())
        for threshold in (0.0, 1e9):
            rel = s.report("trend", metric="busy", threshold=threshold)
            assert rel.columns == ["position", "run", "order_value", "value_pct", "change_pp", "moved"]
            rows = rel.fetchall()
            assert [r[3] for r in rows] == [pytest.approx(busy[r[1]]) for r in rows]
            assert rows[0][4] is None
            for prev, cur in zip(rows, rows[1:]):
                assert cur[4] == pytest.approx(busy[cur[1]] - busy[prev[1]])
                assert cur[5] == (None if threshold else "up" if cur[4] > 0 else "down")
        assert "change_pct" in s.report("trend").columns


@pytest.mark.slow
def test_trend_kernel_time_per_step_and_load_order(history):
    db, files = history
    with duckprof.connect(db, read_only=True) as s:
        rel = s.report("trend", metric="kernel", name="%gemm%", per_step=True)
        rows = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
        assert [x["run"] for x in rows] == ["r1", "r2", "r3"]  # load order without --by
        for x in rows:
            ev = trace_events(read_trace(files[x["run"]]))
            total = sum(round(e["dur"] * 1000) for e in ev if e.get("cat") == "kernel" and "gemm" in e["name"].lower())
            assert x["value_us"] == pytest.approx(total / 1e3 / len(step_durations_us(files[x["run"]])))
        res = s.report_result("trend", by="commit", metric="busy")
        assert [r[1] for r in res.relation.fetchall()] == ["r1", "r2", "r3"]
        res = s.report_result("trend", by="nope")
        assert res.instead == ["3 run(s) without the tag 'nope' left out: r1, r2, r3"]
        with pytest.raises(duckprof.DuckprofError, match="--metric op needs --name"):
            s.report("trend", metric="op")
