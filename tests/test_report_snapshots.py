"""Every standard report on every corpus trace, compared with a snapshot.

The snapshots in fixtures/snapshots/ were taken with duckprof itself (commit
b2e102f, before the "one shape" refactor of issue 12): they are not an oracle
of correctness (the tests against torch, HTA and hand-computed values are),
they pin the output so that a refactor changes nothing by accident. A change
that is meant to change a report's numbers regenerates them on purpose:

    DUCKPROF_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_report_snapshots.py

and its commit message says which numbers moved and why.

One database holds every corpus trace, each its own run: each report runs
once over all runs in csv format (exact values, every column) and its rows and
notes, split by run, are compared with each run's snapshot (taken with --run on
a database of that trace alone, where its trace_id is 1). The reports whose
notes are not one trace's, the runs whose snapshot is a message, and a handful
of others run that way (--db/--run) on each trace; a diff's two traces are two
runs of the shared database. Each snapshot folder records the sha256 of the
trace it was taken on: a corpus whose file differs skips that trace's
comparisons with the reason; a trace without snapshot runs every report
uncompared (the product is judged on a corpus with more traces).
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, corpus_files, invoke, needs_corpus, sha256
from duckprof.session import Session

SNAPSHOTS = REPO / "fixtures" / "snapshots"
UPDATE = os.environ.get("DUCKPROF_UPDATE_SNAPSHOTS") == "1"

# (file stem, CLI arguments after `report`); RUN is replaced by the run name
REPORTS = [
    ("kernels", ["kernels", "--limit", "0"]),
    ("kernels_launch", ["kernels", "--group-by-launch", "--limit", "5"]),
    ("kernels_occupancy", ["kernels", "--occupancy", "--limit", "10"]),
    ("gpu_time", ["gpu-time"]),
    ("gpu_time_steps", ["gpu-time", "--by-step"]),
    ("gpu_time_hta", ["gpu-time", "--hta"]),
    ("gpu_time_occupancy", ["gpu-time", "--occupancy"]),
    ("idle", ["idle", "--limit", "15"]),
    ("idle_hta", ["idle", "--hta", "--limit", "15"]),
    ("idle_events", ["idle", "--by", "event", "--limit", "15"]),
    ("queue", ["queue"]),
    ("queue_hta", ["queue", "--hta"]),
    ("temporal", ["temporal"]),
    ("temporal_hta", ["temporal", "--hta"]),
    ("traces", ["traces"]),
    ("devices", ["devices"]),
    ("gpu_time_buckets", ["gpu-time", "--buckets", "12"]),
    ("queue_buckets", ["queue", "--buckets", "12"]),
    ("ops", ["ops"]),
    ("ops_shapes", ["ops", "--group-by-input-shape", "--limit", "10"]),
    ("ops_stack", ["ops", "--group-by-stack", "3", "--limit", "10"]),
    ("ops_all", ["ops", "--limit", "0"]),
    ("ops_top_level", ["ops", "--top-level-only", "--sort", "device_total", "--limit", "10"]),
    ("categories", ["categories"]),
    ("categories_steps", ["categories", "--by-step"]),
    ("steps", ["steps"]),
    ("steps_summary", ["steps", "--summary"]),
    ("steps_tensorboard", ["steps", "--breakdown", "tensorboard"]),
    ("memory", ["memory"]),
    ("memory_steps", ["memory", "--by-step"]),
    ("memory_ops", ["memory", "--ops"]),
    ("memory_curve", ["memory", "--curve", "--buckets", "20"]),
    ("modules", ["modules"]),
    ("collectives", ["collectives", "--by-rank"]),
    ("ranks", ["ranks"]),
    ("ranks_hta", ["ranks", "--hta"]),
    ("patterns", ["patterns"]),
    ("patterns_list", ["patterns", "--list"]),
    ("launches", ["launches", "--limit", "0"]),
    ("launches_hta", ["launches", "--hta", "--limit", "0"]),
]
DIFF_PAIRS = [
    ("tiny_compare_base.json.gz", "tiny_compare_test.json.gz"),
    ("v100_resnet50_workers0_2021.json.gz", "v100_resnet50_workers4_2021.json.gz"),
    ("sampled_rank0_no_devprops.json.gz", "sampled_rank1_no_devprops.json.gz"),
]
DIFF_LEVELS = [
    ("kernel", ["--by", "kernel"]),
    ("op", ["--by", "op", "--normalize"]),
    ("op_shapes", ["--by", "op", "--group-by-input-shape", "--op-time", "self"]),
    ("category", ["--by", "category"]),
    ("device", ["--by", "device", "--no-per-step"]),
]


def run_name(path: Path) -> str:
    return path.name.split(".json")[0]


def database(tmp_path, *names) -> Path:
    """A database file holding each corpus trace `names` as run run_name(name);
    skips when the corpus lacks one, or holds another file under its name."""
    import duckprof
    db = tmp_path / "snap.duckdb"
    with duckprof.connect(db) as s:
        for name in names:
            path = CORPUS / name
            if not path.exists():
                pytest.skip(f"corpus file {name} not found in {CORPUS}")
            if UPDATE:
                source = SNAPSHOTS / run_name(path) / "SOURCE"
                source.parent.mkdir(parents=True, exist_ok=True)
                source.write_text(f"{sha256(path)}  {name}\n", encoding="utf-8")
            elif (status := snapshot_status(name)) not in (None, NO_SNAPSHOT):
                pytest.skip(status)
            s.load([str(path)], run=run_name(path))
    return db


def check(name: str, text: str):
    path = SNAPSHOTS / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path}; run with DUCKPROF_UPDATE_SNAPSHOTS=1"
    want = path.read_text(encoding="utf-8")
    if text != want:
        assert same_cells(text, want), f"{name} differs from its snapshot"


def same_cells(got: str, want: str) -> bool:
    """Equal but for the last digits of floats: DuckDB's parallel sums (the idle
    score's standard deviations) may add in another order from run to run."""
    a, b = list(csv.reader(io.StringIO(got))), list(csv.reader(io.StringIO(want)))
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb):
            if x == y:
                continue
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                return False
            if not math.isclose(fx, fy, rel_tol=1e-9, abs_tol=1e-9):
                return False
    return True


