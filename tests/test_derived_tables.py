"""The derived tables (sql/load/derived_*.sql), filled at load: call_totals
against a direct (quadratic) computation on small traces. launches,
kernel_estimates and memory_events keep the rows their views computed before
(the report snapshots and tests/test_migration.py hold them to that). The
statements a load leaves out (session.DERIVED_FROM: no launches, no memory
events) would have stored nothing: every table equals what all four
statements store, on every kind of trace and every corpus trace."""

from __future__ import annotations

import json
import os

import pytest

from conftest import REPO, corpus_files, rows

import duckprof
from duckprof import session as session_mod, sqlfiles

FIX = REPO / "fixtures"

# a launch (runtime call, kernel) inside op B, and [memory] events: A [0, 100] and B [100, 200] us
ENDS_EVENTS = [
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


def _write_ends(path):
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ENDS_EVENTS}))
    return path


def _derived(s) -> dict:
    return {t: sorted(rows(s, f"SELECT * FROM {t}"), key=repr) for t in session_mod.DERIVED}


def _every_statement(s) -> dict:
    """The derived tables as all four statements fill them (none left out),
    for every trace of the session; the tables are then put back as they were."""
    ids = [t for (t,) in rows(s, "SELECT trace_id FROM traces")]
    con = s.con
    con.execute("BEGIN TRANSACTION")
    try:
        for table in session_mod.DERIVED:
            con.execute(f"DELETE FROM {table}")
            con.execute(sqlfiles.render(f"load/{table}.sql"), {"trace_ids": ids})
        return _derived(s)
    finally:
        con.execute("ROLLBACK")


