"""Load trace files into the database: find files, split them, let DuckDB parse
and normalise them (sql/load/*.sql), compute nesting, commit atomically.

Python only orchestrates: no loop here runs per event.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import shlex
import shutil
import tempfile
import threading
import time
import unicodedata
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from . import dbfile, estimators, interrupts, phase, sqlfiles
from .errors import DuckprofError, NotATraceError, TraceError
from .split import CONTENT_HASH, LEGACY_CONTENT_HASH, JoinedChunk, split_trace

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


@dataclass
class FileReport:
    path: str
    trace_id: int | None = None
    events: int = 0
    json_bytes: int = 0
    seconds: float = 0.0
    skipped: str = ""  # why the file was not loaded again
    notes: list[str] = field(default_factory=list)
    rank: int | None = None        # the trace's rank (traces.rank), once loaded
    world_size: int | None = None  # distributedInfo.world_size, once loaded


@dataclass
class LoadReport:
    run: str
    files: list[FileReport] = field(default_factory=list)
    committed: bool = False      # the load's transaction committed: the run is in the database
    commit_failed: bool = False  # COMMIT itself failed: whether it took effect is checked after
    tags_set: bool = False       # the run's tags were written in the load's transaction
    # load --prepare-html: None not asked (or not reached), False being prepared
    # (or failed), True its results stored
    page_prepared: bool | None = None

    @property
    def loaded(self):
        return [f for f in self.files if not f.skipped]

    @property
    def trace_ids(self) -> list[int]:
        """The trace_ids the loaded files were inserted as."""
        return [f.trace_id for f in self.loaded if f.trace_id is not None]

    def summary(self) -> str:
        n = len(self.loaded)
        ev = sum(f.events for f in self.loaded)
        mb = sum(f.json_bytes for f in self.loaded) / 1e6
        secs = sum(f.seconds for f in self.loaded)
        size = f"{mb:,.1f} MB" if mb >= 0.1 else f"{mb * 1000:,.1f} KB"
        out = [f"run '{self.run}': loaded {n} trace(s), {ev:,} events, {size}"
               # a rate over a few milliseconds says nothing
               + (f" in {secs:.2f} s" if secs > 0 and n else "")
               + (f" ({mb / secs:,.0f} MB/s)" if secs > 0 and n and mb >= 1 else "")]
        job = self.job_summary()
        if job:
            out.append(job)
        for f in self.files:
            if f.skipped:
                out.append(f"{f.path}: {f.skipped}")
            for note in f.notes:
                out.append(f"{f.path}: {note}")
        if self.page_prepared:
            out.append(f"html page of run '{self.run}' prepared: its report results are stored, "
                       f"`duckprof html --run {shlex.quote(self.run)}` reads them")
        return "\n".join(out)

    def job(self) -> dict:
        """The ranks of the loaded traces: {'ranks': sorted distinct ranks,
        'world_size': the largest distributedInfo.world_size (None: not
        recorded), 'missing': ranks in 0..world_size-1 not loaded,
        'duplicates': {rank: number of files} for ranks loaded more than once,
        'unranked': files without a rank}."""
        loaded = self.loaded
        ranks = [f.rank for f in loaded if f.rank is not None]
        sizes = [f.world_size for f in loaded if f.world_size]
        world = max(sizes) if sizes else None
        counts: dict[int, int] = {}
        for r in ranks:
            counts[r] = counts.get(r, 0) + 1
        have = set(ranks)
        return {"ranks": sorted(have), "world_size": world,
                "missing": [r for r in range(world) if r not in have] if world else [],
                "duplicates": {r: n for r, n in sorted(counts.items()) if n > 1},
                "unranked": sum(1 for f in loaded if f.rank is None)}

    def job_summary(self) -> str:
        """One line on the ranks of a job ('' for a single trace of a job of one):
        ranks found, missing ranks (gaps in 0..world_size-1), duplicates."""
        j = self.job()
        if not j["ranks"] or (len(self.loaded) < 2 and (j["world_size"] or 1) <= 1):
            return ""
        line = f"ranks {_ranges(j['ranks'])}" + (f" of world size {j['world_size']}" if j["world_size"] else "")
        if j["missing"]:
            line += f"; {len(j['missing'])} missing: {_ranges(j['missing'])}"
        elif j["world_size"]:
            line += "; none missing"
        if j["duplicates"]:
            line += "; loaded more than once: " + ", ".join(f"rank {r} ({n} files)" for r, n in j["duplicates"].items())
        if j["unranked"]:
            line += f"; {j['unranked']} trace(s) without a rank"
        return line


def _ranges(ranks) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    out, start, prev = [], None, None
    for r in sorted(ranks):
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = r
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


def _path_list(paths) -> list:
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def expand_paths(paths) -> list[str]:
    """Files, directories (recursive) and glob patterns -> sorted unique trace files."""
    out: list[str] = []
    for p in _path_list(paths):
        p = os.fspath(p)
        if os.path.isdir(p):
            found = sorted(
                os.path.join(root, f)
                for root, _dirs, files in os.walk(p)
                for f in files if f.endswith(TRACE_SUFFIXES))
            if not found:
                raise TraceError(p, "directory contains no trace files (*.json, *.json.gz)")
            out.extend(found)
        elif os.path.exists(p):
            out.append(p)
        elif glob.has_magic(p):
            found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            if not found:
                raise TraceError(p, "no files match this pattern")
            out.extend(found)
        else:
            raise TraceError(p, "no such file or directory")
    seen, unique = set(), []
    for f in out:
        a = os.path.abspath(f)
        if a not in seen:
            seen.add(a)
            unique.append(a)
    return unique


def rank_of(path: str, metadata: dict):
    info = metadata.get("distributedInfo")
    if isinstance(info, dict):
        try:
            return int(info.get("rank"))
        except (TypeError, ValueError):
            pass
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _of_bytes(done: int, total: int, files: int) -> str:
    """', 12 of 200 MB' for a progress line over several files (bytes done before this file)."""
    if files < 2 or not total:
        return ""
    unit, div = ("GB", 1e9) if total >= 1e10 else ("MB", 1e6)
    digits = 1 if total / div < 100 else 0
    return f", {done / div:,.{digits}f} of {total / div:,.{digits}f} {unit}"


def _int_or_none(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _clean_duckdb_error(e: Exception, split) -> str:
    msg = str(e).splitlines()[0]
    msg = re.sub(r"^[A-Za-z ]+Error: ", "", msg)
    for c in split.chunks:
        msg = msg.replace(f'in file "{c}", ', "").replace(c, "<traceEvents>")
    return msg.strip().rstrip(".")


STAGE_DB = "dp_stage"  # in-memory database attached during a load for staged events


def exact_table(table: str) -> str:
    """The exact timestamps (exact_ts.sql) of a staged table, when it needs them."""
    return table + "_exact"

# Traces smaller than this are inserted and nested together, up to this many
# bytes and files at once: per statement, not per event, costs dominate small
# traces, and a job may have thousands of rank files. A batch of files that
# were all parsed in groups (small ones) may hold GROUPED_BATCH times as many
# bytes: one whole group (a group is cut at that size: up to one file more).
# (Bigger traces keep smaller batches: a batch of several traces is
# inserted without keeping file order, see _insert.)
BATCH_BYTES = 64 << 20
BATCH_FILES = 1024
GROUPED_BATCH = 3
# Files up to GROUPED_FILE_BYTES whose traceEvents make one chunk are also
# parsed and checked together: a group, up to a grouped batch, staged in one
# table, in parts of up to GROUP_BYTES and GROUP_FILES per statement (their
# chunks joined into one file, one read_json, stage_events.sql grouped): a
# part is cut smaller than a batch so that parts parse side by side while the
# next files are split. One table a batch: DuckDB inserts a relation of
# several tables (UNION ALL) table by table, and appends each thread's share
# of a small table row by row a second time; parts of several row groups
# (122,880 events) let the parse spread over the cores, and fewer parts cost
# fewer statements (benchmarks/README.md).
GROUPED_FILE_BYTES = 16 << 20
GROUP_BYTES = 48 << 20
GROUP_FILES = 256
# args of this many bytes or more are staged in a column of their own
# (stage_events.sql: args_long; DuckDB keeps strings from 4 KB outside their
# segment)
STAGED_LONG_ARGS = 2048
# nesting.sql finds where a crossed event closes by searching a few blocks of
# this many positions of its thread (about the square root of a big thread)
NESTING_BLOCK = 2048


def _batches(prepared):
    """Consecutive runs of prepared files to insert with one set of statements.
    The byte cap does not cut a group (only BATCH_FILES does): the nesting and
    the insert of each batch read all of a group's staged rows, so a group in
    two batches would be read twice by each. A group is a batch (_Grouper cuts
    it at about that size): the next group starts another, so that a batch
    reads one staged table (stage_group_table.sql)."""
    batch, size, grouped = [], 0, True  # grouped: every file of the batch was parsed in a group
    for item in prepared:
        n = item[0].split.json_bytes
        group = item[0].group
        cap = BATCH_BYTES * (GROUPED_BATCH if grouped and group is not None else 1)
        last = batch[-1][0].group if batch else None
        inside = group is not None and last is group
        other = group is not None and last is not None and last is not group
        if batch and ((size + n > cap and not inside) or other or len(batch) >= BATCH_FILES):
            yield batch
            batch, size, grouped = [], 0, True
        batch.append(item)
        size += n
        grouped = grouped and group is not None
    if batch:
        yield batch


def _address_space_limit() -> int | None:
    """The process's address-space limit (ulimit -v) in bytes, None if unlimited."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


