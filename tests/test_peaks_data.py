"""duckprof/data/peaks.csv: datasheet peaks per device, and how a trace's device maps to a row.

Matching rule (what the loader's SQL implements; ``match`` below is the reference):

1. by name: rows whose ``device_pattern`` matches deviceProperties ``name``
   (case-insensitive regex *search*; the patterns are valid in both Python ``re``
   and DuckDB's RE2: ``regexp_matches(name, device_pattern, 'i')``); the row with
   the lowest ``priority`` wins.
2. only if no pattern matches (ROCm often reports "AMD Radeon Graphics" or ""):
   rows with ``fallback_mem_gib_min`` set whose ``sm_count`` equals ``numSms``
   (CUs on AMD) and whose [fallback_mem_gib_min, fallback_mem_gib_max] contains
   totalGlobalMem / 2^30; lowest priority wins.

Numbers are dense (no 2:4 sparsity).  fp64/fp32 use the FP64/FP32 tensor- or
matrix-core peak where one is published (as torch's device_info does); an
empty cell means the datasheet gives no figure (e.g. FP8 on A100).
"""
from __future__ import annotations

import csv
import math
import os
import re
from pathlib import Path

import pytest

from conftest import read_trace

ROOT = Path(__file__).resolve().parents[1]
PEAKS = ROOT / "duckprof" / "data" / "peaks.csv"
CORPUS = Path(os.environ.get("DUCKPROF_CORPUS", ROOT.parent / "shared" / "traces"))

NUMERIC = ["memory_gb", "sm_count", "fp64_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
           "fp8_tflops", "int8_tops", "fp4_tflops", "dram_gbps", "fallback_mem_gib_min", "fallback_mem_gib_max"]
HEADER = ["priority", "device_pattern", "device", "vendor"] + NUMERIC[:12] + ["fallback_mem_gib_max", "source"]


