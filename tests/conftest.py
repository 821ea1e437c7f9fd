"""Shared fixtures for the loader tests (GitHub issue 2).

The real corpus is ../shared/traces (override with DUCKPROF_CORPUS). Expected
values never come from duckprof itself: they are hand-computed (fixtures/
handmade) or counted independently here with Python's json module.
"""

from __future__ import annotations

import collections
import contextlib
import decimal
import functools
import gzip
import hashlib
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: each worker builds its own (built_once)
    fcntl = None

import pytest

# pytest rewrites every test module's asserts at import and caches the result
# as .pyc; with PYTHONDONTWRITEBYTECODE set (as on this project's machines)
# it redoes that on every run and in every xdist worker: 8-10 s of each
# collection. The test modules, imported after this file, keep their cache.
sys.dont_write_bytecode = False

# A command started in the background by a shell without job control (`pytest &`
# in a script) ignores SIGINT, as POSIX says, and so does every process it starts:
# the tests that press Ctrl-C on a duckprof process (test_reliability,
# test_html_store) then saw it run on, exit 0 or a 30 s timeout ("flaky under
# load"; duckprof does right to ignore it there). The tests run as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# pytest-xdist hands its workers COLUMNS=<the controller's terminal width>; the
# tables the CLI prints take their width from COLUMNS, so tests see in every
# worker what they see without xdist: no COLUMNS unless a test sets it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # tests run against the source tree
    sys.path.insert(0, str(REPO))

import duckprof  # noqa: E402

CORPUS = Path(os.environ.get("DUCKPROF_CORPUS", REPO.parent / "shared" / "traces"))
HANDMADE = REPO / "fixtures" / "handmade"


@functools.cache
def _corpus_index() -> tuple[tuple[Path, ...], dict[str, str]]:
    """The corpus's trace files, one of each content, and {name of a copy:
    name of the file kept}. Of byte-for-byte copies (a corpus may hold some)
    the first by name is kept, as a load of them all keeps it (it skips the
    others as loaded already)."""
    if not CORPUS.is_dir():
        return (), {}
    kept, out, twins = {}, [], {}
    for p in sorted(p for p in CORPUS.iterdir() if p.name.endswith((".json", ".json.gz"))):
        first = kept.setdefault(hashlib.sha256(p.read_bytes()).digest(), p.name)
        if first == p.name:
            out.append(p)
        else:
            twins[p.name] = first
    return tuple(out), twins


def corpus_files() -> tuple[Path, ...]:
    return _corpus_index()[0]


class CorpusIds(dict):
    """{file name: trace_id} of the loaded corpus (corpus_files); a file left
    out as a copy of one of them reads as that one's trace."""

    def __missing__(self, name):
        twin = _corpus_index()[1].get(name)
        if twin is None:
            raise KeyError(name)
        return self[twin]


def corpus_path(name: str) -> Path:
    p = CORPUS / name
    if not p.exists():
        pytest.skip(f"corpus file {name} not found in {CORPUS}")
    return p


needs_corpus = pytest.mark.skipif(not corpus_files(), reason=f"no trace corpus at {CORPUS}")


def slow_when(values, slow):
    """Parametrize `values` with those in `slow` (or for which it returns True)
    marked slow. A tuple value is several arguments; test ids stay the same."""
    is_slow = slow if callable(slow) else (lambda v: v in slow)
    return [pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow) if is_slow(v) else v
            for v in values]


# -- independent reading of traces (Python's json module) ---------------------

def read_bytes(path) -> bytes:
    path = Path(path)
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def read_trace(path, exact: bool = False):
    """The whole document; with exact=True numbers with a fraction are Decimals.
    Invalid UTF-8 (torch's verbose mode writes some: fixtures/torch_verbose)
    and raw control characters are read as duckprof loads them: U+FFFD and
    the characters as they are."""
    kw = {"parse_float": decimal.Decimal} if exact else {}
    return json.loads(read_bytes(path).decode("utf-8", "replace"), strict=False, **kw)


def trace_events(doc) -> list[dict]:
    return doc if isinstance(doc, list) else doc["traceEvents"]


# Canonical category mapping, written independently of sql/load/insert_events.sql.
LEGACY_CATS = {
    "Operator": "cpu_op", "Kernel": "kernel", "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "async": "ac2g",
    "async_cpu_to_gpu": "ac2g", "async_gpu": "ac2g",
    "gpu_user_Annotation": "gpu_user_annotation",
}
KNOWN_CATS = {
    "kernel", "cpu_op", "cuda_runtime", "cuda_driver", "gpu_memcpy", "gpu_memset", "ac2g",
    "fwdbwd", "user_annotation", "gpu_user_annotation", "python_function",
    "cpu_instant_event", "trace", "overhead", "cuda_sync", "cuda_event", "cuda_profiler_range",
    "external_correlation", "glow_runtime", "mtia_runtime", "mtia_ccp_events", "mtia_insight",
    "mtia_counters", "hpu_op", "hip_runtime", "hip_driver", "xpu_runtime", "xpu_driver", "xpu_sync",
    "collective_comm", "privateuse1_runtime", "privateuse1_driver",
}
PRE_KINETO_PIDS = {"CPU functions": "cpu_op", "CUDA functions": "kernel"}


