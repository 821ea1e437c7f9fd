"""Render query results: table (tabulate), csv, json, markdown, parquet."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from datetime import date, datetime
from decimal import Decimal

import duckdb

from . import interrupts


def _visible_width(s: str) -> int:
    """tabulate's width of a cell on screen (wide characters count 2).
    tabulate (and wcwidth) are imported by the first cell that needs them:
    a table of printable ASCII is drawn without (_simple_table). None in
    place of this function: every row is drawn (_widest_rows)."""
    global _visible_width
    try:
        from tabulate import _visible_width as measure
    except ImportError:  # pragma: no cover
        measure = len
    _visible_width = measure
    return measure(s)

FORMATS = ("table", "csv", "json", "markdown", "parquet")


def _jsonable(v):
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


def _cell(v, width: int | None):
    if v is None:
        return ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:,.3f}" if abs(v) < 1e15 else f"{v:.4g}"
    if isinstance(v, Decimal):
        return _cell(float(v), width)
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}" if abs(v) < 10**15 else str(v)
    if isinstance(v, dict):  # a MAP (runs.tags): key=value, ...
        return _cell(", ".join(f"{k}={x}" for k, x in v.items()), width)
    s = str(v)
    if not s.isprintable():
        s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in s)
    if width and len(s) > width:
        s = s[: max(width - 1, 1)] + "…"
    return s


def _distinct_cuts(cells, texts, width: int) -> list[str]:
    """A column's cells (texts cut to `width` by _cell) where two different
    texts were cut to the same cell (templated kernel names share their first
    40-100 characters: `sm90_xmma_gemm_bf16bf16_bf16f32…` twice), each of
    those shows its start, then the part from the word where it differs from
    the others: `sm90_xmma_…128x128x64_warpgroup…`. Same width as the plain
    cut, so the table keeps its layout."""
    cut = {}  # cell -> its texts, in the order of the rows (a set's order would vary from run to run)
    for c, t in zip(cells, texts):
        if len(t) > width:
            cut.setdefault(c, {})[t] = None
    clashes = {c: ts for c, ts in cut.items() if len(ts) > 1}
    if not clashes:
        return list(cells)
    head = max(4, width // 3)
    room = width - head - 2  # head, "…", the middle part, "…"

    def window(t, differs, back):
        start = differs
        # back to the start of the word that differs (GeluCUDAKernelImpl, tilesize128x64x64)
        while start > max(head + 1, differs - back) and (t[start - 1].isalnum() or t[start - 1] == "_"):
            start -= 1
        if start + room + 1 >= len(t):  # its end fits: no second "…"
            return t[:head] + "…" + t[len(t) - (width - head - 1):]
        return t[:head] + "…" + t[start:start + room] + "…"

    def alike(got):  # the texts shown the same, in groups of 2 or more
        same = {}
        for t, s in got.items():
            same.setdefault(s, []).append(t)
        return [ts for ts in same.values() if len(ts) > 1]

    def assign(ts, shown, after=-1):
        # from where the texts part ways; those that still look alike, from where they do
        at = len(os.path.commonprefix(list(ts)))
        if at <= after:
            return
        got = {t: window(t, at, min(12, room - 4)) for t in ts}
        shown.update(got)
        for more in alike(got):
            assign(more, shown, at)

    def clashing(got):  # how many texts look like another
        return sum(len(ts) for ts in alike(got))

    shown = {}
    for ts in clashes.values():
        assign(ts, shown)
    for _ in range(3):  # two branches may end alike by chance: those from where they part
        groups = alike(shown)
        if not groups:
            break
        for ts in groups:
            # kept only when fewer look alike: texts that differ in two places too far apart for
            # one window would otherwise undo each other (<8, ...AUnaryFunctor and <4, ...AUnaryFunctor)
            trial = dict(shown)
            assign(ts, trial)
            if clashing(trial) < clashing(shown):
                shown = trial
    shown = {t: s for t, s in shown.items()
             if s.replace("…", "").isascii() and s.isprintable()}  # else the plain cut (its width on screen is known)
    return [shown.get(t, c) if c in clashes else c for c, t in zip(cells, texts)]


def _nested(v):
    """A JSON column's value as the value it holds (json: nested, not a string)."""
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


