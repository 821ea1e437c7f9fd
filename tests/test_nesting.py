"""Interval nesting (sql/load/nesting.sql): parent, depth, self time, enclosing op.

Expected values are hand-computed on fixtures/handmade/nesting3.json (three
levels, zero-duration events, siblings with equal timestamps, children that
start at their parent's start or end at its end, an identical interval) and,
on real traces, computed by an independent stack walk over the raw events.
"""

from __future__ import annotations

import decimal
import itertools
import json
import os
import tempfile
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import duckprof
from duckprof import load, session
from conftest import HANDMADE, canonical_cat, corpus_files, group_sizes, corpus_path, needs_corpus, read_trace, rows, trace_events

# device-side categories: not nested on host threads
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "mtia_ccp_events", "trace"}


def _us_to_ns(x) -> int:
    return int((decimal.Decimal(x) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))


def stack_nesting(events, containers=None):
    """Independent nesting by a stack walk, exact (Decimal) times.

    For every host 'X' event (by index into `events`): (parent index, depth,
    self ns), following torch's own tree building (EventList._populate_cpu_children):
    per (pid, tid), events are ordered by (start, longer first, file order);
    an event's parent is the innermost open event that contains it entirely
    (starts no later, ends no earlier, and ends after it starts); open events
    that it outlives are closed. `containers`: only events for which it
    returns True may be parents (used for 'innermost enclosing cpu_op');
    depth is then the number of enclosing containers. An event whose args say
    '"finished": false' (a RecordFunction not ended on its thread) is async in
    torch, left out of its tree: (None, 0, 0), no one's parent."""
    host = {}
    out = {}
    for i, e in enumerate(events):
        if e.get("ph") != "X" or e.get("ts") is None or canonical_cat(e) in DEVICE_CATS:
            continue
        dur = _us_to_ns(e.get("dur", 0))
        if dur < 0:
            continue
        if isinstance(e.get("args"), dict) and e["args"].get("finished") is False:
            out[i] = (None, 0, 0)
            continue
        ts = _us_to_ns(e["ts"])
        host.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append((ts, -dur, i, ts + dur))
    child_ns = {}
    for items in host.values():
        items.sort()
        stack = []  # (end, index)
        for ts, negdur, i, end in items:
            while stack and (stack[-1][0] <= ts or stack[-1][0] < end):
                stack.pop()
            parent = stack[-1] if stack else None
            out[i] = [parent[1] if parent else None, len(stack), -negdur]
            if parent:
                child_ns[parent[1]] = child_ns.get(parent[1], 0) + end - ts
            if containers is None or containers(events[i]):
                stack.append((end, i))
    for i, v in out.items():
        if isinstance(v, list):
            v[2] -= child_ns.get(i, 0)
    return {i: tuple(v) for i, v in out.items()}


def decimal_nesting(events):
    """name -> (parent name, depth, self ns), for fixtures with unique names."""
    n = stack_nesting(events)
    return {events[i]["name"]: (None if p is None else events[p]["name"], d, s) for i, (p, d, s) in n.items()}


# -- hand-computed -------------------------------------------------------------

# name: (parent, depth, self_ns, innermost enclosing cpu_op)
NESTING3 = {
    "A": (None, 0, 5000, None),     # 100 us - B1 40 - B2 30 - B3 25
    "B1": ("A", 1, 15000, None),    # 40 - C1 10 - C2 0 - C3 15 (A is a user_annotation)
    "C1": ("B1", 2, 10000, "B1"),   # starts with A and B1
    "C2": ("B1", 2, 0, "B1"),       # zero-length at C1's end: not inside C1
    "C3": ("B1", 2, 15000, "B1"),   # ends exactly at B1's end
    "B2": ("A", 1, 15000, None),    # starts exactly at B1's end; 30 - 0 - 0 - 0 - 5 - 10
    "Z1": ("B2", 2, 0, "B2"),       # two zero-length siblings at the same ts
    "Z2": ("B2", 2, 0, "B2"),
    "C4": ("B2", 2, 0, "B2"),
    "C5": ("B2", 2, 5000, "B2"),
    "C6": ("B2", 2, 10000, "B2"),   # starts at C5's end, ends at B2's end
    "B3": ("A", 1, 15000, None),    # ends exactly at A's end; 25 - R 10
    "R": ("B3", 2, 10000, "B3"),    # a runtime call
    "E": (None, 0, 0, None),        # starts exactly at A's end; F is identical and inside it
    "F": ("E", 1, 20000, "E"),
    "D": (None, 0, 0, None),        # zero-length at E's end: top level
    "G": (None, 0, 10000, None),    # another thread
}


