"""The page's stored report results (table report_results, schema version 5).

The first `duckprof html` page of a run on a writable database file runs its
reports (about 20 passes over the trace) and stores each result: the rows as
JSON (Python's json: ints, floats by repr, text, booleans and NULLs come back
exactly; a result holding another type is not stored), its columns, notes and
'instead' lines. Every later page of the run reads them. A result is found
only under the key of everything it was computed from (inputs_key): the
run's traces (ids, content hashes, load times), their stored facts,
duckprof_meta (the versions of the stored views, peaks, estimates and
derived tables), the device_peaks and interconnect_peaks rows, the run's
tags, and the code (every SQL file, reports.py, the schema template's key,
duckprof's and DuckDB's versions). A load into the run, `duckprof tag`, a
changed peak row, `duckprof rm`, a migrate or another duckprof all give
another key: the page computes again and replaces the run's rows (one set
of rows per run and page scope is kept).

A read-only session stores nothing (the page keeps what it computed in
Page.unstored; the CLI, which reads with a read-only session so that other
readers are not locked out, opens the file for writing afterwards, briefly,
and stores them when nothing changed meanwhile and no other process holds
the file: store_in_file). Nothing here makes a page fail.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from .. import __version__, dbfile, interrupts, sqlfiles
from ..errors import DuckprofError


@functools.lru_cache(maxsize=1)
def code_key() -> str | None:
    """A hash of the code a stored result was computed by (None for an
    installation without its sources: nothing is stored then)."""
    from .. import session
    template = session._schema_template_key()
    if template is None:
        return None
    try:
        here = Path(__file__).resolve().parent.parent
        texts = [rel + "\0" + sqlfiles.read(rel) for rel in sqlfiles.list_dir("")]
        texts.append((here / "reports.py").read_text(encoding="utf-8"))
    except OSError:
        return None
    return dbfile.digest(template, *texts, __version__, duckdb.__version__)


#: what the results of a page of $run (NULL: every run) are computed from,
#: besides the code (each table's rows as text, in a fixed order)
_INPUTS = """
    WITH t AS (SELECT trace_id, run, content_hash, loaded_at, event_count, path FROM traces
               WHERE $run IS NULL OR run = $run)
    SELECT (SELECT string_agg(t::VARCHAR, '|' ORDER BY trace_id) FROM t),
           (SELECT string_agg(f::VARCHAR, '|' ORDER BY f::VARCHAR) FROM trace_facts f
            WHERE trace_id IN (SELECT trace_id FROM t)),
           (SELECT string_agg(m::VARCHAR, '|' ORDER BY m::VARCHAR) FROM duckprof_meta m),
           (SELECT string_agg(p::VARCHAR, '|' ORDER BY p::VARCHAR) FROM device_peaks p),
           (SELECT string_agg(i::VARCHAR, '|' ORDER BY i::VARCHAR) FROM interconnect_peaks i),
           (SELECT string_agg(g::VARCHAR, '|' ORDER BY g::VARCHAR) FROM run_tags g
            WHERE $run IS NULL OR run = $run)"""


def inputs_key(session, run: str | None) -> str | None:
    """The key of the stored results of a page of `run` on `session`; None
    when results are not stored (a session in memory or on trace files, a
    file of schema 4 read as it is, an installation without its sources)."""
    from ..session import tables_missing
    code = code_key()
    if not session.db or code is None or "report_results" in tables_missing(session.schema_version):
        return None
    return dbfile.digest(code, *map(str, session.con.execute(_INPUTS, {"run": run}).fetchall()[0]))


def options_text(options: dict) -> str:
    return json.dumps(options, sort_keys=True)


@dataclass
class Stored:
    columns: list[str]
    rows: list[list]
    notes: list[str]
    instead: list[str]


def read(con, run: str | None, key: str | None) -> dict[tuple[str, str], Stored]:
    """The results stored for a page of `run` under `key`, by (report, options_text)."""
    if key is None:
        return {}
    got = con.execute("SELECT report, options, columns, rows_json, notes, instead FROM report_results "
                      "WHERE run IS NOT DISTINCT FROM $run AND inputs_key = $key", {"run": run, "key": key})
    return {(name, options): Stored(columns, json.loads(rows), notes, instead)
            for name, options, columns, rows, notes, instead in got.fetchall()}


@dataclass
class Pending:
    """Results a page computed, to store under `key` (rows: the parameters of
    report_results' INSERT)."""
    run: str | None
    key: str
    rows: list[tuple]


#: the types of the values JSON gives back exactly
_EXACT = {str, int, float, bool, type(None)}


def encode(run: str | None, key: str, results) -> Pending:
    """results: (name, options_text, columns, rows (lists or tuples of
    values), notes, instead); those whose values JSON does not hold exactly
    are left out."""
    out = []
    for name, options, columns, rows, notes, instead in results:
        # lists, dicts: JSON would keep their values but not always their type
        # (the values' types collected at C speed: a page stores a million)
        if not set(map(type, itertools.chain.from_iterable(rows))) <= _EXACT:
            continue
        try:
            text = json.dumps(rows, allow_nan=True, separators=(",", ":"))
        except (TypeError, ValueError):
            continue
        out.append((name, options, list(columns), text, list(notes), list(instead)))
    return Pending(run, key, out)


def write(con, pending: Pending) -> None:
    """Store `pending` in one transaction on the writable connection `con`:
    the run's rows under another key go, as do rows of the same reports
    under this key (another process may have stored them meanwhile)."""
    if not pending.rows:
        return

    def replace():
        con.execute("DELETE FROM report_results WHERE run IS NOT DISTINCT FROM $run AND (inputs_key <> $key "
                    "OR list_contains($ids, report || chr(0) || options))",
                    {"run": pending.run, "key": pending.key, "ids": [r[0] + "\0" + r[1] for r in pending.rows]})
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        con.executemany("INSERT INTO report_results VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        [(pending.run, pending.key, *r, now) for r in pending.rows])
    dbfile.in_transaction(con, replace)


def store_in_file(db: str | os.PathLike, pending: Pending, wait: float = 0) -> str | None:
    """Open `db` for writing (waiting up to `wait` seconds for another
    process's lock, as the page's --wait) and store `pending` when the page's
    inputs are unchanged. Returns why nothing was stored, None when it was."""
    from ..session import Session
    if not os.path.isfile(db):
        return f"{db}: no such database"
    try:
        with Session(db, wait=wait) as s:
            if inputs_key(s, pending.run) != pending.key:
                return "the database changed while the page was built"
            write(s.con, pending)
    except (DuckprofError, duckdb.Error, OSError) as e:
        if interrupts.is_interrupt(e):
            raise
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return None
