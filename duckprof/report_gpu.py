"""GPU time reports (GitHub issue 5): `duckprof report idle | gpu-time | queue | temporal`.

The SQL is in sql/views/{gpu_activity, gpu_busy_intervals, gpu_idle_intervals,
queue_depth}.sql (views, and table macros of the same names that take the
options below) and sql/reports/{idle, gpu_time, gpu_time_steps, queue,
temporal}.sql. This module only wires options to bound parameters.

Options shared by the four reports:
  --exclude-last-step  drop device work launched after the last ProfilerStep
                       began (HTA's default, include_last_profiler_step=False)
  --hta                reproduce HTA's numbers: --exclude-last-step, and times
                       rounded to whole µs as HTA rounds fractional timestamps
"""

from __future__ import annotations

import os
from typing import List, Optional

import typer

from . import render
from .cli import DbOpt, FormatOpt, OutputOpt, check_format, friendly_errors, report_app
from .errors import DuckprofError
from .reporting import open_data, run_report

NO_GPU = "no GPU activity in this trace"


def _params(run, device, exclude_last_step, hta) -> tuple[dict, dict]:
    params = {"exclude_last_step": bool(exclude_last_step or hta), "round_to_us": bool(hta),
              "run": run, "device": device}
    structure = {"by_run": run is not None, "by_device": device is not None}
    return params, structure


def gpu_notes(session, run=None, device=None, need_launches=False) -> tuple[list[str], bool]:
    """(notes, any_gpu): one note per trace in scope without device activity
    (on `device`, if given), and with need_launches one per trace whose device
    activity has no launch call in the trace (no queue depth); any_gpu is False
    when no trace in scope has any device activity."""
    pred = "t.run = $run" if run is not None else "TRUE"
    dev = "AND g.device = $device" if device is not None else ""
    p = {k: v for k, v in (("run", run), ("device", device)) if v is not None}
    launched = (f"EXISTS (SELECT 1 FROM gpu_ops g JOIN runtime r ON r.trace_id = g.trace_id "
                f"AND r.correlation = g.correlation WHERE g.trace_id = t.trace_id {dev})"
                if need_launches else "true")
    rows = session.con.execute(f"""
        SELECT t.path, EXISTS (SELECT 1 FROM gpu_ops g WHERE g.trace_id = t.trace_id {dev}) AS has_gpu,
               {launched} AS has_launches
        FROM traces t WHERE {pred} ORDER BY t.trace_id""", p).fetchall()
    where = f" (device {device})" if device is not None else ""
    notes = []
    for path, has_gpu, has_launches in rows:
        if not has_gpu:
            notes.append(f"{os.path.basename(path)}: {NO_GPU}{where}")
        elif not has_launches:
            notes.append(f"{os.path.basename(path)}: no launch call in this trace matches its device "
                         f"activity (correlation){where}, so no queue depth")
    return notes, any(has for _, has, _ in rows)


def idle_report(session, run=None, device=None, limit=20, exclude_last_step=False, hta=False):
    """CPU ops ranked by the GPU idle time they cause (BasicEvaluation); a relation."""
    if limit is None or limit < 0:
        raise DuckprofError("--limit must be >= 0 (0 = all ops)")
    params, structure = _params(run, device, exclude_last_step, hta)
    params["limit"] = limit
    return run_report(session, "idle", params, limited=bool(limit), **structure)


def gpu_time_report(session, run=None, device=None, kernel_wait_us=30.0, by_step=False,
                    exclude_last_step=False, hta=False):
    """Busy/idle per device and stream (or per ProfilerStep with by_step); a relation."""
    if kernel_wait_us is None or kernel_wait_us < 0:
        raise DuckprofError("--kernel-wait-us must be >= 0")
    params, structure = _params(run, device, exclude_last_step, hta)
    params["kernel_wait_ns"] = int(round(kernel_wait_us * 1000))
    return run_report(session, "gpu_time_steps" if by_step else "gpu_time", params, **structure)


def queue_report(session, run=None, device=None, exclude_last_step=False, hta=False):
    """Queue depth statistics per stream; a relation."""
    params, structure = _params(run, device, exclude_last_step, hta)
    return run_report(session, "queue", params, **structure)


def temporal_report(session, run=None, device=None, exclude_last_step=False, hta=False):
    """Idle / compute / non-compute time per rank and device (HTA temporal breakdown); a relation."""
    params, structure = _params(run, device, exclude_last_step, hta)
    return run_report(session, "temporal", params, **structure)


# -- CLI ------------------------------------------------------------------------

TracesArg = typer.Argument(None, help="trace files (.json, .json.gz) to load into memory")
RunOpt = typer.Option(None, "--run", "-r", help="only this run of the database")
DeviceOpt = typer.Option(None, "--device", "-d", help="only this GPU index")
ExcludeLastStepOpt = typer.Option(
    False, "--exclude-last-step",
    help="drop device work launched after the last ProfilerStep began (HTA's default; "
         "only in traces with 2 or more steps)")
