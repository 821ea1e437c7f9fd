"""Every report gives the same rows, notes and lines instead, to the last
digit, every time it runs on the same data: a run of several traces (DuckDB
adds doubles and emits GROUP BY rows in an order that varies with its
threads; report idle's scores, report steps' notes and --summary did)."""

from __future__ import annotations

import pytest

import duckprof
from conftest import synth_ranks
from test_deferred import CASES


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    files = synth_ranks(tmp_path_factory.mktemp("job"), 8, events=1500, steps=3)
    with duckprof.connect() as s:
        s.load(files, run="job")
        yield s


@pytest.mark.slow  # ~10 CPU-s; the quick run has test_idle_scores_are_the_same_every_run,
#                   test_steps' test_the_summary_is_the_same_every_run and test_the_notes_come_in_trace_order
@pytest.mark.parametrize("name,options", CASES)
def test_every_report_is_the_same_every_run(job, name, options):
    outs = set()
    for _ in range(4):
        r = job.report_result(name, **options)
        outs.add(repr((r.relation.fetchall(), r.notes, r.instead)))
    assert len(outs) == 1
