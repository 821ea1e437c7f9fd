"""What the HTML tests share: reading the report tables out of a page (with
Python's html.parser, or from the DOM in the browser tests), turning a
table's data-options into CLI arguments, and checking that a page table's
cells are the CLI report's cells."""

from __future__ import annotations

import csv
import io
import json
import math
from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self._t, self._row, self._cell = [], None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "data-report" in a:
            self._t = {"report": a["data-report"], "options": json.loads(a["data-options"]),
                       "declared_rows": int(a["data-rows"]), "columns": [], "rows": [], "texts": []}
        elif self._t is not None and tag == "th":
            self._t["columns"].append(a["data-col"])
        elif self._t is not None and tag == "tr":
            self._row, self._texts = [], []
        elif self._t is not None and tag == "td":
            self._row.append(a["data-v"])
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._texts.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._t is not None and self._row:
            self._t["rows"].append(self._row)
            self._t["texts"].append(self._texts)
            self._row = None
        elif tag == "table" and self._t is not None:
            self.tables.append(self._t)
            self._t = None


def page_tables(html: str) -> list[dict]:
    """Every report table of a page: report, options, columns, rows (the
    exact values, data-v) and texts (what a person reads)."""
    p = _Tables()
    p.feed(html)
    return p.tables


def cli_options(options: dict) -> list[str]:
    """A table's data-options as command-line options: {"by_step": true,
    "limit": 5, "statuses": ["slower", "added"]} -> --by-step --limit 5 --status slower,added."""
    out = []
    for k, v in options.items():
        flag = "--status" if k == "statuses" else "--" + k.replace("_", "-")
        if v is True:
            out.append(flag)
        elif v in (False, None):
            continue
        elif isinstance(v, list):
            out += [flag, ",".join(map(str, v))]
        else:
            out += [flag, str(v)]
    return out


def csv_rows(text: str) -> tuple[list[str], list[list[str]]]:
    r = list(csv.reader(io.StringIO(text)))
    return r[0], r[1:]


def same_cell(a: str, b: str) -> bool:
    """Equal, or equal floats but for the last digits: DuckDB's parallel sums
    (the idle score's standard deviations) may add in another order from one
    run to the next (as in tests/test_report_snapshots.py)."""
    if a == b:
        return True
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    except ValueError:
        return False


def same_row(a, b) -> bool:
    return len(a) == len(b) and all(same_cell(x, y) for x, y in zip(a, b))


def assert_rows_of(page_table: dict, header: list[str], rows: list[list[str]]):
    """Every row of the page table, on its columns, is a row of the CLI's
    output, cell for cell (in any order: the overview's top findings are the
    report's rows ranked over every trace)."""
    idx = [header.index(c) for c in page_table["columns"]]
    projected = [[r[i] for i in idx] for r in rows]
    for row in page_table["rows"]:
        assert any(same_row(p, row) for p in projected), (
            f"{page_table['report']} {page_table['options']}: page row {row} is not a row of the CLI's output "
            f"(columns {page_table['columns']})")


def assert_subsequence(page_table: dict, header: list[str], rows: list[list[str]]):
    """The page table's rows, on its columns, appear in the CLI's rows in the
    same order, cell for cell (the page shows a device's rows, or the first N)."""
    idx = [header.index(c) for c in page_table["columns"]]
    projected = [[r[i] for i in idx] for r in rows]
    at = 0
    for row in page_table["rows"]:
        while at < len(projected) and not same_row(projected[at], row):
            at += 1
        assert at < len(projected), (f"{page_table['report']} {page_table['options']}: page row {row} is not "
                                     f"a row of the CLI's output (columns {page_table['columns']})")
        at += 1
