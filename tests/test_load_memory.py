"""The memory a load into a database file may use (issue 19: 100 MB at peak
RSS <= 2x the JSON): with DUCKPROF_LOAD_MEMORY=auto DuckDB's memory limit
scales with the JSON loaded (load.load_memory_limit; unset: 1 GB), chunks are
parsed with DuckDB's smallest JSON buffer, and an event too big for that
buffer still loads (or, over 64 MiB, fails saying so)."""

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
    JSON after the process's own 140 MB, at least 56MB (a parse buffer of
    32 MiB and what the parse writes), at most 1 GB; as many chunks parse at
    once as leave one buffer's worth free."""
    f = load.load_memory_limit
    assert f(0) is f(1 * MB) is f(63 * MB) is None
    assert f(64 * MB) == f(90 * MB) == 56
    assert f(100 * MB) == 60
    assert f(200 * MB) == 260
    assert f(300 * MB) == 460
    assert f(570 * MB) == f(10_000 * MB) == 1000
    w = load.parse_workers
    assert w(68, 2) == w(68, 8) == w(101, 8) == 1
    assert w(102, 8) == 2 and w(260, 2) == 2 and w(260, 8) == 6 and w(1000, 8) == 8


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
    """DUCKPROF_LOAD_MEMORY=auto: the limit scales with the JSON loaded;
    unset: 1 GB (the scaled limit makes a 100 MB load ~40% slower; 950MB
    with the block allocator, test_a_load_into_a_file_keeps_its_buffers...)."""
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)  # a small trace scales like a big one
    monkeypatch.delenv("DUCKPROF_LOAD_MEMORY", raising=False)
    monkeypatch.setattr(load, "_address_space_limit", lambda: 8 << 30)  # ulimit -v: no block allocator
    seen = _Limits()
    session.load_into(tmp_path / "unset.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"953.6 MiB"}  # 1GB
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    seen = _Limits()
    session.load_into(tmp_path / "a.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"53.4 MiB"}  # 56MB
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "200MB")  # set: it wins
    seen = _Limits()
    session.load_into(tmp_path / "b.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"190.7 MiB"}


class _InsertSettings:
    """The loader's connection, noting DuckDB's threads and
    write_buffer_row_group_count at the insert of the events and at the
    statement after it (trace_windows.sql)."""

    def __init__(self, con, seen):
        self.con, self.seen = con, seen

    def execute(self, sql, *params):
        if "INSERT INTO events BY NAME" in sql or "stored in traces: the earliest start" in sql:
            self.seen.append(self.con.execute(
                "SELECT current_setting('threads'), current_setting('write_buffer_row_group_count')").fetchall()[0])
        return self.con.execute(sql, *params)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_under_the_scaled_limit_the_events_are_written_a_row_group_at_a_time(tmp_path, monkeypatch):
    """DuckDB kept the rows of the events' insert in memory, 5 row groups on
    each thread, before writing them to the file: the events of a 100 MB
    trace (~130 MB) did not fit in its scaled limit (~60MB) and the load went
    on under 1 GB. Under a scaled limit the events are inserted on one
    thread, each row group written once full; the other statements keep
    every thread, and a load under 1 GB (DUCKPROF_LOAD_MEMORY unset, or the
    scaled limit of a big load) keeps DuckDB's buffering."""
    seen: list = []
    init = load.Loader.__init__
    monkeypatch.setattr(load.Loader, "__init__", lambda self, con, *a, **kw: init(self, _InsertSettings(con, seen), *a, **kw))
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    session.load_into(tmp_path / "a.duckdb", [str(NESTING3)], threads=2)
    assert seen == [(1, 1), (2, 1)]
    seen.clear()
    monkeypatch.delenv("DUCKPROF_LOAD_MEMORY")
    session.load_into(tmp_path / "u.duckdb", [str(NESTING3)], threads=2)
    assert seen == [(2, 5), (2, 5)]
    seen.clear()  # the scaled limit of 570 MB of JSON and more, 1 GB: as unset
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    monkeypatch.setattr(load, "load_memory_limit", lambda json_bytes: 1000)
    session.load_into(tmp_path / "g.duckdb", [str(NESTING3)], threads=2)
    assert seen == [(2, 5), (2, 5)]
    rows = []
    for db in ("a", "u"):  # the same rows either way
        with duckprof.connect(tmp_path / f"{db}.duckdb", read_only=True) as s:
            rows.append(s.sql("SELECT * EXCLUDE (trace_id) FROM events ORDER BY event_id").fetchall())
    assert len(rows[0]) == 19 and rows[0] == rows[1]


class _BlockAllocator(_Limits):
    """A progress callback that records the size of DuckDB's block allocator."""

    def __call__(self, msg):
        self.seen.add(self.con.execute("SELECT current_setting('block_allocator_memory')").fetchall()[0][0])


def test_a_load_into_a_file_keeps_its_buffers_in_a_block_allocator(tmp_path, monkeypatch):
    """A load of 900 MB of JSON or more (one that spills) gets a block
    allocator as big as its memory limit on its connection (its buffers stay
    mapped: fewer page faults, less system time),
    and when DUCKPROF_LOAD_MEMORY is unset a limit of 950MB instead of 1GB
    (the peak stays that of 1GB without the allocator); no allocator under
    the scaled limit, which changes during the load, nor under ulimit -v,
    where the allocator's reserved address space would count."""
    monkeypatch.delenv("DUCKPROF_LOAD_MEMORY", raising=False)
    monkeypatch.setattr(load, "_address_space_limit", lambda: None)
    seen, limits = _BlockAllocator(), _Limits()
    session.load_into(tmp_path / "small.duckdb", [str(NESTING3)], progress=seen, threads=2)
    session.load_into(tmp_path / "small2.duckdb", [str(NESTING3)], progress=limits, threads=2)
    assert seen.seen == {"0 bytes"} and limits.seen == {"953.6 MiB"}  # under ALLOCATOR_FROM_BYTES: as before
    monkeypatch.setattr(load, "ALLOCATOR_FROM_BYTES", 0)  # a small trace gets it like a 1 GB one
    seen, limits = _BlockAllocator(), _Limits()
    session.load_into(tmp_path / "unset.duckdb", [str(NESTING3)], progress=seen, threads=2)
    session.load_into(tmp_path / "unset2.duckdb", [str(NESTING3)], progress=limits, threads=2)
    assert seen.seen == limits.seen == {"905.9 MiB"}  # 950MB
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "200MB")
    seen = _BlockAllocator()
    session.load_into(tmp_path / "b.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"190.7 MiB"}
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    seen = _BlockAllocator()
    session.load_into(tmp_path / "a.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen == {"0 bytes"}
    monkeypatch.delenv("DUCKPROF_LOAD_MEMORY")
    monkeypatch.setattr(load, "_address_space_limit", lambda: 8 << 30)
    seen, limits = _BlockAllocator(), _Limits()
    session.load_into(tmp_path / "v.duckdb", [str(NESTING3)], progress=seen, threads=2)
    session.load_into(tmp_path / "v2.duckdb", [str(NESTING3)], progress=limits, threads=2)
    assert seen.seen == {"0 bytes"} and limits.seen == {"953.6 MiB"}  # 1GB
    with duckprof.connect(tmp_path / "unset.duckdb", read_only=True) as s:
        assert s.sql("SELECT count(*) FROM events").fetchall() == [(19,)]


def test_two_big_files_parse_one_at_a_time_under_the_scaled_limit(tmp_path, monkeypatch):
    """Two files of one chunk each, parsed side by side under 56MB, ran out of
    memory (two 32 MiB buffers and the blocks they write): under a scaled
    limit as many parse at once as it has room for."""
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)  # the scaled limit, 56MB
    grown = []
    monkeypatch.setattr(load._ChunkStager, "_make_room", lambda self, cur: grown.append(1))
    from duckprof import synth
    files = [str(tmp_path / f"rank{seed}.json") for seed in range(2)]
    for seed, f in enumerate(files):
        synth.generate(f, events=135_000, seed=seed, rank=seed)  # 45 MB each
    seen = _Limits()
    report = session.load_into(tmp_path / "r.duckdb", files, progress=seen, threads=2)
    assert len(report.loaded) == 2 and not grown
    assert seen.seen == {"53.4 MiB"}


def test_a_parse_out_of_memory_under_a_scaled_limit_goes_on_under_1gb(tmp_path, monkeypatch):
    """Where the scaled limit is too tight after all (here 10MB: one buffer
    does not fit beside the rest), the chunk is parsed again under the limit
    of before instead of failing the load."""
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)
    monkeypatch.setattr(load, "load_memory_limit", lambda json_bytes: 10)
    seen = _Limits()
    session.load_into(tmp_path / "r.duckdb", [str(NESTING3)], progress=seen, threads=2)
    assert seen.seen >= {"9.5 MiB", "953.6 MiB"}
    with duckprof.connect(tmp_path / "r.duckdb", read_only=True) as s:
        assert s.sql("SELECT count(*) FROM events").fetchall() == [(19,)]


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
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)  # the scaled limit, 56MB
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
    fails, and says that an event is too long for it: the JSON is valid (the
    message said before that a bracket was missing, and 32 MB)."""
    trace = _big_event_trace(tmp_path / "huge.json", 70 * MB)
    r = invoke(cli_app, "load", trace, "--db", tmp_path / "r.duckdb", "-q")
    assert r.exit_code == 2
    line = assert_one_line_error(r.stderr, [str(trace), "an event in traceEvents is longer than 64 MiB",
                                            "the JSON itself is valid"])
    assert "does not end where it should" not in line
    assert not (tmp_path / "r.duckdb").exists()


def test_a_transaction_out_of_memory_under_a_scaled_limit_runs_again_under_1gb(tmp_path, monkeypatch):
    """The insert ran out of memory under the scaled limit (seen once in ~15
    loads of 100 MB at 60MB, a 512 KiB allocation): the transaction rolls
    back and runs once more under the limit of before; the run is loaded
    once, its notes said once."""
    import duckdb
    monkeypatch.setenv("DUCKPROF_LOAD_MEMORY", "auto")
    monkeypatch.setattr(load, "SCALED_MEMORY_BYTES", 0)
    real, calls = load.Loader._insert, []

    def insert(self, b, run, say=lambda what: None, **kw):
        calls.append(self.con.execute("SELECT current_setting('memory_limit'), "
                                      "current_setting('write_buffer_row_group_count')").fetchall()[0])
        if len(calls) == 1:
            real(self, b, run, say, **kw)  # its rows are rolled back
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data of size 512.0 KiB")
        return real(self, b, run, say, **kw)
    monkeypatch.setattr(load.Loader, "_insert", insert)
    salvaged = tmp_path / "cut.json"
    salvaged.write_bytes(NESTING3.read_bytes()[:-40])  # truncated: loaded with a note
    report = session.load_into(tmp_path / "r.duckdb", [str(NESTING3), str(salvaged)], threads=2, salvage=True)
    # under 1 GB as a load without a scaled limit: DuckDB's buffering of rows
    assert calls == [("53.4 MiB", 1), ("953.6 MiB", 5)]
    assert [len(f.notes) for f in report.files] == [0, 1]
    with duckprof.connect(tmp_path / "r.duckdb", read_only=True) as s:
        assert s.sql("SELECT count(*), count(DISTINCT trace_id) FROM events").fetchall()[0][1] == 2
        assert s.sql("SELECT count(*) FROM traces").fetchall() == [(2,)]
