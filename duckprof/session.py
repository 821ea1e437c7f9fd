"""A duckprof session: one DuckDB connection with the duckprof schema and views."""

from __future__ import annotations

import hashlib
import os
import re

import duckdb

from . import sqlfiles
from .errors import DuckprofError
from .load import Loader, LoadReport
from .peaks import packaged_digest, seed_peaks

def view_files_in_order() -> list[str]:
    """sql/views/*.sql sorted so that every view comes after the views it uses."""
    files = sqlfiles.list_dir("views")
    names = {f[:-4]: f for f in files}
    deps = {}
    for f in files:
        code = "\n".join(l.split("--")[0] for l in sqlfiles.read(f"views/{f}").splitlines())
        code = re.sub(r"'[^']*'", "''", code)  # category names in literals are not views
        deps[f] = {names[n] for n in names if n != f[:-4] and re.search(rf"\b{n}\b", code)}
    ordered, done = [], set()

    def visit(f, stack=()):
        if f in done:
            return
        if f in stack:
            raise RuntimeError(f"views depend on each other in a cycle: {' -> '.join(stack + (f,))}")
        for d in sorted(deps[f]):
            visit(d, stack + (f,))
        done.add(f)
        ordered.append(f)

    for f in files:
        visit(f)
    return ordered


def views_digest() -> str:
    h = hashlib.blake2b(digest_size=8)
    for f in sqlfiles.list_dir("views"):
        h.update(f.encode() + b"\0" + sqlfiles.read(f"views/{f}").encode())
    return h.hexdigest()


# Bump when tables or views change incompatibly: an older database then gets a
# clear message instead of wrong answers.
SCHEMA_VERSION = 1


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
            found = int(got[0][0]) if got else None
            if found != SCHEMA_VERSION:
                raise DuckprofError(
                    f"{name}: database schema version {found}, but this duckprof uses version "
                    f"{SCHEMA_VERSION}; load the traces into a new database")
            if self.read_only:
                self._add_missing_views()
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
        con.execute("INSERT INTO duckprof_meta VALUES ('schema_version', $v), ('created_by', 'duckprof'), "
                    "('views_hash', $h), ('peaks_hash', $p)",
                    {"v": str(SCHEMA_VERSION), "h": views_digest(), "p": packaged_digest()})
        self._create_views()
        con.execute("COMMIT")

    def _create_views(self):
        """Create every view in sql/views/, each after the views it reads."""
        for f in view_files_in_order():
            self.con.execute(sqlfiles.read(f"views/{f}"))

    def _add_missing_views(self):
        """A read-only session on a database made by an older duckprof (same
        schema version) creates views and macros added since as TEMP objects,
        so a reader never modifies the file."""
        have = {r[0] for r in self.con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        for f in view_files_in_order():
            if f[:-4] not in have:
                sql = re.sub(r"CREATE OR REPLACE (VIEW|MACRO)", r"CREATE OR REPLACE TEMP \1",
                             sqlfiles.read(f"views/{f}"))
                self.con.execute(sql)

    def _refresh_views(self):
        """Recreate the views when the packaged view SQL changed since they were
        made, and add the devices new in the packaged peaks table (each tracked
        by a hash in duckprof_meta). Unchanged: nothing is written, so opening a
        database to load into it does not modify the file."""
        views, peaks = views_digest(), packaged_digest()
        stored = dict(self.con.execute(
            "SELECT key, value FROM duckprof_meta WHERE key IN ('views_hash', 'peaks_hash')").fetchall())
        if stored.get("views_hash") == views and stored.get("peaks_hash") == peaks:
            return
        self.con.execute("BEGIN TRANSACTION")
        if stored.get("views_hash") != views:
            self._create_views()
        if stored.get("peaks_hash") != peaks:
            seed_peaks(self.con)
        self.con.execute("INSERT OR REPLACE INTO duckprof_meta VALUES ('views_hash', $h), ('peaks_hash', $p)",
                         {"h": views, "p": peaks})
        self.con.execute("COMMIT")

    # -- API ----------------------------------------------------------------
    def load(self, paths, run: str = "default", salvage: bool = False, progress=None) -> LoadReport:
        """Load trace files, directories or globs as (part of) `run`. Atomic: on
        error nothing is added. Files already loaded into this run are skipped."""
        if self.read_only:
            raise DuckprofError("session is read-only")
        limit = os.environ.get("DUCKPROF_LOAD_MEMORY", "1GB") if self.db else None
        loader = Loader(self.con, progress=progress, memory_limit=limit or None)
        report = loader.load(paths, run=run, salvage=salvage)
        if self.db and report.loaded:
            self._checkpoint_without_vacuum()
        return report

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
        for t in ("nesting", "events", "devices", "traces"):
            con.execute(f"DELETE FROM {t} WHERE trace_id IN (SELECT unnest($ids))", {"ids": ids})
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
