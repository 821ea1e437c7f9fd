"""`duckprof report patterns`: anti-pattern rules on trace files (issue 16).

- TorchTidy's eight rules against torch's own verdict on the live profiler
  (fixtures/patterns/torchtidy/, recorded with torch 2.13 on CPU by
  record_torchtidy.py): every pattern class's matched_events() equals the
  events duckprof matches, event for event (name and start in ns), on every
  trace recorded with Python stacks; where duckprof differs on purpose (torch
  is wrong: FP32MatMulPattern on a CPU-only machine; MatMulDimInFP16Pattern's
  tensor-core advice cannot apply to one; torch finds nothing
  without stacks and duckprof's fallbacks do) the difference is tested
  explicitly.
- ForLoopIndexingPattern's matching, run by torch on 312 random sibling lists
  (fixtures/patterns/forloop_random.json, forloop_random.py).
- The GPU-side rules on handmade traces (fixtures/patterns/gpu/, make_fixtures.py,
  whose docstrings work out each time at stake by hand).
- The fix on a trace without a GPU: no pin_memory advice (data-loading,
  dataloader), on a handmade trace with and without a GPU and on torch's CPU trace.
- compile-in-step on handmade traces of torch.compile's ranges (older and
  recent torch) and on torch 2.13's recompile (fixtures/golden/ops/recompile.json.gz);
  nothing on the traces that compiled in the profiler's warm-up step.
- The composed report: rule files and their headers, --only, --list,
  --events, --fail-on and its exit code, --format json, thresholds.
- The corpus: every rule runs or is skipped with a reason on every trace; the
  synchronous DataLoader of v100_resnet50_workers0_2021 is found, that of
  workers4 (num_workers=4) is not.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import CORPUS, REPO, corpus_files, corpus_path, invoke, needs_corpus

import duckprof
from duckprof import reports, sqlfiles
from duckprof.errors import DuckprofError

TT = REPO / "fixtures" / "patterns" / "torchtidy"
GPU = REPO / "fixtures" / "patterns" / "gpu"
GOLDEN_OPS = REPO / "fixtures" / "golden" / "ops"
CASES = sorted(p.name[: -len(".torch.json")] for p in TT.glob("*.torch.json"))

#: torch's pattern class -> duckprof's rule
RULE_OF = {
    "ExtraCUDACopyPattern": "extra-cuda-copy",
    "ForLoopIndexingPattern": "for-loop-indexing",
    "FP32MatMulPattern": "fp32-matmul",
    "OptimizerSingleTensorPattern": "single-tensor-optimizer",
    "SynchronizedDataLoaderPattern": "dataloader",
    "GradNotSetToNonePattern": "zero-grad",
    "Conv2dBiasFollowedByBatchNorm2dPattern": "conv-bias-bn",
    "MatMulDimInFP16Pattern": "fp16-matmul-dims",
}
#: the rules whose fallbacks (no Python stacks) find what torch cannot see
FALLBACKS = {"ExtraCUDACopyPattern", "OptimizerSingleTensorPattern", "SynchronizedDataLoaderPattern",
             "GradNotSetToNonePattern", "Conv2dBiasFollowedByBatchNorm2dPattern"}
#: the fixture stem of each pattern class (<stem>_yes has the pattern, <stem>_no has not)
STEM = {"ExtraCUDACopyPattern": "extra_cuda_copy", "ForLoopIndexingPattern": "for_loop_indexing",
        "FP32MatMulPattern": "fp32_matmul", "OptimizerSingleTensorPattern": "single_tensor_optimizer",
        "SynchronizedDataLoaderPattern": "dataloader", "GradNotSetToNonePattern": "zero_grad",
        "Conv2dBiasFollowedByBatchNorm2dPattern": "conv_bias_bn", "MatMulDimInFP16Pattern": "fp16_matmul_dims"}
#: torch's names in report_all_anti_patterns' summary lines
#: torch's rules duckprof skips on a CPU-only trace (as the torchtidy fixtures are), where torch
#: matches: test_fp32_matmul_is_skipped_where_torch_is_wrong, test_fp16_matmul_dims_needs_a_gpu
CPU_SKIPPED = ("FP32MatMulPattern", "MatMulDimInFP16Pattern")
TORCH_NAMES = {
    "Extra CUDA Copy Pattern": "ExtraCUDACopyPattern",
    "FP32 MatMul Pattern": "FP32MatMulPattern",
    "Optimizer Single Tensor Pattern": "OptimizerSingleTensorPattern",
    "Synchronized DataLoader Pattern": "SynchronizedDataLoaderPattern",
    "Gradient Set To Zero Instead of None Pattern": "GradNotSetToNonePattern",
    "Enabling Bias in Conv2d Followed By BatchNorm Pattern": "Conv2dBiasFollowedByBatchNorm2dPattern",
    "Matrix Multiplication Dimension Not Aligned Pattern": "MatMulDimInFP16Pattern",
}


def golden(case: str) -> dict:
    return json.loads((TT / f"{case}.torch.json").read_text())


class Verdicts:
    """duckprof on every TorchTidy fixture at once (each a run of its own, run =
    case name): every matched event and every skipped rule, per run."""

    def __init__(self, s):
        self.s = s
        runs = dict(s.sql("SELECT trace_id, run FROM trace_files").fetchall())
        rel = s.report("patterns", events=True).set_alias("r")
        ev = s.sql("SELECT trace_id, event_id, name AS event_name, ts_ns FROM events").set_alias("e")
        rows = rel.join(ev, "r.trace_id = e.trace_id AND r.event_id = e.event_id") \
            .select("r.trace_id, rule, event_name, ts_ns, source, at_stake_us, dur_us, detail").fetchall()
        self.events: dict[str, dict[str, list[tuple]]] = {}
        for trace_id, rule, name, ts, source, *rest in rows:
            self.events.setdefault(runs[trace_id], {}).setdefault(rule, []).append((name, ts, source, *rest))
        self.skipped: dict[str, dict[str, str]] = {}
        for trace_id, rule, reason in s.report("patterns", list=True).filter("NOT runs") \
                .select("trace_id, rule, reason").fetchall():
            self.skipped.setdefault(runs[trace_id], {})[rule] = reason

    def matches(self, run: str, rule: str) -> list[tuple]:
        """(name, ts_ns, source, at_stake_us, dur_us, detail) of each event `rule` matched in `run`."""
        return self.events.get(run, {}).get(rule, [])


@pytest.fixture(scope="module")
def tt():
    s = duckprof.connect()
    for case in CASES:
        s.load([str(TT / f"{case}.json.gz")], run=case)
    yield Verdicts(s)
    s.close()


# -- TorchTidy's rules against torch ----------------------------------------------------------

def torch_agreement(v: Verdicts, case: str) -> int:
    """Assert duckprof matches what torch matched in `case`, pattern by pattern
    (see test_rules_match_torch_event_for_event); returns the events compared."""
    g = golden(case)
    compared = 0
    for cls, want in g["matched_events"].items():
        if cls in CPU_SKIPPED:
            continue  # not on a CPU-only machine: test_fp32_matmul_is_skipped_where_torch_is_wrong, ...
        if not g["with_stack"] and cls in FALLBACKS:
            assert want == [], (case, cls)  # torch sees nothing without stacks: test_fallbacks_without_stacks
            continue
        mine = sorted((m[0], m[1]) for m in v.matches(case, RULE_OF[cls]))
        assert mine == sorted((e["name"], e["ts_ns"]) for e in want), (case, cls)
        compared += len(want)
    return compared


def test_two_rules_match_torch_event_for_event():
    """The fast one: two recordings (the rest: test_rules_match_torch_event_for_event)."""
    with duckprof.connect() as s:
        for case in ("extra_cuda_copy_yes", "for_loop_indexing_yes"):
            s.load([str(TT / f"{case}.json.gz")], run=case)
        v = Verdicts(s)
        assert torch_agreement(v, "extra_cuda_copy_yes") == 4
        assert torch_agreement(v, "for_loop_indexing_yes") == 2


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_rules_match_torch_event_for_event(tt, case):
    g = golden(case)
    compared = torch_agreement(tt, case)
    own = [cls for cls, stem in STEM.items() if case == f"{stem}_yes" and cls not in CPU_SKIPPED]
    assert compared >= sum(len(g["matched_events"][cls]) for cls in own) > 0 or not own, case


def test_every_torchtidy_rule_has_a_pair_that_fires_and_one_that_does_not():
    for cls, stem in STEM.items():
        assert golden(f"{stem}_yes")["matched_events"][cls], cls
        assert golden(f"{stem}_no")["matched_events"][cls] == [], cls


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_report_all_anti_patterns_summary_counts(tt, case):
    """torch's report_all_anti_patterns prints 'Name: N events matched.' per
    pattern that matched; duckprof counts as many (FP32 MatMul aside). Without
    stacks it raises instead: FP32MatMulPattern matches every aten::mm of a
    CPU trace, and splitting "No source code location found" at ':' fails."""
    g = golden(case)
    if g["report_all_anti_patterns"]["error"]:
        assert not g["with_stack"] and g["matched_events"]["FP32MatMulPattern"], case
        assert g["report_all_anti_patterns"]["error"].startswith("ValueError: not enough values to unpack")
        return
    printed = g["report_all_anti_patterns"]["printed"]
    counts = {TORCH_NAMES[m.group(1)]: int(m.group(2))
              for m in re.finditer(r"^(.+?): (\d+) events matched\.$", printed, re.M)}
    assert counts == {cls: len(v) for cls, v in g["matched_events"].items()
                      if v and cls != "ForLoopIndexingPattern"}  # the golden is self-consistent
    for cls, n in counts.items():
        if cls not in CPU_SKIPPED:
            assert len(tt.matches(case, RULE_OF[cls])) == n, (case, cls)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if golden(c)["with_stack"]])
def test_sources_are_in_torchs_files(tt, case):
    """torch's source_code_location is the caller's file:line (the trace keeps
    no call-site line); duckprof names the innermost user frame: the same file."""
    g = golden(case)
    for cls, want in g["matched_events"].items():
        if cls in CPU_SKIPPED or not want:
            continue
        by_event = {(m[0], m[1]): m[2] for m in tt.matches(case, RULE_OF[cls])}
        for e in want:
            src = by_event[(e["name"], e["ts_ns"])]
            assert src is not None and src.split("(")[0] == e["source"].split(":")[0], (case, cls, src, e)


@pytest.mark.slow
def test_fp32_matmul_is_skipped_where_torch_is_wrong(tt):
    """torch's FP32MatMulPattern reads torch.cuda.get_arch_list() of the machine
    it runs on: empty on a CPU build, and all([]) is true, so it matches every
    aten::mm of a CPU-only trace. duckprof reads the trace's devices: no GPU, so
    the rule is skipped, with the reason."""
    assert len(golden("fp32_matmul_yes")["matched_events"]["FP32MatMulPattern"]) == 3
    assert golden("fp32_matmul_yes")["skip"]["FP32MatMulPattern"] is False
    for case in CASES:
        assert tt.matches(case, "fp32-matmul") == []
        assert "TF32" in tt.skipped[case]["fp32-matmul"]


def gpu_matmuls(tmp_path, mms) -> list[tuple]:
    """A trace of an A100 (8.0) with one aten::mm per (input types, input dims,
    kernel name) of `mms`, 300 µs apart, each launching its kernel of 160 µs;
    every pattern rule's matches on it (Verdicts.matches, by rule)."""
    a100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8,
            "computeMinor": 0, "numSms": 108}
    ev = []
    for corr, (types, dims, kernel) in enumerate(mms, 1):
        ts = T0 + 300 * (corr - 1)
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": 20,
                   "args": {"External id": corr, "Input Dims": dims, "Input type": types}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": ts + 5, "dur": 5, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts + 30,
                   "dur": 160, "args": {"device": 0, "stream": 7, "correlation": corr}})
    path = tmp_path / "a100.json"
    path.write_text(json.dumps({"deviceProperties": [a100], "traceEvents": ev}))
    with duckprof.connect() as s:
        s.load([str(path)])
        return Verdicts(s).events.get("default", {})


