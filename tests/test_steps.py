"""`report steps`: per-step figures, their summary, and TensorBoard's step-time
breakdown (--breakdown tensorboard).

fixtures/steps/three_steps.json (table in fixtures/steps/make_fixtures.py), by hand (µs):
  step 1 [0,100]: device, by launch: poi 20 + red 10 + per 15 = kernel 45; HtoD memcpy 4.
      busy in the step: [10,50] + [60,64] = 44 -> 44%.
      host by priority: dataloader [0,4] 4; optimizer [80,95] 15 (its aten::add_ inside);
      backward 0; forward: the outermost ops on thread 1, aten::add [5,10] 5 +
      aten::copy_ [50,58] 8 = 13; other 100 - 32 = 68.
      top categories: poi 20/49 = 40.8%, per 15/49 = 30.6%, red 10/49 = 20.4%.
  step 2 [100,200]: sgemm 40 (kernel), nccl 50 (comm), memset 2; busy [110,190] +
      [195,197] = 82 -> 82%. backward: evaluate_function on thread 2 [120,160] 40;
      forward: aten::mm [102,108] 6 + aten::sum [150,170] beyond the backward's
      [120,160]: [160,170] 10 + aten::zero_ [189,192] 3 = 19; other 100 - 59 = 41.
  step 3 [200,330]: elementwise 10 + triton_tem 30 = kernel 40; DtoH 5 (launched at 295,
      runs at [330,335]); busy [210,220] + [290,320] = 40 / 130 = 30.77%; dataloader
      [250,260] 10; forward aten::relu 5 + aten::mm 13 = 18; other 130 - 28 = 102.
  step times 100, 100, 130: median 100, mean 110, population std sqrt(200) = 14.142,
      CV 12.856%; step 3 is the outlier, +30% vs the median.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from conftest import REPO, as_dicts, corpus_path, host_range, invoke, loaded, needs_corpus, synth_ranks

import duckprof

THREE = REPO / "fixtures" / "steps" / "three_steps.json"
TB = REPO / "fixtures" / "golden" / "tb_profiler"


@pytest.fixture(scope="module")
def three():
    with loaded(THREE) as s:
        yield s


def test_per_step_figures_by_hand(three):
    got = as_dicts(three.report("steps"))
    cols = ["step", "step_us", "gpu_busy_pct", "kernel_us", "comm_us", "memcpy_us", "memset_us",
            "dataloader_us", "optimizer_us", "backward_us", "host_comm_us", "forward_us", "other_us"]
    assert [tuple(r[c] for c in cols) for r in got] == [
        (1, 100.0, pytest.approx(44.0), 45.0, 0.0, 4.0, 0.0, 4.0, 15.0, 0.0, 0.0, 13.0, 68.0),
        (2, 100.0, pytest.approx(82.0), 40.0, 50.0, 0.0, 2.0, 0.0, 0.0, 40.0, 0.0, 19.0, 41.0),
        (3, 130.0, pytest.approx(100 * 40 / 130), 40.0, 0.0, 5.0, 0.0, 10.0, 0.0, 0.0, 0.0, 18.0, 102.0),
    ]
    assert [r["vs_median_pct"] for r in got] == [0.0, 0.0, pytest.approx(30.0)]
    assert got[0]["top_categories"] == "triton_pointwise 40.8%, triton_persistent_reduction 30.6%, triton_reduction 20.4%"
    assert got[1]["top_categories"] == "communication 54.3%, gemm 43.5%, memset 2.2%"
    for r in got:  # the host split partitions the step
        assert r["dataloader_us"] + r["optimizer_us"] + r["backward_us"] + r["host_comm_us"] + r["forward_us"] + r["other_us"] \
            == pytest.approx(r["step_us"])


def test_summary_and_outlier(three):
    s = {r["figure"]: r for r in as_dicts(three.report("steps", summary=True))}
    st = s["step_us"]
    assert (st["steps"], st["mean"], st["median"], st["min"], st["max"]) == (3, 110.0, 100.0, 100.0, 130.0)
    assert st["cv_pct"] == pytest.approx(100 * math.sqrt(200) / 110)
    assert (st["outlier_step"], st["outlier_vs_median_pct"]) == (3, pytest.approx(30.0))
    assert s["forward_us"]["median"] == 18.0 and s["forward_us"]["outlier_step"] == 1
    assert list(s) == ["step_us", "gpu_busy_pct", "kernel_us", "comm_us", "memcpy_us", "memset_us",
                       "dataloader_us", "optimizer_us", "backward_us", "host_comm_us", "forward_us", "other_us"]
    notes = three.report_result("steps").notes
    assert notes == ["three_steps.json: 3 steps; step time mean 0.11 ms, coefficient of variation 12.9%; "
                     "outlier: step 3 (+30.0% vs the median)"]


def test_no_steps_one_row_for_the_window(tmp_path):
    cpu = REPO / "fixtures" / "cpu_small_model.json"
    doc = json.loads(cpu.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep")]
    p = tmp_path / "nosteps.json"
    p.write_text(json.dumps(doc))
    with duckprof.connect() as s:
        s.load([str(p)], run="r")
        res = s.report_result("steps")
        got = as_dicts(res.relation)
        window = s.sql("SELECT wall_ns / 1e3 FROM trace_files").fetchall()[0][0]
        summary = as_dicts(s.report("steps", summary=True))
    # one value per figure: no outlier
    assert summary[0]["figure"] == "step_us" and summary[0]["mean"] == window
    assert {(r["steps"], r["outlier_step"], r["outlier_vs_median_pct"]) for r in summary} == {(1, None, None)}
    assert len(got) == 1 and got[0]["step"] is None and got[0]["step_us"] == window
    assert got[0]["vs_median_pct"] is None and got[0]["gpu_busy_pct"] == 0
    assert res.notes == ["nosteps.json: no GPU activity in this trace: its device figures are 0",
                         "nosteps.json: no ProfilerStep#N annotations in this trace: one row for the whole trace"]


def tb_rows(path, run=None, db=None, cli_app=None):
    args = ["report", "steps", "--breakdown", "tensorboard", "--format", "csv"]
    res = invoke(cli_app, *args, *([path] if path else ["--db", db, "--run", run]))
    assert res.exit_code == 0, res.output
    return list(csv.DictReader(io.StringIO(res.stdout)))


ROLES = {"Kernel": "kernel_us", "Memcpy": "memcpy_us", "Memset": "memset_us", "Communication": "communication_us",
         "Runtime": "runtime_us", "DataLoader": "dataloader_us", "CPU Exec": "cpu_exec_us", "Other": "other_us",
         "Total": "total_us"}


@needs_corpus
@pytest.mark.slow  # the quick run has test_tensorboard_breakdown_on_the_handmade_trace
@pytest.mark.parametrize("stem", ["v100_resnet50_workers0_2021", "v100_resnet50_workers4_2021"])
def test_tensorboard_breakdown_equals_the_plugin(stem, cli_app):
    """torch-tb-profiler 0.4.3's own loader on the two resnet50 samples
    (fixtures/golden/tb_profiler/record_tb.py): every step, every role, to the µs."""
    golden = json.loads((TB / f"{stem}.json").read_text())
    got = tb_rows(corpus_path(f"{stem}.json.gz"), cli_app=cli_app)
    assert [r["step"] for r in got] == [s["name"] for s in golden["steps"]]
    for r, g in zip(got, golden["steps"]):
        assert {k: float(r[v]) for k, v in ROLES.items()} == {k: float(g[k]) for k in ROLES}, r["step"]
        assert float(r["total_us"]) == sum(float(r[v]) for k, v in ROLES.items() if k != "Total")


def test_tensorboard_breakdown_on_the_handmade_trace(three):
    """Steps move to the device clock: every step launched device events (by calls
    inside its host range), none launched outside a step ends before step 1's
    first one, so step 1 starts at its host start 0 and ends at max(100, its last
    device end 64) = 100, step 2 at max(200, 197) = 200, step 3 at max(330, 335)
    = 335. The fmha kernel, launched after the last step, is in no step.
    Step 3 [200,335], by priority: Kernel [210,220] + [290,320] = 40; Memcpy
    [330,335] 5; Runtime: [205,206] 1 (the calls at [290,291] and [295,296] lie
    under the triton_tem kernel); DataLoader [250,260] 10; CPU Exec: aten::relu
    [203,208] less its call = 4, aten::mm [285,298] less the kernel from 290 = 5,
    so 9; Other 135 - 65 = 70.
    Step 2 [100,200]: Kernel sgemm [110,150] 40; Communication: the nccl kernel
    (its category) beyond that, [150,190] 40; Memset [195,197] 2; Runtime [105,107]
    + [190,191] 3; CPU Exec: aten::mm [102,108] less its calls 4, aten::zero_
    [189,192] less the nccl kernel (to 190) and its call: 1; aten::sum and thread
    2's backward lie under device time: 5; Other 100 - 90 = 10."""
    got = {r["step"]: r for r in as_dicts(three.report("steps", breakdown="tensorboard"))}
    assert sorted(got) == [1, 2, 3]
    t0 = 1_000_000_000
    assert [(got[i]["start_ns"] - t0, got[i]["end_ns"] - t0) for i in (1, 2, 3)] == \
        [(0, 100_000), (100_000, 200_000), (200_000, 335_000)]
    cols = ["total_us", "kernel_us", "memcpy_us", "memset_us", "communication_us", "runtime_us", "dataloader_us",
            "cpu_exec_us", "other_us"]
    assert [got[3][c] for c in cols] == [135.0, 40.0, 5.0, 0.0, 0.0, 1.0, 10.0, 9.0, 70.0]
    assert [got[2][c] for c in cols] == [100.0, 40.0, 0.0, 2.0, 40.0, 3.0, 0.0, 5.0, 10.0]


