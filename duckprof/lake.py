"""The Parquet lake: a directory of Parquet files, hive-partitioned by run (and
rank), holding a database's tables with the same names and columns, so that
Spark, Trino, Polars, pyarrow or DuckDB on object storage read a team's
history at any scale; duckprof itself runs its views over it without
importing (open_lake), and loads it back (import_lake).

Layout (README, "Parquet lake"):

    DIR/_duckprof_lake.json             what is in the lake: runs, trace ids, schema version
    DIR/traces/run=R/*.parquet          the traces table (run: the partition key)
    DIR/events/run=R/rank=K/*.parquet   the events table (rank NULL: __HIVE_DEFAULT_PARTITION__)
    DIR/devices/run=R/rank=K/*.parquet
    DIR/trace_facts/run=R/*.parquet
    DIR/op_estimates/export=N/*.parquet the estimates added by export N (sig is unique over the lake)
    DIR/run_tags/data.parquet           every run's tags (rewritten by each export)
    DIR/device_peaks/data.parquet, DIR/interconnect_peaks/data.parquet  (rewritten)

Partition values are written by DuckDB, percent-encoded ('a/b' -> a%2Fb).
trace_id is unique over the lake: an export numbers the traces it adds after
the lake's largest. Exporting again adds only the runs the lake does not have
(the marker file is written last: an export cut short leaves nothing the next
one counts). Python here only orchestrates: DuckDB reads and writes the files.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from . import dbfile, sqlfiles
from .errors import DuckprofError
from .load import FileReport, LoadReport

MARKER = "_duckprof_lake.json"
FORMAT = "duckprof-lake"
#: tables partitioned per run, and their partition keys (not written into the files)
PARTITIONED = {"traces": ["run"], "trace_facts": ["run"], "devices": ["run", "rank"], "events": ["run", "rank"]}
#: tables written whole as one file by every export
WHOLE = ("run_tags", "device_peaks", "interconnect_peaks")
#: every table of the lake (duckprof_meta is the marker file instead)
TABLES = tuple(PARTITIONED) + WHOLE + ("op_estimates",)
#: the database schema versions whose lakes this duckprof reads: version 5 added
#: report_results only, which a lake does not hold; version 6 events.unfinished,
#: which an older lake's events lack (OLD_LAKE_COLUMNS)
LAKE_SCHEMA_VERSIONS = (4, 5, 6)
#: the columns an older lake's files lack, and how they are read from it (Jinja,
#: rendered for such a lake only): events.unfinished from the args it holds, as
#: the load reads it (as sql/migrate/v5_to_v6.sql). Such a lake's nesting is the
#: old one (unfinished ranges nested as any range): an import computes it again
#: (session.renest_unfinished); a lake read as it is keeps it, until the runs
#: are exported again from a migrated database
OLD_LAKE_COLUMNS = {("events", "unfinished"): '{% from "load/normalize.sql" import unfinished_from_args %}'
                                              '{{ unfinished_from_args() }}'}
HIVE_TYPES = {"run": "VARCHAR", "rank": "INTEGER", "export": "INTEGER"}


def _path_list(paths):
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def is_lake(paths) -> bool:
    """True when `paths` is one directory holding a lake's marker file."""
    ps = _path_list(paths)
    return len(ps) == 1 and os.path.isfile(os.path.join(os.fspath(ps[0]), MARKER))


def read_marker(directory) -> dict:
    path = os.path.join(os.fspath(directory), MARKER)
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise DuckprofError(f"{directory}: not a duckprof Parquet lake ({e})") from None
    if meta.get("format") != FORMAT:
        raise DuckprofError(f"{directory}: not a duckprof Parquet lake ({MARKER} says {meta.get('format')!r})")
    from .session import SCHEMA_VERSION
    if meta.get("schema_version") not in LAKE_SCHEMA_VERSIONS:
        raise DuckprofError(f"{directory}: a lake of schema version {meta.get('schema_version')}, this duckprof "
                            f"reads version {SCHEMA_VERSION}")
    return meta


def _files(directory, table) -> str | None:
    """The glob of a table's Parquet files, None when it has none."""
    root = os.path.join(os.fspath(directory), table)
    for _dirpath, _dirs, names in os.walk(root):
        if any(n.endswith(".parquet") for n in names):
            return os.path.join(root, "**", "*.parquet")
    return None


def _columns(con, table) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall()]


