"""GPU idle time, queue depth, idle ranking and temporal breakdown (GitHub issue 5).

Expected values are worked out by hand from fixtures/gpu_time/two_streams.json
(its layout is in fixtures/gpu_time/make_fixtures.py). All times in µs after T0.

Device events: stream 7: K1 [30,50] K2 [50,60] K3 [62,70] K4 [110,120] K5 [295,305]
               stream 8: M1 memcpy [100,140], C1 nccl [150,170], K6 [330,345]
Launch call starts: K1 12, K2 14, K3 16, K4 18, M1 20, C1 22, K5 290, K6 322.

Stream 7: busy [30,60] [62,70] [110,120] [295,305] = 58 of window [30,305] = 275.
  gaps [60,62] 2 (K3 launched at 16 < 60, < 30 µs: kernel_wait),
       [70,110] 40 (K4 launched at 18 < 70, >= 30: other),
       [120,295] 175 (K5 launched at 290 > 120: host_wait)
Stream 8: busy 40 + 20 + 15 = 75 of window [100,345] = 245.
  gaps [140,150] 10 (kernel_wait), [170,330] 160 (K6 launched at 322 > 170: host_wait)
Device: busy [30,60] [62,70] [100,140] [150,170] [295,305] [330,345] = 123 of [30,345] = 315
  gaps [60,62] 2 kernel_wait, [70,100] 30 other (30 is not < 30), [140,150] 10 kernel_wait,
       [170,295] 125 host_wait, [305,330] 25 host_wait
Temporal: compute K1-K6 union = 30+8+10+10+15 = 73; communication C1 = 20;
  memory = M1 40 minus K4 10 = 30; non-compute 50; idle 192.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import duckprof  # noqa: E402
from duckprof import session as session_mod  # noqa: E402
from conftest import slow_when  # noqa: E402

FIX = REPO / "fixtures" / "gpu_time"
TWO = FIX / "two_streams.json"
T0 = 1_000_000_000  # ns (T0 of make_fixtures.py, in ns)
US = 1000


def us(t):
    return T0 + t * US


def q(s, sql, params=None):
    return s.con.execute(sql, params).fetchall() if params else s.con.execute(sql).fetchall()


def as_dicts(rel):
    cols = rel.columns
    return [dict(zip(cols, r)) for r in rel.fetchall()]


def loaded_events(tmp_path, name, events):
    """A session (use with `with`) holding a trace of `events` written as tmp_path/name."""
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    s = duckprof.connect()
    s.load([str(path)])
    return s


@pytest.fixture(scope="module")
def two():
    s = duckprof.connect()
    s.load([str(TWO)], run="r1")
    yield s
    s.close()


# -- busy and idle intervals ----------------------------------------------------

def test_busy_intervals(two):
    got = q(two, """SELECT scope, stream, (start_ns - $t0) // 1000, (end_ns - $t0) // 1000, ops
                    FROM gpu_busy_intervals ORDER BY scope, stream, start_ns""", {"t0": T0})
    assert got == [
        ("device", None, 30, 60, 2), ("device", None, 62, 70, 1), ("device", None, 100, 140, 2),
        ("device", None, 150, 170, 1), ("device", None, 295, 305, 1), ("device", None, 330, 345, 1),
        ("stream", 7, 30, 60, 2), ("stream", 7, 62, 70, 1), ("stream", 7, 110, 120, 1),
        ("stream", 7, 295, 305, 1),
        ("stream", 8, 100, 140, 1), ("stream", 8, 150, 170, 1), ("stream", 8, 330, 345, 1),
    ]


def test_idle_intervals_and_categories(two):
    got = q(two, """SELECT scope, stream, (start_ns - $t0) // 1000, dur_ns // 1000, category,
                           (next_launch_ts_ns - $t0) // 1000
                    FROM gpu_idle_intervals ORDER BY scope, stream, start_ns""", {"t0": T0})
    assert got == [
        ("device", None, 60, 2, "kernel_wait", 16), ("device", None, 70, 30, "other", 20),
        ("device", None, 140, 10, "kernel_wait", 22), ("device", None, 170, 125, "host_wait", 290),
        ("device", None, 305, 25, "host_wait", 322),
        ("stream", 7, 60, 2, "kernel_wait", 16), ("stream", 7, 70, 40, "other", 18),
        ("stream", 7, 120, 175, "host_wait", 290),
        ("stream", 8, 140, 10, "kernel_wait", 22), ("stream", 8, 170, 160, "host_wait", 322),
    ]
    # the threshold is a parameter: at 31 µs the 30 µs device gap becomes kernel_wait
    got = q(two, """SELECT category FROM gpu_idle_intervals(kernel_wait_ns := 31000)
                    WHERE scope = 'device' AND start_ns = $s""", {"s": us(70)})
    assert got == [("kernel_wait",)]


def test_gpu_time_report(two):
    rows = as_dicts(two.report("gpu-time"))
    assert [(r["scope"], r["stream"]) for r in rows] == [("device", None), ("stream", 7), ("stream", 8)]
    dev, s7, s8 = rows
    assert (dev["events"], dev["window_us"], dev["busy_us"], dev["idle_us"]) == (8, 315, 123, 192)
    assert dev["busy_pct"] == pytest.approx(100 * 123 / 315)
    assert (dev["host_wait_us"], dev["kernel_wait_us"], dev["other_us"]) == (150, 12, 30)
    assert dev["host_wait_pct"] == pytest.approx(100 * 150 / 192)
    assert dev["kernel_wait_pct"] == pytest.approx(100 * 12 / 192)
    assert dev["other_pct"] == pytest.approx(100 * 30 / 192)
    assert (s7["events"], s7["window_us"], s7["busy_us"], s7["idle_us"]) == (5, 275, 58, 217)
    assert (s7["host_wait_us"], s7["kernel_wait_us"], s7["other_us"]) == (175, 2, 40)
    assert s7["busy_pct"] == pytest.approx(100 * 58 / 275)
    assert (s8["events"], s8["window_us"], s8["busy_us"], s8["idle_us"]) == (3, 245, 75, 170)
    assert (s8["host_wait_us"], s8["kernel_wait_us"], s8["other_us"]) == (160, 10, 0)
    # a 5 µs threshold turns the 10 µs gaps into 'other'
    dev5 = as_dicts(two.report("gpu-time", kernel_wait_us=5))[0]
    assert (dev5["host_wait_us"], dev5["kernel_wait_us"], dev5["other_us"]) == (150, 2, 40)


def test_gpu_time_by_step(two):
    # ProfilerStep#1 [0,90]: busy [30,60] + [62,70] = 38; #2 [90,400]: 40 + 20 + 10 + 15 = 85
    rows = as_dicts(two.report("gpu-time", by_step=True))
    assert [(r["step"], r["step_us"], r["busy_us"], r["idle_us"]) for r in rows] == [
        (1, 90, 38, 52), (2, 310, 85, 225)]
    assert rows[0]["busy_pct"] == pytest.approx(100 * 38 / 90)
    assert rows[1]["busy_pct"] == pytest.approx(100 * 85 / 310)


def test_temporal_report(two):
    (r,) = as_dicts(two.report("temporal"))
    assert (r["run"], r["rank"], r["device"]) == ("r1", 0, 0)
    assert (r["window_us"], r["idle_us"], r["compute_us"], r["non_compute_us"]) == (315, 192, 73, 50)
    assert (r["communication_us"], r["memory_us"]) == (20, 30)
    assert r["idle_pct"] == pytest.approx(100 * 192 / 315)
    assert r["compute_pct"] == pytest.approx(100 * 73 / 315)
    assert r["non_compute_pct"] == pytest.approx(100 * 50 / 315)


def test_exclude_last_step(two):
    # the last step starts at 90: K5 (launched at 290) and K6 (322) are dropped;
    # device busy [30,60] [62,70] [100,140] [150,170] = 98 of [30,170] = 140
    (r,) = as_dicts(two.report("temporal", exclude_last_step=True))
    assert (r["window_us"], r["idle_us"], r["compute_us"], r["communication_us"], r["memory_us"]) == \
        (140, 42, 48, 20, 30)
    # --hta implies it (and rounding, a no-op on whole-µs times)
    (h,) = as_dicts(two.report("temporal", hta=True))
    assert h == r


# -- queue depth ----------------------------------------------------------------

def test_queue_depth_series(two):
    got = q(two, """SELECT (ts_ns - $t0) // 1000, change, queue_depth, pending, dur_ns // 1000
                    FROM queue_depth WHERE stream = 7 ORDER BY seq""", {"t0": T0})
    assert got == [
        (12, "launch", 1, 1, 2), (14, "launch", 2, 2, 2), (16, "launch", 3, 3, 2), (18, "launch", 4, 4, 12),
        (30, "start", 4, 3, 20), (50, "end", 3, 3, 0), (50, "start", 3, 2, 10), (60, "end", 2, 2, 2),
        (62, "start", 2, 1, 8), (70, "end", 1, 1, 40), (110, "start", 1, 0, 10), (120, "end", 0, 0, 170),
        (290, "launch", 1, 1, 5), (295, "start", 1, 0, 10), (305, "end", 0, 0, None),
    ]


def test_queue_report(two):
    """Statistics over each stream's GPU window (issue 13 item 9: the window gpu-time
    and temporal use, from the first device event's start, not the first launch)."""
    s7, s8 = as_dicts(two.report("queue"))
    # stream 7 over its window [30,305] = 275 µs: depth 4 for 20, 3 for 10, 2 for 10, 1 for 65, 0 for 170
    assert (s7["stream"], s7["launches"], s7["window_us"]) == (7, 5, 275)
    assert s7["mean_depth"] == pytest.approx((4 * 20 + 3 * 10 + 2 * 10 + 1 * 65) / 275)
    assert (s7["p50_depth"], s7["p95_depth"], s7["max_depth"], s7["time_at_max_us"]) == (0, 4, 4, 20)
    assert s7["time_at_max_pct"] == pytest.approx(100 * 20 / 275)
    # pending at the change points (launches and starts): 1 2 3 4 3 2 1 0 1 0 (HTA's statistics)
    assert (s7["mean_pending"], s7["p50_pending"], s7["max_pending"]) == (pytest.approx(1.7), 1.5, 4)
    # stream 8 over [100,345] = 245 µs: depth 2 for 40, 1 for 30 + 23, 0 for 152
    assert (s8["stream"], s8["launches"], s8["window_us"]) == (8, 3, 245)
    assert s8["mean_depth"] == pytest.approx((53 + 2 * 40) / 245)
    assert (s8["p50_depth"], s8["p95_depth"], s8["max_depth"], s8["time_at_max_us"]) == (0, 2, 2, 40)
    # pending: 1 2 1 0 1 0
    assert (s8["mean_pending"], s8["p50_pending"], s8["max_pending"]) == (pytest.approx(5 / 6), 1.0, 2)
    # the same window as gpu-time's stream rows
    windows = {r["stream"]: r["window_us"] for r in as_dicts(two.report("gpu-time")) if r["scope"] == "stream"}
    assert windows == {7: 275, 8: 245}


