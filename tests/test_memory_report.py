"""`report memory`: allocator peaks per device, per step, the operators that
allocate the most, and what is still allocated at the end.

fixtures/memory/memory.json (table in fixtures/memory/make_fixtures.py), by hand:
CPU: 5 events, 3 allocations (100 + 50 + 30 = 180 B), frees 100 + 50 = 150 B; Total
Allocated 100, 150, 50, 80, 30: peak 150 at t=36 (in ProfilerStep#1; the innermost
operator then is the inner aten::empty [35,40]), end 30; addr 3 (30 B) never freed.
CUDA 0: 3 events, allocated 1000 + 500, freed 1000; peak 1500 at t=130 in step 2
during aten::mm; reserved 2048; end 500; addr 11 (500 B) live.
By step: step 1 CPU: 3 events, +150 / -100, peak 150, end 50, grown 50 - 0 = 50;
step 2 CPU: the event at t=160 (no operator spans it): +30, level 80, grown 30;
step 2 CUDA: peak 1500 (aten::mm), end 500, grown 500. The free at t=250 is in no step.
Operators, as torch counts them (bytes of the [memory] events in [start, end], any
thread of the process; self = minus the children's): aten::empty: 100 + 50 = 150 (self 150);
aten::add [30,60]: +50 - 100 = -50, its child aten::empty 50 -> self -100; aten::mm:
device +1000 + 500 - 1000 = 500; ProfilerStep*: CPU 50 (step 1) + 30 (step 2) = 80;
step 1's children (aten::empty 100, aten::add -50) hold all its 50, step 2's child
aten::mm no CPU bytes, so self 0 + 30 = 30; device 500, all aten::mm's: self 0.
"""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import REPO, as_dicts, corpus_path, invoke, loaded, needs_corpus

import duckprof

MEM = REPO / "fixtures" / "memory" / "memory.json"


@pytest.fixture(scope="module")
def mem():
    with loaded(MEM) as s:
        yield s


def rows(s, **opts):
    return as_dicts(s.report("memory", **opts))


def test_peaks_by_hand(mem):
    cols = ["device_kind", "device", "events", "allocs", "allocated_bytes", "freed_bytes", "peak_allocated_bytes",
            "peak_at_us", "peak_step", "peak_op", "peak_reserved_bytes", "end_allocated_bytes", "live_allocs",
            "live_bytes"]
    assert [tuple(r[c] for c in cols) for r in rows(mem)] == [
        ("CPU", -1, 5, 3, 180, 150, 150, 36.0, 1, "aten::empty", 0, 30, 1, 30),
        ("CUDA", 0, 3, 2, 1500, 1000, 1500, 130.0, 2, "aten::mm", 2048, 500, 1, 500),
    ]


def test_by_step_by_hand(mem):
    cols = ["step", "device_kind", "events", "allocated_bytes", "freed_bytes", "peak_allocated_bytes", "peak_op",
            "end_allocated_bytes", "grown_bytes"]
    assert [tuple(r[c] for c in cols) for r in rows(mem, by_step=True)] == [
        (1, "CPU", 3, 150, 100, 150, "aten::empty", 50, 50),
        (2, "CPU", 1, 30, 0, 80, None, 80, 30),
        (2, "CUDA", 3, 1500, 1000, 1500, "aten::mm", 500, 500),
    ]


def test_ops_by_hand(mem):
    cols = ["name", "calls", "self_device_mem_bytes", "device_mem_bytes", "self_cpu_mem_bytes", "cpu_mem_bytes"]
    assert [tuple(r[c] for c in cols) for r in rows(mem, ops=True)] == [
        ("aten::mm", 1, 500, 500, 0, 0),
        ("aten::empty", 2, 0, 0, 150, 150),
        ("ProfilerStep*", 2, 0, 500, 30, 80),
        ("aten::add", 1, 0, 0, -100, -50),
    ]
    # report ops counts the same, and the free during no event at all is torch's '[memory]' row
    rel = mem.report("ops", limit=0)
    ops = {r[3]: dict(zip(rel.columns, r)) for r in rel.fetchall()}
    assert (ops["aten::add"]["cpu_mem_bytes"], ops["aten::add"]["self_cpu_mem_bytes"]) == (-50, -100)
    assert (ops["[memory]"]["count"], ops["[memory]"]["cpu_mem_bytes"], ops["[memory]"]["self_cpu_us"]) == (1, -50, 0.0)


