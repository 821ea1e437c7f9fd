"""A database file as duckprof opens it: what kind of file it is, its lock
(with --wait), the failures a file can cause in words that name the cause
(locked, disk full), and the checks that make sure a database file runs no
SQL that duckprof did not write.

DuckDB lets one process write a database file or any number of processes
read it. A conflicting open fails at once; `open_with_wait` retries until
the lock frees or the wait is over, then says who holds it.

Trust: a database file is data from someone else (teams share them). What
it stores under duckprof's view and macro names is never run: unless those
are exactly the packaged ones, every session on an existing file creates the
packaged views as TEMP objects, which DuckDB looks up first, and every write
re-creates the stored ones (session.py views_current).
What TEMP objects cannot shadow is refused here, before any other query
reads the file: a macro or type named like one of DuckDB's own (DuckDB would
run it in place of the built-in one, in duckprof's queries too), a view or
altered table where duckprof keeps a table (defaults and CHECK constraints
run on insert), an index (its expressions run on insert).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

import duckdb

from . import interrupts, phase, sqlfiles
from .errors import DatabaseLocked, DuckprofError

# A DuckDB database file: 8 bytes of checksum, then this magic.
_MAGIC_AT, _MAGIC = 8, b"DUCK"
_OTHER_FORMATS = ((b"PAR1", "a Parquet file"), (b"SQLite format 3\0", "an SQLite database"),
                  (b"\x1f\x8b", "a gzip file"), (b"PK\x03\x04", "a zip file"))


def check_file(path: str, must_exist: bool):
    """Refuse a --db path that is not a DuckDB database file before DuckDB
    opens it (DuckDB would try to download the extension for an SQLite
    file, and reports a Parquet file as a corrupt database)."""
    if os.path.isdir(path):
        raise DuckprofError(f"{path}: is a directory; --db names a database file (e.g. runs.duckdb)")
    if not os.path.exists(path):
        if must_exist:
            raise DuckprofError(f"{path}: no such database (create it with `duckprof load ... --db {path}`)")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise DuckprofError(f"{path}: cannot create the database: no directory {parent}")
        return
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise DuckprofError(f"{path}: cannot read the database file ({e.strerror})") from None
    if head[_MAGIC_AT:_MAGIC_AT + len(_MAGIC)] == _MAGIC:
        return
    kind = next((what for magic, what in _OTHER_FORMATS if head.startswith(magic)), None)
    if not head:
        kind = "an empty file"
    raise DuckprofError(f"{path}: not a DuckDB database ({kind or 'unknown format'}); --db names the "
                        "DuckDB file duckprof keeps its tables in (a new name creates one)")


# -- locks ------------------------------------------------------------------------

_HOLDER = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")


def lock_conflict(path: str, e: Exception, read_only: bool, waited: float = 0) -> DatabaseLocked | None:
    """The message for DuckDB's 'Could not set lock' error, or None for any other error."""
    msg = str(e)
    if "Could not set lock" not in msg:
        return None
    m = _HOLDER.search(msg)
    who = f"process {m.group(2)} ({os.path.basename(m.group(1))})" if m else "another process"
    if read_only:
        what = f"open for writing in {who} (`duckprof load` holds it only while it inserts)"
    elif "read-only mode" in msg:  # DuckDB says so when the holder only reads
        what = f"open for reading in {who}"
    else:
        what = f"open for writing in {who}"
    then = (f"still locked after waiting {waited:g} s" if waited
            else "try again when it is done, or pass --wait SECONDS to wait for it")
    return DatabaseLocked(f"{path}: locked: {what}; {then}")


def open_with_wait(open_fn, path: str, read_only: bool, wait: float = 0):
    """open_fn() (a connect or an ATTACH), retried while another process
    holds the lock, for up to `wait` seconds."""
    deadline = time.monotonic() + max(0.0, wait or 0)
    pause = 0.05
    while True:
        try:
            return open_fn()
        except duckdb.Error as e:
            locked = lock_conflict(path, e, read_only, wait)
            if locked is None:
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise locked from None
        if pause == 0.05:
            phase.mark("waiting for lock")
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.5)


