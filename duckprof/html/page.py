"""`duckprof html`: one self-contained HTML page of a run (or a diff of two),
built from the standard reports.

Every number on the page is a cell of a report that `duckprof report ...`
prints (run through reports.run on the same data, with the options shown in
each table's data-options attribute); Python only picks rows (the top kernels
of a device, the slowest step) and places marks. A section is one entry of
SECTIONS: the report it needs, the function that shapes that report's rows
for its template, and the template (templates/sections/). A section appears
when its report is registered (reports.BY_NAME), so the reports other issues
add (ops, categories, steps, memory, patterns, ranks, collectives) show up as
tables with a bar chart as soon as they exist; a section whose report has no
rows for this data says so in one line.

The page is one file: CSS, JS (templates/page.css, page.js: sorting tables,
the timeline and its zoom to a step) and data inline, no request to any
address when opened. Charts are SVG drawn here (charts.py) so they show
without JavaScript too (in an untrusted notebook, a mail viewer); the GPU
timeline, which zooms, is drawn by page.js from compact bucket data.
"""

from __future__ import annotations

import base64
import collections
import functools
import hashlib
import html as html_lib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import duckdb
import jinja2
from markupsafe import Markup

from .. import __version__, interrupts, phase, reports, render, sqlfiles
from ..errors import DuckprofError
from ..session import create_views
from . import charts, store
from .charts import STATE

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: rows of a device's top-kernels table and roofline
TOP_KERNELS = 25
#: CPU ops in the idle ranking, per device
TOP_IDLE = 15
#: points per device of the memory curve (report memory --curve --buckets)
CURVE_BUCKETS = 200
#: rows of a table of a report the page shows generically
GENERIC_ROWS = 30
#: (trace, device) blocks shown in the per-device sections; the rest are counted
MAX_DEVICES = 8
#: timeline buckets (one character per state each: the page stays small): for
#: the whole trace at most TIMELINE_MAX per row and TIMELINE_BUDGET in all; for
#: the zoom into a step a finer grid of about STEP_BUCKETS per median step, at
#: most STEP_BUDGET in all
TIMELINE_BUDGET = 24_000
TIMELINE_MAX = 300
STEP_BUDGET = 60_000
STEP_BUCKETS = 100


# -- a report's rows, for templates ---------------------------------------------------------

@dataclass
class Table:
    """A report's result as the page uses it: rows as dicts, its documented
    columns, notes and the lines shown instead of an empty table."""
    name: str
    options: dict
    columns: list[str]
    documented: dict                       # column -> sqlfiles.Column
    rows: list[dict]
    notes: list[str] = field(default_factory=list)
    instead: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, name, options, relation, documented, notes=(), instead=()):
        return cls.of_rows(name, options, relation.columns, relation.fetchall(), documented, notes, instead)

    @classmethod
    def of_rows(cls, name, options, columns, rows, documented, notes=(), instead=()):
        cols = list(columns)
        return cls(name, dict(options), cols, {c.name: c for c in documented},
                   [dict(zip(cols, r)) for r in rows], list(notes), list(instead))

    def shown(self, exclude=()) -> list[str]:
        """The columns a person reads: documented, not [wide], not excluded."""
        return [c for c in self.columns
                if c not in exclude and not (c in self.documented and self.documented[c].wide)]

    def where(self, **match) -> list[dict]:
        return [r for r in self.rows if all(r.get(k) == v for k, v in match.items())]

    def empty_line(self) -> str:
        """What the page says instead of an empty table: the report's own
        lines (its 'instead' lines, else its notes)."""
        return "; ".join(self.instead or self.notes) or f"report {self.name}: no rows for this data"


class Reports:
    """Runs reports on the page's connection, each (name, options) once;
    materialized: the views that connection holds computed (shared_names),
    which the reports' rules may read instead of computing their rows again
    (reports.run). stored: results read from the database (store.read),
    used instead of running their reports; prepare: called once before the
    first report that runs (computes the shared views); say: called with a
    phase message before each (a progress line). computed: what ran, for the
    store."""

    def __init__(self, con, run: str | None, materialized: tuple[str, ...] = (), stored: dict | None = None,
                 prepare: Callable[[], None] | None = None, say: Callable[[str], None] | None = None):
        self.con, self.run, self.materialized = con, run, tuple(materialized)
        self.stored, self.prepare, self.say = stored or {}, prepare, say
        self.computed: list[tuple] = []
        self._memo: dict = {}

    @staticmethod
    def has(name: str) -> bool:
        return name in reports.BY_NAME

    def get(self, name: str, **options) -> Table:
        key = (name, tuple(sorted(options.items())))
        if key not in self._memo:
            opts = dict(options, run=self.run) if self.run is not None else dict(options)
            text = store.options_text(options)
            hit = self.stored.get((name, text))
            if hit is not None:
                self._memo[key] = Table.of_rows(name, options, hit.columns, hit.rows,
                                                reports.documented(name, **opts), hit.notes, hit.instead)
                return self._memo[key]
            if self.prepare is not None:
                self._say("shared views")
                self.prepare()
                self.prepare = None
            self._say(f"report {name}")
            res = reports.run(self.con, name, materialized=self.materialized, **opts)
            rows = res.relation.fetchall()
            t = self._memo[key] = Table.of_rows(name, options, res.relation.columns, rows, res.columns,
                                                res.notes, res.instead)
            self.computed.append((name, text, t.columns, rows, t.notes, t.instead))
        return self._memo[key]

    def _say(self, what: str):
        if self.say is not None:
            self.say(f"html page{'' if self.run is None else f' of run {self.run!r}'}: {what}")


# -- cells ------------------------------------------------------------------------------------

BAR_COLUMNS = ("busy_pct", "compute_pct", "bandwidth_pct", "idle_pct", "self_pct", "host_wait_pct")


def raw(v) -> str:
    """A value as data-v: exact (repr of floats), '' for NULL."""
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return str(v)


cell_text = render.human_cell


def split_constant(table: Table, rows: list[dict], columns: list[str]) -> tuple[list[str], list[str]]:
    """The columns a table shows, and what it says once below it instead, by
    the terminal's rule (render.split_constant): of a table of several rows a
    column holding one value on every row (busy % of one GPU's categories,
    its run, trace and device), of one row only the columns that say which
    trace it is; a column empty on every row is left out; 2 columns at least
    stay."""
    if not rows:
        return columns, []
    columns = _told_apart(table, rows, columns)
    values = [[r.get(c) for c in columns] for r in rows]
    keep, said = render.split_constant(columns, values, range(len(columns)))
    return ([columns[i] for i in keep],
            [f"{render.said_label(table.columns, columns[i])} {cell_text(columns[i], rows[0][columns[i]])}"
             for i in said])


def _told_apart(table: Table, rows: list[dict], columns: list[str]) -> list[str]:
    """`columns`, and an identity column of the report they leave out (a
    [wide] trace_id, one the section chose not to show) when the rows need it
    to be told apart (render.told_apart: two traces of one rank), placed after
    the identity columns shown."""
    hidden = [c for c in table.columns if c in render.IDENTITY and c not in columns]
    if not hidden or len(rows) < 2:
        return columns
    every = list(columns) + hidden
    kept = render.told_apart(every, [[r.get(c) for c in every] for r in rows], range(len(columns)),
                             hidden=range(len(columns), len(every)))
    if len(kept) == len(columns):
        return columns
    at = max((k + 1 for k, c in enumerate(columns) if c in render.IDENTITY), default=0)
    return [*columns[:at], every[kept[-1]], *columns[at:]]


