"""Real torch.profiler journeys recorded with torch 2.13 on CPU (fixtures/sweep16/,
its README says what was recorded and how): the numbers duckprof gives for
them against torch's own and against the raw events read with Python's json."""

from __future__ import annotations

import json

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


def test_point_to_point_is_not_matched_as_a_collective(p2p):
    """3 ranks: blocking send/recv between ranks 0 and 1, two rings of
    isend/irecv, a monitored_barrier (gloo's sends and receives of one int),
    and nine collectives on every rank (gather, scatter, reduce, two
    all_gathers and two broadcasts of the object collectives, all_reduce,
    all_to_all). Sends were matched with the other ranks' sends of the same
    size by order (rank 0's send to rank 1 with rank 2's send to rank 0): a
    spread of 94.9 ms for send, and report ranks counted 14-15 'collectives' a
    rank and blamed rank 1 for 480 ms of the others' waiting. Non-root scatters
    record no inputs, so rank 0's scatter was not matched with the others'.
    Expected: the nine collectives, matched by type and order, each rank's
    late count and caused wait from the raw annotations' starts."""
    inst = _collective_arrivals()
    assert len(inst) == 9 and all(len(v) == 3 for v in inst.values())
    late, caused = [0, 0, 0], [0.0, 0.0, 0.0]
    for starts in inst.values():
        last = max(starts, key=starts.get)
        late[last] += 1
        caused[last] += sum(starts[last] - t for t in starts.values())
    ranks = {r["rank"]: r for r in report_rows(p2p, "ranks")}
    for r in range(3):
        assert ranks[r]["collectives"] == 9
        assert ranks[r]["late_count"] == late[r]
        assert ranks[r]["caused_wait_us"] == pytest.approx(caused[r], abs=0.01)
    coll = {r["collective"]: r for r in report_rows(p2p, "collectives")}
    assert coll["send"]["spread_mean_us"] is None and coll["recv"]["spread_mean_us"] is None


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


def _nccl_rank(rank, kernels):
    """A handmade NCCL rank: each (Collective name, Seq, start µs) a kernel of
    50 µs on stream 20 with its facts on the kernel, launched from thread 1."""
    ev = []
    for i, (name, seq, ts) in enumerate(kernels):
        corr = 100 + i
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": ts - 10, "dur": 5, "args": {"correlation": corr, "External id": corr}})
        kname = {"send": "ncclDevKernel_SendRecv", "recv": "ncclDevKernel_SendRecv",
                 "allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}[name]
        ev.append({"ph": "X", "cat": "kernel", "name": kname + "(ncclDevComm*, unsigned long, ncclWork*)",
                   "pid": 0, "tid": 20, "ts": ts, "dur": 50,
                   "args": {"device": 0, "stream": 20, "correlation": corr, "External id": corr,
                            "Collective name": name, "Process Group Name": "0", "Group size": 2,
                            "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float", "Seq": seq}})
    return {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8,
                                  "computeMinor": 0, "totalGlobalMem": 85899345920, "numSms": 108}],
            "traceEvents": ev}