# stage_events.sql's maximum_object_size. DuckDB's JSON reader parses a file
# through a buffer of twice that size (an event may fill all of it), and
# takes no value below its default, 16 MiB. Each chunk parsing at once holds
# one buffer: at 16 MiB, 32 MiB (64 at 32 MiB), which is what a small load's
# memory limit must leave room for (load_memory_limit); a chunk with an event
# over 32 MiB is parsed again at _MAX_OBJECT.
_MIN_OBJECT = 16 << 20
_MAX_OBJECT = 32 << 20

AUTO_MEMORY = "auto"  # Loader(memory_limit=...): load_memory_limit of the files loaded
SCALED_MEMORY_BYTES = 64_000_000  # from this much JSON on, a load's memory limit scales with it
UNSCALED_MEMORY = "1GB"  # below it (and for a load with an event over 32 MiB)
# a load into a file when DUCKPROF_LOAD_MEMORY is unset: the scaled limit
# (AUTO_MEMORY) keeps a 100 MB load under 2x its JSON in memory but makes it
# ~40% slower (its staged events spill): speed first, the scaled limit asked for
DEFAULT_LOAD_MEMORY = UNSCALED_MEMORY
_BUFFER_MB = -(-2 * _MIN_OBJECT // 10**6)  # one JSON parse buffer (_MIN_OBJECT), in DuckDB's MB
# the smallest scaled limit: one chunk parsing (its buffer) and the blocks it
# writes; a parse that runs out of memory goes on under 1 GB (_read)
_MIN_LIMIT_MB = 56
_MAX_LIMIT_MB = 1000  # the largest scaled limit (from 570 MB of JSON): UNSCALED_MEMORY's


def _json_bytes(path: str) -> int:
    """The JSON size of a trace file, as far as known before reading it: a
    .gz file's trailer gives it modulo 4 GiB (at least the file's size)."""
    size = _size(path)
    try:
        with open(path, "rb") as f:
            if f.read(2) == b"\x1f\x8b" and size >= 18:
                f.seek(-4, os.SEEK_END)
                return max(size, int.from_bytes(f.read(4), "little"))
    except OSError:
        pass
    return size


# DUCKPROF_LOAD_MEMORY unset, a load through its own connection with the block
# allocator (file_load_memory): a little under DEFAULT_LOAD_MEMORY, as the
# blocks the allocator keeps mapped raise the peak by about that much
ALLOCATOR_LOAD_MEMORY = "950MB"
# the JSON from which a load gets the block allocator: it pays where the load
# spills (1 GB); below, it raised the peak (200 x 1 MB: +13%) and system time
ALLOCATOR_FROM_BYTES = 900_000_000


def file_load_memory(paths) -> tuple[str, dict]:
    """The memory limit of a load of `paths` into a file through its own
    connection (session.load_into) and the config to open that connection
    with: from ALLOCATOR_FROM_BYTES of JSON on, a block allocator as big as
    the limit, which keeps the buffers it hands out mapped until the
    connection closes. Without it a spilling load frees and maps its buffers
    again and again, and the kernel zeroes every page anew (page faults were
    two thirds of a 1 GB load's system time; benchmarks/README.md). Not for
    the scaled limit (AUTO_MEMORY: the limit changes during the load), no
    limit, nor under ulimit -v (the allocator reserves its address space up
    front)."""
    limit = os.environ.get("DUCKPROF_LOAD_MEMORY")
    allocator = (limit is None or (limit and limit.lower() != AUTO_MEMORY)) and _address_space_limit() is None
    if allocator:
        try:
            allocator = sum(_json_bytes(f) for f in expand_paths(paths)) >= ALLOCATOR_FROM_BYTES
        except (DuckprofError, OSError):
            allocator = False  # the load itself says what is wrong with the paths
    if not allocator:
        return (DEFAULT_LOAD_MEMORY if limit is None else limit), {}
    limit = ALLOCATOR_LOAD_MEMORY if limit is None else limit
    return limit, {"block_allocator_memory": limit}


def load_memory_limit(json_bytes: int) -> int | None:
    """DuckDB's memory limit (MB, DuckDB's: 10**6 bytes) for a load into a
    file when DUCKPROF_LOAD_MEMORY is 'auto', None for UNSCALED_MEMORY. From
    SCALED_MEMORY_BYTES of JSON on, what keeps the whole process near twice
    the JSON it loads: the process needs about 140 MB besides what DuckDB
    counts (Python, DuckDB's code, allocations its limit does not see), the
    limit is the rest of 2x, at most 1 GB (a bigger load spills) and at least
    _MIN_LIMIT_MB. A smaller load gets 1 GB: its peak (0.2-0.3 GB) is mostly
    the process's own, and squeezing DuckDB there costs a quarter more CPU
    for ~0.1 GB."""
    if json_bytes < SCALED_MEMORY_BYTES:
        return None
    return min(_MAX_LIMIT_MB, max(_MIN_LIMIT_MB, 2 * json_bytes // 10**6 - 140))


def parse_workers(limit_mb: int, threads: int) -> int:
    """How many chunks parse at once under a scaled limit: each holds a
    parse buffer that DuckDB cannot spill, and one buffer's worth stays free
    for the blocks they write and the checks that run meanwhile."""
    return max(1, min(threads, limit_mb // _BUFFER_MB - 1))


def _out_of_memory(path, doing: str, e: BaseException, memory_limit: str | None) -> DuckprofError:
    """DuckDB (or Python) ran out of memory. Under DuckDB's own memory_limit
    the cure is a higher limit or more free memory. Under a process limit
    (ulimit -v) allocations fail before DuckDB's limit is reached (it also
    reserves address space for parse buffers and threads): the cure is a
    lower DUCKPROF_LOAD_MEMORY, so that DuckDB spills to disk sooner, or a
    higher process limit."""
    first = (str(e).splitlines() or [""])[0] or type(e).__name__
    where = f"{path}: " if path else ""
    cap = _address_space_limit()
    if cap is not None:
        return DuckprofError(f"{where}out of memory while {doing} ({first}): this process may use at most "
                             f"{cap / 2**30:.1f} GiB of address space (ulimit -v), which DuckDB reaches before "
                             f"its own memory limit (DUCKPROF_LOAD_MEMORY={memory_limit or 'unset'}); lower "
                             f"DUCKPROF_LOAD_MEMORY to a third of the process limit or less (e.g. "
                             f"{max(cap // 3, 64 << 20) >> 20}MB) so that DuckDB spills to disk sooner, "
                             "or raise the limit")
    return DuckprofError(f"{where}out of memory while {doing} ({first}); raise DUCKPROF_LOAD_MEMORY "
                         f"(now {memory_limit or 'unset'}) or free memory")


def nest_host_events(con, nest: str, raws, exact: dict, params: dict, temp: bool = False, packed: bool = True):
    """The nesting of host events (nesting.sql) into the new table `nest`
    (nesting_table.sql): of the staged relations `raws` of a batch (exact,
    params: see normalize.sql), or, raws None, of the stored events of the
    traces params['trace_ids']; temp: `nest` is a temporary table. Runs
    statements that may fail (the packed key): not in a transaction that
    must go on, unless packed is False (the six keys only)."""
    con.execute(sqlfiles.render("load/nesting_table.sql", nest=nest, temp=temp))
    structure = dict(raws=raws, exact=exact, nest=nest, block=NESTING_BLOCK)

    def run(crossing, params):
        try:
            con.execute(sqlfiles.render("load/nesting.sql", crossing=crossing, packed=packed, **structure), params)
        except duckdb.InvalidInputException as e:
            # the time span, durations and ids of the batch too wide for one
            # 128-bit sort key (nesting.sql): the six keys
            if "packed key does not fit" not in str(e):
                raise
            con.execute(sqlfiles.render("load/nesting.sql", crossing=crossing, packed=False, **structure), params)

    # events that start inside another and outlive it (see nesting.sql):
    # looked for at once where they are expected, else the threads that
    # have them are redone
    ids = {"trace_ids": params["trace_ids"]} if raws is None else None
    if con.execute(sqlfiles.render("load/nesting_crossing.sql", raws=raws), ids).fetchall()[0][0]:
        run("all", params)
        return
    run("check", params)
    crossing = [t for (t,) in con.execute(sqlfiles.render("load/nesting_check.sql", nest=nest)).fetchall()]
    if crossing:
        con.execute(sqlfiles.render("load/nesting_clear.sql", nest=nest), {"threads": crossing})
        run("threads", {**params, "crossing_threads": crossing})


# "ts": a number of at least 2^43 us with a nonzero fraction (exact_ts_needed.sql)
_FRACTIONAL_TS = re.compile(rb'"ts"\s*:\s*-?([0-9]{13,})\.[0-9]*[1-9]')
_TS_HEAD = 64 << 10


def _fractional_epoch_ahead(chunk: str) -> bool:
    """Whether the head of a chunk file has a fractional absolute timestamp
    (2^43 us or more, with decimals): a guess, from which the chunk is parsed
    with its exact timestamps (_ChunkStager._stage_exact); a chunk that has
    them further on only is read again for them, as before."""
    with open(chunk, "rb") as f:
        head = f.read(_TS_HEAD)
    return any(int(m.group(1)) >= 1 << 43 for m in _FRACTIONAL_TS.finditer(head))


class _ChunkStager:
    """Parses chunk files into tables of the in-memory database dp_stage
    (stage_events.sql), several at once, each on its own cursor.

    Numbering events in file order (WITH ORDINALITY) makes DuckDB read a file on
    one thread, so the parallelism comes from parsing chunks side by side,
    about as many as there are cores. Chunks are
    submitted as the splitter finishes them, so parsing overlaps with copying
    or decompressing the rest of the file. Cursors are separate connections:
    their tables are committed at once and visible to the loader's connection
    as long as it first reads dp_stage after they exist (see Loader).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, workers: int, grow_to: str | None = None):
        self.con = con
        self.grow_to = grow_to  # the limit for a big event or a parse out of memory (_make_room)
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="duckprof-stage")
        self.local = threading.local()
        self.cursors: list = []
        self.lock = threading.Lock()
        self.exact: set = set()  # staged tables with exact timestamps (exact_table)
        # the ph of the marker event between two traces of a group: made for
        # this load, so that no trace's own event has it
        self.marker_ph = f"duckprof-next-file-{uuid.uuid4().hex}"
        self.marker = json.dumps({"ph": self.marker_ph}).encode()
        self.attached = False  # STAGE_DB, attached by the first submit (a load may stage nothing)

    def _attach(self):
        """Attach STAGE_DB before the first staging job (from the loader's
        thread, outside its transaction)."""
        if not self.attached:
            self.con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {STAGE_DB}")
            self.attached = True

    def _cursor(self):
        cur = getattr(self.local, "cur", None)
        if cur is None:
            cur = self.local.cur = self.con.cursor()
            with self.lock:
                self.cursors.append(cur)
        return cur

    def submit(self, table: str, chunk: str):
        self._attach()
        return self.pool.submit(self._stage, table, chunk)

    def create_group_table(self, table: str):
        """The empty staged table of a group (stage_group_table.sql), before
        any of its parts is parsed into it."""
        self._attach()
        cur = self.con.cursor()
        try:
            cur.execute(sqlfiles.render("load/stage_group_table.sql", raw=table))
        finally:
            cur.close()

    def submit_group(self, table: str, joined: JoinedChunk, part: int = 0):
        self._attach()
        return self.pool.submit(self._stage_group, table, joined, part)

    def _stage_group(self, table: str, joined: JoinedChunk, part: int = 0) -> int:
        """Parse the chunk file of part `part` of a group of small traces
        (their events, a marker event between two traces: split.JoinedChunk)
        into the group's table (stage_events.sql grouped); returns the number
        of rows it added (markers included). A parse error is raised. The
        part's file stays until the group is checked (check_group): a group
        that fails is parsed again file by file, to name the file at fault."""
        return self._read(self._cursor(), "load/stage_events.sql", joined.path, raw=table, grouped=True, part=part,
                          exact=False, long_args=STAGED_LONG_ARGS)[0][0]

    def check_group(self, g) -> tuple | None:
        """Once every part of group g is parsed (part.rows: the rows each
        added): takes the markers out of its table (group_markers.sql) and
        returns (starts, srcs, events) for stage_group_view.sql: per segment
        of events, the pos before it (its part's first, part x 2^32, then the
        markers' positions), its trace's index in the group, and its number of
        events (up to the next marker or the part's end: positions are
        consecutive). None when the group must be staged again file by file:
        a marker is not where it belongs (a damaged file hid it), or a file
        needs exact timestamps (read file by file by exact_ts.sql)."""
        cur = self.con.cursor()
        try:
            markers = sorted(m for (m,) in cur.execute(sqlfiles.render("load/group_markers.sql", raw=g.table),
                                                       {"marker": self.marker_ph}).fetchall())
            starts, srcs, events = [], [], []
            for k, part in enumerate(g.parts):
                lo = k << _PART_SHIFT
                mine = [m for m in markers if lo <= m < lo + (1 << _PART_SHIFT)]
                if len(mine) != max(len(part.joined.segments) - 1, 0):
                    return None
                if part.joined.segments:
                    bounds = [lo] + mine + [lo + part.rows + 1]
                    starts += bounds[:-1]
                    srcs += [part.first + s for s in part.joined.segments]
                    events += [b - a - 1 for a, b in zip(bounds, bounds[1:])]
            if cur.execute(sqlfiles.render("load/exact_ts_needed.sql", raw=g.table)).fetchall():
                return None
        finally:
            cur.close()
        return (starts, srcs, events) if starts else ([0], [0], [0])

    def _stage(self, table: str, chunk: str) -> int:
        cur = self._cursor()
        n = self._stage_exact(cur, table, chunk) if _fractional_epoch_ahead(chunk) else None
        if n is None:
            # CREATE TABLE ... AS returns the number of rows it wrote
            n = self._read(cur, "load/stage_events.sql", chunk, raw=table, grouped=False, exact=False,
                           long_args=STAGED_LONG_ARGS)[0][0]
            # fractional absolute timestamps: their exact text, read from the chunk
            # while it is here (exact_ts.sql), in parallel like the parse
            if cur.execute(sqlfiles.render("load/exact_ts_needed.sql", raw=table)).fetchall():
                self._read(cur, "load/exact_ts.sql", chunk, table=exact_table(table), staged=False)
                with self.lock:
                    self.exact.add(table)
        # staged: the chunk file is not needed any more (a load of many big
        # files would otherwise hold a copy of all their JSON in the temp dir)
        os.remove(chunk)
        return n

    def _stage_exact(self, cur, table: str, chunk: str) -> int | None:
        """Parse a chunk whose head has fractional absolute timestamps with
        their exact values in the same read (stage_events.sql exact), instead
        of reading its text a second time (exact_ts.sql). The tables are those
        of the two reads: the exact table only when exact_ts_needed.sql says so.
        None: the parse failed (a ts DECIMAL(38, 9) does not take: NaN, out of
        range, ...; or the chunk is bad), the chunk is staged as before, which
        reports the error of that parse, if any."""
        try:
            n = self._read(cur, "load/stage_events.sql", chunk, raw=table, grouped=False, exact=True,
                           long_args=STAGED_LONG_ARGS)[0][0]
        except (duckdb.InterruptException, duckdb.OutOfMemoryException):
            raise
        except duckdb.Error:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
            return None
        if cur.execute(sqlfiles.render("load/exact_ts_needed.sql", raw=table)).fetchall():
            cur.execute(sqlfiles.render("load/exact_ts.sql", table=exact_table(table), staged=True, raw=table))
            with self.lock:
                self.exact.add(table)
        cur.execute(f"ALTER TABLE {table} DROP COLUMN exact_ns")
        return n

    def _read(self, cur, sql: str, chunk: str, **template) -> list:
        """Run the statement `sql` (stage_events.sql, exact_ts.sql) on one
        chunk file with DuckDB's smallest JSON buffer (events up to 32 MiB);
        a chunk holding a bigger event is read again with _MAX_OBJECT's (up
        to 64 MiB, as before). Under a scaled limit, either is read again
        after running out of memory, under the limit of before. Returns its
        rows."""
        size, again = _MIN_OBJECT, bool(self.grow_to)
        while True:
            try:
                return cur.execute(sqlfiles.render(sql, max_object=size, **template), {"files": [chunk]}).fetchall()
            except duckdb.InvalidInputException as e:
                if size == _MAX_OBJECT or "maximum_object_size" not in str(e):
                    raise
                size = _MAX_OBJECT
            except duckdb.OutOfMemoryException:
                if not again:
                    raise
                again = False
            self._make_room(cur)

    def _make_room(self, cur):
        """Under a scaled memory limit (load_memory_limit), which leaves room
        for the small buffers only: the load goes on under the limit of
        before (the Loader restores the old one at the end). DuckDB needs
        several times an event's size to stage a big one (a 40 MB event: 256
        MiB at once)."""
        with self.lock:
            grow_to, self.grow_to = self.grow_to, None
            if grow_to:
                cur.execute("SET memory_limit = $m", {"m": grow_to})

    def drop(self, tables):
        cur = self.con.cursor()
        try:
            for t in tables:
                cur.execute(f"DROP TABLE IF EXISTS {t}")
        finally:
            cur.close()

    def close(self, abort: bool = False):
        """Wait for the parses still running; abort (on an error or Ctrl-C)
        interrupts them first."""
        if abort:
            with self.lock:
                for c in self.cursors:
                    c.interrupt()
        self.pool.shutdown(wait=True, cancel_futures=True)
        for c in self.cursors:
            c.close()


# a group's pos: the event's position in its part's chunk + the part's index
# times 2^32 (stage_events.sql grouped: a part holds far fewer events)
_PART_SHIFT = 32


@dataclass
class _Part:
    """Files of a group parsed by one statement (stage_events.sql grouped):
    their events joined into one chunk file."""
    joined: JoinedChunk  # its chunk file
    first: int           # the index in the group of its first file
    future: object = None  # its staging job
    rows: int = 0        # the rows its parse added (markers included)


@dataclass
class _Group:
    """Small traces parsed and checked together and inserted as one batch:
    one staged table, filled by the parse of each of its parts
    (stage_events.sql grouped), and one view numbering each file's events
    (stage_group_view.sql)."""
    view: str                                    # its view in dp_stage; its table is view + '_t'
    members: list = field(default_factory=list)  # [_Prepared], src = index
    parts: list = field(default_factory=list)    # [_Part], in order
    checked: bool = False                        # staged and checked (or fell back to file by file)

    @property
    def table(self) -> str:
        return self.view + "_t"

    def part_of(self, k: int) -> tuple:
        """(part, index in the part's chunk file) of member k."""
        for part in reversed(self.parts):
            if part.first <= k:
                return part, k - part.first
        raise IndexError(k)


@dataclass
class _Prepared:
    path: str
    split: object          # SplitTrace
    name: str              # its view over all its staged events in dp_stage (numbered in
                           # file order); its chunk tables are name_0, name_1, ...
    tables: list = field(default_factory=list)   # one staged table per chunk, in order
    futures: list = field(default_factory=list)  # their staging jobs (count of events each)
    events: int | None = None
    exact: str | None = None  # its view of exact timestamps (exact_ts.sql), when it has one
    held: list | None = None  # chunks written but not yet submitted (a small file, maybe grouped;
                              # or none: split.events holds its events, not written yet; or a
                              # file the insert may read: direct)
    group: _Group | None = None  # its group, when staged with other small files (then no tables)
    src: int = 0               # its index in the group
    error: Exception | None = None  # found when its group was checked; raised at its turn
    direct: bool = False       # may be read straight into events (Loader._split_all)
    chunk: str | None = None   # its one chunk file, read by the insert itself (not staged)
    chunk_exact: bool = False  # ... with the exact values of its fractional absolute timestamps


@dataclass
class _Batch:
    """Staged files inserted together (see _batches) as traces first, first + 1, ..."""
    files: list            # [(_Prepared, FileReport)]
    first: int             # trace_id of the first file
    nest: str | None       # its nesting staging table (nesting_table.sql); None: nesting deferred
    base: list             # baseTimeNanoseconds per file (0: absolute ts)
    exact: dict = field(default_factory=dict)  # position -> exact timestamp table (exact_ts.sql)
    seconds: float = 0.0   # time spent before the transaction

    def together(self) -> str:
        n = len(self.files) - 1
        return f" (inserted together with {n} other file(s))" if n else ""


class Target:
    """Where a load writes, and how it takes the right to: the loading
    connection's own database (a session in memory, or a database file the
    session holds open). session.load_into gives a database file that is
    opened for writing only for the write phase (DatabaseTarget).

    snapshot: before parsing, and again once write access is held: the
    content hashes loaded into the run and the next trace_id (nesting needs
    the ids: when another process loaded meanwhile, the load nests again).
    acquire: take write access (after parsing). prepare: inside the load's
    transaction, before the first insert (schema, views). complete: in the
    transaction after the inserts (derived tables, tags). finish: after
    COMMIT (a checkpoint). release: always, last.
    """

    label = "in-memory database"
    run = None  # the run being loaded (set by Loader.load)
    # True: nothing else writes to the target from the first snapshot to the
    # COMMIT (a session's private in-memory database), so the snapshot is not
    # taken again once write access is held
    exclusive = False
    # True: the target's COMMIT may checkpoint (a database file), which the
    # load keeps from vacuuming (complete_load)
    checkpoints = True
    # True: the load does not compute the op estimates (the nesting columns
    # of events) of its traces; the target computes them when first read (a
    # session in memory: session.DEFERRED)
    defer_estimates = False
    defer_nesting = False

    def snapshot(self, con, run: str) -> tuple[set, int]:
        next_id, known = con.execute(sqlfiles.read("load/snapshot.sql"), {"run": run}).fetchall()[0]
        return set(known), next_id

    def acquire(self, con):
        pass

    def prepare(self, con):
        pass

    def complete(self, con, report):
        pass

    def finish(self, con):
        pass

    def release(self, con, committed: bool):
        pass


MAX_RUN_NAME = 256
# in an error after a COMMIT that failed: the caller replaces it with what it finds
COMMIT_OUTCOME_PENDING = "whether the run was committed is checked next"


def check_run_name(run) -> str:
    """A run name is the label a user types and reads back: some visible
    text, one line, not a paragraph."""
    if not isinstance(run, str) or not run.strip():
        raise DuckprofError(f"run name {run!r} is empty; give one with --run NAME")
    if len(run) > MAX_RUN_NAME:
        raise DuckprofError(f"run name is {len(run):,} characters long; at most {MAX_RUN_NAME}")
    if any(unicodedata.category(c) == "Cc" for c in run):
        raise DuckprofError(f"run name {run[:60]!r} contains a control character (a newline or tab)")
    return run


def temp_dir() -> str:
    """The load's private directory for chunk files, under $TMPDIR. When
    TMPDIR is set but unusable that is an error naming it: Python's tempfile
    would quietly use another directory."""
    base = os.environ.get("TMPDIR") or tempfile.gettempdir()
    try:
        return tempfile.mkdtemp(prefix="duckprof-", dir=base)
    except OSError as e:
        raise DuckprofError(f"TMPDIR={base}: cannot create duckprof's temp directory there ({e.strerror}); "
                            "set TMPDIR to a writable directory with room for the traces' JSON") from None


def _temp_space_error(e: OSError, tmp: str, path: str) -> Exception:
    """Writing chunk files failed: say where (Python's message names no path)."""
    if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES):
        return e
    problem = {errno.ENOSPC: "no space left", errno.EDQUOT: "disk quota exceeded",
               errno.EFBIG: "file size limit reached (ulimit -f)"}.get(e.errno, e.strerror)
    return DuckprofError(f"{os.path.dirname(tmp)}: {problem} in the temp directory (TMPDIR) while copying "
                         f"{path} into chunk files (they take up to the trace's uncompressed size); "
                         "free space there, or set TMPDIR to a directory with room")


_TRACE_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


def _count_trace_events_keys(path) -> int:
    """How often a traceEvents array starts in the file (a diagnosis on an
    error path: the file is read once more, decompressed if needed)."""
    import gzip
    n, tail, keep = 0, b"", 64
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw) if gz else raw
            while True:
                block = f.read(8 << 20)
                data = tail + block
                last = not block
                # a match starting in the kept tail is counted with the next block
                n += sum(1 for m in _TRACE_EVENTS_KEY.finditer(data) if last or m.start() < len(data) - keep)
                if last:
                    return n
                tail = data[-keep:]
    except (OSError, EOFError):
        return n


def _bad_time_error(path, bad: int, bad_name) -> TraceError:
    return TraceError(path, f"{bad:,} event(s) have no ts, or a ts or dur that is not a usable number "
                            f"(NaN, inf or out of range), first: {bad_name!r}")


class _Grouper:
    """Collects the small files of a load, as they are split, into groups of
    up to a grouped batch (GROUPED_BATCH x BATCH_BYTES, BATCH_FILES), each
    staged in one table, in parts of up to GROUP_BYTES / GROUP_FILES: each
    part is written as one chunk file of its files' events (split.JoinedChunk:
    a small plain file's events are written there straight from the split, a
    compressed one's chunk is copied in) and parsed into the group's table in
    one statement (_ChunkStager.submit_group) as soon as it is full, beside
    the split of the next files and the parse of other parts. A file of
    several chunks, a bigger one, or a group of one is staged alone (its
    chunks as tables, as a big file's). A small file whose content is in the
    run already is not staged: _parse_all skips it."""

    def __init__(self, stager, known, tmp, small_bytes: int = 0):
        self.stager, self.seen, self.tmp = stager, set(known), tmp
        # a group is closed at this many bytes: the small files' bytes in as
        # many equal groups as there are grouped batches in them (1,000 x 1
        # MB: five groups of 203 MB rather than five of 201 and one of 12:
        # one batch, a set of statements, less)
        cap = BATCH_BYTES * GROUPED_BATCH
        self.cap = small_bytes / max(1, round(small_bytes / cap)) if 0 < cap < small_bytes else cap
        self.group: list = []  # the files of the group being filled
        self.parts: list = []  # its parts submitted
        self.joined: JoinedChunk | None = None  # its part being written
        self.bytes = 0       # the group's
        self.part_bytes = 0  # the part's
        self.part_first = 0  # the index in the group of the part's first file
        self.view: str | None = None  # the group's, once its first part is submitted
        self.count = 0  # groups made
        self.files = 0  # part files made (a group of one is staged alone)

    def add(self, p: _Prepared):
        held, p.held = p.held, None
        events, p.split.events = p.split.events, None
        seen = p.split.content_hash in self.seen
        self.seen.add(p.split.content_hash)
        if held is None or seen:  # a big file (its chunks are parsing already), or one to skip
            return
        if events is None and (len(held) != 1 or p.split.json_bytes > GROUPED_FILE_BYTES):
            self._alone(p, held)
            return
        if self.joined is None:
            self.joined = JoinedChunk(os.path.join(self.tmp, f"group_{self.files}.json"), self.stager.marker)
            self.files += 1
            self.part_first = len(self.group)
        if events is not None:
            self.joined.add_events(events)
        else:
            self.joined.add_chunk(held[0])
            os.remove(held[0])  # its events are in the group's file
            p.split.chunks = []
        self.group.append(p)
        self.bytes += p.split.json_bytes
        self.part_bytes += p.split.json_bytes
        if self.bytes >= self.cap or len(self.group) >= BATCH_FILES:
            self.flush()
        elif self.part_bytes >= GROUP_BYTES or len(self.group) - self.part_first >= GROUP_FILES:
            self._submit_part()

    def _submit_part(self):
        """Parse the part being written into the group's table (created with
        the group's first part)."""
        joined, self.joined, self.part_bytes = self.joined, None, 0
        joined.close()
        if self.view is None:
            self.view = f"{STAGE_DB}.grp_{self.count}"
            self.count += 1
            self.stager.create_group_table(self.view + "_t")
        part = _Part(joined, self.part_first)
        part.future = self.stager.submit_group(self.view + "_t", joined, len(self.parts))
        self.parts.append(part)

    def _alone(self, p: _Prepared, chunks):
        for chunk in chunks:
            table = f"{p.name}_{len(p.tables)}"
            p.tables.append(table)
            p.futures.append(self.stager.submit(table, chunk))

    def flush(self):
        """The group being filled is complete: its last part is parsed."""
        if self.joined is not None:
            if len(self.group) == 1:  # its events alone: a chunk of its own
                joined, self.joined, self.part_bytes = self.joined, None, 0
                joined.close()
                self.group[0].split.chunks = [joined.path]
                self._alone(self.group[0], [joined.path])
                self.group, self.bytes = [], 0
                return
            self._submit_part()
        if self.view is not None:
            g = _Group(self.view, self.group, self.parts)
            for k, p in enumerate(g.members):
                p.group, p.src = g, k
        self.group, self.parts, self.view, self.bytes = [], [], None, 0

    def close(self):
        """After an error: the part being written is not staged."""
        if self.joined is not None:
            self.joined.close(complete=False)


def _quietly(fn):
    """A cleanup step that must not hide the error being raised (the
    connection may be unusable after a fatal DuckDB error)."""
    try:
        fn()
    except duckdb.Error:
        pass


class _Restage(Exception):
    """A chunk read straight into events (Loader._insert) holds what the
    staged path decides (bad times, exact timestamps, an error): the load's
    transaction is rolled back, and the file staged."""


class Loader:
    """Loads files into one connection, atomically.

    Phase 1 (nothing is written to the target, which is not even open for
    writing): split each file into chunk files, parse them into tables of an
    attached in-memory database (_ChunkStager, stage_events.sql; small files
    in groups, one statement each, _Grouper), check them (validate.sql, per
    file) and nest them (nesting.sql, into staging tables), in batches. Bad
    input fails here with a clear TraceError; the few recoverable problems
    (invalid UTF-8, raw control characters, a chunk cut inside a nested
    object) are retried here. Phase 2: the target is opened for writing
    (Target.acquire), and one transaction normalises every staged file into
    the main tables (insert_events.sql, estimates). A DuckDB rollback does not
    restore a database *file* byte for byte (it has already written row
    groups), which is why bad input must be caught in phase 1. Phase 1 ends
    before the transaction begins: a transaction sees the staged tables that
    existed when it first read dp_stage, and may not write to two databases.

    One file into a session's own memory (nesting left to first use): its
    one chunk is not staged; the transaction's insert reads it itself
    (normalize.sql's chunk source), and direct_check.sql doubts, widely,
    what staging would refuse or treat apart. A doubt or a failed read
    rolls the transaction back (which restores an in-memory database), and
    the file goes through phase 1 as any other (_Restage).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, progress=None, memory_limit: str | None = None):
        self.con = con
        self.progress = progress or (lambda msg: None)
        # Loading into a database file: cap DuckDB's memory so a big trace spills
        # to disk instead of growing the process (at some cost in time; see
        # benchmarks/README.md). None: no cap; AUTO_MEMORY: load_memory_limit.
        self.memory_limit = memory_limit
        self.hash_name = CONTENT_HASH
        self.phase = ""
        self.write_out_of_memory = False  # the last error of the load's transaction (_write_error)
        self.defer_nesting = False  # the target's (Target.defer_nesting), during a load
        # DuckDB's preserve_insertion_order as the load found it, then as it set
        # it; set: the load changed it (reset to the default when it ends)
        self.insertion_order = True
        self.insertion_order_set = False
        self.threads = 1  # DuckDB's threads during the load
        # under a scaled limit (AUTO_MEMORY): the events are written a row group
        # at a time (_write_one_row_group)
        self.one_row_group = False

    def _phase(self, name: str):
        interrupts.check()  # a signal whose interrupt DuckDB let pass: the load stops here
        self.phase = name
        phase.mark(name)  # for tests (duckprof/phase.py)

    def load(self, paths, run: str = "default", salvage: bool = False, target: Target | None = None,
             report: LoadReport | None = None) -> LoadReport:
        """Load `paths` as (part of) `run` into `target` (default: this
        connection's database). `report`, when given, is filled in as the
        load goes: after an interrupt its `committed` says whether the run
        was loaded."""
        check_run_name(run)
        target = target or Target()
        target.run = run
        self.defer_nesting = target.defer_nesting
        files = expand_paths(paths)
        # one file into a session's memory (nesting left to first use, which
        # is what reads staged events before the transaction): its one chunk
        # is read by the insert itself, without a staging table (_insert)
        self.direct = target.defer_nesting and len(files) == 1
        report = report if report is not None else LoadReport(run=run)
        report.run = run
        con = self.con
        tmp = temp_dir()
        threads, old_limit, self.insertion_order = con.execute(
            "SELECT current_setting('threads'), current_setting('memory_limit'), "
            "current_setting('preserve_insertion_order')").fetchall()[0]
        threads, self.insertion_order_set = int(threads), False
        workers, grow_to = threads, None
        if str(self.memory_limit).lower() == AUTO_MEMORY:
            scaled = load_memory_limit(sum(_json_bytes(f) for f in files))
            self.memory_limit = UNSCALED_MEMORY if scaled is None else f"{scaled}MB"
            if scaled is not None:
                workers, grow_to = parse_workers(scaled, threads), UNSCALED_MEMORY
        if self.memory_limit:
            con.execute("SET memory_limit = $m", {"m": self.memory_limit})
        self.threads, buffered = threads, None
        if grow_to and scaled < _MAX_LIMIT_MB:  # at 1 GB a load writes as without a scaled limit
            buffered = con.execute("SELECT current_setting('write_buffer_row_group_count')").fetchall()[0][0]
            self._write_one_row_group(True)
        stager = _ChunkStager(con, workers, grow_to=grow_to)
        done = False
        try:
            self._phase("reading")
            known, next_id = target.snapshot(con, run)
            # a run loaded by an older duckprof keeps its hash (see split.CONTENT_HASH)
            self.hash_name = LEGACY_CONTENT_HASH if any(len(h) == 32 for h in known) else CONTENT_HASH
            pending = self._split_all(paths, files, report, tmp, stager, salvage, threads, known)
            prepared = self._parse_all(pending, known, run, len(files), tmp, stager, salvage)
            if not prepared:  # every file is in the run already: nothing to write, no lock to take
                done = True
                return report
            batches = self._nest_all(prepared, next_id, tmp)
            self._phase("locking")
            target.acquire(con)
            known_now, next_now = (known, next_id) if target.exclusive else target.snapshot(con, run)
            if next_now != next_id or known_now != known:
                # another process loaded into the database while this one parsed
                prepared = self._skip_known(prepared, known_now, run, stager)
                stager.drop([b.nest for b in batches if b.nest])  # exact timestamps belong to the staged files: kept
                batches = self._nest_all(prepared, next_now, tmp)
            notes = [list(fr.notes) for fr in report.files]
            try:
                self._write(batches, run, len(prepared), target, report)
            except _Restage:
                # rolled back: the file is staged as any other, which decides
                # what its direct read could not (and names any error)
                for fr, kept in zip(report.files, notes):
                    fr.notes = kept
                self._phase("parsing")
                for p, _ in prepared:
                    self._restage(p, tmp, stager, salvage)
                batches = self._nest_all(prepared, next_now, tmp)
                self._write(batches, run, len(prepared), target, report)
            except DuckprofError:
                if not (grow_to and self.write_out_of_memory) or report.committed or report.commit_failed:
                    raise
                # the scaled limit too tight for the transaction after all (it
                # rolled back): once more under the limit of before
                for fr, kept in zip(report.files, notes):
                    fr.notes = kept
                self.memory_limit = grow_to
                con.execute("SET memory_limit = $m", {"m": grow_to})
                self._write_one_row_group(False, buffered)
                self._write(batches, run, len(prepared), target, report)
            self._phase("checkpoint")
            target.finish(con)
            done = True
        except MemoryError as e:  # Python's side: reading, hashing, metadata
            raise _out_of_memory(None, f"{self.phase} (Python)", e, self.memory_limit) from None
        except RuntimeError as e:
            # a parse thread that cannot start: its stack does not fit in what
            # the process may still map (ulimit -v after DuckDB's reservations)
            if "can't start new thread" not in str(e):
                raise
            raise _out_of_memory(None, f"{self.phase} (starting a thread)", e, self.memory_limit) from None
        finally:
            with interrupts.deferred():
                stager.close(abort=not done)
                if self.insertion_order_set:
                    _quietly(lambda: con.execute("RESET preserve_insertion_order"))
                if stager.attached:
                    _quietly(lambda: con.execute(f"DETACH DATABASE IF EXISTS {STAGE_DB}"))
                shutil.rmtree(tmp, ignore_errors=True)
                if self.memory_limit:
                    _quietly(lambda: con.execute("SET memory_limit = $m", {"m": old_limit}))
                if buffered is not None:
                    _quietly(lambda: self._write_one_row_group(False, buffered))
                target.release(con, report.committed or report.commit_failed)
        self._phase("done")
        return report

    def _write_one_row_group(self, on: bool, buffered=None):
        """Under a scaled limit the insert of a batch's events must not hold
        them all in memory: DuckDB buffers the rows a transaction inserts
        (write_buffer_row_group_count, 5 row groups of 122,880 rows, on each
        thread) before writing them to the file, and a 100 MB trace's events
        (~300k rows of ~450 bytes) stayed in memory whole, ~130 MB under a
        limit of ~60MB: the insert ran out of memory and the load went on
        under 1 GB (the safety net of _write) in most loads
        (benchmarks/README.md). On: each row group written once full, and
        the events inserted on one thread (_insert), so one row group is in
        memory at a time; off: `buffered` (the setting found) and all threads
        again."""
        self.one_row_group = on
        self.con.execute(f"SET write_buffer_row_group_count = {1 if on else int(buffered)}")
        if not on:
            self.con.execute(f"SET threads = {self.threads}")

    def _split_all(self, paths, files, report, tmp, stager, salvage, threads, known) -> list:
        """Split every file (their chunks parse in the background); files
        found in a directory or by a pattern that are no trace are skipped.
        Small files of one chunk are parsed in groups (_Grouper); a file
        already in the run (known hashes, or met before in this load) is not
        parsed at all when small (_parse_all skips it)."""
        # files named on their own must be traces; the others (found in a
        # directory or by a pattern) may be a config or metrics JSON: skipped
        named = {os.path.abspath(p) for p in _path_list(paths) if os.path.isfile(p)}
        not_traces, pending = [], []
        sizes = [_size(f) for f in files]
        read, total = 0, sum(sizes)
        # the small files' JSON, as far as known before reading them: groups of
        # about equal size (_Grouper)
        grouper = _Grouper(stager, known, tmp,
                           sum(_json_bytes(f) for f, n in zip(files, sizes) if n <= GROUPED_FILE_BYTES))
        try:
            for i, path in enumerate(files):
                fr = FileReport(path=path)
                report.files.append(fr)
                self.progress(f"[{i + 1}/{len(files)}] reading {os.path.basename(path)}"
                              + _of_bytes(read, total, len(files)))
                read += sizes[i]
                t0 = time.perf_counter()
                p = _Prepared(path, None, f"{STAGE_DB}.raw_{i}", direct=self.direct,
                              held=[] if sizes[i] <= GROUPED_FILE_BYTES or self.direct else None)
                try:
                    p.split = self._split(p, tmp, stager, chunks=max(2, 2 * threads), salvage=salvage)
                except NotATraceError as e:
                    if path in named:
                        raise
                    fr.skipped = f"{e.problem}; skipped"
                    not_traces.append(str(e))
                    continue
                try:
                    if p.direct:
                        self._direct_or_staged(p, stager)
                    else:
                        grouper.add(p)
                except OSError as e:  # writing the group's chunk file
                    raise _temp_space_error(e, tmp, path) from None
                fr.seconds = time.perf_counter() - t0
                pending.append((p, fr))
            try:
                grouper.flush()
            except OSError as e:
                raise _temp_space_error(e, tmp, files[-1]) from None
        finally:
            grouper.close()
        if files and len(not_traces) == len(files):
            raise TraceError(", ".join(map(os.fspath, _path_list(paths))),
                             f"no trace among {len(files)} JSON file(s); {not_traces[0]}")
        return pending

    def _parse_all(self, pending, known, run, n_files, tmp, stager, salvage) -> list:
        """Wait for each file's chunks to be parsed and check them; a file
        already loaded into the run is skipped."""
        self._phase("parsing")
        prepared = []
        known = set(known)  # and the files met so far (a set per file would make 1,000s of files quadratic)
        parsed, to_parse = 0, sum(_size(p.path) for p, _ in pending)
        for i, (p, fr) in enumerate(pending):
            self.progress(f"[{i + 1}/{n_files}] parsing {os.path.basename(p.path)}"
                          + _of_bytes(parsed, to_parse, len(pending)))
            parsed += _size(p.path)
            t0 = time.perf_counter()
            if p.split.content_hash in known:
                fr.skipped = f"already loaded in run '{run}' (same content); skipped"
                self._discard(p, stager)
                continue
            known.add(p.split.content_hash)
            if p.chunk is not None:  # read by the insert (_insert)
                prepared.append((p, fr))
                continue
            if p.group is not None and not p.group.checked:
                self._finish_group(p.group, stager)
            if p.error is not None:
                raise p.error
            if p.group is None:
                self._finish(p, tmp, stager, salvage)
            fr.seconds += time.perf_counter() - t0
            prepared.append((p, fr))
        return prepared

    def _skip_known(self, prepared, known, run, stager) -> list:
        keep = []
        for p, fr in prepared:
            if p.split.content_hash in known:
                fr.skipped = f"already loaded in run '{run}' (same content, by another process meanwhile); skipped"
                self._discard(p, stager)
            else:
                keep.append((p, fr))
        return keep

    def _nest_all(self, prepared, next_id: int, tmp) -> list:
        """Batches of the prepared files as traces next_id, next_id + 1, ...,
        nested. Nesting (and exact timestamps) are computed from the staged
        events before the transaction, into staging tables that the insert
        joins: a transaction may not write to two databases."""
        self._phase("nesting")
        batches = []
        for k, batch in enumerate(_batches(prepared)):
            batches.append(_Batch(batch, next_id, f"{STAGE_DB}.nest_{k}",
                                  [_int_or_none(p.split.metadata.get("baseTimeNanoseconds")) or 0
                                   for p, _ in batch]))
            next_id += len(batch)
        done_files = 0
        for b in batches:
            say = self._say(b, done_files, len(prepared))
            t0 = time.perf_counter()
            try:
                self._nest(b, tmp, say)
            except duckdb.Error as e:
                raise self._stage_error(e, b.files[0][0], "nesting", b.together()) from None
            b.seconds = time.perf_counter() - t0
            done_files += len(b.files)
        return batches

    def _write(self, batches, run, total, target, report):
        """Phase 2: one transaction inserts every batch; report.committed is
        set together with the COMMIT (signals wait for both)."""
        con = self.con
        con.execute("BEGIN TRANSACTION")
        step = "preparing the database (schema, views)"
        try:
            target.prepare(con)
            done_files = 0
            for b in batches:
                p0 = b.files[0][0]
                t0 = time.perf_counter()
                self._phase("inserting")
                try:
                    self._insert(b, run, self._say(b, done_files, total), estimate=not target.defer_estimates)
                except duckdb.Error as e:
                    raise self._write_error(e, target, p0, b.together()) from None
                # the batch's time, shared out by size
                seconds = b.seconds + time.perf_counter() - t0
                size = sum(p.split.json_bytes for p, _ in b.files) or 1
                for k, (p, fr) in enumerate(b.files):
                    fr.trace_id = b.first + k
                    fr.seconds += seconds * p.split.json_bytes / size
                done_files += len(b.files)
            step = "storing the run's summary (trace_facts, tags)"
            target.complete(con, report)
            self._phase("committing")
            with interrupts.deferred():
                try:
                    con.execute("COMMIT")
                except duckdb.Error as e:
                    self._after_failed_commit(con, report)
                    raise self._write_error(e, target, None, "", report) from None
                report.committed = True
        except BaseException as e:
            if interrupts.is_interrupt(e):
                interrupts.acknowledge()  # acted on: the ROLLBACK must not be interrupted again
            if not report.committed:
                _quietly(lambda: con.execute("ROLLBACK"))
            if isinstance(e, duckdb.Error) and not interrupts.is_interrupt(e):
                # any other statement of the transaction (the schema, the derived
                # tables): a full disk reads as it does in the inserts and the COMMIT
                raise self._write_error(e, target, None, "", step=step) from None
            raise
        self._phase("committed")

    def _stage_error(self, e, p, doing: str, together: str = "") -> Exception:
        """What a DuckDB error before the transaction means (phase 1)."""
        if isinstance(e, duckdb.OutOfMemoryException):
            return _out_of_memory(p.path, doing, e, self.memory_limit)
        if dbfile.disk_full(e):
            spill = self.con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
            return DuckprofError(f"{os.path.abspath(spill)}: {dbfile.space_problem(e)} in DuckDB's temp directory "
                                 f"(where it spills what does not fit in memory) while {doing} {p.path}; "
                                 "free space there, or load fewer files at once")
        return TraceError(p.path, self._describe(e, p.split) + together)

    @staticmethod
    def _after_failed_commit(con, report):
        """Whether a COMMIT that raised took effect: asked on the same
        connection (the write lock is still held). Unknown when DuckDB has
        invalidated the database: report.commit_failed stays set."""
        _quietly(lambda: con.execute("ROLLBACK"))
        ids = report.trace_ids
        try:
            n = con.execute("SELECT count(*) FROM traces WHERE list_contains($ids, trace_id)",
                            {"ids": ids}).fetchall()[0][0]
        except duckdb.Error:
            report.commit_failed = True
            return
        report.committed = bool(ids) and n == len(ids)

    def _write_error(self, e, target, p, together: str, report=None, step: str = "the load's commit") -> Exception:
        """What a DuckDB error inside the transaction means (rolled back);
        `step`: what failed when it was no insert of file p."""
        self.write_out_of_memory = isinstance(e, duckdb.OutOfMemoryException)
        if report is not None and report.committed:
            return DuckprofError(f"{target.label}: the load's commit reported an error "
                                 f"({str(e).splitlines()[0]}), but run {target.run!r} was committed")
        outcome = (COMMIT_OUTCOME_PENDING if report is not None and report.commit_failed
                   else "nothing was loaded (rolled back)")
        if dbfile.disk_full(e):
            return DuckprofError(f"{target.label}: {dbfile.space_problem(e)} on the device that holds the database "
                                 f"while loading; {outcome}")
        if isinstance(e, duckdb.OutOfMemoryException):
            return _out_of_memory(p.path if p else target.label, "loading" if p else step, e,
                                  self.memory_limit)
        if p is None:
            return DuckprofError(f"{target.label}: {step} failed ({str(e).splitlines()[0]}); {outcome}")
        # validation should have caught it: still name the file(s)
        return TraceError(p.path, self._describe(e, p.split) + together)

    def _split(self, p: _Prepared, tmp, stager, chunks, salvage, sanitize=False, spaces=False,
               exact_salvage=False):
        """Split p's file; each chunk starts parsing as soon as it is written."""
        def on_chunk(chunk):
            if p.held is not None:  # a small file: _Grouper decides
                p.held.append(chunk)
                return
            table = f"{p.name}_{len(p.tables)}"
            p.tables.append(table)
            p.futures.append(stager.submit(table, chunk))
        try:
            # a small file's events go straight into its group's file (_Grouper)
            return split_trace(p.path, tmp, chunks=chunks, salvage=salvage, sanitize=sanitize,
                               spaces=spaces, on_chunk=on_chunk, hash_name=self.hash_name,
                               exact_salvage=exact_salvage, defer=p.held is not None and not p.direct)
        except OSError as e:
            self._discard(p, stager)
            raise _temp_space_error(e, tmp, p.path) from None
        except BaseException:
            self._discard(p, stager)
            raise

    def _discard(self, p: _Prepared, stager):
        """Throw away p's staged chunks: wait for their parses to end, drop their
        tables and chunk files (those of a split that failed midway go with tmp).
        A file of a group keeps its rows in the group's table: the batches
        leave them out (_sources)."""
        self._wait(p, check=False)
        with stager.lock:
            exact = [exact_table(t) for t in p.tables if t in stager.exact]
            stager.exact.difference_update(p.tables)
        stager.drop(p.tables + exact)
        for c in p.split.chunks if p.split is not None else []:
            if os.path.exists(c):
                os.remove(c)
        p.tables, p.futures = [], []

    @staticmethod
    def _wait(p: _Prepared, check=True) -> list[int]:
        """Wait for all of p's staging jobs; the first error is raised (check)
        only after every job has ended, so none is left writing."""
        counts, error = [], None
        for f in p.futures:
            try:
                counts.append(f.result())
            except BaseException as e:  # noqa: BLE001 - re-raised below
                error = error or e
        if error is not None and check:
            raise error
        return counts

    def _finish(self, p: _Prepared, tmp, stager, salvage):
        """Wait for p's chunks to be parsed, retrying the recoverable problems,
        then number its events in file order (a view) and check them."""
        attempts = 0
        while True:
            try:
                counts = self._wait(p)
                break
            except duckdb.OutOfMemoryException as e:
                raise _out_of_memory(p.path, "parsing", e, self.memory_limit) from None
            except duckdb.Error as e:
                if dbfile.disk_full(e):
                    raise self._stage_error(e, p, "parsing") from None
                msg, split = str(e), p.split
                self._discard(p, stager)
                attempts += 1
                if attempts > 3:
                    raise TraceError(p.path, self._parse_problem(e, p, split)) from None
                if "control character" in msg and split.sanitized:
                    if split.spaces:
                        raise TraceError(p.path, self._parse_problem(e, p, split)) from None
                    kw = dict(sanitize=True, spaces=True)
                elif ("control character" in msg or "UTF-8" in msg or "surrogate" in msg) and not split.sanitized:
                    kw = dict(sanitize=True)
                elif split.salvaged and not split.exact_salvage and "Malformed JSON" in msg:
                    # the quick --salvage cut fell inside an event: cut exactly
                    kw = dict(sanitize=split.sanitized, spaces=split.spaces, exact_salvage=True)
                elif len(split.chunks) > 1 and "Malformed JSON" in msg:
                    # a chunk cut inside a nested object: parse the array whole
                    kw = dict(sanitize=split.sanitized, spaces=split.spaces)
                else:
                    raise TraceError(p.path, self._parse_problem(e, p, split)) from None
                kw.setdefault("exact_salvage", split.exact_salvage)
                p.split = self._split(p, tmp, stager, chunks=1, salvage=salvage, **kw)
        # event_id = position in traceEvents: each chunk is numbered from 1
        offsets = [sum(counts[:k]) for k in range(len(counts))]
        con = self.con.cursor()
        try:
            con.execute(sqlfiles.render("load/stage_view.sql", raw=p.name, chunks=list(zip(p.tables, offsets)),
                                        exact=False))
            exact = [(exact_table(t), off) for t, off in zip(p.tables, offsets) if t in stager.exact]
            if exact:
                p.exact = exact_table(p.name)
                con.execute(sqlfiles.render("load/stage_view.sql", raw=p.exact, chunks=exact, exact=True))
            checked = con.execute(sqlfiles.render("load/validate.sql", raw=p.name, grouped=False,
                                                  whole=False)).fetchall()
        finally:
            con.close()
        _, events, bad, bad_name = checked[0] if checked else (0, 0, 0, None)
        if bad:
            raise _bad_time_error(p.path, bad, bad_name)
        p.events = events

    def _finish_group(self, g: _Group, stager):
        """Wait for group g to be parsed and check its events (validate.sql:
        in its table; per file, grouped, when one is bad), then number each
        file's events (stage_group_view.sql). A
        file with unusable times gets its error, raised at its turn. When the
        group cannot be parsed (one of its files is malformed, needs
        sanitising, ...; or a damaged file swallowed a marker) or needs exact
        timestamps, its files are staged again one by one, where the per-file
        retries and errors apply."""
        g.checked = True
        first = g.members[0]
        error = None
        for part in g.parts:  # every part ended before the group is checked or dropped
            try:
                part.rows = part.future.result()
            except BaseException as e:  # noqa: BLE001 - the first is acted on below
                error = error or e
        if isinstance(error, duckdb.OutOfMemoryException):
            raise _out_of_memory(first.path, f"parsing (with {len(g.members) - 1} other file(s))", error,
                                 self.memory_limit) from None
        if isinstance(error, duckdb.Error) and dbfile.disk_full(error):
            raise self._stage_error(error, first, "parsing") from None
        if error is not None and not isinstance(error, duckdb.Error):
            raise error
        staged = None if error is not None else stager.check_group(g)
        if staged is None:
            stager.drop([g.table])
            try:
                for k, p in enumerate(g.members):  # each file's events as a chunk of its own
                    part, i = g.part_of(k)
                    p.split.chunks = [f"{part.joined.path[:-len('.json')]}.{i}.json"]
                    part.joined.extract(i, p.split.chunks[0])
            except OSError as e:
                raise _temp_space_error(e, os.path.dirname(g.parts[0].joined.path), first.path) from None
            finally:
                for part in g.parts:
                    os.remove(part.joined.path)
            for p in g.members:
                p.group = None
                p.tables = [f"{p.name}_0"]
                p.futures = [stager.submit(p.tables[0], p.split.chunks[0])]
            return
        for part in g.parts:  # parsed: the files are not needed any more
            os.remove(part.joined.path)
        starts, srcs, counts = staged
        con = self.con.cursor()
        try:
            con.execute(sqlfiles.render("load/stage_group_view.sql", raw=g.view, table=g.table, starts=starts,
                                        srcs=srcs))
            # the group's events checked in its table, without numbering them
            # per file; only when one is bad, or the counts disagree, per file
            # through the view, to name the files
            (_, total, bad, _), = con.execute(sqlfiles.render("load/validate.sql", raw=g.table,
                                                              grouped=False, whole=True)).fetchall()
            if bad or total != sum(counts):
                checked = {src: (n, bad, bad_name) for src, n, bad, bad_name in
                           con.execute(sqlfiles.render("load/validate.sql", raw=g.view, grouped=True,
                                                       whole=False)).fetchall()}
            else:
                checked = {src: (n, 0, None) for src, n in zip(srcs, counts) if n}
        finally:
            con.close()
        for k, p in enumerate(g.members):
            events, bad, bad_name = checked.get(k, (0, 0, None))
            p.events = events
            if bad:
                p.error = _bad_time_error(p.path, bad, bad_name)

    @staticmethod
    def _sources(files) -> list:
        """The staged relations of a batch's files for normalize.sql (raws):
        {view, position} for a file staged alone, {view, positions} for the
        files of a group (its other files: none; and offset, positions[0],
        when they are all in the batch one after another), {chunk, position}
        for a chunk the insert reads (p.chunk)."""
        raws, groups = [], {}
        for k, (p, _) in enumerate(files):
            if p.chunk is not None:
                raws.append({"chunk": _MIN_OBJECT, "position": k, "exact": p.chunk_exact})
                continue
            if p.group is None:
                raws.append({"view": p.name, "position": k})
                continue
            raw = groups.get(id(p.group))
            if raw is None:
                raw = groups[id(p.group)] = {"view": p.group.view, "positions": [None] * len(p.group.members)}
                raws.append(raw)
            raw["positions"][p.src] = k
        for raw in raws:
            positions = raw.get("positions")
            if positions and positions[0] is not None and positions == list(range(positions[0],
                                                                                  positions[0] + len(positions))):
                raw["offset"] = positions[0]
        return raws

    def _say(self, b, done: int, total: int):
        """The progress line of batch b: '[3/7] nesting rank2.json' or '[1-5/7] ... 5 traces (...)'."""
        p0 = b.files[0][0]
        n = len(b.files)
        what = os.path.basename(p0.path) if n == 1 else f"{n} traces ({os.path.basename(p0.path)}, ...)"
        counter = f"{done + 1}" if n == 1 else f"{done + 1}-{done + n}"
        return lambda verb: self.progress(f"[{counter}/{total}] {verb} {what}")

    def _nest(self, b, tmp, say=lambda what: None):
        """Exact timestamps where needed (exact_ts.sql) and the nesting of the
        host events (nesting.sql) of batch b, into staging tables; unless the
        target leaves the nesting to first use (b.nest becomes None)."""
        # exact timestamps (read while staging) replace the doubles of absolute ones
        b.exact = {src: p.exact for src, (p, _) in enumerate(b.files) if p.exact and not b.base[src]}
        if self.defer_nesting:
            b.nest = None
            return
        say("nesting")
        nest_host_events(self.con, b.nest, self._sources(b.files), b.exact,
                         {"first_trace_id": b.first, "base_ns": b.base})

    def _insert(self, b, run, say=lambda what: None, estimate: bool = True):
        """Insert the staged, nested files of batch b as the traces b.first,
        b.first + 1, ... and (estimate) their estimates (in the load's transaction)."""
        con = self.con
        batch = b.files
        say("inserting")
        # Several small traces: DuckDB inserts their many one-row-group tables
        # one after another while it keeps insertion order. One big trace keeps
        # its file order on disk, which keeps the zone maps of ts_ns tight.
        # (load() resets the setting once the transaction has ended.)
        order = len(batch) == 1
        if order != self.insertion_order:
            con.execute(f"SET preserve_insertion_order = {'true' if order else 'false'}")
            self.insertion_order, self.insertion_order_set = order, True
        sql = sqlfiles.render("load/insert_events.sql", raws=self._sources(batch), exact=b.exact, nest=b.nest)
        direct = [p for p, _ in batch if p.chunk is not None]
        one_thread = self.one_row_group and self.threads > 1  # (_write_one_row_group)
        if one_thread:
            con.execute("SET threads = 1")
        try:
            if not direct:
                con.execute(sql, {"first_trace_id": b.first, "base_ns": b.base})
            else:
                self._insert_direct(sql, b, direct[0])
        finally:
            if one_thread:  # (after a failure: load() sets it again once rolled back)
                _quietly(lambda: con.execute(f"SET threads = {self.threads}"))
        windows = {t: (lo, hi) for t, lo, hi in con.execute(
            sqlfiles.read("load/trace_windows.sql"),
            {"first_trace_id": b.first, "last_trace_id": b.first + len(batch) - 1}).fetchall()}
        self._insert_trace_rows(batch, run, b.first, b.base, windows)
        for p, fr in batch:
            fr.events = p.events
            fr.json_bytes = p.split.json_bytes
            if p.split.salvaged_bytes:
                fr.notes.append(f"truncated file salvaged: loaded {p.events:,} complete events, "
                                f"dropped the last {p.split.salvaged_bytes:,} bytes "
                                f"(an incomplete event starting {p.split.salvaged_preview[:60]!r})")
            fr.notes.extend(p.split.notes)
        if estimate:
            say("estimating")
            estimators.add_estimates(con, b.first, b.first + len(batch) - 1)

    def _direct_or_staged(self, p: _Prepared, stager):
        """After p's split (p.direct): its one chunk is read by the insert
        (p.chunk): with the exact values of its timestamps when its head has
        fractional absolute ones (as _stage_exact) and the trace has no
        baseTimeNanoseconds (with one, they are not used). A file of several
        chunks is staged as a big file is."""
        held, p.held = p.held, None
        if len(held) == 1:
            p.chunk = held[0]
            p.chunk_exact = (not _int_or_none(p.split.metadata.get("baseTimeNanoseconds"))
                             and _fractional_epoch_ahead(held[0]))
            return
        p.direct = False
        for chunk in held:
            p.tables.append(f"{p.name}_{len(p.tables)}")
            p.futures.append(stager.submit(p.tables[-1], chunk))

    def _insert_direct(self, sql, b, p: _Prepared):
        """The insert of batch b (its one file p) reading p's chunk itself,
        then direct_check.sql on what it inserted: p's number of events, or
        _Restage when the read failed or an event may be one that staging
        decides (validate.sql, exact_ts_needed.sql). An interrupt, a lack of
        memory or disk space is no reason to stage: it is raised."""
        con = self.con
        try:
            con.execute(sql, {"first_trace_id": b.first, "base_ns": b.base, "files": [p.chunk]})
            events, doubtful, confirmed = con.execute(
                sqlfiles.read("load/direct_check.sql"),
                {"trace_id": b.first, "base_ns": b.base[0], "exact": p.chunk_exact}).fetchall()[0]
        except duckdb.Error as e:
            if interrupts.is_interrupt(e) or isinstance(e, duckdb.OutOfMemoryException) or dbfile.disk_full(e):
                raise
            raise _Restage() from None
        if doubtful or not confirmed:
            raise _Restage()
        p.events = events

    def _restage(self, p: _Prepared, tmp, stager, salvage):
        """p's chunk, which the insert was to read (p.chunk), staged and
        checked as any file's (_finish: its retries, its errors)."""
        if p.chunk is None:
            return
        p.tables, p.futures = [f"{p.name}_0"], [stager.submit(f"{p.name}_0", p.chunk)]
        p.chunk, p.chunk_exact, p.direct = None, False, False
        self._finish(p, tmp, stager, salvage)

    # how far the diagnosis of an event that does not end reads (the whole
    # array is held in one buffer)
    DIAGNOSE_BYTES = 512 << 20

    def _parse_problem(self, e, p: _Prepared, split) -> str:
        """_describe, and for the two parse errors that say nothing about
        where the file is damaged, a second look that does."""
        msg = str(e)
        if "maximum_object_size" in msg:
            where = self._find_malformed_event(p, split)
            limit = (2 * _MAX_OBJECT) >> 20  # DuckDB's JSON reader holds an object in twice maximum_object_size
            if where == "":
                return (f"an event in traceEvents is longer than {limit} MiB, the most DuckDB's JSON reader "
                        "takes in one object (the JSON itself is valid); such a trace cannot be loaded")
            return ("not valid JSON inside traceEvents: an event does not end where it should (a bracket, "
                    f"comma or quote is missing or extra, so DuckDB read on past {limit} MiB "
                    "looking for its end)" + (f"; the JSON breaks in {where}" if where else
                                              f", or an event is longer than {limit} MiB"))
        if "Malformed JSON" in msg and _count_trace_events_keys(p.path) > 1:
            return ("not a trace: 'traceEvents' appears twice at the top level (a trace has one array of "
                    "events; was the file written twice, or two traces joined?)")
        return self._describe(e, split)

    def _find_malformed_event(self, p: _Prepared, split) -> str | None:
        """Where the JSON of p's events breaks, read whole in one object; ""
        when it does not (valid JSON: an event is too long for the chunked
        read); None when not known (too big to read so, or no position)."""
        if split.json_bytes > self.DIAGNOSE_BYTES:
            return None
        tmp = temp_dir()
        try:
            again = split_trace(p.path, tmp, chunks=1, salvage=split.salvaged, sanitize=split.sanitized,
                                spaces=split.spaces, hash_name=self.hash_name, exact_salvage=split.exact_salvage)
            size = sum(os.path.getsize(c) for c in again.chunks)
            self.con.execute(sqlfiles.read("load/find_malformed_event.sql"),
                             {"files": again.chunks, "max_bytes": size + 1}).fetchall()
            return ""
        except duckdb.Error as e:
            m = re.search(r"at byte (\d+) in record/value (\d+): ([^.]*)", str(e))
            if m:
                return f"event {int(m.group(2)):,} of traceEvents ({m.group(3)} at its byte {m.group(1)})"
        except (TraceError, OSError):
            pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return None

    @staticmethod
    def _describe(e, split) -> str:
        msg = _clean_duckdb_error(e, split)
        if "duplicate key" in msg:
            return f"not valid JSON inside traceEvents: an event has a duplicate key ({msg})"
        if "Expected OBJECT" in msg:  # e.g. [1, 2, 3] or {"traceEvents": ["x"]}
            return f"not a trace: traceEvents holds a value that is not an event object ({msg})"
        if "Malformed JSON" in msg or "unexpected" in msg:
            return f"not valid JSON inside traceEvents ({msg})"
        # ts and dur are the numbers the reader casts: say so, and which event (in a file of
        # one chunk: DuckDB counts the events of the chunk it read)
        bad = re.search(r"record/value (\d+): Failed to cast value to numerical: (.*)$", msg)
        if bad:
            which = f"event {int(bad.group(1)):,} of traceEvents" if len(split.chunks) <= 1 else "an event"
            return f"{which} has a ts or dur that is not a number: {bad.group(2)}"
        return msg

    _TRACE_COLUMNS = ("trace_id", "run", "rank", "path", "size_bytes", "json_bytes", "content_hash", "loaded_at",
                      "base_time_ns", "schema_version", "event_count", "salvaged_bytes", "metadata",
                      "first_ts_ns", "last_end_ns")
    _DEVICE_COLUMNS = ("trace_id", "device", "name", "total_global_mem_bytes", "compute_major", "compute_minor",
                       "num_sms", "properties")

    def _insert_trace_rows(self, batch, run, first, base, windows):
        """The traces and devices rows of one batch, each table in one
        statement (insert_traces.sql, insert_devices.sql): per-row statements
        would cost more than the rest of a small trace's insert. windows:
        trace_id -> (first_ts_ns, last_end_ns), from trace_windows.sql (read
        apart: a traces insert that joins them costs 1 ms more to plan)."""
        loaded_at = datetime.now(timezone.utc).replace(tzinfo=None)
        traces, devices = [], []
        for k, (p, _) in enumerate(batch):
            split, meta = p.split, p.split.metadata
            traces.append((first + k, run, rank_of(p.path, meta), p.path, split.size_bytes, split.json_bytes,
                           split.content_hash, loaded_at, base[k] or None,
                           None if meta.get("schemaVersion") is None else str(meta.get("schemaVersion")),
                           p.events, split.salvaged_bytes, json.dumps(meta, allow_nan=True, default=str),
                           *windows.get(first + k, (None, None))))
            # 'computeProperties', with 'major'/'minor': Kineto's first spelling (PyTorch 1.8)
            props = meta.get("deviceProperties", meta.get("computeProperties"))
            for d in props if isinstance(props, list) else []:
                if isinstance(d, dict):
                    devices.append((first + k, _int_or_none(d.get("id")), str(d.get("name", "")),
                                    _int_or_none(d.get("totalGlobalMem")),
                                    _int_or_none(d.get("computeMajor", d.get("major"))),
                                    _int_or_none(d.get("computeMinor", d.get("minor"))),
                                    _int_or_none(d.get("numSms", d.get("multiProcessorCount"))),
                                    json.dumps(d, default=str)))
        self._insert_rows("load/insert_traces.sql", self._TRACE_COLUMNS, traces)
        self._insert_rows("load/insert_devices.sql", self._DEVICE_COLUMNS, devices)

    def _insert_rows(self, sql_file, columns, rows):
        """Tuples in the order of ``columns``: one list parameter per column."""
        if rows:
            self.con.execute(sqlfiles.read(sql_file), dict(zip(columns, (list(c) for c in zip(*rows)))))
