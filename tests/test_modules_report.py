"""`report modules`: the nn.Module hierarchy with calls, operators, host and device time,
on a tiny handmade trace, by hand (µs; one thread; the plugin's rules, module_op.py):

    ProfilerStep#1                       [0, 1000]  user_annotation
      train.py(10): step                 [10, 900]  frame (Python id 1)
        nn.Module: Net_0                 [20, 800]  module (2, parent 1)
          net.py(5): forward             [25, 790]  frame (3, parent 2)
            nn.Module: Linear_0          [30, 230]  module (4, parent 3)
              functional.py(1): linear   [35, 220]  frame (5, parent 4)
                aten::linear             [40, 210]
                  aten::addmm            [50, 200]
                    cudaLaunchKernel     [60, 80]   -> kernel 50 µs
            aten::relu                   [240, 300]
              cudaLaunchKernel           [250, 260] -> kernel 10 µs
            nn.Module: Linear_1          [400, 600] module (6, parent 3)
              aten::linear               [410, 590]
                cudaLaunchKernel         [420, 440] -> kernel 30 µs
            cudaMemcpyAsync              [700, 710] -> memcpy 20 µs
            my_range                     [750, 780] user_annotation
              aten::zeros                [755, 770]
                cudaLaunchKernel         [760, 765] -> kernel 5 µs

Linear_0: 1 operator (aten::linear: aten::addmm is inside it), host 200, self 200 - 170 = 30,
device 50, self 50. Linear_1: 1 operator, host 200, self 200 - 180 = 20, device 30, self 30.
Net_0: its direct children in the plugin's tree (through the frame net.py(5)) are Linear_0,
aten::relu, Linear_1, the cudaMemcpyAsync call and my_range; 1 operator (aten::relu: aten::zeros
is my_range's), host 780, self 780 - (200 + 60 + 200 + 10 + 30) = 280, device 50 + 10 + 30 + 20
+ 5 = 115; self device: what its direct operators and runtime calls launched, aten::relu's 10 +
the memcpy's 20 = 30 (the plugin's get_chilren_self_device_time counts operator children only:
not Linear_0's and Linear_1's, nor my_range's 5).
"""

from __future__ import annotations

import json

import pytest

from conftest import REPO, as_dicts, loaded


def _x(cat, name, ts, end, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": end - ts, "args": args}


def _launch(name, ts, end, corr):
    return _x("cuda_runtime", name, ts, end, correlation=corr)


def _device(cat, name, ts, end, corr):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": end - ts,
            "args": {"device": 0, "stream": 7, "correlation": corr}}


def _frame(name, ts, end, pyid, parent=None, module_id=None):
    args = {"Python id": pyid, "Python thread": 0}
    if parent is not None:
        args["Python parent id"] = parent
    if module_id is not None:
        args["Python module id"] = module_id
    return _x("python_function", name, ts, end, **args)


