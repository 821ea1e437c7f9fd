"""The `duckprof html` command (registered by cli_reports.register)."""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

import typer

from ..cli_common import DbOpt, Progress, QuietOpt, TracesArg, WaitOpt, open_data
from ..errors import DuckprofError


def html_command(
        traces: Optional[List[str]] = TracesArg,
        db: Optional[str] = DbOpt,
        run: Optional[str] = typer.Option(None, "--run", "-r", help="only this run of the database"),
        diff: Optional[Tuple[str, str]] = typer.Option(
            None, "--diff", help="A B: what changed from A (baseline) to B (candidate); each a run in --db "
                                 "or a trace file, directory or glob"),
        output: str = typer.Option("duckprof.html", "--output", "-o", help="the HTML file to write"),
        top: int = typer.Option(25, "--top", help="kernels per GPU (diff: kernels and ops per list)", min=1),
        quiet: bool = QuietOpt,
        wait: float = WaitOpt):
    """One self-contained HTML page of the standard reports: overview, GPU timeline, time
    breakdown, top kernels with a roofline, GPU idle and queue, steps (and ranks); or with
    --diff A B, what changed between two runs. Opens offline in any browser. With --db, the
    first page of a run stores its report results in the database; later pages read them
    (`duckprof load --db F --run R --prepare-html` stores them at load).

    Example: duckprof html trace.json.gz -o report.html
    """
    from . import build, build_diff
    progress = Progress(quiet)
    try:
        if diff:
            if traces or run:
                raise DuckprofError("--diff takes its two sides as A B (runs in --db or trace files); "
                                    "give no other traces or --run")
            if wait:
                raise DuckprofError("--wait is for the page of a database (--db), not for --diff")
            page = build_diff(diff[0], diff[1], db=db, top=top, progress=progress)
        else:
            with open_data(traces, db, run=run, progress=progress, wait=wait) as s:
                progress.done()
                page = build(s, run=run, top=top, progress=progress)
    finally:
        progress.done()
    page.save(output)
    size = os.path.getsize(output)
    typer.echo(f"wrote {output}: {size / 1e3:,.0f} KB, {len(page.sections)} sections "
               f"({', '.join(page.sections)}) in {page.seconds:.2f} s")
    if page.unstored is not None and db:
        # the page read with a read-only session (other readers go on meanwhile):
        # the file is opened for writing only now, briefly, to store its results
        from .store import store_in_file
        why = store_in_file(db, page.unstored, wait=wait)
        if not quiet:
            typer.echo(f"report results not stored ({why}): the next page computes them again" if why else
                       "report results stored: the next page reads them (`duckprof load --prepare-html` "
                       "stores them at load)", err=bool(why))
