"""Real torch.profiler journeys recorded with torch 2.13 on CPU (fixtures/sweep16/,
its README says what was recorded and how): the numbers duckprof gives for
them against torch's own and against the raw events read with Python's json."""

from __future__ import annotations

import pytest

import duckprof
from conftest import REPO, read_trace

SWEEP = REPO / "fixtures" / "sweep16"
P2P = [SWEEP / "gloo_p2p_3" / f"rank{r}.json.gz" for r in range(3)]


def report_rows(s, name, **options):
    rel = s.report(name, **options)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


@pytest.fixture(scope="module")
def p2p():
    with duckprof.connect() as s:
        s.load([str(p) for p in P2P], run="p2p")
        yield s


def _collective_arrivals():
    """{(collective, k): {rank: start µs}}: the k-th gloo:* annotation of each
    collective type on each rank (the ranks run the same program, so the k-th
    of a type is one operation), point-to-point ones (gloo:send, gloo:recv)
    left out; read with Python's json."""
    out = {}
    for r, path in enumerate(P2P):
        seen = {}
        for e in sorted((e for e in read_trace(path)["traceEvents"]
                         if e.get("ph") == "X" and e.get("name", "").startswith("gloo:")), key=lambda e: e["ts"]):
            kind = e["name"].split(":", 1)[1]
            if kind in ("send", "recv"):
                continue
            seen[kind] = seen.get(kind, 0) + 1
            out.setdefault((kind, seen[kind]), {})[r] = e["ts"]
    return out


def test_gloo_scatter_is_matched_with_its_root(p2p):
    """gloo's scatter annotation has Input Dims and type on the root only (rank
    0: its 3 x 100 float to send); the other ranks' have none, so their
    signature ('? x?') was not the root's ('Float x100'): rank 0's scatter went
    unmatched and the spread was ranks 1 and 2's alone (737 µs). Expected: the
    three ranks' scatter one operation, its spread the raw annotations' (first
    to last start)."""
    starts = _collective_arrivals()[("scatter", 1)]
    coll = {r["collective"]: r for r in report_rows(p2p, "collectives")}
    assert coll["scatter"]["spread_mean_us"] == pytest.approx(max(starts.values()) - min(starts.values()), abs=0.01)
    assert coll["scatter"]["spread_mean_us"] > 1_000
