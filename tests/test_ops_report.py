"""`report ops`: torch's key_averages().table() from a trace file.

Parity: twenty CPU traces recorded with torch 2.13 (fixtures/golden/ops/record_ops.py:
record_shapes, with_stack (verbose), with_flops, profile_memory; a training loop
with a DataLoader and Adam, an op-heavy program (mm, bmm, addmm, conv2d, SDPA fp32
and bf16), nested record_function labels with and without with_stack, four Python
threads running ops under labels, backward() on a thread of its own, intra-op
parallelism with two threads, a TorchScript function run directly and forked; complex,
half, integer, bool, qint8 and float8 dtypes; checkpoint and a custom autograd.Function;
MultiheadAttention, LSTM, GRU, EmbeddingBag, masked and causal SDPA, einsum, grouped
and dilated convolutions; 0-size tensors, out= and in-place ops, a cat of 200 tensors
and a label with quotes and brackets; torch.compile with inductor: inference, reduce-overhead,
a compiled block in an eager training loop, a recompile in an active step; a DataLoader with two
worker processes; with_modules on a module tree; steps numbered from 5; record_function ranges
open across generator yields and coroutine awaits), and torch's
own key_averages() of the same profiling run, plain, group_by_input_shape=True and
group_by_stack_n=5. Every row torch has, duckprof has, with the same count, self and
total CPU time (within 1 ns per call: the trace holds times to the ns), CPU memory
and self CPU memory (exactly), FLOPs where torch counts them (exactly), and the
top-level flag; the only differing rows are explained in
test_tensorlist_shapes_are_finer_than_torchs and test_flops_of_calls_without_shapes_are_noted.
Device time (no GPU here) is compared with torch-tb-profiler's operator view on the
two V100 resnet50 traces (test_steps.py has its step view).
"""

from __future__ import annotations

import collections
import csv
import functools
import gzip
import io
import json

import pytest

from conftest import REPO, corpus_path, invoke, needs_corpus, slow_when

import duckprof

GOLD = REPO / "fixtures" / "golden" / "ops"
TRACES = ["train", "ops", "labels", "labels_nostack", "threads", "bwd_thread", "intraop", "jit_fork", "dtypes",
          "autograd", "nn", "edge", "compile", "compile_ro", "compile_train", "recompile", "workers", "modules", "late_steps",
          "gen_labels"]
GROUPINGS = {"plain": {}, "by_shape": {"group_by_input_shape": True}, "by_stack": {"group_by_stack": 5}}


@functools.cache  # read-only: each test reads its parts
def golden(name):
    with gzip.open(GOLD / f"{name}.key_averages.json.gz", "rt") as f:
        return json.load(f)


class _Loaded(dict):
    """name -> a session holding that trace, loaded when first asked for (an xdist
    worker loads only the traces of its tests)."""

    def __missing__(self, name):
        s = self[name] = duckprof.connect()
        s.load([str(GOLD / f"{name}.json.gz")], run=name)
        return s


@pytest.fixture(scope="module")
def sessions():
    out = _Loaded()
    yield out
    for s in out.values():
        s.close()


def ours(s, **opts):
    rel = s.report("ops", limit=0, **opts)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def torch_key(r, grouping):
    k = (r["key"], r["is_user_annotation"])
    if grouping == "by_shape":
        k += (json.dumps(r["input_shapes"], separators=(",", ":")) if r["input_shapes"] else None,)
    if grouping == "by_stack":
        k += ("; ".join(r["stack"]),)
    return k


def our_key(r, grouping):
    k = (r["name"], r["kind"] == "user_annotation")
    if grouping == "by_shape":
        k += (r["input_shapes"],)
    if grouping == "by_stack":
        k += (r["stack"],)
    return k


def tensorlist_as_torch(shapes):
    """torch's input_shapes write a TensorList argument as []; the trace's Input
    Dims hold the list of its shapes."""
    if shapes is None:
        return None
    return json.dumps([[] if a and isinstance(a[0], list) else a for a in json.loads(shapes)], separators=(",", ":"))