def heading(table: Table, col: str) -> str:
    label = render.said_label(table.columns, col)
    return f"{label} %" if render.column_kind(col)[0] == "pct" else label


def column_help(table: Table, col: str) -> str:
    c = table.documented.get(col)
    return f"{col}: {c.description}" if c else col


def name_list(names: list[str]) -> str:
    """' (a, b, c, d, e)' of what a section leaves out: all of them up to five,
    else the first three and the last."""
    return " (" + ", ".join(names if len(names) <= 5 else [*names[:3], "…", names[-1]]) + ")"


# -- the page's context ---------------------------------------------------------------------

def _without_trace_suffix(name: str) -> str:
    """rank3.json.gz -> rank3 (also .json, and Kineto's .pt.trace)."""
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return name.removesuffix(".pt.trace") or name


@dataclass
class Context:
    reports: Reports
    run: str | None
    traces: Table              # report traces: one row per trace
    devices: Table             # report devices
    top: int = TOP_KERNELS

    @functools.cached_property
    def trace_label(self) -> dict:
        """trace_id -> what names it on the page: its rank, its file's name
        when it has none, both when another trace of its run has its rank
        (a job profiled twice, a schedule's cycles); the run first on a page
        of several runs."""
        many_runs = len({t["run"] for t in self.traces.rows}) > 1
        # a chart's label box is short: the file without the suffix every trace has, unless
        # two files differ only there
        stems = {t["trace_id"]: _without_trace_suffix(t["file_name"]) for t in self.traces.rows}
        if len(set(stems.values())) < len(stems):
            stems = {t["trace_id"]: t["file_name"] for t in self.traces.rows}
        out = {}
        for t in self.traces.rows:
            who = f"rank {t['rank']}" if t["rank"] is not None else stems[t["trace_id"]]
            if t["trace_id"] in self.rank_shared:
                who += f" · {stems[t['trace_id']]}"
            out[t["trace_id"]] = (f"{t['run']} · " if many_runs else "") + who
        return out

    @functools.cached_property
    def rank_shared(self) -> set:
        """The traces whose rank another trace of their run has too."""
        held = collections.Counter((t["run"], t["rank"]) for t in self.traces.rows if t["rank"] is not None)
        return {t["trace_id"] for t in self.traces.rows if t["rank"] is not None and held[(t["run"], t["rank"])] > 1}

    def device_label(self, trace_id, device, with_name=True) -> str:
        name = next((d["device_name"] for d in self.devices.rows
                     if d["trace_id"] == trace_id and d["device"] == device), None)
        lead = f"{self.trace_label.get(trace_id, trace_id)} · " if len(self.traces.rows) > 1 else ""
        return f"{lead}GPU {device}" + (f" ({name})" if name and with_name else "")

    def blocks(self, table: Table) -> tuple[list[tuple], int]:
        """(trace_id, device) pairs of a per-device report, at most
        MAX_DEVICES; and how many more there are. In the order of report
        traces (by rank), then the report's: some reports list their traces
        by trace_id (rank 10 before rank 2), and every section shows the same
        ranks; on a page of several traces, the straggler's first GPU (the
        ranks section's, in vermillion there) takes the last place when it
        is not among them."""
        shown, rest = self._split(table)
        return shown, len(rest)

    def omitted(self, table: Table) -> str:
        """On a page of several traces, which (trace, device) blocks a
        per-device section leaves out (name_list), and the straggler's when it
        is shown out of turn; '' on a one-trace page, which says the count
        only."""
        shown, rest = self._split(table)
        if not rest or len(self.traces.rows) < 2:
            return ""
        text = name_list([self.device_label(tid, dev, with_name=False) for tid, dev in rest])
        straggler = self.straggler[0]
        if straggler is not None and self._trace_order.get(straggler, 0) >= self._trace_order.get(rest[0][0], 0):
            text += f"; {self.trace_label.get(straggler, straggler)}, the straggler (section Ranks), is shown"
        return text

    def _split(self, table: Table) -> tuple[list[tuple], list[tuple]]:
        keys = list(dict.fromkeys((r["trace_id"], r["device"]) for r in table.rows))
        keys.sort(key=lambda k: self._trace_order.get(k[0], len(self._trace_order)))
        shown = keys[:MAX_DEVICES]
        if len(keys) > MAX_DEVICES and len(self.traces.rows) > 1:
            late = next((k for k in keys[MAX_DEVICES:] if k[0] == self.straggler[0]), None)
            if late is not None:
                shown = [*shown[:-1], late]
        return shown, [k for k in keys if k not in shown]

    @functools.cached_property
    def _trace_order(self) -> dict:
        return {t["trace_id"]: i for i, t in enumerate(self.traces.rows)}

    @functools.cached_property
    def ranks(self) -> dict:
        """rank_facts of this page (its several traces)."""
        return rank_facts(self)

    @property
    def straggler(self) -> tuple:
        """(trace_id, why) of the run's straggler, (None, '') when no rank stands out."""
        return self.ranks["straggler"], self.ranks["why"]


# -- sections -------------------------------------------------------------------------------

@dataclass
class Section:
    """One part of the page: shown when `report` is registered. view(ctx, sec)
    shapes the report's rows into the template's variables; the template is
    templates/sections/<template>.html.j2. chart (generic sections): the
    (label column, value column) of a bar chart above the table."""
    id: str
    title: str
    report: str | None          # None: always shown (the diff page's sections)
    view: Callable | None = None
    template: str = "generic"
    options: dict = field(default_factory=dict)
    chart: tuple[str, str] | None = None
    #: generic sections of a report with a row per trace: the sort key (and
    #: what it ranks by, for the line under the table) of the rows a page of
    #: several traces shows when they do not all fit (the report lists its
    #: rows trace by trace: its first rows are the first trace's)
    rank: tuple[Callable[[dict], tuple], str] | None = None


def overview_view(ctx: Context, sec: Section) -> dict:
    gt = ctx.reports.get("gpu-time")
    dev_rows = [r for r in gt.rows if r["scope"] == "device"]
    stack = None
    if dev_rows:
        unit, div = charts.time_unit(max(r["window_us"] for r in dev_rows))
        stack = charts.stacked_hbars(
            dev_rows, [("busy_us", "busy", STATE["busy"]), ("host_wait_us", "idle: host wait", STATE["host_wait"]),
                       ("kernel_wait_us", "idle: kernel wait", STATE["kernel_wait"]),
                       ("other_us", "idle: other", STATE["other"])],
            title="How busy was each GPU, and why was it idle?", axis=f"GPU window ({unit})",
            label=lambda r: ctx.device_label(r["trace_id"], r["device"], with_name=False), unit_div=div,
            total_text=lambda r: f"{r['busy_pct']:.1f}% busy" if r["busy_pct"] is not None else "")
    findings = None
    if ctx.reports.has("patterns"):
        findings = ctx.reports.get("patterns")
    used = [d for d in ctx.devices.rows if d["gpu_events"]]
    return dict(runs=run_lines(ctx), traces=ctx.traces, devices=ctx.devices, used_devices=used,
                unused=len(ctx.devices.rows) - len(used), gpu_time=gt, device_rows=dev_rows, stack=stack,
                findings=findings, top_findings=top_findings(findings.rows) if findings else [])


_SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}


def top_findings(rows: list[dict], n: int = 3) -> list[dict]:
    """The n rows of report patterns that matter most over all traces: by
    severity, then time at stake (unknown last), skipped rules last. The
    report lists its rows trace by trace, so the first three of a page of
    several traces were the first trace's, its skipped rules included, ahead
    of another trace's findings. The sort is stable and is the report's own
    order within a trace: a one-trace page shows the report's first n rows."""
    return sorted(rows, key=finding_rank)[:n]


def finding_rank(r: dict) -> tuple:
    """A row of report patterns' place over all traces (top_findings)."""
    return (_SEVERITY_RANK.get(r["severity"], 3), r["at_stake_us"] is None, -(r["at_stake_us"] or 0))


def run_lines(ctx: Context) -> list[str]:
    """One line per run shown: its ranks, world size and tags (the runs view,
    which reads only the run's stored facts and tags)."""
    names = sorted({t["run"] for t in ctx.traces.rows})
    rows = ctx.reports.con.execute(
        "SELECT run, ranks, world_size, tags FROM runs WHERE list_contains($names, run) ORDER BY run",
        {"names": names}).fetchall()
    out = []
    for run, ranks, world, tags in rows:
        parts = [f"run {run}"]
        if ranks is not None:
            parts.append(f"ranks {ranks}" + (f" of a job of {world}" if world else ""))
        tags = dict(tags or {})
        parts.append("tags: " + ", ".join(f"{k}={v}" for k, v in sorted(tags.items())) if tags else "no tags")
        out.append(" · ".join(parts))
    return out


def encode_shares(rows, keys=("busy_us", "host_wait_us", "kernel_wait_us", "other_us")) -> str:
    """Buckets as one character per state: its share of the bucket's width in
    64 levels (0-9A-Za-z-_), a non-zero share never below one level."""
    out = []
    for r in rows:
        w = r["width_us"] or 0
        for k in keys:
            v = r[k] or 0
            q = 0 if w <= 0 or v <= 0 else max(1, min(63, round(63 * v / w)))
            out.append(_ALPHABET[q])
    return "".join(out)


_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"


