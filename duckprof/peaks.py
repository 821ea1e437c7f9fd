"""Datasheet peaks of GPUs: the packaged table (duckprof/data/peaks.csv) and
the `device_peaks` database table seeded from it.

How a traced device finds its row is SQL (sql/views/device_peak.sql), so a
plain DuckDB client gets the same answer:

1. by name: rows whose ``device_pattern`` (case-insensitive RE2 regex) is found
   in deviceProperties ``name``; the lowest ``priority`` wins;
2. only if no pattern matches (ROCm often says "AMD Radeon Graphics" or ""):
   rows with ``fallback_mem_gib_min`` set whose ``sm_count`` equals the
   device's SM/CU count and whose [fallback_mem_gib_min, fallback_mem_gib_max]
   holds totalGlobalMem / 2^30; the lowest ``priority`` wins.

Users add devices, or override a packaged row (the lower priority wins), with plain SQL on a
persistent database, e.g.::

    INSERT INTO device_peaks (priority, device_pattern, device, vendor, fp32_tflops, bf16_tflops, dram_gbps)
    VALUES (1, 'RTX 4090', 'my RTX 4090', 'NVIDIA', 82.6, 165.2, 1008);  -- device: a name of its own
"""

from __future__ import annotations

import csv
import hashlib
import io
from importlib import resources

#: Columns of peaks.csv and of the device_peaks table, in order.
COLUMNS = ("priority", "device_pattern", "device", "vendor", "memory_gb", "sm_count",
           "fp64_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops",
           "int8_tops", "fp4_tflops", "dram_gbps", "fallback_mem_gib_min", "fallback_mem_gib_max", "source")
_INTS = {"priority", "sm_count"}
_TEXT = {"device_pattern", "device", "vendor", "source"}


def _packaged_text() -> str:
    return resources.files("duckprof").joinpath("data/peaks.csv").read_text(encoding="utf-8")


def _interconnect_text() -> str:
    return resources.files("duckprof").joinpath("data/interconnect.csv").read_text(encoding="utf-8")


def packaged_digest() -> str:
    """Identifies the packaged tables (peaks.csv, interconnect.csv): a database
    notes the ones it was seeded from."""
    return hashlib.blake2b((_packaged_text() + "\0" + _interconnect_text()).encode(), digest_size=8).hexdigest()


def packaged_rows() -> list[dict]:
    """The rows of duckprof/data/peaks.csv, typed (empty cell -> None)."""
    text = _packaged_text()
    out = []
    for r in csv.DictReader(io.StringIO(text)):
        row = {}
        for c in COLUMNS:
            v = r[c]
            if c in _TEXT:
                row[c] = v if v != "" else None
            elif v == "":
                row[c] = None
            else:
                row[c] = int(v) if c in _INTS else float(v)
        out.append(row)
    return out


def seed_peaks(con) -> int:
    """Insert the packaged rows into `device_peaks` (which schema.sql creates).

    Idempotent: rows whose ``device`` is already in the table are left alone,
    so user edits survive and a second call adds nothing. Returns the number of
    rows inserted. Run when a database is created, and again when a newer
    duckprof opens it for writing with a changed table (Session): devices added
    since appear; corrections to rows already in the database are not applied.
    """
    existing = {r[0] for r in con.execute("SELECT device FROM device_peaks").fetchall()}
    rows = [tuple(r[c] for c in COLUMNS) for r in packaged_rows() if r["device"] not in existing]
    _insert_rows(con, "device_peaks", COLUMNS, rows)
    return len(rows)


def seed_interconnects(con) -> int:
    """Insert the rows of duckprof/data/interconnect.csv into
    `interconnect_peaks` whose device the table does not list yet (as
    seed_peaks: user rows survive). Returns the number of rows inserted."""
    existing = {r[0] for r in con.execute("SELECT device FROM interconnect_peaks").fetchall()}
    rows = [(r["device"], r["interconnect"], float(r["gbps"]), r["source"])
            for r in csv.DictReader(io.StringIO(_interconnect_text())) if r["device"] not in existing]
    _insert_rows(con, "interconnect_peaks", ("device", "interconnect", "gbps", "source"), rows)
    return len(rows)


def _insert_rows(con, table: str, columns, rows):
    """One INSERT for all rows (executemany runs one statement per row: 50 ms
    of every new database)."""
    if rows:
        marks = ", ".join(["(" + ", ".join("?" * len(columns)) + ")"] * len(rows))
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {marks}", [v for r in rows for v in r])