def plan_settings(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """What every connection duckprof opens sets before its first statement.
    DuckDB runs an ASOF join as a nested loop when it estimates the left side
    at fewer than asof_loop_join_threshold rows, and it often estimates a CTE
    or a staged batch at a few rows: the loop then compares every pair, in a
    time that grows with the square of the trace (the loader's nesting of a
    with_stack trace batched with a 7-event one: 0.7 -> 11 CPU-s; reports'
    joins of events with steps). GLOBAL: the loader's cursors and the page's
    inherit it."""
    con.execute("SET GLOBAL asof_loop_join_threshold = 0")
    return con


def connect(path: str | None, read_only: bool, wait: float = 0) -> duckdb.DuckDBPyConnection:
    """duckdb.connect with file checks, lock waiting and one-line errors."""
    if path is None:
        return plan_settings(interrupts.watch(duckdb.connect(":memory:")))
    check_file(path, must_exist=read_only)
    try:
        return plan_settings(interrupts.watch(
            open_with_wait(lambda: duckdb.connect(path, read_only=read_only), path, read_only, wait)))
    except duckdb.Error as e:
        raise open_error(path, e) from None


def attach(con, path: str, alias: str, read_only: bool, wait: float = 0):
    """ATTACH a database file to `con` as `alias`, as connect() opens one."""
    check_file(path, must_exist=read_only)
    mode = " (READ_ONLY)" if read_only else ""
    try:
        open_with_wait(lambda: con.execute(f"ATTACH $path AS {alias}{mode}", {"path": path}),
                       path, read_only, wait)
    except duckdb.Error as e:
        raise open_error(path, e) from None


def open_error(path: str, e: Exception) -> DuckprofError:
    first = str(e).splitlines()[0]
    if disk_full(e):
        return DuckprofError(f"{path}: cannot open the database: {space_problem(e)} on the device that holds it")
    return DuckprofError(f"{path}: cannot open as a DuckDB database ({first})")


# -- disk space --------------------------------------------------------------------

_SPACE = ("No space left on device", "Disk quota exceeded", "File too large")


def disk_full(e: BaseException) -> bool:
    return any(s in str(e) for s in _SPACE)


def space_problem(e: BaseException) -> str:
    msg = str(e)
    if "Disk quota exceeded" in msg:
        return "disk quota exceeded"
    if "File too large" in msg:
        return "file size limit reached (ulimit -f)"
    return "no space left"


def free_bytes(path: str) -> int | None:
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)) or ".")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


# -- what a database file may hold ---------------------------------------------------

# Each table as DuckDB prints it back from its catalog (columns, types,
# defaults, constraints), from its first '(' on and without compression
# clauses (DuckDB 1.2 writes none). Not duckdb_columns(): listing columns binds
# every view of the file, 0.05-0.08 s per open.
_TABLE_SQL = """
    SELECT table_name, regexp_replace(regexp_replace(sql, '^[^(]*', ''), ' USING COMPRESSION \\w+', '', 'gi')
    FROM system.main.duckdb_tables() WHERE database_name = $db AND schema_name = 'main'"""


def user_cache(key: str, compute) -> str:
    """compute() (a text), kept in the user's cache directory under `key`
    (which names everything the text depends on): what every open of a
    database compares with is worked out once, not in every process. Best
    effort: without a writable cache it is computed each time."""
    return sqlfiles.cached_text(key, compute)


def digest(*texts: str) -> str:
    h = hashlib.blake2b(digest_size=8)
    for t in texts:
        h.update(t.encode() + b"\0")
    return h.hexdigest()


_REFERENCE: dict | None = None
_REF_PREFIX = "dp_reference_"


def reference(con) -> dict:
    """duckprof's own tables (columns, constraints) as sql/schema.sql makes
    them, and the names of its views. Made as TEMP tables on `con` (dropped
    at once; a read-only connection cannot attach a scratch database), once
    per schema and DuckDB version (user_cache)."""
    global _REFERENCE
    if _REFERENCE is None:
        schema = sqlfiles.read("schema.sql")

        def compute() -> str:
            temp = re.sub(r"CREATE TABLE IF NOT EXISTS (\w+)", rf"CREATE TEMP TABLE {_REF_PREFIX}\1", schema)
            names = re.findall(rf"CREATE TEMP TABLE ({_REF_PREFIX}\w+)", temp)
            con.execute(temp)
            try:
                strip = lambda rows: {t[len(_REF_PREFIX):]: v for t, v in rows if t.startswith(_REF_PREFIX)}  # noqa: E731
                return json.dumps({"tables": strip(con.execute(_TABLE_SQL, {"db": "temp"}).fetchall())})
            finally:
                for name in names:
                    con.execute(f"DROP TABLE IF EXISTS temp.main.{name}")
        key = f"tables-{digest(schema, _TABLE_SQL)}-duckdb-{duckdb.__version__}.json"
        try:
            ref = json.loads(user_cache(key, compute))
        except ValueError:  # a damaged cache file
            ref = json.loads(compute())
        ref["views"] = frozenset(v.name for v in sqlfiles.views_in_order())
        _REFERENCE = ref
    return _REFERENCE


def _refuse(label: str, what: str, fix: str) -> DuckprofError:
    return DuckprofError(f"{label}: refusing to use this database: {what}; a database duckprof wrote has "
                         f"none (if you trust the file, {fix} with the duckdb CLI)")


