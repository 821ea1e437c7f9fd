"""The `duckprof` command line (typer). Every failure a user can cause prints
one error naming the file and the problem and exits with code 2 (130 for
Ctrl-C or SIGTERM)."""

from __future__ import annotations

import os
import tempfile
from typing import List, Optional

import duckdb
import typer

from . import __version__, cli_reports, interrupts, render, sqlfiles
from .cli_common import (App, DbOpt, FormatOpt, LakeOpt, OutputOpt, Progress, QuietOpt, WaitOpt, check_format,
                         fail, friendly_errors, open_data)
from .errors import DuckprofError, Interrupted
from .load import LoadReport
from .session import Session, load_into

HELP = {"help_option_names": ["-h", "--help"]}
app = App(no_args_is_help=True, rich_markup_mode=None, context_settings=HELP,
          help="PyTorch profiler (Kineto) traces in DuckDB: load them, query them with SQL, "
               "get standard reports.")
report_app = App(no_args_is_help=True, rich_markup_mode=None, context_settings=HELP,
                 help="Standard reports (each answers one question).")
app.add_typer(report_app, name="report")


def _version(value: bool):
    if value:
        typer.echo(f"duckprof {__version__} (DuckDB {duckdb.__version__})")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                       help="print duckprof's version and exit")):
    """PyTorch profiler (Kineto) traces in DuckDB: load them, query them with SQL, get standard reports."""


@app.command()
@friendly_errors
def load(paths: List[str] = typer.Argument(..., help="trace files (.json, .json.gz), directories or globs"),
         db: Optional[str] = DbOpt,
         run: str = typer.Option("default", "--run", "-r", help="run label (one run = the ranks of one job)"),
         salvage: bool = typer.Option(False, "--salvage", help="load the complete events of a truncated trace"),
         tag: Optional[List[str]] = typer.Option(None, "--tag", "-t", help="KEY=VALUE stored with the run "
                                                 "(repeatable; see `duckprof tag`)"),
         prepare_html: bool = typer.Option(
             False, "--prepare-html", help="with --db: after the load, compute and store the report results of "
             "the run's html page, so that `duckprof html --db F --run R` reads them instead of computing them "
             "(its first page otherwise runs every report); each load into the run with it computes the "
             "run's page again"),
         wait: float = WaitOpt,
         quiet: bool = QuietOpt):
    """Load traces into a database (in memory without --db: a validity check). The traces
    are parsed and checked before the database is opened for writing: queries on it run
    meanwhile, and it is locked only while the run is inserted.

    Example: duckprof load job_42/ --db perf.duckdb --run job42 --tag commit=abc123 --tag batch=64
    """
    tags = parse_tags(tag)
    if prepare_html and not db:
        fail("--prepare-html stores the run's html page in a database file: give --db FILE")
    progress = Progress(quiet)
    report = LoadReport(run=run)
    try:
        if db:
            load_into(db, paths, run=run, salvage=salvage, progress=progress, wait=wait, report=report,
                      tags=tags, prepare_html=prepare_html)
        else:
            with Session(None) as s:
                s.attach_progress(progress)
                s.load(paths, run=run, salvage=salvage, progress=progress, report=report, tags=tags)
        progress.done()
        typer.echo(report.summary())
    except BaseException as e:
        progress.done()
        if interrupts.is_interrupt(e):
            interrupts.acknowledge()
            raise Interrupted(_interrupted(report, db)) from None
        if report.page_prepared is False:  # the load is done: what it loaded, then why the page is not
            typer.echo(report.summary())
        raise


def _interrupted(report: LoadReport, db: Optional[str]) -> str:
    """What an interrupted load kept: it says whether the run was loaded."""
    if report.page_prepared is False:
        return (f"interrupted while preparing the html page: run {report.run!r} is loaded into {db} "
                f"({len(report.loaded)} trace(s) loaded now), its html page was not prepared")
    if report.committed:
        n = len(report.loaded)
        return (f"interrupted after the load had committed: run {report.run!r} is loaded into {db} "
                f"({n} trace(s)); check with `duckprof runs --db {db}`" if db
                else "interrupted after the load had finished")
    if db:
        return f"interrupted: nothing was loaded, {db} is as it was"
    return "interrupted: nothing was loaded"