@needs_corpus
@pytest.mark.slow  # the quick run has test_tensorboard_breakdown_on_the_handmade_trace
def test_tensorboard_breakdown_from_a_database(tmp_path, cli_app):
    db = tmp_path / "runs.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(corpus_path("v100_resnet50_workers4_2021.json.gz"))], run="w4")
    got = tb_rows(None, run="w4", db=db, cli_app=cli_app)
    golden = json.loads((TB / "v100_resnet50_workers4_2021.json").read_text())
    assert [float(r["total_us"]) for r in got] == [float(s["Total"]) for s in golden["steps"]]


def test_the_summary_is_the_same_every_run(tmp_path):
    """report steps --summary's means and coefficients of variation come from
    exact sums: DuckDB's avg and stddev of doubles changed their last digits
    from run to run (12 traces of 3 steps)."""
    files = synth_ranks(tmp_path, 12, events=1500, steps=3)
    with duckprof.connect() as s:
        s.load(files, run="job")
        outs = {repr(s.report("steps", summary=True).fetchall()) for _ in range(6)}
        step = s.sql("SELECT trace_id, list(dur_ns ORDER BY ts_ns) FROM steps WHERE trace_id = 1 GROUP BY 1").fetchall()
        mean, cv = s.sql("SELECT mean, cv_pct FROM (" + s.report("steps", summary=True).sql_query()
                         + ") WHERE trace_id = 1 AND figure = 'step_us'").fetchall()[0]
    assert len(outs) == 1
    durs = [d / 1e3 for d in step[0][1]]
    m = sum(durs) / len(durs)
    assert mean == pytest.approx(m, abs=1e-6)
    assert cv == pytest.approx(100 * math.sqrt(sum((d - m) ** 2 for d in durs) / len(durs)) / m, rel=1e-9)


