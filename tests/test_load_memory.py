"""The memory a load into a database file may use (issue 19: 100 MB at peak
RSS <= 2x the JSON): DuckDB's memory limit scales with the JSON loaded
(load.load_memory_limit), chunks are parsed with DuckDB's smallest JSON
buffer, and an event too big for that buffer still loads (or fails with the
same message as before)."""

from __future__ import annotations

import gzip
import json

import pytest

import duckprof
from duckprof import load, session
from conftest import HANDMADE, assert_one_line_error, cli_app, invoke  # noqa: F401

NESTING3 = HANDMADE / "nesting3.json"  # 19 events
MB = 10**6


def test_the_limit_scales_with_the_json():
    """1 GB below 64 MB of JSON (as before); from there the rest of 2x the
    JSON after the process's own 140 MB, at least 32 MiB per parsing thread,
    at most 1 GB."""
    f = load.load_memory_limit
    assert f(0, 2) == f(1 * MB, 2) == f(63 * MB, 2) == "1GB"
    assert f(64 * MB, 2) == f(100 * MB, 2) == "68MB"   # 2 x 2 x 16 MiB
    assert f(100 * MB, 8) == "269MB"                  # 8 parse buffers of 32 MiB
    assert f(200 * MB, 2) == "260MB"
    assert f(300 * MB, 2) == "460MB"
    assert f(570 * MB, 2) == f(10_000 * MB, 2) == "1000MB"


def test_a_gz_file_counts_its_uncompressed_json(tmp_path):
    raw = NESTING3.read_bytes() * 50
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(raw))
    assert load._json_bytes(str(gz)) == len(raw)
    assert load._json_bytes(str(NESTING3)) == NESTING3.stat().st_size
    assert load._json_bytes(str(tmp_path / "missing.json")) == 0


class _Limits:
    """A progress callback that records DuckDB's memory limit as the load goes."""

    def __init__(self):
        self.con, self.seen = None, set()

    def attach(self, con):
        self.con = con

    def __call__(self, msg):
        self.seen.add(self.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def test_a_load_into_a_file_runs_under_the_scaled_limit(tmp_path, monkeypatch):
    monkeypatch.delenv("DUCKPROF_LOAD_MEMORY", raising=False)
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)  # a small trace scales like a big one
    seen = _Limits()
    session.load_into(tmp_path / "a.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"64.8 MiB"}  # 68MB: two parse buffers
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "200MB")  # set: it wins
    seen = _Limits()
    session.load_into(tmp_path / "b.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"190.7 MiB"}


def test_a_load_fits_in_a_64mb_limit(cli_app, tmp_path, monkeypatch):
    """DuckDB's JSON buffer was 64 MiB (maximum_object_size 32 MiB): no load
    fitted in 64 MB. Now 32 MiB a chunk."""
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "64MB")
    r = invoke(cli_app, "load", NESTING3, "--db", tmp_path / "r.duckdb", "-q")
    assert r.exit_code == 0, r.stderr
    with duckprof.connect(tmp_path / "r.duckdb", read_only=True) as s:
        assert s.sql("SELECT count(*) FROM events").fetchall() == [(19,)]


def _big_event_trace(path, blob_bytes: int, fractional: bool = False):
    """Three events, the middle one with args of `blob_bytes`; fractional:
    absolute timestamps with decimals (read again exactly, exact_ts.sql)."""
    def ev(name, ts, args=None):
        # the timestamp as text: a float would lose the decimals at 1.7e15
        stamp = f"17000000000000{ts:02d}.625" if fractional else str(100 + ts)
        return ('{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": 1, "ts": %s, "dur": 5%s}'
                % (name, stamp, f', "args": {json.dumps(args)}' if args else ""))
    events = [ev("small", 0), ev("huge", 10, {"blob": "x" * blob_bytes}), ev("after", 20)]
    path.write_text('{"traceEvents": [%s]}' % ", ".join(events))
    return path


@pytest.mark.parametrize("fractional", [False, True])
def test_an_event_over_the_parse_buffer_still_loads(tmp_path, monkeypatch, fractional):
    """An event of 40 MB does not fit DuckDB's 32 MiB buffer: its chunk is
    parsed again with the 64 MiB one, under the limit loads had before
    limits scaled (staging it takes 256 MiB at once), as it loaded before."""
    monkeypatch.delenv("DUCKPROF_LOAD_MEMORY", raising=False)
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)  # the scaled limit, 68MB
    trace = _big_event_trace(tmp_path / "big.json", 40 * MB, fractional)
    db = tmp_path / "r.duckdb"
    session.load_into(db, [str(trace)], threads=2)
    with duckprof.connect(db, read_only=True) as s:
        got = s.sql("SELECT name, strlen(args::VARCHAR), ts_ns FROM events ORDER BY ts_ns").fetchall()
    first = 1_700_000_000_000_000_625 if fractional else 100_000
    assert got == [("small", None, first), ("huge", 40 * MB + 11, first + 10_000),
                   ("after", None, first + 20_000)]


def test_an_event_over_the_big_buffer_fails_as_before(cli_app, tmp_path):
    """Over 64 MiB (DuckDB's reader at maximum_object_size 32 MiB) the load
    fails with the message it gave before chunks were parsed with the smaller
    buffer first."""
    trace = _big_event_trace(tmp_path / "huge.json", 70 * MB)
    r = invoke(cli_app, "load", trace, "--db", tmp_path / "r.duckdb", "-q")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, [str(trace), "an event does not end where it should",
                                     "DuckDB read on past 32 MB"])
    assert not (tmp_path / "r.duckdb").exists()
