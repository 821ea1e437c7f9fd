"""Lightning training loops as users run them (fixtures/lightning_loops/, recorded by
record_lightning_loops.py with Lightning 2.6.6 and torch 2.13 on CPU): what the reports say
against the traces read with json."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import REPO, as_dicts, host_range, loaded

LOOPS = REPO / "fixtures" / "lightning_loops"


def _events(name):
    return json.load(gzip.open(LOOPS / name))["traceEvents"]


def _profiler_steps(events):
    """The ProfilerStep#N ranges in time order: (N, start µs, end µs)."""
    return sorted(((int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")), key=lambda s: s[1])


def test_repeated_step_numbers_are_told_apart():
    """val_accumulate.json.gz: Lightning numbers training and validation steps each from its own
    counter, so the validation loop inside the profiled steps repeats ProfilerStep#3 and #4 (and
    the first step is #2, then #1). Steps are then numbered in time order, 1 to 10, each its own
    range; ops-by-step counts each step's operators (those starting in its range, from the
    JSON). Before: steps 2, 3 and 4 came twice, and ops-by-step added up both steps of a number
    (step 2: 4 aten::addmm instead of 2)."""
    events = _events("val_accumulate.json.gz")
    ranges = _profiler_steps(events)
    assert [n for n, _, _ in ranges] == [2, 1, 2, 3, 4, 3, 4, 5, 6, 7]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
           and not e["name"].startswith("ProfilerStep#")]
    want_calls = {k: sum(1 for e in ops if t0 <= e["ts"] < t1) for k, (_, t0, t1) in enumerate(ranges, 1)}
    want_addmm = {k: sum(1 for e in ops if t0 <= e["ts"] < t1 and e["name"] == "aten::addmm")
                  for k, (_, t0, t1) in enumerate(ranges, 1)}
    with loaded(LOOPS / "val_accumulate.json.gz") as s:
        steps = as_dicts(s.report("steps"))
        notes = s.report_result("steps").notes
        by_step = as_dicts(s.report("ops-by-step", limit=0))
        view = s.con.execute("SELECT step FROM steps ORDER BY ts_ns").fetchall()
    assert [r[0] for r in view] == list(range(1, 11))
    # and the report says so (the numbers shown are not those of the trace)
    assert "val_accumulate.json.gz: its ProfilerStep numbers repeat or go back (Lightning numbers validation " \
           "steps apart): steps numbered 1-10 in time order" in notes
    assert [(r["step"], r["step_us"]) for r in steps] == [
        (k, pytest.approx(t1 - t0, abs=1e-3)) for k, (_, t0, t1) in enumerate(ranges, 1)]
    calls, addmm = {}, {}
    for r in by_step:
        calls[r["step"]] = calls.get(r["step"], 0) + r["calls"]
        if r["name"] == "aten::addmm":
            addmm[r["step"]] = r["calls"]
    assert calls == want_calls
    assert addmm == {k: v for k, v in want_addmm.items() if v} and addmm[3] == 2


def test_increasing_step_numbers_are_kept(tmp_path):
    """Numbers that only grow (a schedule's repeats skip some) stay the N of ProfilerStep#N."""
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
               "ts": 100 * i, "dur": 90, "args": {}} for i, n in enumerate([2, 3, 7, 8])]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    with loaded(path) as s:
        assert s.con.execute("SELECT step FROM steps ORDER BY ts_ns").fetchall() == [(2,), (3,), (7,), (8,)]
        assert not [n for n in s.report_result("steps").notes if "repeat or go back" in n]


def test_manual_optimization_steps_are_optimizer():
    """gan_manual.json.gz: with automatic_optimization=False the two Adam optimizers' zero_grad
    and step run inside Lightning's training_step range; they are the step's optimizer time (the
    length of the Optimizer.* ranges in each step, from the JSON: about 1 ms), no longer the
    step's forward. Before: optimizer 0 in every step."""
    events = _events("gan_manual.json.gz")
    opt = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"
           and e["name"].startswith(("Optimizer.step#Adam.step", "Optimizer.zero_grad#Adam.zero_grad"))]
    lightning = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"
                 and e["name"].endswith("Strategy.training_step")]
    assert all(any(l0 <= o0 and o1 <= l1 for l0, l1 in lightning) for o0, o1 in opt) and len(opt) == 12
    want = {n: sum(max(0.0, min(o1, t1) - max(o0, t0)) for o0, o1 in opt)
            for n, t0, t1 in _profiler_steps(events)}
    with loaded(LOOPS / "gan_manual.json.gz") as s:
        got = {r["step"]: r for r in as_dicts(s.report("steps"))}
    assert sorted(got) == [2, 3, 4] and all(v > 900 for v in want.values())
    assert {n: r["optimizer_us"] for n, r in got.items()} == {n: pytest.approx(v, abs=1e-3) for n, v in want.items()}
    for r in got.values():  # the split still adds up to the step
        parts = ("dataloader_us", "optimizer_us", "backward_us", "host_comm_us", "forward_us", "other_us")
        assert sum(r[c] for c in parts) == pytest.approx(r["step_us"], abs=1e-3)


def _union_within(spans, t0, t1):
    """How much of [t0, t1] the union of `spans` covers."""
    total, end = 0.0, t0
    for a, b in sorted(spans):
        a, b = max(a, end), min(b, t1)
        if b > a:
            total, end = total + b - a, b
    return total


