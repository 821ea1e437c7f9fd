"""`report ops-by-step`: the top CPU operators by self time per ProfilerStep,
on a handmade trace whose expected figures are worked out here by hand.

Times in µs. Steps on thread 1: ProfilerStep#1 [1000, 1100], #2 [1100, 1250].
Thread 1: aten::a [1010, 1040] holding aten::b [1020, 1030]  (a self 20, b self 10)
          aten::a [1110, 1130]            (self 20)
          aten::b [1140, 1190]            (self 50)
          aten::a [1200, 1210]            (self 10)
Thread 2 (autograd's): aten::c [1050, 1060] (self 10): in step 1 by its start.
Outside every step: aten::early [900, 950], aten::late [1300, 1310].
Step 1 (100 µs): a 1 call self 20 total 30 (20%); then b and c, 10 each, by name.
Step 2 (150 µs): b 1 call self 50 (33.33%); a 2 calls self 30 total 30 (20%).
"""

from __future__ import annotations

import json

import pytest

from conftest import invoke

import duckprof


def op(name, ts, dur, tid=1, cat="cpu_op"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


EVENTS = [
    op("ProfilerStep#1", 1000, 100, cat="user_annotation"),
    op("ProfilerStep#2", 1100, 150, cat="user_annotation"),
    op("aten::a", 1010, 30), op("aten::b", 1020, 10),
    op("aten::a", 1110, 20), op("aten::b", 1140, 50), op("aten::a", 1200, 10),
    op("aten::c", 1050, 10, tid=2),
    op("aten::early", 900, 50), op("aten::late", 1300, 10),
]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("steps") / "steps.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS}))
    return p


def test_top_ops_per_step(trace):
    with duckprof.connect() as s:
        s.load([str(trace)], run="r")
        got = s.report("ops-by-step").fetchall()
    assert [r[3:] for r in got] == [
        (1, 1, "aten::a", 1, 20.0, 30.0, 20.0),
        (1, 2, "aten::b", 1, 10.0, 10.0, 10.0),
        (1, 3, "aten::c", 1, 10.0, 10.0, 10.0),
        (2, 1, "aten::b", 1, 50.0, 50.0, pytest.approx(100 * 50 / 150)),
        (2, 2, "aten::a", 2, 30.0, 30.0, 20.0),
    ]


def test_limit_and_no_steps(trace, tmp_path, cli_app):
    res = invoke(cli_app, "report", "ops-by-step", trace, "--limit", "1", "--format", "csv")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "run,rank,trace_id,step,op_rank,name,calls,self_us,total_us,self_pct"
    assert [l.split(",")[5] for l in lines[1:]] == ["aten::a", "aten::b"]
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"traceEvents": [op("aten::x", 0, 5)]}))
    res = invoke(cli_app, "report", "ops-by-step", flat)
    assert res.exit_code == 0
    assert "note: flat.json: no ProfilerStep#N annotations in this trace, so no steps" in res.stderr
