"""Load trace files into the database: find files, split them, let DuckDB parse
and normalise them (sql/load/*.sql), compute nesting, commit atomically.

Python only orchestrates: no loop here runs per event.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from . import estimators, sqlfiles
from .errors import DuckprofError, TraceError
from .split import split_trace

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


@dataclass
class FileReport:
    path: str
    trace_id: int | None = None
    events: int = 0
    json_bytes: int = 0
    seconds: float = 0.0
    skipped: str = ""  # why the file was not loaded again
    notes: list[str] = field(default_factory=list)


@dataclass
class LoadReport:
    run: str
    files: list[FileReport] = field(default_factory=list)

    @property
    def loaded(self):
        return [f for f in self.files if not f.skipped]

    def summary(self) -> str:
        n = len(self.loaded)
        ev = sum(f.events for f in self.loaded)
        mb = sum(f.json_bytes for f in self.loaded) / 1e6
        secs = sum(f.seconds for f in self.loaded)
        out = [f"run '{self.run}': loaded {n} trace(s), {ev:,} events, {mb:,.1f} MB"
               + (f" in {secs:.2f} s ({mb / secs:,.0f} MB/s)" if secs > 0 and n else "")]
        for f in self.files:
            if f.skipped:
                out.append(f"{f.path}: {f.skipped}")
            for note in f.notes:
                out.append(f"{f.path}: {note}")
        return "\n".join(out)


def expand_paths(paths) -> list[str]:
    """Files, directories (recursive) and glob patterns -> sorted unique trace files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            found = sorted(
                os.path.join(root, f)
                for root, _dirs, files in os.walk(p)
                for f in files if f.endswith(TRACE_SUFFIXES))
            if not found:
                raise TraceError(p, "directory contains no trace files (*.json, *.json.gz)")
            out.extend(found)
        elif os.path.exists(p):
            out.append(p)
        elif glob.has_magic(p):
            found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            if not found:
                raise TraceError(p, "no files match this pattern")
            out.extend(found)
        else:
            raise TraceError(p, "no such file or directory")
    seen, unique = set(), []
    for f in out:
        a = os.path.abspath(f)
        if a not in seen:
            seen.add(a)
            unique.append(a)
    return unique


