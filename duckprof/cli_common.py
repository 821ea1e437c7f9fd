"""What every duckprof command shares: the options declared once (--db,
--format, --output, ...), one-line errors with exit code 2, the progress line,
and opening the data a command reads (trace files or a database)."""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time
from typing import Optional

import duckdb
import typer
from typer.core import TyperCommand, TyperGroup

from . import interrupts, render
from .errors import DuckprofError, TraceError
from .session import Session

FormatOpt = typer.Option("table", "--format", "-f", help="table, csv, json, markdown or parquet")
OutputOpt = typer.Option(None, "--output", "-o", help="write to FILE instead of the terminal")
DbOpt = typer.Option(None, "--db", help="persistent DuckDB database file")
LakeOpt = typer.Option(None, "--lake", help="a Parquet lake directory (duckprof export --parquet): the same "
                       "tables and views over its files, nothing imported")
TracesArg = typer.Argument(None, help="trace files (.json, .json.gz), directories or globs to load into memory")
QuietOpt = typer.Option(False, "--quiet", "-q", help="no progress line")
WaitOpt = typer.Option(0.0, "--wait", min=0, metavar="SECONDS",
                       help="while another process holds the database's lock, retry for up to SECONDS")
NameWidthOpt = typer.Option(60, "--name-width", help="truncate long names in tables to this width")
WideOpt = typer.Option(False, "--wide", "-w",
                       help="table: every column, none left out as constant or secondary, names in full width")


class App(typer.Typer):
    """typer's app, whose commands' parameters take their plain values
    without pydantic: typer 0.29 coerces every parameter (--help included)
    with a pydantic TypeAdapter, and importing pydantic to build them is a
    fixed cost of every command. Values of other shapes, and bad ones, go
    to typer's own coercion (QuickParam), so results and error messages stay
    typer's."""

    def __init__(self, **kw):
        super().__init__(cls=Group, **kw)

    def command(self, name=None, **kw):
        return super().command(name, cls=Command, **kw)


def _quick_params(params):
    for p in params:
        # typer's parameters coerce through _runtime_param, built on first use
        if getattr(p, "_runtime_param", False) is None and hasattr(p, "type_descriptor"):
            p._runtime_param = QuickParam(p.type_descriptor)
    return params


class Group(TyperGroup):
    def get_params(self, ctx):  # what it parses: its options, --help, the completion options
        return _quick_params(super().get_params(ctx))


class Command(TyperCommand):
    def get_params(self, ctx):
        return _quick_params(super().get_params(ctx))


_NOT_PLAIN = object()
_INT = re.compile(r"-?(0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?")


class QuickParam:
    """What typer's runtime parameter does (RuntimeParam.coerce), for the
    values whose result is plain: a str for str, a decimal integer for int,
    a decimal number for float within the parameter's min/max, strings for
    a list or tuple of str. Anything else is coerced by typer's own
    runtime parameter (pydantic), built on first need."""

    def __init__(self, descriptor):
        self.descriptor = descriptor
        self.typer_param = None

    def coerce(self, value, param, ctx):
        if value is None:  # as typer's RuntimeParam.coerce
            return () if param.multiple or param.nargs == -1 else None
        got = _plain(self.descriptor, value)
        if got is not _NOT_PLAIN:
            return got
        if self.typer_param is None:
            from typer._coercion import build_runtime_param
            self.typer_param = build_runtime_param(self.descriptor)
        return self.typer_param.coerce(value, param=param, ctx=ctx)


def _plain(descriptor, value):
    """`value` coerced to the descriptor's annotation, or _NOT_PLAIN."""
    t, info = descriptor.annotation, descriptor.parameter_info
    if info.parser is not None or descriptor.file_annotation is not None or info.clamp:
        return _NOT_PLAIN
    if t is str:
        return value if type(value) is str else _NOT_PLAIN
    if t in (int, float):
        if type(value) is t:
            got = value
        elif type(value) is str and (_INT if t is int else _FLOAT).fullmatch(value):
            got = t(value)
        else:
            return _NOT_PLAIN
        if (info.min is not None and got < info.min) or (info.max is not None and got > info.max):
            return _NOT_PLAIN  # typer's error message
        return got
    args = getattr(t, "__args__", None)
    origin = getattr(t, "__origin__", None)
    if origin is list and args == (str,) and isinstance(value, (list, tuple)) \
            and all(type(v) is str for v in value):
        return list(value)
    if origin is tuple and args and all(a is str for a in args) and isinstance(value, (list, tuple)) \
            and len(value) == len(args) and all(type(v) is str for v in value):
        return tuple(value)
    return _NOT_PLAIN


def fail(msg: str, code: int = 2):
    typer.echo(f"duckprof: {msg}", err=True)
    raise typer.Exit(code)


def duckdb_message(e: Exception) -> str:
    """DuckDB's error with its hints (`Did you mean "kernels"?`, candidate
    bindings, the line and caret), as one block: continuation lines indented."""
    lines = []
    for line in str(e).splitlines():
        if line.startswith("Traceback"):  # a Python error inside DuckDB's: its first line says it
            break
        if line.strip():
            lines.append(line.rstrip())
    return "\n".join(lines[:1] + ["  " + line for line in lines[1:12]])


