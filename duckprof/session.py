"""A duckprof session: one DuckDB connection with the duckprof schema and views.

A database file is opened as dbfile.py describes (file checks, locks with
--wait, the checks that keep its SQL from running). Views: a session on an
existing file runs the packaged views, never the file's own: unless the
file's are exactly the packaged ones (views_current), the packaged ones are
created as TEMP objects; every write transaction (a load, `rm`, `migrate`)
re-creates the stored ones that differ, so a plain DuckDB client sees
duckprof's views too (refresh_stored). `load_into` loads into a database file that it opens for
writing only once the traces are parsed and checked.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path

import duckdb

from . import dbfile, estimators, interrupts, sqlfiles
from .estimators.store import estimates as op_estimates
from .errors import DuckprofError
from .load import DEFAULT_LOAD_MEMORY, COMMIT_OUTCOME_PENDING as PENDING, Loader, LoadReport, Target, \
    file_load_memory, nest_host_events
from .peaks import packaged_digest, seed_interconnects, seed_peaks


def views_digest() -> str:
    """A hash of the packaged view sources (sql/views and the macros they
    use), stored in duckprof_meta: which duckprof version last wrote the
    stored views (informative: what a session runs is decided by
    views_current). Hashing the sources, not the rendered SQL, costs no
    rendering."""
    h = hashlib.blake2b(digest_size=8)
    for rel in sqlfiles.list_dir("views") + sqlfiles.list_dir("templates"):
        h.update(rel.encode() + b"\0" + sqlfiles.read(rel).encode() + b"\0")
    return h.hexdigest()


_VIEWS_SQL = """
    SELECT 'view', view_name, sql FROM system.main.duckdb_views()
    WHERE NOT internal AND schema_name = 'main' AND database_name = $db AND list_contains($names, view_name)"""


def views_fingerprint(con, catalog: str | None = None, macros=None) -> str:
    """A hash of the views and macros (scalar and table) the database
    `catalog` (default: the current one) holds in its main schema under
    duckprof's names, as DuckDB stores them (normalised SQL). macros:
    dbfile.file_macros(con, catalog), when the caller has it already."""
    if catalog is None:
        catalog = con.execute("SELECT system.main.current_database()").fetchall()[0][0]
    names = set(sqlfiles.view_headers())
    if macros is None:
        macros = dbfile.file_macros(con, catalog)
    rows = con.execute(_VIEWS_SQL, {"names": sorted(names), "db": catalog}).fetchall()
    rows += [(kind, name, text) for kind, name, text, _, in_main in macros if in_main and name in names]
    h = hashlib.blake2b(digest_size=16)
    for row in sorted(rows, key=lambda r: tuple(map(str, r))):
        h.update("\0".join(map(str, row)).encode() + b"\1")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def packaged_views_fingerprint() -> str:
    """views_fingerprint of the packaged views, as this DuckDB stores them:
    worked out once in an empty in-memory database, and kept in the user's
    cache directory (per view sources, recipe and DuckDB version), since
    every open compares it with the database's."""
    def compute() -> str:
        con = duckdb.connect(":memory:")
        try:
            con.execute(sqlfiles.read("schema.sql"))
            create_views(con)
            return views_fingerprint(con)
        finally:
            con.close()
    recipe = dbfile.digest(_VIEWS_SQL, dbfile._FUNCTIONS, "fingerprint-3")
    got = dbfile.user_cache(f"views-{views_digest()}-{recipe}-duckdb-{duckdb.__version__}", compute).strip()
    return got if re.fullmatch(r"[0-9a-f]{32}", got) else compute()


def views_current(con, catalog: str | None = None, macros=None) -> bool:
    """The database's views and macros under duckprof's names are exactly the
    packaged ones (so running them runs only SQL duckprof wrote)."""
    return views_fingerprint(con, catalog, macros) == packaged_views_fingerprint()


@functools.lru_cache(maxsize=1)
def estimators_digest() -> str:
    """A hash of the code that computes op_estimates (the estimators package
    and the operator schemas it reads): stored in duckprof_meta, so estimates
    an older duckprof computed are recomputed by the next write."""
    pkg = Path(estimators.__file__).resolve().parent
    h = hashlib.blake2b(digest_size=8)
    files = sorted(pkg.glob("*.py")) + [pkg.parent / "data" / "aten_schemas.json"]
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


# Bump when tables change incompatibly, and add the step that migrates a
# database of the version before (MIGRATIONS): an older database is migrated on
# its first writable open, and a read-only open says how to migrate it.
# 1 -> 2: nesting (parent, depth, self time, enclosing op) moved from the
# nesting table into columns of events, so cpu_ops and the other host views
# need no join.
# 3 -> 4: the derived tables (DERIVED), so launches, kernel_estimates and
# memory_events are computed once per trace at load instead of at every query.
# 4 -> 5: report_results, the html page's stored report results (html/store.py).
# 5 -> 6: events.unfinished (args '"finished": false'), which the nesting leaves
# out as torch's tree does: the nesting of the traces that have some is redone.
SCHEMA_VERSION = 6
# A read-only session opens files from this version on as they are (version 5
# added only report_results, what a writable session stores of the html page,
# but version 6 a column of events the views read: an older file is migrated
# by its first writable open).
READ_AS_IS_FROM = 6
# the tables each version added (a file read as it is lacks the later ones)
ADDED_TABLES = {5: ("report_results",)}
MIGRATIONS = {1: "migrate/v1_to_v2.sql", 2: "migrate/v2_to_v3.sql", 3: "migrate/v3_to_v4.sql",
              4: "migrate/v4_to_v5.sql", 5: "migrate/v5_to_v6.sql"}


def tables_missing(version: int) -> set[str]:
    """The tables a file of schema `version`, read as it is, does not have."""
    return {t for v, tables in ADDED_TABLES.items() if v > version for t in tables}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_version(con, catalog: str, label: str, macros=None) -> int | None:
    """The schema version of the database `catalog` (None: empty), after
    checking that nothing in it replaces DuckDB's own functions (macros:
    dbfile.file_macros, when the caller has it). Raises when it is not a
    duckprof database this duckprof can use."""
    dbfile.verify_functions(con, catalog, label, macros)
    kinds = dbfile.table_kinds(con, catalog)
    if "duckprof_meta" not in kinds:
        if kinds:
            raise DuckprofError(f"{label}: not a duckprof database (it has other tables: "
                                f"{', '.join(sorted(kinds)[:5])})")
        return None
    if kinds["duckprof_meta"] != "table":
        raise DuckprofError(f"{label}: refusing to use this database: 'duckprof_meta' is a view, "
                            "not duckprof's table")
    # fetchall, not fetchone: DuckDB 2 refuses later relation queries on a
    # connection whose last result was not read to the end
    got = con.execute(f"SELECT value FROM {_ident(catalog)}.main.duckprof_meta "
                      "WHERE key = 'schema_version'").fetchall()
    if not got or got[0][0] is None:
        raise DuckprofError(f"{label}: not a duckprof database it can read (duckprof_meta holds no "
                            "schema_version)")
    try:
        found = int(got[0][0])
    except ValueError:
        raise DuckprofError(f"{label}: not a duckprof database it can read (its schema_version "
                            f"is {str(got[0][0])[:40]!r}, not a number)") from None
    if found > SCHEMA_VERSION:
        raise DuckprofError(f"{label}: written by a newer duckprof (database schema version {found}; this "
                            f"duckprof reads version {SCHEMA_VERSION}): upgrade duckprof "
                            "(pip install -U duckprof)")
    if found < SCHEMA_VERSION and found not in MIGRATIONS:
        raise DuckprofError(f"{label}: database schema version {found}, but this duckprof uses version "
                            f"{SCHEMA_VERSION} and cannot migrate it; load the traces into a new database")
    return found


