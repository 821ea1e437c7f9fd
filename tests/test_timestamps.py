"""Timestamps are stored as exact integer nanoseconds.

- fractional microseconds relative to baseTimeNanoseconds (the modern Kineto
  format): exact, checked against hand-computed values and, on a real trace,
  against Decimal arithmetic on the raw text;
- fractional absolute microseconds (~1.7e15 us, no baseTimeNanoseconds, some
  2023 Kineto versions): exact as well (a double alone would be off by up to
  0.125 us there); and in any case never worse than the documented limit
  (0.25 us, a double's ulp at 1.7e15), no negative duration, and nesting equal
  to the one computed exactly with Decimal.
"""

from __future__ import annotations

import decimal

import pytest

import duckprof
from conftest import HANDMADE, corpus_path, needs_corpus, read_trace, rows, scalar, trace_events
from test_nesting import decimal_nesting

BASE = 1711964646000000000

# name -> (ts_ns, dur_ns, end_ns), computed by hand from fixtures/handmade/fractional_base.json
FRACTIONAL_BASE_EXPECTED = {
    "one_ns": (1711964646000000001, 1, 1711964646000000002),
    "halves": (1711964646000001500, 2250, 1711964646000003750),
    "integers": (1711964646000012000, 3000, 1711964646000015000),
    "inexact_binary": (1711964646000000290, 100, 1711964646000000390),
    "exponent": (1711964646001500000, 25, 1711964646001500025),          # 1.5e3 us, 2.5E-2 us
    "nccl_like": (1716423322522690655, 156777, 1716423322522847432),     # 4458676522690.655 us
    "just_below_2p43": (1720760739022207999, 999, 1720760739022208998),  # 8796093022207.999 us
    "point_999": (1711964646000099999, 999, 1711964646000100998),
    "zero_dur": (1711964646000100000, 0, 1711964646000100000),
    "instant": (1711964646000007007, None, None),
    "thread_name": (None, None, None),
}


@pytest.fixture(scope="module")
def fractional_base():
    s = duckprof.connect()
    s.load([str(HANDMADE / "fractional_base.json")])
    yield s
    s.close()


def test_fractional_base_hand_computed(fractional_base):
    s = fractional_base
    got = {n: (t, d, e) for n, t, d, e in rows(s, "SELECT name, ts_ns, dur_ns, end_ns FROM events")}
    assert got == FRACTIONAL_BASE_EXPECTED
    assert scalar(s, "SELECT base_time_ns FROM traces") == BASE


def test_fractional_base_labels(fractional_base):
    s = fractional_base
    got = rows(s, "SELECT name, pid, tid, pid_label, tid_label FROM events "
                  "WHERE name IN ('zero_dur', 'instant') ORDER BY name")
    assert got == [("instant", 10, 10, "10", "10"), ("zero_dur", 0, 7, "0", "stream 7")]


def _ns(base, x):
    return base + int(decimal.Decimal(x) * 1000)


@needs_corpus
def test_real_nccl_trace_exact_against_decimal(corpus_session):
    """a100_nccl_train: every ts/dur (3 decimals, ts ~4.5e12 us) against Decimal."""
    s, ids, _ = corpus_session
    name = "a100_nccl_train.json.gz"
    doc = read_trace(corpus_path(name), exact=True)
    base = doc["baseTimeNanoseconds"]
    events = trace_events(doc)
    expected = [(None if e.get("ts") is None else _ns(base, e["ts"]),
                 None if e.get("dur") is None else int(decimal.Decimal(e["dur"]) * 1000))
                for e in events]
    got = rows(s, "SELECT ts_ns, dur_ns FROM events WHERE trace_id = $t ORDER BY event_id",
               {"t": ids[name]})
    assert len(got) == len(expected) == 40573
    mismatches = [(i, g, x) for i, (g, x) in enumerate(zip(got, expected)) if g != x]
    assert mismatches == []
    # the file really has sub-microsecond fractions (otherwise this test proves little)
    assert sum(1 for t, _ in expected if t is not None and t % 1000) > 30000


@pytest.fixture(scope="module")
def absolute():
    path = HANDMADE / "absolute_fractional.json"
    s = duckprof.connect()
    s.load([str(path)])
    doc = read_trace(path, exact=True)
    yield s, trace_events(doc)
    s.close()