def unshaped_flops(name, key):
    """torch's FLOPs of the calls of `key` whose first tensor input the trace has no shape for
    (Input Dims [] and torch's input_shapes []: the symbolic-shape tensors of recompile's
    compile): torch counts them from the live tensors, duckprof cannot (the ops report's note)."""
    return _unshaped_flops(name).get(key, 0)


@functools.cache
def _unshaped_flops(name) -> dict:
    out = collections.Counter()
    for r in golden(name)["by_shape"]:
        if r["input_shapes"] and r["input_shapes"][0] == []:
            out[r["key"]] += r["flops"]
    return out


def assert_same_row(mine, theirs, where, flops_gap=0):
    n = theirs["count"]
    assert mine["count"] == n, where
    assert mine["self_cpu_us"] == pytest.approx(theirs["self_cpu_time_total_us"], abs=1e-3 * n + 1e-6), where
    assert mine["cpu_total_us"] == pytest.approx(theirs["cpu_time_total_us"], abs=1e-3 * n + 1e-6), where
    assert mine["cpu_mem_bytes"] == theirs["cpu_memory_usage"], where
    assert mine["self_cpu_mem_bytes"] == theirs["self_cpu_memory_usage"], where
    assert mine["device_mem_bytes"] == theirs["device_memory_usage"] == 0, where
    if theirs["flops"]:
        assert mine["flops"] == (theirs["flops"] - flops_gap or None), where


@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("name", TRACES)
def test_rows_equal_torchs_key_averages(sessions, name, grouping):
    theirs = {torch_key(r, grouping): r for r in golden(name)[grouping]}
    res = sessions[name].report_result("ops", limit=0, **GROUPINGS[grouping])
    listed = [dict(zip(res.relation.columns, r)) for r in res.relation.fetchall()]
    mine = {our_key(r, grouping): r for r in listed}
    if grouping == "by_shape":  # TensorList arguments (train, jit_fork, nn, edge): folded as torch writes them
        mine = fold_tensorlists(mine.values())
    assert set(mine) == set(theirs)
    for k, r in theirs.items():
        unshaped = grouping == "by_shape" and r["input_shapes"] and r["input_shapes"][0] == []
        gap = r["flops"] if unshaped else 0 if grouping == "by_shape" else unshaped_flops(name, r["key"])
        assert_same_row(mine[k], r, (name, grouping, k), gap)
    total = sum(r["self_cpu_time_total_us"] for r in golden(name)["plain"])
    assert total == pytest.approx(golden(name)["self_cpu_time_total_us"])
    if grouping == "plain":  # the percentages' base: the sum of self CPU times
        r = listed[0]
        assert r["self_cpu_pct"] == pytest.approx(100 * r["self_cpu_us"] / total, rel=1e-6)
        # only recompile has calls whose FLOPs torch counts and duckprof cannot (a note says so:
        # test_flops_of_calls_without_shapes_are_noted)
        assert any("FLOP estimate" in n for n in res.notes) == (name == "recompile"), res.notes


TENSORLIST_OPS = {"aten::cat", "aten::stack", "aten::broadcast_tensors"}


def fold_tensorlists(rows):
    """Our group_by_input_shape rows keyed as torch's: the rows whose shapes differ only
    inside a TensorList argument added up (test_tensorlist_shapes_are_finer_than_torchs)."""
    folded = {}
    for r in rows:
        k = (r["name"], r["kind"] == "user_annotation", tensorlist_as_torch(r["input_shapes"]))
        if k not in folded:
            folded[k] = dict(r)
            continue
        f = folded[k]
        for c in ("count", "self_cpu_us", "cpu_total_us", "cpu_mem_bytes", "self_cpu_mem_bytes", "device_mem_bytes"):
            f[c] += r[c]
        f["flops"] = None if f["flops"] is None and r["flops"] is None else (f["flops"] or 0) + (r["flops"] or 0)
    return folded


