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

A report composed of rules (Report.rules, e.g. `report patterns`) has one more
SQL file per rule in a folder of sql/reports/ (sql/reports/patterns/*.sql).
A rule file has the same header (its name, what it detects, `severity:`,
`fix:` (and `fix-no-gpu:`, the fix on a trace without a GPU, when `fix:`
holds advice only a GPU makes sense of), `method:`, `needs:`, its own `option:` lines for its thresholds,
`requires:`, Columns) and two queries: the matches, one row per matched event
in the columns RULE_COLUMNS below, and after a line `-- @skipped` the traces
it cannot run on (trace_id, reason). The runner runs the rules chosen by
--only (default: all) and gives the report's SQL three temp tables, named
after the Jinja variable `result`: {{ result }}_rules (one row per rule: its
header fields), {{ result }}_skipped (rule, trace_id, reason) and
{{ result }}_hits (rule + the rule columns; made only when the report's SQL
reads it). The rules' options are the report's options. The views the
report's header lists as `shared:` are computed once for all the rules that
read them (one statement runs every rule), and so are the CTEs of SHARED_CTES
that two or more of the chosen rules declare in their header (`shared: device_idle,
launched`).
"""

from __future__ import annotations

import contextlib
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
    "rules": [Option("only", "--only", None, "VARCHAR", None,
                     "only these rules, comma-separated (names as --list shows them)")],
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
    (variants: {option: file stem}), an optional Python step that turns
    option values into more bound parameters (prepare), the folder of its rule
    files when it is composed of rules (rules: sql/reports/<rules>/*.sql), and
    an optional exit code for the CLI computed from its result and option
    values (exit_code: e.g. --fail-on for CI)."""
    name: str
    variants: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[dict], dict] | None = None
    rules: str | None = None
    exit_code: Callable[["ReportResult", dict], int] | None = None

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
        if self.rules:
            flags = {o.flag for o in own}
            for rule in rules_of(self):
                for o in rule.options():
                    if o.flag in flags:
                        raise ValueError(f"sql/{rule.header.path}: option {o.flag} is declared twice")
                    flags.add(o.flag)
                    own.append(o)
        return SHARED["run"] + [o for u in uses for o in SHARED[u]] + own


def _header(rel: str) -> sqlfiles.Header:
    return sqlfiles.parse_header(rel)


# -- rules: the units of a report composed of rules -----------------------------------

#: the columns every rule returns, one row per matched event
RULE_COLUMNS = [("trace_id", "INTEGER"), ("event_id", "BIGINT"), ("name", "VARCHAR"), ("ts_ns", "BIGINT"),
                ("dur_ns", "BIGINT"), ("at_stake_ns", "BIGINT"), ("detail", "VARCHAR"), ("pid", "BIGINT"),
                ("tid", "BIGINT"), ("host_ts_ns", "BIGINT"), ("op_event_id", "BIGINT")]
SEVERITIES = ("low", "medium", "high")


@dataclass
class Rule:
    """One rule file: sql/<header.path>, named by its header (e.g. 'sync')."""
    header: sqlfiles.Header

    @property
    def name(self) -> str:
        return self.header.name

    def field(self, key: str) -> str:
        return self.header.fields.get(key, "")

    def options(self) -> list[Option]:
        return [parse_option(o, f"sql/{self.header.path}") for o in self.header.options]


def rules_of(report: Report) -> list[Rule]:
    """The rule files of a report, in file-name order (checked: each is named
    after its file, declares a severity and a fix)."""
    out = []
    for rel in sqlfiles.list_dir(f"reports/{report.rules}"):
        h = _header(rel)
        stem = rel.rsplit("/", 1)[-1][:-4]
        if h.name.replace("-", "_") != stem or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", h.name):
            raise ValueError(f"sql/{rel} defines the rule {h.name!r}: a rule's file is named after it")
        if h.fields.get("severity") not in SEVERITIES or not h.fields.get("fix"):
            raise ValueError(f"sql/{rel}: a rule declares 'severity: {'|'.join(SEVERITIES)}' and 'fix: ...'")
        out.append(Rule(h))
    return out


def chosen_rules(report: Report, only: str | None) -> list[Rule]:
    """The rules --only names (all when None), in file order."""
    rules = rules_of(report)
    if only is None:
        return rules
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {r.name for r in rules}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise DuckprofError(f"--only: no rule named {', '.join(map(repr, unknown)) or '(none given)'}; "
                            f"rules: {', '.join(r.name for r in rules)}")
    return [r for r in rules if r.name in names]


def _run_rules(con, report: Report, values: dict, params: dict, table: str, need_hits: bool):
    """Create the temp tables {table}_rules, {table}_skipped and (need_hits)
    {table}_hits from the chosen rule files (see the module docstring);
    values: the report's render variables (run's)."""
    rules = chosen_rules(report, values.get("only"))
    meta = {"rule": [r.name for r in rules], "position": list(range(1, len(rules) + 1)),
            "summary": [r.header.summary for r in rules], "severity": [r.field("severity") for r in rules],
            "fix": [r.field("fix") for r in rules],
            "fix_no_gpu": [r.field("fix-no-gpu") or None for r in rules], "method": [r.field("method") for r in rules],
            "needs": [r.field("needs") for r in rules], "torch": [r.field("torch") or None for r in rules],
            "options": [", ".join(f"{o.flag}={o.default}" for o in r.options()) or None for r in rules]}
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table}_rules AS SELECT "
                + ", ".join(f"unnest(${k}::{'INTEGER' if k == 'position' else 'VARCHAR'}[]) AS {k}" for k in meta),
                meta)
    skipped, hits = [], []
    ctes = _shared_ctes(rules, values) if need_hits else {}  # --list reads the skipped rules only
    for r in rules:
        sections = _sections(sqlfiles.render(r.header.path, **values, shared_ctes=list(ctes)))
        rule = f"'{r.name}'"  # a checked name ([a-z0-9-]), not a value
        if sections.get("skipped", "").strip():
            skipped.append(f"SELECT {rule} AS rule, trace_id::INTEGER AS trace_id, reason::VARCHAR AS reason "
                           f"FROM (\n{sections['skipped']}\n)")
        hits.append(f"SELECT {rule} AS rule, * FROM (\n{sections['']}\n)")
    empty = "SELECT NULL::VARCHAR AS rule, NULL::INTEGER AS trace_id, NULL::VARCHAR AS reason WHERE false"
    sql = "\nUNION ALL\n".join(skipped or [empty])
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table}_skipped AS\n{sql}", _bind(sql, params))
    if need_hits:
        sql = _shared_views(report, rules, values, ctes) + "\nUNION ALL\n".join(hits)
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table}_hits AS\n{sql}", _bind(sql, params))


#: CTEs several rules compute alike: name -> the Jinja text of its SQL (with the
#: report's values). A rule that reads one declares it in its header (`shared:
#: name, ...`) and reads it through its template macro
#: (templates/patterns.sql: device_idle, launch_calls, matmuls), which reads the
#: CTE `name` when the render variable shared_ctes holds it and computes the
#: rows inline otherwise; the runner shares a CTE when two or more chosen rules
#: declare it.
SHARED_CTES = {
    "device_idle": '{% from "templates/patterns.sql" import device_idle with context %}'
                   '{{ device_idle(leading=true) }}',
    "launched": '{% from "templates/patterns.sql" import launched with context %}{{ launched() }}',
    "matmuls": '{% from "templates/patterns.sql" import matmuls with context %}{{ matmuls() }}',
}


def rule_ctes(rule: Rule) -> list[str]:
    """The SHARED_CTES a rule declares (`shared:` in its header), checked."""
    names = [n.strip() for n in rule.field("shared").split(",") if n.strip()]
    unknown = [n for n in names if n not in SHARED_CTES]
    if unknown:
        raise ValueError(f"sql/{rule.header.path}: shared: {', '.join(unknown)} is not one of the shared CTEs "
                         f"({', '.join(SHARED_CTES)}, reports.SHARED_CTES)")
    return names


def _shared_ctes(rules: list[Rule], values: dict) -> dict[str, str]:
    """The SHARED_CTES two or more of `rules` declare (name -> its SQL)."""
    used = {n: sum(n in rule_ctes(r) for r in rules) for n in SHARED_CTES}
    return {n: sqlfiles.render_string(SHARED_CTES[n], **values) for n in SHARED_CTES if used[n] >= 2}


def _shared_views(report: Report, rules: list[Rule], values: dict, ctes: dict[str, str] | None = None) -> str:
    """A WITH clause computing once each view the report's header lists as
    `shared:` that two or more of the rules read (a CTE of the view's own
    name, so the rules' SQL reads it unchanged), for the traces of --run, and
    the shared CTEs `ctes` (_shared_ctes: name -> SQL). A view the
    connection holds computed (values['materialized'], html/page.py
    share_view) is read from there, not copied into a CTE again."""
    shared = [v.strip() for v in report.header().fields.get("shared", "").split(",") if v.strip()]
    held = set(values.get("materialized") or ())  # computed on this connection already (the page's)
    reads = [v for v in shared if v not in held and sum(v in r.header.requires for r in rules) >= 2]
    scope = (" WHERE trace_id IN (SELECT trace_id FROM trace_files WHERE run = $run)"
             if values.get("run") is not None else "")
    parts = [f"{v} AS MATERIALIZED (SELECT * FROM {v}{scope})" for v in reads]
    parts += [f"{n} AS MATERIALIZED (\n{sql}\n)" for n, sql in (ctes or {}).items()]
    return "WITH " + ",\n".join(parts) + "\n" if parts else ""


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


def _gpu_time_params(options: dict) -> dict:
    if options.get("by_step") and options.get("buckets"):
        raise DuckprofError("gpu-time: --by-step and --buckets are two different reports; choose one")
    return {}


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
    Report("gpu-time", variants={"by_step": "gpu_time_steps", "buckets": "gpu_time_buckets"},
           prepare=_gpu_time_params),
    Report("idle", variants={"by": "idle_events"}),
    Report("queue", variants={"buckets": "queue_buckets"}),
    Report("temporal"),
    Report("launches", variants={"per_launch": "launches_per_launch"}),
    Report("ops-by-step"),
    Report("traces"),
    Report("devices"),
    Report("categories", variants={"category": "categories_kernels"}, prepare=_rules_params),
    Report("ops", variants={"by_graph_node": "ops_graph_nodes"}),
    Report("memory", variants={"by_step": "memory_steps", "ops": "memory_ops", "live": "memory_live",
                               "curve": "memory_curve"}),
    Report("modules"),
    Report("steps", variants={"summary": "steps_summary", "breakdown": "steps_tensorboard"}, prepare=_rules_params),
    Report("collectives"),
    Report("ranks"),
    Report("trend", prepare=_trend_params),
    Report("patterns", variants={"list": "patterns_list", "events": "patterns_events"}, rules="patterns",
           exit_code=lambda res, values: 0 if values.get("list") else fail_on(res, values.get("fail_on"))),
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
    exit_code: int = 0                  # for the CLI (Report.exit_code; 0 unless it says otherwise)


def fail_on(res: ReportResult, severity: str | None) -> int:
    """--fail-on SEVERITY (report patterns): 1 when a row of the result has that
    severity or a higher one (low < medium < high), else 0."""
    if severity is None or "severity" not in res.relation.columns:
        return 0
    at_least = [s for s in SEVERITIES if SEVERITIES.index(s) >= SEVERITIES.index(severity)]
    found = res.relation.filter(f"severity IN ({', '.join(repr(s) for s in at_least)})").limit(1).fetchall()
    return 1 if found else 0


_results = itertools.count(1)


def _sections(text: str) -> dict[str, str]:
    """A rendered report or rule file split at its '-- @name' lines: {'': the
    main query, 'notes': ..., 'skipped': ...}."""
    parts = re.split(r"^-- @([a-z]+)[ \t]*$", text, flags=re.M)
    return {"": parts[0], **{parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}}


def _bind(sql: str, params: dict) -> dict:
    # bind only the parameters the SQL text uses: DuckDB rejects unused names
    return {k: v for k, v in params.items() if re.search(rf"\${k}\b", sql)}


def lookup(name: str) -> Report:
    if name not in BY_NAME:
        raise DuckprofError(f"no report named {name!r}; reports: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def _resolve(name: str, given: dict) -> tuple[Report, dict, str]:
    """The report, its option values (given ones checked, defaults for the
    rest) and the SQL file they select."""
    report = lookup(name)
    opts = {o.name: o for o in report.options()}
    unknown = sorted(set(given) - set(opts))
    if unknown:
        raise DuckprofError(f"report {name}: unknown option(s) {', '.join(unknown)}; "
                            f"options: {', '.join(opts)}")
    values = {k: o.check(given[k]) if k in given else o.default for k, o in opts.items()}
    rel = report.file
    for option, stem in report.variants.items():
        if values.get(option):
            rel = f"reports/{stem}.sql"
    return report, values, rel


def documented(name: str, /, **given) -> list[sqlfiles.Column]:
    """The documented columns of report `name` run with these options (what
    run() returns as ReportResult.columns), without running it."""
    return _header(_resolve(name, given)[2]).columns


def requires(name: str, /, **given) -> set[str]:
    """The views and tables report `name` run with these options reads, as
    its file and its rules declare (`requires:`)."""
    report, _, rel = _resolve(name, given)
    names = set(_header(rel).requires)
    for rule in rules_of(report) if report.rules else ():
        names |= set(rule.header.requires)
    return names


def run(con: duckdb.DuckDBPyConnection, name: str, /, *, materialized: tuple[str, ...] = (),
        **given) -> ReportResult:
    """Run report `name` on a connection with the duckprof views; options by
    their Python names (limit=5, by_step=True, ...), unknown ones refused.
    materialized: derived views this connection holds computed, with the
    rows of their default arguments (html/page.py share_view): the rules'
    templates may read them instead of computing the same rows again (render
    variable `materialized`, in the report's own SQL as in its rules'); the
    rows are the same either way."""
    report, values, rel = _resolve(name, given)
    params = dict(values)
    if report.prepare:
        params.update(report.prepare(values))
    table = f"duckprof_report_{next(_results)}"
    # the report's SQL and its rules' see which views are held computed (kernels
    # reads the page's busy intervals, the rules its gpu_activity)
    render_values = dict(values, materialized=list(materialized))
    text = sqlfiles.render(rel, **render_values, result=table)
    sections = _sections(text)
    main_sql, notes_sql = sections[""], sections.get("notes")
    notes, instead = [], []
    if report.rules:
        _run_rules(con, report, render_values, params, table, need_hits=f"{table}_hits" in text)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS\n{main_sql}", _bind(main_sql, params))
    if notes_sql and notes_sql.strip():
        cur = con.execute(notes_sql, _bind(notes_sql, params))
        cols = [d[0] for d in cur.description]
        for row in cur.fetchall():
            r = dict(zip(cols, row))
            if r.get("note") is None:
                continue
            (instead if r.get("instead") else notes).append(r["note"])
    res = ReportResult(name, con.sql(f"SELECT * FROM {table}"), notes, instead, _header(rel).columns)
    if report.exit_code:
        res.exit_code = report.exit_code(res, values)
    return res


def query(con: duckdb.DuckDBPyConnection, stem: str, params: dict, **structure) -> duckdb.DuckDBPyRelation:
    """A relation over sql/reports/<stem>.sql rendered with `structure`, values
    bound from `params`: for the SQL of a command that is more than one file
    (diff: diff.sql, diff_summary.sql, diff_sides.sql)."""
    sql = sqlfiles.render(f"reports/{stem}.sql", **structure)
    return con.sql(sql, params=_bind(sql, params))