@pytest.mark.slow  # every report on a trace of its own
def test_one_gpu_window_everywhere_and_unlaunched_work_said():
    """issue 13 item 9: device work with no launch call in the trace (fixtures/gpu_time/
    unlaunched_start.json: K0 [0,10] and a memset [15,20], then K1 [40,60] and K2 [70,80]
    launched at 30 and 50) is in the GPU window of every report: [0,80], where main's
    queue report started its window at the first launch (50 µs against gpu-time's 80);
    and every GPU report says that 2 of its 4 device events have no launch call."""
    with duckprof.connect() as s:
        s.load([str(FIX / "unlaunched_start.json")])
        note = ("unlaunched_start.json: 2 of 4 device events on device 0 have no launch call in the trace "
                "(launched before the profile began, or by a call it does not record): the GPU window and "
                "busy time count them, the queue depth does not")
        res = {name: s.report_result(name) for name in ("gpu-time", "temporal", "queue", "idle")}
        for name, r in res.items():
            assert note in r.notes, name
        dev, st = as_dicts(res["gpu-time"].relation)
        assert (dev["window_us"], st["window_us"], dev["busy_us"], dev["idle_us"]) == (80, 80, 45, 35)
        (t,) = as_dicts(res["temporal"].relation)
        assert (t["window_us"], t["idle_us"]) == (80, 35)
        (qr,) = as_dicts(res["queue"].relation)
        # depth 0 for [0,30), 1 for [30,50) + [60,80), 2 for [50,60)
        assert (qr["window_us"], qr["launches"]) == (80, 2)
        assert qr["mean_depth"] == pytest.approx((1 * 40 + 2 * 10) / 80)
        assert (qr["p50_depth"], qr["p95_depth"], qr["max_depth"], qr["time_at_max_us"]) == (1, 2, 2, 10)
        # the notes read these counts from the result (the main query's GPU windows)
        assert (qr["device_events"], qr["device_unlaunched"]) == (4, 2)
        assert (t["events"], t["unlaunched"]) == (4, 2)
        assert [(r["scope"], r["events"], r["unlaunched"]) for r in (dev, st)] == [("device", 4, 2), ("stream", 4, 2)]
        assert q(s, "SELECT scope, (start_ns - $t0) // 1000, window_ns // 1000, events, unlaunched "
                    "FROM gpu_windows ORDER BY scope", {"t0": T0}) == [("device", 0, 80, 4, 2), ("stream", 0, 80, 4, 2)]