def to_text(columns, rows, fmt: str = "table", name_width: int | None = 80,
            json_columns=(), right_aligned=None) -> str:
    """Format (columns, rows) as text in one of the text formats. json_columns:
    indexes of JSON-typed columns, nested as values in the json format;
    right_aligned: the column indexes to align right (default: the numeric ones)."""
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        w.writerows([["" if v is None else v for v in r] for r in rows])
        return buf.getvalue()
    if fmt == "json":
        if json_columns:
            rows = [[_nested(v) if i in json_columns else v for i, v in enumerate(r)] for r in rows]
        return json.dumps([dict(zip(columns, (_jsonable(v) for v in r))) for r in rows],
                          indent=1, ensure_ascii=False) + "\n"
    if fmt in ("table", "markdown"):
        cells = [[_cell(v, name_width) for v in r] for r in rows]
        if name_width:
            for k in range(len(columns)):
                if any(r[k].endswith("…") for r in cells):
                    told = _distinct_cuts([r[k] for r in cells], [_cell(r[k], None) for r in rows], name_width)
                    for r, c in zip(cells, told):
                        r[k] = c
        numeric = [i in right_aligned if right_aligned is not None else
                   all(isinstance(r[i], (int, float, Decimal)) or r[i] is None for r in rows)
                   for i in range(len(columns))]
        if fmt == "table" and cells:
            text = _simple_table(list(columns), cells, numeric)
            if text is not None:
                return text
        align = ["right" if n else "left" for n in numeric]
        tf = "github" if fmt == "markdown" else "simple"
        from tabulate import tabulate
        return tabulate(cells, headers=list(columns), tablefmt=tf, colalign=align,
                        disable_numparse=True) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _simple_table(headers, cells, right) -> str | None:
    """tabulate(cells, headers, tablefmt="simple", colalign=..., disable_numparse=True)
    + newline, drawn without tabulate's per-cell type detection and width calls (5x
    quicker on a table of 10,000 rows): the same text (tests/test_render.py
    compares the two), or None when a cell or heading has what makes tabulate take
    another path (a line break, an escape sequence, another control character).
    right: per column, whether it is aligned right; cells and headings are strings."""
    def odd(s):  # a line break, an escape sequence, another control character
        if s.isascii():
            return not s.isprintable()
        return "\n" in s or "\r" in s or "\x1b" in s or _visible_width is None

    if any(odd(s) for s in headers) or any(odd(s) for row in cells for s in row):
        return None
    cols = [[s.strip() for s in col] for col in zip(*cells)]
    if len(cols) != len(headers):
        return None
    def width(s):  # on screen (wide characters count 2)
        return len(s) if s.isascii() else _visible_width(s)

    widths = {s: width(s) for s in headers}
    for col in cols:
        for s in col:
            if s not in widths:
                widths[s] = width(s)
    colw = [max(widths[h] + 2, max(widths[s] for s in col)) for h, col in zip(headers, cols)]
    padded = []
    for col, w, r in zip(cols, colw, right):
        spec = ">" if r else "<"
        padded.append([f"{s:{spec}{w - widths[s] + len(s)}}" for s in col])
    lines = ["  ".join(f"{h:{'>' if r else '<'}{w - widths[h] + len(h)}}"
                       for h, w, r in zip(headers, colw, right)).rstrip(),
             "  ".join("-" * w for w in colw).rstrip()]
    lines.extend("  ".join(row).rstrip() for row in zip(*padded))
    return "\n".join(lines) + "\n"