T0 = 1_000_000
SQUARE = [[64, 64], [64, 64]]


@pytest.mark.slow  # a trace of its own
def test_fp32_matmul_finds_full_fp32_kernels_on_a_tf32_gpu(tmp_path):
    """An A100 (8.0): an fp32 aten::mm whose kernel is an sgemm is matched, at stake
    its time x (1 - 19.5 / 156) (A100 fp32 / tf32 peaks); one whose kernel is a
    TF32 kernel, and a bf16 one, are not."""
    got = gpu_matmuls(tmp_path, [(["float", "float"], SQUARE, "ampere_sgemm_64x64_nn"),
                                 (["float", "float"], SQUARE, "ampere_tf32_s1688gemm_tf32_64x64_nn"),
                                 (["c10::BFloat16", "c10::BFloat16"], SQUARE, "ampere_bf16_s16816gemm_bf16_64x64_nn")])
    assert [(m[0], m[1], m[3]) for m in got.get("fp32-matmul", [])] == \
        [("aten::mm", T0 * 1000, 160 * (1 - 19.5 / 156))]  # 140 µs


@pytest.mark.slow
def test_fp16_matmul_dims_needs_a_gpu(tt):
    """torch's MatMulDimInFP16Pattern matches the bf16 matmuls of its CPU-only recording; their
    advice (pad to multiples of 8 so tensor cores apply) cannot apply to a trace without a GPU
    (a CPU job's bf16 autocast): duckprof skips the rule there, with the reason. Before: 1
    match on fp16_matmul_dims_yes and a tensor-core fix."""
    assert len(golden("fp16_matmul_dims_yes")["matched_events"]["MatMulDimInFP16Pattern"]) >= 1
    for case in CASES:
        assert tt.matches(case, "fp16-matmul-dims") == []
        assert tt.skipped[case]["fp16-matmul-dims"] == "no GPU activity in this trace", case


