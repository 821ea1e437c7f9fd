"""Tests for duckprof.synth: the synthetic Kineto trace generator.

They parse the generated JSON with the standard library (timestamps as exact
Decimals) and check the structural invariants the loader and the reports
rely on.
"""

import collections
import decimal
import gzip
import json

import pytest

from duckprof import synth

CPU_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


def _load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.loads(f.read(), parse_float=decimal.Decimal)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    path = d / "small.json"
    summary = synth.generate(path, events=3000, seed=0)
    return path, summary, _load(path)


def _ns(x):
    return int(decimal.Decimal(x) * 1000)


def test_top_level_format(small):
    _path, summary, doc = small
    keys = list(doc)
    assert keys.index("traceEvents") < len(keys) - 1, "small keys must follow traceEvents"
    assert doc["schemaVersion"] == 1
    dev = doc["deviceProperties"][0]
    assert dev["name"] == "NVIDIA A100-SXM4-80GB" and dev["numSms"] == 108
    for k in ("totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock", "maxThreadsPerMultiprocessor",
              "regsPerBlock", "regsPerMultiprocessor", "warpSize", "sharedMemPerBlock", "sharedMemPerMultiprocessor",
              "sharedMemPerBlockOptin"):
        assert k in dev
    assert doc["distributedInfo"]["backend"] == "nccl"
    assert doc["distributedInfo"]["rank"] == 0
    assert isinstance(doc["baseTimeNanoseconds"], int)
    assert doc["displayTimeUnit"] == "ms"
    ev = doc["traceEvents"]
    assert summary["events"] == len(ev)
    assert ev[-1]["name"] == "Record Window End" and ev[-1]["pid"] == "" and ev[-1]["tid"] == ""
    assert any(e.get("cat") == "Trace" and e["pid"] == "Spans" for e in ev)
    # fractional microseconds with exactly three decimals
    assert all(isinstance(e["ts"], decimal.Decimal) and e["ts"].as_tuple().exponent == -3
               for e in ev if e.get("ph") == "X")
    assert summary["steps"] >= 2


def test_counts_match_summary(small):
    _path, summary, doc = small
    counts = collections.Counter(e.get("cat", "") for e in doc["traceEvents"])
    assert dict(counts) == summary["categories"]
    for cat in ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver", "kernel",
                "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "ac2g", "cpu_instant_event"):
        assert counts[cat] > 0, cat


def test_determinism(tmp_path):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    synth.generate(a, events=1500, seed=3)
    synth.generate(b, events=1500, seed=3)
    synth.generate(c, events=1500, seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_gzip_same_content(tmp_path):
    plain, gz, gz2 = tmp_path / "t.json", tmp_path / "t.json.gz", tmp_path / "u.json.gz"
    s1 = synth.generate(plain, events=1500, seed=1)
    s2 = synth.generate(gz, events=1500, seed=1)
    synth.generate(gz2, events=1500, seed=1)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()
    assert gz.read_bytes() == gz2.read_bytes()
    assert s2["bytes"] == s1["bytes"] == plain.stat().st_size
    assert s2["file_bytes"] == gz.stat().st_size < s2["bytes"]


def test_durations_positive_and_ids_unique(small):
    _path, _summary, doc = small
    ev = doc["traceEvents"]
    assert all(e["dur"] > 0 for e in ev if e.get("ph") == "X")
    corr = [e["args"]["correlation"] for e in ev if e.get("cat") in LAUNCH_CATS]
    assert len(corr) == len(set(corr))
    dev_corr = [e["args"]["correlation"] for e in ev if e.get("cat") in DEVICE_CATS]
    assert len(dev_corr) == len(set(dev_corr))


def test_kernels_match_one_launch_before_them(small):
    _path, _summary, doc = small
    ev = doc["traceEvents"]
    launches = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") in LAUNCH_CATS:
            launches[e["args"]["correlation"]].append(e)
    devs = [e for e in ev if e.get("cat") in DEVICE_CATS]
    assert devs
    for k in devs:
        rt = launches[k["args"]["correlation"]]
        assert len(rt) == 1, k
        assert rt[0]["ts"] < k["ts"]
        assert rt[0]["args"]["External id"] == k["args"]["External id"]
        assert k["args"]["stream"] == k["tid"] and k["args"]["device"] == k["pid"]
    # flows: one "s" at each launch with device work, one "f" at each device event
    s = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    f = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    assert set(s) == set(f) == {k["args"]["correlation"] for k in devs}
    for k in devs:
        assert f[k["args"]["correlation"]]["ts"] == k["ts"] and f[k["args"]["correlation"]]["bp"] == "e"
    by_name = collections.Counter(e["name"] for e in devs)
    assert any("ncclDevKernel_AllReduce" in n for n in by_name)
    assert any("splitKreduce_kernel" in n for n in by_name)
    assert any(n.startswith("triton_") for n in by_name)
    assert {k["tid"] for k in devs} == {7, 20}


def test_runtime_external_id_enclosed_by_cpu_op(small):
    _path, _summary, doc = small
    ev = doc["traceEvents"]
    ops = {}
    for e in ev:
        if e.get("cat") == "cpu_op":
            x = e["args"]["External id"]
            assert x not in ops
            ops[x] = e
    n = 0
    for e in ev:
        if e.get("cat") in LAUNCH_CATS and "External id" in e["args"]:
            op = ops[e["args"]["External id"]]
            assert (op["pid"], op["tid"]) == (e["pid"], e["tid"])
            assert op["ts"] <= e["ts"] and e["ts"] + e["dur"] <= op["ts"] + op["dur"]
            n += 1
    assert n > 100


def test_same_stream_device_events_do_not_overlap(small):
    _path, _summary, doc = small
    per_stream = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("cat") in DEVICE_CATS:
            per_stream[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["dur"])))
    gaps = []
    for spans in per_stream.values():
        spans.sort()
        for (t0, d0), (t1, _d1) in zip(spans, spans[1:]):
            assert t0 + d0 <= t1
            gaps.append(t1 - t0 - d0)
    # idle time for the idle-analysis reports: both small and large gaps
    assert min(gaps) < 5_000 and max(gaps) > 1_000_000