def test_flops_of_calls_without_shapes_are_noted(sessions):
    """recompile: the recompile in step 2 runs aten::mm twice on a tensor whose shape the trace
    does not have (Input Dims [[], [16, 16]]); torch counts 6,144 FLOPs for each (12x16 @ 16x16)
    from the live tensor. duckprof has no estimate for them: its aten::mm row is the other four
    calls' 4,096 + 3 x 6,144 = 22,528, and a note says which calls are left out (it said nothing)."""
    assert unshaped_flops("recompile", "aten::mm") == 2 * 6144
    res = sessions["recompile"].report_result("ops", limit=0)
    mm = [r for r in ours(sessions["recompile"]) if r["name"] == "aten::mm"]
    assert [(r["count"], r["flops"]) for r in mm] == [(6, 4096 + 3 * 6144)]
    assert ("recompile.json.gz: 2 call(s) of aten::mm (2) without a FLOP estimate, where other calls of the name "
            "have one (a tensor input without a recorded shape, Input Dims []: e.g. the symbolic-shape tensors of a "
            "torch.compile recompile): their FLOPs are not in the flops column; torch's key_averages() counts them "
            "from the live tensors") in res.notes


def test_tensorlist_shapes_are_finer_than_torchs(sessions):
    """The only rows that differ from torch's: an op with a TensorList argument
    (aten::cat / stack of the DataLoader's collate, aten::broadcast_tensors of
    mse_loss). torch's input_shapes write the list as [], so calls with lists of
    different shapes share one row; duckprof groups by the trace's Input Dims, which
    keep each list's shapes. Folded as torch writes them, duckprof's rows add up to
    torch's exactly."""
    theirs = {torch_key(r, "by_shape"): r for r in golden("train")["by_shape"]}
    folded = {}
    for r in ours(sessions["train"], group_by_input_shape=True):
        if r["name"] not in TENSORLIST_OPS:
            continue
        k = (r["name"], False, tensorlist_as_torch(r["input_shapes"]))
        f = folded.setdefault(k, {"count": 0, "self_cpu_us": 0.0, "cpu_total_us": 0.0, "cpu_mem_bytes": 0,
                                  "self_cpu_mem_bytes": 0, "device_mem_bytes": 0, "flops": None, "rows": 0})
        for c in ("count", "self_cpu_us", "cpu_total_us", "cpu_mem_bytes", "self_cpu_mem_bytes"):
            f[c] += r[c]
        f["rows"] += 1
    assert sorted(folded) == sorted(k for k in theirs if k[0] in TENSORLIST_OPS)
    assert sum(f["rows"] for f in folded.values()) > len(folded)  # finer: more rows than torch
    for k, f in folded.items():
        assert_same_row(f, theirs[k], k)


@pytest.mark.parametrize("name", TRACES)
def test_top_level_only_as_torch(sessions, name):
    """torch shows a key with top_level_events_only when its first call has no parent."""
    want = {torch_key(r, "plain") for r in golden(name)["plain"] if r["top_level"]}
    got = {our_key(r, "plain") for r in ours(sessions[name], top_level_only=True)}
    assert got == want


def test_duplicate_nested_labels_are_merged_as_torch(sessions):
    """labels_nostack: outer > [inner, inner, outer > outer] per step. The innermost
    'outer' is its parent's only child of the same name: torch merges it (3 steps x 2
    'outer' rows, not 3 x 3), and its time is its parent's self time."""
    r = {x["name"]: x for x in ours(sessions["labels_nostack"])}
    assert r["outer"]["count"] == 6 and r["inner"]["count"] == 6
    assert r["ProfilerStep*"]["count"] == 3
    with duckprof.connect() as s:
        s.load([str(GOLD / "labels_nostack.json.gz")], run="x")
        raw = s.sql("SELECT count(*) FROM user_annotations WHERE name = 'outer'").fetchall()[0][0]
    assert raw == 9