def timeline_view(ctx: Context, sec: Section) -> dict:
    """gpu-time --buckets N for the whole trace, gpu-time --buckets M (finer,
    when there are steps) for the zoom into a step, whose window and busy %
    come from gpu-time --by-step."""
    gt = ctx.reports.get("gpu-time")
    if not gt.rows:
        return dict(empty=gt.empty_line(), data=None, gpu_notes=gt.notes)
    n_series = len(gt.rows)
    n = max(20, min(TIMELINE_MAX, TIMELINE_BUDGET // n_series))
    coarse = ctx.reports.get("gpu-time", buckets=n)
    gpu_traces = {r["trace_id"] for r in gt.rows}
    has_steps = any(t["steps"] for t in ctx.traces.rows if t["trace_id"] in gpu_traces)
    steps = ctx.reports.get("gpu-time", by_step=True) if has_steps else None
    fine, m = None, 0
    if steps is not None and steps.rows:
        # about STEP_BUCKETS buckets in the shortest steps' half, within the budget
        spans = sorted(r["step_us"] for r in steps.rows if r["step_us"])
        window_us = max(r["window_us"] for r in gt.rows if r["scope"] == "device")
        if spans:
            m = min(STEP_BUDGET // n_series, max(2 * n, math.ceil(STEP_BUCKETS * window_us / spans[len(spans) // 2])))
        if m > n:
            fine = ctx.reports.get("gpu-time", buckets=m)
        else:
            m = 0

    def key(r):
        return (r["trace_id"], r["device"], r["scope"], r["stream"])

    def codes(table):
        out = {}
        if table is not None:
            for r in table.rows:
                out.setdefault(key(r), []).append(r)
        return {k: encode_shares(v) for k, v in out.items()}

    coarse_codes, fine_codes = codes(coarse), codes(fine)
    data = {"alphabet": _ALPHABET, "states": ["busy", "host_wait", "kernel_wait", "other"],
            "colours": [STATE[s] for s in ("busy", "host_wait", "kernel_wait", "other")], "traces": []}
    for tid in dict.fromkeys(r["trace_id"] for r in gt.rows):
        rows = [r for r in coarse.rows if r["trace_id"] == tid]
        t = {"label": ctx.trace_label.get(tid, str(tid)), "trace_id": tid,
             "t0": min(r["start_ms"] for r in rows), "t1": max(r["start_ms"] + r["width_us"] / 1e3 for r in rows),
             "n": n, "m": m, "series": [], "steps": []}
        for s in (r for r in gt.rows if r["trace_id"] == tid):
            t["series"].append({"label": f"GPU {s['device']}" if s["scope"] == "device" else f"stream {s['stream']}",
                                "scope": s["scope"], "device": s["device"], "stream": s["stream"],
                                "busy_pct": s["busy_pct"], "b": coarse_codes.get(key(s), ""),
                                "f": fine_codes.get(key(s), "")})
        if steps is not None:
            seen = {}
            for r in steps.rows:
                if r["trace_id"] != tid:
                    continue
                e = seen.setdefault(r["step"], {"step": r["step"], "t0": r["start_ms"],
                                                "t1": r["start_ms"] + r["step_us"] / 1e3, "busy_pct": {}})
                e["busy_pct"][f"GPU {r['device']}"] = r["busy_pct"]
            t["steps"] = list(seen.values())
        data["traces"].append(t)
    return dict(empty=None, data=data, n=n, m=m, gpu_notes=gt.notes, options=dict(buckets=n))


def temporal_view(ctx: Context, sec: Section) -> dict:
    t = ctx.reports.get("temporal")
    chart = None
    if t.rows:
        unit, div = charts.time_unit(max(r["window_us"] for r in t.rows))
        chart = charts.stacked_hbars(
            t.rows, [("compute_us", "compute", STATE["compute"]),
                     ("communication_us", "communication", STATE["communication"]),
                     ("memory_us", "memory (memcpy/memset only)", STATE["memory"]),
                     ("idle_us", "idle", STATE["idle"])],
            title="How much of each GPU's time went to compute, communication, memory and idle?",
            axis=f"GPU window ({unit})", label=lambda r: ctx.device_label(r["trace_id"], r["device"], False),
            unit_div=div,  # a window of 0 (only events of no duration) has no %
            total_text=lambda r: f"{r['compute_pct']:.1f}% compute" if r["compute_pct"] is not None else "")
    return dict(table=t, chart=chart)


#: steps per device in the categories-by-step chart (the table and the CLI list them all)
MAX_STEP_BARS = 40


def category_colours(names) -> dict:
    """A colour per category, in the order given (largest first): the
    Okabe-Ito colours for the first ones, grey for the rest (each segment
    keeps its own tooltip)."""
    colours = [c for c in charts.PALETTE if c != "#000000"]
    return {n: colours[i] if i < len(colours) else "#BBBBBB" for i, n in enumerate(names)}


def _category_bars(rows, key, label, order, colours, title, note=""):
    """One stacked bar per key(row) (a device, a step): a segment per category
    (total_us), busy % written at its end."""
    bars = {}
    for r in rows:
        b = bars.setdefault(key(r), {"_label": label(r), "_busy": r["busy_pct"]})
        b[r["category"]] = (b.get(r["category"]) or 0) + (r["total_us"] or 0)
    unit, div = charts.time_unit(max((sum(v for k, v in b.items() if not k.startswith("_")) for b in bars.values()),
                                     default=0))
    named = [c for c in order if colours[c] != "#BBBBBB"]
    rest = [c for c in order if colours[c] == "#BBBBBB"]
    chart = charts.stacked_hbars(
        list(bars.values()), [(c, c, colours[c]) for c in order], title=title,
        axis=f"device time, summed over streams ({unit})", label=lambda b: b["_label"], unit_div=div,
        total_text=lambda b: f"busy {b['_busy']:.1f}%" if b["_busy"] is not None else "", note=note)
    chart.legend = [(c, colours[c]) for c in named] + ([(f"{', '.join(rest)} (grey)", "#BBBBBB")] if rest else [])
    return chart


def categories_view(ctx: Context, sec: Section) -> dict:
    """report categories: one stacked bar per device (a segment per kernel
    category, the device's busy % at its end), then per device one bar per
    step (categories --by-step), and the table."""
    t = ctx.reports.get("categories")
    if not t.rows:
        return dict(table=t, chart=None, steps=[], columns=[])
    totals = {}
    for r in t.rows:
        totals[r["category"]] = totals.get(r["category"], 0) + (r["total_us"] or 0)
    order = sorted(totals, key=lambda c: -totals[c])
    colours = category_colours(order)
    blocks, more = ctx.blocks(t)
    chart = _category_bars(
        [r for r in t.rows if (r["trace_id"], r["device"]) in blocks], lambda r: (r["trace_id"], r["device"]),
        lambda r: ctx.device_label(r["trace_id"], r["device"], False), order, colours,
        "Where does each GPU's time go, by kernel category, and how busy is it?",
        note="Busy %: the GPU's busy time (the union of its events) over the trace's profiled time, Inductor's "
             "\"Percent of time when GPU is busy\"; bars add up the categories' device time, which counts time "
             "on concurrent streams twice.")
    steps = []
    if any(t_["steps"] for t_ in ctx.traces.rows):
        bs = ctx.reports.get("categories", by_step=True)
        for tid, dev in blocks:
            rows = bs.where(trace_id=tid, device=dev)
            step_ids = list(dict.fromkeys(r["step"] for r in rows if r["step"] is not None))
            if not step_ids:
                continue
            shown = set(step_ids[:MAX_STEP_BARS])
            steps.append(dict(label=ctx.device_label(tid, dev), trace_id=tid, device=dev, chart=_category_bars(
                [r for r in rows if r["step"] in shown], lambda r: r["step"], lambda r: f"ProfilerStep#{r['step']}",
                order, colours, "Does the split between kernel categories change from step to step?",
                note=(f"The first {MAX_STEP_BARS} of {len(step_ids)} steps; " if len(step_ids) > MAX_STEP_BARS
                      else "") + "busy %: of the step's host-side duration."), more=max(0, len(step_ids) - MAX_STEP_BARS)))
    # a run of many GPUs: the table holds the rows of the GPUs drawn (a 200-rank
    # page's table was a megabyte of the other GPUs' rows); one trace's, all of them
    rows = [r for r in t.rows if (r["trace_id"], r["device"]) in blocks] if more and len(ctx.traces.rows) > 1 else None
    return dict(table=t, chart=chart, steps=steps, more=more, left=ctx.omitted(t), columns=t.shown(),
                rows=rows if rows is not None else t.rows, caption=(
                    f"Device time by kernel category of the {len(blocks)} GPUs drawn above" if rows is not None
                    else "Device time by kernel category") + " (report categories)")


def _plottable(r) -> bool:
    """A kernel row has a dot on the log-log roofline: positive intensity and
    rate (a trace may hold an end before a start, Kineto's zero end
    timestamps: a negative time, a negative TFLOP/s)."""
    return bool(r["flops_per_byte"] and r["achieved_tflops"] and r["flops_per_byte"] > 0
                and r["achieved_tflops"] > 0)


def kernels_view(ctx: Context, sec: Section) -> dict:
    k = ctx.reports.get("kernels", limit=ctx.top)
    blocks, more = ctx.blocks(k)
    out = []
    for tid, dev in blocks:
        rows = k.where(trace_id=tid, device=dev)
        points = [dict(x=r["flops_per_byte"], y=r["achieved_tflops"], size_us=r["total_us"], bound=r["bound"],
                       label=r["name"], tip=(f"{r['name']}: {r['achieved_tflops']:.3g} TFLOP/s at {r['flops_per_byte']:.3g} "
                            f"FLOP/byte, {charts.us_text(r['total_us'])} in {r['count']:,} calls"))
                  for r in rows if _plottable(r)]
        dev_row = next((d for d in ctx.devices.rows if d["trace_id"] == tid and d["device"] == dev), {})
        peaks = sorted({(r["peak_dtype"], r["peak_tflops"]) for r in rows
                        if r["peak_tflops"] and r["peak_dtype"] and "," not in r["peak_dtype"]
                        and _plottable(r)})
        if not peaks and dev_row.get("bf16_tflops"):
            peaks = [("bf16", dev_row["bf16_tflops"])]
        gbps = next((r["peak_gbps"] for r in rows if r["peak_gbps"]), None) or dev_row.get("dram_gbps")
        roof = None
        if points:
            missing = len(rows) - len(points)
            roof = charts.roofline(
                points, title="How close does each top kernel run to the GPU's compute and memory roofs?",
                gbps=gbps, peaks=[(f"{d} peak", v) for d, v in peaks],
                note=(f"{missing} of the {len(rows)} kernels in the table have no FLOP or byte estimate "
                      "(or no positive time), so no dot"
                      if missing else ""))
        out.append(dict(label=ctx.device_label(tid, dev), rows=rows, roofline=roof,
                        n_points=len(points), trace_id=tid, device=dev))
    return dict(table=k, blocks=out, more=more, left=ctx.omitted(k),
                columns=k.shown(exclude=("run", "rank", "trace_id", "device")))


def idle_view(ctx: Context, sec: Section) -> dict:
    idle = ctx.reports.get("idle", limit=TOP_IDLE, by="event")  # BasicEvaluation's single calls
    blocks, more = ctx.blocks(idle)
    out = []
    for tid, dev in blocks:
        rows = idle.where(trace_id=tid, device=dev)
        longest = max((r["gpu_idle_us"] or 0) for r in rows)
        if longest <= 0:
            # a chart of zero-length bars says nothing: the finding is the line
            out.append(dict(label=ctx.device_label(tid, dev), rows=rows, chart=None, trace_id=tid, device=dev,
                            starved=f"None of the {len(rows)} CPU operators ranked here overlaps time when this "
                                    "GPU's queue was empty (GPU idle 0 ns for each): while they ran, the GPU "
                                    "had work queued."))
            continue
        unit, div = charts.time_unit(longest)
        chart = charts.hbars(
            rows, title="Which CPU operators leave the GPU idle?", axis=f"GPU idle time during the op ({unit})",
            label=lambda r: f"{r['op']} at {r['ts_ms']:,.2f} ms", value=lambda r: r["gpu_idle_us"], unit_div=div,
            value_text=lambda r: charts.us_text(r["gpu_idle_us"]),
            tip=lambda r: f"idle rank {r['idle_rank']}" if r["idle_rank"] else "not a candidate",
            highlight=lambda r: r["idle_rank"] is not None,
            note="vermillion: the ops BasicEvaluation's ranking would optimise first (idle_rank); blue: other ops "
                 "with GPU idle time")
        out.append(dict(label=ctx.device_label(tid, dev), rows=rows, chart=chart, trace_id=tid, device=dev,
                        starved=None))
    q = ctx.reports.get("queue")
    queue_charts = []
    if q.rows:
        n_series = len(q.rows)
        n = max(20, min(TIMELINE_MAX, TIMELINE_BUDGET // n_series))
        qb = ctx.reports.get("queue", buckets=n)
        qblocks, qmore = ctx.blocks(qb)
        for tid, dev in qblocks:
            rows = qb.where(trace_id=tid, device=dev)
            series = []
            for stream in dict.fromkeys(r["stream"] for r in rows):
                pts = [(r["start_ms"], r["start_ms"] + r["width_us"] / 1e3, r["mean_depth"])
                       for r in rows if r["stream"] == stream]
                series.append(dict(label=f"stream {stream}", points=pts))
            queue_charts.append(dict(label=ctx.device_label(tid, dev), trace_id=tid, device=dev, chart=charts.step_lines(
                series, title="How much work was queued on each stream over time?",
                x_label="time since the trace's first event (ms)",
                y_label="mean queue depth (events)")))
    else:
        qb, qmore = None, 0
    return dict(table=idle, blocks=out, more=more, left=ctx.omitted(idle), queue=q, queue_charts=queue_charts,
                queue_more=qmore, queue_left=ctx.omitted(qb) if qmore else "",
                columns=idle.shown(exclude=("run", "rank", "trace_id", "device")),
                queue_columns=q.shown(exclude=("run", "rank", "trace_id")))


#: a step is highlighted as the outlier when it is at least this far from the median step, %
STEP_OUTLIER_PCT = 5.0


def _outlier_key(r: dict) -> tuple:
    return abs(r["vs_median_pct"]), r["vs_median_pct"], -r["step"]


def step_outliers(ctx: Context) -> dict:
    """trace_id -> (step, what, note, highlight): the step whose operators are
    listed, what it is, the chart's note, and whether to outline it. With
    report steps, its outlier: the step furthest from the median step (the
    largest |vs_median_pct|; of two as far, the slower, then the earlier:
    the row steps --summary names) when it is STEP_OUTLIER_PCT or more away (else the slowest step's
    operators are listed, and nothing is highlighted); without report steps,
    the slowest step (report traces)."""
    out = {}
    if Reports.has("steps"):
        for r in ctx.reports.get("steps").rows:
            if r["step"] is None or r["vs_median_pct"] is None:
                continue
            best = out.get(r["trace_id"])
            if best is None or _outlier_key(r) > _outlier_key(best):
                out[r["trace_id"]] = r
        calm = {tid: r for tid, r in out.items() if abs(r["vs_median_pct"]) < STEP_OUTLIER_PCT}
        out = {tid: (r["step"], "the outlier step",
                     f"vermillion: ProfilerStep#{r['step']}, the step furthest from the median step "
                     f"({r['vs_median_pct']:+.1f}%, report steps)", True) for tid, r in out.items() if tid not in calm}
        for tid, r in calm.items():
            slow = next(t["slowest_step"] for t in ctx.traces.rows if t["trace_id"] == tid)
            out[tid] = (slow, "the slowest step",
                        f"No step stands out: every step is within {abs(r['vs_median_pct']):.1f}% of the median "
                        f"step (report steps), so none is highlighted.", False)
    for t in ctx.traces.rows:
        if t["trace_id"] not in out and t["slowest_step"] is not None:
            out[t["trace_id"]] = (t["slowest_step"], "the slowest step",
                                  f"vermillion: ProfilerStep#{t['slowest_step']}, the slowest step (report traces)",
                                  True)
    return out


#: more devices (ranks) than this: one grid of their steps instead of a chart each
MAX_STEP_CHARTS = 2


def step_grid(ctx: Context, gs, keys, outliers) -> charts.Chart:
    """The steps of every device of the run in one chart (report gpu-time
    --by-step): a row per device, a cell per step, shaded by step time; each
    trace's outlier step (as in the column charts) outlined."""
    unit, div = charts.time_unit(max((r["step_us"] or 0) for r in gs.rows))
    series = []
    for tid, dev in keys:
        hot, _, _, outline = outliers.get(tid, (None, "", "", False))
        label = ctx.device_label(tid, dev)
        rows = gs.where(trace_id=tid, device=dev)
        series.append(dict(label=label.split(" (")[0], cells=[
            (r["step"], r["step_us"],
             f"{label} · ProfilerStep#{r['step']}: {charts.us_text(r['step_us'])}, "
             f"GPU busy {charts.us_text(r['busy_us'])}", bool(outline and r["step"] == hot and len(rows) > 2))
            for r in rows]))
    hot = "; vermillion: each trace's outlier step (report steps)" if any(
        c[3] for s in series for c in s["cells"]) else ""
    return charts.step_grid(
        series, title="Which steps take longest, on which rank?", x_label="ProfilerStep#",
        unit=unit, unit_div=div,
        note=f"{len(keys)} GPUs, one row each, shaded by step time on one scale{hot}. "
             "Hover a cell for its step time and GPU busy time.")


def steps_view(ctx: Context, sec: Section) -> dict:
    have = [t for t in ctx.traces.rows if t["steps"]]
    if not have:
        return dict(empty="no ProfilerStep#N annotations in this trace, so no steps")
    gs = ctx.reports.get("gpu-time", by_step=True)
    obs = ctx.reports.get("ops-by-step")
    outliers = step_outliers(ctx)
    keys = list(dict.fromkeys((r["trace_id"], r["device"]) for r in gs.rows))
    grid = step_grid(ctx, gs, keys, outliers) if len(keys) > MAX_STEP_CHARTS else None
    blocks, more = ([], 0) if grid else ctx.blocks(gs)
    out = []
    for tid, dev in blocks:
        rows = gs.where(trace_id=tid, device=dev)
        hot, _, note, outline = outliers.get(tid, (None, "", "", False))
        unit, div = charts.time_unit(max(r["step_us"] for r in rows))
        chart = charts.step_columns(
            rows, title="How long was each step, how much of it was the GPU busy, and which step stands out?",
            x_label="ProfilerStep#", y_label=f"step time ({unit})", x=lambda r: r["step"],
            total=lambda r: r["step_us"], part=lambda r: r["busy_us"], unit_div=div,
            highlight=(lambda r: r["step"] == hot) if outline and len(rows) > 2 else None,
            note=note if len(rows) > 2 else "")
        out.append(dict(label=ctx.device_label(tid, dev), chart=chart, rows=rows, trace_id=tid, device=dev))
    ops_left = ""
    if grid:  # many ranks: the operators of the trace with the longest step only
        longest = max(gs.rows, key=lambda r: r["step_us"] or 0)["trace_id"]
        if len(have) > 1:
            ops_left = (f"Operators of {ctx.trace_label[longest]}'s steps only (the trace with the longest step); "
                        f"the other {len(have) - 1} traces' are not shown")
        have = [t for t in have if t["trace_id"] == longest]
    ops = []
    rest = [ctx.trace_label[t["trace_id"]] for t in have[MAX_DEVICES:]]
    if rest:
        ops_left = f"The operators of {len(rest)} more trace(s)' steps not shown{name_list(rest)}"
    for t in have[:MAX_DEVICES]:
        durations = sorted((r["step_us"], r["step"]) for r in gs.rows if r["trace_id"] == t["trace_id"])
        typical = durations[(len(durations) - 1) // 2][1] if durations else None
        hot, what, _, _ = outliers.get(t["trace_id"], (t["slowest_step"], "the slowest step", "", False))
        shown = [(hot, what)] + ([(typical, "the median step")] if typical is not None and typical != hot else [])
        for st, why in shown:
            rows = obs.where(trace_id=t["trace_id"], step=st)
            ops.append(dict(label=f"{ctx.trace_label[t['trace_id']]} · ProfilerStep#{st} ({why})", rows=rows))
    return dict(empty=None, table=gs, blocks=out, grid=grid, more=more, ops_table=obs, ops=ops, ops_left=ops_left,
                ops_columns=obs.shown(exclude=("run", "rank", "trace_id", "step")))


def rank_facts(ctx: Context) -> dict:
    """Per trace of a run: busy %, mean step time and (with report ranks) the
    wait its late arrival at the collectives cost the others, in rank order;
    and the straggler (its trace_id, and why): the rank that caused the most
    wait, else the one with the longest mean step (None when equal)."""
    if Reports.has("ranks"):
        t = ctx.reports.get("ranks")
        rows = sorted(t.rows, key=lambda r: (r["rank"] is None, r["rank"], r["trace_id"]))
        label = lambda r: (f"rank {r['rank']}" if r["rank"] is not None and r["trace_id"] not in ctx.rank_shared  # noqa: E731
                           else ctx.trace_label[r["trace_id"]])
        busy = [dict(label=label(r), busy_pct=r["busy_pct"], key=r["trace_id"]) for r in rows]
        stepped = [dict(label=label(r), step_mean_us=r["step_mean_us"], key=r["trace_id"])
                   for r in rows if r["step_mean_us"] is not None]
        waits = [dict(label=label(r), caused_wait_us=r["caused_wait_us"], late=r["late_count"], n=r["collectives"],
                      key=r["trace_id"]) for r in rows if r["caused_wait_us"] is not None]
    else:
        t = None
        gt = ctx.reports.get("gpu-time")
        busy = [dict(label=ctx.trace_label[r["trace_id"]], busy_pct=r["busy_pct"], key=r["trace_id"])
                for r in gt.rows if r["scope"] == "device"]
        stepped = [dict(label=ctx.trace_label[x["trace_id"]], step_mean_us=x["step_mean_us"], key=x["trace_id"])
                   for x in ctx.traces.rows if x["step_mean_us"] is not None]
        waits = []
    straggler, why = None, ""
    if any((w["caused_wait_us"] or 0) > 0 for w in waits):
        worst = max(waits, key=lambda w: w["caused_wait_us"])
        straggler, why = worst["key"], "the rank whose late arrival at the collectives cost the others the most wait"
    elif stepped:
        slow = max(stepped, key=lambda x: x["step_mean_us"])
        if sum(1 for x in stepped if x["step_mean_us"] == slow["step_mean_us"]) == 1:
            straggler, why = slow["key"], "the rank with the longest mean step"
    return dict(table=t, busy=busy, stepped=stepped, waits=waits, straggler=straggler, why=why)


def ranks_view(ctx: Context, sec: Section) -> dict:
    """A run of many ranks: busy %, mean step time and (with report ranks) the
    wait each rank's late arrival at the collectives cost the others, one bar
    per rank, the straggler in vermillion: the rank that caused the most wait,
    else the one with the longest mean step."""
    if len(ctx.traces.rows) < 2:
        return dict(hide=True)
    f = ctx.ranks
    t, busy, stepped, waits, straggler, why = f["table"], f["busy"], f["stepped"], f["waits"], f["straggler"], f["why"]
    hot = lambda r: r["key"] == straggler  # noqa: E731
    note = f"vermillion: {why}" if straggler is not None else "no rank stands out (equal step times, no wait caused)"
    busy_chart = charts.hbars(
        busy, title="How busy was each rank's GPU?", axis="GPU busy (% of window)", label=lambda r: r["label"],
        value=lambda r: r["busy_pct"], value_text=lambda r: charts.pct_text(r["busy_pct"]), highlight=hot) if busy else None
    step_chart = None
    if stepped:
        unit, div = charts.time_unit(max(x["step_mean_us"] for x in stepped))
        step_chart = charts.hbars(
            stepped, title="Which rank's steps take longest?", axis=f"mean step time ({unit})",
            label=lambda x: x["label"], value=lambda x: x["step_mean_us"], unit_div=div,
            value_text=lambda x: charts.us_text(x["step_mean_us"]), highlight=hot)
    wait_chart = None
    if any((w["caused_wait_us"] or 0) > 0 for w in waits):
        unit, div = charts.time_unit(max(w["caused_wait_us"] for w in waits))
        wait_chart = charts.hbars(
            waits, title="Which rank keeps the others waiting at the collectives (the straggler)?",
            axis=f"the other ranks' wait it caused ({unit})", label=lambda w: w["label"],
            value=lambda w: w["caused_wait_us"], unit_div=div, highlight=hot,
            value_text=lambda w: f"{charts.us_text(w['caused_wait_us'])} (last at {w['late']:,}/{w['n']:,})")
    return dict(hide=False, busy_chart=busy_chart, step_chart=step_chart, wait_chart=wait_chart, table=t, note=note,
                columns=t.shown() if t is not None else [])


def ranked_rows(ctx: Context, sec: Section, t: Table) -> tuple[list[dict], str]:
    """The rows a generic section shows and the line under its table saying
    what is left out. The report's first GENERIC_ROWS rows, in its order; on a
    page of several traces whose rows do not all fit, the GENERIC_ROWS that
    rank first over every trace (sec.rank, stable: the report's order among
    equals), so the table is the run's and not its first trace's."""
    more = len(t.rows) - GENERIC_ROWS
    if more <= 0:
        return t.rows, ""
    n_traces = len({r["trace_id"] for r in t.rows}) if "trace_id" in t.columns else 1
    if sec.rank is None or n_traces < 2:
        return t.rows[:GENERIC_ROWS], f"{more} more row(s)"
    key, by = sec.rank
    return (sorted(t.rows, key=key)[:GENERIC_ROWS],
            f"The top {GENERIC_ROWS} of {len(t.rows):,} rows across {n_traces} traces, by {by}")


def generic_view(ctx: Context, sec: Section) -> dict:
    t = ctx.reports.get(sec.report, **sec.options)
    shown, left_out = ranked_rows(ctx, sec, t)
    chart = None
    if sec.chart and t.rows and all(c in t.columns for c in sec.chart):
        lab, val = sec.chart
        rows = [r for r in shown if isinstance(r[val], (int, float))]
        kind = render.column_kind(val)
        if kind[0] == "time":
            unit, div = charts.time_unit(max((r[val] for r in rows), default=0))
            axis, text = f"{kind[1]} ({unit})", lambda r: charts.us_text(r[val])
        else:
            div, axis, text = 1.0, kind[1], lambda r: cell_text(val, r[val])
        q = reports.lookup(sec.report).header().fields.get("question", sec.title)
        label = lambda r: r[lab]  # noqa: E731
        if len({r.get("trace_id") for r in rows}) > 1:  # whose row it is, on a page of several traces
            label = lambda r: f"{ctx.trace_label.get(r['trace_id'], r['trace_id'])} · {r[lab]}"  # noqa: E731
        chart = charts.hbars(rows, title=q, axis=axis, label=label, value=lambda r: r[val],
                             value_text=text, unit_div=div)
    return dict(table=t, rows=shown, left_out=left_out, chart=chart, columns=t.shown())


def memory_view(ctx: Context, sec: Section) -> dict:
    """The memory report's table under its curve: the allocated level of each
    device over time (report memory --curve, at most CURVE_BUCKETS rows per
    device: each bucket's highest level), a step line per device."""
    view = generic_view(ctx, sec)
    if not view["rows"]:  # no [memory] events: the table's one line says so
        return view
    curve = ctx.reports.get("memory", curve=True, buckets=CURVE_BUCKETS)
    series = {}
    for r in curve.rows:
        key = (r["trace_id"], r["device_kind"], r["device"])
        if key in series or len(series) < MAX_DEVICES:
            series.setdefault(key, []).append(r)
    top = max((r["allocated_bytes"] or 0 for rows in series.values() for r in rows), default=0)
    if not series or top <= 0:
        return view
    unit, div = next(((u, d) for u, d in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)) if top >= d), ("B", 1.0))
    lines = []
    for (tid, kind, dev), rows in series.items():
        ms = [r["at_us"] / 1e3 for r in rows]
        pts = [(x, ms[i + 1] if i + 1 < len(ms) else x, (r["allocated_bytes"] or 0) / div)
               for i, (x, r) in enumerate(zip(ms, rows))]
        lead = f"{ctx.trace_label.get(tid, tid)} · " if len(ctx.traces.rows) > 1 else ""
        lines.append(dict(label=f"{lead}{kind} {dev}" if dev >= 0 else f"{lead}{kind}", points=pts))
    view["chart"] = charts.step_lines(
        lines, title="How did each device's allocated memory change over time?",
        x_label="time since the profiler's start (ms)", y_label=f"allocated ({unit})",
        note=f"report memory --curve --buckets {CURVE_BUCKETS}: per bucket its highest level")
    return view


def _by_time(col: str):
    """A rank key: the largest `col` first, unknown last."""
    return lambda r: (r[col] is None, -(r[col] or 0))


#: the page, in order. Reports other issues add appear here by name when they exist.
SECTIONS = [
    Section("overview", "Overview", "traces", overview_view, "overview"),
    Section("timeline", "GPU timeline", "gpu-time", timeline_view, "timeline"),
    Section("temporal", "Time breakdown", "temporal", temporal_view, "temporal"),
    Section("categories", "Kernel categories", "categories", categories_view, "categories"),
    Section("kernels", "Top kernels", "kernels", kernels_view, "kernels"),
    Section("idle", "GPU idle and queue", "idle", idle_view, "idle"),
    Section("launches", "Kernel launches", "launches", chart=("name", "launch_total_us"),
            rank=(_by_time("launch_total_us"), "host time in launch calls")),
    Section("ops", "Operators", "ops", chart=("name", "self_cpu_us"),
            rank=(_by_time("self_cpu_us"), "self CPU time")),
    Section("modules", "Modules", "modules", chart=("module", "host_us"), options={"depth": 2},
            rank=(_by_time("host_us"), "host time")),
    Section("steps", "Steps", "gpu-time", steps_view, "steps"),
    Section("steps-report", "Step breakdown", "steps", rank=(_by_time("step_us"), "step time")),
    Section("ranks", "Ranks", "gpu-time", ranks_view, "ranks"),
    Section("collectives", "Collectives", "collectives"),
    Section("memory", "Memory", "memory", memory_view, rank=(_by_time("peak_allocated_bytes"), "peak allocated memory")),
    Section("patterns", "Anti-patterns", "patterns",
            rank=(finding_rank, "severity, then time at stake")),
]


# -- rendering ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(raw=raw, cell_text=cell_text, metric_cell=render.metric_cell, heading=heading,
                       split_constant=split_constant, column_help=column_help,
                       BAR_COLUMNS=BAR_COLUMNS, us_text=charts.us_text, pct_text=charts.pct_text,
                       fmt_num=charts.fmt_num, tojson_attr=lambda v: json.dumps(v, sort_keys=True, default=str))
    env.filters["script_json"] = script_json
    return env


def script_json(data) -> Markup:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&'
    (so no '</script>' or '<!--' can end or change the element)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


def _asset(name: str) -> Markup:
    return Markup((TEMPLATES / name).read_text(encoding="utf-8"))


@dataclass
class RenderedSection:
    id: str
    title: str
    html: Markup


class Page:
    """An HTML page: str(page) is the document; page.save(path) writes it;
    in Jupyter it displays inline (in an iframe, so its styles and scripts
    stay its own)."""

    def __init__(self, html: str, title: str, sections: list[str], seconds: float):
        self.html, self.title, self.sections, self.seconds = html, title, sections, seconds
        #: report results the page computed and could not store (a read-only
        #: session): store.store_in_file stores them
        self.unstored: store.Pending | None = None
        #: how many of the page's report results were read from the database
        self.stored_results = 0

    def __str__(self):
        return self.html

    def __len__(self):
        return len(self.html.encode("utf-8"))

    def save(self, path) -> Path:
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(self.html, encoding="utf-8")
        os.replace(tmp, p)
        return p

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html_lib.escape(self.html, quote=True)}" title="{html_lib.escape(self.title)}" '
                'style="width:100%;height:900px;border:1px solid #ddd" sandbox="allow-scripts"></iframe>')


def _render_page(title: str, subtitle: str, sections: list[RenderedSection], t0: float) -> Page:
    js = _asset("page.js")
    # the page's Content-Security-Policy runs this script only, by its hash: a
    # script that got into the page any other way would not run, and no
    # address is ever fetched (default-src 'none')
    js_hash = "sha256-" + base64.b64encode(hashlib.sha256(str(js).encode("utf-8")).digest()).decode()
    page = _env().get_template("page.html.j2").render(
        title=title, subtitle=subtitle, sections=sections, version=__version__,
        css=_asset("page.css"), js=js, js_hash=js_hash)
    return Page(page, title, [s.id for s in sections], time.perf_counter() - t0)


def render_sections(ctx, sections) -> list[RenderedSection]:
    out = []
    for sec in sections:
        if sec.report is not None and not Reports.has(sec.report):
            continue
        view = (sec.view or generic_view)(ctx, sec)
        if view.get("hide"):
            continue
        html = _env().get_template(f"sections/{sec.template}.html.j2").render(ctx=ctx, sec=sec, **view)
        out.append(RenderedSection(sec.id, sec.title, Markup(html)))
    return out


# -- the page of a run -----------------------------------------------------------------------------

#: derived table macros that several of the page's reports read (gpu-time and its
#: variants, temporal, idle, queue; gpu_windows: their GPU windows and the notes
#: on unlaunched events): on the page's connection each is computed
#: once, for its default arguments, into a TEMP table; a TEMP macro and view of
#: the same name, which DuckDB finds before the database's, read that table, and
#: calls with other arguments run the packaged SQL (kept as
#: duckprof_page_sql_<name>). The reports' SQL is unchanged, and so are their
#: numbers (tests compare the page with the CLI's).
SHARED_VIEWS = ("gpu_activity", "gpu_windows", "gpu_busy_intervals", "gpu_idle_intervals", "queue_depth")
#: plain views several reports (or one report's several queries) read, shared when one
#: of those reports is registered, in this order (a view shared before another is read
#: from its table): kernel_categories (categories, categories --by-step, steps, steps
#: --summary) and collectives (collectives, ranks). launches, kernel_estimates and
#: memory_events read tables filled at load (the derived tables): nothing to share.
SHARED_PLAIN_VIEWS = {"kernel_categories": ("categories", "steps"), "collectives": ("collectives", "ranks")}

_MACRO = re.compile(r"CREATE OR REPLACE MACRO (\w+)\((.*?)\) AS TABLE", re.S)


def share_view(con, name: str, run: str | None = None):
    """Compute view `name` once on `con` (see SHARED_VIEWS); with `run`, its
    rows of that run's traces only when it has a row per trace (the page's
    reports read no others)."""
    header = sqlfiles.view_headers()[name]
    sql = sqlfiles.view_sql(header)
    m = _MACRO.search(sql)
    per_trace = any(c.name == "trace_id" for c in header.columns)  # kernel_categories is not
    scope, bind = ("", None) if run is None or not per_trace else (
        " WHERE trace_id IN (SELECT trace_id FROM trace_files WHERE run = $run)", {"run": run})
    if f"CREATE OR REPLACE VIEW {name} AS" in sql and not m:
        # a plain view: its rows once, a TEMP view of the same name reads them
        con.execute(f"CREATE OR REPLACE TEMP TABLE duckprof_page_{name} AS SELECT * FROM {name}{scope}", bind)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM duckprof_page_{name}")
        return
    if not m or m.group(1) != name:
        raise ValueError(f"sql/views: {name} is neither a view nor a table macro")
    params = [p.split(":=") for p in m.group(2).split(",")]
    names = [n.strip() for n, _ in params]
    defaults = " AND ".join(f"{n.strip()} IS NOT DISTINCT FROM {d.strip()}" for n, d in params)
    # the macro's own statement (DuckDB splits the file: a ';' in a comment is not an end)
    macro = next(st.query for st in con.extract_statements(sql[m.start():]))
    table = f"duckprof_page_{name}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM {name}(){scope}", bind)
    con.execute(macro.replace(f"CREATE OR REPLACE MACRO {name}(",
                              f"CREATE OR REPLACE TEMP MACRO duckprof_page_sql_{name}(", 1))
    args = ", ".join(f"{n} := {n}" for n in names)
    con.execute(f"""CREATE OR REPLACE TEMP MACRO {name}({m.group(2)}) AS TABLE
        SELECT * FROM {table} WHERE {defaults}
        UNION ALL
        SELECT * FROM duckprof_page_sql_{name}({args}) WHERE NOT ({defaults})""")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {table}")


