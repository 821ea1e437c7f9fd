"""`duckprof report kernels`: the device summary (sql/reports/kernels.sql).

Per trace and device, per kernel name: count, time, share of the device's busy
time, FLOPs and bytes attributed from the launching op (kernel_estimates),
achieved TFLOP/s and GB/s, % of the device's datasheet peaks (device_peak) and
whether the kernel is compute- or memory-bound at the device's ridge point.
What the data cannot support (no kernels, no shapes, no device properties, an
unknown device) is said in one line each on stderr, never printed as 0%.
"""

from __future__ import annotations

import os
from typing import List, Optional

import typer

from . import estimators, render, sqlfiles
from .cli import DbOpt, FormatOpt, OutputOpt, check_format, friendly_errors, report_app
from .errors import DuckprofError
from .reporting import open_data, trace_scope

#: TEMP table the report is computed into (per connection).
RESULT_TABLE = "duckprof_kernels_report"

#: --sort choices -> ORDER BY of the report (columns of sql/reports/kernels.sql).
SORTS = {
    "total": "total_us DESC",
    "count": "count DESC, total_us DESC",
    "mean": "mean_us DESC",
    "max": "max_us DESC",
    "min": "min_us DESC",
    "busy": "busy_pct DESC NULLS LAST, total_us DESC",
    "flops": "flops DESC NULLS LAST, total_us DESC",
    "bytes": "bytes DESC NULLS LAST, total_us DESC",
    "tflops": "achieved_tflops DESC NULLS LAST, total_us DESC",
    "gbps": "achieved_gbps DESC NULLS LAST, total_us DESC",
    "compute": "compute_pct DESC NULLS LAST, total_us DESC",
    "bandwidth": "bandwidth_pct DESC NULLS LAST, total_us DESC",
    "intensity": "flops_per_byte DESC NULLS LAST, total_us DESC",
    "name": "name",
}


def peak_key(dtype: str | None) -> str | None:
    """A --dtype value (torch or duckprof spelling: float, fp32, tf32, bfloat16,
    half, c10::BFloat16, ...) -> the device_peak column key it selects."""
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


def kernels_report(session, run=None, device=None, limit=20, sort="total", group_by_launch=False,
                   dtype=None, peak_tflops=None, peak_gbps=None):
    """(relation, notes): the report as a DuckDB relation and the lines that
    say what is missing. Values are bound parameters; only the structure
    (filters, grouping, ordering) is templated. The result is computed once
    into a TEMP table (read-only databases allow those), so the notes can
    look at it without running the report twice."""
    if sort not in SORTS:
        raise DuckprofError(f"unknown --sort {sort!r}; choose one of {', '.join(SORTS)}")
    if limit is None or limit < 0:
        raise DuckprofError("--limit must be >= 0 (0 = all rows)")
    for opt, v in (("--peak-tflops", peak_tflops), ("--peak-gbps", peak_gbps)):
        if v is not None and not v > 0:
            raise DuckprofError(f"{opt} must be a positive number")
    default_key = peak_key(dtype)
    scope, params = trace_scope(run)
    params.update({"device": device, "limit": limit, "default_peak_dtype": default_key,
                   "peak_tflops": peak_tflops, "peak_gbps": peak_gbps})
    order = SORTS[sort] + ", name" + (", grid, block" if group_by_launch else "")
    sql = sqlfiles.render("reports/kernels.sql", scope=scope, device_filter=device is not None,
                          group_by_launch=group_by_launch, order_by=order, limit=bool(limit))
    used = {k: v for k, v in params.items() if f"${k}" in sql}  # DuckDB rejects unused names
    session.con.execute(f"CREATE OR REPLACE TEMP TABLE {RESULT_TABLE} AS\n{sql}", used)
    notes = _notes(session, scope, params, device, peak_tflops, peak_gbps)
    return session.con.sql(f"SELECT * FROM {RESULT_TABLE}"), notes