@pytest.mark.slow  # a trace of its own
def test_fp16_matmul_dims_time_at_stake_is_its_kernels(tmp_path):
    """A bf16 aten::mm with a dim of 63 is matched, at stake its kernel's 160 µs;
    the aligned bf16 one and the unaligned fp32 one are not."""
    bf16 = ["c10::BFloat16", "c10::BFloat16"]
    got = gpu_matmuls(tmp_path, [(bf16, SQUARE, "ampere_bf16_s16816gemm_bf16_64x64_nn"),
                                 (bf16, [[64, 63], [63, 64]], "ampere_bf16_s16816gemm_bf16_64x64_nn"),
                                 (["float", "float"], [[64, 63], [63, 64]], "ampere_sgemm_64x64_nn")])
    assert [(m[0], m[1], m[3]) for m in got.get("fp16-matmul-dims", [])] == [("aten::mm", (T0 + 300) * 1000, 160.0)]


# -- without Python stacks: duckprof's fallbacks -----------------------------------------------

@pytest.mark.slow
def test_fallbacks_without_stacks(tt):
    """Recorded again without stacks, torch finds none of these; duckprof finds
    them from record_function annotations and sibling ops: as many as torch
    finds with stacks, except where the annotation does not exist (model.zero_grad
    has none; a loader's __iter__ is one frame, its annotations one per batch)."""
    def n(case, rule):
        return len(tt.matches(case, rule))

    for cls in ("ExtraCUDACopyPattern", "OptimizerSingleTensorPattern", "Conv2dBiasFollowedByBatchNorm2dPattern"):
        stem = STEM[cls]
        assert golden(f"{stem}_yes_nostack")["matched_events"][cls] == []
        assert n(f"{stem}_yes_nostack", RULE_OF[cls]) == len(golden(f"{stem}_yes")["matched_events"][cls]) > 0
        assert n(f"{stem}_no_nostack", RULE_OF[cls]) == 0
    # dataloader: one match per batch of the single-process iterator (24 samples / 4, and the
    # __next__ that raises StopIteration), each at stake its own duration
    loader = tt.matches("dataloader_yes_nostack", "dataloader")
    assert len(loader) == 7 and all(m[3] == m[4] for m in loader)
    assert n("dataloader_no_nostack", "dataloader") == 0
    # zero-grad: optimizer.zero_grad(set_to_none=False) only (model.zero_grad is not annotated)
    assert n("zero_grad_yes_nostack", "zero-grad") == 2
    assert len(golden("zero_grad_yes")["matched_events"]["GradNotSetToNonePattern"]) == 4
    assert n("zero_grad_no_nostack", "zero-grad") == 0