LIMIT_NS = 250  # documented limit for fractional absolute us: one ulp of a double at 1.7e15


def test_absolute_fractional_within_limit(absolute):
    s, events = absolute
    assert scalar(s, "SELECT base_time_ns FROM traces") is None
    got = {n: (t, d) for n, t, d in rows(s, "SELECT name, ts_ns, dur_ns FROM events")}
    for e in events:
        t, d = got[e["name"]]
        exact = int(decimal.Decimal(e["ts"]) * 1000)
        assert abs(t - exact) <= LIMIT_NS, e["name"]
        if "dur" in e:
            assert d == int(decimal.Decimal(e["dur"]) * 1000) >= 0, e["name"]
    assert scalar(s, "SELECT count(*) FROM events WHERE dur_ns < 0 OR end_ns < ts_ns") == 0


def test_absolute_fractional_exact(absolute):
    """Stronger than the limit: the loader recovers the exact ns from the text."""
    s, events = absolute
    got = {n: (t, d, e) for n, t, d, e in rows(s, "SELECT name, ts_ns, dur_ns, end_ns FROM events")}
    assert got["P1"] == (1700000000000000130, 9990, 1700000000000010120)
    assert got["S1"][0] == 1700000000000010120
    assert got["G1"] == (1700000000000001001, 1129, 1700000000000002130)
    assert got["mark"] == (1700000000000003003, None, None)
    for e in events:
        assert got[e["name"]][0] == int(decimal.Decimal(e["ts"]) * 1000), e["name"]


def test_absolute_fractional_nesting_matches_decimal(absolute):
    s, events = absolute
    expected = decimal_nesting(events)  # name -> (parent name, depth, self ns)
    got = {n: (p, d, self_ns) for n, p, d, self_ns in rows(s, """
        SELECT e.name, p.name, n.depth, n.self_ns
        FROM events n JOIN events e USING (trace_id, event_id)
        LEFT JOIN events p ON p.trace_id = n.trace_id AND p.event_id = n.parent_event_id
        WHERE n.depth IS NOT NULL""")}
    assert got == expected
    # and by hand, for the boundary cases the fixture was written for
    assert expected["S1"][0] is None      # starts exactly where P1 ends: a sibling, not a child
    assert expected["C2"][0] == "P1"      # ends exactly where P1 ends: still a child
    assert expected["G1"][0] == "C1"
    assert expected["Z1"][0] == "S1"      # zero-length at S1's start
    assert expected["S3"][0] is None and expected["S4"][0] is None
    assert expected["T2"] == ("T1", 1, 1)
    assert "K1" not in expected           # device events are not nested


ARGS_FIRST = ('{"ph": "X", "cat": "cpu_op", "name": "args_first", "args": {"ts": 5}, "pid": 1, "tid": 1,'
              ' "ts": 1700000000000002.130, "dur": 1.000}')


def test_absolute_fractional_ts_key_inside_args(tmp_path):
    """A "ts" key inside args, written before the event's own ts, is not taken
    for it: a chunk whose head shows fractional absolute timestamps is parsed
    with their exact values (stage_events.sql exact), the event's own ts, exact
    here too (the second read of the text, exact_ts.sql, took the first "ts" of
    the text and fell back to the double for this event)."""
    path = tmp_path / "args_first.json"
    path.write_text('{"traceEvents": ['
                    '{"ph": "X", "cat": "cpu_op", "name": "plain", "pid": 1, "tid": 1,'
                    ' "ts": 1700000000000000.130, "dur": 1.000},' + ARGS_FIRST + ']}')
    with duckprof.connect() as s:
        s.load([str(path)])
        got = dict(rows(s, "SELECT name, ts_ns FROM events"))
    assert got == {"plain": 1700000000000000130, "args_first": 1700000000000002130}


def _exact_reads(monkeypatch) -> list:
    """How each chunk's exact timestamps were made: True, from the parse
    (exact_ts.sql staged); False, by a second read of the chunk's text."""
    import duckprof.load as load
    reads = []
    render = load.sqlfiles.render

    def spy(rel, **kw):
        if rel == "load/exact_ts.sql":
            reads.append(kw.get("staged"))
        return render(rel, **kw)
    monkeypatch.setattr(load.sqlfiles, "render", spy)
    return reads