def test_sort_limit_and_negative_self_note(sessions):
    s = sessions["train"]
    res = s.report_result("ops", sort="count", limit=3)
    rows = res.relation.fetchall()
    counts = [r[res.relation.columns.index("count")] for r in rows]
    assert len(rows) == 3 and counts == sorted(counts, reverse=True)
    assert counts[0] == max(r["count"] for r in ours(s))
    assert [r for r in ours(s) if r["self_cpu_us"] < 0]  # Python frames that ProfilerStep#N starts in and outlives
    neg = s.sql("SELECT count(*) FROM python_functions WHERE self_ns < 0").fetchall()[0][0]
    assert neg > 0 and f"train.json.gz: {neg} call(s) with negative self CPU time" in res.notes[0]
    names = [r["name"] for r in ours(s, sort="name")]
    assert names == sorted(names)


@pytest.mark.slow  # a load of its own
def test_no_stack_note_and_no_shapes_note(tmp_path):
    cpu = REPO / "fixtures" / "cpu_small_model.json"
    with duckprof.connect() as s:
        s.load([str(cpu)], run="r")
        res = s.report_result("ops", group_by_stack=3)
        assert any("no Python stacks" in n for n in res.notes)
        assert {r[res.relation.columns.index("stack")] for r in res.relation.fetchall()} == {""}



def test_no_stack_note_only_without_frames_or_call_stack_arg(tmp_path):
    """The note names the traces with neither Python frames nor a Call stack arg: a
    trace whose operator carries one (verbose with_stack, no frames) gets none, and
    neither does one with frames (the ops' args are then not read for it)."""
    def op(**a):
        return {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1000, "dur": 10, "args": a}
    frame = {"ph": "X", "cat": "python_function", "name": "train.py(1): main", "pid": 1, "tid": 1, "ts": 990,
             "dur": 30, "args": {"Python id": 1}}
    files = []
    for stem, events in [("bare", [op()]), ("argstack", [op(**{"Call stack": "train.py(1): main;"})]),
                         ("frames", [frame, op()])]:
        files.append(tmp_path / f"{stem}.json")
        files[-1].write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    with duckprof.connect() as s:
        s.load([str(f) for f in files], run="r")
        notes = [n for n in s.report_result("ops", group_by_stack=2).notes if "no Python stacks" in n]
        assert notes == ["bare.json: no Python stacks (with_stack=False): one row per name"]
        stacks = {r["stack"] for r in ours(s, group_by_stack=2) if r["name"] == "aten::mm"}
        assert stacks == {"", "train.py(1): main"}

# -- device time, against torch-tb-profiler's operator view --------------------------------

@needs_corpus
@pytest.mark.slow  # the quick run has test_rows_equal_torchs_key_averages
@pytest.mark.parametrize("stem", ["v100_resnet50_workers0_2021", "v100_resnet50_workers4_2021"])
def test_operator_view_equals_tensorboards(stem):
    """torch-tb-profiler 0.4.3's operator view (fixtures/golden/tb_profiler/): for every
    operator it lists, the same calls, host total and self time, device total and self
    time (kernels, memcpys, memsets its launches started, and its children's), to the
    µs. The plugin's view leaves out the annotations ProfilerStep#N, Optimizer.step#...,
    Optimizer.zero_grad#... and enumerate(DataLoader)#... that torch (and duckprof)
    list as rows."""
    theirs = {r["name"]: r for r in json.loads((REPO / "fixtures" / "golden" / "tb_profiler" / f"{stem}.json")
                                               .read_text())["operators"]}
    with duckprof.connect() as s:
        s.load([str(corpus_path(f"{stem}.json.gz"))], run="r")
        mine = {r["name"]: r for r in ours(s) if r["kind"] in ("cpu_op", "user_annotation")}
    extra = set(mine) - set(theirs)
    assert set(theirs) <= set(mine)
    assert {n.split("#")[0] for n in extra} == {"ProfilerStep*", "Optimizer.step", "Optimizer.zero_grad",
                                                "enumerate(DataLoader)"}
    for name, t in theirs.items():
        m = mine[name]
        assert (m["count"], m["cpu_total_us"], m["self_cpu_us"], m["device_total_us"], m["self_device_us"]) == \
            (t["calls"], t["host_duration_us"], t["self_host_duration_us"], t["device_duration_us"],
             t["self_device_duration_us"]), name
    assert sum(t["self_device_duration_us"] for t in theirs.values()) > 0


