"""A duckprof session: one DuckDB connection with the duckprof schema and views."""

from __future__ import annotations

import hashlib
import os
import re

import duckdb

from . import sqlfiles
from .errors import DuckprofError
from .load import Loader, LoadReport
from .peaks import packaged_digest, seed_interconnects, seed_peaks

def views_digest() -> str:
    """A hash of the packaged view sources (sql/views and the macros they use):
    stored in duckprof_meta, so a database whose views another duckprof made
    is noticed. Hashing the sources, not the rendered SQL, costs no rendering."""
    h = hashlib.blake2b(digest_size=8)
    for rel in sqlfiles.list_dir("views") + sqlfiles.list_dir("templates"):
        h.update(rel.encode() + b"\0" + sqlfiles.read(rel).encode() + b"\0")
    return h.hexdigest()


_FINGERPRINT_SQL = """
    SELECT 'view', view_name, sql FROM duckdb_views()
    WHERE NOT internal AND schema_name = 'main' AND database_name = current_database()
      AND list_contains($names, view_name)
    UNION ALL
    SELECT 'macro', function_name, parameters::VARCHAR || ' ' || macro_definition FROM duckdb_functions()
    WHERE NOT internal AND schema_name = 'main' AND database_name = current_database()
      AND function_type = 'table_macro' AND list_contains($names, function_name)
    ORDER BY 1, 2"""


def views_fingerprint(con) -> str:
    """A hash of the view and table-macro definitions a database holds under
    duckprof's names, as DuckDB stores them (normalised SQL)."""
    names = list(sqlfiles.view_headers())
    h = hashlib.blake2b(digest_size=16)
    for row in con.execute(_FINGERPRINT_SQL, {"names": names}).fetchall():
        h.update("\0".join(map(str, row)).encode() + b"\1")
    return h.hexdigest()