@pytest.fixture(scope="module")
def nesting3():
    s = duckprof.connect()
    s.load([str(HANDMADE / "nesting3.json")])
    yield s
    s.close()


def test_hand_computed_nesting(nesting3):
    got = {n: (p, d, s, o) for n, p, d, s, o in rows(nesting3, """
        SELECT e.name, p.name, n.depth, n.self_ns, o.name
        FROM events n JOIN events e USING (trace_id, event_id)
        LEFT JOIN events p ON p.trace_id = n.trace_id AND p.event_id = n.parent_event_id
        LEFT JOIN events o ON o.trace_id = n.trace_id AND o.event_id = n.op_event_id
        WHERE n.depth IS NOT NULL""")}
    assert got == NESTING3


# A record_function not ended on its thread while profiling ('"finished": false':
# ended on another thread, or still open at the stop, where the trace ends it):
# torch leaves it out of its tree (async), and so does the nesting. us:
#   step  0-100 (annotation)      outer 10-60 (annotation)     aten::mm 15-25
#   unf   20-220, finished false  aten::add 30-50 > aten::empty 32-37
#   aten::relu 70-80 > aten::view 76-78     unf2 75-220, finished false (inside relu and unf)
#   aten::sum 150-160 (inside the unfinished ones only)
UNFINISHED_TRACE = [
    ("step", "user_annotation", 0, 100, None), ("outer", "user_annotation", 10, 50, None),
    ("aten::mm", "cpu_op", 15, 10, None), ("unf", "user_annotation", 20, 200, False),
    ("aten::add", "cpu_op", 30, 20, None), ("aten::empty", "cpu_op", 32, 5, None),
    ("aten::relu", "cpu_op", 70, 10, None), ("unf2", "user_annotation", 75, 145, False),
    ("aten::view", "cpu_op", 76, 2, None), ("aten::sum", "cpu_op", 150, 10, None)]
# name: (parent, depth, self_ns, innermost enclosing cpu_op), by hand
UNFINISHED_NESTING = {
    "step": (None, 0, 40000, None),            # 100 - outer 50 - relu 10 (unf is no child)
    "outer": ("step", 1, 20000, None),         # not closed at unf's start: 50 - mm 10 - add 20
    "aten::mm": ("outer", 2, 10000, None),
    "unf": (None, 0, 0, None),                 # no parent, no children, no self time
    "aten::add": ("outer", 2, 15000, None),    # outer's, not unf's
    "aten::empty": ("aten::add", 3, 5000, "aten::add"),
    "aten::relu": ("step", 1, 8000, None),
    "unf2": (None, 0, 0, None),
    "aten::view": ("aten::relu", 2, 2000, "aten::relu"),
    "aten::sum": (None, 0, 10000, None),       # inside the unfinished ones only: top level
}