def test_queue_notes_count_the_streams_and_devices_it_has_no_row_for(tmp_path):
    """unlaunched_start.json with its memset (no launch call) moved to a stream of its own,
    and a kernel with no launch call on device 1: queue lists stream 7 only (stream 9 and
    device 1 have nothing queued), its note still counts device 0's 4 events, 2 without a
    launch call (device_events / device_unlaunched: all the device's streams), and says
    that device 1 has no row; temporal's note counts the same from its own rows."""
    trace = json.loads((FIX / "unlaunched_start.json").read_text())
    for e in trace["traceEvents"]:
        if e.get("cat") == "gpu_memset":
            e["tid"] = e["args"]["stream"] = 9
    trace["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "K9", "pid": 1, "tid": 7, "ts": 1000000,
                                 "dur": 10, "args": {"device": 1, "stream": 7, "correlation": 900}})
    path = tmp_path / "split_streams.json"
    path.write_text(json.dumps(trace))
    with duckprof.connect() as s:
        s.load([str(path)])
        qres = s.report_result("queue")
        rows = as_dicts(qres.relation)
        assert [(r["device"], r["stream"], r["launches"], r["device_events"], r["device_unlaunched"])
                for r in rows] == [(0, 7, 2, 4, 2)]
        unlaunched = ("split_streams.json: {} of {} device events on device {} have no launch call in the trace "
                      "(launched before the profile began, or by a call it does not record): the GPU window and "
                      "busy time count them, the queue depth does not")
        assert sorted(qres.notes) == [unlaunched.format(2, 4, 0),
                                      "split_streams.json: no device event on device 1 is queued (none has a launch "
                                      "call the queue counts in the trace), so the device has no row"]
        tres = s.report_result("temporal")
        assert [(r["device"], r["events"], r["unlaunched"]) for r in as_dicts(tres.relation)] == [(0, 4, 2), (1, 1, 1)]
        assert sorted(tres.notes) == sorted([unlaunched.format(2, 4, 0), unlaunched.format(1, 1, 1)])
        # gpu-time: one note per device, from its device rows (not once per stream row)
        gres = s.report_result("gpu-time")
        assert [(r["device"], r["scope"], r["stream"], r["events"], r["unlaunched"])
                for r in as_dicts(gres.relation)] == [(0, "device", None, 4, 2), (0, "stream", 7, 3, 1),
                                                      (0, "stream", 9, 1, 1), (1, "device", None, 1, 1),
                                                      (1, "stream", 7, 1, 1)]
        assert sorted(gres.notes) == sorted([unlaunched.format(2, 4, 0), unlaunched.format(1, 1, 1)])