EVENTS = [
    _x("user_annotation", "ProfilerStep#1", 0, 1000),
    _frame("train.py(10): step", 10, 900, 1),
    _frame("nn.Module: Net_0", 20, 800, 2, 1, 0),
    _frame("net.py(5): forward", 25, 790, 3, 2),
    _frame("nn.Module: Linear_0", 30, 230, 4, 3, 0),
    _frame("functional.py(1): linear", 35, 220, 5, 4),
    _x("cpu_op", "aten::linear", 40, 210),
    _x("cpu_op", "aten::addmm", 50, 200),
    _launch("cudaLaunchKernel", 60, 80, 1),
    _device("kernel", "gemm", 100, 150, 1),
    _x("cpu_op", "aten::relu", 240, 300),
    _launch("cudaLaunchKernel", 250, 260, 2),
    _device("kernel", "relu_kernel", 300, 310, 2),
    _frame("nn.Module: Linear_1", 400, 600, 6, 3, 1),
    _x("cpu_op", "aten::linear", 410, 590),
    _launch("cudaLaunchKernel", 420, 440, 3),
    _device("kernel", "gemm", 500, 530, 3),
    _launch("cudaMemcpyAsync", 700, 710, 4),
    _device("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 720, 740, 4),
    _x("user_annotation", "my_range", 750, 780),
    _x("cpu_op", "aten::zeros", 755, 770),
    _launch("cudaLaunchKernel", 760, 765, 5),
    _device("kernel", "fill_kernel", 800, 805, 5),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("modules") / "modules.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS}))
    with loaded(path) as s:
        yield s


COLS = ["module", "level", "path", "calls", "operators", "host_us", "self_host_us", "device_us", "self_device_us"]


def test_tree_by_hand(tiny):
    got = [tuple(r[c] for c in COLS) for r in as_dicts(tiny.report("modules"))]
    assert got == [
        ("Net_0", 1, "Net_0", 1, 1, 780, 280, 115, 30),
        ("· Linear_0", 2, "Net_0/Linear_0", 1, 1, 200, 30, 50, 50),
        ("· Linear_1", 2, "Net_0/Linear_1", 1, 1, 200, 20, 30, 30),
    ]


def test_depth_keeps_the_upper_levels(tiny):
    got = [tuple(r[c] for c in COLS) for r in as_dicts(tiny.report("modules", depth=1))]
    assert got == [("Net_0", 1, "Net_0", 1, 1, 780, 280, 115, 30)]


def test_a_trace_without_modules_says_so():
    with loaded(REPO / "fixtures" / "tb_plugin" / "all_categories.json") as s:
        res = s.report_result("modules")
        assert res.relation.fetchall() == []
    assert res.notes + res.instead == [
        "all_categories.json: no nn.Module events in this trace (record with with_stack=True or with_modules=True, "
        "or Lightning's PyTorchProfiler)"]


def test_with_modules_trace_of_torch_with_a_module_called_twice():
    """fixtures/golden/ops/modules.json.gz (torch 2.13, with_modules=True, record_ops.py): _Tree_0
    runs body (a Sequential of two _Blocks), then the same _Block (shared) twice, then a Linear
    head, in three steps. Every module is a row under its parent with its own path; the shared
    block (_Block_2) and its children count 6 calls; host time is the sum of the module's
    nn.Module events (from the trace's own durations), self host time that less its direct
    children's (child modules and outermost operators), operators the aten::add of each _Block call (3, and 6 for the shared one)."""
    import gzip
    events = json.load(gzip.open(REPO / "fixtures" / "golden" / "ops" / "modules.json.gz"))["traceEvents"]
    dur, calls = {}, {}
    for e in events:
        if e.get("name", "").startswith("nn.Module: "):
            m = e["name"][len("nn.Module: "):]
            dur[m] = dur.get(m, 0.0) + e["dur"]
            calls[m] = calls.get(m, 0) + 1
    # self host time: the module's events less their direct children's (modules and the outermost
    # operators in them, through Python frames), the plugin's rule; nesting from the times
    spans = [e for e in events if e.get("ph") == "X" and (e.get("cat") == "cpu_op" or
                                                           e.get("name", "").startswith("nn.Module: "))]
    direct = dict.fromkeys(dur, 0.0)
    for e in spans:
        outer = [o for o in spans if o is not e and o["tid"] == e["tid"] and o["ts"] <= e["ts"]
                 and e["ts"] + e["dur"] <= o["ts"] + o["dur"]]
        if outer:
            p = min(outer, key=lambda o: o["dur"])
            if p["name"].startswith("nn.Module: "):
                direct[p["name"][len("nn.Module: "):]] += e["dur"]
    with loaded(REPO / "fixtures" / "golden" / "ops" / "modules.json.gz") as s:
        rows = {r["path"]: r for r in as_dicts(s.report("modules"))}
    children = {"_Tree_0": ["Linear_3", "Sequential_0", "_Block_2"], "Sequential_0": ["_Block_0", "_Block_1"],
                "_Block_0": ["GELU_0", "Linear_0"], "_Block_1": ["GELU_1", "Linear_1"],
                "_Block_2": ["GELU_2", "Linear_2"]}
    paths = {"_Tree_0": "_Tree_0"}
    for parent in ["_Tree_0", "Sequential_0", "_Block_0", "_Block_1", "_Block_2"]:
        for c in children[parent]:
            paths[c] = paths[parent] + "/" + c
    assert set(rows) == set(paths.values())
    assert calls["_Block_2"] == 6 and calls["_Block_0"] == 3
    for m, p in paths.items():
        r = rows[p]
        assert r["calls"] == calls[m], m
        assert r["host_us"] == pytest.approx(dur[m], abs=1e-3), m
        assert r["self_host_us"] == pytest.approx(dur[m] - direct[m], abs=1e-3), m
        assert r["operators"] == {"_Block_0": 3, "_Block_1": 3, "_Block_2": 6, "_Tree_0": 0,
                                  "Sequential_0": 0}.get(m, calls[m]), m


# PyTorch Lightning's PyTorchProfiler records no nn.Module events: a range
# '[pl][module]<class>: <name>' around every submodule's forward (user_annotation)
def _pl(cls, name, ts, end):
    return _x("user_annotation", f"[pl][module]{cls}: {name}", ts, end)


LIGHTNING = [e for e in EVENTS if e["cat"] != "python_function"] + [
    _pl("__main__.Net", "net", 20, 800),
    _pl("torch.nn.modules.linear.Linear", "net.fc1", 30, 230),
    _pl("torch.nn.modules.linear.Linear", "net.fc2", 400, 600),
]


def test_lightning_module_ranges_by_hand(tmp_path):
    """The tiny tree above with Lightning's ranges in place of the nn.Module frames: the same
    figures (the plugin's rules; no Python frames to look through), named '<name> (<class>)'."""
    path = tmp_path / "lightning.json"
    path.write_text(json.dumps({"schemaVersion": 1, "Framework": "pytorch-lightning", "traceEvents": LIGHTNING}))
    with loaded(path) as s:
        got = [tuple(r[c] for c in COLS) for r in as_dicts(s.report("modules"))]
        assert [r[1] for r in s.report("modules", depth=1).fetchall()] == [None]  # no module id
    assert got == [
        ("net (Net)", 1, "net", 1, 1, 780, 280, 115, 30),
        ("· net.fc1 (Linear)", 2, "net/net.fc1", 1, 1, 200, 30, 50, 50),
        ("· net.fc2 (Linear)", 2, "net/net.fc2", 1, 1, 200, 20, 30, 30),
    ]


def test_nn_module_events_win_over_lightning_ranges(tmp_path):
    """A trace with both (with_stack=True under Lightning's profiler): the nn.Module events are
    the modules, and a Lightning range is looked through like a Python frame. Lightning opens it
    in a forward pre-hook, inside the module's call (nn.Module: Linear_0, _call_impl, inner, then
    the range, then linear.py's forward and aten::linear, in a recorded trace): its operators
    are the module's own, so the figures are the tree's without the range. Before: the range
    was a direct child of Linear_1 holding its aten::linear: Linear_1 had 0 operators, self
    host 200 - 196 = 4, self device 0 (on a with_stack Lightning trace: every module 0
    operators)."""
    path = tmp_path / "both.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS + [
        _pl("torch.nn.modules.linear.Linear", "net.fc2", 402, 598)]}))
    with loaded(path) as s:
        got = [tuple(r[c] for c in COLS) for r in as_dicts(s.report("modules"))]
    assert got == [
        ("Net_0", 1, "Net_0", 1, 1, 780, 280, 115, 30),
        ("· Linear_0", 2, "Net_0/Linear_0", 1, 1, 200, 30, 50, 50),
        ("· Linear_1", 2, "Net_0/Linear_1", 1, 1, 200, 20, 30, 30),
    ]