# -- torch.compile graph nodes -----------------------------------------------------------------

def graph_trace(tmp_path):
    """Thread 1 (µs): '## compiled_fn_0.py ##' [0,100] holding '## 0 ##' [5,30]
    (aten::mm [6,20] with aten::empty [7,8]; mm launches K1, 10 µs), '## 1 ##' [35,60]
    (aten::relu [40,50], launches K2, 4 µs) and aten::add [70,80] in no node (K3, 6
    µs); aten::other [110,120] outside the file; each launch call [1 µs] inside its op.
    By hand: node 0: 2 ops, self: mm 14 - empty 1 - its launch 1 = 12, + empty 1 = 13;
    CPU total of its outermost op (mm) 14; 1 kernel, 10 µs = 50% of 20; node 1: relu
    self 10 - 1 = 9, total 10, 4 µs 20%; no node: add 9 / 10, 6 µs 30%."""
    def x(cat, name, ts, end, tid=1, pid=1, **a):
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": 1000 + ts, "dur": end - ts,
                "args": a}
    ev = [x("cpu_op", "## compiled_fn_0.py ##", 0, 100), x("cpu_op", "## 0 ##", 5, 30),
          x("cpu_op", "aten::mm", 6, 20, **{"External id": 1}), x("cpu_op", "aten::empty", 7, 8),
          x("cpu_op", "## 1 ##", 35, 60), x("cpu_op", "aten::relu", 40, 50, **{"External id": 2}),
          x("cpu_op", "aten::add", 70, 80, **{"External id": 3}), x("cpu_op", "aten::other", 110, 120)]
    for i, (rs, ext, ks, ke) in enumerate([(9, 1, 20, 30), (41, 2, 50, 54), (71, 3, 80, 86)]):
        ev.append(x("cuda_runtime", "cudaLaunchKernel", rs, rs + 1, correlation=i + 1, **{"External id": ext}))
        ev.append(x("kernel", f"K{i + 1}", ks, ke, pid=0, tid=7, device=0, stream=7, correlation=i + 1,
                    **{"External id": ext}))
    p = tmp_path / "graph.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return p


def test_by_graph_node_by_hand(tmp_path):
    with duckprof.connect() as s:
        s.load([str(graph_trace(tmp_path))], run="r")
        rel = s.report("ops", by_graph_node=True)
        got = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
        plain = {r["name"]: r for r in ours(s)}
    cols = ["graph_file", "graph_node", "ops", "top_ops", "self_cpu_us", "cpu_total_us", "kernels", "device_us",
            "device_pct"]
    assert [tuple(r[c] for c in cols) for r in got] == [
        ("compiled_fn_0.py", 0, 2, "aten::mm", 13.0, 14.0, 1, 10.0, 50.0),
        ("compiled_fn_0.py", None, 1, "aten::add", 9.0, 10.0, 1, 6.0, 30.0),
        ("compiled_fn_0.py", 1, 1, "aten::relu", 9.0, 10.0, 1, 4.0, 20.0),
    ]
    # the plain table: device time rolls up the op tree (the file marker holds all three kernels)
    assert plain["## compiled_fn_0.py ##"]["device_total_us"] == 20.0
    assert plain["aten::mm"]["self_device_us"] == 10.0 and plain["## 0 ##"]["device_total_us"] == 10.0
    assert plain["K1"]["self_device_pct"] == 50.0


def test_by_graph_node_note_without_markers(sessions):
    res = sessions["ops"].report_result("ops", by_graph_node=True)
    assert res.relation.fetchall() == []
    assert res.notes == ["ops.json.gz: no torch.compile graph markers ('## <file>.py ##' cpu_ops) in this trace; "
                         "torch.fx writes them with torch.fx.experimental._config.enrich_profiler_metadata = True, "
                         "in the FX code of backends that run it (e.g. aot_eager)"]


