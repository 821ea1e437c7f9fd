"""duckprof against TraceLens's perf report (AMD-AGI/TraceLens, an independent tool) on every corpus
trace TraceLens can read: fixtures/golden/tracelens/ (record_tracelens.py, README.md there).

Per trace: the kernel summary (count and time per kernel name), the GPU timeline (busy time and the
span of the GPU events), and per GEMM / convolution shape the call count, FLOPs and bytes moved.
Where duckprof deliberately differs, the test says so and checks the difference by value."""
from __future__ import annotations

import collections
import csv
import hashlib
import json

import pytest

from conftest import CORPUS, REPO, rows

GOLDEN = REPO / "fixtures" / "golden" / "tracelens"
SHA256 = {line.split()[1]: line.split()[0] for line in (GOLDEN / "sha256.txt").read_text().splitlines() if line}
TRACES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def read(trace: str, name: str) -> list[dict]:
    path = GOLDEN / trace / name
    return list(csv.DictReader(open(path, encoding="utf-8", newline=""))) if path.exists() else []


def timeline_us(trace: str, name: str) -> dict[str, float]:
    return {r["type"]: float(r["time ms"]) * 1e3 for r in read(trace, name)}


def golden_trace(corpus_session, trace: str):
    """(session, trace_id) of the corpus trace the golden was recorded on; skip when the corpus
    lacks it or holds another file under its name."""
    file = f"{trace}.json.gz"
    path = CORPUS / file
    if not path.exists():
        pytest.skip(f"corpus file {file} not found in {CORPUS}")
    if hashlib.sha256(path.read_bytes()).hexdigest() != SHA256[file]:
        pytest.skip(f"{file} differs from the trace the TraceLens golden was recorded on")
    s, ids, _ = corpus_session
    return s, ids[file]


def test_goldens_cover_every_trace_tracelens_reads():
    """Every corpus trace has a golden folder or a line in failures.txt (TraceLens's error)."""
    failed = {line.split(":")[0] for line in (GOLDEN / "failures.txt").read_text().splitlines() if line}
    assert len(TRACES) == 8 and len(failed) == 11
    assert {f"{t}.json.gz" for t in TRACES} | failed == set(SHA256)


@pytest.mark.parametrize("trace", TRACES)
def test_kernel_summary_matches_tracelens(corpus_session, trace):
    """Per kernel name, TraceLens's kernel_summary count and summed duration equal duckprof's kernels.
    TraceLens's kernel summary holds kernels only; memcpys and memsets (gpu_memcpy / gpu_memset
    events) are in duckprof's gpu_ops but not there: checked by name."""
    s, tid = golden_trace(corpus_session, trace)
    tl_count, tl_us = collections.Counter(), collections.Counter()
    for k in read(trace, "kernel_summary.csv"):
        tl_count[k["Kernel name"]] += int(k["Kernel duration (µs)_count"])
        tl_us[k["Kernel name"]] += float(k["Kernel duration (µs)_sum"])
    ours = {name: (kind, n, us) for name, kind, n, us in rows(s, """
        SELECT name, any_value(kind), count(*), sum(dur_ns) / 1e3 FROM gpu_ops WHERE trace_id = $t GROUP BY name""",
        {"t": tid})}
    kernels = {name for name, (kind, _, _) in ours.items() if kind == "kernel"}
    assert set(tl_count) == kernels
    assert all(ours[n][0] in ("memcpy", "memset") for n in set(ours) - kernels)
    for name in kernels:
        assert ours[name][1] == tl_count[name], name
        assert ours[name][2] == pytest.approx(tl_us[name], abs=1e-3 * tl_count[name]), name


# What TraceLens's default gpu_timeline leaves out: kernels its call tree does not link to a cpu_op
# (--include_unlinked_kernels adds them). duckprof counts every device event. µs of busy time and of
# the GPU-event span that the default report lacks (0 on the other traces).
UNLINKED_BUSY_US = {"a100_train_rank0": 57568.0, "mi300x_resnet_act_checkpoint": 27901.199}
UNLINKED_SPAN_US = {"a100_train_rank0": 2389.0, "mi300x_resnet_act_checkpoint": 30050.105}


@pytest.mark.parametrize("trace", TRACES)
def test_gpu_timeline_matches_tracelens(corpus_session, trace):
    """busy_time = the union of all device events (kernels, memcpys, memsets) and total_time = first
    GPU event start to last end: equal to TraceLens's timeline with --include_unlinked_kernels, within
    float rounding of its µs timestamps. TraceLens's default drops the unlinked kernels: on two corpus
    traces (a100_train_rank0: NCCL and copy kernels of other threads; the MI300X trace: its
    backward-thread kernels) its busy time and span are shorter by UNLINKED_*_US."""
    s, tid = golden_trace(corpus_session, trace)
    busy, span = rows(s, """
        SELECT (SELECT sum(dur_ns) FROM gpu_busy_intervals WHERE trace_id = $t AND scope = 'device') / 1e3,
               (max(end_ns) - min(ts_ns)) / 1e3 FROM gpu_ops WHERE trace_id = $t""", {"t": tid})[0]
    full = timeline_us(trace, "gpu_timeline_include_unlinked.csv")
    # TraceLens adds float µs (a100_nccl_train: 0.064 µs of 157,500 µs over 3,774 events)
    assert busy == pytest.approx(full["busy_time"], rel=1e-6, abs=0.02)
    assert span == pytest.approx(full["total_time"], rel=1e-6, abs=0.02)
    assert full["idle_time"] == pytest.approx(span - busy, rel=1e-6, abs=0.02)
    default = timeline_us(trace, "gpu_timeline.csv")
    assert busy - default["busy_time"] == pytest.approx(UNLINKED_BUSY_US.get(trace, 0.0), abs=0.1)
    assert span - default["total_time"] == pytest.approx(UNLINKED_SPAN_US.get(trace, 0.0), abs=0.02)