def test_ops_allocations_by_hand(mem):
    """The allocations only (TensorBoard's allocation size and count): aten::mm allocates 1000 +
    500 device bytes (2; it frees 1000, not counted); aten::empty 100 + 50 CPU bytes (2 calls);
    aten::add [30,60] frees 100 and its child aten::empty allocates 50: total 50 in 1, self 0;
    ProfilerStep*: 100 + 50 (step 1) + 30 (step 2, in no operator) = 180 in 3, its children
    aten::empty (100) and aten::add (50) hold 150 of them: self 30 in 1; device 1500 in 2, all
    aten::mm's: self 0."""
    cols = ["name", "self_device_alloc_bytes", "device_alloc_bytes", "self_device_allocs", "device_allocs",
            "self_cpu_alloc_bytes", "cpu_alloc_bytes", "self_cpu_allocs", "cpu_allocs"]
    assert sorted(tuple(r[c] for c in cols) for r in rows(mem, ops=True, allocs=True)) == [
        ("ProfilerStep*", 0, 1500, 0, 2, 30, 180, 1, 3),
        ("aten::add", 0, 0, 0, 0, 0, 50, 0, 1),
        ("aten::empty", 0, 0, 0, 0, 150, 150, 2, 2),
        ("aten::mm", 1500, 1500, 2, 2, 0, 0, 0, 0),
    ]


def test_live_by_hand(mem):
    got = [(r["device_kind"], r["bytes"], r["at_us"], r["step"], r["op"], r["addr"]) for r in rows(mem, live=True)]
    assert got == [("CPU", 30, 160.0, 2, None, 3), ("CUDA", 500, 130.0, 2, "aten::mm", 11)]


@pytest.mark.parametrize("name", ["train", "ops", "labels", "labels_nostack", "threads", "bwd_thread", "intraop",
                                  "jit_fork", "dtypes", "autograd", "nn", "edge"])
def test_memory_ops_equal_torchs_columns(name):
    """On a torch-recorded profile_memory trace, report memory --ops holds torch's
    own CPU Mem / Self CPU Mem for every operator and annotation
    (fixtures/golden/ops, key_averages of the same run). In threads, bwd_thread and
    intraop aten::sum holds an aten::sum (merged into it, as torch does) that
    allocates: its bytes count once, in its parent's."""
    with gzip.open(REPO / "fixtures" / "golden" / "ops" / f"{name}.key_averages.json.gz", "rt") as f:
        gold = {(r["key"]): r for r in json.load(f)["plain"]}
    with duckprof.connect() as s:
        s.load([str(REPO / "fixtures" / "golden" / "ops" / f"{name}.json.gz")], run="r")
        got = rows(s, ops=True, limit=0)
    assert len(got) >= 1
    for r in got:
        g = gold[r["name"]]
        assert (r["cpu_mem_bytes"], r["self_cpu_mem_bytes"]) == (g["cpu_memory_usage"], g["self_cpu_memory_usage"]), \
            r["name"]
        assert r["calls"] == g["count"]


def test_ops_of_ranks_merged_into_one_file_count_their_own_process(tmp_path):
    """Two ranks' processes merged into one file (pid 1 and pid 2, the same
    events at the same times): a call counts the [memory] events of its own
    process only, so every operator has twice its calls and twice its bytes
    of the one-process trace, not four times."""
    events = json.loads(MEM.read_text())["traceEvents"]
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events + [dict(e, pid=2) for e in events]}))
    with loaded(merged) as s:
        got = [(r["name"], r["calls"], r["self_device_mem_bytes"], r["device_mem_bytes"], r["self_cpu_mem_bytes"],
                r["cpu_mem_bytes"]) for r in rows(s, ops=True)]
    assert got == [("aten::mm", 2, 1000, 1000, 0, 0),
                   ("aten::empty", 4, 0, 0, 300, 300),
                   ("ProfilerStep*", 4, 0, 1000, 60, 160),
                   ("aten::add", 2, 0, 0, -200, -100)]


def test_traces_without_memory_say_so(cli_app):
    res = invoke(cli_app, "report", "memory", REPO / "fixtures" / "steps" / "three_steps.json")
    assert res.exit_code == 0 and res.stdout.strip() == \
        "no [memory] events in this trace (record with profile_memory=True)"


@pytest.mark.slow
@needs_corpus
def test_2021_trace_without_totals_or_addresses():
    """v100 resnet50 (2021): no Total Allocated, no Addr: levels are the running sum
    of the bytes since the trace began; live allocations unknown (empty)."""
    with duckprof.connect() as s:
        s.load([str(corpus_path("v100_resnet50_workers0_2021.json.gz"))], run="r")
        res = s.report_result("memory")
        got = [dict(zip(res.relation.columns, r)) for r in res.relation.fetchall()]
        running = s.sql("""SELECT device_type, max(run) FROM (SELECT device_type, sum(bytes) OVER (PARTITION BY
                           device_type ORDER BY ts_ns, event_id) AS run FROM memory_events) GROUP BY 1 ORDER BY 1""")
        peaks = running.fetchall()
    assert [(r["device_kind"], r["peak_allocated_bytes"]) for r in got] == [("CPU", peaks[0][1]), ("CUDA", peaks[1][1])]
    assert all(r["live_allocs"] is None and r["peak_reserved_bytes"] is None for r in got)
    assert any("no 'Total Allocated'" in n for n in res.notes) and any("no addresses" in n for n in res.notes)