def _reader(con, directory, table, where: str = "") -> str | None:
    """SELECT of a table's declared columns, in order, from its Parquet files
    (partition keys read from the paths); None when the lake has none."""
    glob = _files(directory, table)
    if glob is None:
        return None
    keys = PARTITIONED.get(table, ["export"] if table == "op_estimates" else [])
    hive = "{" + ", ".join(f"'{k}': {HIVE_TYPES[k]}" for k in keys) + "}"
    src = (f"read_parquet({_quote(glob)}, hive_partitioning = {'true' if keys else 'false'}"
           + (f", hive_types = {hive}, hive_types_autocast = false" if keys else "") + ")")
    old = {c: e for (t, c), e in OLD_LAKE_COLUMNS.items() if t == table}
    if old:  # those the files lack (an older lake's): read as OLD_LAKE_COLUMNS says
        have = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()}
        old = {c: sqlfiles.render_string(e) for c, e in old.items() if c not in have}
    cols = ", ".join(f'CAST({old.get(c, chr(34) + c + chr(34))} AS {t}) AS "{c}"' for c, t in _columns(con, table))
    return f"SELECT {cols} FROM {src}" + (f" WHERE {where}" if where else "")


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


# -- export -----------------------------------------------------------------------

@dataclass
class ExportReport:
    directory: str
    added: list = field(default_factory=list)     # (run, traces, events)
    skipped: list = field(default_factory=list)   # (run, why)

    def summary(self) -> str:
        n = sum(t for _, t, _ in self.added)
        ev = sum(e for _, _, e in self.added)
        out = [f"{self.directory}: added {len(self.added)} run(s), {n} trace(s), {ev:,} events"]
        out += [f"run {run!r}: {why}" for run, why in self.skipped]
        return "\n".join(out)


