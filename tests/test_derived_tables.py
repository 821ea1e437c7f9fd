"""The derived tables (sql/load/derived_*.sql), filled at load: call_totals
against a direct (quadratic) computation on small traces. launches,
kernel_estimates and memory_events keep the rows their views computed before
(the report snapshots and tests/test_migration.py hold them to that)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO

import duckprof

FIX = REPO / "fixtures"


@pytest.fixture(scope="module")
def s():
    with duckprof.connect() as s:
        s.load([str(FIX / "gpu_time" / "two_streams.json"), str(FIX / "memory" / "memory.json"),
                str(FIX / "kernels" / "h100_two_kernels_one_op.json")], run="r")
        yield s


def test_call_memory_is_the_memory_events_inside_the_call(s):
    # every [memory] event at a time in [start, end] of the call, any thread; rows only for calls with some
    naive = s.sql("""
        SELECT c.trace_id, c.event_id, coalesce(sum(m.bytes) FILTER (WHERE m.device_type = 0), 0),
               coalesce(sum(m.bytes) FILTER (WHERE m.device_type = 1), 0)
        FROM host_events c JOIN memory_events m ON m.trace_id = c.trace_id AND m.ts_ns BETWEEN c.ts_ns AND c.end_ns
        GROUP BY ALL ORDER BY ALL""").fetchall()
    got = s.sql("SELECT trace_id, event_id, cpu_mem_bytes, device_mem_bytes FROM call_totals "
                "WHERE cpu_mem_bytes <> 0 OR device_mem_bytes <> 0 ORDER BY ALL").fetchall()
    assert got == naive
    assert len(got) == 6 and (2, 5, 30, 500) in got  # 30 CPU bytes and 500 device bytes inside call 5


def test_call_device_time_is_what_the_ops_inside_it_launched(s):
    # a cpu_op's device time: the kernels/memcpys/memsets whose launch call starts inside it on its thread
    naive = s.sql("""
        SELECT c.trace_id, c.event_id, sum(l.dur_ns)
        FROM cpu_ops c JOIN launches l ON l.trace_id = c.trace_id AND l.pid = c.pid AND l.tid = c.tid
         AND l.launch_ts_ns >= c.ts_ns AND l.launch_ts_ns < c.end_ns
        GROUP BY ALL HAVING sum(l.dur_ns) <> 0 ORDER BY ALL""").fetchall()
    got = s.sql("SELECT t.trace_id, t.event_id, t.device_ns FROM call_totals t "
                "SEMI JOIN cpu_ops c ON c.trace_id = t.trace_id AND c.event_id = t.event_id "
                "WHERE t.device_ns <> 0 ORDER BY ALL").fetchall()
    assert got == naive
    assert (3, 1, 650_000) in got  # aten::mm launched 650 us of kernels


def test_call_totals_at_the_ends_of_a_call(tmp_path):
    """Touching ops A [0, 100] and B [100, 200] us on one thread: B's launch
    (a runtime call at 150, its 5 us kernel) is B's device time and not A's
    ([start, end): B starts where A ends); a [memory] event at 100 is in both
    ([start, end] inclusive, as torch counts), one at 200 only in B."""
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "A", "pid": 1, "tid": 1, "ts": 1000000, "dur": 100, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "B", "pid": 1, "tid": 1, "ts": 1000100, "dur": 100, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1000150, "dur": 10,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000170, "dur": 5,
         "args": {"correlation": 7, "device": 0, "stream": 7}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1000100,
         "args": {"Bytes": 64, "Device Type": 0, "Device Id": -1, "Addr": 1}},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "ts": 1000200,
         "args": {"Bytes": 512, "Device Type": 1, "Device Id": 0, "Addr": 2}},
    ]
    path = tmp_path / "ends.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    with duckprof.connect() as s:
        s.load([str(path)], run="r")
        got = s.sql("SELECT c.name, t.device_ns, t.cpu_mem_bytes, t.device_mem_bytes FROM call_totals t "
                    "JOIN host_events c USING (trace_id, event_id) ORDER BY c.name").fetchall()
    assert got == [("A", 0, 64, 0), ("B", 5000, 64, 512)]  # the runtime call launched nothing of its own