def shared_names() -> tuple[str, ...]:
    """The views page_connection computes once, in order: SHARED_VIEWS, then
    the SHARED_PLAIN_VIEWS one of whose readers is registered."""
    return (*SHARED_VIEWS, *(name for name, readers in SHARED_PLAIN_VIEWS.items()
                             if name in sqlfiles.view_headers() and any(Reports.has(r) for r in readers)))


def page_connection(session, run: str | None = None, share: bool = True):
    """A connection of its own for the page (a cursor on the session's
    database, closed when the page is written), with the packaged views (a
    read-only session keeps them as TEMP objects on its own connection, which
    a cursor does not see) and, unless share is False, the shared views
    computed once (share_views)."""
    con = session.con.cursor()
    try:
        if session.read_only:
            create_views(con, temp=True)
        if share:
            share_views(con, run)
    except BaseException:
        con.close()
        raise
    return con


def share_views(con, run: str | None = None):
    """The shared views computed once on the page's connection (with `run`:
    for that run's traces only, a database of many runs computes the page's
    run alone)."""
    for name in shared_names():
        share_view(con, name, run)


def build(session, run: str | None = None, top: int = TOP_KERNELS, progress=None) -> Page:
    """The page of one run of `session` (all its data when run is None; a
    database file holding one run: that run's page, whose results `load
    --prepare-html` stores).
    progress: a callable for phase messages (the report being computed); its
    attach(con), if any, is called with the page's connection, its done()
    when the reports have run (cli_common.Progress)."""
    t0 = time.perf_counter()
    if run is None and session.db:
        runs = session.con.execute("SELECT DISTINCT run FROM traces LIMIT 2").fetchall()
        run = runs[0][0] if len(runs) == 1 else None
    if run is not None:
        session._require_run(run)
    key = store.inputs_key(session, run)
    con = page_connection(session, run, share=False)
    drawn = hasattr(progress, "attach")
    try:
        if drawn:
            progress.attach(con)
        stored = store.read(con, run, key)
        rep = Reports(con, run, materialized=shared_names(), stored=stored,
                      prepare=lambda: share_views(con, run), say=progress)
        traces = rep.get("traces")
        if traces.instead:
            raise DuckprofError("; ".join(traces.instead))
        ctx = Context(rep, run, traces, rep.get("devices"), top=top)
        sections = render_sections(ctx, SECTIONS)
    finally:
        if drawn:
            progress.done()  # it polls the connection: before it closes
        con.close()
    runs = sorted({t["run"] for t in traces.rows})
    files = [t["file_name"] for t in traces.rows]
    title = f"duckprof: run {run}" if run is not None else (
        f"duckprof: {files[0]}" if len(files) == 1 else f"duckprof: {len(files)} traces")
    where = f"{session.db}" if session.db else "traces loaded in memory"
    subtitle = (f"{len(files)} trace(s) in run(s) {', '.join(runs)}; from {where}" if len(files) > 1
                else f"{files[0]} (run {runs[0]}); from {where}")
    page = _render_page(title, subtitle, sections, t0)
    page.stored_results = len(rep._memo) - len(rep.computed)
    if key is not None and rep.computed:
        pending = store.encode(run, key, rep.computed)
        if session.read_only:
            page.unstored = pending
        else:
            try:
                store.write(session.con, pending)
            except duckdb.Error as e:
                if interrupts.is_interrupt(e):
                    raise
                page.unstored = pending  # the page stands; the next one computes again
    return page