def test_by_graph_node_note_on_an_inductor_trace():
    """torch.compile with Inductor (fixtures/sweep13/compile, torch 2.13 on CPU):
    no node markers, and the note says why and what the trace has instead (two
    graphs, forward and backward, called once in each of the three steps); it
    said only that there were no markers."""
    with duckprof.connect() as s:
        s.load([str(REPO / "fixtures" / "sweep13" / "compile" / "compile_train.json.gz")])
        res = s.report_result("ops", by_graph_node=True)
        assert res.relation.fetchall() == []
        assert res.notes == [
            "compile_train.json.gz: no torch.compile graph markers ('## <file>.py ##' cpu_ops) in this trace: its "
            "compiled graphs ran as Inductor output code, which has none (2 graph(s), 6 call(s): the "
            "'## Call CompiledFxGraph <key> ##' rows of report ops); torch.fx writes them with "
            "torch.fx.experimental._config.enrich_profiler_metadata = True, in the FX code of backends that run it "
            "(e.g. aot_eager)"]


@pytest.mark.slow  # four CLI runs; the quick run has test_sort_limit_and_negative_self_note
def test_cli_formats(cli_app, tmp_path):
    trace = GOLD / "labels_nostack.json.gz"
    res = invoke(cli_app, "report", "ops", trace, "--format", "csv", "--limit", "0")
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert res.exit_code == 0 and len(rows) == 11
    selfs = [float(r["self_cpu_us"]) for r in rows]
    assert selfs == sorted(selfs, reverse=True)  # the default order: self CPU time
    res = invoke(cli_app, "report", "ops", trace, "--format", "json", "--group-by-input-shape")
    doc = json.loads(res.stdout)
    assert {"input_shapes", "self_cpu_us", "count"} <= set(doc[0])


# -- --group-by-stack from Python frames (with_stack traces without a Call stack arg) ----------

