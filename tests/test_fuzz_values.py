"""Valid JSON with odd values: real traces with some events' fields deleted or
set to values of the wrong type or out of range (a pid of 2^53 + 1, a ts of 0
among epoch timestamps, a string where a number belongs, a missing ts, ...).
Every outcome is a load followed by every report and the html page running
without an exception, or a one-line TraceError naming the file. (test_fuzz.py
corrupts the bytes, which mostly ends in the parser; this reaches the views.)
A failing case prints its source and seed: `_mutate(SOURCES[source], _random(source, seed))`
rebuilds it."""

from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckprof
from duckprof import reports as R
from conftest import CORPUS, REPO, read_bytes

SMALL = ["a100_triton_kernel.json.gz", "mi250_rocm_train.json.gz", "cpu_only_rank34.json.gz",
         "a100_alexnet_train.json.gz", "tiny_compare_base.json.gz", "backward_thread_minimal.json"]
SOURCES = {name: json.loads(read_bytes(CORPUS / name)) for name in SMALL if (CORPUS / name).exists()}
for _path in ("fixtures/kernels/h100_two_kernels_one_op.json", "fixtures/memory/memory.json",
              "fixtures/steps/three_steps.json", "fixtures/tb_plugin/build_module_hierarchy.json"):
    SOURCES[_path] = json.loads((REPO / _path).read_text())

ODD = [None, "", "x", -1, 0, 1.5, -1e9, 1e18, 2**63, -2**63 - 1, True, [], {}, [1, 2], {"a": 1},
       "<script>alert(1)</script>", "a\u0000b", "\u00e9\u4e2d", "9" * 40, 1e308, "1.5", "123", 2**53 + 1]
KEYS = ["ph", "ts", "dur", "name", "cat", "pid", "tid", "args", "id", "s"]
ARGS = ["External id", "correlation", "Input Dims", "Input type", "Concrete Inputs", "Sequence number",
        "Fwd thread id", "device", "stream", "grid", "block", "registers per thread", "shared memory",
        "Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Name",
        "Process Group Ranks", "Seq", "Bytes", "Total Allocated", "Addr", "Device Id", "Device Type",
        "Ev Idx", "flops", "Python id", "Python parent id", "Python module id", "queued", "context", "labels", "name"]
TOP = {"deviceProperties": [[{"id": "x"}], [{"id": 0, "name": None, "computeMajor": "9"}], {}],
       "distributedInfo": [{"rank": "x"}, {"rank": -1, "world_size": 0}, {"rank": 5, "world_size": 2}, []],
       "baseTimeNanoseconds": ["x", -1, 1.5], "schemaVersion": ["x", None]}
# events reports read closely: device work, launches, operators, steps, memory, collectives
HOT_CATS = {"kernel", "cuda_runtime", "cuda_driver", "gpu_memcpy", "gpu_memset", "cpu_op", "user_annotation",
            "gpu_user_annotation", "cpu_instant_event", "ac2g", "python_function", "Kernel", "Runtime", "Operator"}


def _mutate(doc, rnd: random.Random):
    d = copy.deepcopy(doc)
    events = d["traceEvents"] if isinstance(d, dict) else d
    hot = [i for i, e in enumerate(events) if e.get("cat") in HOT_CATS
           or str(e.get("name", "")).startswith(("ProfilerStep", "[memory]", "nccl", "gloo"))]
    for _ in range(rnd.randint(1, 6)):
        k = rnd.random()
        if k < 0.1 and isinstance(d, dict):
            key = rnd.choice(sorted(TOP))
            d[key] = rnd.choice(TOP[key])
            continue
        i = rnd.choice(hot) if hot and rnd.random() < 0.8 else rnd.randrange(len(events))
        e = events[i]
        if k < 0.3:
            e.pop(rnd.choice(KEYS), None)
        elif k < 0.5:
            e[rnd.choice(KEYS)] = rnd.choice(ODD)
        elif k < 0.75:
            if not isinstance(e.get("args", {}), dict):
                continue
            a = e.setdefault("args", {})
            a[rnd.choice(sorted(a) + ARGS)] = rnd.choice(ODD)
        elif k < 0.85:  # stray times: CUPTI's 0, a far future, negative or huge durations
            if rnd.random() < 0.5:
                e["ts"] = rnd.choice([0, -1, 4e15, 0.0001])
            else:
                e["dur"] = rnd.choice([-5, 0, 1e12, 0.0004])
        elif k < 0.92:
            e["ph"] = rnd.choice(["X", "i", "B", "E", "b", "e", "s", "f", "M", "C", ""])
        else:
            events.insert(rnd.randrange(len(events) + 1), copy.deepcopy(e))
    return d