def prepare(db: str, run: str, session=None, wait: float = 0, progress=None) -> Page:
    """What the first `duckprof html --db DB --run RUN` computes and stores,
    done now (`duckprof load --prepare-html`, after the load has committed):
    the page of `run` is built and its report results stored under the same
    key (store.inputs_key), so that the next page reads them. On `session`
    (writable, on `db`) when given; otherwise on a read-only session of its
    own (other readers go on), the file then opened for writing only to
    store (store.store_in_file), as `duckprof html` does. Stored in one
    transaction: a failure or an interrupt stores nothing. Raises
    DuckprofError saying why the results were not stored."""
    from ..session import Session
    phase.mark("preparing html")  # for tests (duckprof/phase.py)
    if session is None:
        with Session(db, read_only=True, wait=wait) as s:
            page = build(s, run=run, progress=progress)
    else:
        page = build(session, run=run, progress=progress)
    interrupts.check()  # a signal DuckDB let pass: nothing is stored
    if page.unstored is not None and session is None:
        why = store.store_in_file(db, page.unstored, wait=wait)
        if why:
            raise DuckprofError(why)
    elif page.unstored is not None:
        store.write(session.con, page.unstored)  # the build kept its page; here the error is raised
    elif store.code_key() is None:
        raise DuckprofError("this installation of duckprof has no SQL sources to key stored results by")
    return page