@pytest.mark.parametrize("where", ["memory", "file"])
def test_unfinished_ranges_are_left_out_of_the_nesting_as_in_torch(tmp_path, where):
    """Loaded into a file (nesting computed from the staged events) and into
    memory (deferred: from the stored events): the hand-computed nesting, and
    the flag in events and the views. Before, 'unf' closed 'outer' at its start
    (outer's self 10 us), took add, relu and sum as children and had self time."""
    events = [{"ph": "X", "cat": c, "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
               "args": {"External id": i + 1, **({} if f is None else {"finished": f})}}
              for i, (n, c, ts, dur, f) in enumerate(UNFINISHED_TRACE)]
    path = tmp_path / "unfinished.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert {k: v[:3] for k, v in decimal_nesting(events).items()} == {k: v[:3] for k, v in UNFINISHED_NESTING.items()}
    with duckprof.connect(tmp_path / "u.duckdb" if where == "file" else None) as s:
        s.load([str(path)])
        got = {n: (p, d, sn, o) for n, p, d, sn, o in rows(s, """
            SELECT e.name, p.name, e.depth, e.self_ns, o.name
            FROM events e
            LEFT JOIN events p ON p.trace_id = e.trace_id AND p.event_id = e.parent_event_id
            LEFT JOIN events o ON o.trace_id = e.trace_id AND o.event_id = e.op_event_id
            WHERE e.depth IS NOT NULL""")}
        assert got == UNFINISHED_NESTING
        assert rows(s, "SELECT name, unfinished FROM events WHERE unfinished IS NOT NULL ORDER BY 1") == [
            ("unf", True), ("unf2", True)]
        assert rows(s, "SELECT name FROM user_annotations WHERE unfinished ORDER BY 1") == [("unf",), ("unf2",)]
        assert rows(s, "SELECT count(*) FROM cpu_ops WHERE unfinished") == [(0,)]


def test_views_expose_nesting(nesting3):
    ops = {n: (s, d, p) for n, s, d, p in rows(nesting3, """
        SELECT c.name, c.self_ns, c.depth, p.name FROM cpu_ops c
        LEFT JOIN events p ON p.trace_id = c.trace_id AND p.event_id = c.op_event_id""")}
    assert ops["B2"] == (15000, 1, None)
    assert ops["C6"] == (10000, 2, "B2")
    assert "A" not in ops  # a user_annotation, not a cpu_op
    assert rows(nesting3, "SELECT r.name, o.name FROM runtime r JOIN events o "
                          "ON o.trace_id = r.trace_id AND o.event_id = r.op_event_id") == [("R", "B3")]
    # the kernel is linked to R by correlation and to B3 through R's enclosing op
    assert rows(nesting3, "SELECT name, launch_name, op_name, op_link FROM launches") == [
        ("K", "R", "B3", "enclosing")]


def test_stack_reference_agrees_with_hand_values():
    """Guard for the reference implementation used on real traces."""
    events = trace_events(read_trace(HANDMADE / "nesting3.json", exact=True))
    assert decimal_nesting(events) == {k: v[:3] for k, v in NESTING3.items()}


def test_self_time_sums_to_duration(nesting3):
    """Per thread, the self times of top-level trees add up to their durations."""
    total_self, total_top = rows(nesting3, """
        SELECT sum(n.self_ns), sum(e.dur_ns) FILTER (WHERE n.depth = 0)
        FROM events n JOIN events e USING (trace_id, event_id) WHERE n.depth IS NOT NULL""")[0]
    assert total_self == total_top == 100000 + 20000 + 0 + 10000


# -- real traces ----------------------------------------------------------------

# every corpus file but the three largest (properly nested, 1 s each to parse
# here; their op links are checked in test_launches). b200, h100, mi300x and
# mtia have events that start inside another and outlive it.
BIG = {"a100_train_rank0.json.gz", "v100_resnet50_workers0_2021.json.gz", "v100_resnet50_workers4_2021.json.gz"}
REAL = [p.name for p in corpus_files() if p.name not in BIG] or ["<no corpus>"]


def op_ancestor(events, tree, i):
    """Nearest cpu_op ancestor of event i in the reference tree."""
    p = tree[i][0]
    while p is not None and canonical_cat(events[p]) != "cpu_op":
        p = tree[p][0]
    return p