def test_device_queue_depth_and_drains(two):
    # all 8 launches on the device: depth climbs to 6 at 22, first 0 at 170 (C1 ends)
    series = q(two, """SELECT (ts_ns - $t0) // 1000, queue_depth FROM queue_depth(per_device := true)
                       ORDER BY seq""", {"t0": T0})
    assert max(d for _, d in series) == 6
    assert [t for t, d in series if d == 0] == [170, 305, 345]
    # BasicEvaluation walks back from the last zero (345) past the stretches peaking
    # at 1 to the one peaking at 6 (at 30, the latest point at 6): one interval [30, 345]
    assert q(two, "SELECT (start_ns - $t0) // 1000, (end_ns - $t0) // 1000, peak_depth FROM queue_drains",
             {"t0": T0}) == [(30, 345, 6)]


# -- idle ranking (BasicEvaluation: report idle --by event) --------------------------

def test_idle_ranking(two):
    rows = as_dicts(two.report("idle", by="event", limit=0))
    by_op = {r["op"]: r for r in rows}
    # queue empty before 12, in [170,290), [305,322) and after 345
    expect = {  # op: (dur, self, idle)
        "aten::early": (3, 3, 3),       # [1,4]: all before the first launch
        "aten::big": (50, 44, 2),       # [10,60]: [10,12); 6 launch calls of 1 µs
        "aten::slow": (200, 198, 120),  # [100,300]: [170,290)
        "aten::tail": (20, 19, 2),      # [320,340]: [320,322)
    }
    for op, (dur, self_, idle) in expect.items():
        r = by_op[op]
        assert (r["dur_us"], r["self_us"], r["gpu_idle_us"]) == (dur, self_, idle), op
        assert r["idle_pct"] == pytest.approx(100 * idle / dur), op
    # candidates overlap the drain [30,345]: all but aten::early
    cands = ["aten::big", "aten::slow", "aten::tail"]
    frac = [expect[o][2] / expect[o][0] for o in cands]
    self_ = [expect[o][1] for o in cands]
    z = lambda xs: [(x - statistics.mean(xs)) / statistics.stdev(xs) for x in xs]  # noqa: E731
    score = {o: a + 0.6 * b for o, a, b in zip(cands, z(frac), z(self_))}
    for o in cands:
        assert by_op[o]["score"] == pytest.approx(score[o]), o
    assert by_op["aten::early"]["score"] is None and by_op["aten::early"]["idle_rank"] is None
    assert [r["op"] for r in rows] == ["aten::slow", "aten::tail", "aten::big", "aten::early"]
    assert [r["idle_rank"] for r in rows] == [1, 2, 3, None]
    # innermost enclosing 'file.py(N): f' python function ('nn.Module: Linear_0' does not match)
    assert by_op["aten::slow"]["source"] == "model.py(42): forward"
    assert by_op["aten::big"]["source"] == "train.py(10): step"
    # --limit is per trace and device
    assert [r["op"] for r in as_dicts(two.report("idle", by="event", limit=2))] == ["aten::slow", "aten::tail"]


# -- report idle: who starves the GPU (issue 13 item 10) ----------------------------

def test_idle_by_name_who_starves_the_gpu():
    """fixtures/gpu_time/who_starves.json (layout in make_fixtures.py): GPU window [20,1060],
    busy [20,120] [445,460] [490,600] [850,900] [1040,1060], so idle gaps (µs)
      [120,445]: main 10 | zoom 300 | _device.py 2 | aten::to 2 | copy_ 2 | cudaMemcpyAsync 4 | copy_ 5
      [460,490]: copy_ 6 | aten::to 2 | _device.py 2 | main 10 | mm 2 | cudaLaunchKernel 2 | mm 6
      [600,850]: main 10 | zoom 188 | main 2 | mm 2 | cudaLaunchKernel 2 | mm 16 | main 20 | step 10
      [900,1040]: step 100 | step 10 | aten::late 2 | cudaLaunchKernel 2 | aten::late 16 | step 10
    (the innermost host event at each instant; 'step': only a ProfilerStep, which is left
    out: '(no host event)'). 745 µs in all, gpu-time's idle_us."""
    with duckprof.connect() as s:
        s.load([str(FIX / "who_starves.json")])
        zoom, main = "scipy/ndimage/_interpolation.py(700): zoom", "train.py(10): main"
        rows = as_dicts(s.report("idle", limit=0))
        assert [(r["kind"], r["name"], r["calls"], r["idle_us"]) for r in rows] == [
            ("python_function", zoom, 2, 488), ("none", "(no host event)", None, 130),
            ("python_function", main, 1, 52), ("cpu_op", "aten::mm", 3, 26), ("cpu_op", "aten::late", 1, 18),
            ("cpu_op", "aten::copy_", 1, 13), ("runtime", "cudaLaunchKernel", 4, 6), ("cpu_op", "aten::to", 1, 4),
            ("python_function", "torch/utils/_device.py(104): __torch_function__", 1, 4),
            ("runtime", "cudaMemcpyAsync", 1, 4)]
        (dev,) = [r for r in as_dicts(s.report("gpu-time")) if r["scope"] == "device"]
        assert sum(r["idle_us"] for r in rows) == dev["idle_us"] == 745
        by = {r["name"]: r for r in rows}
        assert by[zoom]["idle_share_pct"] == pytest.approx(100 * 488 / 745)
        assert (by[zoom]["max_call_us"], by["aten::mm"]["max_call_us"]) == (300, 18)
        # source: the innermost frame outside torch's files (not torch/utils/_device.py)
        assert by["aten::copy_"]["source"] == by["aten::to"]["source"] == main
        assert by[zoom]["source"] == zoom and by["aten::late"]["source"] is None
        assert [r["name"] for r in as_dicts(s.report("idle", limit=2))] == [zoom, "(no host event)"]
        # without the last step: window [20,900], idle 605; aten::late's idle was all after it
        rows = as_dicts(s.report("idle", limit=0, exclude_last_step=True))
        by = {r["name"]: r["idle_us"] for r in rows}
        assert sum(by.values()) == 605 and by["(no host event)"] == 10 and "aten::late" not in by
        assert by["cudaLaunchKernel"] == 4


