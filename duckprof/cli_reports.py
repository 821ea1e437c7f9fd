"""The report commands: `duckprof report NAME` for every entry of the report
registry (duckprof/reports.py), built from the options its SQL header
declares, and the two commands that are not one SQL file: `diff` and
`augment`. cli.py registers them; nothing here imports cli.py."""

from __future__ import annotations

import inspect
import json
import sys
from typing import TYPE_CHECKING, List, Optional

import typer

from . import render, reports, sqlfiles
from .cli_common import (DbOpt, FormatOpt, LakeOpt, NameWidthOpt, OutputOpt, Progress, QuietOpt, TracesArg, WaitOpt,
                         WideOpt, check_format, friendly_errors, open_data)

if TYPE_CHECKING:
    from .diff import DiffResult

_PY_TYPES = {"INTEGER": int, "DOUBLE": float, "VARCHAR": str, "CHOICE": str, "FLAG": bool}


def _typer_option(o: reports.Option):
    help_ = o.help + (f" ({', '.join(o.choices)})" if o.choices and len(o.choices) <= 16 else "")
    flags = [o.flag] + ([o.short] if o.short else [])
    return typer.Option(o.default, *flags, help=help_)


def report_command(report: reports.Report, after=None):
    """A typer command function for one registered report, its parameters
    taken from the report's declared options. after(result, fmt): prints more
    below the table (trend's chart)."""
    h = report.header()
    options = report.options()
    K = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("traces", K, default=TracesArg, annotation=Optional[List[str]]),
              inspect.Parameter("db", K, default=DbOpt, annotation=Optional[str]),
              inspect.Parameter("lake", K, default=LakeOpt, annotation=Optional[str])]
    for o in options:
        t = _PY_TYPES[o.type]
        params.append(inspect.Parameter(o.name, K, default=_typer_option(o),
                                        annotation=t if o.default is not None else Optional[t]))
    params += [inspect.Parameter("wide", K, default=WideOpt, annotation=bool),
               inspect.Parameter("name_width", K, default=NameWidthOpt, annotation=int),
               inspect.Parameter("fmt", K, default=FormatOpt, annotation=str),
               inspect.Parameter("output", K, default=OutputOpt, annotation=Optional[str]),
               inspect.Parameter("quiet", K, default=QuietOpt, annotation=bool),
               inspect.Parameter("wait", K, default=WaitOpt, annotation=float)]

    def command(**kw):
        traces, db, fmt, output = kw.pop("traces"), kw.pop("db"), kw.pop("fmt"), kw.pop("output")
        lake = kw.pop("lake")
        name_width, quiet, wide, wait = kw.pop("name_width"), kw.pop("quiet"), kw.pop("wide"), kw.pop("wait")
        check_format(fmt, output)
        progress = Progress(quiet)
        try:
            with open_data(traces, db, run=kw.get("run"), progress=progress, wait=wait, lake=lake) as s:
                progress.done()
                res = s.report_result(report.name, **kw)
                if res.instead:
                    for line in res.instead:
                        typer.echo(line)
                else:
                    render.emit(res.relation, fmt, output, name_width=name_width, documented=res.columns,
                                wide=wide)
                    if after is not None and fmt == "table" and not output:
                        after(res)
        finally:
            progress.done()
        sys.stdout.flush()  # the table before the notes, also when both go to one pipe
        width = render.terminal_width() if sys.stderr.isatty() else None
        for n in res.notes:
            for line in render.note_lines(n, width):
                typer.echo(line, err=True)
        if res.exit_code:  # e.g. patterns --fail-on: findings at that severity
            raise typer.Exit(res.exit_code)

    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = report.name.replace("-", "_") + "_command"
    example = h.fields.get("example", f"duckprof report {report.name} trace.json.gz")
    command.__doc__ = (h.fields.get("question", h.summary) + f"\n\n{h.name}: {h.summary}"
                       + f"\n\nExample: {example}")
    return friendly_errors(command)


def register(app: typer.Typer, report_app: typer.Typer):
    """Add every report, diff, augment and html to the CLI."""
    for r in reports.REPORTS:
        report_app.command(r.name)(report_command(r))
    app.command("trend")(report_command(reports.lookup("trend"), after=trend_chart))
    app.command("diff")(friendly_errors(diff_command))
    app.command("augment")(friendly_errors(augment_command))
    from .html.cli import html_command
    app.command("html")(friendly_errors(html_command))


