"""Shared plumbing for reports: open the data (files or a database), run a
templated report from sql/reports/, and say "this trace has no X" when a
report's input is missing instead of failing."""

from __future__ import annotations

from . import sqlfiles
from .errors import DuckprofError
from .session import Session


def open_data(traces=None, db=None, run=None, salvage=False, progress=None) -> Session:
    """Traces given -> an in-memory session with them loaded (run 'default',
    or `run`). Otherwise a read-only session on `db`."""
    if traces:
        s = Session(None)
        s.load(list(traces), run=run or "default", salvage=salvage, progress=progress)
        return s
    if not db:
        raise DuckprofError("give trace files, or --db FILE")
    s = Session(db, read_only=True)
    if run is not None:
        ok = s.con.execute("SELECT count(*) FROM traces WHERE run = $run", {"run": run}).fetchall()[0][0]
        if not ok:
            have = [r[0] for r in s.con.execute("SELECT DISTINCT run FROM traces ORDER BY 1").fetchall()]
            raise DuckprofError(f"{db}: no run named {run!r} (runs: {', '.join(have) or 'none'})")
    return s


def run_report(session: Session, name: str, params: dict | None = None, **structure):
    """Render sql/reports/<name>.sql with Jinja2 (structure only) and run it
    with bound parameters; returns a DuckDB relation."""
    sql = sqlfiles.render(f"reports/{name}.sql", **structure)
    params = params or {}
    # bind only the parameters the SQL text uses: DuckDB rejects unused names
    used = {k: v for k, v in params.items() if f"${k}" in sql}
    return session.con.sql(sql, params=used)


def trace_scope(run=None) -> tuple[str, dict]:
    """SQL predicate on trace_id restricting to one run (or all)."""
    if run is None:
        return "TRUE", {}
    return "trace_id IN (SELECT trace_id FROM traces WHERE run = $run)", {"run": run}


def missing(session: Session, view: str, what: str, run=None) -> str | None:
    """'this trace has no <what>' when `view` has no rows in scope, else None."""
    pred, params = trace_scope(run)
    n = session.con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {view} WHERE {pred} LIMIT 1)", params).fetchall()[0][0]
    return None if n else f"no {what} in this trace" + (f" (run {run!r})" if run else "")
