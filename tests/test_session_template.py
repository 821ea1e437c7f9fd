"""A new in-memory session copies its schema from a template database in the
user's cache (session.copy_schema) instead of creating every view and macro:
the database it gets must be exactly the one create_schema writes."""

from __future__ import annotations

import duckdb
import pytest

import duckprof
from duckprof import dbfile, session


def catalog(con) -> dict:
    """Everything a database holds: tables (their SQL: columns, types, defaults; constraints),
    views, macros, sequences, indexes, settings, and every table's rows."""
    q = {
        "tables": "SELECT table_name, sql FROM duckdb_tables() ORDER BY ALL",
        "views": "SELECT view_name, sql, temporary FROM duckdb_views() WHERE NOT internal ORDER BY ALL",
        "macros": "SELECT function_name, function_type, macro_definition, parameters::VARCHAR, "
                  "parameter_types::VARCHAR FROM duckdb_functions() WHERE NOT internal ORDER BY ALL",
        "constraints": "SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() ORDER BY ALL",
        "sequences": "SELECT sequence_name, sql FROM duckdb_sequences() ORDER BY ALL",
        "indexes": "SELECT index_name, sql FROM duckdb_indexes() ORDER BY ALL",
        "databases": "SELECT database_name, type FROM duckdb_databases() ORDER BY ALL",
        "settings": "SELECT name, value FROM duckdb_settings() ORDER BY ALL",
    }
    out = {k: con.execute(sql).fetchall() for k, sql in q.items()}
    out["rows"] = {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall()))
                   for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return out


@pytest.fixture(scope="module")
def created() -> dict:
    """The catalog create_schema writes into a new in-memory database."""
    con = dbfile.plan_settings(duckdb.connect(":memory:"))  # as Session does
    try:
        con.execute("SET enable_progress_bar = false")  # as Session does
        con.execute("BEGIN TRANSACTION")
        session.create_schema(con)
        con.execute("COMMIT")
        return catalog(con)
    finally:
        con.close()


def session_catalog() -> dict:
    with duckprof.connect() as s:
        return catalog(s.con)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """An empty cache directory, and no template checked yet in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(session, "_TEMPLATES_CHECKED", set())
    return tmp_path / "cache" / "duckprof"


def test_a_new_session_is_exactly_what_create_schema_writes(own_cache, created):
    want = created
    assert want["views"] and want["macros"] and want["rows"]["device_peaks"]
    first = session_catalog()  # makes the template, copies and checks it
    assert [p.name for p in own_cache.glob("schema-*.duckdb")]
    second = session_catalog()  # copies the checked template
    for got in (first, second):
        for key in want:
            assert got[key] == want[key], key


def test_a_template_that_differs_is_not_used(own_cache, created):
    """A view replaced in the cached template (a stale or planted file) fails
    the checks of its first copy: the session creates its schema itself."""
    session_catalog()
    (path,) = own_cache.glob("schema-*.duckdb")
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE VIEW kernels AS SELECT 42 AS planted")
    con.close()
    with duckprof.connect() as s:
        assert s.con.execute("SELECT count(*) FROM kernels").fetchall() == [(0,)]
        assert not s.con.execute("SELECT * FROM duckdb_databases() WHERE database_name = 'dp_schema_template'"
                                 ).fetchall()
    assert not path.exists()  # dropped, so that the next session makes it again
    assert session_catalog() == created
    assert copied_from(path)


def copied_from(path) -> bool:
    """Whether the template at path exists and passed its first copy's checks."""
    return path.exists() and any(stamp[0] == str(path) for stamp in session._TEMPLATES_CHECKED)


def test_a_damaged_template_is_made_again(own_cache, created):
    """A template file that is not a database (a disk error, a truncated
    copy) costs one session a create_schema; the next copies a new one."""
    session_catalog()
    (path,) = own_cache.glob("schema-*.duckdb")
    path.write_bytes(b"not a database" * 1000)
    session._TEMPLATES_CHECKED.clear()
    assert session_catalog() == created
    assert not path.exists()
    assert session_catalog() == created
    assert copied_from(path)


def test_without_a_writable_cache_the_schema_is_created(tmp_path, monkeypatch, created):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(session, "_TEMPLATES_CHECKED", set())
    assert session.schema_template() is None
    assert session_catalog() == created


def test_an_installation_without_its_sources_has_no_template(own_cache, monkeypatch):
    def no_sources():
        raise FileNotFoundError("session.py")
    monkeypatch.setattr(session, "_schema_code_digest", no_sources)
    session._schema_template_key.cache_clear()  # the key is computed once per process
    try:
        assert session.schema_template() is None
    finally:
        session._schema_template_key.cache_clear()


def test_a_new_database_file_is_exactly_what_create_schema_writes(own_cache, tmp_path):
    con = duckdb.connect(str(tmp_path / "created.duckdb"))
    try:
        con.execute("BEGIN TRANSACTION")
        session.create_schema(con, session.zstd_supported(con, "created"))
        con.execute("COMMIT")
        want = catalog(con)
    finally:
        con.close()
    assert any("USING COMPRESSION ZSTD" in sql for _, sql in want["tables"])
    with duckprof.connect(tmp_path / "copied.duckdb") as s:
        got = catalog(s.con)
    assert [p.name for p in own_cache.glob("schema-*.duckdb")]  # it was copied
    for key in want.keys() - {"databases", "settings"}:  # (their names and temp_directory differ)
        assert got[key] == want[key], key


def test_a_checked_template_is_not_checked_again_by_the_next_process(own_cache, created, monkeypatch):
    """The first copy of a template is checked once for its bytes: a mark
    beside it (the hash of its bytes and of the checking code) spares the
    next process the checks; a template whose bytes changed since is checked
    again (and dropped when it fails)."""
    checks = []
    real = session.views_current
    monkeypatch.setattr(session, "views_current", lambda *a, **k: checks.append(1) or real(*a, **k))
    session_catalog()
    (path,) = own_cache.glob("schema-*.duckdb")
    assert len(checks) == 1 and path.with_name(path.name + ".checked").exists()
    session._TEMPLATES_CHECKED.clear()  # as in a new process
    assert session_catalog() == created and len(checks) == 1
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE VIEW kernels AS SELECT 42 AS planted")
    con.close()
    session._TEMPLATES_CHECKED.clear()
    assert session_catalog() == created and len(checks) == 2
    assert not path.exists() and not path.with_name(path.name + ".checked").exists()
