"""One trace file loaded into a session's memory is read by the insert itself
(normalize.sql's chunk source), not staged first (issue 19): the same rows
as the staged load of the same file, and whatever staging decides (an
unusable time, exact timestamps, a parse that needs a retry or fails) still
decided there: the read's transaction is rolled back and the file staged.
"""

from __future__ import annotations

import pytest

import duckprof
from duckprof import load, sqlfiles
from conftest import HANDMADE, REPO, rows, scalar

TABLES = ("traces", "devices", "events", "op_estimates", "trace_facts", "derived_launches",
          "derived_kernel_estimates", "derived_memory_events", "derived_call_totals")


@pytest.fixture
def reads(monkeypatch):
    """The staged parses (stage_events.sql) and the inserts that read a chunk
    themselves, in order: 'staged' / 'direct'."""
    got = []
    real = sqlfiles.render

    def render(name, **kw):
        if name == "load/stage_events.sql":
            got.append("staged")
        elif name == "load/insert_events.sql" and any("chunk" in r for r in kw["raws"]):
            got.append("direct")
        return real(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", render)
    return got


def table_rows(s, table):
    """Every row of table (all columns but loaded_at), sorted."""
    cols = [c for (c,) in rows(s, "SELECT column_name FROM duckdb_columns() WHERE table_name = $t "
                                  "AND database_name = current_database() ORDER BY column_index", {"t": table})
            if c != "loaded_at"]
    return sorted(rows(s, f"SELECT {', '.join(cols)} FROM {table}"), key=repr)


def contents(s) -> dict:
    s.con  # noqa: B018 - fills everything left to first use
    return {t: table_rows(s, t) for t in TABLES}


@pytest.mark.parametrize("trace", [HANDMADE / "nesting3.json", HANDMADE / "fractional_base.json",
                                   REPO / "fixtures" / "cpu_small_model.json"])
def test_one_file_in_memory_is_read_by_the_insert(trace, reads, tmp_path):
    with duckprof.connect() as s:
        s.load([str(trace)])
        assert reads == ["direct"]
        got = contents(s)
    reads.clear()
    db = tmp_path / "staged.duckdb"
    with duckprof.connect(db) as s:  # a database file: staged (and nested at load)
        s.load([str(trace)])
        assert reads == ["staged"]
        want = contents(s)
    for t in TABLES:
        assert got[t] == want[t], t
    assert got["events"]


def events_file(path, events: list[str]):
    path.write_text('{"traceEvents": [' + ", ".join(events) + "]}")
    return path


def ev(name, ts, dur="1", ph="X"):
    ts = "" if ts is None else f', "ts": {ts}'
    return f'{{"ph": "{ph}", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 2{ts}, "dur": {dur}}}'


@pytest.mark.parametrize("name, events, match", [
    ("beyond_9e15", [ev("a", 1000), ev("far", "9.1e15")], r"not a usable number.*first: 'far'"),
    ("dur_beyond_9e15", [ev("a", 1000), ev("long", 2000, dur="9.1e15")], r"not a usable number.*'long'"),
    ("no_ts", [ev("a", 1000), ev("untimed", None)], r"have no ts.*'untimed'"),
    ("nan", [ev("a", 1000), ev("nan", "NaN")], r"not a usable number.*'nan'"),
])
def test_what_staging_refuses_is_refused_as_before(name, events, match, reads, tmp_path):
    path = events_file(tmp_path / f"{name}.json", events)
    with duckprof.connect() as s:
        with pytest.raises(duckprof.TraceError, match=match) as ei:
            s.load([str(path)])
        assert str(ei.value).startswith(str(path))
        assert scalar(s, "SELECT count(*) FROM events") == 0
        assert scalar(s, "SELECT count(*) FROM traces") == 0
    # the direct read failed or was doubted, and the staged parse named the problem
    assert reads[0] == "direct" and reads[-1] == "staged"


def test_exact_timestamps_beyond_the_head_are_read_again(reads, tmp_path):
    """Fractional absolute timestamps that start beyond the chunk's head
    (so the insert reads it, as doubles): the check after it sees them, and
    the file is staged, which reads their exact values."""
    plain = [ev(f"i{k}", 1700000000000000 + k) for k in range(2000)]
    path = events_file(tmp_path / "late.json", plain + [ev("late", "1700000000002000.130")])
    assert path.stat().st_size > 64 << 10
    with duckprof.connect() as s:
        s.load([str(path)])
        assert scalar(s, "SELECT ts_ns FROM events WHERE name = 'late'") == 1700000000002000130
        assert scalar(s, "SELECT count(*) FROM events") == 2001
    assert reads == ["direct", "staged"]


def exact_ns(text: str) -> int:
    import decimal
    return int((decimal.Decimal(text) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def test_a_head_with_exact_timestamps_is_read_with_them(reads, tmp_path):
    """Fractional absolute timestamps in the chunk's head: the insert reads
    ts as DECIMAL(38, 9), and ts_ns is the ns of the text, as staging gives."""
    path = HANDMADE / "absolute_fractional.json"
    with duckprof.connect() as s:
        s.load([str(path)])
        got = contents(s)
    assert reads == ["direct"]
    reads.clear()
    with duckprof.connect(tmp_path / "staged.duckdb") as s:
        s.load([str(path)])
        want = contents(s)
    assert reads == ["staged"]
    for t in TABLES:
        assert got[t] == want[t], t


@pytest.mark.parametrize("name, ts, direct", [
    # fractions of at least one double's spacing (0.25 us here) from a whole us:
    # their doubles are fractional, as staging's check finds: read exactly
    ("quarter_on", ["1700000000000000.380", "1700000000000001.600"], True),
    # fractions the double rounds to a whole us (.120 -> .0, .900 -> 1.0):
    # staging's check on the doubles says no exact timestamps are needed, so
    # the staged doubles are what the trace gets; the insert cannot tell, and
    # hands the trace to staging
    ("all_near_whole", ["1700000000000000.120", "1700000000000001.900"], False),
])
def test_exact_timestamps_are_kept_only_where_staging_keeps_them(name, ts, direct, reads, tmp_path):
    path = events_file(tmp_path / f"{name}.json", [ev(f"e{k}", t) for k, t in enumerate(ts)])
    with duckprof.connect() as s:
        s.load([str(path)])
        got = [t for (t,) in rows(s, "SELECT ts_ns FROM events ORDER BY event_id")]
    assert reads == (["direct"] if direct else ["direct", "staged"])
    with duckprof.connect(tmp_path / "staged.duckdb") as s:
        s.load([str(path)])
        assert got == [t for (t,) in rows(s, "SELECT ts_ns FROM events ORDER BY event_id")]
    if direct:
        assert got == [exact_ns(t) for t in ts]
    else:  # the doubles' whole us
        assert got == [1700000000000000000, 1700000000000002000]


def test_a_file_that_needs_sanitizing_loads_as_before(reads, tmp_path):
    """An unpaired surrogate escape in a name: the insert's read fails, and
    staging retries with it replaced, as it always did."""
    path = tmp_path / "surrogate.json"
    path.write_text('{"traceEvents": [' + ev("a", 1000) + ", " + ev("b\\ud800", 2000) + "]}")
    with duckprof.connect() as s:
        report = s.load([str(path)])
        assert rows(s, "SELECT name FROM events ORDER BY ts_ns") == [("a",), ("b\ufffd",)]
    assert report.files[0].notes == ["1 unpaired UTF-16 surrogate escape(s) replaced by \\ufffd"]
    assert reads == ["direct", "staged", "staged"]


def test_reloading_the_same_file_is_skipped(reads):
    with duckprof.connect() as s:
        s.load([str(HANDMADE / "nesting3.json")])
        report = s.load([str(HANDMADE / "nesting3.json")])
        assert report.files[0].skipped
        assert scalar(s, "SELECT count(*) FROM traces") == 1
    assert reads == ["direct"]


def test_several_files_and_a_taken_connection_are_staged(reads):
    files = [str(HANDMADE / "nesting3.json"), str(HANDMADE / "fractional_base.json")]
    with duckprof.connect() as s:
        s.load(files)
    assert "direct" not in reads
    reads.clear()
    with duckprof.connect() as s:
        s.con  # noqa: B018 - SQL on it is not seen: the load nests at load, from staged events
        s.load(files[:1])
    assert reads == ["staged"]


def test_an_interrupt_is_not_a_reason_to_stage(monkeypatch, reads):
    """A Ctrl-C during the insert's read stops the load (rolled back); it is
    not taken for a read that staging must redo."""
    real = load.Loader._insert_direct

    def interrupted(self, sql, b, p):
        raise KeyboardInterrupt
    monkeypatch.setattr(load.Loader, "_insert_direct", interrupted)
    with duckprof.connect() as s:
        with pytest.raises(KeyboardInterrupt):
            s.load([str(HANDMADE / "nesting3.json")])
        assert scalar(s, "SELECT count(*) FROM traces") == 0
        monkeypatch.setattr(load.Loader, "_insert_direct", real)
        s.load([str(HANDMADE / "nesting3.json")])
        assert scalar(s, "SELECT count(*) FROM events") == 19
