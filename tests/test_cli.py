"""The duckprof command line: every command works, output formats parse,
--output writes files, every --help has an Example; multi-file inputs
(directories, globs, several paths, bare arrays) and ranks."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import sys

import duckdb
import pytest

import duckprof
from conftest import (HANDMADE, CORPUS, assert_error_block, assert_one_line_error, cli_app, corpus_files, invoke,  # noqa: F401
                      REPO, rows, run_cli, scalar, slow_when)
from duckprof.load import expand_paths, rank_of

NESTING3 = HANDMADE / "nesting3.json"
QUERY = "select name, self_ns, depth from cpu_ops where name in ('B1', 'C5', 'F') order by name"
EXPECTED = [{"name": "B1", "self_ns": 15000, "depth": 1}, {"name": "C5", "self_ns": 5000, "depth": 2},
            {"name": "F", "self_ns": 20000, "depth": 1}]


def _all_commands(app):
    import typer
    root = typer.main.get_command(app)

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            yield path, True
            for name, sub in subs.items():
                yield from walk(sub, path + [name])
        else:
            yield path, False
    return list(walk(root, []))


def test_every_command_help_has_an_example(cli_app):
    commands = [p for p, group in _all_commands(cli_app) if not group]
    names = {" ".join(p) for p in commands}
    assert {"load", "query", "runs", "rm", "schema", "synth", "demo"} <= names
    for path in commands:
        r = invoke(cli_app, *path, "--help")
        assert r.exit_code == 0, (path, r.stdout, r.stderr)
        assert "Example" in r.stdout, f"`duckprof {' '.join(path)} --help` has no Example"


def test_top_level_help(cli_app):
    r = invoke(cli_app, "--help")
    assert r.exit_code == 0
    for cmd in ("load", "query", "runs", "rm", "schema", "synth", "demo"):
        assert cmd in r.stdout


# -- query and formats ----------------------------------------------------------

def test_query_formats(cli_app, tmp_path):
    r = invoke(cli_app, "query", QUERY, NESTING3, "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == EXPECTED

    r = invoke(cli_app, "query", QUERY, NESTING3, "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert list(csv.DictReader(io.StringIO(r.stdout))) == [{k: str(v) for k, v in e.items()} for e in EXPECTED]

    r = invoke(cli_app, "query", QUERY, NESTING3, "--format", "markdown")
    assert r.exit_code == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    assert lines[0].startswith("|") and [c.strip() for c in lines[0].strip("|").split("|")] == ["name", "self_ns", "depth"]
    assert set(lines[1].replace("|", "").replace(":", "").strip()) == {"-"}
    body = [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:]]
    assert body == [["B1", "15,000", "1"], ["C5", "5,000", "2"], ["F", "20,000", "1"]]

    r = invoke(cli_app, "query", QUERY, NESTING3)  # table (default)
    assert r.exit_code == 0
    assert "B1" in r.stdout and "15,000" in r.stdout and "self_ns" in r.stdout


def test_json_format_nests_json_columns(cli_app):
    """args and input_dims are JSON columns: --format json writes them as
    objects and arrays, not as strings holding JSON; text stays text."""
    r = invoke(cli_app, "query", "select l.name, e.args, l.input_dims, e.args::VARCHAR AS args_text "
               "from launches l join events e using (trace_id, event_id)", HANDMADE / "xpu_launch.json", "-f", "json")
    assert r.exit_code == 0, r.stderr
    [row] = json.loads(r.stdout)
    assert row["args"]["sycl queue"] == 64 and row["args"]["l0 queue"] == "0x000055d08b8fc138"
    assert row["input_dims"] == [[64, 32], [32, 16]]
    assert isinstance(row["args_text"], str) and json.loads(row["args_text"]) == row["args"]


def test_query_output_files(cli_app, tmp_path):
    for fmt, parse in [("json", json.loads), ("csv", lambda t: list(csv.DictReader(io.StringIO(t))))]:
        out = tmp_path / f"out.{fmt}"
        r = invoke(cli_app, "query", QUERY, NESTING3, "-f", fmt, "-o", out)
        assert r.exit_code == 0, r.stderr
        assert r.stdout.strip() == ""
        got = parse(out.read_text())
        assert len(got) == 3 and got[0]["name"] == "B1"
    out = tmp_path / "out.parquet"
    r = invoke(cli_app, "query", QUERY, NESTING3, "-f", "parquet", "-o", out)
    assert r.exit_code == 0, r.stderr
    assert duckdb.sql(f"select * from read_parquet('{out}') order by name").fetchall() == [
        tuple(e.values()) for e in EXPECTED]


def test_query_errors(cli_app, tmp_path):
    r = invoke(cli_app, "query", "select * from no_such_view", NESTING3)
    assert r.exit_code == 2
    assert_error_block(r.stderr, "no_such_view")
    # DuckDB's hints are kept, in the same error block (issue 13, item 12)
    r = invoke(cli_app, "query", "select * from kernel", NESTING3)
    assert r.exit_code == 2
    assert_error_block(r.stderr, ["Table with name kernel does not exist", 'Did you mean "kernels"?'])
    r = invoke(cli_app, "query", "select nam from cpu_ops", NESTING3)
    assert r.exit_code == 2
    assert_error_block(r.stderr, ['"nam" not found', "Candidate bindings:", '"name"'])
    r = invoke(cli_app, "query", QUERY, NESTING3, "-f", "yaml")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "yaml")
    r = invoke(cli_app, "query", QUERY, NESTING3, "-f", "parquet")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "--output")
    r = invoke(cli_app, "query", QUERY)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "--db")


# -- load / runs / rm / schema ------------------------------------------------------

def test_load_runs_rm_schema(cli_app, tmp_path):
    db = tmp_path / "r.duckdb"
    r = invoke(cli_app, "load", NESTING3, "--db", db, "--run", "a")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("run 'a': loaded 1 trace(s), 19 events")
    r = invoke(cli_app, "load", HANDMADE / "fractional_base.json", "--db", db, "-r", "b", "-q")
    assert r.exit_code == 0, r.stderr

    r = invoke(cli_app, "runs", "--db", db, "-f", "json")
    assert r.exit_code == 0, r.stderr
    got = [{k: x[k] for k in ("run", "traces", "events")} for x in json.loads(r.stdout)]
    assert got == [{"run": "a", "traces": 1, "events": 19}, {"run": "b", "traces": 1, "events": 11}]

    r = invoke(cli_app, "schema", "--db", db)
    assert r.exit_code == 0, r.stderr
    for name in ("events (table)", "traces (table)", "kernels (view)", "cpu_ops (view)",
                 "launches (view)", "runs (view)"):
        assert name in r.stdout
    r = invoke(cli_app, "schema", "kernels")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == "kernels (view)" and "dur_ns" in r.stdout
    r = invoke(cli_app, "schema", "nope")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "nope")

    r = invoke(cli_app, "rm", "a", "--db", db)
    assert r.exit_code == 0 and "removed run 'a' (1 trace(s))" in r.stdout
    r = invoke(cli_app, "runs", "--db", db, "-f", "csv")
    assert [row["run"] for row in csv.DictReader(io.StringIO(r.stdout))] == ["b"]
    r = invoke(cli_app, "rm", "a", "--db", db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, ["'a'"])


def test_load_without_db_is_a_check(cli_app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke(cli_app, "load", NESTING3)
    assert r.exit_code == 0
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_synth_shapes(cli_app, tmp_path):
    """synth --serving --epoch-ts: a with_stack serving trace with absolute
    fractional timestamps and no baseTimeNanoseconds (test_synth.py checks
    the shapes themselves)."""
    out = tmp_path / "s.json"
    r = invoke(cli_app, "synth", "-o", out, "--events", "1500", "--serving", "--epoch-ts", "--stack", "5")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(out.read_text())
    assert "baseTimeNanoseconds" not in doc
    frames = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
    assert len(frames) > len(doc["traceEvents"]) / 3
    assert min(e["ts"] for e in frames) > 1.7e15


@pytest.mark.slow  # synth and demo also run in test_synth.py and test_install.py
def test_synth_and_demo(cli_app, tmp_path):
    out = tmp_path / "s.json.gz"
    r = invoke(cli_app, "synth", "-o", out, "--events", "2000", "--seed", "3", "--rank", "5")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(gzip.decompress(out.read_bytes()))
    n = len(doc["traceEvents"])
    assert f"{n:,} events" in r.stdout
    assert doc["distributedInfo"]["rank"] == 5
    with duckprof.connect() as s:
        s.load([str(out)])
        assert scalar(s, "select count(*) from events") == n
        assert scalar(s, "select rank from traces") == 5
        assert scalar(s, "select count(*) from launches where op_name is not null") > 0

    r = invoke(cli_app, "demo", "--events", "3000")
    assert r.exit_code == 0, r.stderr
    assert "run 'demo': loaded 1 trace(s)" in r.stdout
    for title in ("Top kernels by total time", "Operators by self CPU time", "Profiler steps"):
        assert title in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_real_entry_point_runs(tmp_path):
    """`python -m duckprof` / the console script path, in a fresh process."""
    r = run_cli("query", "select count(*) as n from events", NESTING3, "-f", "csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["n", "19"]


# -- multi-file inputs and ranks --------------------------------------------------------

def _copy(src, dst, drop_distinfo=False, rank=None):
    doc = json.loads(src.read_bytes())
    if drop_distinfo:
        doc.pop("distributedInfo", None)
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": 8}
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(doc).encode()
    dst.write_bytes(gzip.compress(data) if dst.name.endswith(".gz") else data)
    return dst


def test_directories_globs_and_several_paths(cli_app, tmp_path):
    root = tmp_path / "job"
    a = _copy(NESTING3, root / "a.json")
    b = _copy(HANDMADE / "fractional_base.json", root / "sub" / "deeper" / "b.json.gz")
    (root / "sub" / "notes.txt").write_text("not a trace")
    c = _copy(HANDMADE / "absolute_fractional.json", tmp_path / "other" / "c.json")
    assert expand_paths([root]) == [str(a), str(b)]                     # recursive, sorted
    assert expand_paths([str(root / "**" / "*.json*")]) == [str(a), str(b)]
    assert expand_paths([str(c), str(root), str(a)]) == [str(c), str(a), str(b)]  # deduplicated
    r = invoke(cli_app, "query", "select count(*) as traces, sum(event_count) as events from traces",
               root, c, "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == [{"traces": 3, "events": 19 + 11 + 16}]
    r = invoke(cli_app, "query", "select count(*) as n from traces", str(tmp_path / "*" / "*.json"), "-f", "csv")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.split() == ["n", "2"]  # a.json and c.json


def test_bare_array_trace(tmp_path):
    events = json.loads(NESTING3.read_bytes())["traceEvents"]
    for name, data in [("bare.json", json.dumps(events).encode()),
                       ("bare.json.gz", gzip.compress(json.dumps(events, indent=1).encode()))]:
        p = tmp_path / name
        p.write_bytes(data)
        with duckprof.connect() as s:
            s.load([str(p)])
            assert scalar(s, "select count(*) from events") == 19
            assert rows(s, "select base_time_ns, rank, metadata from traces") == [(None, None, "{}")]
            # no baseTimeNanoseconds: ts is taken as absolute microseconds
            assert scalar(s, "select min(ts_ns) from events") == 500125


@pytest.mark.parametrize("fname,distinfo_rank,expected", slow_when([
    ("trace.json", 7, 7),                     # distributedInfo wins
    ("host_rank-3.json", 7, 7),
    ("host_rank-3.json", None, 3),            # else from the file name
    ("worker_rank3.1700000.pt.trace.json", None, 3),
    ("RANK_12.json.gz", None, 12),
    ("trace.json", None, None),               # else NULL
], {("host_rank-3.json", 7, 7), ("worker_rank3.1700000.pt.trace.json", None, 3), ("RANK_12.json.gz", None, 12)}))
def test_rank(tmp_path, fname, distinfo_rank, expected):
    p = _copy(NESTING3, tmp_path / fname, drop_distinfo=True, rank=distinfo_rank)
    with duckprof.connect() as s:
        s.load([str(p)])
        assert scalar(s, "select rank from traces") == expected
    assert rank_of(str(p), {} if distinfo_rank is None else {"distributedInfo": {"rank": distinfo_rank}}) == expected


@pytest.mark.slow
@pytest.mark.skipif(not corpus_files(), reason="no corpus")
def test_two_ranks_of_one_run(cli_app, tmp_path):
    db = tmp_path / "r.duckdb"
    files = [CORPUS / "sampled_rank0_no_devprops.json.gz", CORPUS / "sampled_rank1_no_devprops.json.gz"]
    d = tmp_path / "job"
    d.mkdir()
    for f in files:
        shutil.copy(f, d / f.name)
    r = invoke(cli_app, "load", d, "--db", db, "--run", "job")
    assert r.exit_code == 0, r.stderr
    r = invoke(cli_app, "runs", "--db", db, "-f", "json")
    got = json.loads(r.stdout)
    assert [(x["run"], x["traces"], x["ranks"], x["events"]) for x in got] == [("job", 2, "0-1", 4855 + 4720)]


# -- issue 13 items 11, 13, 16: --version, -h, completion, -q, traces with --db ---------

def test_version_short_help_and_shell_completion(cli_app):
    r = invoke(cli_app, "--version")
    assert r.exit_code == 0
    assert r.stdout == f"duckprof {duckprof.__version__} (DuckDB {duckdb.__version__})\n"
    for path in ([], ["load"], ["query"], ["report"], ["report", "kernels"]):
        short, long = invoke(cli_app, *path, "-h"), invoke(cli_app, *path, "--help")
        assert short.exit_code == 0 and short.stdout == long.stdout and "Usage:" in short.stdout, path
    # typer's shell completion: offered in --help, and completing for real
    assert "--install-completion" in invoke(cli_app, "--help").stdout
    from typer.testing import CliRunner
    r = CliRunner().invoke(cli_app, [], prog_name="duckprof", env={
        "_DUCKPROF_COMPLETE": "complete_bash", "COMP_WORDS": "duckprof report ke", "COMP_CWORD": "2"})
    assert r.exit_code == 0 and r.stdout.split() == ["kernels"]


def test_every_command_that_loads_traces_has_quiet(cli_app):
    """-q (no progress line) on every command that can show one: those that load traces."""
    for path, group in _all_commands(cli_app):
        if group:
            continue
        text = invoke(cli_app, *path, "--help").stdout
        if "trace" in text.lower() and path[0] not in ("synth", "demo", "runs", "rm", "schema", "migrate"):
            assert "--quiet" in text and "-q" in text, path
    r = invoke(cli_app, "query", QUERY, NESTING3, "-q", "-f", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == EXPECTED


def test_traces_and_db_together_are_refused(cli_app, base_db):
    """`query SQL TRACE --db F` used to ignore --db silently: say which to use."""
    db = base_db
    for args in (["query", QUERY, NESTING3, "--db", db], ["report", "kernels", NESTING3, "--db", db]):
        r = invoke(cli_app, *args)
        assert r.exit_code == 2, args
        assert_one_line_error(r.stderr, ["give trace files or --db, not both", f"duckprof load TRACES --db {db}"])


def test_demo_fits_the_terminal(cli_app, monkeypatch):
    """`duckprof demo` (the README's first command) prints each query as SQL
    comment lines that fit the terminal (one line of up to 143 characters
    before), and every line fits 120 columns; the comment lines read back as
    the query."""
    from duckprof.cli import DEMO_QUERIES
    for columns in (120, 80):
        monkeypatch.setenv("COLUMNS", str(columns))
        r = invoke(cli_app, "demo", "--events", "2000")
        assert r.exit_code == 0, r.stderr
        lines = r.stdout.splitlines()
        assert max(len(line) for line in lines) <= 120
        comments = [line for line in lines if line.startswith("-- ")]
        assert max(len(line) for line in comments) <= columns
        shown = " ".join(line[3:] for line in comments)
        assert shown == " ".join(" ".join(sql.split()) for _, sql in DEMO_QUERIES)
    assert len(comments) > len(DEMO_QUERIES)  # at 80 columns some query takes two lines


def test_a_note_wraps_only_on_a_terminal():
    """A report's note is one line 'note: ...' on a pipe (what grep and logs
    read), and on a terminal wrapped at its width at word boundaries, the
    continuation lines indented under the text (notes run to ~400
    characters)."""
    from duckprof.render import note_lines
    note = "no_launches.json: no launch call in this trace matches its device activity (correlation), so no queue depth"
    assert note_lines(note, None) == [f"note: {note}"]
    assert note_lines(note, 50) == ["note: no_launches.json: no launch call in this",
                                    "      trace matches its device activity",
                                    "      (correlation), so no queue depth"]
    long_name = "x" * 70  # a word longer than the width stays whole
    assert note_lines(f"{long_name} is slow", 50) == [f"note: {long_name}", "      is slow"]


def test_report_notes_on_a_terminal_fit_it(tmp_path):
    """The real process with its stderr on a pseudo-terminal of 50 columns
    (COLUMNS): the note comes wrapped, every line within 50, and the same
    words as the one line it prints to a pipe."""
    import pty
    trace = REPO / "fixtures" / "gpu_time" / "no_launches.json"
    piped = run_cli("report", "queue", trace)
    assert piped.returncode == 0, piped.stderr
    one = [line for line in piped.stderr.splitlines() if line.startswith("note: ")]
    assert len(one) == 1 and len(one[0]) > 50
    main, child = pty.openpty()
    env = dict(os.environ, COLUMNS="50", PYTHONPATH=str(REPO))
    code = "import sys; from duckprof.cli import main; sys.argv[0] = 'duckprof'; main()"
    p = subprocess.run([sys.executable, "-c", code, "report", "queue", str(trace)], stdout=subprocess.PIPE,
                       stderr=child, env=env, timeout=120)
    os.close(child)
    got = b""
    while True:
        try:
            data = os.read(main, 4096)
        except OSError:  # the terminal's other end is closed: all is read
            break
        if not data:
            break
        got += data
    os.close(main)
    assert p.returncode == 0
    lines = [line for line in got.decode().replace("\r", "").splitlines() if line.strip()]
    assert lines[0].startswith("note: ") and len(lines) >= 3
    assert all(len(line) <= 50 for line in lines)
    assert all(line.startswith("      ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == one[0]