def test_lightning_trace_recorded_by_lightning():
    """fixtures/lightning/lightning_fit.json.gz: Lightning 2.6.6's PyTorchProfiler on torch 2.13
    (record_lightning.py: encoder = Sequential(Block(fc, act), Block(fc, act)), head; 3 active
    steps). Against the trace read with json: every module once per step, its host time the sum
    of its ranges, the tree of Lightning's dotted names (the parent of 'encoder.0.fc' is
    'encoder.0', as the plugin builds it), operators the cpu_ops directly inside each range."""
    import gzip
    trace = REPO / "fixtures" / "lightning" / "lightning_fit.json.gz"
    events = json.load(gzip.open(trace))["traceEvents"]
    ranges = [e for e in events if e.get("name", "").startswith("[pl][module]")]
    name = {id(e): e["name"].split(": ", 1)[1] for e in ranges}
    dur, calls = {}, {}
    for e in ranges:
        dur[name[id(e)]] = dur.get(name[id(e)], 0.0) + e["dur"]
        calls[name[id(e)]] = calls.get(name[id(e)], 0) + 1
    spans = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"] + ranges
    operators = dict.fromkeys(dur, 0)
    for e in spans:
        outer = [o for o in spans if o is not e and o["tid"] == e["tid"] and o["ts"] <= e["ts"]
                 and e["ts"] + e["dur"] <= o["ts"] + o["dur"]]
        if outer and e.get("cat") == "cpu_op":
            p = min(outer, key=lambda o: o["dur"])
            if id(p) in name:
                operators[name[id(p)]] += 1
    with loaded(trace) as s:
        res = s.report_result("modules")
        rows = {r["path"]: r for r in as_dicts(res.relation)}
    assert res.notes == [] and res.instead == []
    def path_of(n):  # the plugin's tree: the parent of a name is the name less its last '.part', if recorded
        up = n.rsplit(".", 1)[0]
        return path_of(up) + "/" + n if "." in n and up in dur else n
    path = {n: path_of(n) for n in dur}
    assert sorted(dur) == ["encoder", "encoder.0", "encoder.0.act", "encoder.0.fc", "encoder.1", "encoder.1.act",
                           "encoder.1.fc", "head"]
    assert set(rows) == set(path.values())
    assert rows["encoder/encoder.0/encoder.0.fc"]["module"] == "· · encoder.0.fc (Linear)"
    for n, p in path.items():
        r = rows[p]
        assert (r["calls"], r["operators"]) == (calls[n], operators[n]) and calls[n] == 3, n
        assert r["host_us"] == pytest.approx(dur[n], abs=1e-3), n
    assert [operators[n] for n in ("encoder", "encoder.0", "encoder.0.fc", "head")] == [0, 0, 3, 3]
