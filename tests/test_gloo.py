"""Collectives of CPU jobs on gloo (torch 2.13, recorded on localhost by
fixtures/gloo/record_gloo.py): gloo records no NCCL kernel and no
record_param_comms, only a gloo:* annotation per collective on its worker
thread. Expected values are the recording script's own construction (sizes,
dtypes, which rank sleeps before each step).
"""

from __future__ import annotations

import pytest

from conftest import REPO

import duckprof
from duckprof.sqlfiles import render_string

GLOO = REPO / "fixtures" / "gloo"


def report_rows(s, name, **options):
    rel = s.report(name, **options)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


@pytest.fixture(scope="module")
def coll4():
    with duckprof.connect() as s:
        s.load([str(GLOO / "coll_4")], run="coll")
        yield s


def test_gloo_collectives_have_the_recorded_types_and_sizes(coll4):
    """Per rank, coll(): all_reduce of 1000 float (4000 B), 500 double (4000 B),
    reduce_scatter_tensor of 128 x 4 float (gloo runs it as an all_reduce of 512
    float: 2048 B); ranks 0 and 1 two more of 2000 half (4000 B) on their
    new_group. all_gather and all_gather_into_tensor of 256 float: output 4 x 256
    float = 4096 B; broadcast of 300 int64 (2400 B); all_to_all_single of 256
    float (1024 B); a barrier (no size)."""
    rows = coll4.sql("""
        SELECT f.rank, c.collective, list(c.msg_bytes ORDER BY c.msg_bytes) AS sizes,
               list(DISTINCT c.dtype ORDER BY c.dtype) AS dtypes, any_value(c.busbw_factor) AS factor
        FROM collectives c JOIN trace_files f USING (trace_id)
        GROUP BY ALL ORDER BY ALL""").fetchall()
    got = {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}
    for rank in range(4):
        ar = [2048, 4000, 4000] + ([4000, 4000] if rank < 2 else [])
        dts = ["Double", "Float"] + (["Half"] if rank < 2 else [])
        assert got[(rank, "all_reduce")] == (sorted(ar), dts, pytest.approx(2 * 3 / 4))
        assert got[(rank, "all_gather")] == ([4096, 4096], ["Float"], pytest.approx(3 / 4))
        assert got[(rank, "broadcast")] == ([2400], ["Long"], 1.0)
        assert got[(rank, "all_to_all")] == ([1024], ["Float"], pytest.approx(3 / 4))
        assert got[(rank, "barrier")] == ([None], [None], None)
    assert len(got) == 4 * 5


def test_gloo_collectives_report_says_there_is_no_device(coll4):
    """Host collectives: no overlap with compute on a device (NULL, not 0%), a
    note saying why; bus bandwidth is algbw x the type's factor."""
    rows = {r["collective"]: r for r in report_rows(coll4, "collectives")}
    assert {k: r["calls"] for k, r in rows.items()} == {
        "all_reduce": 16, "all_gather": 8, "broadcast": 4, "all_to_all": 4, "barrier": 4}
    assert all(r["overlap_pct"] is None for r in rows.values())
    ar = rows["all_reduce"]
    assert ar["total_bytes"] == 4 * (2048 + 4000 + 4000) + 2 * 2 * 4000
    assert ar["busbw_gbps"] == pytest.approx(ar["algbw_gbps"] * 1.5)
    notes = coll4.report_result("collectives").notes
    assert "36 gloo collectives run on the host (no device): no overlap with compute, no interconnect peak" in notes
    assert not any(n.startswith("no interconnect peak known") for n in notes)
    # the barriers have no size, but a barrier moves no message: no note that sizes are missing
    assert not any("record no message size" in n for n in notes)
    assert ("no process group recorded: collectives are matched across ranks by type and order "
            "(gloo's: by type, dtype, size and order)") in notes


def test_report_ranks_names_the_gloo_straggler():
    """DDP on 2 ranks, 4 profiled steps, rank 1 sleeps 50 ms before each: it
    arrives last at each step's gradient all_reduce and rank 0 waits for it."""
    with duckprof.connect() as s:
        s.load([str(GLOO / "straggler_2")], run="late")
        rows = report_rows(s, "ranks")
        ar = [r for r in report_rows(s, "collectives") if r["collective"] == "all_reduce"]
    assert [r["rank"] for r in rows] == [1, 0]
    assert rows[0]["late_count"] >= 4 and rows[0]["caused_wait_us"] > 4 * 40_000
    assert rows[1]["caused_wait_us"] < 1_000
    # 9,352 float parameters (64x128 + 128 + 128x8 + 8) in one DDP bucket
    assert ar[0]["msg_bytes"] == 9352 * 4 and ar[0]["calls"] == 8