def rank_of(path: str, metadata: dict):
    info = metadata.get("distributedInfo")
    if isinstance(info, dict):
        try:
            return int(info.get("rank"))
        except (TypeError, ValueError):
            pass
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def _int_or_none(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _clean_duckdb_error(e: Exception, split) -> str:
    msg = str(e).splitlines()[0]
    msg = re.sub(r"^[A-Za-z ]+Error: ", "", msg)
    for c in split.chunks:
        msg = msg.replace(f'in file "{c}", ', "").replace(c, "<traceEvents>")
    return msg.strip().rstrip(".")


def add_estimates(con, trace_id: int) -> int:
    """Store FLOP/byte/dtype estimates for the op signatures of one trace that
    op_estimates does not have yet. Python runs once per distinct signature
    (thousands even for huge traces), never per event."""
    rows = con.execute("""
        SELECT DISTINCT * FROM (
            SELECT hash(name, input_dims::VARCHAR, input_types::VARCHAR, concrete_inputs::VARCHAR) AS sig,
                   name, input_dims::VARCHAR, input_types::VARCHAR, concrete_inputs::VARCHAR
            FROM events
            WHERE trace_id = $t AND cat = 'cpu_op' AND ph = 'X')
        WHERE sig NOT IN (SELECT sig FROM op_estimates)
        """, {"t": trace_id}).fetchall()
    if not rows:
        return 0
    data = [[str(sig), n, d, t, c, estimators.op_flops(n, d, t, c), estimators.op_bytes(n, d, t, c),
             estimators.op_dtype(d, t)] for sig, n, d, t, c in rows]
    # one statement, one bound JSON parameter: no per-row round trips
    con.execute("""
        INSERT INTO op_estimates
        SELECT (r->>0)::UBIGINT, r->>1, r->>2, r->>3, r->>4, (r->>5)::BIGINT, (r->>6)::BIGINT, r->>7
        FROM (SELECT unnest(CAST(CAST($data AS JSON) AS JSON[])) AS r)""",
                {"data": json.dumps(data)})
    return len(data)


class _Unvalidated(Exception):
    """An unvalidated (in-memory) load hit a parse error: redo it validated."""


@dataclass
class _Prepared:
    path: str
    split: object
    events: int | None  # None until staged
    raw: str | None     # the TEMP table holding its parsed events (stage_events.sql)


class Loader:
    """Loads files into one connection, atomically.

    Phase 1 (per file; the database's tables are not touched): split the file
    into chunk files and parse them into a TEMP table (stage_events.sql), then
    check them (validate.sql). Bad input fails here with a clear TraceError;
    the few recoverable problems (invalid UTF-8, raw control characters, a
    chunk cut inside a nested object) are retried here.
    Phase 2: one transaction normalises every staged file into the main tables
    (insert_events.sql, nesting, estimates). A DuckDB rollback does not restore
    a database *file* byte for byte (it has already written row groups), which
    is why bad input must be caught in phase 1. In memory a rollback is
    complete, so there each file is staged inside the transaction, and a load
    that fails is redone the phase-1 way to report or repair the problem.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, progress=None, memory_limit: str | None = None,
                 validate_first: bool = True):
        self.con = con
        self.validate_first = validate_first
        self.progress = progress or (lambda msg: None)
        # Loading into a database file: cap DuckDB's memory so a big trace spills
        # to disk instead of growing the process (measured: 1 GB trace, peak RSS
        # 1.95 GB unlimited, 1.15 GB at 1 GB, ~10% slower). None: no cap.
        self.memory_limit = memory_limit

    def load(self, paths, run: str = "default", salvage: bool = False) -> LoadReport:
        if not run or not isinstance(run, str):
            raise ValueError("run must be a non-empty string")
        files = expand_paths(paths)
        if not self.validate_first:
            # In memory a rollback leaves nothing behind, so each file is staged
            # inside the transaction (one file's parsed copy held at a time). A
            # parse error aborts that transaction, so retries are impossible
            # there: roll back and redo the load the phase-1 way, which reports
            # or repairs the problem exactly as for a database file.
            try:
                return self._load(files, run, salvage, validate=False)
            except _Unvalidated:
                pass
        return self._load(files, run, salvage, validate=True)

    def _load(self, files, run, salvage, validate) -> LoadReport:
        report = LoadReport(run=run)
        con = self.con
        tmp = tempfile.mkdtemp(prefix="duckprof-")
        threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        old_limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        if self.memory_limit:
            con.execute("SET memory_limit = $m", {"m": self.memory_limit})
        try:
            known = {h for (h,) in con.execute(
                "SELECT content_hash FROM traces WHERE run = $run", {"run": run}).fetchall()}
            prepared = []
            for i, path in enumerate(files):
                fr = FileReport(path=path)
                report.files.append(fr)
                t0 = time.perf_counter()
                step = f"[{i + 1}/{len(files)}] "
                p = self._prepare(path, tmp, salvage, chunks=max(2, 2 * threads), raw=f"dp_raw_{i}",
                                  validate=validate,
                                  say=lambda what: self.progress(f"{step}{what} {os.path.basename(path)}"))
                fr.seconds = time.perf_counter() - t0
                if p.split.content_hash in known:
                    fr.skipped = f"already loaded in run '{run}' (same content); skipped"
                    self._drop_chunks(p.split)
                    if p.raw:
                        con.execute(f"DROP TABLE IF EXISTS {p.raw}")
                    continue
                known.add(p.split.content_hash)
                prepared.append((p, fr))
            next_id = con.execute("SELECT coalesce(max(trace_id), 0) + 1 FROM traces").fetchall()[0][0]
            con.execute("BEGIN TRANSACTION")
            try:
                for i, (p, fr) in enumerate(prepared):
                    say = (lambda what, i=i, p=p: self.progress(
                        f"[{i + 1}/{len(prepared)}] {what} {os.path.basename(p.path)}"))
                    t0 = time.perf_counter()
                    try:
                        self._insert(p, run, next_id, fr, say)
                    except duckdb.Error as e:
                        if not validate:
                            raise _Unvalidated() from None
                        # validation should have caught it: still name the file
                        raise TraceError(p.path, self._describe(e, p.split)) from None
                    fr.trace_id = next_id
                    fr.seconds += time.perf_counter() - t0
                    next_id += 1
                    self._drop_chunks(p.split)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            for (t,) in con.execute("SELECT table_name FROM duckdb_tables() "
                                    "WHERE temporary AND table_name LIKE 'dp_raw_%'").fetchall():
                con.execute(f"DROP TABLE IF EXISTS {t}")
            if self.memory_limit:
                con.execute("SET memory_limit = $m", {"m": old_limit})
        return report

    @staticmethod
    def _drop_chunks(split):
        for c in split.chunks:
            if os.path.exists(c):
                os.remove(c)

    def _stage(self, path, split, raw: str) -> int:
        """Parse a trace's events into the TEMP table `raw` (stage_events.sql)
        and check them (validate.sql); returns the number of events."""
        con = self.con
        con.execute(sqlfiles.render("load/stage_events.sql", raw=raw), {"files": split.chunks})
        events, bad, bad_name = con.execute(sqlfiles.render("load/validate.sql", raw=raw)).fetchall()[0]
        if bad:
            con.execute(f"DROP TABLE IF EXISTS {raw}")
            raise TraceError(path, f"{bad:,} event(s) have a ts or dur that is not a usable number "
                                   f"(NaN, inf or out of range), first: {bad_name!r}")
        return events

    def _prepare(self, path, tmp, salvage, chunks, raw, validate=True, say=lambda what: None) -> _Prepared:
        say("reading")
        split = split_trace(path, tmp, chunks=chunks, salvage=salvage)
        if not validate:
            return _Prepared(path, split, None, None)
        say("parsing")
        attempts = 0
        while True:
            try:
                return _Prepared(path, split, self._stage(path, split, raw), raw)
            except duckdb.OutOfMemoryException as e:
                raise DuckprofError(f"{path}: out of memory while parsing ({str(e).splitlines()[0]}); "
                                    "raise DUCKPROF_LOAD_MEMORY or free memory") from None
            except duckdb.Error as e:
                msg = str(e)
                self._drop_chunks(split)
                attempts += 1
                if attempts > 3:
                    raise TraceError(path, self._describe(e, split)) from None
                if "control character" in msg and split.sanitized:
                    if split.spaces:
                        raise TraceError(path, self._describe(e, split)) from None
                    split = split_trace(path, tmp, chunks=1, salvage=salvage, sanitize=True, spaces=True)
                elif ("control character" in msg or "UTF-8" in msg) and not split.sanitized:
                    split = split_trace(path, tmp, chunks=1, salvage=salvage, sanitize=True)
                elif len(split.chunks) > 1 and "Malformed JSON" in msg:
                    # a chunk cut inside a nested object: parse the array whole
                    split = split_trace(path, tmp, chunks=1, salvage=salvage,
                                        sanitize=split.sanitized, spaces=split.spaces)
                else:
                    raise TraceError(path, self._describe(e, split)) from None

    def _insert(self, p: _Prepared, run, trace_id, fr, say=lambda what: None):
        con, split = self.con, p.split
        if p.raw is None:  # in-memory load: staged here, inside the transaction
            say("parsing")
            p.raw = f"dp_raw_t{trace_id}"
            p.events = self._stage(p.path, split, p.raw)
        say("inserting")
        meta = split.metadata
        base_ns = _int_or_none(meta.get("baseTimeNanoseconds")) or 0
        con.execute(sqlfiles.render("load/insert_events.sql", raw=p.raw),
                    {"trace_id": trace_id, "base_ns": base_ns})
        con.execute(f"DROP TABLE {p.raw}")
        if not base_ns and con.execute(
                # fractional absolute us beyond 2^43 us, where a double is coarser than 1 ns
                "SELECT count(*) FROM (SELECT 1 FROM events WHERE trace_id = $t "
                "AND abs(ts_ns) >= 8796093022208000 AND ts_ns % 1000 <> 0 LIMIT 1)",
                {"t": trace_id}).fetchall()[0][0]:
            con.execute(sqlfiles.read("load/exact_ts.sql"), {"files": split.chunks, "trace_id": trace_id})
        say("nesting")
        nesting = sqlfiles.read("load/nesting.sql")
        con.execute(nesting, {"trace_id": trace_id, "crossing_threads": []})
        # events that start inside another and outlive it: redo those threads (see nesting.sql)
        crossing = [t for (t,) in con.execute(sqlfiles.read("load/nesting_check.sql"),
                                              {"trace_id": trace_id}).fetchall()]
        if crossing:
            con.execute("DELETE FROM nesting WHERE trace_id = $t", {"t": trace_id})
            con.execute(nesting, {"trace_id": trace_id, "crossing_threads": crossing})
        self._insert_trace_row(p.path, run, trace_id, split, meta, base_ns, p.events)
        say("estimating")
        add_estimates(con, trace_id)
        fr.events = p.events
        fr.json_bytes = split.json_bytes
        if split.salvaged_bytes:
            fr.notes.append(f"truncated file salvaged: loaded {p.events:,} complete events, "
                            f"dropped the last {split.salvaged_bytes:,} bytes "
                            f"(an incomplete event starting {split.salvaged_preview[:60]!r})")
        fr.notes.extend(split.notes)

    @staticmethod
    def _describe(e, split) -> str:
        msg = _clean_duckdb_error(e, split)
        if "duplicate key" in msg:
            return f"not valid JSON inside traceEvents: an event has a duplicate key ({msg})"
        if "Expected OBJECT" in msg:  # e.g. [1, 2, 3] or {"traceEvents": ["x"]}
            return f"not a trace: traceEvents holds a value that is not an event object ({msg})"
        if "Malformed JSON" in msg or "unexpected" in msg:
            return f"not valid JSON inside traceEvents ({msg})"
        return msg

    def _insert_trace_row(self, path, run, trace_id, split, meta, base_ns, n_events):
        con = self.con
        con.execute(
            "INSERT INTO traces VALUES ($trace_id, $run, $rank, $path, $size, $json_bytes, "
            "$hash, $loaded_at, $base, $schema_version, $events, $salvaged, $metadata)",
            {"trace_id": trace_id, "run": run, "rank": rank_of(path, meta), "path": path,
             "size": split.size_bytes, "json_bytes": split.json_bytes, "hash": split.content_hash,
             "loaded_at": datetime.now(timezone.utc).replace(tzinfo=None),
             "base": base_ns or None,
             "schema_version": None if meta.get("schemaVersion") is None else str(meta.get("schemaVersion")),
             "events": n_events, "salvaged": split.salvaged_bytes,
             "metadata": json.dumps(meta, allow_nan=True, default=str)})
        devices = meta.get("deviceProperties")
        if isinstance(devices, list):
            rows = []
            for d in devices:
                if not isinstance(d, dict):
                    continue
                rows.append((trace_id, _int_or_none(d.get("id")), str(d.get("name", "")),
                             _int_or_none(d.get("totalGlobalMem")), _int_or_none(d.get("computeMajor")),
                             _int_or_none(d.get("computeMinor")),
                             _int_or_none(d.get("numSms", d.get("multiProcessorCount"))),
                             json.dumps(d, default=str)))
            if rows:
                con.executemany("INSERT INTO devices VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
