"""The reports added for duckprof html: traces, devices, gpu-time --buckets and
queue --buckets (and gpu-time --by-step's start_ms).

Hand-computed values come from fixtures/gpu_time/two_streams.json, whose
layout tests/test_gpu_time.py spells out (times in µs after T0):

  device events  stream 7: K1 [30,50] K2 [50,60] K3 [62,70] K4 [110,120] K5 [295,305]
                 stream 8: M1 memcpy [100,140] C1 nccl [150,170] K6 [330,345]
  launch calls   K1 12, K2 14, K3 16, K4 18, M1 20, C1 22, K5 290, K6 322
  device busy    [30,60] [62,70] [100,140] [150,170] [295,305] [330,345]
  device gaps    [60,62] kernel_wait, [70,100] other, [140,150] kernel_wait,
                 [170,295] host_wait, [305,330] host_wait
  stream 7 gaps  [60,62] kernel_wait, [70,110] other, [120,295] host_wait
  stream 8 gaps  [140,150] kernel_wait, [170,330] host_wait
  steps          ProfilerStep#1 [0,90], ProfilerStep#2 [90,400]

Counts on real traces are checked against Python's json module.
"""

from __future__ import annotations

import math

import pytest

import duckprof
from test_gpu_time import two  # noqa: F401  (two_streams.json loaded as run r1)
from conftest import REPO, corpus_path, read_trace, trace_events
from duckprof.errors import DuckprofError

TWO = REPO / "fixtures" / "gpu_time" / "two_streams.json"


def rows(rel):
    cols = rel.columns
    return [dict(zip(cols, r)) for r in rel.fetchall()]


def test_gpu_time_buckets_hand_computed(two):
    # the trace's device window [30,345] in 3 buckets of 105 µs: [30,135) [135,240) [240,345]
    got = {(r["scope"], r["stream"], r["bucket"]):
           (r["start_ms"], r["width_us"], r["busy_us"], r["host_wait_us"], r["kernel_wait_us"], r["other_us"],
            r["outside_us"])
           for r in rows(two.report("gpu-time", buckets=3))}
    want = {
        # device: busy 30+8+35 | 5+20 | 10+15; idle [60,62] kw, [70,100] other | [140,150] kw,
        # [170,240] host | [240,295] + [305,330] host
        ("device", None, 0): (0.030, 105, 73, 0, 2, 30, 0),
        ("device", None, 1): (0.135, 105, 25, 70, 10, 0, 0),
        ("device", None, 2): (0.240, 105, 25, 80, 0, 0, 0),
        # stream 7 (its window ends at 305): busy 30+8+10, kw 2, other [70,110] 40, host [120,135) 15
        ("stream", 7, 0): (0.030, 105, 48, 15, 2, 40, 0),
        ("stream", 7, 1): (0.135, 105, 0, 105, 0, 0, 0),
        ("stream", 7, 2): (0.240, 105, 10, 55, 0, 0, 40),
        # stream 8 (its window starts at 100): outside [30,100) 70, busy [100,135) 35
        ("stream", 8, 0): (0.030, 105, 35, 0, 0, 0, 70),
        ("stream", 8, 1): (0.135, 105, 25, 70, 10, 0, 0),
        ("stream", 8, 2): (0.240, 105, 15, 90, 0, 0, 0),
    }
    assert set(got) == set(want)
    for k, w in want.items():
        assert got[k] == pytest.approx(w, abs=1e-9), k


def test_gpu_time_buckets_add_up_to_gpu_time(two):
    whole = {(r["scope"], r["stream"]): r for r in rows(two.report("gpu-time"))}
    buckets = rows(two.report("gpu-time", buckets=7))
    for key, w in whole.items():
        mine = [b for b in buckets if (b["scope"], b["stream"]) == key]
        assert len(mine) == 7
        for col in ("busy_us", "host_wait_us", "kernel_wait_us", "other_us"):
            assert sum(b[col] for b in mine) == pytest.approx(w[col], abs=1e-9), (key, col)


def test_gpu_time_by_step_says_where_each_step_starts(two):
    got = [(r["step"], r["start_ms"], r["step_us"]) for r in rows(two.report("gpu-time", by_step=True))]
    # the trace's first event is ProfilerStep#1 at 0
    assert got == [(1, 0.0, 90.0), (2, 0.09, 310.0)]


def test_gpu_time_buckets_and_by_step_are_two_reports(two):
    with pytest.raises(DuckprofError, match="--by-step and --buckets"):
        two.report("gpu-time", buckets=3, by_step=True)