def canonical_cat(event: dict):
    cat = event.get("cat")
    if cat is None:
        if event.get("name") == "[memory]":
            return "cpu_instant_event"
        return PRE_KINETO_PIDS.get(event.get("pid")) if event.get("ph") == "X" else None
    if cat in LEGACY_CATS:
        return LEGACY_CATS[cat]
    if cat.lower() in KNOWN_CATS:
        return cat.lower()
    return cat


def category_counts(events) -> dict:
    return dict(collections.Counter(canonical_cat(e) for e in events))


# -- sessions ------------------------------------------------------------------

def built_once(tmp_path_factory, name: str, build):
    """build(an empty directory) -> a value (picklable), once per test run:
    under pytest-xdist the first worker to ask builds it under a file lock and
    the others wait and take its value, so files that tests only read are
    made once, not once per worker. Alone (or without fcntl): built here."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or fcntl is None:
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
    value = shared / f"{name}.pickle"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not value.exists():  # written only once build succeeded
            value.write_bytes(pickle.dumps(build(tmp_path_factory.mktemp(name))))
        return pickle.loads(value.read_bytes())


def _load_corpus(directory):
    db = directory / "corpus.duckdb"
    with duckprof.connect(db) as s:
        report = s.load([str(p) for p in corpus_files()], run="corpus")
    return db, report


@pytest.fixture(scope="session")
def corpus_loaded(tmp_path_factory):
    """A database file holding every corpus trace as run 'corpus', and the
    LoadReport of that load: one load per test run (built_once), which every
    process opens read-only."""
    if not corpus_files():
        pytest.skip(f"no trace corpus at {CORPUS}")
    return built_once(tmp_path_factory, "corpus", _load_corpus)


@pytest.fixture(scope="session")
def corpus_db(corpus_loaded):
    """The path of a database file holding every corpus trace as run 'corpus'."""
    return corpus_loaded[0]


@pytest.fixture(scope="session")
def corpus_session(corpus_loaded):
    """A read-only session on corpus_db (one load of the corpus per run: every
    process and the CLI tests open the same file read-only, as DuckDB allows).
    Yields (session, {file name: trace_id}, LoadReport). Loading takes 3 s or
    more, so every test that uses it is marked slow (pytest_collection_modifyitems)."""
    db, report = corpus_loaded
    s = duckprof.connect(db, read_only=True)
    ids = CorpusIds((os.path.basename(f.path), f.trace_id) for f in report.files)
    yield s, ids, report
    s.close()


@pytest.fixture(scope="session")
def gpu_patterns():
    """An in-memory session holding every handmade trace of the GPU pattern
    rules (fixtures/patterns/gpu/<rule>_yes.json and _no.json), each a run
    named after its file: loaded once per process for test_patterns.py and
    test_patterns_shared.py, which only read it (reports, rule queries,
    temporary result tables)."""
    files = sorted(p for p in (REPO / "fixtures" / "patterns" / "gpu").glob("*.json")
                   if p.stem.endswith(("_yes", "_no")))
    with duckprof.connect() as s:
        for path in files:
            s.load([str(path)], run=path.stem)
        yield s


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "corpus_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def synth_ranks(directory, ranks: int, events: int, **options) -> list[str]:
    """`ranks` synthetic rank traces (duckprof.synth, seed = rank) written
    into `directory` as rank00.json, rank01.json, ...; their paths."""
    from duckprof import synth
    files = []
    for r in range(ranks):
        files.append(str(Path(directory) / f"rank{r:02d}.json"))
        synth.generate(files[-1], events=events, seed=r, rank=r, world_size=ranks, **options)
    return files


def group_sizes(monkeypatch) -> list:
    """The sizes of the groups the stager parses in one statement."""
    from duckprof import load

    sizes = []
    real = load._ChunkStager.submit_group

    def submit_group(self, table, joined, part=0):
        sizes.append(len(joined.ranges))
        return real(self, table, joined, part)
    monkeypatch.setattr(load._ChunkStager, "submit_group", submit_group)
    return sizes


def sha256(path) -> str | None:
    p = Path(path)
    if not p.exists():
        return None
    return hashlib.sha256(p.read_bytes()).hexdigest()


class JoinsExplained:
    """A connection that notes, for each statement explained(sql) picks, the
    join operators of DuckDB's plan (EXPLAIN) in `joins`: an ASOF join that
    DuckDB runs as a loop over every pair shows as 'Nested Loop Join'."""

    def __init__(self, con, explained):
        self.con, self.explained, self.joins = con, explained, []

    def execute(self, sql, *params):
        if self.explained(sql):
            plan = "\n".join(r[1] for r in self.con.execute(f"EXPLAIN {sql}", *params).fetchall())
            self.joins.append(re.findall(r"(Nested Loop Join|Asof Join)", plan))
        return self.con.execute(sql, *params)

    def __getattr__(self, name):
        return getattr(self.con, name)


def db_state(db) -> tuple:
    """Fingerprint of a database file and its WAL (None where absent)."""
    return sha256(db), sha256(str(db) + ".wal")


@pytest.fixture
def tmp_db(tmp_path):
    return tmp_path / "runs.duckdb"


@pytest.fixture(scope="session")
def base_db_template(tmp_path_factory, cli_app):
    """A database file holding fixtures/handmade/nesting3.json (19 events),
    loaded by the CLI as run 'base', once per process: see base_db."""
    db = tmp_path_factory.mktemp("base") / "template.duckdb"
    r = invoke(cli_app, "load", HANDMADE / "nesting3.json", "--db", db, "-q", "-r", "base")
    assert r.exit_code == 0, r.stderr
    assert not os.path.exists(f"{db}.wal")
    return db


@pytest.fixture
def base_db(base_db_template, tmp_path):
    """A file of the test's own (it may change it, or check that a failed
    write leaves it byte for byte as it was) holding nesting3.json as run
    'base': a copy of base_db_template (a copy costs 1 ms, the load 0.3 s)."""
    db = tmp_path / "runs.duckdb"
    shutil.copyfile(base_db_template, db)
    return db


# -- the CLI -------------------------------------------------------------------

def run_cli(*args, cwd=None, timeout=120, env=None) -> subprocess.CompletedProcess:
    """Run `duckprof ARGS` in a fresh Python process (the real entry point)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    e.setdefault("COLUMNS", "200")
    if env:
        e.update(env)
    code = "import sys; from duckprof.cli import main; sys.argv[0] = 'duckprof'; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cli_app():
    from duckprof import cli, cli_reports  # noqa: F401  (registers report commands)
    return cli.app