@app.command()
@friendly_errors
def query(sql: str = typer.Argument(..., help="SQL over the tables and views (see `duckprof schema`)"),
          traces: Optional[List[str]] = typer.Argument(None, help="trace files to load into memory first"),
          db: Optional[str] = DbOpt, lake: Optional[str] = LakeOpt,
          fmt: str = FormatOpt, output: Optional[str] = OutputOpt,
          name_width: int = typer.Option(80, "--name-width", help="truncate long text cells in tables"),
          salvage: bool = typer.Option(False, "--salvage", help="load the complete events of a truncated trace"),
          allow_external: bool = typer.Option(False, "--allow-external",
                                              help="let the SQL read and write other files (read_parquet, "
                                                   "COPY TO, ...) and load extensions"),
          wait: float = WaitOpt,
          quiet: bool = QuietOpt):
    """Run SQL over traces (loaded into memory) or over a --db database (opened read-only).
    The SQL reads the database, not the machine: file access (read_text, COPY TO, EXPORT
    DATABASE, ATTACH) and extensions (INSTALL, LOAD) are refused unless --allow-external.

    Example: duckprof query "select name, count(*), sum(dur_ns)/1e6 as ms from kernels
    group by 1 order by 3 desc limit 10" --db runs.duckdb
    """
    check_format(fmt, output)
    progress = Progress(quiet)
    with open_data(traces, db, salvage=salvage, progress=progress, wait=wait, lake=lake) as s:
        if not allow_external:
            allowed = [output] if fmt == "parquet" and output else []
            s.lock_down(allowed_paths=allowed, allowed_dirs=[s.lake] if getattr(s, "lake", None) else [])
        try:
            render.emit(s.sql(sql), fmt, output, name_width=name_width)
        except (duckdb.PermissionException, duckdb.InvalidInputException) as e:
            first = str(e).splitlines()[0]
            if allow_external or ("disabled" not in first and "configuration has been locked" not in first):
                raise
            raise DuckprofError(f"refused: {first}. `duckprof query` reads the database, not the machine: "
                                "pass --allow-external to let the SQL use other files or extensions") from None


@app.command()
@friendly_errors
def runs(db: str = typer.Option(..., "--db", help="persistent DuckDB database file"),
         fmt: str = FormatOpt, output: Optional[str] = OutputOpt, wait: float = WaitOpt):
    """List the runs in a database: traces, ranks, devices, steps, mean step time, GPU busy %, tags.

    Example: duckprof runs --db runs.duckdb
    """
    check_format(fmt, output)
    with Session(db, read_only=True, wait=wait) as s:
        render.emit(s.runs(), fmt, output, documented=sqlfiles.view_headers()["runs"].columns)


def parse_tags(items) -> dict:
    """['commit=abc', 'batch=64'] -> {'commit': 'abc', 'batch': '64'}."""
    tags = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            fail(f"tag {item!r}: write KEY=VALUE")
        tags[key.strip()] = value
    return tags


@app.command("export")
@friendly_errors
def export(db: str = typer.Option(..., "--db", help="persistent DuckDB database file"),
           parquet: str = typer.Option(..., "--parquet", help="the lake directory (created if need be)"),
           run: Optional[List[str]] = typer.Option(None, "--run", "-r", help="only this run (repeatable)"),
           wait: float = WaitOpt,
           quiet: bool = QuietOpt):
    """Write the database's runs into a Parquet lake, hive-partitioned by run (and rank), that
    Spark, Trino, Polars or DuckDB read with the same tables and columns; exporting again adds
    only the runs the lake does not have. `query`/`report --lake DIR` run duckprof's views over
    it; `load DIR` loads it back.

    Example: duckprof export --db perf.duckdb --parquet lake/
    """
    from .lake import export_lake
    progress = Progress(quiet)
    with Session(db, read_only=True, wait=wait) as s:
        try:
            rep = export_lake(s, parquet, runs=run or None, progress=progress)
        finally:
            progress.done()
    typer.echo(rep.summary())