@pytest.mark.slow  # a trace of its own; the quick run has test_idle_ranking
def test_idle_gaps_ended_by_unlaunched_work():
    """unlaunched_start.json: gaps [10,15] (ended by the memset, no launch call), [20,40]
    (ended by K1, launched by the host thread: nothing runs in [20,29), aten::mm [29,40)
    but cudaLaunchKernel [30,31)) and [60,70] (ended by K2: aten::mm ended at 55)."""
    with duckprof.connect() as s:
        s.load([str(FIX / "unlaunched_start.json")])
        rows = as_dicts(s.report("idle"))
        assert [(r["kind"], r["name"], r["idle_us"]) for r in rows] == [
            ("none", "(no host event)", 19), ("cpu_op", "aten::mm", 10), ("none", "(no launch call)", 5),
            ("runtime", "cudaLaunchKernel", 1)]
        # a device that never idles says so instead of an empty table
        s.load([str(FIX / "no_launches.json")], run="one")
        res = s.report_result("idle", run="one")
        assert res.relation.fetchall() == []
        assert "no_launches.json: device 0 was never idle in its GPU window (1 device event(s) back to back)" \
            in res.notes


@pytest.mark.slow  # a trace of its own; the quick run has test_idle_ranking
def test_idle_by_event_leaves_out_steps_and_the_last_step():
    """--by event (BasicEvaluation's single calls): no ProfilerStep row; with
    --exclude-last-step no op of the last step (its device work is gone, so it would
    read 100% idle: issue 13 item 8); source outside torch's files."""
    with duckprof.connect() as s:
        s.load([str(FIX / "who_starves.json")])
        rows = as_dicts(s.report("idle", by="event", limit=0))
        assert sorted(r["op"] for r in rows) == ["aten::copy_", "aten::late", "aten::mm", "aten::mm", "aten::mm",
                                                 "aten::to"]
        assert {r["op"]: r["source"] for r in rows if r["op"] != "aten::late"} == {
            "aten::copy_": "train.py(10): main", "aten::mm": "train.py(10): main", "aten::to": "train.py(10): main"}
        rows = as_dicts(s.report("idle", by="event", limit=0, exclude_last_step=True))
        assert "aten::late" not in {r["op"] for r in rows} and len(rows) == 5
        assert "aten::late" not in {r["op"] for r in as_dicts(s.report("idle", by="event", limit=0, hta=True))}


def _reference_drains(points):
    """torch.profiler._utils.BasicEvaluation.rank_events' loop, transcribed: points is
    the queue-depth series [(ts, depth)] in time order; returns [(start, end)]."""
    ql = list(reversed(points))
    qd = [d for _, d in ql]

    def first_zero(start):
        for k in range(start, len(qd)):
            if qd[k] <= 0:
                return k
        return None

    out, i = [], 0
    while i < len(qd):
        if qd[i] > 0:
            i += 1
            continue
        for j in range(i + 1, len(qd)):
            nxt = first_zero(j)
            seg = qd[j:nxt]
            peak = j + seg.index(max(seg)) if seg else None
            if peak is not None and qd[peak] >= 4:
                out.append((ql[peak][0], ql[i][0]))
                i = nxt if nxt is not None else i
                break
        i += 1
    return out


def _union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [tuple(x) for x in out]


def _random_trace(seed):
    """Bursts of launches on two streams separated by pauses, so the device queue
    rises and drains to 0 many times with peaks on both sides of 4."""
    rng = random.Random(seed)
    ev, t, corr = [], 0, 0
    stream_free = {7: 0, 8: 0}
    for _ in range(rng.randint(3, 12)):
        for _ in range(rng.randint(1, 8)):
            corr += 1
            t += rng.randint(1, 4)
            st = rng.choice((7, 8))
            start = max(t + rng.randint(1, 30), stream_free[st])
            end = start + rng.randint(1, 25)
            stream_free[st] = end
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t, "dur": 1, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": st, "ts": start,
                       "dur": end - start, "args": {"correlation": corr, "device": 0, "stream": st}})
        t = max(stream_free.values()) + rng.randint(0, 60) if rng.random() < 0.7 else t
    return {"traceEvents": ev}


@pytest.mark.slow  # 30 random traces, each its own run
def test_drains_match_basic_evaluation_loop(tmp_path):
    s = duckprof.connect()
    seeds = list(range(30))
    for seed in seeds:
        p = tmp_path / f"r{seed}.json"
        p.write_text(json.dumps(_random_trace(seed)))
        s.load([str(p)], run=f"r{seed}")
    ids = dict(q(s, "SELECT run, trace_id FROM traces"))
    series = {}
    for tid, ts, d in q(s, "SELECT trace_id, ts_ns, queue_depth FROM queue_depth(per_device := true) ORDER BY trace_id, seq"):
        series.setdefault(tid, []).append((ts, d))
    drains = {}
    for tid, a, b in q(s, "SELECT trace_id, start_ns, end_ns FROM queue_drains"):
        drains.setdefault(tid, []).append((a, b))
    nonempty = 0
    for seed in seeds:
        tid = ids[f"r{seed}"]
        ref = _reference_drains(series[tid])
        nonempty += bool(ref)
        assert _union(drains.get(tid, [])) == _union(ref), f"seed {seed}"
    assert nonempty >= 10  # the generator does produce drains
    s.close()