def zstd_supported(con, catalog: str) -> bool:
    """False for a database file in a storage format older than DuckDB 1.2
    (storage_compatibility_version), which cannot compress with zstd. Found
    out with EXPLAIN, which has no effect; outside a transaction, as the error
    would abort it."""
    try:
        con.execute(f"EXPLAIN CREATE TABLE {_ident(catalog)}.main.dp_zstd_probe "
                    "(x VARCHAR USING COMPRESSION zstd)").fetchall()
    except duckdb.BinderException as e:
        if "ZSTD" not in str(e):
            raise
        return False
    return True


def create_schema(con, zstd: bool = True):
    """The tables, packaged peaks, meta rows and views of a new database, in
    the caller's transaction (zstd: see zstd_supported)."""
    schema = sqlfiles.read("schema.sql")
    if not zstd:
        schema = schema.replace(" USING COMPRESSION zstd", "")
    con.execute(schema)
    seed_peaks(con)  # datasheet peaks: stored in the file, users may add rows
    seed_interconnects(con)
    con.execute("INSERT INTO duckprof_meta VALUES ('schema_version', $v), ('created_by', 'duckprof'), "
                "('views_hash', $h), ('peaks_hash', $p), ('estimators_hash', $e), ('derived_hash', $d)",
                {"v": str(SCHEMA_VERSION), "h": views_digest(), "p": packaged_digest(), "e": estimators_digest(),
                 "d": derived_digest()})
    create_views(con)


#: schema templates (path, inode, size, mtime) whose copy passed the checks of a
#: file open in this process (copy_schema)
_TEMPLATES_CHECKED: set = set()
#: how many schema templates the cache keeps (one per duckprof source version)
_TEMPLATES_KEPT = 8


@functools.lru_cache(maxsize=1)
def _schema_code_digest() -> str:
    """A hash of the Python code that writes a new database's schema."""
    here = Path(__file__).resolve().parent
    return dbfile.digest(*((here / f).read_text(encoding="utf-8") for f in ("session.py", "peaks.py", "sqlfiles.py")))


@functools.lru_cache(maxsize=1)
def _schema_template_key() -> str | None:
    """The hash naming the schema template: of everything create_schema writes
    from (the same for the whole process: 2.6 ms a connect when computed each
    time). None for an installation without its .py sources."""
    def compute():
        return dbfile.digest(sqlfiles.read("schema.sql"), str(SCHEMA_VERSION), views_digest(), packaged_digest(),
                             estimators_digest(), derived_digest(), _schema_code_digest())
    try:
        return sqlfiles.from_sources("schema-key", compute)
    except OSError:
        return None


def schema_template() -> str | None:
    """A database file holding exactly what create_schema writes into a new
    database (tables, packaged peaks, meta rows, views and macros), kept in
    the user's cache and named by everything it is made from (the SQL, the
    packaged data, the code, DuckDB's version): a new in-memory session copies
    it (copy_schema), and so does a new database file, instead of creating the
    views and macros again. Made on first use; None without a writable cache
    directory."""
    key = _schema_template_key()
    if key is None:
        return None
    path = sqlfiles.user_cache_dir(f"schema-{key}-duckdb-{duckdb.__version__}.duckdb")
    if os.path.exists(path):
        return path
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        con = duckdb.connect(tmp)
        try:
            dbfile.in_transaction(con, lambda: create_schema(con))
        finally:
            con.close()
        os.replace(tmp, path)
    except (OSError, duckdb.Error):
        return None
    finally:
        for leftover in (tmp, tmp + ".wal"):
            try:
                os.remove(leftover)
            except OSError:
                pass
    # the templates of older sources go, but a few (several checkouts may share the cache)
    try:
        folder = os.path.dirname(path)
        old = sorted((f for f in os.listdir(folder) if f.startswith("schema-") and f.endswith(".duckdb")),
                     key=lambda f: os.path.getmtime(os.path.join(folder, f)), reverse=True)
        for f in old[_TEMPLATES_KEPT:]:
            _discard(os.path.join(folder, f))
    except OSError:
        pass
    return path


def _discard(template: str):
    """Remove a schema template that cannot be used (damaged, or not what its
    name says), so that the next session makes it again instead of every
    session creating its schema itself."""
    for path in (template, _checked_mark(template)):
        try:
            os.remove(path)
        except OSError:
            pass


def _checked_mark(template: str) -> str:
    """The file beside a schema template that says its copy passed the checks
    (copy_schema): the hash of the template's bytes and of the checking code,
    so that another process need not check it again (every command on
    traces connects once). A template whose bytes changed is checked again."""
    return template + ".checked"


def _template_digest(template: str) -> str | None:
    try:
        with open(template, "rb") as f:
            content = f.read()
        code = Path(dbfile.__file__).read_bytes()
    except OSError:
        return None
    return hashlib.blake2b(content + b"\0" + code, digest_size=16).hexdigest()


def _checked_before(template: str) -> bool:
    """Whether a process checked a copy of the template as its bytes are now."""
    try:
        with open(_checked_mark(template), encoding="utf-8") as f:
            mark = f.read().strip()
    except OSError:
        return False
    return bool(mark) and mark == _template_digest(template)


def _mark_checked(template: str):
    """Best effort: without it, the next process checks the template again."""
    digest = _template_digest(template)
    if digest is None:
        return
    mark = _checked_mark(template)
    tmp = f"{mark}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(digest + "\n")
        os.replace(tmp, mark)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass


def copy_schema(con, label: str) -> bool:
    """Fill the new, empty database of `con` (in memory, or a new file that
    can use zstd) from schema_template() (COPY FROM DATABASE of its schema,
    and its tables' rows: 0.2 CPU-s less per session than create_schema).
    The first copy of a template is checked as a database file is on open
    (read_version, verify_tables, views_current); once in a process, and
    once for its bytes across processes (_checked_mark). False, with nothing
    written, when there is no usable template: then create_schema."""
    path = schema_template()
    if path is None:
        return False
    catalog = con.execute("SELECT system.main.current_database()").fetchall()[0][0]
    try:
        st = os.stat(path)
    except OSError:
        return False
    try:
        con.execute("ATTACH $path AS dp_schema_template (READ_ONLY)", {"path": path})
    except duckdb.Error:
        _discard(path)
        return False
    stamp = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    if stamp not in _TEMPLATES_CHECKED and _checked_before(path):
        _TEMPLATES_CHECKED.add(stamp)
    check = stamp not in _TEMPLATES_CHECKED

    def copy():
        # the schema, then the rows of the few tables that hold some (the
        # packaged peaks, the meta rows): COPY FROM DATABASE of the data runs
        # an INSERT for each of the 14 tables, 0.003 CPU-s more
        con.execute(f"COPY FROM DATABASE dp_schema_template TO {_ident(catalog)} (SCHEMA)")
        full = [t for (t,) in con.execute(
            "SELECT table_name FROM system.main.duckdb_tables() "
            "WHERE database_name = 'dp_schema_template' AND schema_name = 'main' AND estimated_size > 0").fetchall()]
        if full:
            con.execute(";\n".join(f"INSERT INTO {_ident(catalog)}.main.{_ident(t)} "
                                    f"SELECT * FROM dp_schema_template.main.{_ident(t)}" for t in full))
        if check:
            macros = dbfile.file_macros(con, catalog)
            if not (read_version(con, catalog, label, macros) == SCHEMA_VERSION
                    and views_current(con, catalog, macros)):
                raise DuckprofError(f"{path}: not this duckprof's schema")
            dbfile.verify_tables(con, catalog, label)

    try:
        dbfile.in_transaction(con, copy)
    except (duckdb.Error, DuckprofError):
        _discard(path)
        return False
    finally:
        try:
            con.execute("DETACH dp_schema_template")
        except duckdb.Error:
            pass
    if check:
        _TEMPLATES_CHECKED.add(stamp)
        _mark_checked(path)
    return True


