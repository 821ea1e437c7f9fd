"""The kernels report (sql/reports/kernels.sql), its views (kernel_estimates,
trace_devices) and `duckprof report kernels`.

Expected numbers are computed by hand from the values written by
fixtures/kernels/make_fixtures.py (see each test), from datasheet rows of
duckprof/data/peaks.csv, or counted independently from the corpus files with
Python's json module.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import io
import json
import os
import re
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import (CORPUS, REPO, cli_app, invoke, needs_corpus, read_trace, rows, run_cli, scalar,  # noqa: F401
                      trace_events)

import duckprof
from duckprof.peaks import packaged_rows, seed_peaks
from duckprof.reports import peak_key

FIX = REPO / "fixtures" / "kernels"
H100 = FIX / "h100_two_kernels_one_op.json"

sys.path.insert(0, str(Path(__file__).parent))
from test_peaks_data import match as reference_match  # noqa: E402  (the documented matching rule)

# datasheet rows used below (duckprof/data/peaks.csv)
H100_BF16, H100_FP32, H100_BW = 989.5, 67.0, 3350.0
MI300X_BF16, MI300X_BW = 1307.4, 5300.0

# aten::mm 4096 x 4096 x 4096 bf16 (fixture): GEMM 300 us + split-K reduce 100 us
MM_FLOPS = 2 * 4096 ** 3                     # 137,438,953,472
MM_BYTES = 3 * 4096 * 4096 * 2               # two inputs read, one output written: 100,663,296
GEMM_FLOPS, REDUCE_FLOPS = MM_FLOPS, 0      # FLOPs to the GEMM kernel; the split-K reduce does none
GEMM_BYTES, REDUCE_BYTES = MM_BYTES * 3 // 4, MM_BYTES - MM_BYTES * 3 // 4  # bytes by duration 300 : 100
ADD_BYTES = 3 * 1048576 * 4                  # aten::add of two 2^20 fp32 vectors
BUSY_US = 420 + 10 + 20 + 50                 # [1000,1420] (gemm, memcpy, reduce) + adds + custom kernel


def session(*paths, run="default", db=None):
    s = duckprof.connect(db)
    seed_peaks(s.con)
    if paths:
        s.load([str(p) for p in paths], run=run)
    return s


@pytest.fixture(scope="module")
def h100():
    """The H100 fixture loaded once for the tests that only read it (queries and
    reports): `with h100 as s:` (the session stays open for the next test)."""
    with session(H100) as s:
        yield contextlib.nullcontext(s)


def kernels_report(s, **kw):
    res = s.report_result("kernels", **kw)
    return res.relation, res.notes


def report(s, **kw):
    rel, notes = kernels_report(s, **kw)
    cols = rel.columns
    return [dict(zip(cols, r)) for r in rel.fetchall()], notes


def by_name(rows_):
    return {r["name"]: r for r in rows_}


# --------------------------------------------------------------------------- kernel_estimates

def test_estimates_flops_to_math_kernels_bytes_by_duration_add_up_exactly(h100):
    """issue 13 item 4: an op's FLOPs go to its GEMM/conv/attention kernels (by
    kernel_categories), its other kernels (here cuBLAS's split-K reduce) get 0
    FLOPs and their share of the bytes (by duration, 300 : 100)."""
    with h100 as s:
        est = {r[0]: r[1:] for r in rows(s, """
            SELECT name, op_kernels, op_flops, op_bytes, flops, bytes, dtype, dtype_source, peak_dtype,
                   category, math_kernel, flops_formula, bytes_formula
            FROM kernel_estimates WHERE name <> 'dot_kernel_part' AND name <> 'vectorized_elementwise_kernel_add'""")}
        assert est["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"] == (
            2, MM_FLOPS, MM_BYTES, 137_438_953_472, 75_497_472, "bf16", "op", "bf16", "gemm", True, "gemm", "gemm")
        assert est["splitKreduce_kernel"] == (
            2, MM_FLOPS, MM_BYTES, 0, 25_165_824, "bf16", "op", "bf16", "reduction", False, "gemm", "gemm")
        assert (GEMM_FLOPS, REDUCE_FLOPS, GEMM_BYTES, REDUCE_BYTES) == (
            137_438_953_472, 0, 75_497_472, 25_165_824)
        # a kernel no op launched: nothing known (its name says no dtype either)
        assert est["my_custom_kernel"] == (1, None, None, None, None, None, None, None, "other", None, None, None)
        adds = rows(s, "SELECT op_kernels, op_flops, op_bytes, flops, bytes, dtype, peak_dtype FROM kernel_estimates "
                       "WHERE name = 'vectorized_elementwise_kernel_add'")
        assert adds == [(1, None, ADD_BYTES, None, ADD_BYTES, "fp32", "fp32")] * 2
        # three zero-duration kernels of one aten::dot (10 FLOPs, 44 bytes), none named like a GEMM:
        # then every kernel of the op shares the FLOPs. Equal weights, floor(10/3) = 3 each, the 1
        # left over to the "longest" (a tie: the first in the file); bytes 14 each + 2
        dots = rows(s, "SELECT flops, bytes, op_flops, op_kernels FROM kernel_estimates WHERE name = 'dot_kernel_part' "
                       "ORDER BY ts_ns")
        assert dots == [(4, 16, 10, 3), (3, 14, 10, 3), (3, 14, 10, 3)]
        # per op: the kernels' shares add up to the op's estimate, exactly
        assert scalar(s, """SELECT count(*) FROM (
            SELECT op_event_id, any_value(op_flops) f, sum(flops) sf, any_value(op_bytes) b, sum(bytes) sb
            FROM kernel_estimates WHERE op_event_id IS NOT NULL GROUP BY 1)
            WHERE f IS DISTINCT FROM sf OR b IS DISTINCT FROM sb""") == 0


@needs_corpus
def test_corpus_per_op_totals_add_up_exactly(corpus_session):
    s, ids, _ = corpus_session
    multi = scalar(s, "SELECT count(DISTINCT (trace_id, op_event_id)) FROM kernel_estimates "
                      "WHERE op_kernels > 1 AND op_flops > 0")
    assert multi > 500  # the corpus has many ops with several kernels (cudnn, miopen, split-K): 852
    bad = rows(s, """SELECT trace_id, op_event_id FROM kernel_estimates WHERE op_event_id IS NOT NULL
                     GROUP BY ALL HAVING any_value(op_flops) IS DISTINCT FROM sum(flops)
                         OR any_value(op_bytes) IS DISTINCT FROM sum(bytes) LIMIT 5""")
    assert bad == []
    # every kernel appears exactly once
    assert scalar(s, "SELECT count(*) FROM kernel_estimates") == scalar(s, "SELECT count(*) FROM kernels")


@needs_corpus
def test_corpus_flops_only_on_math_kernels(corpus_session):
    """issue 13 item 4 (Done when): on every corpus trace no kernel outside the math
    categories (gemm, conv, attention, triton_template) has FLOPs, and every op's
    FLOPs still add up exactly (test above). On h100_vit_inference the cuDNN
    convolution's layout transforms (nchwToNhwc, nhwcToNchw: conv helpers, conv time)
    get 0 FLOPs and its cutlass fprop kernel all 924,844,032 (the op's), where main
    gave the transforms their share by duration (24.7 TFLOP/s on a transform)."""
    s, ids, _ = corpus_session
    assert scalar(s, """SELECT count(*) FROM kernel_estimates WHERE flops > 0
                        AND category NOT IN ('gemm', 'conv', 'attention', 'triton_template')""") == 0
    conv = rows(s, """SELECT category, count(*), sum(flops)::BIGINT, any_value(op_flops) FROM kernel_estimates
                      WHERE trace_id = $t AND op_name = 'aten::cudnn_convolution' GROUP BY 1 ORDER BY 1""",
                {"t": ids["h100_vit_inference.json.gz"]})
    assert conv == [("conv", 4, 924_844_032, 924_844_032)]
    assert rows(s, """SELECT count(*), max(flops) FROM kernel_estimates WHERE trace_id = $t
                      AND op_name = 'aten::cudnn_convolution' AND name LIKE '%To%Kernel<%'""",
                {"t": ids["h100_vit_inference.json.gz"]}) == [(3, 0)]


@needs_corpus
def test_corpus_no_unflagged_kernel_above_peak(corpus_session, corpus_report):
    """issue 13 item 5 (Done when): on every corpus trace each kernel row above 100% of
    a peak carries over_peak and a note naming the op and estimator; the v100 traces'
    Winograd convolutions (163% of fp32) are among them."""
    s, ids, _ = corpus_session
    out, notes = corpus_report
    above = [r for r in out if (r["compute_pct"] or 0) > 100 or (r["bandwidth_pct"] or 0) > 100]
    assert above  # the corpus has some: v100 Winograd convs, a b200 gather
    for r in above:
        want = ",".join(w for w, p in (("compute", r["compute_pct"]), ("bandwidth", r["bandwidth_pct"]))
                        if (p or 0) > 100)
        assert r["over_peak"] == want, r["name"]
    assert all(r["over_peak"] is None for r in out if r not in above)
    flagged_notes = [n for n in notes if "(over_peak)" in n]
    assert len(flagged_notes) == min(20, sum(len(r["over_peak"].split(",")) for r in above))
    v100 = [n for n in flagged_notes if n.startswith("v100_resnet50_workers0_2021.json.gz: volta_scudnn_winograd")]
    assert v100 and "conv_backward estimator" in v100[0] and "Winograd" in v100[0]


@needs_corpus
def test_corpus_dtypes(corpus_session):
    s, ids, _ = corpus_session
    h100 = ids["h100_vit_inference.json.gz"]
    got = dict(rows(s, """SELECT name, any_value(dtype) FROM kernel_estimates WHERE trace_id = $t
                          AND (name LIKE '%s16816gemm%' OR name LIKE 'sm90_xmma_gemm%') GROUP BY 1""", {"t": h100}))
    assert got and set(got.values()) == {"bf16"}
    # fp32 ops whose kernels run on TF32 tensor cores use the tf32 peak (A100 cuDNN / cutlass s1688)
    a100 = ids["a100_train_rank0.json.gz"]
    assert rows(s, """SELECT DISTINCT peak_dtype FROM kernel_estimates WHERE trace_id = $t AND dtype = 'fp32'
                      AND name LIKE '%tensorop_s1688gemm%'""", {"t": a100}) == [("tf32",)]


# --------------------------------------------------------------------------- trace_devices

DEVICE_CASES = [
    ("NVIDIA H100 80GB HBM3", 85018279936, 132),
    ("NVIDIA A100-SXM4-80GB", 84990623744, 108),
    ("NVIDIA A100-PG509-200", 42297524224, 108),
    ("NVIDIA B200", 191503138816, 148),
    ("AMD Instinct MI300X", 206141652992, 304),
    ("AMD Radeon Graphics", 206141652992, 304),   # fallback: MI300X by CUs + memory
    ("AMD Radeon Graphics", 68702699520, 104),    # fallback: MI250 GCD
    ("AMD Instinct MI210", 68702699520, 104),     # by name: its own row, not the MI250 GCD fallback
    ("", 68702699520, 110),                       # fallback: MI250X GCD
    ("AMD Radeon Graphics", 68702699520, 304),    # CUs and memory disagree: none
    ("Tesla V100-DGXS-32GB", 34087305216, 80),
    ("NVIDIA GeForce RTX 4090", 25393692672, 128),   # by name since its row was added
    ("NVIDIA GeForce RTX 2080 Ti", 11554717696, 68), # no row
    ("NVIDIA A10G", 23836098560, 80),             # no row: not the A10's (72 SMs)
    ("NVIDIA A10", 23836098560, 72),
    ("NVIDIA H800 PCIe", 85520809984, 114),       # its own row, before the H800 SXM's
    ("NVIDIA H20", 102005473280, 78),
    ("AMD Instinct MI300A", 128 * 2**30, 228),    # by name (no fallback range on the MI300A row)
    ("Tesla T4", 15828320256, 40),                # 15095.0625 MiB, as a T4 reports it (torch, PrunaAI's results)
    ("AMD Instinct MI100", 32 * 2**30, 120),      # by name (the MI100 row has no fallback range)
    ("", 32 * 2**30, 120),                        # ...so unnamed with its CUs and memory: none
    ("NVIDIA L40", 48 * 10**9, 142),              # not the L40S row
    ("ARTEMIS", None, None),
    (None, None, None),
]


def test_device_peak_matches_the_reference_rule():
    with session() as s:
        for i, (name, mem, sms) in enumerate(DEVICE_CASES):
            s.con.execute("INSERT INTO devices (trace_id, device, name, total_global_mem_bytes, num_sms) "
                          "VALUES (1, $d, $n, $m, $s)", {"d": i, "n": name, "m": mem, "s": sms})
        got = {d: (peak, how, bw) for d, peak, how, bw in rows(
            s, "SELECT device, peak_device, matched_by, dram_gbps FROM trace_devices")}
        assert len(got) == len(DEVICE_CASES)
        for i, (name, mem, sms) in enumerate(DEVICE_CASES):
            ref = reference_match(name, mem, sms)
            assert got[i][0] == (ref["device"] if ref else None), name
            assert got[i][2] == (ref["dram_gbps"] if ref else None), name
            if ref:
                by_name_ = bool(name) and re.search(ref["device_pattern"], name, re.I)
                assert got[i][1] == ("name" if by_name_ else "memory_and_cus"), name


def test_device_peaks_seeded_from_csv_and_user_rows_win():
    with session() as s:
        packaged = packaged_rows()
        assert scalar(s, "SELECT count(*) FROM device_peaks") == len(packaged)
        assert seed_peaks(s.con) == 0  # idempotent
        h = rows(s, "SELECT bf16_tflops, fp8_tflops, dram_gbps FROM device_peaks WHERE device = 'NVIDIA H100 SXM5'")
        assert h == [(H100_BF16, 1979.0, H100_BW)]
        s.con.execute("INSERT INTO devices (trace_id, device, name, total_global_mem_bytes, num_sms) "
                      "VALUES (1, 0, 'NVIDIA GeForce RTX 4090', 25393692672, 128), "
                      "(1, 1, 'NVIDIA H100 80GB HBM3', 85018279936, 132)")
        s.con.execute("INSERT INTO device_peaks (priority, device_pattern, device, vendor, fp32_tflops, "
                      "bf16_tflops, dram_gbps) VALUES (1, 'RTX 4090', 'my 4090', 'NVIDIA', 82.6, 165.2, 1008), "
                      "(2, 'H100', 'my H100 clocks', 'NVIDIA', 50, 700, 3000)")
        got = dict(rows(s, "SELECT device, peak_device FROM trace_devices"))
        assert got == {0: "my 4090", 1: "my H100 clocks"}  # lower priority wins over the packaged rows


# --------------------------------------------------------------------------- the report

def test_report_hand_computed_values(h100):
    with h100 as s:
        out, notes = report(s, limit=0)
        r = by_name(out)
        assert [x["name"] for x in out] == [  # total time, descending
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk", "splitKreduce_kernel",
            "my_custom_kernel", "vectorized_elementwise_kernel_add", "dot_kernel_part"]
        g = r["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"]
        assert (g["count"], g["total_us"], g["mean_us"], g["min_us"], g["max_us"]) == (1, 300.0, 300.0, 300.0, 300.0)
        assert g["busy_pct"] == round(100 * 300 / BUSY_US, 2) == 60.0
        assert (g["flops"], g["bytes"]) == (GEMM_FLOPS, GEMM_BYTES)
        tflops = GEMM_FLOPS / 300e-6 / 1e12                       # 458.130 TFLOP/s
        gbps = GEMM_BYTES / 300e-6 / 1e9                          # 251.66 GB/s
        assert g["achieved_tflops"] == round(tflops, 3) == 458.13
        assert g["achieved_gbps"] == round(gbps, 2)
        assert (g["peak_dtype"], g["peak_tflops"], g["peak_gbps"]) == ("bf16", H100_BF16, H100_BW)
        assert g["compute_pct"] == round(100 * tflops / H100_BF16, 2) == 46.3
        assert g["bandwidth_pct"] == round(100 * gbps / H100_BW, 2) == 7.51
        assert g["flops_per_byte"] == round(MM_FLOPS / GEMM_BYTES, 3) == 1820.444  # all FLOPs, 3/4 of the bytes
        assert g["ridge_flops_per_byte"] == round(H100_BF16 * 1e12 / (H100_BW * 1e9), 2) == 295.37
        assert g["bound"] == "compute"
        red = r["splitKreduce_kernel"]
        assert (red["flops"], red["bytes"], red["busy_pct"]) == (REDUCE_FLOPS, REDUCE_BYTES, 20.0)
        assert (red["achieved_tflops"], red["compute_pct"]) == (0.0, 0.0)  # a reduce does no GEMM math
        add = r["vectorized_elementwise_kernel_add"]
        assert (add["count"], add["total_us"], add["mean_us"], add["min_us"], add["max_us"]) == (2, 30.0, 15.0, 10.0, 20.0)
        assert add["busy_pct"] == 6.0
        assert (add["flops"], add["bytes"]) == (None, 2 * ADD_BYTES)
        assert add["achieved_gbps"] == round(2 * ADD_BYTES / 30e-6 / 1e9, 2) == 838.86
        assert add["bandwidth_pct"] == round(100 * 2 * ADD_BYTES / 30e-6 / 1e9 / H100_BW, 2) == 25.04
        assert (add["compute_pct"], add["bound"], add["peak_tflops"]) == (None, None, H100_FP32)
        c = r["my_custom_kernel"]
        assert (c["busy_pct"], c["flops"], c["compute_pct"], c["bandwidth_pct"], c["peak_gbps"]) == (
            10.0, None, None, None, H100_BW)
        d = r["dot_kernel_part"]  # 0 ns kernels: no rate, but FLOPs and the (plain mean) peaks
        assert (d["count"], d["flops"], d["achieved_tflops"], d["peak_tflops"], d["bound"]) == (
            3, 10, None, H100_FP32, "memory")
        assert notes == []


def test_report_options_limit_sort_device_group_by_launch(h100):
    with h100 as s:
        out, _ = report(s, limit=2)
        assert [x["name"] for x in out] == ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk",
                                            "splitKreduce_kernel"]
        out, _ = report(s, limit=0, sort="name")
        assert [x["name"] for x in out] == sorted(x["name"] for x in out)
        out, _ = report(s, limit=1, sort="count")
        assert out[0]["name"] == "dot_kernel_part"
        out, _ = report(s, limit=1, sort="bandwidth")
        assert out[0]["name"] == "vectorized_elementwise_kernel_add"
        out, _ = report(s, limit=0, device=0)
        assert len(out) == 5
        out, notes = report(s, limit=0, device=3)
        assert out == [] and any("no GPU kernels" in n for n in notes)
        out, _ = report(s, limit=0, group_by_launch=True)
        adds = [x for x in out if x["name"] == "vectorized_elementwise_kernel_add"]
        assert sorted((x["block"], x["count"], x["total_us"]) for x in adds) == [
            ("[128,1,1]", 1, 10.0), ("[256,1,1]", 1, 20.0)]
        gemm = [x for x in out if x["name"].startswith("sm90")][0]
        assert (gemm["grid"], gemm["block"]) == ("[32,32,4]", "[256,1,1]")


def test_report_overrides_and_dtype(h100):
    with h100 as s:
        out, _ = report(s, limit=0, peak_tflops=500.0, peak_gbps=1000.0)
        g = by_name(out)["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"]
        assert (g["peak_tflops"], g["peak_gbps"]) == (500.0, 1000.0)
        assert g["compute_pct"] == round(100 * GEMM_FLOPS / 300e-6 / 1e12 / 500, 2)
        assert g["bandwidth_pct"] == round(100 * GEMM_BYTES / 300e-6 / 1e9 / 1000, 2)
        assert g["ridge_flops_per_byte"] == 500.0
        # --dtype only fills in kernels without a dtype (my_custom_kernel); known dtypes stay
        out, _ = report(s, limit=0, dtype="bfloat16")
        r = by_name(out)
        assert (r["my_custom_kernel"]["peak_dtype"], r["my_custom_kernel"]["peak_tflops"]) == ("bf16", H100_BF16)
        assert r["vectorized_elementwise_kernel_add"]["peak_dtype"] == "fp32"
    assert [peak_key(x) for x in ("float", "fp32", "tf32", "bfloat16", "c10::Half", "half", "float8_e4m3fn",
                                  "double", "int8", "BF16")] == [
        "fp32", "fp32", "tf32", "bf16", "fp16", "fp16", "fp8", "fp64", "int8", "bf16"]
    with pytest.raises(duckprof.DuckprofError, match="--dtype"):
        peak_key("int64")


def test_unknown_device_says_so_instead_of_zero():
    with session(FIX / "unknown_device.json") as s:
        out, notes = report(s, limit=0)
        assert all(x["compute_pct"] is None and x["bandwidth_pct"] is None for x in out)
        assert notes == ["unknown_device.json: no peak for device 0 'NVIDIA GeForce RTX 2080 Ti'; "
                         "pass --peak-tflops/--peak-gbps"]
        out, notes = report(s, limit=0, peak_tflops=165.2, peak_gbps=1008.0)
        g = by_name(out)["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"]
        assert g["compute_pct"] == round(100 * GEMM_FLOPS / 300e-6 / 1e12 / 165.2, 2) == 277.32
        # an H100's GEMM rate against the compute peak given (165.2): flagged, and the note says whose peak
        assert g["over_peak"] == "compute"
        assert notes == ["unknown_device.json: sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64… "
                         "(device 0) runs at 277% of the compute peak given (--peak-tflops), which no kernel "
                         "reaches (over_peak): its FLOPs come from aten::mm by the gemm estimator "
                         "(duckprof/estimators/gemm.py); check the dtype whose peak applies and the op's "
                         "recorded shapes"]
        out, notes = report(s, limit=0, peak_gbps=1008.0)
        assert notes == ["unknown_device.json: no peak for device 0 'NVIDIA GeForce RTX 2080 Ti'; pass --peak-tflops"]


def test_device_not_in_device_properties():
    """issue 13 item 6: kernels on a device index the trace's deviceProperties do not list
    (fixtures/kernels/device_not_listed*.json: the H100 fixture's device work on device 2,
    resp. 5). One model listed (MI300X, id 0): its peaks, and a note says so; two models
    listed (H100, RTX 4090): 'no peak for device 5' instead of a silent empty %."""
    with session(FIX / "device_not_listed.json") as s:
        assert rows(s, "SELECT device, listed, assumed, device_name, peak_device FROM gpu_devices ORDER BY 1") == [
            (0, True, False, "AMD Instinct MI300X", "AMD Instinct MI300X"),
            (2, False, True, "AMD Instinct MI300X", "AMD Instinct MI300X")]
        out, notes = report(s, limit=0)
        g = by_name(out)["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"]
        assert g["device"] == 2 and (g["peak_tflops"], g["peak_gbps"]) == (MI300X_BF16, MI300X_BW)
        assert g["compute_pct"] == round(100 * MM_FLOPS / 300e-6 / 1e12 / MI300X_BF16, 2) == 35.04
        assert g["bandwidth_pct"] == round(100 * GEMM_BYTES / 300e-6 / 1e9 / MI300X_BW, 2) == 4.75
        assert notes == ["device_not_listed.json: device 2 is not in the trace's deviceProperties; it gets the "
                         "peaks of the only device model they name, 'AMD Instinct MI300X'"]
    with session(FIX / "device_not_listed_two_models.json") as s:
        out, notes = report(s, limit=0)
        assert {x["device"] for x in out} == {5}
        assert all(x["compute_pct"] is None and x["bandwidth_pct"] is None and x["peak_gbps"] is None for x in out)
        assert notes == ["device_not_listed_two_models.json: no peak for device 5 (it is not in the trace's "
                         "deviceProperties, which name several device models); pass --peak-tflops/--peak-gbps"]


def test_amd_fallback_on_memory_and_compute_units():
    with session(FIX / "amd_fallback.json") as s:
        assert rows(s, "SELECT device_name, peak_device, matched_by FROM trace_devices") == [
            ("AMD Radeon Graphics", "AMD Instinct MI300X", "memory_and_cus")]
        out, notes = report(s, limit=0)
        g = by_name(out)["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"]
        assert g["compute_pct"] == round(100 * GEMM_FLOPS / 300e-6 / 1e12 / MI300X_BF16, 2)
        assert g["bandwidth_pct"] == round(100 * GEMM_BYTES / 300e-6 / 1e9 / MI300X_BW, 2)
        assert notes == []


def test_mtia_compute_is_kernels():
    """issue 13 item 7: an accelerator's compute activity (MTIA mtia_ccp_events) is
    kernels in the kernels report, the kernels view and the categories; its DMA
    transfers are memcpys. fixtures/kernels/mtia.json (make_fixtures.py, mtia_events):
    pe_exe 300 + 100 us, merge 50 us, dma_request 40 + 20 us; busy = union = 500 us."""
    with session(FIX / "mtia.json") as s:
        out, notes = report(s, limit=0)
        assert [(r["device"], r["name"], r["count"], r["total_us"], r["busy_pct"]) for r in out] == [
            (17, "pe_exe", 2, 400.0, 80.0), (17, "merge", 1, 50.0, 10.0)]
        assert notes == [  # not "no GPU kernels"
            "mtia.json: no input shapes recorded (record_shapes=False): FLOPs and bytes are unknown, "
            "so no % of peak", "mtia.json: no peak for device 17 'ARTEMIS'; pass --peak-tflops/--peak-gbps"]
        assert rows(s, "SELECT kind, name, count(*) FROM gpu_ops GROUP BY ALL ORDER BY 1, 2") == [
            ("kernel", "merge", 1), ("kernel", "pe_exe", 2), ("memcpy", "dma_request", 2)]
        assert rows(s, "SELECT name, category FROM kernel_categories ORDER BY 1") == [
            ("dma_request", "memcpy_other"), ("merge", "other"), ("pe_exe", "other")]
        assert scalar(s, "SELECT count(*) FROM kernels") == 3
        # what temporal counts as compute is what the kernels report lists: 450 us
        (t,) = s.report("temporal").fetchall()
        assert t[6] == 450.0 and t[9] == 50.0  # compute_us, memory_us (dma alone: 40 + 10)
        # the runtime calls launch them (launches view)
        assert rows(s, "SELECT name, launch_name FROM launches WHERE kind = 'kernel' ORDER BY ts_ns") == [
            ("pe_exe", "runFunction - job_prep_and_submit_for_execution"),
            ("pe_exe", "runFunction - job_prep_and_submit_for_execution"), ("merge", "enqueueCommand merge")]


def test_over_peak_is_flagged_and_explained(cli_app):
    """issue 13 item 5: a kernel above 100% of a peak gets over_peak and a note naming
    the estimator and op behind the number. fixtures/kernels/over_peak.json
    (make_fixtures.py, over_peak_events): a Winograd conv kernel, an add, a GEMM."""
    conv_flops = 2 * 32 * 256 * 28 * 28 * 256 * 3 * 3           # 29,595,009,024
    conv_bytes = 2 * 32 * 256 * 28 * 28 * 2 + 256 * 256 * 9 * 2  # in + out + weight, bf16
    with session(FIX / "over_peak.json") as s:
        out, notes = report(s, limit=0)
        r = by_name(out)
        conv = r["cudnn_winograd_fprop_bf16_kernel"]
        assert (conv["flops"], conv["bytes"]) == (conv_flops, conv_bytes)
        assert conv["compute_pct"] == round(100 * conv_flops / 20e-6 / 1e12 / H100_BF16, 2) == 149.55
        assert conv["bandwidth_pct"] == round(100 * conv_bytes / 20e-6 / 1e9 / H100_BW, 2) == 40.1
        assert conv["over_peak"] == "compute"
        add = r["vectorized_elementwise_kernel_add"]
        assert add["bandwidth_pct"] == round(100 * ADD_BYTES / 3e-6 / 1e9 / H100_BW, 2) == 125.2
        assert add["over_peak"] == "bandwidth"
        assert r["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"]["over_peak"] is None
        assert notes == [
            "over_peak.json: cudnn_winograd_fprop_bf16_kernel (device 0) runs at 150% of the bf16 compute "
            "peak, which no kernel reaches (over_peak): its FLOPs come from aten::convolution by the conv "
            "estimator (duckprof/estimators/conv.py); a Winograd or FFT convolution does fewer multiplies "
            "than the direct formula counts",
            "over_peak.json: vectorized_elementwise_kernel_add (device 0) runs at 125% of the DRAM bandwidth "
            "peak, which no kernel reaches (over_peak): its bytes come from aten::add by the elementwise rule "
            "(duckprof/estimators/traffic.py), the minimum DRAM traffic of the op's tensors; data served from "
            "L2 cache (small or reused tensors), or a gather that reads only the rows it picks, moves less"]
        # with a user peak high enough, nothing is flagged and nothing said
        out, notes = report(s, limit=0, peak_tflops=2000.0, peak_gbps=5000.0)
        assert [x["over_peak"] for x in out] == [None] * 3 and notes == []
    # the default terminal table shows the flag
    res = invoke(cli_app, "report", "kernels", FIX / "over_peak.json")
    assert res.exit_code == 0, res.output
    head, *lines = res.stdout.splitlines()
    assert "over peak" in head
    assert any("cudnn_winograd" in l and "compute" in l for l in lines)
    assert any("vectorized_elementwise" in l and "bandwidth" in l for l in lines)


def test_no_shapes_no_devices_still_runs_and_says_what_is_missing():
    with session(FIX / "no_shapes_no_devices.json") as s:
        out, notes = report(s, limit=0)
        assert len(out) == 5 and all(x["flops"] is None and x["bytes"] is None for x in out)
        assert by_name(out)["vectorized_elementwise_kernel_add"]["busy_pct"] == 6.0
        assert notes == [
            "no_shapes_no_devices.json: no input shapes recorded (record_shapes=False): "
            "FLOPs and bytes are unknown, so no % of peak",
            "no_shapes_no_devices.json: no deviceProperties, so no device peaks; pass --peak-tflops/--peak-gbps"]


def test_bad_options(h100):
    with h100 as s:
        for kw, msg in (({"sort": "speed"}, "--sort"), ({"limit": -1}, "--limit"),
                        ({"peak_tflops": 0.0}, "--peak-tflops"), ({"peak_gbps": -5.0}, "--peak-gbps")):
            with pytest.raises(duckprof.DuckprofError, match=msg):
                kernels_report(s, **kw)


# --------------------------------------------------------------------------- CLI, formats, persistent db

@pytest.mark.slow
def test_cli_formats(cli_app, tmp_path):
    res = invoke(cli_app, "report", "kernels", H100, "--format", "csv")
    assert res.exit_code == 0, res.output
    table = list(csv.DictReader(io.StringIO(res.stdout)))
    assert table[0]["name"].startswith("sm90_xmma_gemm") and table[0]["compute_pct"] == "46.3"
    res = invoke(cli_app, "report", "kernels", H100, "-f", "json", "--sort", "name", "-n", "2")
    data = json.loads(res.stdout)
    assert [d["name"] for d in data] == ["dot_kernel_part", "my_custom_kernel"]
    res = invoke(cli_app, "report", "kernels", H100, "-f", "markdown", "--name-width", "12")
    assert res.exit_code == 0 and "| sm90_xmma_g… |" in res.stdout
    res = invoke(cli_app, "report", "kernels", H100, "--name-width", "20")
    assert res.exit_code == 0 and "splitKreduce_kernel" in res.stdout and "sm90_xmma_gemm_bf16…" in res.stdout
    out = tmp_path / "k.parquet"
    res = invoke(cli_app, "report", "kernels", H100, "-f", "parquet", "-o", out, "--group-by-launch")
    assert res.exit_code == 0, res.output
    assert duckdb.connect().execute(f"SELECT count(*), sum(count) FROM '{out}'").fetchall() == [(6, 8)]
    res = invoke(cli_app, "report", "kernels", "--help")
    assert "Example: duckprof report kernels" in res.stdout
    for opt in ("--device", "--limit", "--sort", "--name-width", "--group-by-launch", "--dtype", "--peak-tflops",
                "--peak-gbps", "--run", "--db", "--format", "--output"):
        assert opt in res.stdout


@pytest.mark.slow  # three real processes (in process: test_cli_formats, test_persistent_db_runs_...)
def test_cli_notes_on_stderr_and_bad_input():
    r = run_cli("report", "kernels", FIX / "unknown_device.json", "-f", "csv")
    assert r.returncode == 0
    assert r.stdout.startswith("run,trace_id,rank,device,name,count,total_us")
    assert "note: unknown_device.json: no peak for device 0 'NVIDIA GeForce RTX 2080 Ti'" in r.stderr
    r = run_cli("report", "kernels", H100, "--sort", "nope")
    assert r.returncode == 2 and "--sort" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("report", "kernels", FIX / "missing.json")
    assert r.returncode == 2 and "missing.json" in r.stderr


@pytest.mark.slow
def test_persistent_db_runs_and_plain_duckdb_sees_the_views(cli_app, tmp_path):
    db = tmp_path / "k.duckdb"
    with duckprof.connect(db) as s:
        seed_peaks(s.con)  # what database creation does
        s.load([str(H100)], run="a")
        s.load([str(FIX / "amd_fallback.json")], run="b")
    r = invoke(cli_app, "report", "kernels", "--db", db, "--run", "b", "-f", "json", "-n", "1")
    assert r.exit_code == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert (row["run"], row["peak_tflops"]) == ("b", MI300X_BF16)
    r = invoke(cli_app, "report", "kernels", "--db", db, "-f", "csv", "-n", "1")
    assert [l.split(",")[0] for l in r.stdout.splitlines()[1:]] == ["a", "b"]
    r = invoke(cli_app, "report", "kernels", "--db", db, "--run", "zzz")
    assert r.exit_code == 2 and "zzz" in r.stderr
    # no duckprof, no UDFs: the views work from a plain DuckDB connection
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT sum(flops) FROM kernel_estimates WHERE name LIKE 'sm90%'").fetchall() == [
        (2 * GEMM_FLOPS,)]
    assert con.execute("SELECT DISTINCT peak_device FROM trace_devices ORDER BY 1").fetchall() == [
        ("AMD Instinct MI300X",), ("NVIDIA H100 SXM5",)]


# --------------------------------------------------------------------------- the real corpus

@pytest.fixture(scope="module")
def corpus_report(corpus_session):
    """The report over the whole corpus (limit 0), computed once: (rows, notes)."""
    s, _ids, _ = corpus_session
    seed_peaks(s.con)
    return report(s, limit=0)


@needs_corpus
def test_corpus_report_runs_everywhere_and_counts_match_json(corpus_session, corpus_report):
    s, ids, _ = corpus_session
    out, notes = corpus_report
    got = collections.Counter()
    for r in out:
        got[(r["trace_id"], r["device"], r["name"])] += r["count"]
    expected = collections.Counter()
    for name, tid in ids.items():
        for e in trace_events(read_trace(CORPUS / name)):
            cat = str(e.get("cat", "")).lower()
            # kernels, and other accelerators' compute (MTIA: mtia_ccp_events but DMA transfers)
            if e.get("ph") == "X" and (cat == "kernel" or (
                    cat == "mtia_ccp_events" and not str(e.get("name")).startswith(("dma", "Memcpy", "Memset")))):
                a = e.get("args") or {}
                dev = a.get("device", e.get("pid"))
                expected[(tid, int(dev) if str(dev).lstrip("-").isdigit() else None, e.get("name"))] += 1
    assert got == expected
    # every trace without kernels says so
    no_kernels = {n for n in ids if not any(k[0] == ids[n] for k in expected)}
    for n in no_kernels:
        assert f"{n}: no GPU kernels in this trace" in notes


@needs_corpus
@pytest.mark.parametrize("name", ["a100_train_rank0.json.gz", "a100_triton_kernel.json.gz",
                                  "h100_vit_inference.json.gz", "b200_eager_stack.json.gz",
                                  "mi300x_resnet_act_checkpoint.json.gz", "mi250_rocm_train.json.gz",
                                  "v100_resnet50_workers0_2021.json.gz"])
def test_corpus_nonzero_percent_of_peak(corpus_session, corpus_report, name):
    s, ids, _ = corpus_session
    out, _ = corpus_report
    mine = [r for r in out if r["trace_id"] == ids[name]]
    assert mine
    assert max((r["bandwidth_pct"] or 0) for r in mine) > 0
    if name != "a100_triton_kernel.json.gz":  # a pointwise Triton kernel has no FLOP formula
        assert max((r["compute_pct"] or 0) for r in mine) > 0
    # % of busy time: every kernel's share is within (0, 100], and the device's kernels cover <= 100% + overlap
    assert all(0 <= r["busy_pct"] <= 100 for r in mine)


@needs_corpus
def test_corpus_triton_kernel_bytes(corpus_session):
    s, ids, _ = corpus_session
    # triton_poi_fused_add_cos_sin_0 reads two and writes one 10x10 fp32 buffer: 1200 bytes in 1.76 us
    (row,) = rows(s, "SELECT bytes, dtype FROM kernel_estimates WHERE trace_id = $t", {"t": ids["a100_triton_kernel.json.gz"]})
    assert row == (1200, "fp32")


ORACLE = Path(os.environ.get("DUCKPROF_ORACLES", REPO.parent / "shared" / "oracles")) / "tracelens_h100_vit_inference"


@needs_corpus
def test_h100_gemms_and_busy_time_match_tracelens(corpus_session):
    """TraceLens's own report on h100_vit_inference (an independent tool): per GEMM shape the
    FLOPs (TraceLens adds the bias, M*N), bytes moved (MiB), kernel count and time; and the
    device's busy time."""
    if not ORACLE.is_dir():
        pytest.skip(f"no TraceLens oracle at {ORACLE}")
    s, ids, _ = corpus_session
    seed_peaks(s.con)
    tid = ids["h100_vit_inference.json.gz"]
    with open(ORACLE / "GEMM.csv", newline="") as f:
        gemms = list(csv.DictReader(f))
    assert len(gemms) == 4
    for g in gemms:
        m, n = int(g["param: M"]), int(g["param: N"])
        (count, flops, nbytes, total_ns) = rows(s, """
            SELECT count(*), sum(k.flops), sum(k.bytes), sum(k.dur_ns) FROM kernel_estimates k
            JOIN cpu_ops o ON o.trace_id = k.trace_id AND o.event_id = k.op_event_id
            WHERE k.trace_id = $t AND o.name = 'aten::addmm' AND o.input_dims::VARCHAR = json($dims)::VARCHAR""",
            {"t": tid, "dims": g["Input Dims_first"]})[0]
        calls = int(g["name_count"])
        assert count == calls  # one kernel per addmm
        assert flops == calls * (round(float(g["GFLOPS_first"]) * 1e9) - m * n)
        assert nbytes == calls * round(float(g["Data Moved (MB)_first"]) * 2 ** 20)
        assert total_ns / 1e3 == pytest.approx(float(g["Kernel Time (µs)_sum"]), abs=0.01)
    busy_ms = {r["type"]: float(r["time ms"]) for r in csv.DictReader(open(ORACLE / "gpu_timeline.csv"))}["busy_time"]
    out, _ = report(s, limit=1, run="corpus")
    top = [r for r in out if r["trace_id"] == tid][0]
    assert top["total_us"] / (top["busy_pct"] / 100) / 1e3 == pytest.approx(busy_ms, rel=2e-4)