# -- CLI ------------------------------------------------------------------------

def _cli(*args):
    from typer.testing import CliRunner

    from duckprof import cli, cli_reports  # noqa: F401
    return CliRunner().invoke(cli.app, [str(a) for a in args])


# the quick run: each command once across these three tests
@pytest.mark.parametrize("name", slow_when(["idle", "gpu-time", "queue", "temporal"], {"gpu-time", "queue",
                                                                                      "temporal"}))
def test_cli_help_and_formats(name, tmp_path):
    r = _cli("report", name, "--help")
    assert r.exit_code == 0 and "Example: duckprof report" in r.output
    r = _cli("report", name, TWO, "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert rows and rows[0]["run"] == "default"
    r = _cli("report", name, TWO, "--format", "csv", "--output", tmp_path / "out.csv")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out.csv").read_text().count("\n") == len(rows) + 1
    r = _cli("report", name, TWO, "--format", "parquet")
    assert r.exit_code == 2 and "--output" in r.output


@pytest.mark.parametrize("name", slow_when(["idle", "gpu-time", "queue", "temporal"], {"idle", "queue", "gpu-time"}))
def test_cli_no_gpu(name):
    r = _cli("report", name, FIX / "cpu_only.json")
    assert r.exit_code == 0
    assert r.output.strip() == "no GPU activity in this trace"


@pytest.mark.slow  # CLI runs; the quick run has test_cli_no_gpu
def test_cli_no_launches():
    # a kernel with no launch call: gpu-time has a row, queue has none and says why
    r = _cli("report", "gpu-time", FIX / "no_launches.json", "--format", "json")
    assert r.exit_code == 0
    assert [(x["scope"], x["busy_us"]) for x in json.loads(r.stdout)] == [("device", 10), ("stream", 10)]
    r = _cli("report", "queue", FIX / "no_launches.json", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == []
    assert "no launch call in this trace matches its device activity" in r.stderr


@pytest.mark.parametrize("stem", slow_when(["cpu_only_rank34.json.gz", "a100_cpu_ops_no_distinfo.json.gz"],
                                          {"a100_cpu_ops_no_distinfo.json.gz"}))
@pytest.mark.parametrize("name", slow_when(["idle", "gpu-time", "queue", "temporal"], {"gpu-time", "temporal"}))
def test_cli_cpu_only_corpus_traces(name, stem):
    import os
    corpus = Path(os.environ.get("DUCKPROF_CORPUS", REPO.parent / "shared" / "traces"))
    if not (corpus / stem).exists():
        pytest.skip(f"no {stem} in {corpus}")
    r = _cli("report", name, corpus / stem)
    assert r.exit_code == 0 and r.stdout.strip() == "no GPU activity in this trace"


@pytest.mark.slow
def test_cli_db_and_run(tmp_path):
    db = tmp_path / "runs.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(TWO)], run="r1")
        s.load([str(FIX / "cpu_only.json")], run="cpu")
    r = _cli("report", "temporal", "--db", db, "--run", "r1", "--format", "json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)
    assert (row["run"], row["window_us"], row["idle_us"]) == ("r1", 315, 192)
    r = _cli("report", "queue", "--db", db, "--run", "cpu")
    assert r.exit_code == 0 and r.output.strip() == "no GPU activity in this trace (run 'cpu')"
    r = _cli("report", "gpu-time", "--db", db, "--run", "nope")
    assert r.exit_code == 2 and "no run named 'nope'" in r.output
    r = _cli("report", "gpu-time", "--db", db, "--run", "r1", "--device", "3")
    assert r.exit_code == 0 and r.output.strip() == "no GPU activity in this trace (device 3) (run 'r1')"
    r = _cli("report", "idle", TWO, "--limit", "-1")
    assert r.exit_code == 2 and "--limit" in r.output


def test_launch_call_ties_pick_one_row(tmp_path):
    """Two runtime calls of one correlation that start together (a driver call inside
    a runtime call): the stored launch call (sql/load/derived_launches.sql, which
    gpu_activity reads) is one row, the first in the file, all its columns from that
    row, whatever order DuckDB reads the rows in (here the derived rows are computed
    again with the runtime view read backwards, which made the columns disagree before)."""
    t = 1_000_000
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t, "dur": 5,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": 2, "ts": t, "dur": 4,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "K", "pid": 0, "tid": 7, "ts": t + 10, "dur": 10,
         "args": {"device": 0, "stream": 7, "correlation": 5}}]}
    with loaded_events(tmp_path, "tie.json", trace["traceEvents"]) as s:
        first = s.sql("SELECT min(event_id) FROM runtime").fetchall()[0][0]
        db = s.sql("SELECT current_database()").fetchall()[0][0]
        s.con.execute(f"CREATE TEMP VIEW runtime AS SELECT * FROM (SELECT * FROM {db}.main.runtime "
                      "ORDER BY event_id DESC)")
        s.con.execute("BEGIN TRANSACTION")
        session_mod.fill_derived(s.con, [1])
        s.con.execute("COMMIT")
        got = s.sql("SELECT launch_event_id, launch_name FROM gpu_activity").fetchall()
        assert got == [(first, "cudaLaunchKernel")]
        got = s.sql("SELECT launch_event_id, launch_name, launch_dur_ns, tid FROM launches").fetchall()
        assert got == [(first, "cudaLaunchKernel", 5 * US, 1)]