@pytest.mark.slow
def test_dataloader_time_at_stake_is_its_batches(tt):
    """With stacks the match is torch's __iter__ frame; its time at stake is the
    single-process __next__ annotations after it on its thread (7 batches)."""
    (m,) = tt.matches("dataloader_yes", "dataloader")
    nexts = tt.s.sql("SELECT sum(dur_ns) / 1e3 FROM user_annotations WHERE name LIKE 'enumerate(DataLoader)#%' "
                     "AND trace_id IN (SELECT trace_id FROM trace_files WHERE run = 'dataloader_yes')").fetchall()
    assert (m[3], m[5]) == (nexts[0][0], "7 batches loaded on the loop thread")


# -- ForLoopIndexingPattern on random sibling lists ---------------------------------------------

def forloop_trace(path, g):
    """One parent per list (its children in order), and a thread of top-level events."""
    ev, where = [], {}
    t = 1_000_000
    for i, names in enumerate(g["lists"]):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "parent", "pid": 1, "tid": 1, "ts": t,
                   "dur": 10 * len(names) + 20})
        for j, name in enumerate(names):
            ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t + 10 + 10 * j, "dur": 5})
            where[(1, (t + 10 + 10 * j) * 1000)] = [i, j]
        t += 10 * len(names) + 100
    for j, name in enumerate(g["tops"]):
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 2, "ts": 1_000_000 + 10 * j, "dur": 5})
        where[(2, (1_000_000 + 10 * j) * 1000)] = j
    path.write_text(json.dumps({"traceEvents": ev}))
    return where


@pytest.mark.slow  # the quick run has test_two_rules_match_torch_event_for_event
def test_for_loop_indexing_equals_torch_on_random_lists(tmp_path):
    g = json.loads((REPO / "fixtures" / "patterns" / "forloop_random.json").read_text())
    where = forloop_trace(tmp_path / "loops.json", g)
    with duckprof.connect() as s:
        s.load([str(tmp_path / "loops.json")])
        ids = [r[0] for r in s.report("patterns", only="for-loop-indexing", events=True)
               .select("event_id").fetchall()]
        rows = s.con.execute("SELECT tid, ts_ns FROM events WHERE list_contains(?, event_id)", [ids]).fetchall()
    got = sorted(where[(tid, ts)] for tid, ts in rows if tid == 1)
    assert len(g["matched"]) == 330 and got == sorted(g["matched"])
    assert sorted(where[(tid, ts)] for tid, ts in rows if tid == 2) == g["matched_tops"] == [0]


# -- the GPU-side rules on handmade traces ------------------------------------------------------

#: rule -> (matches, time at stake in µs) on <rule>_yes.json (worked out in make_fixtures.py)
GPU_STAKES = {
    "sync": (2, 178.0),
    "gpu-idle": (1, 400.0),
    "pageable-memcpy": (2, 64.0),
    "tiny-memcpy": (20, 100.0),
    "launch-bound": (100, 300.0),
    "data-loading": (2, 310.0),
    "comm-overlap": (1, 150.0),
}


@pytest.fixture(scope="module")
def gpu(gpu_patterns):
    """<rule>_yes and <rule>_no of every rule in GPU_STAKES, each a run named after its file."""
    runs = {r[0] for r in gpu_patterns.sql("SELECT run FROM runs").fetchall()}
    assert runs >= {f"{rule.replace('-', '_')}_{v}" for rule in GPU_STAKES for v in ("yes", "no")}
    return gpu_patterns


def finding(s, run, rule, **options):
    rows = s.report("patterns", run=run, only=rule, **options) \
        .select("severity, count, at_stake_us, stake_pct").fetchall()
    return rows[0] if rows else None


@pytest.mark.parametrize("rule", GPU_STAKES)
def test_gpu_rule_fires_with_its_hand_computed_time_at_stake(gpu, rule):
    stem = rule.replace("-", "_")
    severity, count, at_stake_us, _ = finding(gpu, f"{stem}_yes", rule)
    assert (count, at_stake_us) == GPU_STAKES[rule]
    assert finding(gpu, f"{stem}_no", rule) is None  # neither found nor skipped


def test_sync_matches_the_outermost_op_and_not_after_the_steps(gpu):
    rows = gpu.report("patterns", run="sync_yes", only="sync", events=True) \
        .select("name, dur_us, at_stake_us, detail").fetchall()
    assert rows == [("aten::item", 80.0, 78.0, "cudaStreamSynchronize"),
                    ("cudaDeviceSynchronize", 60.0, 100.0, "cudaDeviceSynchronize")]


@pytest.mark.slow  # a trace of its own
def test_sync_before_the_devices_first_activity():
    """A sync that returns before the device has run anything: the idle gap
    has no start, so the time at stake runs from the call's start to the
    first device work (sync_first.json, hand-computed in make_fixtures.py:
    75 µs; and 90 µs for the sync after it, in a gap with a start)."""
    with duckprof.connect() as s:
        s.load([str(GPU / "sync_first.json")])
        rows = s.report("patterns", only="sync", events=True) \
            .select("name, ts_ms, dur_us, at_stake_us, detail").fetchall()
        assert finding(s, "default", "sync")[1:3] == (2, 165.0)
    assert rows == [("aten::item", 0.04, 30.0, 75.0, "cudaStreamSynchronize"),
                    ("cudaDeviceSynchronize", 0.31, 20.0, 90.0, "cudaDeviceSynchronize")]