def load_rows():
    with open(PEAKS, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["priority"] = int(r["priority"])
        for c in NUMERIC:
            r[c] = float(r[c]) if r[c] != "" else None
    return sorted(rows, key=lambda r: r["priority"])


ROWS = load_rows()


def match(name, total_mem=None, num_sms=None, rows=ROWS):
    """Reference implementation of the matching rule in the module docstring."""
    hits = [r for r in rows if name and re.search(r["device_pattern"], name, re.IGNORECASE)]
    if hits:
        return hits[0]
    if total_mem is None or num_sms is None:
        return None
    gib = total_mem / 2**30
    hits = [r for r in rows if r["fallback_mem_gib_min"] is not None and r["sm_count"] == num_sms
            and r["fallback_mem_gib_min"] <= gib <= r["fallback_mem_gib_max"]]
    return hits[0] if hits else None


def test_header_and_types():
    with open(PEAKS, newline="") as f:
        header = next(csv.reader(f))
    assert header == HEADER
    assert len(ROWS) >= 19
    assert len({r["priority"] for r in ROWS}) == len(ROWS), "priorities must be unique"
    assert len({r["device"] for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r["vendor"] in ("NVIDIA", "AMD")
        assert re.search(r"https://\S+", r["source"]), r["device"]
        re.compile(r["device_pattern"])
        for c in NUMERIC:
            assert r[c] is None or (r[c] > 0 and math.isfinite(r[c])), (r["device"], c)
        for c in ("memory_gb", "sm_count", "fp32_tflops", "dram_gbps"):
            assert r[c] is not None, (r["device"], c)
        # a 16-bit peak: BF16, or FP16 where the datasheet has no BF16 (V100, T4, P100)
        assert r["bf16_tflops"] is not None or r["fp16_tflops"] is not None, r["device"]


def test_dense_not_sparse_ordering():
    """Precision ladder must be monotonic; a sparsity figure slipping in breaks it for H100-class rows."""
    for r in ROWS:
        ladder = [r[c] for c in ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp8_tflops", "fp4_tflops")
                  if r[c] is not None]
        assert ladder == sorted(ladder), r["device"]
        if r["bf16_tflops"] and r["fp16_tflops"] and r["device"] != "AMD Instinct MI100":
            assert r["bf16_tflops"] == r["fp16_tflops"], r["device"]
    # CDNA (MI100) runs BF16 matrix ops at half the FP16 rate (ROCm's MI100 table: 92.3 vs 184.6)
    mi100 = match("AMD Instinct MI100")
    assert (mi100["bf16_tflops"], mi100["fp16_tflops"]) == (92.3, 184.6)
    h100 = match("NVIDIA H100 80GB HBM3")
    assert (h100["bf16_tflops"], h100["fp8_tflops"], h100["dram_gbps"]) == (989.5, 1979.0, 3350.0)
    assert match("NVIDIA A100-SXM4-80GB")["tf32_tflops"] == 156.0
    assert match("AMD Instinct MI300X")["bf16_tflops"] == 1307.4


@pytest.mark.parametrize("name, device", [
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100-PG509-200", "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe 80GB"),
    ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
    ("NVIDIA H200", "NVIDIA H200 SXM"),
    ("NVIDIA B200", "NVIDIA B200"),
    ("NVIDIA GB200", "NVIDIA GB200"),
    ("NVIDIA GH200 480GB", "NVIDIA GH200 96GB HBM3"),
    ("NVIDIA GH200 120GB", "NVIDIA GH200 96GB HBM3"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("Tesla V100-DGXS-32GB", "NVIDIA V100 SXM2"),
    ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"),
    ("Tesla V100-PCIE-32GB", "NVIDIA V100 PCIe"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ("AMD Instinct MI300X VF", "AMD Instinct MI300X"),
    ("AMD Instinct MI325X", "AMD Instinct MI325X"),
    ("AMD Instinct MI355X", "AMD Instinct MI355X"),
    ("AMD Instinct MI350X", "AMD Instinct MI350X"),
    ("AMD Instinct MI250X", "AMD Instinct MI250X (one GCD)"),
    ("AMD Instinct MI250", "AMD Instinct MI250 (one GCD)"),
    # TraceLens's tests/traces/mi210/gpu_only_trace: matched the MI250 GCD row by CUs and memory before
    ("AMD Instinct MI210", "AMD Instinct MI210"),
    ("Tesla T4", "NVIDIA T4"),
    ("NVIDIA T4", "NVIDIA T4"),
    ("Tesla P100-PCIE-16GB", "NVIDIA P100 PCIe 16GB"),
    ("Tesla P100-SXM2-16GB", "NVIDIA P100 SXM2"),
    ("NVIDIA A40", "NVIDIA A40"),
    ("NVIDIA L40", "NVIDIA L40"),
    ("AMD Instinct MI100", "AMD Instinct MI100"),
    ("NVIDIA A10", "NVIDIA A10"),
    ("NVIDIA A30", "NVIDIA A30"),
    ("NVIDIA A2", "NVIDIA A2"),
    ("NVIDIA A16", "NVIDIA A16 (one GPU)"),
    ("NVIDIA A800-SXM4-80GB", "NVIDIA A800 SXM4 80GB"),
    ("NVIDIA A800 80GB PCIe", "NVIDIA A800 PCIe 80GB"),
    ("NVIDIA A800-PCIE-40GB", "NVIDIA A800 PCIe 40GB"),
    ("NVIDIA H800", "NVIDIA H800 SXM"),
    ("NVIDIA H800 80GB HBM3", "NVIDIA H800 SXM"),
    ("NVIDIA H20", "NVIDIA H20"),
    ("NVIDIA RTX A6000", "NVIDIA RTX A6000"),
    ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation"),
    ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 5090", "NVIDIA GeForce RTX 5090"),
    ("AMD Instinct MI300A", "AMD Instinct MI300A"),
    ("Tesla V100S-PCIE-32GB", "NVIDIA V100S PCIe"),
])
def test_real_names_match_one_row(name, device):
    hits = [r["device"] for r in ROWS if re.search(r["device_pattern"], name, re.IGNORECASE)]
    assert hits == [device], hits  # exactly one row, the intended one


#: Every device name the tests know -> the row it must match (None: no row). A
#: new row must leave every other name where it was: names that differ by a
#: letter or a digit (A10/A100/A40/A4000, L4/L40/L40S/L20, H20/H200, T4/T400,
#: MI300A/MI300X, RTX A6000/RTX 6000 Ada) are listed on purpose. The None
#: names are GPUs without a row yet (no datasheet figures in reach when the
#: rows were added) or no GPU at all.
KNOWN_NAMES = {
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100 SXM4 80GB",
    "NVIDIA A100-SXM4-40GB": "NVIDIA A100 SXM4 40GB",
    "NVIDIA A100-PG509-200": "NVIDIA A100 SXM4 40GB",
    "NVIDIA A100 80GB PCIe": "NVIDIA A100 PCIe 80GB",
    "NVIDIA A100-PCIE-40GB": "NVIDIA A100 PCIe 40GB",
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM5",
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe",
    "NVIDIA H100 NVL": "NVIDIA H100 NVL",
    "NVIDIA H200": "NVIDIA H200 SXM",
    "NVIDIA H200 NVL": "NVIDIA H200 NVL",
    "NVIDIA B200": "NVIDIA B200",
    "NVIDIA GB200": "NVIDIA GB200",
    "NVIDIA GH200 480GB": "NVIDIA GH200 96GB HBM3",
    "NVIDIA GH200 120GB": "NVIDIA GH200 96GB HBM3",
    "NVIDIA GH200 144G HBM3e": "NVIDIA GH200 144G HBM3e",
    "NVIDIA L4": "NVIDIA L4",
    "NVIDIA L40S": "NVIDIA L40S",
    "NVIDIA L40": "NVIDIA L40",
    "Tesla V100-DGXS-32GB": "NVIDIA V100 SXM2",
    "Tesla V100-SXM2-16GB": "NVIDIA V100 SXM2",
    "Tesla V100-PCIE-32GB": "NVIDIA V100 PCIe",
    "Tesla T4": "NVIDIA T4",
    "NVIDIA T4": "NVIDIA T4",
    "Tesla P100-PCIE-16GB": "NVIDIA P100 PCIe 16GB",
    "Tesla P100-PCIE-12GB": "NVIDIA P100 PCIe 12GB",
    "Tesla P100-SXM2-16GB": "NVIDIA P100 SXM2",
    "NVIDIA A40": "NVIDIA A40",
    "AMD Instinct MI300X": "AMD Instinct MI300X",
    "AMD Instinct MI300X VF": "AMD Instinct MI300X",
    "AMD Instinct MI325X": "AMD Instinct MI325X",
    "AMD Instinct MI355X": "AMD Instinct MI355X",
    "AMD Instinct MI350X": "AMD Instinct MI350X",
    "AMD Instinct MI250X": "AMD Instinct MI250X (one GCD)",
    "AMD Instinct MI250": "AMD Instinct MI250 (one GCD)",
    "AMD Instinct MI210": "AMD Instinct MI210",
    "AMD Instinct MI100": "AMD Instinct MI100",
    "NVIDIA A10": "NVIDIA A10",
    "NVIDIA A30": "NVIDIA A30",
    "NVIDIA A2": "NVIDIA A2",
    "NVIDIA A16": "NVIDIA A16 (one GPU)",
    "NVIDIA A800-SXM4-80GB": "NVIDIA A800 SXM4 80GB",
    "NVIDIA A800 80GB PCIe": "NVIDIA A800 PCIe 80GB",
    "NVIDIA A800-PCIE-80GB": "NVIDIA A800 PCIe 80GB",
    "NVIDIA A800-PCIE-40GB": "NVIDIA A800 PCIe 40GB",
    "NVIDIA H800": "NVIDIA H800 SXM",
    "NVIDIA H800 80GB HBM3": "NVIDIA H800 SXM",
    "NVIDIA H800 PCIe": "NVIDIA H800 PCIe",
    "NVIDIA H20": "NVIDIA H20",
    "NVIDIA RTX A6000": "NVIDIA RTX A6000",
    "NVIDIA RTX 6000 Ada Generation": "NVIDIA RTX 6000 Ada Generation",
    "NVIDIA GeForce RTX 3090": "NVIDIA GeForce RTX 3090",
    "NVIDIA GeForce RTX 4090": "NVIDIA GeForce RTX 4090",
    "NVIDIA GeForce RTX 5090": "NVIDIA GeForce RTX 5090",
    "AMD Instinct MI300A": "AMD Instinct MI300A",
    "Tesla V100S-PCIE-32GB": "NVIDIA V100S PCIe",
    # no row: neighbours of the rows above (other SMs, clocks or memory), and GPUs whose figures
    # could not be checked against a published copy (see README: A10G, L20, RTX 5090, ...)
    "NVIDIA A10G": None, "NVIDIA RTX A4000": None, "NVIDIA RTX A2000": None, "NVIDIA A30X": None,
    "NVIDIA A800 40GB Active": None,
    "NVIDIA L20": None, "NVIDIA L4X": None, "NVIDIA L2": None,
    "NVIDIA T400": None, "NVIDIA T1000": None, "Tesla P4": None, "Tesla P40": None,
    "Quadro RTX 6000": None, "NVIDIA RTX A5000": None,
    "NVIDIA GeForce RTX 3090 Ti": None, "NVIDIA GeForce RTX 4090 D": None,
    "NVIDIA GeForce RTX 4090 Laptop GPU": None, "NVIDIA GeForce RTX 5090 D": None,
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": None, "NVIDIA B300": None, "NVIDIA GB300": None,
    "AMD Instinct MI250X / MI250": None,  # by CUs and memory only (test_fallback_by_memory_and_cu_count)
    "AMD Radeon Graphics": None, "ARTEMIS": None, "": None,
}


def test_every_known_name_keeps_its_row():
    got = {name: (row["device"] if (row := match(name)) else None) for name in KNOWN_NAMES}
    assert got == KNOWN_NAMES


def test_first_row_wins_when_several_match():
    hits = [r["device"] for r in ROWS if re.search(r["device_pattern"], "NVIDIA H200 NVL", re.IGNORECASE)]
    assert hits == ["NVIDIA H200 NVL", "NVIDIA H200 SXM"]
    assert match("NVIDIA H200 NVL")["device"] == "NVIDIA H200 NVL"
    hits = [r["device"] for r in ROWS if re.search(r["device_pattern"], "NVIDIA GH200 144G HBM3e", re.IGNORECASE)]
    assert hits == ["NVIDIA GH200 144G HBM3e", "NVIDIA GH200 96GB HBM3"]
    # the 12 GB P100 for PCIe also matches the broader 16 GB pattern; its own row comes first
    hits = [r["device"] for r in ROWS if re.search(r["device_pattern"], "Tesla P100-PCIE-12GB", re.IGNORECASE)]
    assert hits == ["NVIDIA P100 PCIe 12GB", "NVIDIA P100 PCIe 16GB"]
    # 'H800 PCIe' also matches the H800 SXM row's \bH800\b; the PCIe row comes first
    hits = [r["device"] for r in ROWS if re.search(r["device_pattern"], "NVIDIA H800 PCIe", re.IGNORECASE)]
    assert hits == ["NVIDIA H800 PCIe", "NVIDIA H800 SXM"]


def test_spot_checked_figures():
    """Figures checked against the datasheets named in each row's source."""
    b200, gb200 = match("NVIDIA B200"), match("NVIDIA GB200")
    assert (b200["sm_count"], b200["fp32_tflops"], b200["bf16_tflops"], b200["dram_gbps"]) == (148, 75, 2250, 7700)
    assert (gb200["sm_count"], gb200["fp32_tflops"], gb200["bf16_tflops"], gb200["dram_gbps"]) == (152, 80, 2500, 8000)
    assert match("NVIDIA GH200 480GB")["dram_gbps"] == 4000
    assert match("NVIDIA GH200 144G HBM3e")["dram_gbps"] == 4900
    mi355x, mi350x = match("AMD Instinct MI355X"), match("AMD Instinct MI350X")
    assert (mi355x["fp64_tflops"], mi355x["bf16_tflops"], mi355x["tf32_tflops"]) == (78.6, 2516.6, None)
    assert (mi350x["fp64_tflops"], mi350x["bf16_tflops"], mi350x["tf32_tflops"]) == (72.1, 2307, None)
    # an unnamed 256-CU, 288 GB device (ROCm in a container may report no name) stays MI355X
    assert match("", 288 * 2**30 - 2**28, 256)["device"] == "AMD Instinct MI355X"
    mi210 = match("AMD Instinct MI210", 68702699520, 104)
    assert (mi210["fp64_tflops"], mi210["fp32_tflops"], mi210["bf16_tflops"], mi210["int8_tops"],
            mi210["dram_gbps"]) == (45.3, 45.3, 181, 181, 1638.4)
    # an unnamed device of its CUs and memory stays the MI250 GCD (no fallback range on the MI210 row)
    assert match("", 68702699520, 104)["device"] == "AMD Instinct MI250 (one GCD)"


def test_geforce_rows_use_fp32_accumulate_and_derived_figures_agree():
    """PyTorch's FP16/BF16 GEMMs accumulate in FP32, which GeForce runs at half the FP16-accumulate rate the
    whitepapers also list: 165.2 (not 330.3) on an RTX 4090, 71 (not 142) on an RTX 3090. The figures agree
    with SMs x clock x per-SM rate: 4090 128 SMs x 2.52 GHz x 512 dense FP16-FP32acc FLOP/clock = 165.2;
    MI300A 228 CUs x 2.1 GHz x 1024 TF32 / 4096 FP8 FLOP/clock (ROCm's CDNA3 table) = 490.3 / 1961.2."""
    rtx4090, rtx3090 = match("NVIDIA GeForce RTX 4090"), match("NVIDIA GeForce RTX 3090")
    assert rtx4090["bf16_tflops"] == round(128 * 2.52e9 * 512 / 1e12, 1) == 165.2
    assert rtx4090["fp8_tflops"] == round(128 * 2.52e9 * 1024 / 1e12, 1) == 330.3  # FP8, FP32 accumulate
    assert rtx3090["bf16_tflops"] * 2 == 142
    rtx5090 = match("NVIDIA GeForce RTX 5090")
    assert rtx5090["bf16_tflops"] == 838 / 2 / 2 and rtx5090["fp32_tflops"] == round(170 * 128 * 2 * 2.407e9 / 1e12, 1)
    assert rtx5090["dram_gbps"] == 512 / 8 * 28 == 1792  # 512-bit GDDR7 at 28 Gbps
    mi300a = match("AMD Instinct MI300A")
    assert (mi300a["tf32_tflops"], mi300a["fp8_tflops"]) == (round(228 * 2.1e9 * 1024 / 1e12, 1),
                                                              round(228 * 2.1e9 * 4096 / 1e12, 1))
    # the 4090's DRAM: 384-bit GDDR6X at 21 Gbps = 1008 GB/s
    assert rtx4090["dram_gbps"] == 384 / 8 * 21 == 1008


def test_every_interconnect_row_names_a_peaks_row():
    """interconnect.csv joins device_peaks by the device column: a typo there silently drops the link."""
    with open(ROOT / "duckprof" / "data" / "interconnect.csv", newline="") as f:
        links = list(csv.DictReader(f))
    devices = {r["device"] for r in ROWS}
    assert [x["device"] for x in links if x["device"] not in devices] == []
    assert len({x["device"] for x in links}) == len(links)
    for x in links:
        assert float(x["gbps"]) > 0 and re.search(r"https?://\S+", x["source"]), x["device"]


FIGURES = ("memory_gb", "sm_count", "fp64_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
           "fp8_tflops", "int8_tops", "dram_gbps")


@pytest.mark.parametrize("name, expected", [
    # NVIDIA's T4 launch figures (geektopia.es, 2018-09-13): FP32 8.1, FP16 Tensor 65, INT8 130; 320 Tensor
    # Cores = 40 SMs; T4 product brief (manualmachine.com copy): 16 GB GDDR6, up to 320 GB/s. Turing: no
    # BF16/TF32/FP8; no FP64 figure.
    ("Tesla T4", (16, 40, None, 8.1, None, None, 65, None, 130, 320)),
    # NVIDIA's P100 for PCIe launch figures (tomshardware.com/news/nvidia-tesla-p100-pcie-gpu,32119.html):
    # FP64 4.7, FP32 9.3, FP16 18.7; 16 GB at 720 GB/s, 12 GB at 540 GB/s; 56 SMs. No Tensor Cores.
    ("Tesla P100-PCIE-16GB", (16, 56, 4.7, 9.3, None, None, 18.7, None, None, 720)),
    ("Tesla P100-PCIE-12GB", (12, 56, 4.7, 9.3, None, None, 18.7, None, None, 540)),
    # NVIDIA's P100 (NVLink) launch figures (tech4gamers.com, teckknow.com): FP64 5.3, FP32 10.6, FP16 21.2,
    # 16 GB at 720 GB/s
    ("Tesla P100-SXM2-16GB", (16, 56, 5.3, 10.6, None, None, 21.2, None, None, 720)),
    # NVIDIA A40 datasheet (ecer.com reproduction), dense column: FP32 37.4, TF32 74.8 (149.6*), BF16 and FP16
    # 149.7 (299.4*), INT8 299.3 (598.6*); 48 GB at 696 GB/s; 336 Tensor Cores = 84 SMs
    ("NVIDIA A40", (48, 84, None, 37.4, 74.8, 149.7, 149.7, None, 299.3, 696)),
    # NVIDIA L40 datasheet, L40 column (mullet.se reproduction): FP32 90.5, TF32 90.5 (181*), BF16/FP16
    # 181.05 (362.1*), FP8 362 (724*), INT8 362 (724*); 48 GB at 864 GB/s; 568 Tensor Cores = 142 SMs
    ("NVIDIA L40", (48, 142, None, 90.5, 90.5, 181.05, 181.05, 362, 362, 864)),
    # ROCm docs, MI100 microarchitecture (ROCm/ROCm e396b48 docs/conceptual/gpu-arch/mi100.md): vector FP64
    # 11.5, matrix FP32 46.1, matrix FP16 184.6, matrix BF16 92.3; 120 CUs; 32 GB HBM2 at 1.228 TB/s
    ("AMD Instinct MI100", (32, 120, 11.5, 46.1, None, 92.3, 184.6, None, None, 1228.8)),
    # NVIDIA A10 datasheet, dense: FP32 31.2, TF32 62.5 (125*), BF16/FP16 125 (250*), INT8 250 (500*);
    # 24 GB GDDR6 at 600 GB/s; 72 SMs. No FP64 figure.
    ("NVIDIA A10", (24, 72, None, 31.2, 62.5, 125, 125, None, 250, 600)),
    # NVIDIA A30 datasheet, dense: FP64 Tensor Core 10.3 (vector 5.2), FP32 10.3, TF32 82 (165*), BF16/FP16 165
    # (330*), INT8 330 (661*); 24 GB HBM2 at 933 GB/s; 56 SMs
    ("NVIDIA A30", (24, 56, 10.3, 10.3, 82, 165, 165, None, 330, 933)),
    # NVIDIA A2 datasheet, dense: FP32 4.5, TF32 9 (18*), BF16/FP16 18 (36*), INT8 36 (72*); 16 GB at 200 GB/s
    ("NVIDIA A2", (16, 10, None, 4.5, 9, 18, 18, None, 36, 200)),
    # NVIDIA A16 datasheet, per GPU (panchaea.com copy): FP32 4.5, TF32 9, FP16 17.9, INT8 35.9; no BF16
    ("NVIDIA A16", (16, 10, None, 4.5, 9, None, 17.9, None, 35.9, 200)),
    # A800 = A100 (A100 datasheet columns) with NVLink cut to 400 GB/s
    ("NVIDIA A800-SXM4-80GB", (80, 108, 19.5, 19.5, 156, 312, 312, None, 624, 2039)),
    ("NVIDIA A800 80GB PCIe", (80, 108, 19.5, 19.5, 156, 312, 312, None, 624, 1935)),
    ("NVIDIA A800-PCIE-40GB", (40, 108, 19.5, 19.5, 156, 312, 312, None, 624, 1555)),
    # H800 = H100 (sparsity halved) with FP64 cut to 1 (SXM) / 0.8 (PCIe) TFLOPS and NVLink to 400 GB/s
    ("NVIDIA H800", (80, 132, 1, 67, 494.5, 989.5, 989.5, 1979, 1979, 3350)),
    ("NVIDIA H800 PCIe", (80, 114, 0.8, 51, 378, 756.5, 756.5, 1513, 1513, 2000)),
    # H20 as the press reports NVIDIA's partner sheet: FP64 1, FP32 44, TF32 74, FP16 148 dense, FP8/INT8 296,
    # 96 GB at 4.0 TB/s, 78 SMs
    ("NVIDIA H20", (96, 78, 1, 44, 74, 148, 148, 296, 296, 4000)),
    # GA102 whitepaper Appendix C (RTX A6000): FP32 38.7, TF32 77.4, FP16/BF16 (FP32 acc.) 154.8, INT8 309.7
    ("NVIDIA RTX A6000", (48, 84, None, 38.7, 77.4, 154.8, 154.8, None, 309.7, 768)),
    # RTX 6000 Ada datasheet / Ada pro whitepaper: FP32 91.1, TF32 182.1, FP16/BF16 364.2, FP8 1457* / 2
    ("NVIDIA RTX 6000 Ada Generation", (48, 142, None, 91.1, 182.1, 364.2, 364.2, 728.5, 728.5, 960)),
    # GA102 whitepaper Appendix A (RTX 3090): FP16/BF16 with FP32 accumulate 71 (not the FP16-accumulate 142)
    ("NVIDIA GeForce RTX 3090", (24, 82, None, 35.6, 35.6, 71, 71, None, 284, 936)),
    # Ada whitepaper (RTX 4090): FP16/BF16 with FP32 accumulate 165.2 (not 330.3), FP8 with FP32 accumulate
    # 330.3 (not 660.6), INT8 660.6, 1008 GB/s
    ("NVIDIA GeForce RTX 4090", (24, 128, None, 82.6, 82.6, 165.2, 165.2, 330.3, 660.6, 1008)),
    # RTX 5090: NVIDIA's 838 FP16 TFLOPS (sparse, FP16 accumulate) / 2 / 2 = 209.5 dense with FP32 accumulate;
    # 170 SMs x 128 x 2 x 2.407 GHz = 104.8 FP32; 32 GB GDDR7 at 1792 GB/s; no TF32/FP8/INT8 dense figure read
    ("NVIDIA GeForce RTX 5090", (32, 170, None, 104.8, None, 209.5, 209.5, None, None, 1792)),
    # AMD MI300A data sheet (as PyTorch's torch/_inductor/analysis/device_info.py transcribes it): FP64/FP32
    # matrix 122.6, TF32 490.3, FP16/BF16 980.6, FP8/INT8 1961.2; 128 GB HBM3 at 5.3 TB/s; 228 CUs
    ("AMD Instinct MI300A", (128, 228, 122.6, 122.6, 490.3, 980.6, 980.6, 1961.2, 1961.2, 5300)),
    # V100 datasheet, V100S PCIe column: FP64 8.2, FP32 16.4, Tensor 130, 32 GB at 1134 GB/s
    ("Tesla V100S-PCIE-32GB", (32, 80, 8.2, 16.4, None, None, 130, None, None, 1134)),
])
def test_rows_added_with_their_datasheet_figures(name, expected):
    row = match(name)
    assert tuple(row[c] for c in FIGURES) == expected, row["device"]
    assert row["fp4_tflops"] is None and row["fallback_mem_gib_min"] is None  # no fallback: name only


def test_no_false_positives():
    for name in ("ARTEMIS", "", "AMD Radeon Graphics", "NVIDIA L4X", "NVIDIA T400", "NVIDIA RTX A4000",
                 "NVIDIA A10G", "NVIDIA L20", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 D",
                 "NVIDIA GeForce RTX 4090 Laptop GPU", "NVIDIA GeForce RTX 5090 D", "Quadro RTX 6000", "NVIDIA RTX A2000", "NVIDIA A30X"):
        assert match(name) is None, name


def test_fallback_by_memory_and_cu_count():
    # values from deviceProperties of mi250_rocm_train.json.gz and mi300x_resnet_act_checkpoint.json.gz
    assert match("AMD Radeon Graphics", 68702699520, 104)["device"] == "AMD Instinct MI250 (one GCD)"
    assert match("", 68702699520, 110)["device"] == "AMD Instinct MI250X (one GCD)"
    assert match("AMD Instinct MI250X / MI250", 68702699520, 110)["device"] == "AMD Instinct MI250X (one GCD)"
    assert match("AMD Instinct MI250X / MI250", 68702699520, 104)["device"] == "AMD Instinct MI250 (one GCD)"
    assert match("AMD Radeon Graphics", 206141652992, 304)["device"] == "AMD Instinct MI300X"
    assert match("AMD Radeon Graphics", 256 * 2**30 - 2**28, 304)["device"] == "AMD Instinct MI325X"
    assert match("AMD Radeon Graphics", 288 * 2**30 - 2**28, 256)["device"] == "AMD Instinct MI355X"
    assert match("AMD Radeon Graphics", 68702699520, 304) is None  # CUs and memory must both fit
    assert match("AMD Radeon Graphics", None, None) is None


def test_patterns_work_in_duckdb_re2():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    names = [n for n in KNOWN_NAMES if n]  # every name the tests know, matched by RE2 as by Python's re
    con.execute("CREATE TABLE n(name VARCHAR)")
    con.executemany("INSERT INTO n VALUES (?)", [[x] for x in names])
    got = dict(con.execute(
        """SELECT name, arg_min(device, priority) FROM n
           LEFT JOIN read_csv(?, header=true, all_varchar=false) p
             ON regexp_matches(name, p.device_pattern, 'i')
           GROUP BY name""", [str(PEAKS)]).fetchall())
    for x in names:
        expected = match(x)
        assert got[x] == (expected["device"] if expected else None) == KNOWN_NAMES[x], x


def _device_properties():
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS} (set DUCKPROF_CORPUS)")
    out = {}
    for f in sorted(CORPUS.glob("*.json*")):
        d = read_trace(f)
        if isinstance(d, dict) and d.get("deviceProperties"):
            out[f.name] = d["deviceProperties"][0]
    return out


@pytest.mark.slow  # parses every corpus file with the json module
def test_corpus_devices():
    expected = {
        "a100_alexnet_train.json.gz": "NVIDIA A100 SXM4 40GB",
        "a100_train_rank0.json.gz": "NVIDIA A100 SXM4 80GB",
        "b200_eager_stack.json.gz": "NVIDIA B200",
        "h100_vit_inference.json.gz": "NVIDIA H100 SXM5",
        "mi250_rocm_train.json.gz": "AMD Instinct MI250 (one GCD)",
        "mi300x_resnet_act_checkpoint.json.gz": "AMD Instinct MI300X",
        "v100_resnet50_workers0_2021.json.gz": "NVIDIA V100 SXM2",
        "mtia_inference_rank0.json.gz": None,  # 'ARTEMIS', an MTIA: unknown, loads fine
    }
    props = _device_properties()
    for fname, device in expected.items():
        p = props[fname]
        row = match(p.get("name"), p.get("totalGlobalMem"), p.get("numSms"))
        assert (row["device"] if row else None) == device, fname
        if row:
            assert row["sm_count"] == p["numSms"], fname
            # marketing GB vs reported bytes (GiB, minus reserved): within 10%
            assert abs(p["totalGlobalMem"] / 1e9 / row["memory_gb"] - 1) < 0.10, fname
