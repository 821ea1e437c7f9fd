"""The report registry: every standard report is one SQL file in sql/reports/
whose header declares what it answers, its options, the views it requires,
its output columns and (after a line `-- @notes`) the query that says what
the data cannot support. One entry in REPORTS below makes it a CLI command
(`duckprof report NAME`, cli_reports.py) and a Python call
(`session.report(NAME, **options)`).

A report's header (see sqlfiles.parse_header for the common part):

    -- <name>: <what it is>
    -- question: <the question it answers>
    -- uses: device, gpu_window            (shared option groups, SHARED below)
    -- option: --limit/-n INTEGER >= 0 = 20  rows per device (0 = all)
    -- option: --sort CHOICE(total,count) = total  order of the rows
    -- option: --by-step FLAG  per ProfilerStep instead
    -- requires: <views>
    -- Columns: ...

Every report also takes --run (only this run). Option values reach the SQL
as bound parameters ($limit); Jinja sees them too, to choose structure
({% if by_step %}), and never prints them (tests/test_reports.py checks).
The notes query returns one row per note: note VARCHAR, and optionally
instead BOOLEAN (true: print the note instead of the table, e.g. "no GPU
activity in this trace"); it sees the report's rows as the table named by
the Jinja variable `result`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb

from . import estimators, sqlfiles
from .errors import DuckprofError


@dataclass
class Option:
    name: str                 # Python name and bound parameter, e.g. 'limit'
    flag: str                 # e.g. '--limit'
    short: str | None         # e.g. '-n'
    type: str                 # INTEGER, DOUBLE, VARCHAR, FLAG or CHOICE
    default: Any
    help: str
    choices: list[str] = field(default_factory=list)
    minimum: tuple[str, float] | None = None  # ('>=', 0) or ('>', 0)

    def check(self, value):
        """The value, converted and validated; a DuckprofError names the option."""
        if value is None:
            return None
        try:
            if self.type == "INTEGER":
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError
                value = int(value)
            elif self.type == "DOUBLE":
                value = float(value)
            elif self.type == "FLAG":
                value = bool(value)
            else:
                value = str(value)
        except (TypeError, ValueError):
            raise DuckprofError(f"{self.flag}: {value!r} is not a valid {self.type.lower()}") from None
        if self.type == "CHOICE" and value not in self.choices:
            raise DuckprofError(f"unknown {self.flag} {value!r}; choose one of {', '.join(self.choices)}")
        if self.minimum is not None:
            op, bound = self.minimum
            if not (value >= bound if op == ">=" else value > bound):
                word = "a positive number" if (op, bound) == (">", 0) else f"{op} {bound:g}"
                raise DuckprofError(f"{self.flag} must be {word}")
        return value


_OPTION = re.compile(
    r"^(--[a-z][a-z0-9-]*)(?:/(-[a-zA-Z]))?\s+(INTEGER|DOUBLE|VARCHAR|FLAG|CHOICE\(([^)]*)\))"
    r"(?:\s*(>=|>)\s*(-?[0-9.]+))?(?:\s*=\s*(\S+))?\s+(\S.*)$")


def parse_option(line: str, where: str) -> Option:
    m = _OPTION.match(line)
    if not m:
        raise ValueError(f"{where}: not an option line ('--flag[/-f] TYPE [>= N] [= default] help'): {line!r}")
    flag, short, typ, choices, op, bound, default, help_ = m.groups()
    kind = "CHOICE" if typ.startswith("CHOICE") else typ
    opt = Option(name=flag[2:].replace("-", "_"), flag=flag, short=short, type=kind, default=None,
                 help=help_.strip(), choices=[c.strip() for c in (choices or "").split(",") if c.strip()],
                 minimum=(op, float(bound)) if op else None)
    if kind == "FLAG":
        opt.default = False
    elif default not in (None, "NULL"):
        opt.default = opt.check(default)
    return opt


#: option groups shared by several reports, declared once ('uses:' in a header)
SHARED = {
    "run": [Option("run", "--run", "-r", "VARCHAR", None, "only this run of the database")],
    "device": [Option("device", "--device", "-d", "INTEGER", None, "only this GPU index")],
    "gpu_window": [
        Option("exclude_last_step", "--exclude-last-step", None, "FLAG", False,
               "drop device work launched after the last ProfilerStep began (HTA's default; "
               "only in traces with 2 or more steps)"),
        Option("hta", "--hta", None, "FLAG", False,
               "reproduce HTA 0.5's numbers exactly: its GPU events, its µs times and its last-step cut "
               "(hta_events)"),
    ],
}


@dataclass
class Report:
    """One registry entry: a report's name (its file is sql/reports/<name with
    _ for ->.sql), the option that switches to another file of the same report
    (variants: {option: file stem}), and an optional Python step that turns
    option values into more bound parameters (prepare)."""
    name: str
    variants: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[dict], dict] | None = None

    @property
    def file(self) -> str:
        return f"reports/{self.name.replace('-', '_')}.sql"

    def header(self) -> sqlfiles.Header:
        return _header(self.file)

    def options(self) -> list[Option]:
        """Every option: --run, the shared groups it uses, then its own."""
        h = self.header()
        uses = [u.strip() for u in h.fields.get("uses", "").split(",") if u.strip()]
        for u in uses:
            if u not in SHARED or u == "run":
                raise ValueError(f"sql/{h.path}: uses {u!r}, not an option group ({', '.join(SHARED)})")
        own = [parse_option(o, f"sql/{h.path}") for o in h.options]
        return SHARED["run"] + [o for u in uses for o in SHARED[u]] + own


def _header(rel: str) -> sqlfiles.Header:
    return sqlfiles.parse_header(rel)


# -- kernels: --dtype in torch's or duckprof's spelling -> the peak column ------------

def peak_key(dtype: str | None) -> str | None:
    """A --dtype value (torch or duckprof spelling: float, fp32, tf32, bfloat16,
    half, c10::BFloat16, ...) -> the trace_devices peak column key it selects."""
    if dtype is None:
        return None
    d = dtype.strip()
    low = d.lower()
    if low in estimators.PEAK_COLUMNS:
        return low
    canonical = estimators.DTYPE_ALIASES.get(d) or estimators.DTYPE_ALIASES.get(low)
    if low in ("float8", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        canonical = "fp8"
    key = estimators.peak_dtype_for(canonical)
    if key is None:
        raise DuckprofError(f"--dtype {dtype!r}: not a dtype with a datasheet peak; use one of "
                            f"{', '.join(estimators.PEAK_COLUMNS)} (or torch spellings: float, bfloat16, half, ...)")
    return key


def _kernels_params(options: dict) -> dict:
    return {"default_peak_dtype": peak_key(options.get("dtype"))}


# -- categories / steps: --rules FILE ------------------------------------------------

def _rules_params(options: dict) -> dict:
    """Check a --rules file before DuckDB reads it: it exists and its header
    names the columns pattern and category."""
    path = options.get("rules")
    if path is not None:
        import csv
        try:
            with open(path, newline="", encoding="utf-8") as f:
                header = next(csv.reader(f), [])
        except OSError as e:
            raise DuckprofError(f"{path}: cannot read the --rules file ({e.strerror or e})") from None
        missing = [c for c in ("pattern", "category") if c not in [h.strip() for h in header]]
        if missing:
            raise DuckprofError(f"{path}: a --rules file is a CSV whose header names the columns pattern and "
                                f"category; missing: {', '.join(missing)}")
    return {}


def _trend_params(options: dict) -> dict:
    if options.get("metric") in ("kernel", "op", "category") and not options.get("name"):
        raise DuckprofError(f"--metric {options['metric']} needs --name (a name, or an ILIKE pattern like '%gemm%')")
    return {}


#: the standard reports, one line each
REPORTS = [
    Report("kernels", prepare=_kernels_params),
    Report("gpu-time", variants={"by_step": "gpu_time_steps"}),
    Report("idle", variants={"by": "idle_events"}),
    Report("queue"),
    Report("temporal"),
    Report("ops-by-step"),
    Report("categories", variants={"category": "categories_kernels"}, prepare=_rules_params),
    Report("ops", variants={"by_graph_node": "ops_graph_nodes"}),
    Report("memory", variants={"by_step": "memory_steps", "ops": "memory_ops", "live": "memory_live"}),
    Report("steps", variants={"summary": "steps_summary", "breakdown": "steps_tensorboard"}, prepare=_rules_params),
    Report("collectives"),
    Report("ranks"),
    Report("trend", prepare=_trend_params),
]
BY_NAME = {r.name: r for r in REPORTS}


# -- running a report -----------------------------------------------------------

@dataclass
class ReportResult:
    name: str
    relation: duckdb.DuckDBPyRelation   # the rows
    notes: list[str]                    # what the data cannot support, one line each
    instead: list[str]                  # printed instead of the table (nothing to show)
    columns: list[sqlfiles.Column]      # the documented columns, in order


_results = itertools.count(1)


def _split_notes(text: str) -> tuple[str, str | None]:
    parts = re.split(r"^-- @notes[ \t]*$", text, maxsplit=1, flags=re.M)
    return parts[0], (parts[1] if len(parts) > 1 else None)


def _bind(sql: str, params: dict) -> dict:
    # bind only the parameters the SQL text uses: DuckDB rejects unused names
    return {k: v for k, v in params.items() if re.search(rf"\${k}\b", sql)}


def lookup(name: str) -> Report:
    if name not in BY_NAME:
        raise DuckprofError(f"no report named {name!r}; reports: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def run(con: duckdb.DuckDBPyConnection, name: str, /, **given) -> ReportResult:
    """Run report `name` on a connection with the duckprof views; options by
    their Python names (limit=5, by_step=True, ...), unknown ones refused."""
    report = lookup(name)
    opts = {o.name: o for o in report.options()}
    unknown = sorted(set(given) - set(opts))
    if unknown:
        raise DuckprofError(f"report {name}: unknown option(s) {', '.join(unknown)}; "
                            f"options: {', '.join(opts)}")
    values = {k: o.check(given[k]) if k in given else o.default for k, o in opts.items()}
    params = dict(values)
    if report.prepare:
        params.update(report.prepare(values))
    rel = report.file
    for option, stem in report.variants.items():
        if values.get(option):
            rel = f"reports/{stem}.sql"
    table = f"duckprof_report_{next(_results)}"
    text = sqlfiles.render(rel, **values, result=table)
    main_sql, notes_sql = _split_notes(text)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS\n{main_sql}", _bind(main_sql, params))
    notes, instead = [], []
    if notes_sql and notes_sql.strip():
        cur = con.execute(notes_sql, _bind(notes_sql, params))
        cols = [d[0] for d in cur.description]
        for row in cur.fetchall():
            r = dict(zip(cols, row))
            if r.get("note") is None:
                continue
            (instead if r.get("instead") else notes).append(r["note"])
    return ReportResult(name, con.sql(f"SELECT * FROM {table}"), notes, instead, _header(rel).columns)


def query(con: duckdb.DuckDBPyConnection, stem: str, params: dict, **structure) -> duckdb.DuckDBPyRelation:
    """A relation over sql/reports/<stem>.sql rendered with `structure`, values
    bound from `params`: for the SQL of a command that is more than one file
    (diff: diff.sql, diff_summary.sql, diff_sides.sql)."""
    sql = sqlfiles.render(f"reports/{stem}.sql", **structure)
    return con.sql(sql, params=_bind(sql, params))