def _every_report(s) -> list[str]:
    """Each report (every variant, defaults otherwise) and the page; the failures."""
    extra = {"by": "event", "buckets": 50, "category": "gemm", "breakdown": "tensorboard"}
    failed = []
    for rep in R.REPORTS:
        runs = [{"metric": "step_time"}] if rep.name == "trend" else \
            [{}] + [{v: extra.get(v, True)} for v in (rep.variants or {})]
        for options in runs:
            try:
                s.report_result(rep.name, **options).relation.fetchall()
            except duckprof.DuckprofError as e:  # a report's own "cannot" is fine, in one line
                if "\n" in str(e).strip():
                    failed.append(f"{rep.name} {options}: {e}")
            except Exception as e:  # noqa: BLE001 - the point of the test
                failed.append(f"{rep.name} {options}: {type(e).__name__}: {e}")
    try:
        s.html()
    except Exception as e:  # noqa: BLE001
        failed.append(f"html: {type(e).__name__}: {e}")
    return failed


def _random(source: str, seed: int) -> random.Random:
    """The mutations' random numbers: of the seed and the source, so that a
    seed drawn for every source mutates each in its own way."""
    return random.Random(f"{source}/{seed}")


# Every source is fuzzed twice (two mutations, loaded as two runs of one
# session); the sources in two groups, a test each (xdist spreading them over
# its workers), each group's mutations loaded into one session and every report
# and the page run once over all of them (each report partitions by trace; the
# one-trace shapes are pinned below): a session per source ran every report's
# statements once per source, ~5 CPU-s each, most of it planning (~50 CPU-s of
# the suite for 10 sources, ~10 in two groups). Derandomized, each group gets
# the same seeds: _random mixes in the source, so each source is mutated its
# own way.
GROUPS = [sorted(SOURCES)[0::2], sorted(SOURCES)[1::2]]


@pytest.mark.slow  # ~5 CPU-s a group
@pytest.mark.parametrize("group", range(len(GROUPS)))
@settings(max_examples=1, deadline=None, derandomize=True,  # the same cases in every CI run
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2, unique=True))
def test_odd_values_load_or_fail_in_one_line(tmp_path_factory, group, seeds):
    folder = tmp_path_factory.mktemp("fv")
    loaded = []
    with duckprof.connect() as s:
        for i, source in enumerate(GROUPS[group]):
            for k, seed in enumerate(seeds):
                path = folder / f"t{i}_{k}.json"
                path.write_text(json.dumps(_mutate(SOURCES[source], _random(source, seed))))
                try:
                    s.load([str(path)], run=f"s{i}_seed{seed}")
                    loaded.append((source, seed))
                except duckprof.TraceError as e:
                    assert str(path) in str(e) and "\n" not in str(e).strip(), (source, seed, str(e))
        if loaded:  # (with none, the reports' "no traces loaded" is test_api's)
            assert _every_report(s) == [], loaded


EPOCH, ONE_KERNEL = "tiny_compare_base.json.gz", "a100_triton_kernel.json.gz"


@pytest.mark.parametrize("source,mutation,expect", [
    (EPOCH, {"pid": 2**53 + 1}, "loads"),   # no GPU index: reports ran into a failed INTEGER cast
    (EPOCH, {"ts": 0}, "loads"),            # 1.7e18 ns window: bucket bounds overflowed BIGINT
    (EPOCH, {"ts": None}, "no ts"),         # a timed event without a start
    (ONE_KERNEL, {"dur": 0.0004}, "loads"),  # its only kernel lasts 0 ns: a window of 0, temporal's % NULL
])
def test_odd_values_found_by_the_fuzz(tmp_path, source, mutation, expect):
    """The cases the fuzz above found, pinned, on the first kernel of a real
    trace: one with epoch timestamps (1.66e15 us), one with a single kernel."""
    doc = copy.deepcopy(SOURCES[source])
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    for key, value in mutation.items():
        if value is None:
            del kernel[key]
        else:
            kernel[key] = value
    kernel.get("args", {}).pop("device", None)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with duckprof.connect() as s:
        if expect == "loads":
            s.load([str(path)])
            assert _every_report(s) == []
        else:
            with pytest.raises(duckprof.TraceError, match=expect):
                s.load([str(path)])


def test_a_negative_kernel_time_loads_and_has_no_roofline_dot(tmp_path):
    """The fuzz's seed 92 on backward_thread_minimal: a kernel with FLOP
    estimates whose dur is negative (Kineto wrote zero end timestamps before
    2022, kineto#646) loads like any unusual trace; its negative TFLOP/s got a
    dot on the log-log roofline and the page failed in log10."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_mutate(SOURCES["backward_thread_minimal.json"], random.Random(92))))
    with duckprof.connect() as s:
        s.load([str(path)])
        assert s.sql("SELECT count(*) FROM kernels WHERE dur_ns < 0").fetchall() == [(1,)]
        assert _every_report(s) == []