def test_subgroup_collectives_do_not_shift_the_world_order():
    """4 ranks, 3 world all_reduces of 1000 float, ranks 0 and 1 one of 2000
    half on their new_group after each; rank 3 sleeps 50 ms before each world
    one. gloo records no process group: matched by type and order alone, the
    subgroup's collectives on ranks 0, 1 would pair with the world's next one on
    ranks 2, 3. Matched by type, dtype and size: 3 world operations of 4 ranks
    (rank 3 last at each, the others waiting for it), 3 subgroup ones of 2."""
    with duckprof.connect() as s:
        s.load([str(GLOO / "pg_4")], run="pg")
        rows = {r["rank"]: r for r in report_rows(s, "ranks")}
        arrivals = render_string("{% from 'templates/collectives.sql' import collective_arrivals %}"
                                 "{{ collective_arrivals('collectives') }}")
        inst = s.sql(f"""SELECT a.ranks, count(DISTINCT a.instance), list(DISTINCT c.dtype ORDER BY c.dtype)
                         FROM ({arrivals}) a JOIN collectives c ON c.trace_id = a.trace_id AND c.ts_ns = a.arrival_ns
                         GROUP BY a.ranks ORDER BY a.ranks""").fetchall()
        notes = s.report_result("collectives").notes
    assert inst == [(2, 3, ["Half"]), (4, 3, ["Float"])]
    # the subgroup's all_reduces get n = 4 (the world): said, since nothing on them names their group
    assert ("gloo records no process group: n is the world size (4), but the job has process groups of 2 ranks "
            "(distributedInfo.pg_config): bus bandwidth of their collectives is off") in notes
    assert [(r, rows[r]["collectives"]) for r in range(4)] == [(0, 6), (1, 6), (2, 3), (3, 3)]
    assert rows[3]["late_count"] == 3 and rows[3]["caused_wait_us"] > 3 * 3 * 40_000
    assert all(rows[r]["caused_wait_us"] < 1_000 for r in range(3))


def _length(intervals) -> float:
    """Total length of a union of (start, end) intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def test_report_steps_counts_gloo_wait_as_host_communication():
    """straggler_2: rank 0 spends its steps waiting at the gloo collectives
    for rank 1, which sleeps 50 ms before each step. That wait is host
    communication (it was `other` and `forward` before). Expected: the gloo
    annotations' union within the step less what data loading, the optimizer
    and backward cover (any thread), computed here from the raw events."""
    import gzip
    import json
    events = json.loads(gzip.decompress((GLOO / "straggler_2" / "rank0.json.gz").read_bytes()))["traceEvents"]
    timed = [(e["name"], e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"]
    steps = sorted((int(n.split("#")[1]), a, b) for n, a, b in timed if n.startswith("ProfilerStep#"))
    gloo = [(a, b) for n, a, b in timed if n.startswith("gloo:")]
    higher = [(a, b) for n, a, b in timed if n.startswith(("Optimizer.step", "Optimizer.zero_grad",
                                                          "autograd::engine::evaluate_function:"))
              or "Backward" in n]
    with duckprof.connect() as s:
        s.load([str(GLOO / "straggler_2")], run="late")
        rows = {(r["rank"], r["step"]): r for r in report_rows(s, "steps")}
    for step, s0, s1 in steps:
        clip = lambda xs: [(max(a, s0), min(b, s1)) for a, b in xs if a < s1 and b > s0]  # noqa: E731
        want = _length(clip(gloo) + clip(higher)) - _length(clip(higher))
        r = rows[(0, step)]
        assert r["host_comm_us"] == pytest.approx(want, abs=0.01)
        assert r["host_comm_us"] > 40_000  # rank 1's 50 ms sleep, less what rank 0 did meanwhile
        parts = ("dataloader_us", "optimizer_us", "backward_us", "host_comm_us", "forward_us", "other_us")
        assert sum(r[k] for k in parts) == pytest.approx(r["step_us"], abs=0.01)
        assert rows[(1, step)]["other_us"] >= 50_000  # the sleep itself: no collective, no operator


def _gloo_starts(path) -> dict:
    """{collective: [start us, ...]} of a trace file's gloo:* annotations, in order."""
    import gzip
    import json
    out = {}
    for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]:
        if e.get("ph") == "X" and e.get("name", "").startswith("gloo:"):
            out.setdefault(e["name"], []).append(e["ts"])
    return {k: sorted(v) for k, v in out.items()}


def test_a_schedules_cycles_are_matched_within_their_cycle():
    """cycles_2: 2 ranks x 2 cycles of a profiler schedule, a trace each. gloo
    collectives are matched by order, which restarts in each trace: cycle 2's
    first all_reduce was matched with cycle 1's of both ranks (4 'ranks', a
    spread of ~0.6 s: the time between the cycles). Expected: each cycle's
    rank 0 and rank 1 traces paired, the n-th gloo:* of a kind with the n-th."""
    d = GLOO / "cycles_2"
    want = []
    for k in (1, 2):
        a, b = _gloo_starts(d / f"rank0_cycle{k}.json.gz"), _gloo_starts(d / f"rank1_cycle{k}.json.gz")
        assert a.keys() == b.keys()
        for name in a:
            want += [(name.split(":")[1], abs(x - y)) for x, y in zip(a[name], b[name], strict=True)]
    with duckprof.connect() as s:
        s.load([str(d)], run="cycles")
        rows = {r["collective"]: r for r in report_rows(s, "collectives")}
        ranks = report_rows(s, "ranks")
    assert {k: (r["calls"], r["ranks"]) for k, r in rows.items()} == {"all_reduce": (8, 2), "broadcast": (4, 2)}
    for kind, r in rows.items():
        spreads = [x for k, x in want if k == kind]
        assert r["spread_mean_us"] == pytest.approx(sum(spreads) / len(spreads), abs=0.002)
        assert r["spread_max_us"] == pytest.approx(max(spreads), abs=0.002)
    assert sorted(r["collectives"] for r in ranks) == [2, 2, 4, 4]  # each trace matched with its cycle's other rank
