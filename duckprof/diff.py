"""`duckprof diff`: what changed between two traces or two runs, per kernel,
operator, kernel category or device, with a summary of both sides.

Each side (A = baseline, B = candidate) is trace files (a file, directory or
glob, loaded into memory) or the name of a run in a --db database. When both
are runs, the database is opened read-only. When one side is files and the
other a run, the files are loaded into an in-memory database and the --db file
is ATTACHed to it READ_ONLY (as catalog `dp_src`), so one connection sees both;
the SQL reads each side from its own catalog. The SQL is in sql/reports/diff.sql
(table), diff_summary.sql (summary block) and diff_sides.sql (what A and B are).

Python API:

    >>> from duckprof.diff import diff
    >>> with diff("before.json.gz", "after.json.gz", by="op") as d:
    ...     print(d.summary.fetchall()); print(d.table.fetchall())
    >>> s = duckprof.connect("runs.duckdb", read_only=True)
    >>> diff("baseline", "candidate", session=s).table.fetchall()
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import duckdb

from .errors import DuckprofError, TraceError
from .load import expand_paths
from . import reports
from .session import Session

LEVELS = ("kernel", "op", "category", "device")
SORTS = ("abs_delta", "delta", "a_total", "b_total", "name")
STATUSES = ("added", "removed", "slower", "faster", "unchanged")
OP_TIMES = ("total", "self")
ATTACHED = "dp_src"  # catalog name of the --db file when it is attached to an in-memory session


@dataclass
class Side:
    label: str    # 'A' or 'B'
    source: str   # what it is, for people: "run 'x' in runs.duckdb" or the file argument
    run: str      # run label inside its catalog
    prefix: str   # '' (the session's own catalog) or 'dp_src.' (the attached --db file)


@dataclass
class DiffResult:
    """The outcome of diff(): relations over `session` (each fetch runs the query).

    table    one row per name (see sql/reports/diff.sql for the columns)
    summary  one row per metric: metric, a, b, delta, delta_pct (diff_summary.sql)
    sides    one row per side: side, run, traces, ranks, steps, devices, paths
    per_step True when counts and totals are per-step averages
    """
    session: Session
    by: str
    per_step: bool
    steps: tuple
    sides: list
    table: duckdb.DuckDBPyRelation
    summary: duckdb.DuckDBPyRelation
    options: dict = field(default_factory=dict)
    owns_session: bool = True

    def header(self) -> list[str]:
        """The lines printed above the summary in table/markdown output."""
        o = self.options
        how = ("per-step averages: counts and totals divided by each side's number of "
               f"ProfilerSteps (A {self.steps[0]}, B {self.steps[1]}); means are per call"
               if self.per_step else "totals over the whole run")
        level = {"kernel": "GPU kernel (kernels, memcpys, memsets; device time)",
                 "op": f"CPU operator ({'self' if o.get('op_time') == 'self' else 'inclusive'} CPU time"
                       f"{', by input shape' if o.get('group_by_input_shape') else ''})",
                 "category": "kernel category (device time)",
                 "device": "device (device time)"}[self.by]
        names = ("names normalised" + (", template arguments collapsed" if o.get("collapse_templates") else "")
                 if o.get("normalize") else "names as recorded")
        lines = [f"diff by {level}; {how}; {names}",
                 f"status: slower/faster when |delta| >= {o.get('min_delta_us'):g} us and "
                 f">= {o.get('threshold_pct'):g} % of A"]
        for s in self.sides:
            ranks = f", ranks {s['ranks']}" if s.get("ranks") and s["traces"] > 1 else ""
            lines.append(f"{s['side']}: {s['source']} ({s['traces']} trace{'s' if s['traces'] != 1 else ''}"
                         f"{ranks}; {s['steps']} step{'s' if s['steps'] != 1 else ''}; devices: {s['devices'] or 'none'})")
        return lines

    def close(self):
        if self.owns_session:
            self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _settle(con):
    # A connection left with an unfinished execute() result refuses con.sql();
    # finishing a trivial query clears it (see Session._ensure_schema).
    con.execute("SELECT 1").fetchall()


def _runs_in(con, prefix: str) -> list[str]:
    return [r[0] for r in con.execute(f"SELECT DISTINCT run FROM {prefix}traces ORDER BY 1").fetchall()]


def _has_view(con, prefix: str, name: str) -> bool:
    db = prefix.rstrip(".") if prefix else con.execute("SELECT current_database()").fetchall()[0][0]
    return bool(con.execute("SELECT count(*) FROM duckdb_views() WHERE database_name = $db AND view_name = $v",
                            {"db": db, "v": name}).fetchall()[0][0])


def _as_list(x):
    return [os.fspath(p) for p in x] if isinstance(x, (list, tuple)) else [os.fspath(x)]


def _display(x) -> str:
    items = _as_list(x)
    return items[0] if len(items) == 1 else " ".join(items)


def _open(a, b, db, session, salvage, progress):
    """-> (session, owns_session, [Side A, Side B])."""
    if session is not None:
        _settle(session.con)
        have = _runs_in(session.con, "")
        for x in (a, b):
            if not isinstance(x, str) or x not in have:
                raise DuckprofError(f"no run named {x!r} in this session (runs: {', '.join(have) or 'none'})")
        where = f" in {session.db}" if session.db else ""
        return session, False, [Side("A", f"run {a!r}{where}", a, ""), Side("B", f"run {b!r}{where}", b, "")]

    db_runs: list[str] = []
    if db:
        with Session(db, read_only=True) as probe:
            db_runs = _runs_in(probe.con, "")
    is_run = [isinstance(x, str) and x in db_runs for x in (a, b)]
    files = []
    for x, r in zip((a, b), is_run):
        if r:
            files.append(None)
            continue
        try:
            files.append(expand_paths(_as_list(x)))
        except TraceError as e:
            if db:
                raise DuckprofError(f"{_display(x)}: not a run in {db} (runs: {', '.join(db_runs) or 'none'}) "
                                    f"and {e.problem}") from None
            raise

    if all(is_run):
        s = Session(db, read_only=True)
        _settle(s.con)
        return s, True, [Side("A", f"run {a!r} in {db}", a, ""), Side("B", f"run {b!r} in {db}", b, "")]

    s = Session(None)
    try:
        if any(is_run):
            s.con.execute(f"ATTACH $path AS {ATTACHED} (READ_ONLY)", {"path": os.fspath(db)})
        sides = []
        for label, x, r, f in zip("AB", (a, b), is_run, files):
            if r:
                sides.append(Side(label, f"run {x!r} in {db}", x, ATTACHED + "."))
            else:
                s.load(f, run=label, salvage=salvage, progress=progress)
                sides.append(Side(label, _display(x), label, ""))
        _settle(s.con)
    except BaseException:
        s.close()
        raise
    return s, True, sides


def _check_options(by, op_time, sort, statuses, limit, threshold_pct, min_delta_us, group_by_input_shape):
    if by not in LEVELS:
        raise DuckprofError(f"unknown --by {by!r}; choose one of {', '.join(LEVELS)}")
    if op_time not in OP_TIMES:
        raise DuckprofError(f"unknown --op-time {op_time!r}; choose one of {', '.join(OP_TIMES)}")
    if sort not in SORTS:
        raise DuckprofError(f"unknown --sort {sort!r}; choose one of {', '.join(SORTS)}")
    bad = [x for x in (statuses or []) if x not in STATUSES]
    if bad:
        raise DuckprofError(f"unknown --status {', '.join(bad)}; choose from {', '.join(STATUSES)}")
    if limit is not None and limit < 0:
        raise DuckprofError("--limit must be 0 or more")
    if threshold_pct < 0 or min_delta_us < 0:
        raise DuckprofError("--threshold and --min-delta-us must be 0 or more")
    if group_by_input_shape and by != "op":
        raise DuckprofError("--group-by-input-shape needs --by op")


def diff(a, b, *, db=None, session: Session | None = None, by: str = "kernel",
         group_by_input_shape: bool = False, op_time: str = "total",
         normalize: bool = False, collapse_templates: bool = False, raw_names: bool = False,
         per_step: bool | None = None, threshold_pct: float = 5.0, min_delta_us: float = 10.0,
         sort: str = "abs_delta", statuses=None, limit: int | None = None,
         salvage: bool = False, progress=None) -> DiffResult:
    """Compare side A (baseline) with side B (candidate).

    a, b      trace files (path, directory, glob, or a list of them), or run names:
              in `session` when given, else in the database `db` (a run name wins
              over a file of the same name)
    by        'kernel' (every kernel/memcpy/memset by name), 'op' (CPU operators),
              'category' (kernel_categories), 'device'
    per_step  None: per-step averages when both sides have ProfilerStep#N
              annotations, totals otherwise; True: per-step (error if a side has
              no steps); False: totals
    normalize, collapse_templates: match names that differ trivially (rule in
              sql/reports/diff.sql); raw_names adds the raw names behind each row
    threshold_pct, min_delta_us: when a row counts as slower / faster
    statuses  keep only rows with these statuses; limit: at most this many rows (0 = all)
    """
    statuses = list(statuses) if statuses else None
    _check_options(by, op_time, sort, statuses, limit, threshold_pct, min_delta_us, group_by_input_shape)
    # names are normalised at the kernel and op levels; categories and 'device N' are not names
    collapse_templates = bool(collapse_templates) and by in ("kernel", "op")
    normalize = bool(normalize or collapse_templates) and by in ("kernel", "op")
    s, owns, sides = _open(a, b, db, session, salvage, progress)
    try:
        qa, qb = sides[0].prefix, sides[1].prefix
        if by == "category":
            for side in sides:
                if not _has_view(s.con, side.prefix, "kernel_categories"):
                    where = db if side.prefix else (s.db or "this database")
                    raise DuckprofError(f"{where} has no kernel_categories view (it was created by an "
                                        "older duckprof); load the traces into a new database")
        params = {"run_a": sides[0].run, "run_b": sides[1].run}
        side_rel = reports.query(s.con, "diff_sides", params, qa=qa, qb=qb)
        cols = side_rel.columns
        side_rows = [dict(zip(cols, r)) for r in side_rel.fetchall()]
        for row, side in zip(side_rows, sides):
            row["source"] = side.source
        steps = (side_rows[0]["steps"], side_rows[1]["steps"])
        if per_step is None:
            per_step = bool(steps[0] and steps[1])
        elif per_step and not (steps[0] and steps[1]):
            which = " and ".join(x.label for x, n in zip(sides, steps) if not n)
            raise DuckprofError(f"--per-step: side {which} has no ProfilerStep#N annotations; "
                                "use --no-per-step to compare totals")
        structure = dict(by=by, shapes=bool(group_by_input_shape), op_time=op_time, normalize=normalize,
                         collapse_templates=collapse_templates, raw_names=bool(raw_names) and by in ("kernel", "op"),
                         per_step=bool(per_step), sort=sort, qa=qa, qb=qb)
        table = reports.query(s.con, "diff", dict(params, steps_a=float(steps[0] or 1), steps_b=float(steps[1] or 1),
                                           threshold_pct=float(threshold_pct), min_delta_us=float(min_delta_us),
                                           statuses=statuses, row_limit=limit or None), **structure)
        summary = reports.query(s.con, "diff_summary", params, qa=qa, qb=qb)
    except BaseException:
        if owns:
            s.close()
        raise
    options = dict(by=by, group_by_input_shape=bool(group_by_input_shape), op_time=op_time,
                   normalize=normalize, collapse_templates=bool(collapse_templates),
                   per_step=bool(per_step), threshold_pct=float(threshold_pct),
                   min_delta_us=float(min_delta_us), sort=sort, statuses=statuses, limit=limit or None)
    return DiffResult(session=s, by=by, per_step=bool(per_step), steps=steps, sides=side_rows,
                      table=table, summary=summary, options=options, owns_session=owns)