@needs_corpus
@pytest.mark.parametrize("name", REAL)
def test_real_nesting_matches_stack_walk(corpus_session, name):
    s, ids, _ = corpus_session
    events = trace_events(read_trace(corpus_path(name), exact=True))
    tree = stack_nesting(events)
    expected = {i: v + (op_ancestor(events, tree, i),) for i, v in tree.items()}
    got = {eid - 1: (None if p is None else p - 1, d, self_ns, None if o is None else o - 1)
           for eid, p, d, self_ns, o in rows(
               s, "SELECT event_id, parent_event_id, depth, self_ns, op_event_id FROM events "
               "WHERE trace_id = $t AND depth IS NOT NULL",
               {"t": ids[name]})}
    assert len(got) == len(expected)
    diff = {i: (got.get(i), v) for i, v in expected.items() if got.get(i) != v}
    assert not diff, f"{len(diff)} events differ (got, expected), e.g. {sorted(diff.items())[:3]}"


@needs_corpus
def test_profiler_step_self_time_with_stack(corpus_session):
    """h100_vit_inference: ProfilerStep#6 (event 0, 7894.065 us) starts inside
    the python frame that opens it (`_record_function_enter_new`) and outlives
    it. Like torch, its parent is the innermost frame that contains it
    entirely (run_torch_profiler), and its children are the step's work:
    is_available 26.510 + synchronize 51.111 + run_action 7750.803 us, so its
    self time is 7894.065 - 7828.424 = 65.641 us. (Counting none of them would
    make it the whole step.)"""
    s, ids, _ = corpus_session
    t = ids["h100_vit_inference.json.gz"]
    got = rows(s, """
        SELECT e.name, n.self_ns, e.dur_ns, p.name, n.depth
        FROM events n JOIN events e USING (trace_id, event_id)
        JOIN events p ON p.trace_id = n.trace_id AND p.event_id = n.parent_event_id
        WHERE n.trace_id = $t AND n.event_id = 1""", {"t": t})
    assert got == [("ProfilerStep#6", 65641, 7894065,
                    "moca/library/profiling/profile.py(34): run_torch_profiler", 10)]
    children = rows(s, """
        SELECT e.name, e.dur_ns FROM events e
        WHERE e.trace_id = $t AND e.parent_event_id = 1 ORDER BY e.ts_ns""", {"t": t})
    assert children == [("torch/cuda/__init__.py(116): is_available", 26510),
                        ("torch/cuda/__init__.py(975): synchronize", 51111),
                        ("moca/library/model_hub/entry_point.py(106): run_action", 7750803)]


@pytest.mark.parametrize("options", [dict(stack=3),  # the quick run; test_timestamps has epoch timestamps
                                     pytest.param(dict(serving=True, epoch_ts=True), marks=pytest.mark.slow)],
                         ids=["with_stack", "serving_epoch_ts"])