def test_severity_follows_the_share_of_step_time(gpu):
    # sync_yes: 178 µs of a 1000 µs step = 17.8%
    assert finding(gpu, "sync_yes", "sync")[0::3] == ("high", pytest.approx(17.8))
    assert finding(gpu, "sync_yes", "sync", high_pct=20)[0] == "medium"
    assert finding(gpu, "sync_yes", "sync", high_pct=20, medium_pct=18)[0] == "low"


@pytest.mark.slow
def test_thresholds_are_options(gpu):
    assert finding(gpu, "gpu_idle_yes", "gpu-idle", min_gap_us=401) is None
    # the gaps of 50, 10 and 10 µs; not the one of 1300 µs ended by a launch after the step
    assert finding(gpu, "gpu_idle_no", "gpu-idle", min_gap_us=5)[1:3] == (3, 70.0)
    assert finding(gpu, "data_loading_yes", "data-loading", data_loading_pct=15)[1:3] == (1, 200.0)
    assert finding(gpu, "tiny_memcpy_yes", "tiny-memcpy", tiny_memcpy_count=10)[1:3] == (30, 150.0)
    assert finding(gpu, "tiny_memcpy_yes", "tiny-memcpy", tiny_memcpy_bytes=8) is None
    assert finding(gpu, "launch_bound_no", "launch-bound", launch_bound_pct=49)[1:3] == (100, 300.0)
    assert finding(gpu, "launch_bound_yes", "launch-bound", launch_bound_min=101) is None
    assert finding(gpu, "comm_overlap_yes", "comm-overlap", comm_exposed_pct=5)[1:3] == (2, 160.0)


@pytest.mark.slow
def test_rules_that_cannot_run_are_listed_with_the_reason(gpu, tt):
    cpu = tt.skipped["for_loop_indexing_yes"]
    assert set(cpu) == {"sync", "pageable-memcpy", "launch-bound", "gpu-idle", "comm-overlap", "tiny-memcpy",
                        "fp32-matmul", "fp16-matmul-dims", "data-loading"}
    assert cpu["sync"] == "no GPU activity in this trace"
    assert cpu["launch-bound"] == "no GPU kernels in this trace"
    assert "enumerate(DataLoader)" in cpu["data-loading"]
    # the same in --list, one row per rule
    listed = gpu.report("patterns", run="gpu_idle_yes", list=True).select("rule, runs, reason").fetchall()
    assert [r[0] for r in listed] == [r.name for r in reports.rules_of(reports.lookup("patterns"))]
    assert ("data-loading", False, "no enumerate(DataLoader)#...__next__ annotation: data loading is not marked "
            "in this trace") in listed
    assert ("sync", True, None) in listed


# -- the fix depends on the trace: no pin_memory advice without a GPU ------------------------------

def loading_trace(path, gpu):
    """data_loading_yes.json's steps and batches, loaded on the loop's thread
    (_SingleProcessDataLoaderIter: dataloader fires too), with a GPU as `gpu`
    says: None (no GPU activity, no deviceProperties: a CPU-only trace),
    'properties' (its deviceProperties, no GPU activity), 'kernel' (one kernel
    and its launch, no deviceProperties)."""
    doc = json.loads((GPU / "data_loading_yes.json").read_text())
    for e in doc["traceEvents"]:
        e["name"] = e["name"].replace("_MultiProcessingDataLoaderIter", "_SingleProcessDataLoaderIter")
    if gpu != "properties":
        del doc["deviceProperties"]
    if gpu == "kernel":
        doc["traceEvents"] += [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1000400,
             "dur": 5, "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "K1", "pid": 0, "tid": 7, "ts": 1000410, "dur": 100,
             "args": {"device": 0, "stream": 7, "correlation": 1}}]
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("gpu", [None, "properties", "kernel"])
def test_loading_fixes_advise_pin_memory_only_with_a_gpu(tmp_path, gpu):
    """pin_memory only speeds up host-to-device copies: data-loading and
    dataloader advise it on a trace with a GPU (its activity or its
    deviceProperties), not on a CPU-only one; in the rows, the notes and --list."""
    with duckprof.connect() as s:
        s.load([str(loading_trace(tmp_path / "loading.json", gpu))])
        res = s.report_result("patterns", only="data-loading,dataloader")
        fixes = dict(res.relation.select("rule, fix").fetchall())
        listed = dict(s.report("patterns", list=True, only="data-loading,dataloader").select("rule, fix").fetchall())
    assert set(fixes) == {"data-loading", "dataloader"}  # both found
    notes = [n for n in res.notes if n.startswith("fix (")]
    assert len(notes) == 2 and listed == fixes
    for rule, fix in fixes.items():
        assert ("pin_memory=True" in fix) == (gpu is not None), (rule, fix)
        assert f"fix ({rule}): {fix}" in notes
    if gpu is None:
        assert fixes == {"data-loading": "more DataLoader workers, prefetch_factor, persistent_workers=True, "
                                         "or a faster dataset",
                         "dataloader": "DataLoader(..., num_workers=N, persistent_workers=True)"}