def friendly_errors(fn):
    """Turn expected failures into one error (a line, or a block with DuckDB's
    hints) on stderr and exit code 2; Ctrl-C / SIGTERM: one line, 130."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except (TraceError, DuckprofError) as e:
            fail(str(e), e.exit_code)
        except duckdb.Error as e:
            if interrupts.is_interrupt(e):
                interrupts.acknowledge()
                fail("interrupted", 130)
            fail(duckdb_message(e))
        except BrokenPipeError:  # output piped into `head` and closed: not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0)
        except MemoryError as e:
            from .load import _out_of_memory
            fail(str(_out_of_memory(None, "running (Python)", e, os.environ.get("DUCKPROF_LOAD_MEMORY"))))
        except (ValueError, OSError) as e:
            fail(str(e))
        except (KeyboardInterrupt, RuntimeError) as e:
            if interrupts.is_interrupt(e):
                interrupts.acknowledge()
                fail("interrupted", 130)
            raise
    return wrapper


class Progress:
    """A progress bar on stderr for loads that take more than a moment: the
    loader's phase ("[2/5] parsing rank1.json.gz") and, while DuckDB runs a
    statement, its completion, polled from a second thread. Off when stderr is
    not a terminal or with --quiet."""

    BAR = 24

    def __init__(self, quiet: bool):
        self.enabled = not quiet and sys.stderr.isatty()
        self.msg = ""
        self.con = None
        self.t0 = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._thread = None

    def attach(self, con):
        """Start drawing; `con` is the loading connection (polled for progress).
        Again after done(): a later phase of the same command (an in-memory
        load's tables filled at first use), drawn after the same delay."""
        if not self.enabled:
            return
        if self._thread:  # still drawing an earlier phase's connection (a load's, then the html page's)
            self._stop.set()
            self._thread.join()
        self.con = con
        self.t0 = time.monotonic()
        self._stop.clear()
        con.execute("SET enable_progress_bar = true")  # track progress ...
        con.execute("SET enable_progress_bar_print = false")  # ... without DuckDB's own bar
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def __call__(self, msg: str):
        self.msg = msg

    def _run(self):
        while not self._stop.wait(0.2):
            if time.monotonic() - self.t0 < 0.7:
                continue
            try:
                pct = self.con.query_progress()
            except duckdb.Error:
                pct = -1
            if pct is not None and pct >= 0:
                filled = int(self.BAR * min(pct, 100) / 100)
                bar = f" [{'#' * filled}{'.' * (self.BAR - filled)}] {pct:5.1f}%"
            else:
                bar = ""
            sys.stderr.write(f"\r\033[K{self.msg[-90:]}{bar}")
            sys.stderr.flush()
            self.shown = True

    def done(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._thread = None
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False


def check_format(fmt: str, output: Optional[str]):
    if fmt not in render.FORMATS:
        raise DuckprofError(f"unknown --format {fmt!r}; choose one of {', '.join(render.FORMATS)}")
    if fmt == "parquet" and not output:
        raise DuckprofError("--format parquet needs --output FILE")


def open_data(traces=None, db=None, run=None, salvage=False, progress=None, wait: float = 0,
              lake=None) -> Session:
    """Traces given -> an in-memory session with them loaded (run 'default',
    or `run`). A lake directory -> a session over its Parquet files.
    Otherwise a read-only session on `db`."""
    if lake:
        if traces or db:
            raise DuckprofError("give trace files, --db FILE or --lake DIR, not several")
        from .lake import open_lake
        s = open_lake(lake)
        if run is not None:
            # sql(), not con: taking the connection would compute every derived table
            have = [r[0] for r in s.sql("SELECT DISTINCT run FROM trace_files ORDER BY 1").fetchall()]
            if run not in have:
                s.close()
                raise DuckprofError(f"{lake}: no run named {run!r} (runs: {', '.join(have) or 'none'})")
        return s
    if traces and db:
        raise DuckprofError(f"give trace files or --db, not both (to load them into {db} first: "
                            f"`duckprof load TRACES --db {db}`, then leave out TRACES)")
    if traces:
        s = Session(None)
        try:
            if progress is not None and hasattr(progress, "attach"):
                s.attach_progress(progress)
            s.load(list(traces), run=run or "default", salvage=salvage, progress=progress)
            s.fill_progress = progress  # what the load left to first use takes seconds on big traces
        except BaseException:
            s.close()
            raise
        finally:
            if progress is not None and hasattr(progress, "done"):
                progress.done()
        return s
    if not db:
        raise DuckprofError("give trace files, or --db FILE")
    s = Session(db, read_only=True, wait=wait)
    if run is not None:
        have = [r[0] for r in s.con.execute("SELECT DISTINCT run FROM trace_files ORDER BY 1").fetchall()]
        if run not in have:
            s.close()
            raise DuckprofError(f"{db}: no run named {run!r} (runs: {', '.join(have) or 'none'})")
    return s