def invoke(app, *args):
    """Run the CLI in-process (typer's CliRunner); returns the Result."""
    from typer.testing import CliRunner
    return CliRunner().invoke(app, [str(a) for a in args])


def _command_built_once():
    """typer's CliRunner.invoke builds the click command from the app on every
    call (0.05-0.1 s; the snapshot test alone invokes 700 times): build it
    once per app."""
    import typer.main
    import typer.testing
    built = {}

    def get_command(app):
        if id(app) not in built:
            built[id(app)] = (app, typer.main.get_command(app))
        return built[id(app)][1]
    typer.testing._get_command = get_command


_command_built_once()


def assert_one_line_error(stderr: str, must_contain):
    """Bad input: exactly one line on stderr, naming the file, no traceback."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{stderr}"
    assert "Traceback" not in stderr
    for s in ([must_contain] if isinstance(must_contain, str) else must_contain):
        assert s in lines[0], f"{s!r} not in {lines[0]!r}"
    return lines[0]


def assert_error_block(stderr: str, must_contain):
    """One error: a first line 'duckprof: ...', then only indented continuation
    lines (DuckDB's hints), no traceback. Returns the block's text."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    assert lines and lines[0].startswith("duckprof: "), stderr
    assert all(l.startswith("  ") for l in lines[1:]), f"not one error block:\n{stderr}"
    assert "Traceback" not in stderr
    text = "\n".join(lines)
    for s in ([must_contain] if isinstance(must_contain, str) else must_contain):
        assert s in text, f"{s!r} not in {text!r}"
    return text


# -- small query helpers (DuckDB relations have no fetchone()) ------------------

@contextlib.contextmanager
def loaded(*paths, run: str = "r"):
    """An in-memory session with the trace(s) `paths` loaded as `run` (the body
    of a module fixture: `with loaded(FILE) as s: yield s`)."""
    s = duckprof.connect()
    try:
        s.load([str(p) for p in paths], run=run)
        yield s
    finally:
        s.close()


def host_range(name: str, ts, end, cat: str = "user_annotation") -> dict:
    """A complete event [ts, end] µs on process 1, thread 1 (hand-made host traces)."""
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": end - ts, "args": {}}


def as_dicts(rel) -> list[dict]:
    """A relation's rows as dicts by column name."""
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def rows(s, sql: str, params=None) -> list[tuple]:
    return s.con.execute(sql, params).fetchall() if params else s.con.execute(sql).fetchall()


def scalar(s, sql: str, params=None):
    return rows(s, sql, params)[0][0]
