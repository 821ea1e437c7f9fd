"""`duckprof html --diff A B`: the page of what changed between two runs (or
two sets of trace files), from duckprof.diff.diff: the summary block, a
waterfall of the change by kernel category, and the kernels and operators
that got slower or faster with both sides' numbers. Like the page of a run,
every number is a cell of `duckprof diff` output (each table's data-options
are its diff options) and each section is one entry of DIFF_SECTIONS."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from .. import sqlfiles
from ..diff import DiffResult, diff
from ..session import Session
from . import charts
from .page import TOP_KERNELS, Section, Table, _render_page, render_sections


@functools.lru_cache(maxsize=1)
def _documented():
    return sqlfiles.parse_header("reports/diff.sql").columns


@functools.lru_cache(maxsize=1)
def _summary_documented():
    return sqlfiles.parse_header("reports/diff_summary.sql").columns


@dataclass
class DiffContext:
    """What the diff sections read: level(by, **options) runs duckprof.diff.diff
    on the sides once per (by, options)."""
    first: DiffResult
    run_diff: object          # (by, **options) -> DiffResult
    top: int

    def __post_init__(self):
        self._memo = {}

    def level(self, by: str, **options) -> Table:
        key = (by, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items())))
        if key not in self._memo:
            res = self.run_diff(by, **options)
            try:
                shown = {"by": by, **options}
                self._memo[key] = Table.of("diff", shown, res.table, _documented())
            finally:
                if res is not self.first:
                    res.close()
        return self._memo[key]

    @property
    def per_step(self) -> bool:
        return self.first.per_step


def summary_view(ctx: DiffContext, sec: Section) -> dict:
    res = ctx.first
    summary = Table.of("diff-summary", {}, res.summary, _summary_documented())
    return dict(header=res.header(), sides=res.sides, summary=summary)


def _per(ctx) -> str:
    return " per step" if ctx.per_step else ""


def categories_view(ctx: DiffContext, sec: Section) -> dict:
    t = ctx.level("category")
    rows = [r for r in t.rows if (r["delta_total_us"] or 0) != 0]
    chart = None
    if t.rows:
        a = sum(r["a_total_us"] or 0 for r in t.rows)
        b = sum(r["b_total_us"] or 0 for r in t.rows)
        unit, div = charts.time_unit(max(a, b))
        chart = charts.waterfall(
            [(r["name"], r["delta_total_us"]) for r in rows],
            title="Which kernel categories account for the change in GPU time from A to B?",
            axis=f"device time{_per(ctx)} ({unit})", start=("A (all categories)", a),
            end=("B (all categories)", b), unit_div=div,
            note="A's device time, then each category's change (B − A), ending at B's; totals are the sums "
                 "of the category rows of the table")
    return dict(table=t, chart=chart, columns=t.shown())


def _changes_view(ctx: DiffContext, by: str, what: str) -> dict:
    slower = ctx.level(by, statuses=["slower", "added"], limit=ctx.top)
    faster = ctx.level(by, statuses=["faster", "removed"], limit=ctx.top)
    rows = slower.rows + faster.rows
    chart = None
    if rows:
        unit, div = charts.time_unit(max(abs(r["delta_total_us"] or 0) for r in rows))
        chart = charts.hbars(
            sorted(rows, key=lambda r: -abs(r["delta_total_us"] or 0)),
            title=f"Which {what} got slower or faster the most?", axis=f"|B − A|{_per(ctx)} ({unit})",
            label=lambda r: r["name"], value=lambda r: abs(r["delta_total_us"] or 0), unit_div=div,
            value_text=lambda r: ("+" if (r["delta_total_us"] or 0) > 0 else "−") + charts.us_text(
                abs(r["delta_total_us"] or 0)) + f" ({r['status']})",
            highlight=lambda r: (r["delta_total_us"] or 0) > 0,
            note="vermillion: slower in B (or only in B); blue: faster in B (or only in A)")
    return dict(slower=slower, faster=faster, chart=chart, columns=slower.shown(), what=what)


def kernels_view(ctx, sec):
    return _changes_view(ctx, "kernel", "kernels")


def ops_view(ctx, sec):
    return _changes_view(ctx, "op", "CPU operators")


#: the diff page, in order
DIFF_SECTIONS = [
    Section("diff-summary", "What changed", None, summary_view, "diff_summary"),
    Section("diff-categories", "By kernel category", None, categories_view, "diff_categories"),
    Section("diff-kernels", "Kernels", None, kernels_view, "diff_changes"),
    Section("diff-ops", "Operators", None, ops_view, "diff_changes"),
]


def _runs_in(db) -> list[str]:
    with Session(db, read_only=True) as s:
        return [r[0] for r in s.con.execute("SELECT DISTINCT run FROM trace_files").fetchall()]


def build_diff(a, b, *, db=None, session: Session | None = None, top: int = TOP_KERNELS,
               salvage: bool = False, progress=None):
    """The page of what changed from A to B: runs of `session` or of the
    database `db`, or trace files (as `duckprof diff` takes them)."""
    t0 = time.perf_counter()
    first = diff(a, b, db=db, session=session, by="category", salvage=salvage, progress=progress)
    try:
        same_catalog = session is not None or db is None or all(
            isinstance(x, str) and x in _runs_in(db) for x in (a, b))
        if same_catalog:
            # both sides are runs of first.session: the other levels reuse it
            ra, rb = first.sides[0]["run"], first.sides[1]["run"]

            def run_diff(by, **options):
                if by == "category" and not options:
                    return first
                return diff(ra, rb, session=first.session, by=by, **options)
        else:
            # one side is files, the other a run of --db: each level loads the files again
            def run_diff(by, **options):
                if by == "category" and not options:
                    return first
                return diff(a, b, db=db, by=by, salvage=salvage, **options)
        ctx = DiffContext(first, run_diff, top)
        sections = render_sections(ctx, DIFF_SECTIONS)
        sides = first.sides
    finally:
        first.close()
    title = f"duckprof diff: {sides[0]['source']} → {sides[1]['source']}"
    subtitle = "A (baseline): " + sides[0]["source"] + "; B (candidate): " + sides[1]["source"]
    return _render_page(title, subtitle, sections, t0)
