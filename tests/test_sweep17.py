"""Defects that public GPU traces (HTA's and TraceLens's test data; fixtures/sweep17/README.md
says which) exposed, each pinned on a small handmade trace in fixtures/sweep17/ with values
computed by hand."""

from __future__ import annotations

import json

import pytest

import duckprof
from conftest import REPO
from duckprof.diff import diff

SWEEP = REPO / "fixtures" / "sweep17"
NOT_LISTED = SWEEP / "rocm_device_not_listed.json"


def report_rows(s, name, **options):
    rel = s.report(name, **options)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


# -- a device that ran the work but has no deviceProperties entry (ROCm) --------------------
# Every TraceLens MI300X trace (tests/traces/mi300/*, inference/*) lists one GPU, id 0 ('AMD
# Instinct MI300X VF'), and runs its kernels on device 2. The kernels report gives device 2
# the only model's peaks (gpu_devices); devices, diff's header and the collectives' link peak
# read deviceProperties alone and had nothing for it.

@pytest.fixture(scope="module")
def not_listed():
    with duckprof.connect() as s:
        s.load([str(NOT_LISTED)], run="r")
        yield s


def test_devices_report_gives_an_unlisted_device_the_only_models_peaks(not_listed):
    """Before: device 2 (both kernels) had no peak device and no peaks, device 0 (idle) had them."""
    rows = {r["device"]: r for r in report_rows(not_listed, "devices")}
    assert sorted(rows) == [0, 2]
    assert (rows[2]["gpu_events"], rows[2]["device_name"], rows[2]["peak_device"], rows[2]["bf16_tflops"],
            rows[2]["dram_gbps"]) == (2, None, "AMD Instinct MI300X", 1307.4, 5300.0)
    assert (rows[0]["gpu_events"], rows[0]["peak_device"]) == (0, "AMD Instinct MI300X")
    notes = not_listed.report_result("devices").notes
    assert notes == ["rocm_device_not_listed.json: device 2 is not in the trace's deviceProperties; it gets "
                     "the peaks of the only device model they name, 'AMD Instinct MI300X VF'"]


def test_collectives_on_an_unlisted_device_get_the_link_peak(not_listed):
    """The all_reduce (8 ranks, 1,048,576 Float, 100 µs) on device 2: algbw 4,194,304 B / 100 µs
    = 41.94304 GB/s, busbw x 2(8-1)/8 = 73.40032 GB/s; MI300X's Infinity Fabric 448 GB/s per
    direction: 16.384% (before: no interconnect peak, no %)."""
    (row,) = report_rows(not_listed, "collectives")
    assert row["collective"] == "all_reduce" and row["msg_bytes"] == 4_194_304
    assert row["busbw_gbps"] == pytest.approx(73.40032)
    assert row["interconnect_gbps"] == 448.0
    assert row["busbw_peak_pct"] == pytest.approx(73.40032 / 448 * 100)


def test_diff_names_an_unlisted_or_unnamed_device(tmp_path):
    """diff's header names the GPUs of each side: device 2 is the only model listed (before:
    'device 2'); a device whose deviceProperties name is '' (TraceLens's vllm_decode_full
    graph_execution) is the datasheet model its memory and CUs matched (before: 'device 2')."""
    trace = json.loads(NOT_LISTED.read_text())
    trace["deviceProperties"][0]["name"] = ""
    trace["deviceProperties"][0]["totalGlobalMem"] = 206141652992  # 192 GiB: the MI300X's fallback range
    unnamed = tmp_path / "unnamed.json"
    unnamed.write_text(json.dumps(trace))
    with diff(str(NOT_LISTED), str(unnamed)) as d:
        assert [x["devices"] for x in d.sides] == ["AMD Instinct MI300X VF", "AMD Instinct MI300X"]