def test_no_pin_memory_advice_on_torchs_cpu_trace():
    """fixtures/golden/ops/train.json.gz (torch 2.13 on CPU, a DataLoader with
    num_workers=0): data-loading and dataloader fire, with no pin_memory
    advice; a rule without fix-no-gpu keeps its fix."""
    with duckprof.connect() as s:
        s.load([str(GOLDEN_OPS / "train.json.gz")])
        res = s.report_result("patterns")
        fixes = dict(res.relation.filter("severity <> 'skipped'").select("rule, fix").fetchall())
    assert {"data-loading", "dataloader", "single-tensor-optimizer"} <= set(fixes)
    assert not any("pin_memory" in f for f in fixes.values()), fixes
    assert not any("pin_memory" in n for n in res.notes), res.notes
    (opt,) = [r for r in reports.rules_of(reports.lookup("patterns")) if r.name == "single-tensor-optimizer"]
    assert fixes["single-tensor-optimizer"] == opt.field("fix") and not opt.field("fix-no-gpu")


# -- compile-in-step: torch.compile compiling inside the steps ------------------------------------


def compile_trace(path, steps=True):
    """A handmade trace of torch.compile's ranges (times in µs, one thread):
    step 1 [0, 1000]: recent torch's phases (as torch 2.13 records them): dynamo [100, 700]
      > entire_frame_compile [150, 650] > _compile.compile_inner (dynamo_timed) [160, 640], each with its
      '<phase>_data: ..., compile_id=1/2' annotation, then the code it made running
      (Torch-Compiled Region: 1/2 [720, 800]): recompile 2 of frame 1, 600 µs;
    step 2 [1000, 2000]: older torch, dynamo_timed ranges only:
      _compile.<locals>.compile_inner (dynamo_timed) [1100, 1400] > OutputGraph.call_user_compiler
      (dynamo_timed) [1200, 1300], its id from the region after it (0/0 [1450, 1500]):
      the first compile of frame 0, 300 µs;
    step 3 [2000, 3000]: compiled code running (TorchDynamo Cache Lookup, Torch-Compiled
      Region: 0/1, CompiledFunction): no compile;
    before step 1, [-500, -100]: a compile outside the steps (found only without steps).
    Found with steps: 2 compiles, 900 µs of the steps' 3000 µs (30%)."""
    def x(name, ts, dur, cat="cpu_op"):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": 1_000_000 + ts, "dur": dur}
    ev = [x("dynamo", -500, 400), x("dynamo_data: compile_id=0/0", -490, 5, "user_annotation"),
          x("dynamo", 100, 600), x("dynamo_data: compile_id=1/2", 110, 10, "user_annotation"),
          x("entire_frame_compile", 150, 500),
          x("entire_frame_compile_data: fn_name=_compile.compile_inner, compile_id=1/2", 152, 2, "user_annotation"),
          x("_compile.compile_inner (dynamo_timed)", 160, 480), x("Torch-Compiled Region: 1/2", 720, 80),
          x("_compile.<locals>.compile_inner (dynamo_timed)", 1100, 300),
          x("OutputGraph.call_user_compiler (dynamo_timed)", 1200, 100), x("Torch-Compiled Region: 0/0", 1450, 50),
          x("TorchDynamo Cache Lookup", 2100, 10), x("Torch-Compiled Region: 0/1", 2120, 300),
          x("CompiledFunction", 2130, 200), x("aten::mm", 2140, 100)]
    if steps:
        ev += [x(f"ProfilerStep#{n}", 1000 * (n - 1), 1000, "user_annotation") for n in (1, 2, 3)]
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_compile_in_step_finds_each_compile_with_its_frame_and_time(tmp_path):
    with duckprof.connect() as s:
        s.load([str(compile_trace(tmp_path / "compile.json"))])
        rows = s.report("patterns", only="compile-in-step", events=True) \
            .select("name, step, dur_us, at_stake_us, detail").fetchall()
        assert finding(s, "default", "compile-in-step") == ("high", 2, 900.0, pytest.approx(30.0))
    assert rows == [("dynamo", 1, 600.0, 600.0, "step 1: recompile 2 of frame 1 (compile id 1/2)"),
                    ("_compile.<locals>.compile_inner (dynamo_timed)", 2, 300.0, 300.0,
                     "step 2: first compile of frame 0 (compile id 0/0)")]


@pytest.mark.slow  # a trace of its own
def test_compile_in_step_without_steps_looks_at_the_whole_trace(tmp_path):
    """No ProfilerStep: the compile before the others counts too (400 µs);
    the profiled window is 2920 µs, from -500 to the end of the last event (2420)."""
    with duckprof.connect() as s:
        s.load([str(compile_trace(tmp_path / "compile.json", steps=False))])
        details = s.report("patterns", only="compile-in-step", events=True).select("detail").fetchall()
        assert finding(s, "default", "compile-in-step") == ("high", 3, 1300.0, pytest.approx(100 * 1300 / 2920))
    assert details == [("first compile of frame 0 (compile id 0/0)",), ("recompile 2 of frame 1 (compile id 1/2)",),
                       ("first compile of frame 0 (compile id 0/0)",)]