def test_the_notes_come_in_trace_order(tmp_path):
    """report steps' notes, one per trace with steps, come in trace order
    every time: they came from a GROUP BY, in whatever order its hash table
    gave them (test_deferred saw two_streams.json's before memory.json's)."""
    files = synth_ranks(tmp_path, 12, events=600, steps=3)
    with duckprof.connect() as s:
        s.load(files, run="job")
        outs = [s.report_result("steps").notes for _ in range(8)]
    assert [n.split(":")[0] for n in outs[0]] == [f"rank{r:02d}.json" for r in range(12)]
    assert all(o == outs[0] for o in outs)


def test_outlier_of_two_steps_is_the_slower(tmp_path):
    """Two steps of 90 and 500 us are as far from their median (295): the
    outlier named is the slow one, in the notes, --summary and the html page
    (all three named the first, the fast one)."""
    events = []
    for i, (ts, dur) in enumerate([(0, 90), (100, 500)], start=1):
        events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                    "ts": ts, "dur": dur},
                   {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": ts + 1, "dur": dur - 2}]
    path = tmp_path / "two_steps.json"
    path.write_text(json.dumps({"traceEvents": events}))
    with loaded(path) as s:
        summary = {r["figure"]: r for r in as_dicts(s.report("steps", summary=True))}
        assert (summary["step_us"]["outlier_step"], summary["step_us"]["outlier_vs_median_pct"]) == \
            (2, pytest.approx(100 * (500 / 295 - 1)))
        assert s.report_result("steps").notes[-1].endswith("outlier: step 2 (+69.5% vs the median)")
        assert "ProfilerStep#2 (the outlier step)" in s.html().html  # the operators listed under the steps


def test_an_optimizer_step_with_a_closure_leaves_its_forward_and_backward(tmp_path):
    """Lightning's automatic optimization (as LBFGS) runs the step's forward and backward in a
    closure inside Optimizer.step: they are forward and backward, the optimizer what of its
    step they leave. One step [0, 1000] µs, by hand:
      [pl][profile][_TrainingEpochLoop].train_dataloader_next [10, 90] (its enumerate(DataLoader)
        [20, 80] inside): dataloader 80;
      Optimizer.step#SGD.step [100, 900], in it
        [pl][profile][Strategy]SingleDeviceStrategy.training_step [150, 400] (aten::linear
          [160, 390]): forward 250,
        [pl][profile][Strategy]SingleDeviceStrategy.backward [420, 800] (an autograd
          evaluate_function [450, 780]): backward 380,
        aten::add_ [820, 880]: the optimizer's own;
      optimizer 800 - 250 - 380 = 170; other 1000 - 80 - 250 - 380 - 170 = 120.
    Before: optimizer 800, backward 0, dataloader 60 (the Lightning range's 20 µs around
    enumerate(DataLoader) as forward)."""
    events = [host_range("ProfilerStep#1", 0, 1000),
              host_range("[pl][profile][_TrainingEpochLoop].train_dataloader_next", 10, 90),
              host_range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 20, 80),
              host_range("Optimizer.step#SGD.step", 100, 900),
              host_range("[pl][profile][Strategy]SingleDeviceStrategy.training_step", 150, 400),
              host_range("aten::linear", 160, 390, "cpu_op"),
              host_range("[pl][profile][Strategy]SingleDeviceStrategy.backward", 420, 800),
              host_range("autograd::engine::evaluate_function: AddmmBackward0", 450, 780, "cpu_op"),
              host_range("aten::add_", 820, 880, "cpu_op")]
    path = tmp_path / "closure.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    cols = ["step", "step_us", "dataloader_us", "optimizer_us", "backward_us", "forward_us", "other_us"]
    with loaded(path) as s:
        got = [tuple(r[c] for c in cols) for r in as_dicts(s.report("steps"))]
    assert got == [(1, 1000.0, 80.0, 170.0, 380.0, 250.0, 120.0)]