# -- diff ---------------------------------------------------------------------------

def _whole(v):
    """Show whole-number metrics (traces, steps, kernels, ...) without decimals."""
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e15 else v


def _summary_text(res: DiffResult, columns, rows, fmt: str) -> str:
    head = "\n".join(res.header())
    if fmt == "markdown":
        head = "\n".join(f"{line}  " for line in res.header())  # markdown line breaks
    # each metric in its unit (wall_us: 713 ms, gpu_busy_pct: 22.1%, its delta -7.13 pp), as the html page's summary
    at = {c: i for i, c in enumerate(columns)}
    shown = [tuple(render.metric_cell(r[at["metric"]], c, v) for c, v in zip(columns, r)) for r in rows]
    return head + "\n\n" + render.to_text(columns, shown, "markdown" if fmt == "markdown" else "table",
                                          right_aligned=set(range(1, len(columns))))


# CPU-only traces (no device work) are compared with --by op: the GPU levels say so.
_NO_GPU = "neither side has GPU kernels, memcpys or memsets (--by op compares their CPU operators)"
_EMPTY = {"kernel": _NO_GPU, "category": _NO_GPU, "device": _NO_GPU, "op": "neither side has CPU operators"}


def diff_command(
        a: str = typer.Argument(..., help="baseline: trace file, directory or glob, or a run name in --db"),
        b: str = typer.Argument(..., help="candidate: trace file, directory or glob, or a run name in --db"),
        db: Optional[str] = DbOpt,
        by: str = typer.Option("kernel", "--by", help="kernel (kernels, memcpys, memsets by name), op (CPU "
                               "operators), category (kernel categories) or device"),
        group_by_input_shape: bool = typer.Option(False, "--group-by-input-shape",
                                                  help="with --by op: one row per operator and input shapes"),
        op_time: str = typer.Option("total", "--op-time", help="with --by op: total (inclusive) or self CPU time"),
        normalize: bool = typer.Option(False, "--normalize", help="match names that differ trivially: hex "
                                       "addresses -> 0x?, Inductor's triton_..._<n> suffix dropped, standalone "
                                       "numbers -> N (rule: sql/reports/diff.sql)"),
        collapse_templates: bool = typer.Option(False, "--collapse-templates",
                                                help="also collapse every <...> template argument list to <> "
                                                     "(implies --normalize)"),
        raw_names: bool = typer.Option(False, "--raw-names", help="add the raw names behind each (normalised) row (kernel and op levels)"),
        per_step: Optional[bool] = typer.Option(None, "--per-step/--no-per-step",
                                                help="compare per-step averages (default when both sides "
                                                     "have ProfilerStep#N) or totals"),
        threshold: float = typer.Option(5.0, "--threshold", help="a row is slower/faster only if |delta| is at "
                                        "least this % of A's total"),
        min_delta_us: float = typer.Option(10.0, "--min-delta-us", help="... and at least this many us"),
        sort: str = typer.Option("abs_delta", "--sort", help="abs_delta (largest |delta| first), delta, a_total, "
                                 "b_total or name"),
        status: Optional[str] = typer.Option(None, "--status", help="only these statuses, comma-separated: added,"
                                             "removed,slower,faster,unchanged"),
        limit: Optional[int] = typer.Option(None, "--limit", "-n", help="at most N rows (default and 0: all)"),
        summary: bool = typer.Option(True, "--summary/--no-summary", help="print the summary block"),
        fmt: str = FormatOpt, output: Optional[str] = OutputOpt,
        name_width: int = typer.Option(80, "--name-width", help="truncate long names in table/markdown"),
        wide: bool = typer.Option(False, "--wide", help="every column in the table, names in full (default: "
                                  "the table fits the terminal)"),
        salvage: bool = typer.Option(False, "--salvage", help="load the complete events of a truncated trace"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress line")):
    """What changed between two traces or two runs: per kernel, operator, category or device.

    A summary (wall time, steps, GPU busy time and %, kernels, for A, B and the delta) comes
    first in table and markdown output; json gives {"summary": [...], "rows": [...], ...};
    csv and parquet hold only the table, and the summary goes to stderr.

    Example: duckprof diff before.json.gz after.json.gz --by op --limit 20 --format markdown
    """
    from .diff import diff  # imported by the commands that use it
    check_format(fmt, output)
    statuses = [x.strip() for x in status.split(",") if x.strip()] if status else None
    progress = Progress(quiet)
    res = diff(a, b, db=db, by=by, group_by_input_shape=group_by_input_shape, op_time=op_time,
               normalize=normalize, collapse_templates=collapse_templates, raw_names=raw_names,
               per_step=per_step, threshold_pct=threshold, min_delta_us=min_delta_us, sort=sort,
               statuses=statuses, limit=limit, salvage=salvage, progress=progress)
    progress.done()
    with res:
        if fmt == "parquet":
            res.table.write_parquet(output)
            if summary:
                _echo_summary_stderr(res)
            return
        cols, rows = res.table.columns, res.table.fetchall()
        width = None if fmt in ("csv", "json") else name_width
        if fmt == "json":
            doc = {"by": res.by, "per_step": res.per_step, "options": res.options,
                   "sides": json.loads(render.to_text(list(res.sides[0]), [tuple(s.values()) for s in res.sides], "json"))}
            if summary:
                doc["summary"] = json.loads(render.to_text(res.summary.columns, res.summary.fetchall(), "json"))
            doc["rows"] = json.loads(render.to_text(cols, rows, "json"))
            text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        elif fmt == "csv":
            text = render.to_text(cols, rows, "csv")
            if summary:
                _echo_summary_stderr(res)
        else:
            # for people, as a report's table: units in the cells, fits the terminal
            shown = [tuple(_whole(v) for v in r) for r in rows]  # per-step counts: 5, not 5.000
            table = render.report_table(cols, shown, sqlfiles.parse_header("reports/diff.sql").columns, fmt=fmt,
                                        wide=wide, name_width=width, width=render.terminal_width())
            if not rows:
                table = (f"(no rows: {_EMPTY[res.by]})" if not res.options.get("statuses")
                         else "(no rows with status " + ", ".join(res.options["statuses"]) + ")") + "\n"
            text = (_summary_text(res, res.summary.columns, res.summary.fetchall(), fmt) + "\n" + table
                    if summary else table)
        if output:
            with open(output, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        else:
            typer.echo(text.rstrip("\n"))


def _echo_summary_stderr(res: DiffResult):
    text = _summary_text(res, res.summary.columns, res.summary.fetchall(), "table")
    sys.stderr.write(text if text.endswith("\n") else text + "\n")


# -- augment ------------------------------------------------------------------------

def augment_command(src: str = typer.Argument(..., help="trace file (.json or .json.gz)"),
                dst: str = typer.Argument(..., help="file to write (.json.gz: compressed)"),
                quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress line")):
    """Write FLOP and byte estimates into a trace: args kernel_flop (FLOPs) and kernel_num_gb
    (GB) on every kernel with an estimate and on its op, as torch's profile_analysis
    --augment_trace does (but an op's count is split across its kernels, not repeated).
    Everything else in the file is kept as it was.

    Example: duckprof augment trace.json.gz trace.augmented.json.gz
    """
    from .augment import augment
    progress = Progress(quiet)
    rep = augment(src, dst, progress=progress)
    progress.done()
    typer.echo(rep.summary())


# -- trend: the report's table and a bar per run -------------------------------------

_EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar(value: float, top: float, width: int = 40) -> str:
    """A horizontal bar of value / top of `width` characters, in eighths."""
    if not top or value is None or value <= 0:
        return ""
    eighths = round(8 * width * min(value / top, 1.0))
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def trend_chart(res) -> None:
    """One bar per run under trend's table, longest = the largest value;
    runs flagged as moved get ▲ / ▼."""
    rel = res.relation
    cols = rel.columns
    value_col = next(c for c in cols if c.startswith("value_"))
    rows = [dict(zip(cols, r)) for r in rel.fetchall()]
    values = [r[value_col] for r in rows if r[value_col] is not None]
    if len(values) < 2:
        return
    top = max(values)
    label = max(len(f"{r['run']} {r['order_value']}") for r in rows)
    typer.echo("")
    for r in rows:
        v = r[value_col]
        shown = render._human(v, render.column_kind(value_col)[0], value_col) if v is not None else "-"
        mark = {"up": " ▲", "down": " ▼"}.get(r["moved"], "")
        typer.echo(f"{(str(r['run']) + ' ' + str(r['order_value'])):<{label}}  {bar(v, top):<40}  {shown}{mark}")