def packaged_views_fingerprint() -> str:
    """views_fingerprint of the packaged views, as this DuckDB stores them:
    worked out once in an empty in-memory database, and kept in the user's
    cache directory (per view sources and DuckDB version), since a reader
    compares it with every database it opens."""
    key = f"views-{views_digest()}-duckdb-{duckdb.__version__}"
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                         "duckprof", key)
    try:
        with open(cache, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        pass
    con = duckdb.connect(":memory:")
    try:
        con.execute(sqlfiles.read("schema.sql"))
        for v in sqlfiles.views_in_order():
            con.execute(sqlfiles.view_sql(v))
        fingerprint = views_fingerprint(con)
    finally:
        con.close()
    try:  # best effort: without a cache it is worked out each time
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        tmp = f"{cache}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(fingerprint)
        os.replace(tmp, cache)
    except OSError:
        pass
    return fingerprint


# Bump when tables change incompatibly, and add the step that migrates a
# database of the version before (MIGRATIONS): an older database is migrated on
# its first writable open, and a read-only open says how to migrate it.
# 1 -> 2: nesting (parent, depth, self time, enclosing op) moved from the
# nesting table into columns of events, so cpu_ops and the other host views
# need no join.
SCHEMA_VERSION = 2
MIGRATIONS = {1: "migrate/v1_to_v2.sql"}


def fill_trace_facts(con) -> None:
    """Store the trace_summary figures of every trace that has none in
    trace_facts (sql/load/trace_facts.sql): the traces just loaded, and any a
    load cut short left without. The summary is computed for those traces only."""
    missing = [r[0] for r in con.execute(
        "SELECT trace_id FROM traces WHERE trace_id NOT IN (SELECT trace_id FROM trace_facts)").fetchall()]
    if missing:
        con.execute(sqlfiles.read("load/trace_facts.sql"), {"trace_ids": missing})


class Session:
    """`duckprof.connect(db)` returns one. Without `db` the database is in memory.

    >>> s = duckprof.connect("runs.duckdb")
    >>> s.load(["rank0.json.gz", "rank1.json.gz"], run="baseline")
    >>> s.sql("select name, sum(dur_ns) from kernels group by 1 order by 2 desc limit 5").show()
    """

    def __init__(self, db: str | os.PathLike | None = None, read_only: bool = False,
                 threads: int | None = None):
        self.db = None if db in (None, ":memory:") else os.fspath(db)
        self.read_only = read_only
        if self.read_only and self.db and not os.path.exists(self.db):
            raise DuckprofError(f"{self.db}: no such database (create it with `duckprof load ... --db {self.db}`)")
        try:
            self.con = duckdb.connect(self.db or ":memory:", read_only=read_only and bool(self.db))
        except duckdb.Error as e:
            first = str(e).splitlines()[0]
            raise DuckprofError(f"{self.db}: cannot open as a DuckDB database ({first})") from None
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self.con.execute("SET enable_progress_bar = false")  # duckprof draws its own
        try:
            self._ensure_schema()
        except BaseException:
            # release the file: DuckDB keeps one instance per file and process, so a
            # connection left open here would block the next connect() to it
            self.con.close()
            raise

    # -- schema -------------------------------------------------------------
    def _ensure_schema(self):
        con = self.con
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
        name = self.db or "in-memory database"
        if "duckprof_meta" in tables:
            # fetchall, not fetchone: DuckDB 2 refuses later relation queries on a
            # connection whose last result was not read to the end
            got = con.execute("SELECT value FROM duckprof_meta WHERE key = 'schema_version'").fetchall()
            try:
                found = int(got[0][0]) if got else None
            except ValueError:
                raise DuckprofError(f"{name}: not a duckprof database it can read (its schema_version "
                                    f"is {got[0][0]!r}, not a number)") from None
            if found is None or found > SCHEMA_VERSION or (found < SCHEMA_VERSION and found not in MIGRATIONS):
                newer = found is not None and found > SCHEMA_VERSION
                raise DuckprofError(
                    f"{name}: database schema version {found}, but this duckprof uses version "
                    f"{SCHEMA_VERSION}; " + ("it was written by a newer duckprof: upgrade duckprof"
                                             if newer else "load the traces into a new database"))
            if found < SCHEMA_VERSION:
                if self.read_only:
                    raise DuckprofError(
                        f"{name}: written by an older duckprof (schema version {found}); migrate it once "
                        f"with `duckprof migrate --db {self.db}` (any load into it migrates it too)")
                self._migrate(found)
            if self.read_only:
                self._temp_views()
            else:
                self._refresh_views()
            return
        if tables:
            raise DuckprofError(f"{name}: not a duckprof database (it has other tables: "
                                f"{', '.join(sorted(tables)[:5])})")
        if self.read_only and self.db:
            raise DuckprofError(f"{name}: not a duckprof database (empty)")
        schema = sqlfiles.read("schema.sql")
        try:
            con.execute("BEGIN TRANSACTION")
            con.execute(schema)
        except duckdb.BinderException as e:
            if "ZSTD" not in str(e):
                raise
            # an older storage format (storage_compatibility_version < v1.2.0)
            con.execute("ROLLBACK")
            con.execute("BEGIN TRANSACTION")
            con.execute(schema.replace(" USING COMPRESSION zstd", ""))
        seed_peaks(con)  # datasheet peaks: stored in the file, users may add rows
        seed_interconnects(con)
        con.execute("INSERT INTO duckprof_meta VALUES ('schema_version', $v), ('created_by', 'duckprof'), "
                    "('views_hash', $h), ('peaks_hash', $p)",
                    {"v": str(SCHEMA_VERSION), "h": views_digest(), "p": packaged_digest()})
        self._create_views()
        con.execute("COMMIT")

    def _create_views(self, temp: bool = False):
        """Create every view in sql/views/, each after the views it requires."""
        for v in sqlfiles.views_in_order():
            sql = sqlfiles.view_sql(v)
            if temp:
                sql = re.sub(r"CREATE OR REPLACE (VIEW|MACRO)", r"CREATE OR REPLACE TEMP \1", sql)
            self.con.execute(sql)

    def _temp_views(self):
        """A read-only session runs duckprof's own views, never what the file
        holds under their names (an older duckprof's, or planted ones): unless
        the file's definitions are exactly the packaged ones (the fingerprint
        of their normalised SQL), the packaged views are created as TEMP
        objects, which DuckDB looks up before the file's, so the file is not
        modified."""
        if views_fingerprint(self.con) != packaged_views_fingerprint():
            self._create_views(temp=True)

    def _migrate(self, found: int):
        """Bring a database of an older schema version up to SCHEMA_VERSION in
        one transaction (each step a file in sql/migrate/)."""
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            # the old views may read what a step drops: the new ones replace them
            for kind, obj in con.execute("""
                    SELECT 'VIEW', view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'
                    UNION ALL
                    SELECT DISTINCT 'MACRO TABLE', function_name FROM duckdb_functions()
                    WHERE function_type = 'table_macro' AND schema_name = 'main' AND NOT internal""").fetchall():
                con.execute(f'DROP {kind} IF EXISTS "{obj}"')
            for version in range(found, SCHEMA_VERSION):
                con.execute(sqlfiles.read(MIGRATIONS[version]))
            self._create_views()
            fill_trace_facts(con)
            con.execute("INSERT OR REPLACE INTO duckprof_meta VALUES ('schema_version', $v), ('views_hash', $h)",
                        {"v": str(SCHEMA_VERSION), "h": views_digest()})
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _refresh_views(self):
        """Recreate the views when the packaged view SQL changed since they were
        made, and add the devices new in the packaged peaks table (each tracked
        by a hash in duckprof_meta). Unchanged: nothing is written, so opening a
        database to load into it does not modify the file."""
        views, peaks = views_digest(), packaged_digest()
        stored = dict(self.con.execute(
            "SELECT key, value FROM duckprof_meta WHERE key IN ('views_hash', 'peaks_hash')").fetchall())
        # the stored hash says which duckprof made the views; the fingerprint that
        # nobody changed them since (a view planted in a shared file is replaced)
        views_ok = stored.get("views_hash") == views and views_fingerprint(self.con) == packaged_views_fingerprint()
        if views_ok and stored.get("peaks_hash") == peaks:
            return
        self.con.execute("BEGIN TRANSACTION")
        if not views_ok:
            # tables a newer duckprof added to this schema version (all IF NOT EXISTS)
            self.con.execute(sqlfiles.read("schema.sql"))
            self._create_views()
        if stored.get("peaks_hash") != peaks:
            seed_peaks(self.con)
            seed_interconnects(self.con)
        self.con.execute("INSERT OR REPLACE INTO duckprof_meta VALUES ('views_hash', $h), ('peaks_hash', $p)",
                         {"h": views, "p": peaks})
        self.con.execute("COMMIT")

    # -- API ----------------------------------------------------------------
    def load(self, paths, run: str = "default", salvage: bool = False, progress=None,
             tags: dict | None = None) -> LoadReport:
        """Load trace files, directories or globs as (part of) `run`. Atomic: on
        error nothing is added. Files already loaded into this run are skipped.
        tags: {key: value} stored with the run (as set_tags). A Parquet lake
        directory (`duckprof export --parquet`) loads its runs back."""
        if self.read_only:
            raise DuckprofError("session is read-only")
        from . import lake
        from_lake = lake.is_lake(paths)
        if from_lake:
            report = lake.import_lake(self, paths, run=run, progress=progress)
        else:
            limit = os.environ.get("DUCKPROF_LOAD_MEMORY", "1GB") if self.db else None
            loader = Loader(self.con, progress=progress, memory_limit=limit or None)
            report = loader.load(paths, run=run, salvage=salvage)
        if report.loaded:
            ids = [f.trace_id for f in report.loaded]
            fill_trace_facts(self.con)
            found = {t: (r, w) for t, r, w in self.con.execute(
                "SELECT trace_id, rank, world_size FROM trace_files WHERE list_contains($ids, trace_id)",
                {"ids": ids}).fetchall()}
            for f in report.loaded if not from_lake else []:  # a lake may hold many runs
                f.rank, f.world_size = found.get(f.trace_id, (None, None))
        if tags:
            self.set_tags(report.run, tags)
        if self.db and report.loaded:
            self._checkpoint_without_vacuum()
        return report

    def set_tags(self, run: str, tags: dict | None = None, remove=()) -> dict:
        """Set (or replace) tags of `run` and remove the keys in `remove`; returns
        the run's tags afterwards. Keys and values are text."""
        if self.read_only:
            raise DuckprofError("session is read-only")
        con = self.con
        self._require_run(run)
        tags = {str(k): str(v) for k, v in (tags or {}).items()}
        for k in list(tags) + list(remove):
            if not k:
                raise DuckprofError("a tag needs a key: KEY=VALUE")
        con.execute("BEGIN TRANSACTION")
        try:
            if remove:
                con.execute("DELETE FROM run_tags WHERE run = $run AND list_contains($keys, key)",
                            {"run": run, "keys": list(remove)})
            if tags:
                con.execute("INSERT OR REPLACE INTO run_tags (run, key, value, set_at) "
                            "SELECT $run, unnest($keys), unnest($values), now()::TIMESTAMP",
                            {"run": run, "keys": list(tags), "values": list(tags.values())})
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return self.tags(run)

    def _require_run(self, run: str):
        con = self.con
        if not con.execute("SELECT count(*) FROM traces WHERE run = $run", {"run": run}).fetchall()[0][0]:
            have = [r[0] for r in con.execute("SELECT DISTINCT run FROM traces ORDER BY 1").fetchall()]
            where = f"{self.db}: " if self.db else ""
            raise DuckprofError(f"{where}no run named {run!r} (runs: {', '.join(have) or 'none'})")

    def tags(self, run: str) -> dict:
        """The tags of `run` ({} when none; an error when there is no such run)."""
        self._require_run(run)
        return dict(self.con.execute("SELECT key, value FROM run_tags WHERE run = $run ORDER BY key",
                                     {"run": run}).fetchall())

    def _checkpoint_without_vacuum(self):
        """Write the load to the database file now, leaving row groups as they
        are. Each trace ends in a partly filled row group, and DuckDB's
        checkpoint would merge them by rewriting (8 ranks of 100 MB: 1.1 s when
        the database closed, and a file of 248 instead of 156 MB, the old
        blocks left free). Deleted rows (`rm`) are still vacuumed by later
        checkpoints."""
        con = self.con
        con.execute("SET max_vacuum_tasks = 0")
        try:
            con.execute("CHECKPOINT")
        except duckdb.Error:
            pass  # another transaction is open: the checkpoint at close does it
        finally:
            con.execute("RESET max_vacuum_tasks")

    def sql(self, text: str, params=None) -> duckdb.DuckDBPyRelation:
        """Run SQL over the tables and views; returns a DuckDB relation
        (.fetchall(), .df(), .show(), .columns ...)."""
        return self.con.sql(text, params=params)

    def report(self, name: str, /, **options) -> duckdb.DuckDBPyRelation:
        """A standard report as a DuckDB relation (.fetchall(), .df(), .show(), ...).
        name: 'kernels', 'gpu-time', 'idle', ... (duckprof.reports.REPORTS);
        options by their Python names, e.g. s.report("kernels", run="r1", limit=5).
        What the data cannot support is in report_result(...).notes."""
        return self.report_result(name, **options).relation

    def report_result(self, name: str, /, **options):
        """The report with its notes: a duckprof.reports.ReportResult (relation,
        notes, instead: the lines shown instead of an empty table, columns)."""
        from . import reports
        return reports.run(self.con, name, **options)

    def runs(self) -> duckdb.DuckDBPyRelation:
        return self.con.sql("SELECT * FROM runs ORDER BY run")

    def remove_run(self, run: str) -> int:
        """Delete a run and its traces; returns the number of traces removed."""
        con = self.con
        ids = [r[0] for r in con.execute("SELECT trace_id FROM traces WHERE run = $run",
                                         {"run": run}).fetchall()]
        if not ids:
            return 0
        con.execute("BEGIN TRANSACTION")
        for t in ("events", "devices", "trace_facts", "traces"):
            con.execute(f"DELETE FROM {t} WHERE trace_id IN (SELECT unnest($ids))", {"ids": ids})
        con.execute("DELETE FROM run_tags WHERE run = $run", {"run": run})
        con.execute("COMMIT")
        return len(ids)

    def schema(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """[(name, 'table'|'view', [(column, type), ...])] for the public schema."""
        out = []
        rows = self.con.execute("""
            SELECT t.table_name, t.table_type, c.column_name, c.data_type
            FROM information_schema.tables t
            JOIN information_schema.columns c USING (table_schema, table_name)
            WHERE t.table_schema = 'main' AND t.table_name NOT LIKE 'stage_%'
            ORDER BY t.table_type, t.table_name, c.ordinal_position""").fetchall()
        for name, kind, col, typ in rows:
            if not out or out[-1][0] != name:
                out.append((name, "view" if kind == "VIEW" else "table", []))
            out[-1][2].append((col, typ))
        return out

    def close(self):
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(db: str | os.PathLike | None = None, read_only: bool = False,
            threads: int | None = None) -> Session:
    """Open (or create) a duckprof database; in memory when `db` is None."""
    return Session(db, read_only=read_only, threads=threads)