def test_cpu_events_nest_properly(small):
    _path, _summary, doc = small
    per_thread = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in CPU_CATS:
            per_thread[(e["pid"], e["tid"])].append((_ns(e["ts"]), -_ns(e["dur"]), e["name"]))
    assert len(per_thread) == 2  # main thread and autograd thread
    depth_max = 0
    for spans in per_thread.values():
        spans.sort()
        stack = []
        for ts, neg_dur, name in spans:
            end = ts - neg_dur
            while stack and stack[-1] <= ts:
                stack.pop()
            assert not stack or end <= stack[-1], name
            stack.append(end)
            depth_max = max(depth_max, len(stack))
    assert depth_max >= 5


def test_cpu_op_args(small):
    _path, _summary, doc = small
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    conv = next(e for e in ops if e["name"] == "aten::conv2d")
    assert conv["args"]["Concrete Inputs"][3:6] == ["[2, 2]", "[1, 1]", "[1, 1]"]
    assert conv["args"]["Input Dims"][0][:2] == [8, 3]
    addmm = next(e for e in ops if e["name"] == "aten::addmm")
    assert addmm["args"]["Concrete Inputs"][3:] == ["1", "1"]
    types = {t for e in ops for t in e["args"].get("Input type", [])}
    assert {"float", "c10::BFloat16", "c10::Half"} <= types
    assert any("Sequence number" in e["args"] for e in ops)
    names = {e["name"] for e in ops}
    for n in ("aten::linear", "aten::t", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution",
              "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention", "aten::relu",
              "aten::add_", "aten::copy_", "aten::to", "record_param_comms"):
        assert n in names, n
    steps = [e for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#")]
    assert {e["cat"] for e in steps} == {"user_annotation", "gpu_user_annotation"}


def test_target_bytes(tmp_path):
    target = 2_000_000
    s = synth.generate(tmp_path / "t.json", target_bytes=target, seed=0)
    size = (tmp_path / "t.json").stat().st_size
    assert s["bytes"] == size
    assert abs(size - target) <= 0.1 * target
    assert synth.approx_events_for_bytes(target) > 0


def test_ranks(tmp_path):
    sums = synth.generate_ranks(tmp_path, world_size=2, events=800, seed=0)
    docs = [_load(s["path"]) for s in sums]
    assert [d["distributedInfo"]["rank"] for d in docs] == [0, 1]
    assert all(d["distributedInfo"]["world_size"] == 2 for d in docs)
    kern = [e for e in docs[1]["traceEvents"] if e.get("cat") == "kernel"]
    assert {e["pid"] for e in kern} == {1}


def test_gzip_without_isal(tmp_path, monkeypatch):
    import sys

    plain, gz = tmp_path / "p.json", tmp_path / "p.json.gz"
    synth.generate(plain, events=800, seed=2)
    monkeypatch.setitem(sys.modules, "isal", None)  # import isal -> ImportError: stdlib gzip path
    synth.generate(gz, events=800, seed=2)
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()


# -- options: with_stack, epoch timestamps, serving ------------------------------

def _host_spans(doc, tid=None):
    return [e for e in doc["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in CPU_CATS and (tid is None or e["tid"] == tid)]


def test_stack_frames_around_top_level_ops(tmp_path):
    """stack=N: every top-level cpu_op of the main thread runs inside exactly
    N python frames (a chain, by Python parent id), and each ProfilerStep#N
    is crossed by the python frame that opens it: the frame starts before
    the step and ends inside it."""
    s = synth.generate(tmp_path / "s.json", events=3000, seed=0, stack=3)
    doc = _load(tmp_path / "s.json")
    main = s["threads"][0]
    spans = _host_spans(doc, main)
    frames = [e for e in spans if e["cat"] == "python_function"]
    assert s["categories"]["python_function"] == sum(1 for e in doc["traceEvents"] if e.get("cat") == "python_function")
    # a frame's parent id names an earlier frame, or none
    ids = {e["args"]["Python id"] for e in frames}
    assert all(e["args"]["Python parent id"] is None or e["args"]["Python parent id"] in ids for e in frames)
    ops = [e for e in spans if e["cat"] == "cpu_op"]

    def enclosing(e, cat):
        t0, t1 = _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])
        return [f for f in spans if f is not e and f["cat"] == cat
                and _ns(f["ts"]) <= t0 and t1 <= _ns(f["ts"]) + _ns(f["dur"])]
    top = [e for e in ops if not enclosing(e, "cpu_op")]
    assert len(top) > 20
    for e in top:
        stack = [f for f in enclosing(e, "python_function") if f["name"] in synth_frames()]
        assert len(stack) == 3, e["name"]
    steps = [e for e in spans if e["name"].startswith("ProfilerStep#")]
    openers = [e for e in frames if e["name"] == "torch/autograd/profiler.py(754): __enter__"]
    assert len(steps) == len(openers) == s["steps"]
    for st, op in zip(steps, openers):
        assert _ns(op["ts"]) < _ns(st["ts"]) < _ns(op["ts"]) + _ns(op["dur"]) < _ns(st["ts"]) + _ns(st["dur"])
    # without the option: no python frame crosses a step (test_cpu_events_nest_properly)
    plain = synth.generate(tmp_path / "p.json", events=3000, seed=0)
    assert plain["categories"]["python_function"] < s["categories"]["python_function"] / 3


def synth_frames():
    from duckprof.synth.sim import PY_FRAMES
    return set(PY_FRAMES)


def test_epoch_timestamps(tmp_path):
    """epoch_ts: the same events, every ts moved by baseTimeNanoseconds (now
    absent) to absolute microseconds with three decimals."""
    plain = synth.generate(tmp_path / "p.json", events=2000, seed=1, stack=2)
    epoch = synth.generate(tmp_path / "e.json", events=2000, seed=1, stack=2, epoch_ts=True)
    a, b = _load(tmp_path / "p.json"), _load(tmp_path / "e.json")
    assert "baseTimeNanoseconds" in a and "baseTimeNanoseconds" not in b and epoch["base_time_ns"] is None
    assert len(a["traceEvents"]) == len(b["traceEvents"]) == plain["events"] == epoch["events"]
    shift = decimal.Decimal(a["baseTimeNanoseconds"]) / 1000
    for x, y in zip(a["traceEvents"], b["traceEvents"]):
        assert {k: v for k, v in x.items() if k != "ts"} == {k: v for k, v in y.items() if k != "ts"}
        assert y["ts"] - x["ts"] == shift
    fractional = [e["ts"] for e in b["traceEvents"] if e["ts"] != int(e["ts"])]
    assert len(fractional) > len(b["traceEvents"]) / 2 and min(fractional) > decimal.Decimal("1.7e15")
    assert all(-e["ts"].as_tuple().exponent == 3 for e in b["traceEvents"])


def test_serving_steps(tmp_path):
    """serving: forward-only steps on one CPU thread (no autograd thread, no
    optimizer, no all-reduce), python frames 12 deep by default, most events
    python_function, as in a model server's with_stack trace."""
    s = synth.generate(tmp_path / "s.json", events=4000, seed=0, serving=True)
    doc = _load(tmp_path / "s.json")
    names = {e["name"] for e in doc["traceEvents"]}
    assert {e["tid"] for e in _host_spans(doc)} == {s["threads"][0]}
    assert not any(n.startswith("autograd::") or n.startswith("Optimizer") or n == "nccl:all_reduce" for n in names)
    assert "scheduler.schedule" in names and sum(n.startswith("ProfilerStep#") for n in names) == s["steps"]
    assert s["categories"]["python_function"] > 0.5 * s["events"]
    assert s["categories"]["kernel"] > 0
