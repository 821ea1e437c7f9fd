"""Real torch.profiler journeys recorded with torch 2.13 on CPU (fixtures/sweep13/,
its README says what was recorded and how): the numbers duckprof gives for
them against torch's own (key_averages(), the ProfilerStep ranges of
prof.events()), and what a user sees on the way."""

from __future__ import annotations

import json

import pytest

import duckprof
from conftest import REPO, invoke, rows

SWEEP = REPO / "fixtures" / "sweep13"
COMPILED = ["compile", "compile_train", "enrich_aot_eager", "jit"]


@pytest.fixture(scope="module")
def schedule_session():
    with duckprof.connect() as s:
        s.load([str(SWEEP / "schedule")])
        yield s


def test_schedule_cycles_are_traces_with_torchs_steps(schedule_session):
    """tensorboard_trace_handler under schedule(wait=1, warmup=1, active=2,
    repeat=3), two workers: each cycle file is one trace (no rank: the files
    carry no distributedInfo), its steps are the active ones (2, 3 / 6, 7 /
    10, 11) and each step lasts exactly what torch's own ProfilerStep event
    says (prof.events() in the trace handler)."""
    s = schedule_session
    got = rows(s, "select f.file_name, s.step, s.dur_ns from steps s join trace_files f using (trace_id) "
                  "order by f.file_name, s.step")
    assert rows(s, "select count(*), count(rank) from traces") == [(6, 0)]
    for worker in ("w0", "w1"):
        cycles = json.loads((SWEEP / "schedule" / f"{worker}.steps.json").read_text())
        theirs = [(c["step_num"] - 2 + k, st["end_us"] - st["start_us"])
                  for c in cycles for k, st in enumerate(c["steps"])]
        mine = [(step, dur / 1e3) for name, step, dur in got if name.startswith(worker + ".")]
        assert [m[0] for m in mine] == [2, 3, 6, 7, 10, 11] == [t[0] for t in theirs]
        for (_, a), (_, b) in zip(mine, theirs):
            assert a == pytest.approx(b, abs=1e-3)


@pytest.mark.parametrize("name", COMPILED)
def test_compiled_and_scripted_ops_equal_key_averages(name):
    """torch.compile (inductor, aot_eager with FX node markers) and
    torch.jit.script traces: report ops has torch's rows (Torch-Compiled
    Region, CompiledFunction, '## Call CompiledFxGraph ... ##', '## N ##', ...)
    with its counts and self and total CPU time."""
    theirs = {r["key"]: r for r in json.loads((SWEEP / "compile" / f"{name}.key_averages.json").read_text())}
    with duckprof.connect() as s:
        s.load([str(SWEEP / "compile" / f"{name}.json.gz")])
        mine = {r[0]: r[1:] for r in s.report("ops", limit=0)
                .select("name, count, self_cpu_us, cpu_total_us").fetchall()}
    assert set(mine) == set(theirs)
    for key, t in theirs.items():
        count, self_us, total_us = mine[key]
        assert count == t["count"], key
        assert self_us == pytest.approx(t["self_cpu_us"], abs=0.01), key
        assert total_us == pytest.approx(t["cpu_us"], abs=0.01), key


def test_by_graph_node_on_fx_markers():
    """enrich_profiler_metadata's '## <file>.py ##' / '## N ##' markers: one
    forward and one backward graph file, every aten operator under a marker."""
    with duckprof.connect() as s:
        s.load([str(SWEEP / "compile" / "enrich_aot_eager.json.gz")])
        r = s.report("ops", by_graph_node=True, limit=0)
        files = {f for (f,) in r.select("graph_file").fetchall()}
        assert len(files) == 2 and all(f.startswith("fx_generated_") and f.endswith(".py") for f in files)
        assert rows(s, "select sum(ops)::BIGINT from ({}) where graph_node is not null".format(r.sql_query())) > [(0,)]


def test_diff_of_cpu_only_traces_points_to_by_op(cli_app):
    """Two CPU-only traces (torch.jit.script vs torch.compile): the default
    kernel level has no rows, and says --by op compares them; --by op does."""
    a, b = SWEEP / "compile" / "jit.json.gz", SWEEP / "compile" / "compile.json.gz"
    r = invoke(cli_app, "diff", a, b, "-q")
    assert r.exit_code == 0, r.stderr
    assert "(no rows: neither side has GPU kernels, memcpys or memsets (--by op compares their CPU operators))" in r.stdout
    r = invoke(cli_app, "diff", a, b, "-q", "--by", "op", "--limit", "0", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert "Torch-Compiled Region: 0/0" in r.stdout