def test_absolute_fractional_one_read(monkeypatch, tmp_path):
    """The exact timestamps come from the chunk's one parse, and are those of
    the text (test_absolute_fractional_exact); a chunk whose fractional
    absolute timestamps start beyond its head (64 KiB) is read again for them,
    as before, with the same values; and so is one whose parse with exact
    timestamps fails (a ts beyond DECIMAL(38, 9): the error of the plain parse
    is the one reported)."""
    reads = _exact_reads(monkeypatch)
    path = HANDMADE / "absolute_fractional.json"
    want = {e["name"]: int(decimal.Decimal(e["ts"]) * 1000) for e in trace_events(read_trace(path, exact=True))
            if "ts" in e}
    with duckprof.connect(tmp_path / "staged.duckdb") as s:  # a file: staged
        s.load([str(path)])
        got = dict(rows(s, "SELECT name, ts_ns FROM events"))
    assert reads == [True]
    assert want == {n: t for n, t in got.items() if t is not None}
    # one file into memory: the insert reads the chunk, with the exact values
    # (tests/test_direct_load.py); the same ones
    reads.clear()
    with duckprof.connect() as s:
        s.load([str(path)])
        got = dict(rows(s, "SELECT name, ts_ns FROM events"))
    assert reads == []
    assert want == {n: t for n, t in got.items() if t is not None}

    reads.clear()
    late = tmp_path / "late.json"
    plain = [f'{{"ph": "X", "cat": "cpu_op", "name": "i{k}", "pid": 1, "tid": 2, "ts": {1700000000000000 + k}, '
             f'"dur": 1}}' for k in range(2000)]
    late.write_text('{"traceEvents": [' + ", ".join(plain) + ", " + ARGS_FIRST + "]}")
    assert late.stat().st_size > 64 << 10
    with duckprof.connect() as s:
        s.load([str(late)])
        assert scalar(s, "SELECT ts_ns FROM events WHERE name = 'i7'") == 1700000000000007000
        # the second read takes the first "ts" of the text: the double here
        assert abs(scalar(s, "SELECT ts_ns FROM events WHERE name = 'args_first'") - 1700000000000002130) <= LIMIT_NS
    assert reads == [False]

    reads.clear()
    huge = tmp_path / "huge.json"
    huge.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,'
                    ' "ts": 1700000000000000.130, "dur": 1.5},'
                    ' {"ph": "X", "cat": "cpu_op", "name": "huge", "pid": 1, "tid": 1, "ts": 1e30, "dur": 1.5}]}')
    with duckprof.connect() as s, pytest.raises(duckprof.TraceError, match="not a usable number.*'huge'"):
        s.load([str(huge)])
    assert reads == [False]


def test_absolute_fractional_text_forms(tmp_path):
    """exact_ts.sql turns the usual text (3 decimals, no exponent) into ns by
    its digits, every other one by a DECIMAL: each form gives the ns of its
    text (rounded half away from zero below 1 ns)."""
    forms = {"three": "1700000000000000.130", "three_zeros": "1700000000000001.000",
             "two": "1700000000000002.13", "one": "1700000000000003.1",
             "four": "1700000000000005.1305", "six": "1700000000000006.123456",
             "exponent": "1.7000000000000071e15", "exponent_3": "170000000000000.812e1",
             "upper_exponent": "1.700000000000009130E15"}
    events = ", ".join(f'{{"ph": "X", "cat": "cpu_op", "name": "{n}", "pid": 1, "tid": 1, "ts": {t}, "dur": 0.5}}'
                       for n, t in forms.items())
    path = tmp_path / "forms.json"
    path.write_text('{"traceEvents": [' + events + ']}')
    with duckprof.connect() as s:
        s.load([str(path)])
        got = dict(rows(s, "SELECT name, ts_ns FROM events"))
    expected = {n: int((decimal.Decimal(t) * 1000).to_integral_value(decimal.ROUND_HALF_UP)) for n, t in forms.items()}
    assert got == expected
    assert got["three"] == 1700000000000000130 and got["four"] == 1700000000000005131
    assert got["exponent_3"] == 1700000000000008120 and got["upper_exponent"] == 1700000000000009130