def export_lake(session, directory, runs=None, progress=None) -> ExportReport:
    """Write the runs of `session` that `directory` does not hold yet (all, or
    those named in `runs`) into the lake at `directory` (created if need be)."""
    say = progress or (lambda msg: None)
    con = session.con
    directory = os.path.abspath(os.fspath(directory))
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise DuckprofError(f"{directory}: not a directory")
    if os.path.isdir(directory) and os.listdir(directory) and not os.path.isfile(os.path.join(directory, MARKER)):
        raise DuckprofError(f"{directory}: not empty and not a duckprof Parquet lake; give a new or empty directory")
    from .session import SCHEMA_VERSION
    meta = read_marker(directory) if os.path.isfile(os.path.join(directory, MARKER)) else {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "exports": 0, "max_trace_id": 0, "runs": {}}
    if meta["schema_version"] != SCHEMA_VERSION:
        # its files lack columns this version's have (OLD_LAKE_COLUMNS): one lake, one schema
        raise DuckprofError(f"{directory}: a lake of schema version {meta['schema_version']}, this duckprof writes "
                            f"version {SCHEMA_VERSION}: export into a new directory (import the old lake into a "
                            "database first to keep its runs)")
    db_runs = {r: sorted(h) for r, h in con.execute(
        "SELECT run, list(content_hash) FROM traces GROUP BY run").fetchall()}
    wanted = sorted(db_runs) if runs is None else list(runs)
    rep = ExportReport(directory)
    for r in wanted:
        if r not in db_runs:
            raise DuckprofError(f"no run named {r!r} in the database (runs: {', '.join(sorted(db_runs)) or 'none'})")
    new = []
    for r in wanted:
        if r in meta["runs"]:
            same = sorted(meta["runs"][r]["content_hashes"]) == db_runs[r]
            rep.skipped.append((r, "already in the lake" + ("" if same else
                                ", but the database's run has other traces now: delete its run= folders "
                                "from the lake and export again to replace it")))
        else:
            new.append(r)
    os.makedirs(directory, exist_ok=True)
    export_no = int(meta.get("exports", 0)) + 1
    stage = os.path.join(directory, f".export-{uuid.uuid4().hex}")
    for old in os.listdir(directory):  # what an export cut short left behind
        if old.startswith(".export-"):
            shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
    os.makedirs(stage)
    try:
        if new:
            con.execute("""
                CREATE OR REPLACE TEMP TABLE lake_map AS
                SELECT trace_id AS old_id, ($first + row_number() OVER (ORDER BY trace_id))::INTEGER AS new_id, run, rank
                FROM traces WHERE list_contains($runs, run)""", {"first": int(meta.get("max_trace_id", 0)),
                                                                   "runs": new})
            for table, keys in PARTITIONED.items():
                say(f"exporting {table}")
                # the partition keys come from lake_map (traces has its own run column)
                extra = "".join(f", m.{k}" for k in keys if not (table == "traces" and k == "run"))
                con.execute(f"""
                    COPY (SELECT t.* REPLACE (m.new_id AS trace_id){extra}
                          FROM {table} t JOIN lake_map m ON t.trace_id = m.old_id)
                    TO {_quote(os.path.join(stage, table))}
                    (FORMAT parquet, PARTITION_BY ({', '.join(keys)}), FILENAME_PATTERN 'part_{{uuid}}')""")
            say("exporting op_estimates")
            old_sigs = _reader(con, directory, "op_estimates")
            con.execute(f"""
                CREATE OR REPLACE TEMP TABLE lake_new_estimates AS
                SELECT * FROM op_estimates
                {f'WHERE sig NOT IN (SELECT sig FROM ({old_sigs}))' if old_sigs else ''}""")
            if con.execute("SELECT count(*) FROM lake_new_estimates").fetchall()[0][0]:
                target = os.path.join(stage, "op_estimates", f"export={export_no}")
                os.makedirs(target)
                con.execute(f"COPY lake_new_estimates TO {_quote(os.path.join(target, 'part_0.parquet'))} "
                            "(FORMAT parquet)")
        # the whole tables: tags of every run in the lake (the database's where it has the run)
        lake_runs = sorted(set(meta["runs"]) | set(new))
        old_tags = _reader(con, directory, "run_tags")
        for table, sql in (
                ("run_tags", f"""SELECT * FROM run_tags WHERE list_contains($lake_runs, run)
                                 {f'UNION ALL SELECT * FROM ({old_tags}) WHERE NOT list_contains($db_runs, run)'
                                  if old_tags else ''}
                                 ORDER BY run, key"""),
                ("device_peaks", "SELECT * FROM device_peaks ORDER BY priority, device"),
                ("interconnect_peaks", "SELECT * FROM interconnect_peaks ORDER BY device")):
            os.makedirs(os.path.join(stage, table))
            con.execute(f"COPY ({sql}) TO {_quote(os.path.join(stage, table, 'data.parquet'))} (FORMAT parquet)",
                        {k: v for k, v in (("lake_runs", lake_runs), ("db_runs", sorted(db_runs)))
                         if f"${k}" in sql} or None)
        # move the staged files into place, then write the marker: the commit point
        for table in os.listdir(stage):
            for part in os.listdir(os.path.join(stage, table)):
                src, dst = os.path.join(stage, table, part), os.path.join(directory, table, part)
                os.makedirs(os.path.join(directory, table), exist_ok=True)
                if os.path.isdir(dst):  # a run= folder left by an export cut short after the move
                    shutil.rmtree(dst)
                elif os.path.exists(dst):
                    os.remove(dst)
                os.replace(src, dst)
        if new:
            counts = dict(con.execute("""SELECT m.run, [count(*), sum(t.event_count)::BIGINT, min(m.new_id), max(m.new_id)]
                                         FROM lake_map m JOIN traces t ON t.trace_id = m.old_id
                                         GROUP BY m.run""").fetchall())
            for r in new:
                n, ev, lo, hi = counts[r]
                meta["runs"][r] = {"traces": n, "events": ev, "trace_ids": [lo, hi], "content_hashes": db_runs[r],
                                   "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
                rep.added.append((r, n, ev))
            meta["max_trace_id"] = max(v["trace_ids"][1] for v in meta["runs"].values())
        meta["exports"] = export_no
        meta["tables"] = {t: [c for c, _ in _columns(con, t)] for t in TABLES}
        meta["partitioned_by"] = PARTITIONED
        tmp = os.path.join(directory, MARKER + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        os.replace(tmp, os.path.join(directory, MARKER))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        con.execute("DROP TABLE IF EXISTS lake_map")
        con.execute("DROP TABLE IF EXISTS lake_new_estimates")
    return rep


# -- reading: the views over the lake -----------------------------------------------

def open_lake(directory):
    """A read-only Session whose tables are views over the lake's Parquet files
    (an in-memory database: nothing is imported), with duckprof's views on top."""
    from .session import DERIVED, Session

    class LakeSession(Session):
        def __init__(self, directory):
            self.db = None
            self.read_only = True
            self.lake = os.path.abspath(os.fspath(directory))
            read_marker(self.lake)
            self._con = dbfile.plan_settings(duckdb.connect(":memory:"))
            try:
                self._con.execute("SET enable_progress_bar = false")
                self._con.execute(sqlfiles.read("schema.sql"))
                for table in TABLES:
                    sql = _reader(self._con, self.lake, table)
                    if sql is not None:  # a table the lake has no file of stays an empty table
                        self._con.execute(f"DROP TABLE {table}")
                        self._con.execute(f"CREATE VIEW {table} AS {sql}")
                self._create_views()
                # the derived tables are not in the lake: computed here, in memory, at first use
                # (Session.DEFERRED: a statement fills those it reads), as after a load into memory;
                # the nesting, estimates and trace facts are the lake's
                ids = {r[0] for r in self._con.execute("SELECT trace_id FROM traces").fetchall()}
                self._deferred = {t: set(ids) for t in DERIVED} if ids else {}
            except BaseException:
                self._con.close()
                raise

    return LakeSession(directory)


# -- loading a lake back ------------------------------------------------------------

def import_lake(session, paths, run: str = "default", progress=None) -> LoadReport:
    """Load the runs of a lake into `session` (all of them; with `run` other
    than 'default', only that one). Traces already in the database's run of
    the same name (same content hash) are skipped; the others get new
    trace ids. Atomic."""
    say = progress or (lambda msg: None)
    directory = os.path.abspath(os.fspath(_path_list(paths)[0]))
    meta = read_marker(directory)
    con = session.con
    runs = sorted(meta["runs"])
    if run != "default" or "default" in runs:
        if run not in meta["runs"]:
            raise DuckprofError(f"{directory}: the lake has no run {run!r} (runs: {', '.join(runs) or 'none'})")
        runs = [run]
    rep = LoadReport(run=run if len(runs) == 1 else ", ".join(runs))
    traces_sql = _reader(con, directory, "traces", "list_contains($runs, run)")
    if traces_sql is None or not runs:
        return rep
    say(f"reading {directory}")
    lake_traces = con.execute(f"SELECT trace_id, run, path, content_hash, event_count, json_bytes FROM ({traces_sql}) "
                              "ORDER BY trace_id", {"runs": runs}).fetchall()
    known = set(con.execute("SELECT run, content_hash FROM traces WHERE list_contains($runs, run)",
                            {"runs": runs}).fetchall())
    first = con.execute(sqlfiles.read("load/next_trace_id.sql")).fetchall()[0][0]
    mapping = []
    for tid, r, path, h, events, nbytes in lake_traces:
        fr = FileReport(path=path)
        rep.files.append(fr)
        if (r, h) in known:
            fr.skipped = f"already loaded in run '{r}' (same content); skipped"
            continue
        known.add((r, h))
        fr.trace_id, fr.events, fr.json_bytes = first + len(mapping), events, nbytes
        mapping.append((tid, fr.trace_id))
    if not mapping:
        return rep
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE lake_map AS SELECT unnest($old)::INTEGER AS old_id, "
                    "unnest($new)::INTEGER AS new_id", {"old": [a for a, _ in mapping], "new": [b for _, b in mapping]})
        for table in ("traces", "devices", "trace_facts", "events"):
            say(f"loading {table}")
            sql = _reader(con, directory, table, "list_contains($runs, run)")
            if sql is None:
                continue
            cols = ", ".join(f'"{c}"' for c, _ in _columns(con, table))
            con.execute(f"""INSERT INTO {table} ({cols})
                            SELECT s.* REPLACE (m.new_id AS trace_id)
                            FROM ({sql}) s JOIN lake_map m ON s.trace_id = m.old_id""", {"runs": runs})
        est = _reader(con, directory, "op_estimates")
        if est is not None:
            con.execute(f"INSERT OR IGNORE INTO op_estimates SELECT * FROM ({est})")
        tags = _reader(con, directory, "run_tags", "list_contains($runs, run)")
        if tags is not None:
            con.execute(f"INSERT OR REPLACE INTO run_tags SELECT * FROM ({tags})", {"runs": runs})
        con.execute("DROP TABLE lake_map")
        # an older lake's nesting of unfinished ranges (OLD_LAKE_COLUMNS): computed again
        from .session import fill_derived, renest_unfinished
        if meta.get("schema_version", 0) < 6:
            renest_unfinished(con, [b for _, b in mapping])
        # the derived tables are not in the lake (trace_facts is): computed for the new traces
        fill_derived(con, [b for _, b in mapping])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return rep
