"""duckprof's temporal breakdown, idle-time breakdown and queue length against HTA's
own outputs on the real corpus (golden files in fixtures/golden/hta/, recorded by
record_hta.py there with HolisticTraceAnalysis 0.5.0; definitions in its README).

Tolerances and why:
* With --hta (drop the last ProfilerStep as HTA does, and round times to whole µs
  as HTA does for traces with fractional timestamps) the numbers are HTA's up to
  1 µs, except where HTA's input differs from ours by design:
  - HTA counts every event with a stream arg as GPU time: the 41 cuda_sync events
    of a100_alexnet_train (non-compute) and a cpu_op with a stream arg in
    a100_triton_kernel and b200_eager_stack (compute). We count kernels, memcpys
    and memsets only: alexnet and b200 stay within 1% of the window (kernel_time);
    triton's only kernel lasts 1.9 µs and the cpu_op 95.8 µs, so we check that
    HTA's window is that cpu_op's.
  - HTA takes the last step's start from any event named ProfilerStep, including
    gpu_user_annotation events on the GPU timeline (mi300x_resnet_act_checkpoint);
    we use the host-side step. We check that HTA's rule reproduces its number.
  - In the idle-time breakdown HTA takes each event's gap to the previous event on
    the stream, negative when they overlap (then subtracted from kernel_wait); we
    use gaps of the merged busy intervals: a few µs on a100_train_rank0 and
    b200_eager_stack (tolerance 0.1% of the stream's idle time).
* Without rounding (exact ns, only --exclude-last-step) every number on the A100
  traces is within 1% of HTA's (of the window for the temporal breakdown, of the
  stream's total idle time for the idle breakdown). The difference is HTA's
  rounding: each event loses up to 2 µs (start rounded up, end down), so HTA
  sees less busy time; on a100_nccl_train that is 0.54% of the window.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import duckprof  # noqa: E402

GOLDEN = REPO / "fixtures" / "golden" / "hta"
CORPUS = Path(os.environ.get("DUCKPROF_CORPUS", REPO.parent / "shared" / "traces"))
A100 = ["a100_alexnet_train", "a100_nccl_train", "a100_train_rank0", "a100_triton_kernel"]
# HTA's queue-length launch calls (common/trace_symbol_table.py)
HTA_LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
                "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
                "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream"}


def _stem(name):
    return name[:-8] if name.endswith(".json.gz") else name[:-5]


def _files():
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if p.name.endswith((".json", ".json.gz")))


# slow: the fixture loads every corpus file as a run of its own (4 to 6 s); the
# quick run checks these reports on hand-computed traces (test_gpu_time.py)
pytestmark = [pytest.mark.skipif(not _files() or not GOLDEN.is_dir(), reason="no corpus or HTA goldens"),
              pytest.mark.slow]


def _golden(stem, analysis):
    p = GOLDEN / f"{stem}.{analysis}.csv"
    if not p.exists():
        return None
    return list(csv.DictReader(open(p)))


@pytest.fixture(scope="module")
def corpus():
    """(session, {stem: trace_id}, {stem: HTA status per analysis}) with each file in its own run."""
    s = duckprof.connect()
    for f in _files():
        s.load([str(f)], run=_stem(f.name))
    ids = dict(s.con.execute("SELECT run, trace_id FROM traces").fetchall())
    status = {_stem(r["file"]): r["analyses"] for r in json.load(open(GOLDEN / "RESULTS.json"))}
    yield s, ids, status
    s.close()


def _by_trace(rel):
    cols = rel.columns
    out = {}
    for r in rel.fetchall():
        d = dict(zip(cols, r))
        out.setdefault(d["trace_id"], []).append(d)
    return out


def _temporal(corpus, **kw):
    s, ids, _ = corpus
    rows = _by_trace(s.report("temporal", **kw))
    return {run: rows[tid][0] for run, tid in ids.items() if tid in rows}


FIELDS = [("window_us", "kernel_time(us)"), ("idle_us", "idle_time(us)"),
          ("compute_us", "compute_time(us)"), ("non_compute_us", "non_compute_time(us)")]


def test_temporal_matches_hta(corpus):
    s, ids, status = corpus
    ours = _temporal(corpus, hta=True)
    checked = 0
    for stem in ids:
        if status[stem]["temporal_breakdown"] != "ok":
            assert stem not in ours  # CPU-only: HTA raised; we have no row
            continue
        (h,) = _golden(stem, "temporal_breakdown")
        o = ours[stem]
        window = float(h["kernel_time(us)"])
        if stem in ("a100_triton_kernel", "mi300x_resnet_act_checkpoint"):
            continue  # input differs by design: test_temporal_hta_exceptions
        tol = 0.01 * window if stem in ("a100_alexnet_train", "b200_eager_stack") else 1.0
        for ours_col, hta_col in FIELDS:
            assert abs(o[ours_col] - float(h[hta_col])) <= tol, (stem, ours_col, o[ours_col], h[hta_col])
        checked += 1
    assert checked >= 14


def test_temporal_hta_exceptions(corpus):
    s, ids, _ = corpus
    # a100_triton_kernel: HTA's window is the cpu_op that carries a stream arg, rounded to µs
    (h,) = _golden("a100_triton_kernel", "temporal_breakdown")
    (cpu_op,) = s.con.execute("""SELECT end_ns // 1000 - (ts_ns + 999) // 1000 FROM events
                                 WHERE trace_id = $t AND cat = 'cpu_op' AND stream IS NOT NULL""",
                              {"t": ids["a100_triton_kernel"]}).fetchall()[0]
    assert float(h["kernel_time(us)"]) == cpu_op
    assert _temporal(corpus, hta=True)["a100_triton_kernel"]["window_us"] < 2
    # mi300x: with HTA's cutoff (any event named ProfilerStep, GPU annotations included)
    # our device activity gives HTA's window and idle time exactly
    (h,) = _golden("mi300x_resnet_act_checkpoint", "temporal_breakdown")
    rows = s.con.execute("""
        WITH cut AS (SELECT max((ts_ns + 999) // 1000 * 1000) AS c FROM events
                     WHERE trace_id = $t AND ph = 'X' AND name LIKE '%ProfilerStep%'),
             a AS (SELECT ts_ns, end_ns FROM gpu_activity(round_to_us := true)
                   WHERE trace_id = $t AND launch_ts_ns < (SELECT c FROM cut))
        SELECT (max(end_ns) - min(ts_ns)) / 1000 FROM a""",
                         {"t": ids["mi300x_resnet_act_checkpoint"]}).fetchall()
    assert rows[0][0] == float(h["kernel_time(us)"])


@pytest.mark.parametrize("stem", ["a100_alexnet_train", "a100_nccl_train", "a100_train_rank0"])
def test_temporal_within_1pct_without_rounding(corpus, stem):
    o = _temporal(corpus, exclude_last_step=True)[stem]
    (h,) = _golden(stem, "temporal_breakdown")
    window = float(h["kernel_time(us)"])
    for ours_col, hta_col in FIELDS:
        assert abs(o[ours_col] - float(h[hta_col])) <= 0.01 * window, (stem, ours_col)
    for pct in ("idle", "compute", "non_compute"):
        assert abs(o[f"{pct}_pct"] - float(h[f"{pct}_time_pctg"])) <= 1.0


def _idle_by_stream(s, tid, round_to_us):
    """({(stream, category): idle µs}, {streams with device activity})"""
    rows = s.con.execute("""
        SELECT stream, category, sum(dur_ns) / 1e3
        FROM gpu_idle_intervals(exclude_last_step := true, round_to_us := $r)
        WHERE trace_id = $t AND scope = 'stream' GROUP BY ALL""", {"t": tid, "r": round_to_us}).fetchall()
    streams = {st for (st,) in s.con.execute("""
        SELECT DISTINCT stream FROM gpu_busy_intervals(exclude_last_step := true, round_to_us := $r)
        WHERE trace_id = $t AND scope = 'stream'""", {"t": tid, "r": round_to_us}).fetchall()}
    return {(st, c): v for st, c, v in rows}, streams


def _compare_idle(stem, got, rel_tol):
    ours, streams = got
    hta = {(int(r["stream"]), r["idle_category"]): float(r["idle_time"])
           for r in _golden(stem, "idle_time_breakdown")}
    total = {}
    for (st, _), v in hta.items():
        total[st] = total.get(st, 0.0) + v
    assert streams == set(total), stem  # the same streams
    for key in set(hta) | set(ours):
        h, o = hta.get(key, 0.0), ours.get(key, 0.0)
        assert abs(o - h) <= 0.011 + rel_tol * total[key[0]], (stem, key, o, h)


def test_idle_breakdown_matches_hta(corpus):
    s, ids, status = corpus
    checked = 0
    for stem, tid in ids.items():
        if status[stem]["idle_time_breakdown"] != "ok":
            assert _idle_by_stream(s, tid, True) == ({}, set())
            continue
        if stem == "mi300x_resnet_act_checkpoint":
            continue  # HTA's last-step cutoff comes from a GPU annotation (see module doc)
        _compare_idle(stem, _idle_by_stream(s, tid, True), 0.001)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("stem", ["a100_alexnet_train", "a100_nccl_train", "a100_train_rank0",
                                  "a100_triton_kernel"])
def test_idle_breakdown_within_1pct_without_rounding(corpus, stem):
    s, ids, _ = corpus
    _compare_idle(stem, _idle_by_stream(s, ids[stem], False), 0.01)


def test_idle_ratios_match_hta(corpus):
    """The report's per-category share of idle time is HTA's idle_time_ratio."""
    s, ids, _ = corpus
    rows = _by_trace(s.report("gpu-time", run="a100_train_rank0", hta=True))
    ours = {r["stream"]: r for r in rows[ids["a100_train_rank0"]] if r["scope"] == "stream"}
    for h in _golden("a100_train_rank0", "idle_time_breakdown"):
        o = ours[int(h["stream"])][f"{h['idle_category']}_pct"]
        assert abs(o / 100 - float(h["idle_time_ratio"])) <= 0.0051


def test_queue_length_max_matches_hta(corpus):
    """HTA's queue length = our `pending` (launched, not started). Where every launch
    call of a stream is one HTA recognises, the maximum and the number of change
    points (2 per launch) are HTA's."""
    s, ids, status = corpus
    checked = 0
    queue = _by_trace(s.report("queue", hta=True))
    for stem, tid in ids.items():
        if stem == "mi300x_resnet_act_checkpoint":
            continue  # HTA's last-step cutoff comes from a GPU annotation (see module doc)
        names = dict(((st, set(n)) for st, n in s.con.execute("""
            SELECT stream, list(DISTINCT launch_name) FROM gpu_activity(exclude_last_step := true)
            WHERE trace_id = $t AND launch_name IS NOT NULL GROUP BY stream""", {"t": tid}).fetchall()))
        ours = {r["stream"]: r for r in queue.get(tid, [])}
        for h in _golden(stem, "queue_length_summary") or []:
            st = int(float(h["stream"]))
            if not names.get(st, set()) <= HTA_LAUNCHES:
                continue
            assert ours[st]["max_pending"] == float(h["queue_length_max"]), (stem, st)
            # HTA keeps a launch only if its partner's position in traceEvents is > 0
            # (index_correlation > 0): legacy_categories_inference starts with a kernel
            lost = 1 if stem == "legacy_categories_inference" else 0
            assert 2 * (ours[st]["launches"] - lost) == float(h["queue_length_count"]), (stem, st)
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("stem", ["cpu_only_rank34", "a100_cpu_ops_no_distinfo"])
def test_cpu_only_traces_say_so(corpus, stem):
    s, _, _ = corpus
    for name in ("idle", "gpu-time", "queue", "temporal"):
        res = s.report_result(name, run=stem)
        assert res.instead == [f"no GPU activity in this trace (run '{stem}')"] and res.notes == []
        assert res.relation.fetchall() == []


@pytest.mark.parametrize("name", ["idle", "gpu-time", "queue", "temporal"])
def test_every_report_runs_on_every_corpus_run(corpus, name):
    s, ids, _ = corpus
    rows = _by_trace(s.report(name))
    with_gpu = {tid for (tid,) in s.con.execute("SELECT DISTINCT trace_id FROM gpu_ops").fetchall()}
    if name == "queue" or name == "idle":  # need launches matched to device activity
        with_gpu = {tid for (tid,) in s.con.execute(
            "SELECT DISTINCT trace_id FROM gpu_activity WHERE launch_ts_ns IS NOT NULL").fetchall()}
    if name == "idle":  # and CPU ops
        with_gpu &= {tid for (tid,) in s.con.execute("SELECT DISTINCT trace_id FROM cpu_ops").fetchall()}
    assert set(rows) == with_gpu