def create_views(con, temp: bool = False):
    """Create every view and macro in sql/views/, each after those it requires.
    Views are created unbound (DEFER_BINDING): DuckDB binds a view's query again
    at every use anyway, and binding all of them at creation cost 0.2 CPU-s per
    new session; a broken view fails at its first use (tests/test_schema.py
    describes every one)."""
    for v in sqlfiles.views_in_order():
        sql = re.sub(r"CREATE OR REPLACE VIEW (\w+) AS", r"CREATE OR REPLACE VIEW \1 WITH (DEFER_BINDING) AS",
                     sqlfiles.view_sql(v))
        if temp:
            sql = re.sub(r"CREATE OR REPLACE (VIEW|MACRO)", r"CREATE OR REPLACE TEMP \1", sql)
        con.execute(sql)


def fill_trace_facts(con, derived: bool = True) -> None:
    """Store the trace_summary figures of every trace that has none in
    trace_facts (sql/load/trace_facts.sql): the traces just loaded, and any a
    load cut short left without. The summary is computed for those traces
    only, and so (derived) are their derived tables (fill_derived)."""
    missing = [r[0] for r in con.execute(
        "SELECT trace_id FROM traces WHERE trace_id NOT IN (SELECT trace_id FROM trace_facts)").fetchall()]
    if missing:
        con.execute(sqlfiles.read("load/trace_facts.sql"), {"trace_ids": missing})
        if derived:
            fill_derived(con, missing)


#: the derived tables, each filled by sql/load/<table>.sql, in this order (the
#: kernel estimates read the stored launches, the call totals the stored memory
#: events); their views read them
DERIVED = ("derived_launches", "derived_kernel_estimates", "derived_memory_events", "derived_call_totals")

#: the derived tables whose rows all stem from rows of others filled before:
#: every kernel estimate is a kernel of derived_launches; every call total is a
#: call that launched device work (a row of derived_launches) or saw memory
#: events (rows of derived_memory_events). When those got no rows, neither
#: does the table, and its statement (10-25 ms of planning on a small trace)
#: is not run: the kernel estimates of CPU-only traces, and their call totals
#: when they have no [memory] events either
DERIVED_FROM = {"derived_kernel_estimates": ("derived_launches",),
                "derived_call_totals": ("derived_launches", "derived_memory_events")}


def fill_derived(con, trace_ids, tables=DERIVED) -> None:
    """In the caller's transaction: the rows of `trace_ids` in the derived
    `tables` (default: all), replacing any they had; computed from the views,
    which must exist, and from the tables of DERIVED_FROM, which hold theirs
    or are among `tables`."""
    ids = sorted({int(t) for t in trace_ids})
    if not ids:
        return
    inserted = {}

    def has_rows(table) -> bool:  # got rows in this call, or holds some already
        if table not in inserted:
            inserted[table] = con.execute(f"SELECT count(*) FROM {table} WHERE list_contains($trace_ids, trace_id)",
                                          {"trace_ids": ids}).fetchall()[0][0]
        return inserted[table] > 0

    for table in DERIVED:
        if table not in tables:
            continue
        con.execute(f"DELETE FROM {table} WHERE list_contains($trace_ids, trace_id)", {"trace_ids": ids})
        if table not in DERIVED_FROM or any(map(has_rows, DERIVED_FROM[table])):
            inserted[table] = con.execute(sqlfiles.render(f"load/{table}.sql"), {"trace_ids": ids}).fetchall()[0][0]
        else:
            inserted[table] = 0


def _fill_estimates(con, trace_ids) -> None:
    estimators.add_estimates(con, min(trace_ids), max(trace_ids))  # the signatures it has already: skipped


def _fill_facts(con, trace_ids) -> None:
    fill_trace_facts(con, derived=False)  # the traces without: those of trace_ids


def _fill_derived_table(table, con, trace_ids) -> None:
    fill_derived(con, trace_ids, (table,))


#: the nesting columns of events (nesting.sql), and the DEFERRED entry that
#: stands for them: an in-memory load inserts its events without them
NESTING_COLUMNS = ("parent_event_id", "depth", "self_ns", "op_event_id")
NESTING = "nesting"
#: the temporary table the nesting of a deferred fill is computed into
_DEFERRED_NEST = "dp_deferred_nest"


def _nest_deferred(con, trace_ids) -> None:
    """Before the fill's transaction: the nesting of the stored events of
    trace_ids into _DEFERRED_NEST (nest_host_events may run a statement that
    fails, which would abort a transaction)."""
    nest_host_events(con, _DEFERRED_NEST, None, {}, {"trace_ids": trace_ids}, temp=True)


def _fill_nesting(con, trace_ids) -> None:
    """In the fill's transaction: the nesting columns from _DEFERRED_NEST."""
    con.execute(sqlfiles.render("load/nesting_update.sql", nest=_DEFERRED_NEST), {"trace_ids": trace_ids})


#: what a load into a session in memory leaves to first use (Session.con,
#: Session.sql, Session.report_result: a statement fills the tables it reads,
#: once): table (NESTING: the nesting columns of events) -> the function that
#: fills it for a list of trace_ids, in the order they are filled. A database
#: file's load computes them all, as the file must stand alone.
DEFERRED = {NESTING: _fill_nesting,
            "op_estimates": _fill_estimates,
            "trace_facts": _fill_facts,
            **{t: functools.partial(_fill_derived_table, t) for t in DERIVED}}
#: the SQL each DEFERRED table's fill runs (whether it reads the nesting)
_FILL_SQL = {"op_estimates": "load/op_signatures.sql", "trace_facts": "load/trace_facts.sql",
             **{t: f"load/{t}.sql" for t in DERIVED}}


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}


@functools.lru_cache(maxsize=1)
def nesting_views() -> frozenset:
    """The packaged views and macros that read the nesting columns of events:
    those reading events whose SQL names one (the others list their columns
    of events: none selects them all)."""
    return frozenset(name for name, h in sqlfiles.view_headers().items()
                     if "events" in h.requires and _words(sqlfiles.view_sql(h)) & set(NESTING_COLUMNS))


def reads_nesting(names) -> bool:
    """Whether reading the packaged views, macros and tables `names` reads the
    nesting columns of events (through the views' `requires:`)."""
    read = sqlfiles.relations_read(names)
    return bool(read & sqlfiles.view_names() and read & nesting_views())