# gpu_idle_intervals' definition: the gaps between consecutive gpu_busy_intervals
GAPS_OF_BUSY_INTERVALS = """
    SELECT trace_id, device, scope, stream, start_ns, end_ns, next_event_id, next_launch_ts_ns
    FROM (SELECT trace_id, device, scope, stream,
                 lag(end_ns) OVER (PARTITION BY trace_id, device, scope, stream ORDER BY interval_no) AS start_ns,
                 start_ns AS end_ns, first_event_id AS next_event_id, first_launch_ts_ns AS next_launch_ts_ns
          FROM gpu_busy_intervals)
    WHERE start_ns IS NOT NULL
    ORDER BY ALL"""
IDLE_INTERVALS = """
    SELECT trace_id, device, scope, stream, start_ns, end_ns, next_event_id, next_launch_ts_ns
    FROM gpu_idle_intervals ORDER BY ALL"""


@pytest.mark.slow  # a trace of its own; the quick run has test_idle_intervals_and_categories
def test_idle_intervals_are_the_gaps_of_busy_intervals_with_backward_events(tmp_path):
    """gpu_idle_intervals finds each gap in one sorted pass: an event that starts after
    every earlier one ended opens a busy interval, and the gap before it starts where the
    earlier ones ended. That is the previous busy interval's end unless all of that
    interval's events end before they start (dur < 0, which a trace can hold): stream 7 has
    A [0,50], B starting at 60 with dur -20 (a busy interval [60,40] of its own), C [70,80]:
    the gap before C starts at B's interval's end, 40, not at A's 50. Stream 8 has no such
    event. Then random device events (ties, zero and negative durations) on three streams:
    the gaps equal those between consecutive gpu_busy_intervals rows."""
    t = 1_000_000
    ev = [("K", 7, 0, 50, 1), ("B", 7, 60, -20, 2), ("C", 7, 70, 10, 3),
          ("D", 8, 5, 10, 4), ("E", 8, 30, 10, 5)]
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": st, "ts": t + ts, "dur": d,
         "args": {"device": 0, "stream": st, "correlation": c}} for n, st, ts, d, c in ev] + [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t - 100 + c,
         "dur": 1, "args": {"correlation": c}} for *_, c in ev]}
    path = tmp_path / "backward.json"
    path.write_text(json.dumps(trace))
    rng = random.Random(7)
    events = []
    for c in range(1, 301):
        st = rng.choice([7, 8, 9])
        ts = rng.randrange(0, 3000)
        d = rng.choice([0, 1, 5, 20, 60]) if st != 9 or rng.random() < 0.8 else -rng.randrange(1, 30)
        events.append({"ph": "X", "cat": "kernel", "name": f"k{c}", "pid": 0, "tid": st, "ts": t + ts, "dur": d,
                       "args": {"device": 0, "stream": st, "correlation": c}})
        if rng.random() < 0.9:
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": t + ts - rng.randrange(0, 50), "dur": 1, "args": {"correlation": c}})
    rnd = tmp_path / "random.json"
    rnd.write_text(json.dumps({"traceEvents": events}))
    with duckprof.connect() as s:
        s.load([str(path)])
        got = q(s, "SELECT scope, stream, (start_ns - $t) // 1000, (end_ns - $t) // 1000 FROM gpu_idle_intervals "
                   "ORDER BY scope, stream, start_ns", {"t": t * US})
        assert got == [("device", None, 40, 70), ("device", None, 50, 60),
                       ("stream", 7, 40, 70), ("stream", 7, 50, 60), ("stream", 8, 15, 30)]
        assert q(s, IDLE_INTERVALS) == q(s, GAPS_OF_BUSY_INTERVALS)
        s.load([str(rnd)], run="random")
        idle = q(s, IDLE_INTERVALS)
        assert len(idle) > 50 and idle == q(s, GAPS_OF_BUSY_INTERVALS)


def test_launch_call_is_the_earliest_then_the_first_in_the_file(tmp_path):
    """The launch call of a correlation with several runtime calls: the one that starts
    first, of those the first in the file, every column from that call, in the
    launches view (stored at load) and in gpu_activity, which reads it. The earliest
    call is not the first in the file, so a call picked by file order fails."""
    t = 1_000_000
    calls = [("cudaLaunchKernel", 2), ("cuLaunchKernelEx", 0), ("cuLaunchKernel", 0), ("cudaLaunchKernelExC", 1)]
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": n, "pid": 1, "tid": 10 + i, "ts": t + dt, "dur": 5 + i,
         "args": {"correlation": 5}} for i, (n, dt) in enumerate(calls)] + [
        {"ph": "X", "cat": "kernel", "name": "K", "pid": 0, "tid": 7, "ts": t + 10, "dur": 10,
         "args": {"device": 0, "stream": 7, "correlation": 5}}]}
    with loaded_events(tmp_path, "calls.json", trace["traceEvents"]) as s:
        (second,) = s.sql("SELECT event_id FROM runtime WHERE name = 'cuLaunchKernelEx'").fetchall()[0]
        got = s.sql("SELECT launch_event_id, launch_name, launch_ts_ns FROM gpu_activity").fetchall()
        assert got == [(second, "cuLaunchKernelEx", t * US)]
        got = s.sql("SELECT launch_event_id, launch_name, launch_ts_ns, launch_dur_ns, pid, tid FROM launches").fetchall()
        assert got == [(second, "cuLaunchKernelEx", t * US, 6 * US, 1, 11)]