@app.command("tag")
@friendly_errors
def tag_run(run: str = typer.Argument(..., help="run label"),
            tags: Optional[List[str]] = typer.Argument(None, help="KEY=VALUE to set (replaces the key's value)"),
            db: str = typer.Option(..., "--db", help="persistent DuckDB database file"),
            remove: Optional[List[str]] = typer.Option(None, "--remove", help="KEY to remove (repeatable)"),
            wait: float = WaitOpt):
    """Set or remove tags of a run (commit, batch size, anything) and print its tags.

    Example: duckprof tag job42 commit=abc123 batch=64 --db perf.duckdb
    """
    values = parse_tags(tags)
    with Session(db, read_only=not (values or remove), wait=wait) as s:
        now = s.set_tags(run, values, remove=remove or ()) if values or remove else s.tags(run)
    typer.echo(f"run {run!r}: " + (", ".join(f"{k}={v}" for k, v in now.items()) or "no tags"))


@app.command("rm")
@friendly_errors
def remove(run: str = typer.Argument(..., help="run label to delete"),
           db: str = typer.Option(..., "--db", help="persistent DuckDB database file"),
           wait: float = WaitOpt):
    """Delete a run (all its traces) from a database.

    Example: duckprof rm baseline --db runs.duckdb
    """
    if not os.path.exists(db):
        fail(f"{db}: no such database")
    with Session(db, wait=wait) as s:
        n = s.remove_run(run)
    if not n:
        fail(f"{db}: no run named {run!r}")
    typer.echo(f"removed run {run!r} ({n} trace(s))")


@app.command()
@friendly_errors
def schema(db: Optional[str] = DbOpt,
           name: Optional[str] = typer.Argument(None, help="only this table or view"),
           markdown: bool = typer.Option(False, "--markdown", help="the documented reference (from the SQL files' header comments), as Markdown")):
    """List the tables and views with their columns (the schema every query can use).

    Example: duckprof schema kernels
    """
    if markdown:
        typer.echo(schema_markdown())
        return
    with Session(db, read_only=bool(db)) as s:
        items = s.schema()
    if name:
        items = [i for i in items if i[0] == name]
        if not items:
            fail(f"no table or view named {name!r}")
    for obj, kind, cols in items:
        typer.echo(f"{obj} ({kind})")
        for col, typ in cols:
            typer.echo(f"    {col:<24} {typ}")


def schema_markdown() -> str:
    """Markdown reference of tables and views, taken from the SQL files' headers."""
    out = ["### Tables (sql/schema.sql)", "", "```sql", sqlfiles.read("schema.sql").strip(), "```", ""]
    out += ["### Views (sql/views/)", ""]
    for v in sorted(sqlfiles.view_headers().values(), key=lambda v: v.name):
        out += [f"#### `{v.name}` ({v.path})", "", "```", v.text, "```", ""]
    return "\n".join(out)


@app.command()
@friendly_errors
def migrate(db: str = typer.Option(..., "--db", help="persistent DuckDB database file")):
    """Bring a database written by an older duckprof up to this version's schema (in place,
    in one transaction; every run's data is kept). Any load into it does the same.

    Example: duckprof migrate --db runs.duckdb
    """
    from .session import SCHEMA_VERSION
    if not os.path.exists(db):
        fail(f"{db}: no such database")
    with Session(db) as s:
        s.migrate()
        n = s.con.execute("SELECT count(*) FROM traces").fetchall()[0][0]
    typer.echo(f"{db}: schema version {SCHEMA_VERSION} ({n} trace(s))")