def reads_nesting_columns(con, text: str) -> bool:
    """Whether the query `text` may read a nesting column of a table it
    names, as DuckDB parses it (json_serialize_sql: no binding, so no plan
    that depends on the rows, which would drop `depth > 0` while the column
    is NULL): a column of that name, the table as a whole row (`SELECT e
    FROM events e`), or what reads columns it does not name (a star,
    COLUMNS(), a positional reference, a NATURAL join, a table function, a
    PIVOT, SUMMARIZE, columns renamed by position). Whatever it cannot
    parse so, or several statements: yes."""
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql($q::VARCHAR)", {"q": text}).fetchall()[0][0])
    except (duckdb.Error, ValueError):
        return True
    if tree.get("error") or len(tree.get("statements") or ()) != 1:
        return True
    tables, refs, todo = set(), [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if (node.get("class") in ("STAR", "POSITIONAL_REFERENCE") or node.get("ref_type") == "NATURAL"
                or node.get("type") in ("TABLE_FUNCTION", "PIVOT", "SHOW_REF")
                or (node.get("type") == "BASE_TABLE" and node.get("column_name_alias"))):
            return True
        if node.get("type") == "BASE_TABLE":
            tables |= {str(node.get("table_name", "")).lower(), str(node.get("alias", "")).lower()}
        if node.get("class") == "COLUMN_REF":
            refs.append([str(c).lower() for c in node.get("column_names") or ()])
        todo.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return any(r and (r[-1] in NESTING_COLUMNS or (len(r) == 1 and r[0] in tables)) for r in refs)


@functools.lru_cache(maxsize=1)
def deferred_needs() -> dict:
    """The DEFERRED tables each table's fill reads (besides the views): those
    of DERIVED_FROM (the call totals read the memory events, and the launches
    to know when there are none), the kernel estimates op_estimates too, and
    NESTING for every fill whose SQL names a view that reads it or a nesting
    column."""
    needs = {**DERIVED_FROM,
             "derived_kernel_estimates": (*DERIVED_FROM["derived_kernel_estimates"], "op_estimates")}
    for table, rel in _FILL_SQL.items():
        words = _words(sqlfiles.read(rel))
        if words & set(NESTING_COLUMNS) or reads_nesting(words & set(sqlfiles.view_headers())):
            needs[table] = (*needs.get(table, ()), NESTING)
    return needs


def deferred_tables(tables) -> set[str]:
    """The DEFERRED tables that reading `tables` (NESTING among them: the
    nesting columns) needs filled."""
    want, todo = set(), [t for t in tables if t in DEFERRED]
    needs = deferred_needs() if todo else {}
    while todo:
        t = todo.pop()
        if t not in want:
            want.add(t)
            todo.extend(needs.get(t, ()))
    return want


@functools.lru_cache(maxsize=1)
def derived_digest() -> str:
    """A hash of what the derived tables are computed from: the SQL that fills
    them, the views and macros it reads, and the estimators (op_estimates).
    Stored in duckprof_meta: rows another duckprof computed are recomputed by
    the next write (refresh_stored)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(views_digest().encode() + estimators_digest().encode())
    for table in DERIVED:
        h.update(sqlfiles.read(f"load/{table}.sql").encode() + b"\0")
    return h.hexdigest()


def migrate(con, found: int):
    """Bring a database of an older schema version up to SCHEMA_VERSION, in
    the caller's transaction (each step a file in sql/migrate/)."""
    # the old views may read what a step drops: the new ones replace them
    for kind, obj in con.execute("""
            SELECT 'VIEW', view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary
              AND schema_name = 'main' AND database_name = current_database()
            UNION ALL
            SELECT DISTINCT 'MACRO TABLE', function_name FROM duckdb_functions()
            WHERE function_type = 'table_macro' AND schema_name = 'main' AND NOT internal
              AND database_name = current_database()""").fetchall():
        con.execute(f"DROP {kind} IF EXISTS {_ident(obj)}")
    for version in range(found, SCHEMA_VERSION):
        con.execute(sqlfiles.read(MIGRATIONS[version]))
    if found < 6:
        # (the derived tables, which read the nesting, are filled again after by
        # refresh_stored: the views changed with this version)
        renest_unfinished(con)
    con.execute("INSERT OR REPLACE INTO duckprof_meta VALUES ('schema_version', $v)", {"v": str(SCHEMA_VERSION)})


def renest_unfinished(con, trace_ids=None) -> list:
    """In the caller's transaction: the nesting columns of the stored traces
    (all, or those of trace_ids) that have unfinished events, computed again
    (nesting.sql) as a load now computes them: after a migration to version 6,
    or an import from an older lake, whose nesting treated them as any range.
    Returns those traces."""
    ids = [r[0] for r in con.execute(
        "SELECT DISTINCT trace_id FROM events WHERE unfinished"
        + ("" if trace_ids is None else " AND list_contains($ids, trace_id)") + " ORDER BY 1",
        None if trace_ids is None else {"ids": sorted(trace_ids)}).fetchall()]
    if ids:
        nest = "dp_renest"
        # (the six sort keys, not the packed one, whose failure would abort the transaction)
        nest_host_events(con, nest, None, {}, {"trace_ids": ids}, temp=True, packed=False)
        con.execute(sqlfiles.render("load/nesting_update.sql", nest=nest), {"trace_ids": ids})
        con.execute(f"DROP TABLE temp.main.{nest}")
    return ids


def stale(con) -> bool:
    """Whether refresh_stored has anything to do."""
    stored = dict(con.execute("SELECT key, value FROM duckprof_meta").fetchall())
    return (not views_current(con) or stored.get("peaks_hash") != packaged_digest()
            or stored.get("estimators_hash") != estimators_digest() or stored.get("derived_hash") != derived_digest())


def refresh_stored(con) -> bool:
    """In a write transaction: the stored views and macros become the packaged
    ones where they differ (whatever the file held under their names is
    replaced), the devices new in the packaged peaks table are added, and
    op_estimates computed by other estimator code is recomputed, so old and
    new numbers never mix. Returns whether anything was written."""
    stored = dict(con.execute("SELECT key, value FROM duckprof_meta").fetchall())
    changed = False
    if not views_current(con):
        # tables a newer duckprof added to this schema version (all IF NOT EXISTS;
        # without zstd, which an older storage format refuses even then)
        con.execute(sqlfiles.read("schema.sql").replace(" USING COMPRESSION zstd", ""))
        # whatever holds a duckprof name goes (a scalar macro or a view where
        # duckprof has a table macro would stay beside the packaged one)
        for kind, obj in con.execute("""
                SELECT 'VIEW', view_name FROM system.main.duckdb_views() WHERE NOT internal AND NOT temporary
                  AND schema_name = 'main' AND database_name = current_database() AND list_contains($names, view_name)
                UNION ALL
                SELECT DISTINCT CASE function_type WHEN 'table_macro' THEN 'MACRO TABLE' ELSE 'MACRO' END,
                       function_name FROM system.main.duckdb_functions()
                WHERE function_type IN ('macro', 'table_macro') AND schema_name = 'main' AND NOT internal
                  AND database_name = current_database() AND list_contains($names, function_name)""",
                {"names": list(sqlfiles.view_headers())}).fetchall():
            con.execute(f"DROP {kind} IF EXISTS {_ident(obj)}")
        create_views(con)
        changed = True
    if stored.get("peaks_hash") != packaged_digest():
        seed_peaks(con)
        seed_interconnects(con)
        changed = True
    if stored.get("estimators_hash") != estimators_digest():
        recompute_estimates(con)
        changed = True
    if stored.get("derived_hash") != derived_digest():
        # after the views and estimates: every trace's derived rows, computed by this duckprof
        fill_derived(con, [r[0] for r in con.execute("SELECT trace_id FROM traces").fetchall()])
        changed = True
    if changed:
        con.execute("INSERT OR REPLACE INTO duckprof_meta VALUES ('views_hash', $h), ('peaks_hash', $p), "
                    "('estimators_hash', $e), ('derived_hash', $d)",
                    {"h": views_digest(), "p": packaged_digest(), "e": estimators_digest(), "d": derived_digest()})
    return changed


def recompute_estimates(con) -> int:
    """Recompute every stored operator signature's estimates with this duckprof's estimators."""
    rows = con.execute("SELECT sig, name, input_dims, input_types, concrete_inputs FROM op_estimates").fetchall()
    if rows:
        data = [[str(sig), *op_estimates(n, d, t, c)] for sig, n, d, t, c in rows]
        con.execute(sqlfiles.read("load/refresh_estimates.sql"), {"data": json.dumps(data)})
    return len(rows)


def checkpoint_without_vacuum(con, label: str, run: str | None = None):
    """Write a load to the database file now, leaving row groups as they
    are. Each trace ends in a partly filled row group, and DuckDB's
    checkpoint would merge them by rewriting, leaving the old blocks free
    (measured in benchmarks/README.md). Deleted rows (`rm`) are still
    vacuumed by later checkpoints.
    A full disk here leaves the committed load in the WAL: say so."""
    con.execute("SET max_vacuum_tasks = 0")
    try:
        con.execute("CHECKPOINT")
    except duckdb.Error as e:
        if dbfile.disk_full(e):
            what = f"run {run!r} was committed" if run is not None else "the change was committed"
            raise DuckprofError(
                f"{label}: {dbfile.space_problem(e)} on the device that holds the database while writing it "
                f"after the load (checkpoint); {what}: it is kept in {label}.wal, which DuckDB applies when "
                f"the database is next opened with enough free space. Free space, then check with "
                f"`duckprof runs --db {label}`") from None
        # another transaction is open: the checkpoint at close does it
    finally:
        try:
            con.execute("RESET max_vacuum_tasks")
        except duckdb.Error:
            pass


class Session:
    """`duckprof.connect(db)` returns one. Without `db` the database is in memory.

    >>> s = duckprof.connect("runs.duckdb")
    >>> s.load(["rank0.json.gz", "rank1.json.gz"], run="baseline")
    >>> s.sql("select name, sum(dur_ns) from kernels group by 1 order by 2 desc limit 5").show()

    A writable session holds the file's lock while it is open (no other
    process can read it meanwhile); `duckprof load --db` locks it only while
    it inserts. wait: seconds to wait for another process's lock.

    A load into memory leaves the nesting columns of events, the op
    estimates, trace_facts and derived tables of its traces to first use
    (DEFERRED): sql() and report() fill those their statement reads; taking
    `con` fills them all, and then the session's later loads compute them at
    load.
    """

    #: DEFERRED table -> the trace_ids it is still to be filled for
    _deferred: dict = {}
    #: `con` was taken: SQL on it is not seen, so later loads defer nothing
    _con_taken = False
    #: sql() ran a statement that may have made views or macros of the user's
    _user_objects = False
    #: a progress display (cli_common.Progress) drawn while deferred tables fill
    fill_progress = None

    def __init__(self, db: str | os.PathLike | None = None, read_only: bool = False,
                 threads: int | None = None, wait: float = 0):
        self.db = None if db in (None, ":memory:") else os.fspath(db)
        self.read_only = read_only
        self.schema_version = SCHEMA_VERSION  # of the file as opened (_ensure_schema)
        self._con = dbfile.connect(self.db, read_only=read_only and bool(self.db), wait=wait)
        try:
            if threads:
                self._con.execute(f"SET threads = {int(threads)}")
            self._con.execute("SET enable_progress_bar = false")  # duckprof draws its own
            self._ensure_schema()
        except BaseException:
            # release the file: DuckDB keeps one instance per file and process, so a
            # connection left open here would block the next connect() to it
            self._con.close()
            raise

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection. The session does not see the SQL run on it,
        so what a load into memory left to first use is filled first, and
        the session's later loads leave nothing to first use."""
        self._con_taken = True
        self._fill()
        return self._con

    @con.setter
    def con(self, con):
        self._con = con

    def attach_progress(self, progress):
        """progress.attach(connection): a progress display that polls the
        connection's query progress, which reads no table (so not `con`)."""
        progress.attach(self._con)

    def _defer(self, trace_ids):
        ids = set(trace_ids)
        if ids:
            self._deferred = {t: self._deferred.get(t, set()) | ids for t in DEFERRED}

    def _fill(self, tables=None):
        """Fill the DEFERRED tables (all when None) still to be filled, and
        those their fill reads: the nesting first, in a transaction of its
        own (the old values an UPDATE keeps until its COMMIT would sit beside
        what the derived tables' statements hold), then the others in one."""
        want = deferred_tables(DEFERRED if tables is None else tables)
        todo = [t for t in DEFERRED if t in want and self._deferred.get(t)]
        if not todo:
            return
        shown = self.fill_progress is not None and hasattr(self.fill_progress, "attach")
        if shown:
            self.fill_progress.attach(self._con)
        try:
            self._fill_tables(todo)
        finally:
            if shown:
                self.fill_progress.done()

    def _fill_tables(self, todo: list):
        step = iter(range(1, len(todo) + 1))

        def say(table):
            if self.fill_progress is not None:
                self.fill_progress(f"[{next(step)}/{len(todo)}] first use: computing {table}")
        if NESTING in todo:
            say(NESTING)
            try:
                _nest_deferred(self._con, sorted(self._deferred[NESTING]))
                self._transaction(lambda: DEFERRED[NESTING](self._con, sorted(self._deferred[NESTING])))
            finally:
                try:
                    self._con.execute(f"DROP TABLE IF EXISTS temp.main.{_DEFERRED_NEST}")
                except duckdb.Error:
                    pass  # the connection is unusable after a fatal error: the error raised says so
            self._deferred = {t: ids for t, ids in self._deferred.items() if t != NESTING}
        rest = [t for t in todo if t != NESTING]
        if not rest:
            return

        def fill():
            for t in rest:
                say(t)
                DEFERRED[t](self._con, sorted(self._deferred[t]))
        self._transaction(fill)
        self._deferred = {t: ids for t, ids in self._deferred.items() if t not in rest}

    def _fill_for(self, text: str):
        """Fill the deferred tables that the statements of `text` read: those
        of the packaged views, macros and tables it names, through their
        `requires:` (any word of it counts, strings too: query_table('launches')).
        A statement that is no query (CREATE VIEW names what it reads only
        later, COPY FROM DATABASE reads every table without naming it; BEGIN,
        so that no fill runs in a transaction of the user's, which may roll
        back), or a query naming a view or macro of the user's, fills
        everything."""
        try:
            types = {st.type for st in self._con.extract_statements(text)}
        except duckdb.Error:
            return  # it cannot run either
        if not types <= {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN, duckdb.StatementType.SET,
                         duckdb.StatementType.VARIABLE_SET}:
            self._user_objects = True
            return self._fill()
        if not self._deferred:
            return
        words = _words(text)
        views = sqlfiles.view_names()
        if self._user_objects:  # (listing the macros costs 8 ms: only then)
            own = {n for (n,) in self._con.execute(
                "SELECT lower(view_name) FROM duckdb_views() WHERE NOT internal UNION "
                "SELECT lower(function_name) FROM duckdb_functions() "
                "WHERE function_type IN ('macro', 'table_macro') AND NOT internal").fetchall()} - set(views)
            if words & own:
                return self._fill()
        names = words & (set(views) | set(sqlfiles.TABLES))
        tables = sqlfiles.tables_read(names)
        if self._deferred.get(NESTING) and "events" in tables and self._reads_nesting(names, text):
            tables.add(NESTING)
        self._fill(tables)

    def _reads_nesting(self, names, text: str) -> bool:
        """Whether a query naming the packaged `names` reads the nesting
        columns of events: through a view that reads them, or from events
        itself (reads_nesting_columns). Only events read through the other
        views: no."""
        if reads_nesting(names):
            return True
        return "events" in names and reads_nesting_columns(self._con, text)

    @property
    def label(self) -> str:
        return self.db or "in-memory database"

    # -- schema -------------------------------------------------------------
    def _ensure_schema(self):
        con = self._con
        if not self.db:
            if not copy_schema(con, self.label):
                self._transaction(lambda: create_schema(con))
            return
        catalog = con.execute("SELECT system.main.current_database()").fetchall()[0][0]
        macros = dbfile.file_macros(con, catalog)
        found = read_version(con, catalog, self.label, macros)
        if found is None:
            if self.read_only:
                raise DuckprofError(f"{self.label}: not a duckprof database (empty)")
            zstd = zstd_supported(con, catalog)
            if not (zstd and copy_schema(con, self.label)):  # the template has zstd columns
                self._transaction(lambda: create_schema(con, zstd))
            return
        if found < SCHEMA_VERSION:
            if not self.read_only:
                self._transaction(lambda: (migrate(con, found), refresh_stored(con), fill_trace_facts(con)))
                found, macros = SCHEMA_VERSION, None  # the macros listed before are gone
            elif found < READ_AS_IS_FROM:
                raise DuckprofError(
                    f"{self.label}: written by an older duckprof (schema version {found}); migrate it once "
                    f"with `duckprof migrate --db {self.db}` (any load into it migrates it too)")
        self.schema_version = found
        dbfile.verify_tables(con, catalog, self.label, absent=tables_missing(found))
        # the packaged views, never what the file stores under their names: unless
        # the file's are exactly the packaged ones (the fingerprint of their
        # normalised SQL), they are created as TEMP objects, which DuckDB looks up
        # first (0.4 s saved on each open of an up-to-date file)
        if not views_current(con, catalog, macros if found == SCHEMA_VERSION else None):
            create_views(con, temp=True)

    def _transaction(self, fn):
        dbfile.in_transaction(self._con, fn)

    def migrate(self):
        """Bring the stored views, peaks and estimates up to this duckprof
        (an older schema was migrated when the session opened)."""
        self._writable()
        if stale(self._con):
            self._transaction(lambda: refresh_stored(self._con))

    def _writable(self):
        if self.read_only:
            raise DuckprofError(f"{self.label}: the session is read-only")

    # -- API ----------------------------------------------------------------
    def load(self, paths, run: str = "default", salvage: bool = False, progress=None,
             report: LoadReport | None = None, tags: dict | None = None,
             prepare_html: bool = False) -> LoadReport:
        """Load trace files, directories or globs as (part of) `run`. Atomic: on
        error nothing is added. Files already loaded into this run are skipped.
        tags: {key: value} stored with the run (as set_tags). A Parquet lake
        directory (`duckprof export --parquet`) loads its runs back.
        prepare_html (a database file only): then compute and store the
        results of the run's html page, as its first html(run=...) would
        (prepare_page)."""
        self._writable()
        check_tags(tags)
        if prepare_html and not self.db:
            raise DuckprofError("prepare_html stores the run's html page in a database file: "
                                "this session is in memory")
        from . import lake
        if lake.is_lake(paths):
            got = lake.import_lake(self, paths, run=run, progress=progress)
            if report is not None:  # the caller's, filled in
                report.__dict__.update(got.__dict__)
            report = got
            if report.loaded:
                self._transaction(lambda: fill_trace_facts(self._con))
                if self.db:
                    checkpoint_without_vacuum(self._con, self.label, report.run)
        else:
            limit = os.environ.get("DUCKPROF_LOAD_MEMORY", DEFAULT_LOAD_MEMORY) if self.db else None
            loader = Loader(self._con, progress=progress, memory_limit=limit or None)
            report = loader.load(paths, run=run, salvage=salvage, target=_SessionTarget(self, tags), report=report)
        if tags and not report.tags_set:
            self.set_tags(report.run, tags)
        if prepare_html:
            prepare_page(report, self.db, session=self, progress=progress)
        return report

    def set_tags(self, run: str, tags: dict | None = None, remove=()) -> dict:
        """Set (or replace) tags of `run` and remove the keys in `remove`; returns
        the run's tags afterwards. Keys and values are text."""
        self._writable()
        self._require_run(run)
        self._transaction(lambda: write_tags(self._con, run, tags, remove))
        return self.tags(run)

    def _require_run(self, run: str):
        con = self._con
        if not con.execute("SELECT count(*) FROM traces WHERE run = $run", {"run": run}).fetchall()[0][0]:
            have = [r[0] for r in con.execute("SELECT DISTINCT run FROM traces ORDER BY 1").fetchall()]
            where = f"{self.db}: " if self.db else ""
            raise DuckprofError(f"{where}no run named {run!r} (runs: {', '.join(have) or 'none'})")

    def tags(self, run: str) -> dict:
        """The tags of `run` ({} when none; an error when there is no such run)."""
        self._require_run(run)
        return dict(self._con.execute("SELECT key, value FROM run_tags WHERE run = $run ORDER BY key",
                                      {"run": run}).fetchall())

    def _create_views(self, temp: bool = False):
        create_views(self._con, temp=temp)

    def sql(self, text: str, params=None) -> duckdb.DuckDBPyRelation:
        """Run SQL over the tables and views; returns a DuckDB relation
        (.fetchall(), .df(), .show(), .columns ...)."""
        self._fill_for(text)
        return self._con.sql(text, params=params)

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
        if self._deferred:
            names = reports.requires(name, **options)
            self._fill(sqlfiles.tables_read(names) | ({NESTING} if reads_nesting(names) else set()))
        return reports.run(self._con, name, **options)

    def html(self, run: str | None = None, *, diff: tuple | None = None, top: int = 25):
        """One self-contained HTML page of the standard reports (duckprof html):
        of `run` (all data when None), or with diff=(run_a, run_b) of what
        changed between two runs. Returns a duckprof.html.Page: .save(path),
        str(page), and it displays inline in Jupyter."""
        from . import html
        if diff is not None:
            a, b = diff
            return html.build_diff(a, b, session=self, top=top)
        return html.build(self, run=run, top=top)

    def runs(self) -> duckdb.DuckDBPyRelation:
        return self.sql("SELECT * FROM runs ORDER BY run")

    def remove_run(self, run: str) -> int:
        """Delete a run and its traces; returns the number of traces removed
        (0: no such run, and nothing is written)."""
        self._writable()
        con = self._con
        ids = [r[0] for r in con.execute("SELECT trace_id FROM traces WHERE run = $run",
                                         {"run": run}).fetchall()]
        if not ids:
            return 0

        def delete():
            for t in ("events", "devices", "trace_facts", *DERIVED, "traces"):
                con.execute(f"DELETE FROM {t} WHERE trace_id IN (SELECT unnest($ids))", {"ids": ids})
            con.execute("DELETE FROM run_tags WHERE run = $run", {"run": run})
            drop_stored_results(con, run)
            if self.db:
                refresh_stored(con)
        self._transaction(delete)
        return len(ids)

    def lock_down(self, allowed_paths=(), allowed_dirs=()):
        """From now on SQL on this session reads the database, not the
        machine: no file, network or extension access (dbfile.lock_down)
        but to allowed_paths and the files under allowed_dirs."""
        dbfile.lock_down(self._con, allowed_paths, allowed_dirs)

    def schema(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """[(name, 'table'|'view', [(column, type), ...])] for the public schema
        (duckprof's views as this duckprof defines them)."""
        out = []
        rows = self._con.execute("""
            SELECT t.table_name, t.table_type, c.column_name, c.data_type
            FROM information_schema.tables t
            JOIN information_schema.columns c USING (table_catalog, table_schema, table_name)
            WHERE t.table_schema = 'main' AND t.table_name NOT LIKE 'stage_%'
              -- a file's own view of a name duckprof shadows with a TEMP one is not listed
              AND (t.table_catalog = 'temp' OR t.table_name NOT IN (
                   SELECT table_name FROM information_schema.tables WHERE table_catalog = 'temp'))
            ORDER BY t.table_type, t.table_name, c.ordinal_position""").fetchall()
        for name, kind, col, typ in rows:
            if not out or out[-1][0] != name:
                out.append((name, "view" if kind == "VIEW" else "table", []))
            out[-1][2].append((col, typ))
        return out

    def close(self):
        self._con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_tags(tags: dict | None, remove=()) -> dict:
    """Tags as text, {key: value}; every key (and key to remove) non-empty."""
    tags = {str(k): str(v) for k, v in (tags or {}).items()}
    for k in list(tags) + list(remove):
        if not k:
            raise DuckprofError("a tag needs a key: KEY=VALUE")
    return tags


def drop_stored_results(con, run: str):
    """In the caller's transaction: the html pages' stored results of `run`
    and of pages of every run (html/store.py), whose inputs the caller
    changes (they would be recomputed anyway: their key no longer matches)."""
    con.execute("DELETE FROM report_results WHERE run IS NULL OR run = $run", {"run": run})


def write_tags(con, run: str, tags: dict | None, remove=()):
    """In the caller's transaction: set `tags` of `run`, remove the keys in `remove`."""
    tags = check_tags(tags, remove)
    if tags or remove:
        drop_stored_results(con, run)
    if remove:
        con.execute("DELETE FROM run_tags WHERE run = $run AND list_contains($keys, key)",
                    {"run": run, "keys": list(remove)})
    if tags:
        con.execute("INSERT OR REPLACE INTO run_tags (run, key, value, set_at) "
                    "SELECT $run, unnest($keys), unnest($values), now()::TIMESTAMP",
                    {"run": run, "keys": list(tags), "values": list(tags.values())})


def complete_load(con, report: LoadReport, tags: dict | None, defer: bool = False, checkpoints: bool = True,
                  stored_results: bool = True):
    """In the load's transaction, after the inserts: the loaded traces'
    trace_facts and derived tables (unless defer: the caller fills them on
    first use), their rank and world size in the report, the run's tags, and
    the run's stored report results dropped (stored_results False: the
    database can hold none, as a session's own in-memory one). The derived
    rows can make the COMMIT of a database file (checkpoints) checkpoint on
    its own (a WAL past checkpoint_threshold): that one must not vacuum
    either (see checkpoint_without_vacuum, which runs next and resets the
    setting; the target's release resets it when the load fails). An
    in-memory database never checkpoints."""
    if not defer:
        fill_trace_facts(con)
    if checkpoints:
        con.execute("SET max_vacuum_tasks = 0")
    ids = report.trace_ids
    found = {t: (r, w) for t, r, w in con.execute(
        "SELECT trace_id, rank, world_size FROM trace_files WHERE list_contains($ids, trace_id)",
        {"ids": ids}).fetchall()}
    for f in report.files:
        if f.trace_id in found:
            f.rank, f.world_size = found[f.trace_id]
    if tags:
        write_tags(con, report.run, tags)  # drops the run's stored results too
        report.tags_set = True
    elif ids and stored_results:
        drop_stored_results(con, report.run)


class _SessionTarget(Target):
    """A load into the session's own database: write access is held already;
    the stored views are refreshed in the load's transaction; a file is
    checkpointed after it. In memory, the nesting, the estimates, trace_facts
    and derived tables are left to first use (DEFERRED)."""

    def __init__(self, session: Session, tags: dict | None = None):
        self.session = session
        self.label = session.label
        self.tags = tags
        # a connection taken from the session (session.con) reads past it
        self.defer = self.defer_estimates = self.defer_nesting = not session.db and not session._con_taken
        # the session's own in-memory database: nothing else writes to it, and
        # nothing stores report results there but SQL of the user's (the html
        # page stores them in a database file only)
        self.exclusive = self.defer
        self.stored_results = not self.defer or session._user_objects
        self.checkpoints = bool(session.db)

    def prepare(self, con):
        if self.session.db:
            refresh_stored(con)

    def complete(self, con, report):
        complete_load(con, report, self.tags, defer=self.defer, checkpoints=self.checkpoints,
                      stored_results=self.stored_results)
        if self.defer:
            # before the COMMIT, so that no loaded trace goes without: the ids of
            # a load that does not commit have no rows to fill (and are the next
            # load's, which defers them too)
            self.session._defer(report.trace_ids)

    def finish(self, con):
        if self.session.db:
            checkpoint_without_vacuum(con, self.label, self.run)

    def release(self, con, committed: bool):
        if not self.checkpoints:
            return
        try:
            con.execute("RESET max_vacuum_tasks")  # set by complete_load
        except duckdb.Error:
            pass


class DatabaseTarget(Target):
    """A database file that a load opens for writing only for its write
    phase (load_into): attached read-only for the snapshot before parsing,
    then writable from acquire() to release(). The schema is created,
    migrated and refreshed inside the load's transaction, so a failed load
    leaves the file as it was; a file the load created is removed again, and
    one that grew is cut back (see release)."""

    ALIAS = "dp_target"

    def __init__(self, path: str, wait: float = 0, tags: dict | None = None):
        self.path = self.label = path
        self.wait = wait
        self.tags = tags
        self.version = None      # schema version found when opened for writing (None: new/empty)
        self.attached = False
        self.created = False
        self.size0 = None        # file size before writing
        self.wal0 = False

    def snapshot(self, con, run):
        if self.attached:  # writable, and the default database (acquire)
            return super().snapshot(con, run) if self.version is not None else (set(), 1)
        if not os.path.exists(self.path):
            dbfile.check_file(self.path, must_exist=False)
            return set(), 1
        dbfile.attach(con, self.path, self.ALIAS, read_only=True, wait=self.wait)
        try:
            version = read_version(con, self.ALIAS, self.label)
            if version is None:
                return set(), 1
            if version == SCHEMA_VERSION:
                dbfile.verify_tables(con, self.ALIAS, self.label)
            con.execute(f"USE {self.ALIAS}")
            return super().snapshot(con, run)
        finally:
            con.execute("USE memory")
            con.execute(f"DETACH {self.ALIAS}")

    def acquire(self, con):
        existed = os.path.exists(self.path)
        self.size0 = os.path.getsize(self.path) if existed else None
        self.wal0 = os.path.exists(self.path + ".wal")
        try:
            dbfile.attach(con, self.path, self.ALIAS, read_only=False, wait=self.wait)
        except DuckprofError:
            # creating the file failed midway (a full disk): an empty file is no
            # database, so it is not left behind (a file another process made is
            # not empty)
            if not existed and os.path.exists(self.path) and os.path.getsize(self.path) == 0:
                os.remove(self.path)
            raise
        self.attached, self.created = True, not existed
        self.version = read_version(con, self.ALIAS, self.label)
        if self.version == SCHEMA_VERSION:
            dbfile.verify_tables(con, self.ALIAS, self.label)
        self.zstd = self.version is not None or zstd_supported(con, self.ALIAS)
        con.execute(f"USE {self.ALIAS}")

    def prepare(self, con):
        if self.version is None:
            create_schema(con, self.zstd)
            return
        if self.version < SCHEMA_VERSION:
            migrate(con, self.version)
            dbfile.verify_tables(con, self.ALIAS, self.label)
        refresh_stored(con)

    def complete(self, con, report):
        complete_load(con, report, self.tags)

    def finish(self, con):
        checkpoint_without_vacuum(con, self.label, self.run)

    def restore_files(self):
        """While holding the file's lock, after a load that did not commit:
        the files as they were before it. A file the load created is removed
        with its WAL; one that existed is cut back to its size (DuckDB writes
        big inserts past its old end before the commit; the header was not
        rewritten), and an empty WAL the failed commit left (DuckDB 2.0.1
        creates it and, with the disk full, writes nothing; it does not
        delete it on close) is removed. A WAL that was there before, or holds
        anything, is DuckDB's to apply."""
        wal = self.path + ".wal"
        if self.created:
            for path in (self.path, wal):
                if os.path.exists(path):
                    os.remove(path)
            return
        if os.path.getsize(self.path) > self.size0:
            os.truncate(self.path, self.size0)
        if not self.wal0 and os.path.exists(wal) and os.path.getsize(wal) == 0:
            os.remove(wal)

    def release(self, con, committed: bool = True):
        """Still holding the lock when the load did not commit: the files are
        put back as they were (restore_files), so that no other process opens
        what the load wrote once the lock is released."""
        if not self.attached:
            return
        if not committed:
            try:
                self.restore_files()
            except OSError:
                pass
        try:
            con.execute("USE memory")
            con.execute(f"DETACH {self.ALIAS}")
        except duckdb.Error:
            pass  # invalidated by a fatal error: closing the connection releases it
        self.attached = False


def prepare_page(report: LoadReport, db: str, session: Session | None = None, wait: float = 0, progress=None):
    """After a load into the database file `db`: the results of its run's
    html page computed and stored (html.prepare; on `session` when given).
    The load stays committed whatever happens here; report.page_prepared
    says how far it got. A failure is a DuckprofError saying the run is
    loaded and its page not prepared; an interrupt is raised as it is."""
    from .html import prepare
    report.page_prepared = False
    try:
        prepare(db, report.run, session=session, wait=wait, progress=progress)
    except Exception as e:
        if interrupts.is_interrupt(e):
            raise
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DuckprofError(f"{db}: run {report.run!r} is loaded, but its html page was not prepared "
                            f"({why}); the run's next html page computes it") from e
    report.page_prepared = True


def load_into(db: str | os.PathLike, paths, run: str = "default", salvage: bool = False, progress=None,
              wait: float = 0, report: LoadReport | None = None, threads: int | None = None,
              tags: dict | None = None, prepare_html: bool = False) -> LoadReport:
    """Load traces into the database file `db` (created if needed), holding
    its write lock only while inserting: the traces are parsed, checked and
    nested first, so readers can use the database meanwhile, and bad input
    never opens it for writing. `report`, when given, is filled in as the
    load goes (after an interrupt, report.committed says whether the run was
    loaded). progress: a callable for phase messages; its attach(con), if any,
    is called with the loading connection. tags: stored with the run in the
    load's transaction. A Parquet lake directory is loaded by a Session on
    the file (it holds the lock for the whole import). prepare_html: then the
    results of the run's html page are computed and stored (prepare_page:
    built on a read-only open, the file opened for writing only to store)."""
    db = os.fspath(db)
    dbfile.check_file(db, must_exist=False)
    check_tags(tags)
    from . import lake
    if lake.is_lake(paths):
        with Session(db, wait=wait) as s:
            if hasattr(progress, "attach"):
                progress.attach(s.con)
            return s.load(paths, run=run, progress=progress, report=report, tags=tags, prepare_html=prepare_html)
    report = report if report is not None else LoadReport(run=run)
    target = DatabaseTarget(db, wait, tags)
    try:
        limit, config = file_load_memory(paths)
        con = dbfile.plan_settings(interrupts.watch(duckdb.connect(":memory:", config=config)))
        try:
            if threads:
                con.execute(f"SET threads = {int(threads)}")
            con.execute("SET enable_progress_bar = false")
            # spill next to the database, as a connection to the file would
            con.execute("SET temp_directory = $t", {"t": db + ".tmp"})
            if hasattr(progress, "attach"):
                progress.attach(con)
            Loader(con, progress=progress, memory_limit=limit or None).load(
                paths, run=run, salvage=salvage, target=target, report=report)
        finally:
            con.close()
    except DuckprofError as e:
        if report.commit_failed:  # did the COMMIT take effect? Read the file again to say
            committed = _was_committed(db, report, target)
            report.committed = bool(committed)
            outcome = {True: f"the commit took effect nonetheless: run {run!r} is loaded",
                       False: f"the commit did not take effect: nothing was loaded, {db} is as it was",
                       None: f"whether run {run!r} was committed is unknown: check with `duckprof runs --db {db}`"}
            raise DuckprofError(str(e).replace(PENDING, outcome[committed])) from None
        raise
    if tags and not report.tags_set:  # nothing new was loaded: the run may exist
        with Session(db, wait=wait) as s:
            s.set_tags(run, tags)
    if prepare_html:
        prepare_page(report, db, wait=wait, progress=progress)
    return report


def _was_committed(db: str, report: LoadReport, target: DatabaseTarget) -> bool | None:
    """After a COMMIT that failed with the database invalidated (a full disk
    while DuckDB wrote it): open the file again, for writing so that no other
    process has it meanwhile, and look. Not committed: the files are put back
    as they were (DatabaseTarget.restore_files). None when it cannot be
    opened."""
    ids = report.trace_ids
    for read_only in (False, True):
        try:
            con = duckdb.connect(db, read_only=read_only)
        except duckdb.Error:
            continue
        try:
            try:
                n = con.execute("SELECT count(*) FROM traces WHERE run = $run AND list_contains($ids, trace_id)",
                                {"run": report.run, "ids": ids}).fetchall()[0][0]
            except duckdb.CatalogException:  # no tables: the schema was made in the same transaction
                n = 0
            committed = bool(ids) and n == len(ids)
            if not committed and not read_only:
                target.restore_files()
            return committed
        except (duckdb.Error, OSError):
            return None
        finally:
            con.close()
    return None


def connect(db: str | os.PathLike | None = None, read_only: bool = False,
            threads: int | None = None, wait: float = 0) -> Session:
    """Open (or create) a duckprof database; in memory when `db` is None.
    wait: seconds to wait while another process holds the file's lock."""
    return Session(db, read_only=read_only, threads=threads, wait=wait)