def cli_output(cli_app, args, db: Path) -> str:
    res = invoke(cli_app, *args)
    assert res.exit_code == 0, res.output
    text = res.stdout + "".join(f"stderr: {line}\n" for line in res.stderr.splitlines())
    return text.replace(str(db), "DB")


# The reports whose notes are the whole report's, not one trace's (patterns'
# fixes, collectives' "no process group recorded") or name the run, not the
# file (ranks' "has one trace"), run on each trace in a database of its own
# with --run (on the database of every trace, --run costs a report over all
# runs), as do a handful of the others on two traces, to keep that path tested.
# Under DUCKPROF_UPDATE_SNAPSHOTS=1, every report on every trace (stems None):
# the snapshots are taken this way.
PER_RUN = {"patterns", "collectives", "ranks", "ranks_hta"}
ALL_TRACES = sorted({f.name for f in corpus_files()} | {p.read_text().split()[1] for p in SNAPSHOTS.glob("*/SOURCE")})
HANDFUL = {"tiny_compare_base.json.gz": {"kernels", "gpu_time", "idle", "ops_shapes", "memory"},
           "h100_vit_inference.json.gz": {"kernels_launch", "queue_hta", "steps", "memory_ops", "memory_curve"}}


def is_message(path: Path) -> bool:
    """A snapshot of a run without rows: the report's message, not a table
    (its first line is no csv header with a run column)."""
    return path.exists() and "run" not in next(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))), [])


def single_run_stems(trace: str) -> set | None:
    """The reports run with --run on a database of the trace alone: PER_RUN,
    those whose snapshot is a message (on the database of every trace, --run
    costs a report over all runs), the handful; None (all): regenerating."""
    if UPDATE:
        return None
    folder = SNAPSHOTS / run_name(Path(trace))
    return PER_RUN | HANDFUL.get(trace, set()) | {stem for stem, _ in REPORTS if is_message(folder / f"{stem}.csv")}


SINGLE_RUN = [(t, single_run_stems(t)) for t in ALL_TRACES]


@pytest.mark.slow
@needs_corpus
@pytest.mark.parametrize("trace,stems", SINGLE_RUN)
def test_single_run_reports_equal_their_snapshots(tmp_path, cli_app, monkeypatch, trace, stems):
    """Each trace in a database of its own, its reports with --run (stems:
    see SINGLE_RUN). A trace without snapshot runs them uncompared."""
    run = run_name(Path(trace))
    compared = UPDATE or (CORPUS / trace).exists() and snapshot_status(trace) is None
    corpus_db = database(tmp_path, trace)
    # The database is opened once (read-only, as `duckprof report --db` opens
    # it) for all its reports, not once per report: opening checks the file
    # (0.2-0.3 s), which tests/test_security.py and test_persistent.py test.
    from duckprof import cli_reports
    shared = Session(corpus_db, read_only=True)
    monkeypatch.setattr(cli_reports, "open_data", lambda *a, **kw: contextlib.nullcontext(shared))
    try:
        for stem, args in REPORTS:
            if stems is not None and stem not in stems:
                continue
            out = cli_output(cli_app, ["report", *args, "--db", corpus_db, "--run", run, "--format", "csv"],
                             corpus_db)
            if compared:
                check(f"{run}/{stem}.csv", out)
    finally:
        shared.close()


@pytest.mark.slow
@needs_corpus
@pytest.mark.parametrize("a,b", DIFF_PAIRS)
def test_diffs_equal_their_snapshots(cli_app, every_trace, a, b):
    """Each pair's two runs in the database of every trace (a diff reads only
    its two runs)."""
    db, names = every_trace
    for name in (a, b):
        if name not in names:
            pytest.skip(f"corpus file {name} not found in {CORPUS}")
        if not UPDATE and (status := snapshot_status(name)) is not None:
            pytest.skip(status)
    ra, rb = run_name(Path(a)), run_name(Path(b))
    for stem, args in DIFF_LEVELS:
        out = cli_output(cli_app, ["diff", ra, rb, "--db", db, *args, "--format", "csv"], db)
        check(f"diff_{ra}__{rb}/{stem}.csv", out)


