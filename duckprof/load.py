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
from .errors import TraceError
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


def add_estimates(con, events_table: str, estimates_table: str, trace_id: int) -> int:
    """Store FLOP/byte/dtype estimates for the op signatures of one trace that
    op_estimates does not have yet. Python runs once per distinct signature
    (thousands even for huge traces), never per event."""
    rows = con.execute(f"""
        SELECT DISTINCT hash(name, input_dims::VARCHAR, input_types::VARCHAR, concrete_inputs::VARCHAR) AS sig,
               name, input_dims::VARCHAR, input_types::VARCHAR, concrete_inputs::VARCHAR
        FROM {events_table} e
        WHERE trace_id = $t AND cat = 'cpu_op' AND ph = 'X'
          AND hash(e.name, e.input_dims::VARCHAR, e.input_types::VARCHAR, e.concrete_inputs::VARCHAR)
              NOT IN (SELECT sig FROM main.op_estimates UNION ALL SELECT sig FROM {estimates_table})
        """, {"t": trace_id}).fetchall()
    if not rows:
        return 0
    data = [[str(sig), n, d, t, c, estimators.op_flops(n, d, t, c), estimators.op_bytes(n, d, t, c),
             estimators.op_dtype(d, t)] for sig, n, d, t, c in rows]
    # one statement, one bound JSON parameter: no per-row round trips
    con.execute(f"""
        INSERT INTO {estimates_table}
        SELECT (r->>0)::UBIGINT, r->>1, r->>2, r->>3, r->>4, (r->>5)::BIGINT, (r->>6)::BIGINT, r->>7
        FROM (SELECT unnest(CAST(CAST($data AS JSON) AS JSON[])) AS r)""",
                {"data": json.dumps(data)})
    return len(data)


