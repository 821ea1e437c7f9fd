"""`report ops`, `categories`, `steps` and `memory` on the whole corpus at once, from
a database file with --run, in every --format: every trace of the run in one table,
exact rows in csv / json / parquet equal to the API's, and what a trace lacks said
in notes (each single trace is pinned by tests/test_report_snapshots.py)."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pytest

from conftest import corpus_files, invoke, needs_corpus

import duckprof

CASES = [("ops", []), ("ops", ["--group-by-input-shape"]), ("categories", ["--by-step"]),
         ("categories", ["--category", "gemm"]), ("steps", []), ("steps", ["--summary"]),
         ("steps", ["--breakdown", "tensorboard"]), ("memory", []), ("memory", ["--ops"]),
         ("memory", ["--by-step"]), ("launches", []), ("launches", ["--per-launch", "--hta"])]


def options(args):
    out, i = {}, 0
    while i < len(args):
        name = args[i][2:].replace("-", "_")
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[name] = args[i + 1]
            i += 2
        else:
            out[name] = True
            i += 1
    return out


@pytest.mark.slow
@needs_corpus
@pytest.mark.parametrize("name,args", CASES)
def test_every_format_from_a_database(corpus_db, cli_app, tmp_path, name, args):
    with duckprof.connect(corpus_db, read_only=True) as s:
        res = s.report_result(name, run="corpus", **options(args))
        want = res.relation.fetchall()
        columns = res.relation.columns
    traces = len(corpus_files())
    base = ["report", name, *args, "--db", corpus_db, "--run", "corpus"]
    got = invoke(cli_app, *base, "--format", "csv")
    assert got.exit_code == 0, got.output
    rows = list(csv.reader(io.StringIO(got.stdout)))
    assert rows[0] == columns and len(rows) - 1 == len(want)
    doc = json.loads(invoke(cli_app, *base, "--format", "json").stdout)
    assert len(doc) == len(want) and (not doc or list(doc[0]) == columns)
    out = tmp_path / "r.parquet"
    assert invoke(cli_app, *base, "--format", "parquet", "--output", out).exit_code == 0
    assert duckdb.sql(f"SELECT count(*) FROM '{out}'").fetchall()[0][0] == len(want)
    for fmt in ("table", "markdown"):
        r = invoke(cli_app, *base, "--format", fmt)
        assert r.exit_code == 0 and r.stdout.strip(), (fmt, r.output)
    if name in ("ops", "steps") and not args:  # every trace has CPU events or a window
        assert len({r[columns.index("trace_id")] for r in want}) == traces
    assert "Traceback" not in got.stderr