# -- every report once over every corpus trace ---------------------------------
# One database holds every corpus trace, each its own run (built once per test
# run): each report runs once over all runs, its rows are split by run and
# compared with each run's snapshot. A report plans its statements once, not
# once per trace (planning is most of a report's time on small traces). The
# split is what a --run report gives: a report keeps each run's rows apart
# (--limit is per trace), trace_id is 1 in a database of one trace, and a note
# names its trace's file. A run with no rows gets a message of its own (not a
# table): test_single_run_reports_equal_their_snapshots compares that one (a
# --run report on a database of its trace alone), as it does a handful of others.

NO_SNAPSHOT = "no snapshot"  # a trace the snapshots were not taken on: its reports run uncompared


def snapshot_status(trace: str) -> str | None:
    """None when the trace's snapshots are to be compared; else why not."""
    source = SNAPSHOTS / run_name(Path(trace)) / "SOURCE"
    if not source.exists():
        return NO_SNAPSHOT
    if source.read_text().split()[0] != sha256(CORPUS / trace):
        return f"{CORPUS / trace} is not the file the snapshot was taken on"
    return None


def _load_every_trace(directory):
    import duckprof
    db = directory / "snap_all.duckdb"
    names = [f.name for f in corpus_files()]
    with duckprof.connect(db) as s:
        for name in names:  # fixed order: the corpus's, sorted
            s.load([str(CORPUS / name)], run=run_name(Path(name)))
    return db, names


@pytest.fixture(scope="module")
def every_trace(tmp_path_factory, monkeypatch_module):
    from conftest import built_once
    from duckprof import cli_reports
    db, names = built_once(tmp_path_factory, "snapshot_runs", _load_every_trace)
    shared = Session(db, read_only=True)
    monkeypatch_module.setattr(cli_reports, "open_data", lambda *a, **kw: contextlib.nullcontext(shared))
    yield db, names
    shared.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def split_by_run(text: str, names) -> dict[str, str] | None:
    """{run: the text a --run report gives when the run has rows (else its
    header and notes)}, from a report's output over all runs; None when it
    has no run column."""
    lines = text.splitlines(keepends=True)
    out = [ln for ln in lines if not ln.startswith("stderr: ")]
    notes = [ln for ln in lines if ln.startswith("stderr: ")]
    rows = list(csv.reader(io.StringIO("".join(out))))
    if not rows or "run" not in rows[0]:
        return None
    header, col = rows[0], rows[0].index("run")
    tid = header.index("trace_id") if "trace_id" in header else None
    per_run: dict[str, list] = {}
    for row in rows[1:]:
        if tid is not None and row[tid] != "":
            row[tid] = "1"
        per_run.setdefault(row[col], []).append(row)
    texts = {}
    for name in names:
        run = run_name(Path(name))
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(per_run.get(run, []))
        texts[run] = buf.getvalue() + "".join(n for n in notes if f"note: {name}:" in n)
    return texts


@pytest.mark.slow
@needs_corpus
@pytest.mark.skipif(UPDATE, reason="snapshots are regenerated one run at a time (test_single_run_reports_equal_their_snapshots)")
@pytest.mark.parametrize("stem,args", [r for r in REPORTS if r[0] not in PER_RUN],
                         ids=[stem for stem, _ in REPORTS if stem not in PER_RUN])
def test_every_run_of_a_report_equals_its_snapshots(cli_app, every_trace, stem, args):
    db, names = every_trace
    texts = split_by_run(cli_output(cli_app, ["report", *args, "--db", db, "--format", "csv"], db), names) or {}
    differ = []
    for name in names:
        run = run_name(Path(name))
        if snapshot_status(name) is not None:
            continue  # ran (exit 0), not compared: test_snapshot_source says why
        path = SNAPSHOTS / run / f"{stem}.csv"
        want = path.read_text(encoding="utf-8")
        if is_message(path):  # no rows: the report's message, compared with --run by
            if run in texts and texts[run].count("\n") > 1 + texts[run].count("stderr: "):
                differ.append(run)  # test_single_run_reports_equal_their_snapshots
            continue
        if texts.get(run) != want and not same_cells(texts.get(run, ""), want):
            differ.append(run)
    assert not differ, f"{stem}: differs from the snapshot of {differ}"


@needs_corpus
@pytest.mark.parametrize("trace", ALL_TRACES)
def test_snapshot_source(trace):
    """Each trace whose snapshots test_every_run_of_a_report_equals_its_snapshots
    compares; the others skip here with the reason (a trace without snapshot
    still runs every report there, uncompared)."""
    if not (CORPUS / trace).exists():
        pytest.skip(f"corpus file {trace} not found in {CORPUS}")
    status = snapshot_status(trace)
    if status is not None:
        pytest.skip(status)
    assert {p.name for p in (SNAPSHOTS / run_name(Path(trace))).glob("*.csv")} == {f"{stem}.csv" for stem, _ in REPORTS}
