"""Render query results: table (tabulate), csv, json, markdown, parquet."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import date, datetime
from decimal import Decimal

import duckdb
from tabulate import tabulate

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
    s = str(v)
    s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in s)
    if width and len(s) > width:
        s = s[: max(width - 1, 1)] + "…"
    return s


def _nested(v):
    """A JSON column's value as the value it holds (json: nested, not a string)."""
    if not isinstance(v, str):
        return v
    try:
        return json.loads(v)
    except ValueError:
        return v


def to_text(columns, rows, fmt: str = "table", name_width: int | None = 80,
            json_columns=()) -> str:
    """Format (columns, rows) as text in one of the text formats. json_columns:
    indexes of JSON-typed columns, nested as values in the json format."""
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
        numeric = [all(isinstance(r[i], (int, float, Decimal)) or r[i] is None for r in rows)
                   for i in range(len(columns))]
        align = ["right" if n else "left" for n in numeric]
        tf = "github" if fmt == "markdown" else "simple"
        return tabulate(cells, headers=list(columns), tablefmt=tf, colalign=align,
                        disable_numparse=True) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def emit(rel: duckdb.DuckDBPyRelation, fmt: str = "table", output: str | None = None,
         name_width: int | None = 80, echo=print) -> int:
    """Write a relation to `output` (or print it); returns the row count."""
    if fmt == "parquet":
        if not output:
            raise ValueError("--format parquet needs --output FILE")
        rel.write_parquet(output)
        return -1
    columns = rel.columns
    rows = rel.fetchall()
    json_columns = {i for i, t in enumerate(rel.types) if str(t) == "JSON"}
    text = to_text(columns, rows, fmt, name_width=None if fmt in ("csv", "json") else name_width,
                   json_columns=json_columns)
    if output:
        with open(output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        echo(text.rstrip("\n"))
    return len(rows)