def test_ops_merge_past_a_dropped_sibling_as_report_ops(tmp_path):
    """Label 'lab' [0,100] holds 'lab' [10,50] (aten::empty [20,30] allocates 8 B at
    25) and profiler::_record_function_exit [60,61], a name torch drops before it
    builds the tree: the inner 'lab' is then its parent's only child and merged
    (torch's _remove_dup_nodes): one call of 8 B, as report ops counts it, not two
    of 16 B; the dropped name is no row."""
    def x(cat, name, ts, end):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": 1000 + ts, "dur": end - ts, "args": {}}
    ev = [x("user_annotation", "lab", 0, 100), x("user_annotation", "lab", 10, 50),
          x("cpu_op", "profiler::_record_function_exit", 60, 61), x("cpu_op", "aten::empty", 20, 30),
          {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1025,
           "args": {"Device Type": 0, "Device Id": -1, "Bytes": 8, "Total Allocated": 8, "Total Reserved": 0,
                    "Addr": 1}}]
    p = tmp_path / "dropped.json"
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    with loaded(p) as s:
        got = [(r["name"], r["calls"], r["self_cpu_mem_bytes"], r["cpu_mem_bytes"]) for r in rows(s, ops=True)]
        ops = {r["name"]: (r["count"], r["self_cpu_mem_bytes"], r["cpu_mem_bytes"]) for r in as_dicts(s.report("ops"))}
    assert got == [("aten::empty", 1, 8, 8), ("lab", 1, 0, 8)]
    assert {n: ops[n] for n in ("aten::empty", "lab")} == {"aten::empty": (1, 8, 8), "lab": (1, 0, 8)}


def test_curve_by_hand(mem):
    """--curve: every event's levels while a device has at most --buckets (100) events, µs after
    the trace's first event; the CPU's Total Reserved is written as 0 (make_fixtures.py)."""
    cols = ["device_kind", "device", "at_us", "events", "allocated_bytes", "reserved_bytes", "bucket"]
    assert [tuple(r[c] for c in cols) for r in rows(mem, curve=True)] == [
        ("CPU", -1, 12.0, 1, 100, 0, None), ("CPU", -1, 36.0, 1, 150, 0, None), ("CPU", -1, 50.0, 1, 50, 0, None),
        ("CPU", -1, 160.0, 1, 80, 0, None), ("CPU", -1, 250.0, 1, 30, 0, None),
        ("CUDA", 0, 120.0, 1, 1000, 2048, None), ("CUDA", 0, 130.0, 1, 1500, 2048, None),
        ("CUDA", 0, 140.0, 1, 500, 2048, None),
    ]


def test_curve_buckets_by_hand(mem):
    """--buckets 2: each device's span (CPU 12..250 µs, CUDA 120..140) in two equal halves
    (bucket = (t - first) * 2 // (span + 1 ns)): CPU t 12, 36, 50 | 160, 250: highest 150 at
    36, then 80 at 160, ending at 50 and 30; CUDA 120, 130 | 140: 1500 at 130 | 500."""
    cols = ["device_kind", "at_us", "events", "allocated_bytes", "reserved_bytes", "end_allocated_bytes", "bucket"]
    assert [tuple(r[c] for c in cols) for r in rows(mem, curve=True, buckets=2)] == [
        ("CPU", 36.0, 3, 150, 0, 50, 0), ("CPU", 160.0, 2, 80, 0, 30, 1),
        ("CUDA", 130.0, 2, 1500, 2048, 1500, 0), ("CUDA", 140.0, 1, 500, 2048, 500, 1),
    ]


def test_curve_of_many_events_is_bounded(tmp_path):
    """5,000 events on one GPU, a level rising by 1 kB per event up to 1,000 kB, then falling;
    the peak is event 999 (t = 999 µs). --buckets 100 (the default): 100 rows of 50 events
    each, the peak kept with its time; --buckets 0: every event."""
    ev = []
    for i in range(5000):
        level = (i + 1) * 1000 if i < 1000 else max(0, 1_000_000 - (i - 999) * 200)
        ev.append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": i,
                   "args": {"Device Type": 1, "Device Id": 0, "Addr": i, "Bytes": 1000,
                            "Total Allocated": level, "Total Reserved": 2_000_000}})
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    with loaded(path) as s:
        got = rows(s, curve=True)
        assert len(got) == 100 and {r["events"] for r in got} == {50}
        peak = max(got, key=lambda r: r["allocated_bytes"])
        assert (peak["allocated_bytes"], peak["at_us"], peak["bucket"]) == (1_000_000, 999.0, 19)
        assert len(rows(s, curve=True, buckets=0)) == 5000