# The file's macros (type, name, definition as DuckDB stores it), and whether
# each is named like one of DuckDB's own functions (its system catalog):
# duckdb_functions() is listed once, as it is the slow one (0.1 s).
_FUNCTIONS = """
    WITH f AS MATERIALIZED (
        SELECT database_name, schema_name, internal, function_name, function_type, parameters, macro_definition
        FROM system.main.duckdb_functions()),
    builtin AS (SELECT DISTINCT lower(function_name) AS name FROM f WHERE database_name = 'system')
    SELECT function_type, function_name, parameters::VARCHAR || ' ' || macro_definition,
           lower(function_name) IN (SELECT name FROM builtin), schema_name = 'main' AND NOT internal
    FROM f WHERE database_name = $db AND function_type IN ('macro', 'table_macro')
    ORDER BY 1, 2, 3"""
_SHADOWING_TYPES = """
    SELECT DISTINCT type_name FROM system.main.duckdb_types()
    WHERE database_name = $db AND NOT internal AND lower(type_name) IN (
        SELECT lower(type_name) FROM system.main.duckdb_types() WHERE database_name = 'system')
    ORDER BY 1"""


def file_macros(con, catalog: str) -> list[tuple[str, str, str, bool, bool]]:
    """[(function_type, name, definition, named like a built-in, in the main
    schema)] of the macros in the file."""
    return con.execute(_FUNCTIONS, {"db": catalog}).fetchall()


def verify_functions(con, catalog: str, label: str, macros=None):
    """No macro or type in the file replaces one of DuckDB's own (macros:
    file_macros(), when the caller has it already)."""
    for kind, name, _, builtin, _ in macros if macros is not None else file_macros(con, catalog):
        if builtin:
            drop = "DROP MACRO TABLE" if kind == "table_macro" else "DROP MACRO"
            raise _refuse(label, f"it defines a macro {name!r}, which DuckDB would run in place of its own "
                                 f"function {name}()", f"remove it ({drop} {name})")
    for (name,) in con.execute(_SHADOWING_TYPES, {"db": catalog}).fetchall():
        raise _refuse(label, f"it defines a type {name!r}, which DuckDB would use in place of its own",
                      f"remove it (DROP TYPE {name})")


def table_kinds(con, catalog: str) -> dict:
    """{name: 'table' | 'view'} of the objects in the file's main schema."""
    out = dict(con.execute("SELECT view_name, 'view' FROM system.main.duckdb_views() "
                           "WHERE database_name = $db AND schema_name = 'main' AND NOT internal", {"db": catalog})
               .fetchall())
    out.update(con.execute("SELECT table_name, 'table' FROM system.main.duckdb_tables() "
                           "WHERE database_name = $db AND schema_name = 'main'", {"db": catalog}).fetchall())
    return out


def in_transaction(con, fn):
    """Run fn() in one transaction of `con`: committed when it returns,
    rolled back when it raises (whatever it raises)."""
    con.execute("BEGIN TRANSACTION")
    try:
        fn()
        con.execute("COMMIT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:
            pass
        raise


def verify_tables(con, catalog: str, label: str, absent=frozenset()):
    """duckprof's tables are the tables schema.sql makes (no default, CHECK
    or index that could run SQL on insert), and no table takes the name of
    one of its views. absent: tables a file of an older schema, read as it
    is, does not have yet."""
    ref = reference(con)
    kinds = table_kinds(con, catalog)
    table_sql = dict(con.execute(_TABLE_SQL, {"db": catalog}).fetchall())
    for table, want in ref["tables"].items():
        kind = kinds.get(table)
        if table in absent and kind is None:
            continue
        if kind == "view":
            raise _refuse(label, f"{table!r} is a view where duckprof keeps a table", f"remove it (DROP VIEW {table})")
        if kind is None:
            raise DuckprofError(f"{label}: not a duckprof database it can use: table {table!r} is missing")
        if table_sql.get(table) != want:
            raise _refuse(label, f"table {table!r} differs from the one duckprof creates (columns, defaults "
                                 "or constraints)", "load the runs into a new database")
    for name in sorted(ref["views"]):
        if kinds.get(name) == "table":
            raise _refuse(label, f"{name!r} is a table where duckprof keeps a view", f"remove it (DROP TABLE {name})")
    for name, table in con.execute("SELECT index_name, table_name FROM system.main.duckdb_indexes() "
                                   "WHERE database_name = $db ORDER BY 1", {"db": catalog}).fetchall():
        raise _refuse(label, f"it has an index {name!r} on {table!r}", f"remove it (DROP INDEX {name})")


# -- `query`: the database, not the machine ---------------------------------------------

def lock_down(con, allowed_paths=(), allowed_dirs=()):
    """After duckprof's own setup: no file, network or extension access from
    SQL (COPY TO, EXPORT DATABASE, read_text, ATTACH, INSTALL, LOAD), except
    the paths in allowed_paths (an --output file) and the files under
    allowed_dirs (a Parquet lake the views read), and no SET that undoes it."""
    if allowed_paths:
        con.execute("SET allowed_paths = $p", {"p": [os.path.abspath(p) for p in allowed_paths]})
    if allowed_dirs:
        con.execute("SET allowed_directories = $d",
                    {"d": [os.path.join(os.path.abspath(d), "") for d in allowed_dirs]})
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")