class Loader:
    """Loads files into one connection. `staged=True` (persistent databases)
    parses into TEMP tables first so a failure never touches the database file."""

    def __init__(self, con: duckdb.DuckDBPyConnection, staged: bool, progress=None):
        self.con = con
        self.staged = staged
        self.progress = progress or (lambda msg: None)

    def load(self, paths, run: str = "default", salvage: bool = False) -> LoadReport:
        if not run or not isinstance(run, str):
            raise ValueError("run must be a non-empty string")
        files = expand_paths(paths)
        report = LoadReport(run=run)
        con = self.con
        tmp = tempfile.mkdtemp(prefix="duckprof-")
        tables = ("traces", "devices", "events", "nesting", "op_estimates")
        target = {t: (f"stage_{t}" if self.staged else t) for t in tables}
        try:
            # Parsing runs in autocommit: DuckDB aborts a whole transaction on the
            # first failed statement, and the loader retries some failures
            # (sanitising, re-chunking). Only the final copy is one transaction.
            if self.staged:
                for t in tables:
                    con.execute(f"CREATE OR REPLACE TEMP TABLE stage_{t} AS SELECT * FROM main.{t} LIMIT 0")
            next_id = first_id = con.execute("SELECT coalesce(max(trace_id), 0) + 1 FROM main.traces").fetchone()[0]
            known = {h for (h,) in con.execute(
                "SELECT content_hash FROM main.traces WHERE run = $run", {"run": run}).fetchall()}
            for i, path in enumerate(files):
                fr = FileReport(path=path)
                report.files.append(fr)
                self.progress(f"[{i + 1}/{len(files)}] {path}")
                t0 = time.perf_counter()
                fr.trace_id = next_id
                loaded = self._load_one(path, run, next_id, salvage, tmp, target, known, fr)
                fr.seconds = time.perf_counter() - t0
                if loaded:
                    next_id += 1
            if self.staged:
                con.execute("BEGIN TRANSACTION")
                for t in tables:
                    ignore = "OR IGNORE" if t == "op_estimates" else ""
                    con.execute(f"INSERT {ignore} INTO main.{t} SELECT * FROM stage_{t}")
                con.execute("COMMIT")
        except BaseException:
            if self.staged:
                try:
                    con.execute("ROLLBACK")
                except duckdb.Error:
                    pass
            else:  # in-memory database: remove what this load added
                for t in tables[:-1]:
                    con.execute(f"DELETE FROM main.{t} WHERE trace_id >= $first", {"first": first_id})
                # op_estimates rows are keyed by signature and may be shared with
                # earlier loads; extra rows are harmless there (pure cache)
            raise
        finally:
            if self.staged:
                for t in tables:
                    try:
                        con.execute(f"DROP TABLE IF EXISTS stage_{t}")
                    except duckdb.Error:
                        pass
            shutil.rmtree(tmp, ignore_errors=True)
        return report

    def _load_one(self, path, run, trace_id, salvage, tmp, target, known, fr) -> bool:
        con = self.con
        threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        split = split_trace(path, tmp, chunks=max(2, 2 * int(threads)), salvage=salvage)
        if split.content_hash in known:
            fr.skipped = f"already loaded in run '{run}' (same content); skipped"
            fr.trace_id = None
            for c in split.chunks:
                os.remove(c)
            return False
        known.add(split.content_hash)
        meta = split.metadata
        base_ns = _int_or_none(meta.get("baseTimeNanoseconds")) or 0
        insert_sql = sqlfiles.render("load/insert_events.sql", events=target["events"])
        params = {"files": split.chunks, "trace_id": trace_id, "base_ns": base_ns}
        sanitized = None
        try:
            con.execute(insert_sql, params)
        except duckdb.Error as e:
            msg = str(e)
            con.execute(f"DELETE FROM {target['events']} WHERE trace_id = $t", {"t": trace_id})
            if "control character" in msg or "UTF-8" in msg or "unicode" in msg.lower():
                sanitized = self._resplit(path, tmp, split, salvage, sanitize=True)
            elif len(split.chunks) > 1 and "Malformed JSON" in msg:
                # A chunk cut in the wrong place (inside a nested object): parse whole.
                sanitized = self._resplit(path, tmp, split, salvage, sanitize=False)
            else:
                raise TraceError(path, self._describe(e, split)) from None
            split = sanitized
            params["files"] = split.chunks
            try:
                con.execute(insert_sql, params)
            except duckdb.Error as e2:
                if "control character" in str(e2) and not getattr(split, "_spaces", False):
                    con.execute(f"DELETE FROM {target['events']} WHERE trace_id = $t", {"t": trace_id})
                    split = self._resplit(path, tmp, split, salvage, sanitize=True, spaces=True)
                    params["files"] = split.chunks
                    try:
                        con.execute(insert_sql, params)
                    except duckdb.Error as e3:
                        raise TraceError(path, self._describe(e3, split)) from None
                else:
                    raise TraceError(path, self._describe(e2, split)) from None
        for c in split.chunks:
            os.remove(c)
        n_events = con.execute(f"SELECT count(*) FROM {target['events']} WHERE trace_id = $t",
                               {"t": trace_id}).fetchone()[0]
        con.execute(sqlfiles.render("load/nesting.sql", events=target["events"],
                                    nesting=target["nesting"]), {"trace_id": trace_id})
        self._insert_trace_row(path, run, trace_id, split, meta, base_ns, n_events, target)
        add_estimates(con, target["events"], target["op_estimates"], trace_id)
        fr.events = n_events
        fr.json_bytes = split.json_bytes
        if split.salvaged_bytes:
            fr.notes.append(f"truncated file salvaged: loaded {n_events:,} complete events, "
                            f"dropped the last {split.salvaged_bytes:,} bytes "
                            f"(an incomplete event starting {split.salvaged_preview[:60]!r})")
        fr.notes.extend(split.notes)
        return True

    def _resplit(self, path, tmp, split, salvage, sanitize, spaces=False):
        for c in split.chunks:
            if os.path.exists(c):
                os.remove(c)
        new = split_trace(path, tmp, chunks=1, salvage=salvage, sanitize=sanitize, spaces=spaces)
        new._spaces = spaces
        return new

    @staticmethod
    def _describe(e, split) -> str:
        msg = _clean_duckdb_error(e, split)
        if "non-finite" in msg:
            return "an event has a NaN or infinite ts/dur (not a valid timestamp)"
        if "Malformed JSON" in msg or "unexpected" in msg:
            return f"not valid JSON inside traceEvents ({msg})"
        return msg

    def _insert_trace_row(self, path, run, trace_id, split, meta, base_ns, n_events, target):
        con = self.con
        con.execute(
            f"INSERT INTO {target['traces']} VALUES ($trace_id, $run, $rank, $path, $size, $json_bytes, "
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
                con.executemany(f"INSERT INTO {target['devices']} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