def test_single_tensor_optimizer_leaves_the_closure():
    """ddp/rank0.json.gz: Lightning's automatic optimization runs training_step and backward in
    a closure inside Optimizer.step#SGD.step; what single-tensor-optimizer puts at stake (no
    stacks: the annotation) is the step less the closure's work in it: the Lightning ranges and
    backward ranges inside it (from the JSON), about 0.7 ms a step. Before: the whole step, 10.1
    ms of 2 steps, severity high (41.5% of the trace) for an optimizer of 4 parameters."""
    events = _events("ddp/rank0.json.gz")
    xs = [e for e in events if e.get("ph") == "X"]
    want = {}
    for o in xs:
        if o["name"] != "Optimizer.step#SGD.step":
            continue
        t0, t1 = o["ts"], o["ts"] + o["dur"]
        inner = [(e["ts"], e["ts"] + e["dur"]) for e in xs if e is not o and t0 <= e["ts"] and e["ts"] + e["dur"] <= t1
                 and (e["name"].startswith(("[pl][profile]", "autograd::engine::evaluate_function:"))
                      or "Backward" in e["name"])]
        want[round(o["dur"], 2)] = o["dur"] - _union_within(inner, t0, t1)
    with loaded(LOOPS / "ddp" / "rank0.json.gz") as s:
        got = [(r["at_stake_us"], r["dur_us"]) for r in as_dicts(s.report("patterns", events=True))
               if r["rule"] == "single-tensor-optimizer"]
        summary = {r["rule"]: r for r in as_dicts(s.report("patterns"))}
    assert len(got) == 2 and all(dur > 3000 for _, dur in got)
    for at_stake, dur in got:
        assert at_stake == pytest.approx(want[round(dur, 2)], abs=1e-2)
        assert 300 < at_stake < dur / 3
    assert summary["single-tensor-optimizer"]["severity"] != "high"


def test_single_tensor_optimizer_by_hand(tmp_path):
    """One automatic-optimization step, by hand (µs): Optimizer.step#SGD.step [100, 900] holding
    the closure's [pl][profile]...training_step [110, 400] (aten::linear in it) and
    [pl][profile]...backward [420, 700] (an autograd evaluate_function in it), Lightning's
    gradient clipping hook [720, 800] holding aten::_foreach_norm (clip_grad_norm_'s, not the
    optimizer's), and the update's aten::add_ [820, 880]. Matched (no multi-tensor op of the
    optimizer's own), at stake 800 - 290 - 280 - 80 = 150. Before: not matched (the clipping's
    _foreach_norm counted as the optimizer's)."""
    events = [host_range("ProfilerStep#1", 0, 1000), host_range("Optimizer.step#SGD.step", 100, 900),
              host_range("[pl][profile][Strategy]SingleDeviceStrategy.training_step", 110, 400),
              host_range("aten::linear", 120, 390, "cpu_op"),
              host_range("[pl][profile][Strategy]SingleDeviceStrategy.backward", 420, 700),
              host_range("autograd::engine::evaluate_function: AddmmBackward0", 430, 690, "cpu_op"),
              host_range("[pl][profile][LightningModule]Lit.configure_gradient_clipping", 720, 800),
              host_range("aten::_foreach_norm", 730, 790, "cpu_op"),
              host_range("aten::add_", 820, 880, "cpu_op")]
    path = tmp_path / "closure.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    with loaded(path) as s:
        got = [(r["at_stake_us"], r["dur_us"]) for r in as_dicts(s.report("patterns", events=True))
               if r["rule"] == "single-tensor-optimizer"]
    assert got == [(150.0, 800.0)]


def test_with_stack_modules_have_their_operators():
    """stack_modules.json.gz (with_stack=True): nn.Module events and Lightning's [pl][module]
    ranges, each range inside its module's call. The modules are the nn.Module events; each
    one's operators are the cpu_ops directly in its range (in it, in no operator nor inner
    range), from the JSON: an aten::linear per Linear call, an aten::relu per ReLU call, 0 for
    the Sequential. Before: 0 for every module (the range took them)."""
    events = _events("stack_modules.json.gz")
    xs = [e for e in events if e.get("ph") == "X"]
    nn = [e for e in xs if e["name"].startswith("nn.Module: ")]
    ranges = [e for e in xs if e["name"].startswith("[pl][module]")]
    ops = [e for e in xs if e.get("cat") == "cpu_op"]

    def inside(a, b):
        return a is not b and a["tid"] == b["tid"] and b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
    want = {}
    for r in ranges:
        module = min((m for m in nn if inside(r, m)), key=lambda m: m["dur"])["name"][len("nn.Module: "):]
        direct = [o for o in ops if inside(o, r) and min((p for p in ops + ranges if inside(o, p)),
                                                           key=lambda p: p["dur"]) is r]
        want[module] = want.get(module, 0) + len(direct)
    with loaded(LOOPS / "stack_modules.json.gz") as s:
        got = {r["path"].rsplit("/", 1)[-1]: r["operators"] for r in as_dicts(s.report("modules"))}
    assert want == {"Sequential_0": 0, "Linear_0": 2, "ReLU_0": 2, "Linear_1": 2}
    assert {m: got[m] for m in want} == want