def _notes(session, scope, params, device, peak_tflops, peak_gbps) -> list[str]:
    """One line per thing the report cannot say, and why."""
    con = session.con
    p = {k: v for k, v in params.items() if k == "run" or (k == "device" and device is not None)}
    kdev = "AND coalesce(k.device, k.pid) = $device" if device is not None else ""
    pdev = "AND p.device = $device" if device is not None else ""
    traces = con.execute(f"""
        SELECT t.trace_id, t.path,
               (SELECT count(*) FROM events k WHERE k.trace_id = t.trace_id AND k.cat = 'kernel'
                       AND k.ph = 'X' {kdev}) AS n_kernels,
               (SELECT count(*) FROM devices d WHERE d.trace_id = t.trace_id) AS n_devices,
               EXISTS (SELECT 1 FROM events e WHERE e.trace_id = t.trace_id AND e.cat = 'cpu_op'
                       AND e.input_dims IS NOT NULL) AS has_shapes
        FROM traces t WHERE {scope} ORDER BY t.trace_id""", p).fetchall()
    notes = []
    if not traces:
        return ["no traces loaded" + (f" in run {params.get('run')!r}" if params.get("run") else "")]
    where = f" (device {device})" if device is not None else ""
    need_peaks = peak_tflops is None or peak_gbps is None
    missing_opts = "/".join(o for o, v in (("--peak-tflops", peak_tflops), ("--peak-gbps", peak_gbps))
                            if v is None)
    for _tid, path, n_kernels, n_devices, has_shapes in traces:
        label = os.path.basename(path)
        if not n_kernels:
            notes.append(f"{label}: no GPU kernels in this trace{where}")
            continue
        if not has_shapes:
            notes.append(f"{label}: no input shapes recorded (record_shapes=False): "
                         "FLOPs and bytes are unknown, so no % of peak")
        elif not con.execute(f"""SELECT count(*) FROM {RESULT_TABLE} WHERE trace_id = $t
                                 AND (flops IS NOT NULL OR bytes IS NOT NULL)""", {"t": _tid}).fetchall()[0][0] \
                and not con.execute("""SELECT count(op_event_id) FROM launches
                                       WHERE trace_id = $t AND kind = 'kernel'""", {"t": _tid}).fetchall()[0][0]:
            notes.append(f"{label}: no kernel is linked to the op that launched it (no External id or "
                         "correlation to a cpu_op), so FLOPs and bytes are unknown")
        if not n_devices and need_peaks:
            notes.append(f"{label}: no deviceProperties, so no device peaks; pass {missing_opts}")
    if need_peaks:
        if not con.execute("SELECT count(*) FROM device_peaks").fetchall()[0][0]:
            notes.append("the device_peaks table is empty: no datasheet peaks; "
                         f"pass {missing_opts} (or insert rows into device_peaks)")
        else:
            for path, dev, name in con.execute(f"""
                    SELECT DISTINCT t.path, p.device, p.device_name
                    FROM device_peak p JOIN traces t USING (trace_id)
                    WHERE {scope} AND p.peak_device IS NULL {pdev}
                      AND EXISTS (SELECT 1 FROM {RESULT_TABLE} r
                                  WHERE r.trace_id = p.trace_id AND r.device = p.device)
                    ORDER BY 1, 2""", p).fetchall():
                notes.append(f"{os.path.basename(path)}: no peak for device {dev} {name!r}; pass {missing_opts}")
    if peak_tflops is None:
        n = con.execute(f"""SELECT count(*) FROM {RESULT_TABLE} r
                            WHERE r.flops > 0 AND r.peak_tflops IS NULL
                              AND EXISTS (SELECT 1 FROM device_peak p WHERE p.trace_id = r.trace_id
                                          AND p.device = r.device AND p.peak_device IS NOT NULL)""").fetchall()[0][0]
        if n:
            notes.append(f"{n:,} row(s) have FLOPs but no compute peak (dtype unknown, or no datasheet "
                         "figure for it), so no compute %; pass --dtype or --peak-tflops")
    return notes


@report_app.command("kernels")
@friendly_errors
def kernels_cmd(
        traces: Optional[List[str]] = typer.Argument(None, help="trace files (.json, .json.gz) to load into memory"),
        db: Optional[str] = DbOpt,
        run: Optional[str] = typer.Option(None, "--run", "-r", help="only this run of the database"),
        device: Optional[int] = typer.Option(None, "--device", "-d", help="only this GPU index"),
        limit: int = typer.Option(20, "--limit", "-n", help="rows per device (0 = all)"),
        sort: str = typer.Option("total", "--sort", "-s", help="order: " + ", ".join(SORTS)),
        name_width: int = typer.Option(60, "--name-width", help="truncate kernel names in tables to this width"),
        group_by_launch: bool = typer.Option(False, "--group-by-launch",
                                             help="one row per kernel name + grid + block"),
        dtype: Optional[str] = typer.Option(None, "--dtype",
                                            help="dtype for kernels whose op records no input types "
                                                 "(fp32, tf32, bf16, fp16, fp8, fp64, int8; or float, bfloat16, half)"),
        peak_tflops: Optional[float] = typer.Option(None, "--peak-tflops",
                                                    help="compute peak, TFLOP/s (overrides the device table)"),
        peak_gbps: Optional[float] = typer.Option(None, "--peak-gbps",
                                                  help="DRAM bandwidth peak, GB/s (overrides the device table)"),
        fmt: str = FormatOpt, output: Optional[str] = OutputOpt):
    """Per device, per kernel: count, time, % of busy time, FLOPs, bytes, achieved TFLOP/s and GB/s,
    % of peak compute and bandwidth, arithmetic intensity, compute- or memory-bound.

    Example: duckprof report kernels trace.json.gz --limit 10 --sort compute
    """
    check_format(fmt, output)
    with open_data(traces, db, run=run) as s:
        rel, notes = kernels_report(s, run=run, device=device, limit=limit, sort=sort,
                                    group_by_launch=group_by_launch, dtype=dtype,
                                    peak_tflops=peak_tflops, peak_gbps=peak_gbps)
        render.emit(rel, fmt, output, name_width=name_width)
    for n in notes:
        typer.echo(f"note: {n}", err=True)