def test_idle_gap_goes_to_the_thread_of_the_first_launch_call(tmp_path):
    """report idle gives a gap to the thread of gpu_activity's launch call of the work
    ending it (looked up for the gaps only): K1's correlation has two calls starting
    together, on thread 1 (first in the file) and thread 2; the gap [10,50] before K1
    goes to thread 1: its cudaLaunchKernel [20,25] (5 µs) and aten::one around it (35 µs)."""
    t = 1_000_000
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::one", "pid": 1, "tid": 1, "ts": t - 10, "dur": 110},
          {"ph": "X", "cat": "cpu_op", "name": "aten::two", "pid": 1, "tid": 2, "ts": t - 10, "dur": 110},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t - 5, "dur": 2,
           "args": {"correlation": 4}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 20, "dur": 5,
           "args": {"correlation": 5}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": t + 20, "dur": 5,
           "args": {"correlation": 5}},
          {"ph": "X", "cat": "kernel", "name": "K0", "pid": 0, "tid": 7, "ts": t, "dur": 10,
           "args": {"device": 0, "stream": 7, "correlation": 4}},
          {"ph": "X", "cat": "kernel", "name": "K1", "pid": 0, "tid": 7, "ts": t + 50, "dur": 10,
           "args": {"device": 0, "stream": 7, "correlation": 5}}]
    with loaded_events(tmp_path, "two_threads.json", ev) as s:
        got = {(r["name"], r["idle_us"]) for r in as_dicts(s.report("idle"))}
        assert got == {("aten::one", 35), ("cudaLaunchKernel", 5)}


def test_buckets_of_a_window_stretched_by_a_stray_timestamp(tmp_path):
    """One kernel at ts 0 among epoch timestamps (1.7e15 us): the window is 1.7e18 ns,
    and bucket bounds as (w1 - w0) * i overflowed BIGINT (gpu-time/queue --buckets
    and the html timeline failed). The buckets still add up to the busy time."""
    kernel = lambda ts, dur, corr: {"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": ts,  # noqa: E731
                                    "dur": dur, "args": {"device": 0, "stream": 7, "correlation": corr}}
    path = tmp_path / "stray.json"
    launch = lambda ts, corr: {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,  # noqa: E731
                               "ts": ts, "dur": 1, "args": {"correlation": corr}}
    path.write_text(json.dumps({"traceEvents": [launch(0, 1), kernel(0, 1, 1), launch(1_699_999_999_999_990, 2),
                                                kernel(1_700_000_000_000_000, 5, 2)]}))
    with duckprof.connect() as s:
        s.load([str(path)])
        for buckets in (50, 300, 20_000):
            rel = s.report("gpu-time", buckets=buckets)
            rows = [r for r in (dict(zip(rel.columns, r)) for r in rel.fetchall()) if r["scope"] == "device"]
            assert len(rows) == buckets
            assert sum(r["busy_us"] for r in rows) == pytest.approx(6.0)
            assert rows[0]["busy_us"] == pytest.approx(1.0) and rows[-1]["busy_us"] == pytest.approx(5.0)
        assert len(s.report("queue", buckets=50).fetchall()) == 50  # one stream
        assert "<svg" in s.html().html


def test_tensor_cores_share_by_hand(tmp_path):
    """gpu-time's tensor_cores_pct and kernels' tensor_cores_used, by TensorBoard's rule (a name
    containing one of its patterns, case-sensitive): stream 7 runs sm80_xmma_gemm_f16 (TC) 30 µs
    and an elementwise kernel 10 µs: 75%; stream 8 volta_h884gemm (TC) 20 µs, HMMA_upper (no:
    'hmma' is lower-case in the rule) 20 µs and a 5 µs memcpy (not a kernel): 50%; the device
    (30 + 20) / 80 = 62.5%."""
    def k(name, ts, dur, stream, cat="kernel"):
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": stream, "correlation": ts}}
    events = [k("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32", 0, 30, 7),
              k("void at::native::elementwise_kernel<128, 4>", 40, 10, 7),
              k("volta_h884gemm_64x64_ldg8_nn", 0, 20, 8), k("HMMA_upper", 30, 20, 8),
              k("Memcpy HtoD (Pageable -> Device)", 60, 5, 8, cat="gpu_memcpy")]
    with loaded_events(tmp_path, "tc.json", events) as s:
        got = {(r["scope"], r["stream"]): r["tensor_cores_pct"] for r in as_dicts(s.report("gpu-time"))}
        used = {r["name"]: r["tensor_cores_used"] for r in as_dicts(s.report("kernels"))}
        flags = dict(q(s, "SELECT name, uses_tensor_cores FROM kernel_categories"))
    assert got == {("device", None): pytest.approx(62.5), ("stream", 7): pytest.approx(75.0),
                   ("stream", 8): pytest.approx(50.0)}
    assert used == {"sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32": True,
                    "void at::native::elementwise_kernel<128, 4>": False,
                    "volta_h884gemm_64x64_ldg8_nn": True, "HMMA_upper": False}
    assert flags == {**used, "Memcpy HtoD (Pageable -> Device)": False}