def emit(rel: duckdb.DuckDBPyRelation, fmt: str = "table", output: str | None = None,
         name_width: int | None = 80, echo=print, documented=None, wide: bool = False,
         width: int | None = None) -> int:
    """Write a relation to `output` (or print it); returns the row count.
    documented: a report's header columns (sqlfiles.Column): table and markdown
    output then read as a report (see report_table); csv, json and parquet keep
    every column with exact values whatever it is."""
    if fmt == "parquet":
        if not output:
            raise ValueError("--format parquet needs --output FILE")
        rel.write_parquet(output)
        return -1
    columns = rel.columns
    rows = rel.fetchall()
    interrupts.check()  # rows of a statement that was interrupted are not printed
    json_columns = {i for i, t in enumerate(rel.types) if str(t) == "JSON"}
    if documented is not None and fmt in ("table", "markdown"):
        text = report_table(columns, rows, documented, fmt=fmt, wide=wide, name_width=name_width,
                            width=width or terminal_width())
    else:
        text = to_text(columns, rows, fmt, name_width=None if fmt in ("csv", "json") else name_width,
                       json_columns=json_columns)
    if output:
        with open(output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        echo(text.rstrip("\n"))
    return len(rows)


# -- reports in a terminal ------------------------------------------------------------
# A report's default table is for people: units in the cells (8.3 µs, 44.6
# GFLOP, 36.6 MB) or in the heading (busy %, TFLOP/s), no column that holds the
# same value on every row (said once below the table instead), the header's
# [wide] columns only with --wide, and the longest text column narrowed so the
# table fits the terminal (120 columns when it is not one).

IDENTITY = ("run", "rank", "trace_id", "device")
TIME_UNITS = {"_ns": 1, "_us": 1e3, "_ms": 1e6, "_s": 1e9}
RATE_UNITS = {"_tflops": "TFLOP/s", "_gbps": "GB/s", "_tops": "TOP/s"}


def terminal_width() -> int:
    import os
    import shutil
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    return shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120


def note_lines(note: str, width: int | None) -> list[str]:
    """A report's note as printed: one line 'note: ...' (a pipe, a log, a
    grep keep one line a note), or, for a terminal of `width` columns,
    wrapped at word boundaries with the continuation lines indented under
    its text (a note can run to 400 characters: long kernel names, how an
    estimate was made)."""
    if not width:
        return [f"note: {note}"]
    import textwrap
    return textwrap.wrap(note, max(40, width), initial_indent="note: ", subsequent_indent="      ",
                         break_long_words=False, break_on_hyphens=False) or ["note:"]


def _si(v: float, unit: str, base: float = 1000.0) -> str:
    for prefix in ("", "k", "M", "G", "T", "P", "E"):
        if abs(v) < base or prefix == "E":
            break
        v /= base
    digits = 0 if abs(v) >= 100 or float(v).is_integer() else (1 if abs(v) >= 10 else 2)
    return f"{v:.{digits}f} {prefix}{unit}"


def human_time(ns: float) -> str:
    a = abs(ns)
    for limit, div, unit in ((1e3, 1, "ns"), (1e6, 1e3, "µs"), (1e9, 1e6, "ms")):
        if a < limit:
            v = ns / div
            break
    else:
        v, unit = ns / 1e9, "s"
    digits = 0 if (abs(v) >= 100 or unit == "ns") else (1 if abs(v) >= 10 else 2)
    return f"{v:,.{digits}f} {unit}"


# words of column names that a heading writes as the hardware and formats
# do ("blocks per SM", "GPU busy", "NCCL kernels"), not as snake_case does
HEADING_WORDS = {"cpu": "CPU", "gpu": "GPU", "sm": "SM", "sms": "SMs", "dram": "DRAM", "nccl": "NCCL",
                 "bf16": "BF16", "fp16": "FP16", "fp32": "FP32", "fp8": "FP8", "tf32": "TF32", "json": "JSON"}


def _label(stem: str) -> str:
    """A column name's words as a heading: underscores to spaces, HEADING_WORDS."""
    return " ".join(HEADING_WORDS.get(w, w) for w in stem.split("_"))


def column_kind(name: str) -> tuple[str, str]:
    """(kind, label) of a report column from its name: time (a unit suffix:
    cells like 8.3 µs), rate (TFLOP/s, GB/s, %: the unit goes in the heading),
    pct (cells like 15.0%), pp (percentage points, the difference of two
    percentages: cells like -7.13 pp), flops / bytes (cells like 44.6 GFLOP,
    36.6 MB), or plain."""
    for suffix in TIME_UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return "time", _label(name[: -len(suffix)])
    if name.endswith("_pct"):
        return "pct", _label(name[:-4])
    if name.endswith("_pp"):
        return "pp", _label(name[:-3])
    for suffix, unit in RATE_UNITS.items():
        if name.endswith(suffix):
            stem = _label(name[: -len(suffix)]).removeprefix("achieved").strip()
            return "rate", f"{stem} {unit}".strip()
    if name == "flops" or name.endswith("_flops"):
        return "flops", _label(name)
    if name == "bytes" or name.endswith("_bytes"):
        return "bytes", _label(name.removesuffix("_bytes"))
    return "plain", _label(name)


def _human(v, kind: str, name: str):
    if isinstance(v, datetime):  # when a run was loaded: to the second (csv and json keep the microseconds)
        return v.replace(microsecond=0)
    if v is None or not isinstance(v, (int, float, Decimal)) or isinstance(v, bool):
        return v
    f = float(v)
    if not math.isfinite(f):
        return str(f)
    shown = _human_number(f, v, kind, name)
    # every table (report_table, human_cell) alike: '-0.00%' -> '0.00%'
    return _unsigned_zero(shown) if isinstance(shown, str) else shown


def _human_number(f: float, v, kind: str, name: str):
    if kind == "time":
        return human_time(f * next(m for s, m in TIME_UNITS.items() if name.endswith(s)))
    if kind == "flops":
        return _si(f, "FLOP")
    if kind == "bytes":
        return _si(f, "B")
    if kind == "rate":
        return _three_digits(f)
    if kind in ("pct", "pp"):
        unit = "%" if kind == "pct" else " pp"
        return (f"{f:,.0f}{unit}" if abs(f) >= 1000 else f"{f:.1f}{unit}" if abs(f) >= 10 else f"{f:.2f}{unit}")
    if isinstance(v, (float, Decimal)):
        # a whole DOUBLE (a mean pending of exactly 217.0) without decimals, as
        # an integer and as human_cell shows it (the table read '217.000')
        return _three_digits(f) if not f.is_integer() else int(f) if abs(f) < 1e15 else v
    return v


def _three_digits(f: float) -> str:
    """A rate or a plain fraction to three significant digits, as times (a mean
    queue depth of 662.809 reads 663, 312.0 TFLOP/s 312), at least three
    decimals below 1 (0.116), and a small non-zero value not as 0 (a gloo
    all_reduce's 0.000123 GB/s); below 1e-9, and zero, 0."""
    a = abs(f)
    if a < 1e-9:
        return "0"
    digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else max(3, 2 - math.floor(math.log10(a)))
    return f"{f:,.{digits}f}"


def human_cell(col: str, v) -> str:
    """The text of one value of column `col` for people (as a report's
    table cell: 8.31 µs, 44.6 GFLOP, 15.0%); a plain number whole without
    decimals, a fraction to three significant digits (662.809 -> 663,
    1.143 -> 1.14; 0.116 keeps three decimals). Also a metric of diff's summary by its name
    (gpu_busy_us_per_step is a time)."""
    if v is None:
        return ""
    col = col.removesuffix("_per_step")
    kind = column_kind(col)[0]
    shown = _human(v, kind, col)
    if isinstance(shown, float):  # a whole value beyond 1e15 (_human keeps it)
        return f"{shown:,.3f}"
    if isinstance(shown, int) and not isinstance(shown, bool):
        return f"{shown:,}"
    s = str(shown)
    return s[5:] if s.startswith("void ") else s


def _unsigned_zero(s: str) -> str:
    """'-0.00 pp' -> '0.00 pp': a value that rounds to zero where it is shown
    has no sign (a tiny negative delta would read as a decrease)."""
    if s.startswith("-") and not any(c in "123456789" for c in s):
        return s[1:]
    return s


def metric_cell(metric: str, col: str, v) -> str:
    """The text of column `col` of diff's summary row about `metric` (the
    columns metric, a, b, delta, delta_pct): a, b and delta in the metric's
    unit, but the delta of a percentage in percentage points (gpu_busy_pct
    22.1% -> 15.0%: delta -7.13 pp, which a relative change would not be);
    delta_pct a percentage (the SQL leaves it NULL for a percentage metric)."""
    if col == "delta" and metric.endswith("_pct"):
        metric = metric[:-4] + "_pp"
    return human_cell(metric if col in ("a", "b", "delta") else col, v) if col != "metric" else metric


def _widest_rows(rows, limit, widths: dict, fixed: dict | None = None):
    """The rows of `rows` that draw (to_text, name_width=limit) a table exactly
    as wide as all of them: tabulate pads each column to its widest cell, so
    the rows holding each column's widest cell, and any row with a cell whose
    length differs from its width on screen (len() counts the former).
    widths: a cache of the cells' widths, kept between calls; fixed: a cache of
    the rows picked for each column whose cells are shorter than 24 characters
    (the same at every limit report_table tries), kept between calls."""
    if _visible_width is None:
        return rows
    picked = set()
    for k in range(len(rows[0]) if rows else 0):
        got = fixed.get(k) if fixed is not None else None
        if got is None:
            got, short, widest = set(), True, (-1, 0)
            for i, r in enumerate(rows):
                s = _cell(r[k], limit)
                w = widths.get(s)
                if w is None:
                    w = widths[s] = len(s) if s.isascii() and s.isprintable() else _visible_width(s)
                if w != len(s):
                    got.add(i)
                if w > widest[0]:
                    widest = (w, i)
                short = short and len(s) < 24
            got.add(widest[1])
            if short and fixed is not None:
                fixed[k] = got
        picked |= got
    return [rows[i] for i in sorted(picked)]


def split_constant(columns, rows, keep) -> tuple[list[int], list[int]]:
    """What a table for people (a report's terminal table, a table of the
    html page) says once below it instead of in a column: of a table of 2+
    rows, any column holding one value on every row; of a one-row table, only
    a column that says which trace it is (run, rank, trace id, device). The
    columns `keep` (indexes into `columns` and each row, in order) are
    looked at in order, and go only while more than 2 are left. Returns
    (the columns kept, the columns said once below); a column empty on every
    row goes in neither (left out), in a one-row table too (an empty MAP or
    list counts as empty: `runs`' tags of an untagged run)."""
    keep, said = list(keep), []
    for i in list(keep):
        first = rows[0][i]
        empty = first is None or (isinstance(first, (dict, list, str)) and not first)
        if ((len(rows) > 1 or columns[i] in IDENTITY or empty) and len(keep) > 2
                and all(r[i] == first for r in rows)):
            keep.remove(i)
            if not empty:
                said.append(i)
    return keep, said


def said_label(columns, col: str) -> str:
    """What names column `col` where its one value is said below a table
    ('busy 30.8%', 'trace id 1', 'dataloader 0 ns'), as its heading without
    the ' %' its cell carries; a time beside a column of its name is
    'step time' (step_us beside step)."""
    kind, label = column_kind(col)
    if kind == "time" and label != col and label in columns:
        label += " time"
    return label


def told_apart(columns, rows, keep, hidden=None) -> list[int]:
    """The columns `keep` (indexes), and the first identity column (run,
    rank, trace id, device) of `hidden` (default: every one not kept) that
    tells apart rows the kept identity columns do not: ranks' [wide]
    trace_id, when the traces have no rank or two traces are of one rank.
    Never rows a reader cannot tell apart."""
    shown_ids = [i for i in keep if columns[i] in IDENTITY]
    for i in (range(len(columns)) if hidden is None else hidden):
        if columns[i] in IDENTITY and i not in keep:
            seen = {}
            if any(seen.setdefault(tuple(r[j] for j in shown_ids), r[i]) != r[i] for r in rows):
                return sorted(list(keep) + [i])
    return list(keep)


def report_table(columns, rows, documented, fmt="table", wide=False, name_width=60, width=120) -> str:
    """A report's rows as a table for people (see the comment above)."""
    doc = {c.name: c for c in documented}
    keep = [i for i, c in enumerate(columns) if wide or not (doc.get(c) and doc[c].wide)]
    if not rows:
        return "(no rows)\n"
    constant = []
    if not wide:
        keep, said = split_constant(columns, rows, keep)
        for i in said:
            shown = _human(rows[0][i], column_kind(columns[i])[0], columns[i])
            constant.append(f"{said_label(columns, columns[i])} {_cell(shown, 40)}")
        keep = told_apart(columns, rows, keep)
    kinds = {i: column_kind(columns[i]) for i in keep}
    headers = [kinds[i][1] for i in keep]
    # busy_us and busy_pct: "busy" and "busy %"; then step and step_us: "step" and "step time",
    # also when step is left out (empty: a trace without steps), as said_label says it
    for kind, suffix in (("pct", " %"), ("time", " time")):
        for k, i in enumerate(keep):
            if kinds[i][0] == kind and (headers.count(headers[k]) > 1
                                        or kind == "time" and headers[k] != columns[i] and headers[k] in columns):
                headers[k] += suffix
    table_rows = [[_human(r[i], kinds[i][0], columns[i]) for i in keep] for r in rows]
    # kernel names: "void " says nothing
    table_rows = [[v[5:] if isinstance(v, str) and v.startswith("void ") else v for v in r] for r in table_rows]
    # the widest text column gives way until the table fits (down to 24 characters)
    text_cols = [k for k, i in enumerate(keep)
                 if any(isinstance(r[k], str) and len(r[k]) > 24 for r in table_rows)]
    numeric = {k for k, i in enumerate(keep)
               if all(isinstance(r[i], (int, float, Decimal)) and not isinstance(r[i], bool) or r[i] is None
                      for r in rows)}
    limit = None if wide else (name_width or 10**6)
    dropped, widths, fixed = [], {}, {}

    def too_wide():
        # drawn from the few rows that make the table as wide as all of them (quick on long tables)
        text = to_text(headers, _widest_rows(table_rows, limit, widths, fixed), fmt, name_width=limit,
                       right_aligned=numeric)
        return max((len(line) for line in text.splitlines()), default=0) > width

    while not wide and fmt == "table" and text_cols and limit > 24 and too_wide():
        limit = max(24, min(limit, max(len(r[k]) for r in table_rows for k in text_cols
                                       if isinstance(r[k], str))) - 4)
    while not wide and fmt == "table" and len(headers) > 2 and too_wide():
        # still too wide: the last columns go, and the footer names them
        dropped.insert(0, columns[keep.pop()])
        headers.pop()
        table_rows = [r[:-1] for r in table_rows]
    text = to_text(headers, table_rows, fmt, name_width=limit, right_aligned=numeric)
    import textwrap
    if constant:
        text += textwrap.fill("(every row: " + "; ".join(constant) + ")", width) + "\n"
    left_out = [c for i, c in enumerate(columns) if i not in keep and doc.get(c) and doc[c].wide or c in dropped]
    if left_out and not wide:
        text += textwrap.fill(f"({len(left_out)} more column(s) with --wide: {', '.join(left_out)})", width) + "\n"
    return text