def _loads_each(paths, monkeypatch) -> tuple:
    """Each file loaded on its own into one session: its derived tables, what
    every statement stores, and per load the derived statements that ran."""
    ran, real = [], sqlfiles.render

    def render(name, **kw):
        if name.startswith("load/derived_"):
            ran[-1].append(name[len("load/"):-len(".sql")])
        return real(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", render)
    with duckprof.connect() as s:
        for p in paths:
            ran.append([])
            s.load([str(p)], run=os.path.basename(str(p)))
            s.con  # fills what the load left to first use: this trace's derived tables alone
        monkeypatch.setattr(sqlfiles, "render", real)
        return _derived(s), _every_statement(s), ran


@pytest.fixture(scope="module")
def s():
    with duckprof.connect() as s:
        s.load([str(FIX / "gpu_time" / "two_streams.json"), str(FIX / "memory" / "memory.json"),
                str(FIX / "kernels" / "h100_two_kernels_one_op.json")], run="r")
        yield s


def test_call_memory_is_the_memory_events_inside_the_call(s):
    # every [memory] event at a time in [start, end] of the call, any thread of its process; rows only for
    # calls with some
    naive = s.sql("""
        SELECT c.trace_id, c.event_id, coalesce(sum(m.bytes) FILTER (WHERE m.device_type = 0), 0),
               coalesce(sum(m.bytes) FILTER (WHERE m.device_type = 1), 0)
        FROM host_events c JOIN memory_events m ON m.trace_id = c.trace_id AND m.pid = c.pid
         AND m.ts_ns BETWEEN c.ts_ns AND c.end_ns
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
    path = _write_ends(tmp_path / "ends.json")
    with duckprof.connect() as s:
        s.load([str(path)], run="r")
        got = s.sql("SELECT c.name, t.device_ns, t.cpu_mem_bytes, t.device_mem_bytes FROM call_totals t "
                    "JOIN host_events c USING (trace_id, event_id) ORDER BY c.name").fetchall()
    assert got == [("A", 0, 64, 0), ("B", 5000, 64, 512)]  # the runtime call launched nothing of its own


def _loaded(path, events, *queries) -> list:
    """The rows of each query on a session that loaded `events` (written to path)."""
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    with duckprof.connect() as s:
        s.load([str(path)], run="r")
        return [s.sql(q).fetchall() for q in queries]


def _op(name, ts, dur, pid=1, tid=1, cat="cpu_op", args=None):
    e = {"ph": "X", "cat": cat, "name": name, "ts": 1000000 + ts, "dur": dur, "args": args or {}}
    return {**e, **({"pid": pid} if pid is not None else {}), **({"tid": tid} if tid is not None else {})}


def _memory(ts, nbytes, device_type, pid=1, tid=1):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "ts": 1000000 + ts,
            **({"pid": pid} if pid is not None else {}), "tid": tid,
            "args": {"Bytes": nbytes, "Device Type": device_type, "Device Id": 0 if device_type else -1}}


def _launch(ts, corr, kernel_dur, pid=1):  # a runtime call at ts (5 us) and its kernel, well after the ops
    return [_op("cudaLaunchKernel", ts, 5, pid=pid, cat="cuda_runtime", args={"correlation": corr}),
            {"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": 1000200 + 10 * corr,
             "dur": kernel_dur, "args": {"correlation": corr, "device": 0, "stream": 7}}]


def test_call_totals_at_equal_times_without_pid_or_tid(tmp_path):
    """Ops on thread (1, 1), times in us: outer [0, 100]; A [0, 40] launches
    3 us; B [40, 70] launches 5 + 7 us; annotation U [40, 45]; C [70, 100]
    launches 11 us; Python function X [40, 100]. Device time: what the calls
    starting in [start, end) on the thread launched (each launch at its op's
    start: 0, 40, 70); memory:
    the [memory] events at times in [start, end], any thread of the process:
    +64 CPU at 0, +128 CPU (thread 2) and +1000 device at 40, -64 CPU at 70,
    +2000 device at 100; +8 CPU at 50 without pid. Ends that meet a start
    (A's end and B's start at 40) count the launch in B alone and the memory
    in both; calls with several launch or memory times inside and with one
    both computed. N has no pid (a process of its own: only the +8; no
    thread, so no device time although it launches 13 us), Q no tid
    (no device time, the process's memory), T2 is on thread 2, R ends before
    it starts (ts 100, dur -60: its end's totals minus its start's); the
    runtime calls have neither."""
    events = [_op("outer", 0, 100), _op("A", 0, 40), *_launch(10, 1, 3),
              _op("B", 40, 30), _op("U", 40, 5, cat="user_annotation"), *_launch(50, 2, 5), *_launch(60, 3, 7),
              _op("C", 70, 30), *_launch(80, 4, 11), _op("X", 40, 60, cat="python_function"),
              _op("T2", 0, 100, tid=2), _op("N", 0, 100, pid=None), *_launch(20, 5, 13, pid=None),
              _op("Q", 0, 100, tid=None), _op("R", 100, -60),
              _memory(0, 64, 0), _memory(40, 128, 0, tid=2), _memory(40, 1000, 1), _memory(70, -64, 0),
              _memory(100, 2000, 1), _memory(50, 8, 0, pid=None)]
    got, = _loaded(tmp_path / "equal_times.json", events,
                   "SELECT e.name, t.device_ns // 1000, t.cpu_mem_bytes, t.device_mem_bytes FROM call_totals t "
                   "JOIN events e USING (trace_id, event_id) ORDER BY e.name")
    assert got == [("A", 3, 64 + 128, 1000), ("B", 5 + 7, 128 - 64, 1000), ("C", 11, -64, 2000), ("N", 0, 8, 0),
                   ("Q", 0, 128, 3000), ("R", 3 - 26, 64 + 128 - 128, 1000 - 1000), ("T2", 0, 128, 3000),
                   ("U", 12, 128, 1000), ("X", 12 + 11, 128 - 64, 1000 + 2000), ("outer", 26, 128, 3000)]


def test_device_time_of_runtime_calls_sharing_a_correlation_counts_once(tmp_path):
    """Two runtime calls with one correlation (MTIA traces pair them) and one
    5 us kernel of it, both inside op A: the kernel is A's device time once,
    launched by the earlier call as the launches view links it, not once per
    call that shares its correlation."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "A", "pid": 1, "tid": 1, "ts": 1000000, "dur": 100, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1000010,
         "dur": 10, "args": {"correlation": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1000030,
         "dur": 10, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000050, "dur": 5,
         "args": {"correlation": 7, "device": 0, "stream": 7}}]
    got, launches = _loaded(tmp_path / "shared_correlation.json", events,
                            "SELECT c.name, c.ts_ns - 1000000000, t.device_ns FROM call_totals t "
                            "JOIN host_events c USING (trace_id, event_id) ORDER BY ALL",
                            "SELECT launch_ts_ns - 1000000000, dur_ns FROM launches")
    assert got == [("A", 0, 5000)]  # the runtime calls own no launch: their op does
    assert launches == [(10000, 5000)]


def test_statements_left_out_would_store_nothing(tmp_path, monkeypatch):
    """A CPU-only trace without [memory] events, one with them, a GPU trace
    without them, one with both, and one whose kernels trace_facts does not
    count as device activity, each loaded alone: the kernel estimates
    run only for the traces with launches, the call totals only for those
    with launches or memory events, and every derived table holds exactly
    what all four statements store."""
    ends = _write_ends(tmp_path / "ends.json")
    # kernels that trace_facts does not count (devices 0): one without dur, one without device or pid
    odd = tmp_path / "odd_kernels.json"
    odd.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "k_no_dur", "pid": 0, "tid": 7, "ts": 20, "args": {"device": 0}},
        {"ph": "X", "cat": "kernel", "name": "k_no_device", "pid": "GPU", "tid": "s", "ts": 30, "dur": 5,
         "args": {}}]}))
    paths = [FIX / "gpu_time" / "cpu_only.json", FIX / "memory" / "memory.json",
             FIX / "gpu_time" / "two_streams.json", ends, odd]
    got, want, ran = _loads_each(paths, monkeypatch)
    assert got == want
    assert ran == [["derived_launches", "derived_memory_events"],
                   ["derived_launches", "derived_memory_events", "derived_call_totals"],
                   list(session_mod.DERIVED), list(session_mod.DERIVED), list(session_mod.DERIVED)]
    # and each table has rows of the traces that need them
    assert {t: sorted({r[0] for r in v}) for t, v in got.items()} == {
        "derived_launches": [3, 4, 5], "derived_kernel_estimates": [3, 4, 5], "derived_memory_events": [2, 4],
        "derived_call_totals": [2, 3, 4]}


@pytest.mark.slow  # 20 loads
@pytest.mark.skipif(not corpus_files(), reason="no corpus")
def test_statements_left_out_would_store_nothing_on_the_corpus(monkeypatch):
    """Every corpus trace loaded alone: the same tables as every statement
    stores (CPU-only, MTIA, pre-Kineto and ROCm traces among them)."""
    got, want, ran = _loads_each(corpus_files(), monkeypatch)
    assert got == want
    assert any(len(r) < len(session_mod.DERIVED) for r in ran)  # some statement was left out