@pytest.mark.parametrize("block", [None, 3], ids=["", "blocks_of_3"])
@pytest.mark.parametrize("deferred", [True, False], ids=["deferred", "at_load"])
def test_synthetic_stack_traces_match_stack_walk(tmp_path, monkeypatch, options, block, deferred):
    """Synthetic with_stack traces (duckprof.synth: python frames around the
    ops, a frame crossing every ProfilerStep#N; with epoch_ts, fractional
    absolute timestamps that need exact_ts.sql) nest as the reference stack
    walk says, over exact Decimal times. With blocks of 3 positions, each
    step's crossed frame is closed by a search over many blocks. deferred:
    the in-memory load leaves the nesting to first use, which nests the
    stored events; at_load: the session's connection taken before the load,
    which then nests the staged events."""
    from duckprof.synth import generate

    if block:
        monkeypatch.setattr(load, "NESTING_BLOCK", block)

    path = str(tmp_path / "t.json")
    generate(path, events=2500, seed=3, **options)
    events = trace_events(read_trace(path, exact=True))
    tree = stack_nesting(events)
    expected = {i: v + (op_ancestor(events, tree, i),) for i, v in tree.items()}
    with duckprof.connect() as s:
        if not deferred:
            s.con
        s.load([path])
        assert (session.NESTING in s._deferred) == deferred
        got = {eid - 1: (None if p is None else p - 1, d, self_ns, None if o is None else o - 1)
               for eid, p, d, self_ns, o in rows(
                   s, "SELECT event_id, parent_event_id, depth, self_ns, op_event_id FROM events "
                      "WHERE depth IS NOT NULL")}
    crossed = [i for i, e in enumerate(events) if e["name"].startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation"]
    # the step is not a child of the frame that crosses it (it outlives it)
    assert crossed and all(got[i][0] is None or events[got[i][0]]["name"] != "torch/autograd/profiler.py(754): __enter__"
                           for i in crossed)
    assert len(got) == len(expected)
    diff = {i: (got.get(i), v) for i, v in expected.items() if got.get(i) != v}
    assert not diff, f"{len(diff)} events differ (got, expected), e.g. {sorted(diff.items())[:3]}"


def nesting_renders(monkeypatch, option: str) -> list:
    """The value of `option` in every rendering of load/nesting.sql from now on
    (which variant of the walk the load chose)."""
    from duckprof import sqlfiles

    seen, render = [], sqlfiles.render

    def spy(name, **kw):
        if name == "load/nesting.sql":
            seen.append(kw[option])
        return render(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", spy)
    return seen


def test_with_stack_traces_are_nested_in_one_pass(tmp_path, monkeypatch):
    """A trace with python_function events is nested by one statement that
    looks for crossings on every thread (nesting_crossing.sql -> crossing =
    'all'); one without them by the cheaper pass, and again only for the
    threads that cross ('check', then 'threads'): the with_stack saving, kept."""
    from duckprof.synth import generate

    modes = nesting_renders(monkeypatch, "crossing")
    stack, plain = str(tmp_path / "stack.json"), str(tmp_path / "plain.json")
    generate(stack, events=1500, seed=1, stack=2)
    with open(plain, "w") as f:  # an event crossing another, no python frames
        json.dump({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": 4}
                                   for n, ts in (("a", 0), ("b", 2))]}, f)
    for path, expected in ((stack, ["all"]), (plain, ["check", "threads"])):
        modes.clear()
        with duckprof.connect() as s:
            s.load([path])
            assert rows(s, "SELECT count(*) FROM events WHERE depth < 0") == [(0,)]
        assert modes == expected, path


def test_a_group_of_small_traces_is_looked_at_for_crossings(tmp_path, monkeypatch):
    """Small traces parsed together (a group, stage_events.sql grouped) are
    looked at whole by nesting_crossing.sql (the group's view, its files told
    apart by src): a group holding one with_stack trace is nested in one
    pass ('all'), a group of two plain traces, one with a crossing event, by
    'check' then 'threads'; the rows have no depth -1 either way."""
    from duckprof.synth import generate

    modes = nesting_renders(monkeypatch, "crossing")
    groups = group_sizes(monkeypatch)
    stack, plain, other = (str(tmp_path / f) for f in ("stack.json", "plain.json", "other.json"))
    generate(stack, events=1500, seed=1, stack=2)
    for path, crossing in ((plain, True), (other, False)):
        with open(path, "w") as f:  # b starts inside a and outlives it (no python frames)
            json.dump({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": ts,
                                        "dur": 4 if crossing else 1} for n, ts in (("a", 0), ("b", 2))]}, f)
    for paths, expected in (([stack, plain], ["all"]), ([plain, other], ["check", "threads"])):
        modes.clear()
        groups.clear()
        with duckprof.connect() as s:
            s.load(paths)
            assert rows(s, "SELECT count(*) FROM events WHERE depth < 0") == [(0,)]
            assert rows(s, "SELECT count(*) FROM events WHERE parent_event_id IS NOT NULL") == (
                rows(s, "SELECT count(*) FROM events WHERE depth > 0"))
        assert groups == [2], paths  # parsed as one group
        assert modes == expected, paths