HtaOpt = typer.Option(
    False, "--hta",
    help="reproduce HTA's numbers: --exclude-last-step, and times rounded to whole µs as HTA does")


def _emit(session, rel_fn, run, device, fmt, output, name_width=80, need_launches=False):
    notes, any_gpu = gpu_notes(session, run=run, device=device, need_launches=need_launches)
    if not any_gpu:
        where = f" (device {device})" if device is not None else ""
        typer.echo(NO_GPU + where + (f" (run {run!r})" if run is not None else ""))
        return
    render.emit(rel_fn(), fmt, output, name_width=name_width)
    for n in notes:
        typer.echo(f"note: {n}", err=True)


@report_app.command("idle")
@friendly_errors
def idle_cmd(traces: Optional[List[str]] = TracesArg, db: Optional[str] = DbOpt,
             run: Optional[str] = RunOpt, device: Optional[int] = DeviceOpt,
             limit: int = typer.Option(20, "--limit", "-n", help="ops per trace and device (0 = all)"),
             exclude_last_step: bool = ExcludeLastStepOpt, hta: bool = HtaOpt,
             name_width: int = typer.Option(60, "--name-width", help="truncate op names and sources in tables"),
             fmt: str = FormatOpt, output: Optional[str] = OutputOpt):
    """CPU ops ranked by the GPU idle time they cause (torch BasicEvaluation): per op, the GPU idle
    time during it, its idle %, self time, and the score of ops in queue-draining intervals, with
    the Python source location when the trace has stacks.

    Example: duckprof report idle trace.json.gz --limit 10
    """
    check_format(fmt, output)
    with open_data(traces, db, run=run) as s:
        _emit(s, lambda: idle_report(s, run=run, device=device, limit=limit,
                                     exclude_last_step=exclude_last_step, hta=hta),
              run, device, fmt, output, name_width, need_launches=True)


@report_app.command("gpu-time")
@friendly_errors
def gpu_time_cmd(traces: Optional[List[str]] = TracesArg, db: Optional[str] = DbOpt,
                 run: Optional[str] = RunOpt, device: Optional[int] = DeviceOpt,
                 kernel_wait_us: float = typer.Option(
                     30.0, "--kernel-wait-us",
                     help="gaps shorter than this (µs) are kernel_wait (launch overhead), as HTA's "
                          "consecutive_kernel_delay"),
                 by_step: bool = typer.Option(False, "--by-step", help="busy % per ProfilerStep instead"),
                 exclude_last_step: bool = ExcludeLastStepOpt, hta: bool = HtaOpt,
                 fmt: str = FormatOpt, output: Optional[str] = OutputOpt):
    """Per device and per stream: busy time, idle time split into host wait / kernel wait / other
    (HTA idle time breakdown), busy %.

    Example: duckprof report gpu-time trace.json.gz --by-step
    """
    check_format(fmt, output)
    with open_data(traces, db, run=run) as s:
        _emit(s, lambda: gpu_time_report(s, run=run, device=device, kernel_wait_us=kernel_wait_us,
                                         by_step=by_step, exclude_last_step=exclude_last_step, hta=hta),
              run, device, fmt, output)


@report_app.command("queue")
@friendly_errors
def queue_cmd(traces: Optional[List[str]] = TracesArg, db: Optional[str] = DbOpt,
              run: Optional[str] = RunOpt, device: Optional[int] = DeviceOpt,
              exclude_last_step: bool = ExcludeLastStepOpt, hta: bool = HtaOpt,
              fmt: str = FormatOpt, output: Optional[str] = OutputOpt):
    """GPU queue depth per stream (launched, unfinished work): time-weighted mean, p50, p95, max,
    time at the max. The series itself is the queue_depth view.

    Example: duckprof report queue trace.json.gz --format csv
    """
    check_format(fmt, output)
    with open_data(traces, db, run=run) as s:
        _emit(s, lambda: queue_report(s, run=run, device=device,
                                      exclude_last_step=exclude_last_step, hta=hta),
              run, device, fmt, output, need_launches=True)


@report_app.command("temporal")
@friendly_errors
def temporal_cmd(traces: Optional[List[str]] = TracesArg, db: Optional[str] = DbOpt,
                 run: Optional[str] = RunOpt, device: Optional[int] = DeviceOpt,
                 exclude_last_step: bool = ExcludeLastStepOpt, hta: bool = HtaOpt,
                 fmt: str = FormatOpt, output: Optional[str] = OutputOpt):
    """Per rank and device: idle, compute and non-compute (communication, memory) time and %
    (HTA temporal breakdown).

    Example: duckprof report temporal --db runs.duckdb --run r1
    """
    check_format(fmt, output)
    with open_data(traces, db, run=run) as s:
        _emit(s, lambda: temporal_report(s, run=run, device=device,
                                         exclude_last_step=exclude_last_step, hta=hta),
              run, device, fmt, output)