def test_compile_in_step_on_torchs_recompile():
    """fixtures/golden/ops/recompile.json.gz (torch 2.13, record_ops.py): batch 8
    in the warm-up step and step 1, 12 in step 2: dynamo recompiles frame 0 in
    step 2 (its 'dynamo' range, read here with Python's json); compile,
    compile_ro and compile_train compile in the warm-up step, which the trace
    does not hold: their steps run the compiled code (Torch-Compiled Region:
    0/0) and nothing is found."""
    import gzip
    doc = json.loads(gzip.open(GOLDEN_OPS / "recompile.json.gz").read())
    (dynamo,) = [e for e in doc["traceEvents"] if e.get("name") == "dynamo"]
    steps_us = sum(e["dur"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    with duckprof.connect() as s:
        for name in ("recompile", "compile", "compile_ro", "compile_train"):
            s.load([str(GOLDEN_OPS / f"{name}.json.gz")], run=name)
        rows = s.report("patterns", run="recompile", only="compile-in-step", events=True) \
            .select("name, step, at_stake_us, detail").fetchall()
        assert rows == [("dynamo", 2, dynamo["dur"], "step 2: recompile 1 of frame 0 (compile id 0/1)")]
        assert finding(s, "recompile", "compile-in-step") == (
            "high", 1, dynamo["dur"], pytest.approx(100 * dynamo["dur"] / steps_us))
        for name in ("compile", "compile_ro", "compile_train"):
            assert finding(s, name, "compile-in-step") is None, name


@pytest.mark.slow
@needs_corpus
def test_compile_in_step_not_on_compiled_code_running():
    """b200_eager_stack runs a recompiled frame (Torch-Compiled Region: 0/1)
    compiled before the profile: nothing compiles in the trace."""
    with duckprof.connect() as s:
        s.load([str(corpus_path("b200_eager_stack.json.gz"))])
        assert s.sql("SELECT count(*) FROM host_events WHERE name = 'Torch-Compiled Region: 0/1'").fetchall() == [(1,)]
        assert finding(s, "default", "compile-in-step") is None


# -- the composed report ------------------------------------------------------------------------

def test_rule_files_have_one_shape():
    """Every rule file: named after its file, a severity, a fix, a method, what
    it needs, Columns equal to reports.RULE_COLUMNS, options that parse."""
    rules = reports.rules_of(reports.lookup("patterns"))
    assert len(rules) == 16
    for r in rules:
        assert [(c.name, c.type) for c in r.header.columns] == reports.RULE_COLUMNS, r.name
        for key in ("severity", "fix", "method", "needs"):
            assert r.field(key), (r.name, key)
        assert "Why it matters:" in r.header.text and "How to fix:" in r.header.text, r.name
        assert "The trace must contain:" in r.header.text and "Time at stake:" in r.header.text, r.name
        r.options()
    assert {r.field("torch") for r in rules} - {""} == set(RULE_OF)


def test_rule_queries_return_the_declared_columns(gpu):
    values = {o.name: o.default for o in reports.lookup("patterns").options()}
    for r in reports.rules_of(reports.lookup("patterns")):
        main = reports._sections(sqlfiles.render(r.header.path, **values))[""]
        cur = gpu.con.execute(f"DESCRIBE {main}", reports._bind(main, values))
        assert [(c[0], c[1]) for c in cur.fetchall()] == reports.RULE_COLUMNS, r.name


def test_rule_option_values_are_bound_never_pasted():
    for r in reports.rules_of(reports.lookup("patterns")):
        values = {o.name: o.default for o in reports.lookup("patterns").options()}
        for o in r.options():
            values[o.name] = 987654321
        values["run"] = "SENTINEL'x"
        text = sqlfiles.render(r.header.path, **values)
        assert "SENTINEL" not in text and "987654321" not in text, r.name


def test_a_broken_rule_file_is_refused(monkeypatch):
    rule = reports.rules_of(reports.lookup("patterns"))[0]
    monkeypatch.setattr(rule.header, "fields", {k: v for k, v in rule.header.fields.items() if k != "fix"})
    monkeypatch.setattr(reports, "_header", lambda rel: rule.header)
    with pytest.raises(ValueError, match="declares 'severity"):
        reports.rules_of(reports.lookup("patterns"))


def test_only_chooses_rules_and_refuses_unknown_ones(gpu):
    rows = gpu.report("patterns", run="sync_yes", only="sync,gpu-idle").select("rule").fetchall()
    assert sorted(r[0] for r in rows) == ["gpu-idle", "sync"]
    with pytest.raises(DuckprofError, match="no rule named 'synk'"):
        gpu.report("patterns", run="sync_yes", only="sync,synk")


def test_each_rule_is_computed_once_with_its_shared_views():
    """The views the report shares are materialised once for the rules that
    read them (two or more), for the run's traces only."""
    report = reports.lookup("patterns")
    rules = reports.rules_of(report)
    text = reports._shared_views(report, rules, {"run": "r"})
    assert text.startswith("WITH gpu_activity AS MATERIALIZED (SELECT * FROM gpu_activity WHERE trace_id IN")
    one = [r for r in rules if r.name == "sync"]
    assert reports._shared_views(report, one, {"run": None}) == ""


@pytest.mark.slow  # the quick run has test_patterns_shared.py
def test_rules_share_the_device_idle_gaps(gpu):
    """gpu-idle and sync both read the device idle gaps (device_idle): run
    together, the runner computes them once (a CTE device_idle) and each rule
    finds what it finds alone, where nothing is shared."""
    report = reports.lookup("patterns")
    values = {o.name: o.default for o in report.options()} | {"run": "r"}
    both = reports.chosen_rules(report, "gpu-idle,sync")
    ctes = reports._shared_ctes(both, values)
    assert list(ctes) == ["device_idle"] and "gpu_activity" in ctes["device_idle"]
    assert "device_idle AS MATERIALIZED (" in reports._shared_views(report, both, values, ctes)
    assert reports._shared_ctes(both[:1], values) == {}
    assert reports._shared_ctes(reports.chosen_rules(report, "sync,tiny-memcpy"), values) == {}
    cols = "rule, trace_id, count, at_stake_us, detail, source, step"
    for run in ("gpu_idle_yes", "sync_yes", "sync_no"):
        together = gpu.report("patterns", run=run, only="gpu-idle,sync").select(cols).fetchall()
        alone = [row for rule in ("gpu-idle", "sync")
                 for row in gpu.report("patterns", run=run, only=rule).select(cols).fetchall()]
        assert sorted(together) == sorted(alone) and alone, run


def test_examples_and_json(gpu, cli_app):
    res = invoke(cli_app, "report", "patterns", GPU / "tiny_memcpy_yes.json", "--only", "tiny-memcpy",
                 "--format", "json", "--examples", "2", "-q")
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    assert (row["rule"], row["count"], row["at_stake_us"]) == ("tiny-memcpy", 20, 100.0)
    assert len(row["examples"]) == 2
    assert row["examples"][0]["name"] == "Memcpy HtoD (Pageable -> Device)"
    assert row["examples"][0]["detail"] == "20 copies of < 1024 bytes by aten::copy_ in its step"
    assert row["fix"] and row["method"]


@pytest.mark.slow  # CLI runs; the quick run has test_severity_follows_the_share_of_step_time
def test_fail_on_compares_severities(gpu):
    res = gpu.report_result("patterns", run="sync_yes", only="sync")  # high
    assert [reports.fail_on(res, sev) for sev in (None, "low", "medium", "high")] == [0, 1, 1, 1]
    res = gpu.report_result("patterns", run="sync_yes", only="sync", high_pct=50)  # medium
    assert [reports.fail_on(res, sev) for sev in ("low", "medium", "high")] == [1, 1, 0]
    assert gpu.report_result("patterns", run="sync_yes", only="sync", fail_on="high").exit_code == 1
    # --list shows each rule's declared severity, not findings: never a failure
    assert gpu.report_result("patterns", run="sync_yes", list=True, fail_on="low").exit_code == 0


@pytest.mark.slow
def test_fail_on_sets_the_exit_code(cli_app):
    trace = GPU / "sync_yes.json"  # sync: high (17.8% of the step)
    assert invoke(cli_app, "report", "patterns", trace, "--only", "sync", "-q").exit_code == 0
    assert invoke(cli_app, "report", "patterns", trace, "--only", "sync", "--fail-on", "high", "-q").exit_code == 1
    assert invoke(cli_app, "report", "patterns", trace, "--only", "sync", "--fail-on", "low", "-q").exit_code == 1
    assert invoke(cli_app, "report", "patterns", trace, "--only", "sync", "--fail-on", "high",
                  "--high-pct", "50", "-q").exit_code == 0
    clean = GPU / "sync_no.json"
    assert invoke(cli_app, "report", "patterns", clean, "--only", "sync", "--fail-on", "low", "-q").exit_code == 0
    bad = invoke(cli_app, "report", "patterns", trace, "--only", "nope", "-q")
    assert bad.exit_code == 2 and "no rule named 'nope'" in bad.stderr


def test_nothing_found_says_so(cli_app):
    res = invoke(cli_app, "report", "patterns", GPU / "sync_no.json", "--only", "sync", "-q")
    assert res.exit_code == 0 and res.stdout.strip() == "no anti-pattern found by 1 rule(s) on 1 trace(s)"


# -- the corpus -----------------------------------------------------------------------------------

@pytest.mark.slow
@needs_corpus
def test_every_rule_runs_or_is_skipped_on_every_corpus_trace(corpus_session):
    s, ids, _ = corpus_session
    listed = s.report("patterns", run="corpus", list=True).select("trace_id, rule, runs, reason").fetchall()
    n_rules = len(reports.rules_of(reports.lookup("patterns")))
    assert len(listed) == n_rules * len(ids)
    assert all(runs or reason for _, _, runs, reason in listed)
    res = s.report_result("patterns", run="corpus")
    rows = res.relation.select("trace_id, rule, severity, count, detail").fetchall()
    skipped_pairs = {(t, r) for t, r, runs, _ in listed if not runs}
    assert {(t, r) for t, r, sev, _, _ in rows if sev == "skipped"} == skipped_pairs
    for t, r, sev, count, detail in rows:
        assert (sev == "skipped") == (count is None) and detail, (t, r)


@pytest.mark.slow
@needs_corpus
def test_synchronous_dataloader_on_v100_workers0_not_workers4():
    with duckprof.connect() as s:
        s.load([str(corpus_path("v100_resnet50_workers0_2021.json.gz"))], run="w0")
        s.load([str(corpus_path("v100_resnet50_workers4_2021.json.gz"))], run="w4")
        w0 = s.report("patterns", run="w0", only="dataloader").select("count, at_stake_us, source").fetchall()
        # six _SingleProcessDataLoaderIter.__next__ annotations (the trace has no Python frames,
        # no __iter__), 415.8 ms of loading on the loop thread, at the script's line 42
        assert w0 == [(6, 415791.0, "resnet50_profiler_api.py(42): <module>")]
        assert s.report("patterns", run="w4", only="dataloader").fetchall() == []
        assert s.report("patterns", run="w4", only="dataloader", list=True).select("runs").fetchall() == [(True,)]