def test_lightning_trace_backward_in_every_step():
    """fixtures/lightning/lightning_fit.json.gz (Lightning 2.6.6, torch 2.13): the profiler's step
    boundary falls inside Lightning's closure, so each step holds a backward, inside the
    Optimizer.step the previous step started: every step's backward is the part of Lightning's
    backward ranges (which hold every autograd event of the trace) inside it, from the JSON."""
    import gzip
    events = json.load(gzip.open(REPO / "fixtures" / "lightning" / "lightning_fit.json.gz"))["traceEvents"]
    steps = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("name", "").startswith("ProfilerStep#")}
    backward = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name", "").endswith("Strategy.backward")]
    assert all(any(b0 <= e["ts"] and e["ts"] + e["dur"] <= b1 for b0, b1 in backward)
               for e in events if e.get("name", "").startswith("autograd::engine::evaluate_function"))
    want = {n: sum(max(0.0, min(b1, s1) - max(b0, s0)) for b0, b1 in backward) for n, (s0, s1) in steps.items()}
    with loaded(REPO / "fixtures" / "lightning" / "lightning_fit.json.gz") as s:
        got = {r["step"]: r["backward_us"] for r in as_dicts(s.report("steps"))}
    assert sorted(got) == [2, 3, 4] and all(v > 500 for v in want.values())
    assert got == {n: pytest.approx(v, abs=1e-3) for n, v in want.items()}