def test_crossing_found_by_the_step_before_the_frame_ends(tmp_path, monkeypatch):
    """nesting_crossing.sql checks each python frame against one step only:
    the last one on its thread that starts before the frame ends. A frame
    that holds a whole step and then crosses the next one is found (the step
    right after the frame's start is not the one it crosses), so the trace is
    nested in one pass; a frame that ends where a step begins, or inside a
    step that started first, crosses nothing."""
    modes = nesting_renders(monkeypatch, "crossing")

    def trace(frame_ts, frame_dur):
        return {"traceEvents": [
            {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": frame_ts, "dur": frame_dur},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 2, "dur": 2},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 8, "dur": 12}]}
    # [0, 10) holds step 1 and crosses step 2; [3, 10) starts inside step 1
    # and crosses step 2; [0, 8) ends where step 2 begins; [9, 12) is inside
    # step 2
    for (ts, dur), expected in (((0, 10), "all"), ((3, 7), "all"), ((0, 8), "check"), ((9, 3), "check")):
        path = str(tmp_path / f"t{ts}_{dur}.json")
        with open(path, "w") as f:
            json.dump(trace(ts, dur), f)
        modes.clear()
        with duckprof.connect() as s:
            s.load([path])
            assert rows(s, "SELECT count(*) FROM events WHERE depth < 0") == [(0,)]
        assert modes[0] == expected, (ts, dur)


def test_crossing_found_at_any_user_annotation(tmp_path, monkeypatch):
    """The python frame that opens a record_function label (torch's
    _record_function_enter_new) starts before the label and ends inside it, for
    every label, not only ProfilerStep#N: a trace whose frame crosses an
    optimizer's or a user's label, in either spelling of the category, is
    nested in one pass ('all'); a frame crossing a cpu_op only is left to the
    second pass, and a label the frame holds whole crosses nothing."""
    modes = nesting_renders(monkeypatch, "crossing")

    def trace(label_cat, label_name, label_ts):
        return {"traceEvents": [
            {"ph": "X", "cat": "python_function", "name": "<built-in method _record_function_enter_new>",
             "pid": 1, "tid": 1, "ts": 0, "dur": 5},
            {"ph": "X", "cat": label_cat, "name": label_name, "pid": 1, "tid": 1, "ts": label_ts, "dur": 20}]}
    for (cat, name, ts), expected in ((("user_annotation", "Optimizer.step#SGD.step", 3), ["all"]),
                                      (("User Annotation", "my label", 3), ["all"]),
                                      (("cpu_op", "aten::mm", 3), ["check", "threads"]),
                                      (("user_annotation", "inside", -1), ["check"])):
        path = str(tmp_path / "t.json")
        with open(path, "w") as f:
            json.dump(trace(cat, name, ts), f)
        modes.clear()
        with duckprof.connect() as s:
            s.load([path])
            assert rows(s, "SELECT count(*) FROM events WHERE depth < 0") == [(0,)]
            crossed = rows(s, "SELECT count(*) FROM events WHERE depth = 1")
        assert modes == expected, (cat, name, ts)
        assert crossed == [(0 if ts == 3 else 1,)], (cat, name, ts)


@pytest.mark.slow  # four loads
@pytest.mark.parametrize("with_stack", [False, True])
@pytest.mark.parametrize("deferred", [True, False], ids=["deferred", "at_load"])
def test_packed_sort_key_and_its_fallback(tmp_path, monkeypatch, with_stack, deferred):
    """nesting.sql's walk sorts by one packed HUGEINT key when the batch's time
    span, durations and event ids fit in it; a trace spanning 8e15 us (an
    event of that length, as a broken clock writes) does not fit, and is
    nested with the six keys instead: same rules (ties in file order, a
    zero-length event at its parent's end outside it). with_stack: a python
    frame F crosses a label L on a second thread, so the batch is nested in
    one pass that looks for crossings (its key has a field more), F closed
    where L starts. deferred: nested at first use (the statement that fails
    runs before the fill's transaction), or at load."""
    modes = nesting_renders(monkeypatch, "packed")
    events = [("A", "cpu_op", 0, 8e15, 1), ("B", "cpu_op", 1, 2, 1), ("C", "user_annotation", 1, 2, 1),
              ("D", "cpu_op", 3, 0, 1)]
    expected = [("A", None, 0, 8 * 10**18 - 2000, None), ("B", "A", 1, 0, "A"), ("C", "B", 2, 2000, "B"),
                ("D", "A", 1, 0, "A")]
    if with_stack:
        events += [("F", "python_function", 0, 2, 2), ("G", "cpu_op", 0.5, 0.25, 2), ("L", "user_annotation", 1, 5, 2)]
        expected += [("F", None, 0, 1750, None), ("G", "F", 1, 250, None), ("L", None, 0, 5000, None)]
    for span, packed in ((8e15, [True, False]), (100, [True])):
        path = str(tmp_path / f"t{span}.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": [{"ph": "X", "cat": c, "name": n, "pid": 1, "tid": tid, "ts": ts,
                                        "dur": span if n == "A" else dur} for n, c, ts, dur, tid in events]}, f)
        modes.clear()
        with duckprof.connect() as s:
            if not deferred:
                s.con
            s.load([path])
            got = rows(s, "SELECT e.name, p.name, e.depth, e.self_ns, o.name FROM events e "
                          "LEFT JOIN events p ON p.event_id = e.parent_event_id "
                          "LEFT JOIN events o ON o.event_id = e.op_event_id ORDER BY e.name")
        a_self = int(span * 1000) - 2000
        assert got == [(expected[0][0], None, 0, a_self, None), *expected[1:]], span
        assert modes == packed, span


# -- random traces ----------------------------------------------------------------

# Small integer times make ties (equal starts, equal ends, zero lengths, a child
# ending where its parent ends) common: the ordering rules of nesting.sql.
_interval = st.tuples(st.integers(0, 12), st.integers(0, 6), st.sampled_from(["cpu_op", "user_annotation"]),
                      st.integers(0, 1))


@pytest.fixture(scope="module")
def random_session():
    """One session for every example of the property test below (a new
    connection per example took 0.2 s of its 0.3 s): each example is loaded
    as a run of its own, and its traces are read back by trace_id."""
    s = duckprof.connect()
    yield s
    s.close()


_example = itertools.count()


def _nesting_of(s, traces):
    """Load each event list as a trace file of its own, all in one load into
    session `s`; returns, per trace, {event index: (parent index, depth,
    self ns, op index)}."""
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for k, events in enumerate(traces):
            paths.append(os.path.join(d, f"t{k}.json"))
            with open(paths[-1], "w") as f:
                # traceName keeps equal event lists apart: a run skips a file whose bytes it holds
                json.dump({"traceName": f"t{k}", "traceEvents": events}, f)
        report = s.load(paths, run=f"random{next(_example)}")
    ids = {os.path.basename(f.path): f.trace_id for f in report.files if not f.skipped}
    assert len(ids) == len(traces)
    return [{eid - 1: (None if p is None else p - 1, dep, self_ns, None if o is None else o - 1)
             for eid, p, dep, self_ns, o in rows(
                 s, "SELECT event_id, parent_event_id, depth, self_ns, op_event_id FROM events "
                  "WHERE trace_id = $t AND depth IS NOT NULL",
                 {"t": ids[f"t{k}.json"]})}
            for k in range(len(traces))]


_CROSSING_EXAMPLE = [
    # tid 0: an identical pair, a child sharing the start, one sharing the end, zero-length
    # events inside and at the end, and one that starts inside and outlives them (crossing)
    [(0, 6, "cpu_op", 0), (0, 6, "cpu_op", 0), (0, 2, "user_annotation", 0), (4, 2, "cpu_op", 0),
     (6, 0, "cpu_op", 0), (2, 0, "user_annotation", 0), (3, 5, "cpu_op", 0),
     # tid 1: zero-length at a parent's start, a crossing pair, equal zero-length siblings
     (1, 3, "user_annotation", 1), (1, 0, "cpu_op", 1), (2, 3, "cpu_op", 1), (5, 0, "cpu_op", 1),
     (5, 0, "cpu_op", 1)],
    [(0, 0, "cpu_op", 0)],
]


# Each example is 4 to 8 random traces loaded together, so the default 20
# examples check about 100 traces (the property test used to check 60, one
# session each). Run longer with NESTING_EXAMPLES=500.
@settings(max_examples=int(os.environ.get("NESTING_EXAMPLES", 20)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.slow
@given(st.lists(st.lists(_interval, min_size=1, max_size=14), min_size=4, max_size=8), st.booleans(),
       st.sampled_from([1, 2, 3, load.NESTING_BLOCK]))
@example(_CROSSING_EXAMPLE, False, load.NESTING_BLOCK)
@example(_CROSSING_EXAMPLE, True, load.NESTING_BLOCK)
@example(_CROSSING_EXAMPLE, True, 2)
def test_random_intervals_match_stack_walk(random_session, traces, with_stack, block):
    """Arbitrary intervals on two threads (nested, tied, zero-length and
    crossing ones) nest exactly as the reference stack walk says. An example
    is several such traces, loaded together as a new run of one session.
    with_stack: the user_annotations are python_functions instead, and a
    third thread holds a ProfilerStep#1 that a python frame crosses, which
    makes the loader look for crossings on every thread in one pass
    (nesting_crossing.sql); otherwise it redoes the threads that cross.
    block: how many positions nesting.sql's search for a crossed event's
    first crosser takes at once (small ones make the ranges span blocks)."""
    events_of, expected = [], []
    for intervals in traces:
        events = [{"ph": "X", "cat": "python_function" if with_stack and cat == "user_annotation" else cat,
                   "name": f"e{i}", "pid": 1, "tid": tid, "ts": ts, "dur": dur}
                  for i, (ts, dur, cat, tid) in enumerate(intervals)]
        if with_stack:
            events += [{"ph": "X", "cat": "python_function", "name": "enter", "pid": 1, "tid": 2, "ts": 0, "dur": 3},
                       {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 2,
                        "ts": 1, "dur": 10}]
        tree = stack_nesting(events)
        events_of.append(events)
        expected.append({i: v + (op_ancestor(events, tree, i),) for i, v in tree.items()})
    with mock.patch.object(load, "NESTING_BLOCK", block):
        got = _nesting_of(random_session, events_of)
    for k, intervals in enumerate(traces):
        assert got[k] == expected[k], f"trace {k} of the example: {intervals}"


@pytest.mark.parametrize("where", ["memory", "file", "cli"])
def test_a_batch_of_traces_is_nested_with_asof_joins(tmp_path, monkeypatch, cli_app, where):
    """DuckDB runs an ASOF join as a nested loop when it estimates its left
    side at fewer than asof_loop_join_threshold rows (64 by default), and it
    estimates a staged batch of small traces so: nesting.sql's crossing search
    (started ASOF JOIN started) then compared every pair of a thread's events.
    b200_eager_stack batched with backward_thread_minimal took 10.9 CPU-s to
    nest, 0.5 each alone. Every connection duckprof opens sets the threshold
    to 0 (dbfile.plan_settings): the plan has the ASOF join, on every load
    path (a session's connection in memory or on a file, the CLI's load)."""
    from conftest import JoinsExplained, invoke
    from duckprof.synth import generate

    joins = []
    nest = load.nest_host_events

    def explained(con, *a, **kw):
        w = JoinsExplained(con, lambda sql: sql.lstrip().startswith("-- Interval nesting"))
        try:
            return nest(w, *a, **kw)
        finally:
            joins.extend(w.joins)

    monkeypatch.setattr(load, "nest_host_events", explained)
    stack, plain = str(tmp_path / "stack.json"), str(tmp_path / "plain.json")
    generate(stack, events=1500, seed=1, stack=2)
    with open(plain, "w") as f:
        json.dump({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}, f)
    if where == "cli":
        assert invoke(cli_app, "load", stack, plain, "--db", tmp_path / "c.duckdb", "-q").exit_code == 0
    else:
        with duckprof.connect(tmp_path / "f.duckdb" if where == "file" else None) as s:
            s.con  # in memory: nest at load (not at first use)
            s.load([stack, plain])
    assert len(joins) == 1  # one batch, with crossings looked for ('all')
    assert "Asof Join" in joins[0] and "Nested Loop Join" not in joins[0], joins