def frames_trace(tmp_path):
    """One thread (µs): Python frames main [0,500] (Python id 1) > forward [5,50] (2,
    parent 1) > aten::linear [10,40] (Sequence number 7, Fwd thread id 0) > aten::addmm
    [12,30] > cudaLaunchKernel [14,16]; aten::relu [60,70] in main only; a frame torch
    filters out, autograd/__init__.py backward [75,400] (3, parent 1) holding
    aten::ones_like [80,85] and the engine's calls (on the calling thread, as on a CPU):
    evaluate_function: AddmmBackward0 [200,300] > AddmmBackward0 [201,290] (a backward
    function: Sequence number 7, Fwd thread id 1) > aten::mm [210,250];
    torch::autograd::AccumulateGrad [310,320] (no forward thread) > aten::add_ [312,318]."""
    def x(cat, name, ts, end, **a):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": 1000 + ts, "dur": end - ts,
                "args": a}
    def py(name, ts, end, pyid, parent=None):
        return x("python_function", name, ts, end, **{"Python id": pyid, "Python thread": 0},
                 **({"Python parent id": parent} if parent else {}))
    ev = [py("train.py(10): main", 0, 500, 1), py("model.py(5): forward", 5, 50, 2, 1),
          x("cpu_op", "aten::linear", 10, 40, **{"Sequence number": 7, "Fwd thread id": 0}),
          x("cpu_op", "aten::addmm", 12, 30), x("cuda_runtime", "cudaLaunchKernel", 14, 16, correlation=1),
          x("cpu_op", "aten::relu", 60, 70),
          py("torch/autograd/__init__.py(200): backward", 75, 400, 3, 1), x("cpu_op", "aten::ones_like", 80, 85),
          x("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 200, 300),
          x("cpu_op", "AddmmBackward0", 201, 290, **{"Sequence number": 7, "Fwd thread id": 1}),
          x("cpu_op", "aten::mm", 210, 250),
          x("cpu_op", "torch::autograd::AccumulateGrad", 310, 320), x("cpu_op", "aten::add_", 312, 318)]
    p = tmp_path / "frames.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return p


def test_group_by_stack_from_python_frames_by_hand(tmp_path):
    """An event's stack is that of its innermost Python frame in the stored nesting, a
    frame's that of its parent frame (torch: the frames above it), innermost first, the
    frames torch's _filter_stack_entry drops left out; inside a backward function, the
    stack of the forward operator with its sequence number (none without a forward
    thread), as torch's EventList._set_backward_stacktraces."""
    main, fwd = "train.py(10): main", "model.py(5): forward"
    with duckprof.connect() as s:
        s.load([str(frames_trace(tmp_path))], run="r")
        for n, want in [(5, {
                "train.py(10): main": "", "model.py(5): forward": main,
                "torch/autograd/__init__.py(200): backward": main,
                "aten::linear": f"{fwd}; {main}", "aten::addmm": f"{fwd}; {main}",
                "cudaLaunchKernel": f"{fwd}; {main}", "aten::relu": main, "aten::ones_like": main,
                "autograd::engine::evaluate_function: AddmmBackward0": main,
                "AddmmBackward0": f"{fwd}; {main}", "aten::mm": f"{fwd}; {main}",
                "torch::autograd::AccumulateGrad": "", "aten::add_": ""}),
                (1, {"aten::linear": fwd, "aten::mm": fwd, "aten::ones_like": main, "model.py(5): forward": main})]:
            got = {r["name"]: r["stack"] for r in ours(s, group_by_stack=n) if r["kind"] != "kernel"}
            assert {k: got[k] for k in want} == want, n
            assert len(got) == 13 and all(r["count"] == 1 for r in ours(s, group_by_stack=n))


def test_group_by_stack_backward_functions_per_thread(tmp_path):
    """A call takes a backward function's stack only from a function of its own thread: on
    thread 2, aten::zeros [100,110] starts before that thread's first backward function,
    while thread 1's MulBackward0 [300,320] (Sequence number 8, forward: aten::mul) starts
    earlier in the ASOF join's order (thread, then start) and would span it; it keeps its
    own stack (none: thread 2 has no Python frames). aten::copy_ [295,298] ends after thread
    2's AddmmBackward0 [201,290]: not inside it. aten::relu [330,340] on thread 1 after
    MulBackward0: its own frame's."""
    def x(tid, cat, name, ts, end, **a):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": 1000 + ts, "dur": end - ts,
                "args": a}
    def py(name, ts, end, pyid, parent=None):
        return x(1, "python_function", name, ts, end, **{"Python id": pyid, "Python thread": 0},
                 **({"Python parent id": parent} if parent else {}))
    ev = [py("train.py(10): main", 0, 500, 1), py("model.py(5): forward", 5, 50, 2, 1),
          x(1, "cpu_op", "aten::linear", 10, 40, **{"Sequence number": 7, "Fwd thread id": 0}),
          x(1, "cpu_op", "aten::mul", 42, 48, **{"Sequence number": 8, "Fwd thread id": 0}),
          x(1, "cpu_op", "MulBackward0", 300, 320, **{"Sequence number": 8, "Fwd thread id": 1}),
          x(1, "cpu_op", "aten::add_", 302, 318), x(1, "cpu_op", "aten::relu", 330, 340),
          x(2, "cpu_op", "aten::zeros", 100, 110),
          x(2, "cpu_op", "AddmmBackward0", 201, 290, **{"Sequence number": 7, "Fwd thread id": 1}),
          x(2, "cpu_op", "aten::mm", 210, 250), x(2, "cpu_op", "aten::copy_", 295, 298)]
    p = tmp_path / "threads.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    main, fwd = "train.py(10): main", "model.py(5): forward"
    with duckprof.connect() as s:
        s.load([str(p)], run="r")
        got = {r["name"]: r["stack"] for r in ours(s, group_by_stack=5)}
    assert got == {"train.py(10): main": "", "model.py(5): forward": main,
                   "aten::linear": f"{fwd}; {main}", "aten::mul": f"{fwd}; {main}",
                   "MulBackward0": f"{fwd}; {main}", "aten::add_": f"{fwd}; {main}", "aten::relu": main,
                   "aten::zeros": "", "AddmmBackward0": f"{fwd}; {main}", "aten::mm": f"{fwd}; {main}",
                   "aten::copy_": ""}