def test_nccl_point_to_point_seq_is_not_a_collectives_seq(tmp_path):
    """NCCL numbers point-to-point operations with a counter of their own
    (ProcessGroupNCCL's seqP2P_, beside seqCollective_), both written as 'Seq':
    rank 1's send Seq 1 (to rank 0, whose recv is also Seq 1) and both ranks'
    all_reduce Seq 1 were one instance 'pg 0 / seq 1', rank 1 arriving at its
    send. Expected: the all_reduce matched alone, rank 0 at 1,000 µs, rank 1
    at 1,300 µs: spread 300 µs, rank 1 late once, causing 300 µs of waiting."""
    files = []
    for rank, kernels in ((0, [("recv", 1, 500), ("allreduce", 1, 1_000)]),
                          (1, [("send", 1, 200), ("allreduce", 1, 1_300)])):
        p = tmp_path / f"rank{rank}.json"
        p.write_text(json.dumps(_nccl_rank(rank, kernels)))
        files.append(str(p))
    with duckprof.connect() as s:
        s.load(files, run="nccl")
        coll = {r["collective"]: r for r in report_rows(s, "collectives")}
        ranks = {r["rank"]: r for r in report_rows(s, "ranks")}
    assert coll["all_reduce"]["spread_mean_us"] == pytest.approx(300)
    assert coll["send"]["spread_mean_us"] is None and coll["recv"]["spread_mean_us"] is None
    assert (ranks[1]["collectives"], ranks[1]["late_count"], ranks[1]["caused_wait_us"]) == (1, 1, pytest.approx(300))
    assert (ranks[0]["collectives"], ranks[0]["late_count"], ranks[0]["caused_wait_us"]) == (1, 0, pytest.approx(0))


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_gloo_annotations_are_async_as_in_key_averages(rank):
    """c10d's Work objects record their gloo:* (nccl:*, ...) annotation as an
    async RecordFunction (it may end on another thread), and torch leaves async
    events out of the tree: self CPU 0, not a child of the op around it. duckprof
    gave gloo:send on rank 0 309 ms of self CPU time and monitored_barrier on
    rank 1 -48 ms (its two overlapping gloo:send/recv children subtracted).
    Expected: every row of torch's key_averages() of that rank (recorded beside
    the trace): calls, self and total CPU time."""
    theirs = {r["key"]: r for r in json.loads((SWEEP / "gloo_p2p_3" / f"rank{rank}.key_averages.json").read_text())}
    with duckprof.connect() as s:
        s.load([str(P2P[rank])])
        mine = {r[0]: r[1:] for r in s.report("ops", limit=0)
                .select("name, count, self_cpu_us, cpu_total_us").fetchall()}
    assert set(mine) == set(theirs)
    for key, t in theirs.items():
        assert mine[key] == (t["count"], pytest.approx(t["self_cpu_us"], abs=0.01),
                             pytest.approx(t["cpu_us"], abs=0.01)), key


def test_overload_names_are_keyed_as_key_averages():
    """_ExperimentalConfig(capture_overload_names=True): torch writes
    'aten::add.Tensor', 'aten::sum.dim_IntList', 'aten::to.dtype' in the trace,
    and its key_averages() keys them by the name alone. duckprof took the suffix
    for part of the name: rows torch does not have, aten::sum's two overloads
    not merged (6 calls for torch's 4), no FLOPs for aten::add and aten::mul
    (torch's count: 1,024 and 1,536), and every rule matching a plain name
    (aten::to, aten::select, aten::fill_, ...) blind to them. Expected: torch's
    rows (calls, self and total CPU time, FLOPs), and the overload kept in
    cpu_ops.overload."""
    theirs = {r["key"]: r for r in json.loads((SWEEP / "overloads.key_averages.json").read_text())}
    with duckprof.connect() as s:
        s.load([str(SWEEP / "overloads.json.gz")])
        mine = {r[0]: r[1:] for r in s.report("ops", limit=0)
                .select("name, count, self_cpu_us, cpu_total_us, flops").fetchall()}
        overloads = s.sql("SELECT name, list(DISTINCT overload ORDER BY overload) FROM cpu_ops "
                          "WHERE overload IS NOT NULL GROUP BY name ORDER BY name").fetchall()
    assert set(mine) == set(theirs)
    for key, t in theirs.items():
        count, self_us, total_us, flops = mine[key]
        assert (count, self_us, total_us) == (t["count"], pytest.approx(t["self_cpu_us"], abs=0.01),
                                              pytest.approx(t["cpu_us"], abs=0.01)), key
        if key in ("aten::add", "aten::mul", "aten::mm", "aten::addmm"):  # torch counts these
            assert flops == t["flops"], key
    assert overloads == [("aten::add", ["Tensor"]), ("aten::fill_", ["Scalar"]), ("aten::mul", ["Tensor"]),
                         ("aten::sum", ["dim_IntList"]), ("aten::to", ["dtype"]), ("aten::transpose", ["int"])]