@app.command()
@friendly_errors
def synth(output: str = typer.Option(..., "--output", "-o", help="file to write (.json or .json.gz); with "
                                     "--world-size > 1 a directory for rank<R>.json"),
          events: int = typer.Option(20000, "--events", "-n", help="approximate number of events"),
          target_bytes: Optional[int] = typer.Option(None, "--bytes", help="approximate uncompressed size instead of --events"),
          seed: int = typer.Option(0, "--seed", help="random seed (same seed, same bytes)"),
          rank: int = typer.Option(0, "--rank", help="distributedInfo.rank"),
          world_size: int = typer.Option(1, "--world-size", help="> 1: write every rank of one job (one clock, "
                                         "the ranks meet at every NCCL all-reduce)"),
          steps: int = typer.Option(3, "--steps", help="with --world-size: profiler steps per rank"),
          late_rank: Optional[int] = typer.Option(None, "--late-rank", help="with --world-size: this rank reaches "
                                                  "every collective late (a straggler)"),
          late_us: float = typer.Option(3000.0, "--late-us", help="with --late-rank: how late, µs"),
          gz: bool = typer.Option(False, "--gz", help="with --world-size: write rank<R>.json.gz"),
          stack: Optional[int] = typer.Option(None, "--stack", help="python frames around every top-level op, "
                                              "as profile(with_stack=True) records them (python_function events)"),
          epoch_ts: bool = typer.Option(False, "--epoch-ts", help="absolute fractional timestamps (us since the "
                                        "epoch), no baseTimeNanoseconds"),
          serving: bool = typer.Option(False, "--serving", help="inference steps of a model server: forward "
                                       "only, --stack 12 unless given")):
    """Write a realistic synthetic GPU trace (deterministic), e.g. for benchmarks, or the rank
    traces of one job (--world-size) with NCCL collectives and, optionally, one late rank.

    Example: duckprof synth --events 1000000 -o big.json.gz;
    duckprof synth -o job/ --world-size 16 --late-rank 5
    """
    if world_size > 1:
        from .synth import default_blocks, generate_job
        info = generate_job(output, world_size=world_size, steps=steps, seed=seed, late_rank=late_rank,
                            late_us=late_us, blocks=default_blocks(events),
                            suffix=".json.gz" if gz else ".json")
        typer.echo(f"wrote {len(info)} ranks into {output}: {sum(i['events'] for i in info):,} events, "
                   f"{sum(i['bytes'] for i in info):,} bytes of JSON"
                   + (f"; rank {late_rank} is late by {late_us:g} µs at every collective"
                      if late_rank is not None else ""))
        return
    from .synth import generate
    info = generate(output, events=events, seed=seed, rank=rank, target_bytes=target_bytes, stack=stack,
                    epoch_ts=epoch_ts, serving=serving)
    typer.echo(f"wrote {output}: {info['events']:,} events, {info['bytes']:,} bytes of JSON")


@app.command()
@friendly_errors
def demo(events: int = typer.Option(20000, "--events", "-n", help="size of the built-in sample")):
    """Generate the built-in sample trace, load it, and show what duckprof answers.

    Example: duckprof demo
    """
    from .synth import generate
    with tempfile.TemporaryDirectory(prefix="duckprof-demo-") as d:
        path = os.path.join(d, "sample_rank0.json.gz")
        generate(path, events=events, seed=0)
        with Session(None) as s:
            rep = s.load([path], run="demo")
            typer.echo(rep.summary().replace(path, "built-in sample"))
            import textwrap
            width = render.terminal_width()
            for title, sql in DEMO_QUERIES:
                # the query as SQL comment lines that fit the terminal
                shown = textwrap.wrap(" ".join(sql.split()), max(40, width - 3), break_long_words=False)
                typer.echo(f"\n== {title}\n" + "\n".join(f"-- {line}" for line in shown))
                render.emit(s.sql(sql), "table", None, name_width=70)
    typer.echo("\nNext: duckprof load YOUR_TRACES --db runs.duckdb --run NAME; "
               "duckprof query \"...\" --db runs.duckdb; duckprof schema")


DEMO_QUERIES = [
    ("Top kernels by total time",
     "select name, count(*) as n, sum(dur_ns) / 1e6 as total_ms, avg(dur_ns) / 1e3 as mean_us "
     "from kernels group by 1 order by 3 desc limit 8"),
    ("Operators that launch the most GPU time",
     "select op_name, count(*) as launches, sum(dur_ns) / 1e6 as gpu_ms "
     "from launches where op_name is not null group by 1 order by 3 desc limit 8"),
    ("Operators by self CPU time",
     "select name, count(*) as calls, sum(self_ns) / 1e6 as self_ms, sum(dur_ns) / 1e6 as total_ms "
     "from cpu_ops group by 1 order by 3 desc limit 8"),
    ("Profiler steps",
     "select step, dur_ns / 1e6 as host_ms from steps order by step limit 8"),
]


cli_reports.register(app, report_app)


def main():
    interrupts.terminate_as_interrupt()
    app()


if __name__ == "__main__":
    main()