def test_add_and_mul_flops_as_torchs_profiler(tmp_path):
    """torch's profiler (with_flops) counts aten::add and aten::mul as the elements of
    their first input, whatever the other's shape (torch 2.13: [1,8] + [16,8] -> 8,
    0-dim * [16,8] -> 1, [16,8] + 3 -> 128); in-place add_ and mul_, sub and div get
    none, and so does a call without shapes or with no input. flop_counter, which
    duckprof's estimates follow elsewhere, has no formula."""
    calls = [("aten::add", [[1, 8], [16, 8], []]), ("aten::add", [[16, 8], [], []]), ("aten::mul", [[], [16, 8]]),
             ("aten::add_", [[16, 8], [16, 8], []]), ("aten::sub", [[16, 8], [16, 8], []]), ("aten::mul", None),
             ("aten::add", [])]
    ev = [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": 1000 + 10 * i, "dur": 5,
           "args": {"Input Dims": d} if d is not None else {}} for i, (n, d) in enumerate(calls)]
    p = tmp_path / "addmul.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    with duckprof.connect() as s:
        s.load([str(p)], run="r")
        by_shape = {(r["name"], r["input_shapes"]): r["flops"] for r in ours(s, group_by_input_shape=True)}
        plain = {r["name"]: r["flops"] for r in ours(s)}
    assert by_shape == {("aten::add", "[[1,8],[16,8],[]]"): 8, ("aten::add", "[[16,8],[],[]]"): 128,
                        ("aten::mul", "[[],[16,8]]"): 1, ("aten::mul", None): None, ("aten::add", "[]"): None,
                        ("aten::add_", "[[16,8],[16,8],[]]"): None, ("aten::sub", "[[16,8],[16,8],[]]"): None}
    assert plain == {"aten::add": 136, "aten::mul": 1, "aten::add_": None, "aten::sub": None}


def test_tensor_cores_by_hand(tmp_path):
    """ops --tensor-cores (TensorBoard's operator view): my_block [0,120] holds aten::linear [10,110]
    (a Tensor Cores operator by name), which holds aten::t [12,18] (no device time), aten::addmm
    [20,60] (launches a Tensor Cores kernel, ampere_h1688gemm, 40 µs, and an elementwise one,
    10 µs) and aten::relu [70,80] (an elementwise kernel, 10 µs). addmm: self = total = 40/50 = 80%,
    eligible (name); linear: no self device time (NULL), total 40/60; my_block: eligible (it holds
    linear), total 40/60; relu: not eligible, 0%; t: not eligible, no device time (NULL)."""
    def op(name, ts, dur):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}

    def launch(ts, corr, kname, kts, kdur):
        return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                 "dur": 3, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7, "ts": kts, "dur": kdur,
                 "args": {"correlation": corr, "device": 0, "stream": 7}}]
    events = [op("my_block", 0, 120), op("aten::linear", 10, 100), op("aten::t", 12, 6), op("aten::addmm", 20, 40),
              *launch(25, 1, "ampere_h1688gemm_128x128_ldg8_nn", 100, 40),
              *launch(40, 2, "void at::native::elementwise_kernel<128, 4>", 150, 10),
              op("aten::relu", 70, 10), *launch(72, 3, "void at::native::elementwise_kernel<128, 2>", 170, 10)]
    path = tmp_path / "tc_ops.json"
    path.write_text(json.dumps({"traceEvents": events}))
    with duckprof.connect() as s:
        s.load([str(path)])
        rel = s.report("ops", tensor_cores=True, limit=0)
        cols = ["tc_eligible", "tc_self_pct", "tc_total_pct"]
        got = {r["name"]: tuple(r[c] for c in cols) for r in (dict(zip(rel.columns, x)) for x in rel.fetchall())
               if r["name"] in ("my_block", "aten::linear", "aten::t", "aten::addmm", "aten::relu")}
    assert got == {"my_block": (True, None, pytest.approx(100 * 40 / 60)),
                   "aten::linear": (True, None, pytest.approx(100 * 40 / 60)),
                   "aten::addmm": (True, pytest.approx(80.0), pytest.approx(80.0)),
                   "aten::relu": (False, 0.0, 0.0), "aten::t": (False, None, None)}