def test_queue_buckets_hand_computed(two):
    # GPU window (gpu_windows, as the queue report): first device event 30 (K1) to last end 345
    #   = 315 µs, 3 buckets of 105: [30,135) [135,240) [240,345]; depth before 30 is not counted
    # stream 7 depth: 1 at 12, 2 at 14, 3 at 16, 4 at 18, 3 at 50, 2 at 60, 1 at 70, 0 at 120, 1 at 290, 0 at 305
    #   bucket 0: 4*20 + 3*10 + 2*10 + 1*50 = 180; bucket 2: 1*15
    # stream 8 depth: 1 at 20, 2 at 22, 1 at 140, 0 at 170, 1 at 322, 0 at 345
    #   bucket 0: 2*105 = 210; bucket 1: 2*5 + 1*30 = 40; bucket 2: 1*23
    got = {(r["stream"], r["bucket"]): (r["start_ms"], r["width_us"], r["mean_depth"], r["max_depth"])
           for r in rows(two.report("queue", buckets=3))}
    expected = {
        (7, 0): (0.030, 105, 180 / 105, 4), (7, 1): (0.135, 105, 0, 0), (7, 2): (0.240, 105, 15 / 105, 1),
        (8, 0): (0.030, 105, 210 / 105, 2), (8, 1): (0.135, 105, 40 / 105, 2), (8, 2): (0.240, 105, 23 / 105, 1),
    }
    # one approx per bucket: pytest 9.2's approx takes no dict of tuples
    assert got.keys() == expected.keys()
    for key, values in expected.items():
        assert got[key] == pytest.approx(values), key


@pytest.mark.slow
def test_queue_buckets_agree_with_queue_on_a_real_trace():
    s = duckprof.connect()
    s.load([str(corpus_path("h100_vit_inference.json.gz"))], run="r")
    whole = rows(s.report("queue"))
    assert len(whole) == 1  # one stream: its window is the trace's queue window
    b = rows(s.report("queue", buckets=50))
    assert len(b) == 50
    # the integral of the depth over the buckets = the queue's time-weighted mean x its window
    assert sum(r["mean_depth"] * r["width_us"] for r in b) == pytest.approx(
        whole[0]["mean_depth"] * whole[0]["window_us"], rel=1e-9)
    assert max(r["max_depth"] for r in b) == whole[0]["max_depth"]
    s.close()


@pytest.mark.slow
def test_traces_report_counts_what_the_json_holds():
    path = corpus_path("a100_train_rank0.json.gz")
    ev = trace_events(read_trace(path))
    complete = [e for e in ev if e.get("ph") == "X"]
    steps = [e for e in complete if str(e.get("name", "")).startswith("ProfilerStep#")]
    gpu = [e for e in complete if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    s = duckprof.connect()
    s.load([str(path)], run="r")
    (t,) = rows(s.report("traces"))
    assert t["events"] == len(ev)
    assert t["steps"] == len(steps) == 5
    durs = {int(e["name"].split("#")[1]): e["dur"] for e in steps}
    assert t["step_mean_us"] == pytest.approx(sum(durs.values()) / len(durs))
    assert t["step_max_us"] == max(durs.values())
    assert t["slowest_step"] == max(durs, key=durs.get)
    assert t["gpu_events"] == len(gpu)
    assert t["gpu_devices"] == len({e["args"]["device"] for e in gpu})
    first = min(e["ts"] for e in complete if e.get("dur", -1) >= 0)
    last = max(e["ts"] + e["dur"] for e in complete if e.get("dur", -1) >= 0)
    assert t["wall_us"] == pytest.approx(last - first)
    s.close()


@pytest.mark.slow
def test_devices_report_lists_device_properties_and_devices_with_work():
    path = corpus_path("h100_vit_inference.json.gz")
    doc = read_trace(path)
    props = doc["deviceProperties"]
    s = duckprof.connect()
    s.load([str(path)], run="r")
    got = rows(s.report("devices"))
    assert [r["device"] for r in got] == sorted(p["id"] for p in props)
    (h100,) = [r for r in got if r["device"] == 0]
    assert h100["device_name"] == props[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert h100["memory_bytes"] == props[0]["totalGlobalMem"]
    assert h100["peak_device"] == "NVIDIA H100 SXM5"
    # NVIDIA's H100 SXM datasheet (duckprof/data/peaks.csv): dense bf16 1979 / 2 TFLOP/s, DRAM 3.35 TB/s
    assert (h100["bf16_tflops"], h100["dram_gbps"]) == (989.5, 3350.0)
    kernels = [e for e in trace_events(doc) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("ph") == "X"]
    assert h100["gpu_events"] == len(kernels)
    s.close()


@pytest.mark.slow
def test_traces_and_devices_on_a_cpu_only_trace():
    s = duckprof.connect()
    s.load([str(corpus_path("cpu_only_rank34.json.gz"))], run="r")
    (t,) = rows(s.report("traces"))
    assert (t["rank"], t["gpu_events"], t["gpu_devices"], t["steps"]) == (34, 0, 0, 1)
    res = s.report_result("devices")
    assert res.instead == ["no devices: no deviceProperties and no device activity"]
    s.close()


def test_buckets_when_nothing_ran_say_so():
    s = duckprof.connect()
    s.load([str(corpus_path("cpu_only_rank34.json.gz"))], run="r")
    for name in ("gpu-time", "queue"):
        res = s.report_result(name, buckets=10)
        assert res.instead == ["no GPU activity in this trace"]
        assert rows(res.relation) == []
    s.close()


def test_bucket_bounds_tile_the_window(two):
    b = [r for r in rows(two.report("gpu-time", buckets=13)) if r["scope"] == "device"]
    starts = [r["start_ms"] for r in b]
    assert starts == sorted(starts) and len(b) == 13
    for x, y in zip(b, b[1:]):
        assert math.isclose(x["start_ms"] + x["width_us"] / 1e3, y["start_ms"], abs_tol=1e-12)
    assert sum(r["width_us"] for r in b) == pytest.approx(315)
