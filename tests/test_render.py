"""Terminal output is read by people: a report's default table fits 120
columns, says its units (8.3 µs, 44.6 GFLOP, 267 TFLOP/s), leaves out the
columns that hold one value on every row (saying them once below) and the
header's [wide] columns (shown with --wide); csv/json keep every column, exact."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, REPO, invoke, needs_corpus

from duckprof import render, reports, sqlfiles

H100 = CORPUS / "h100_vit_inference.json.gz"
KERNELS = REPO / "fixtures" / "kernels" / "h100_two_kernels_one_op.json"


@pytest.mark.parametrize("ns,text", [(850, "850 ns"), (8315, "8.31 µs"), (8325, "8.32 µs"), (12_345, "12.3 µs"),
                                     (399_136, "399 µs"), (1_250_000, "1.25 ms"), (2_100_000_000, "2.10 s"),
                                     (0, "0 ns")])
def test_human_time(ns, text):
    assert render.human_time(ns) == text


def test_si_units():
    assert render._si(44_619_005_952, "FLOP") == "44.6 GFLOP"
    assert render._si(36_600_000, "B") == "36.6 MB"
    assert render._si(999, "B") == "999 B"


def test_column_kinds():
    assert render.column_kind("total_us") == ("time", "total")
    assert render.column_kind("achieved_tflops") == ("rate", "TFLOP/s")
    assert render.column_kind("peak_gbps") == ("rate", "peak GB/s")
    assert render.column_kind("busy_pct") == ("pct", "busy")
    assert render.column_kind("gpu_busy_pp") == ("pp", "GPU busy")
    assert render.column_kind("flops") == ("flops", "flops")
    assert render.column_kind("shared_memory_bytes") == ("bytes", "shared memory")
    # hardware and format names as they are written, not lower-cased (it read "blocks per sm")
    assert render.column_kind("blocks_per_sm") == ("plain", "blocks per SM")
    assert render.column_kind("peak_bf16_tflops") == ("rate", "peak BF16 TFLOP/s")
    assert render.column_kind("nccl_kernels") == ("plain", "NCCL kernels")
    assert render.column_kind("dram_gbps") == ("rate", "DRAM GB/s")


def test_diff_summary_cells():
    """A metric of diff's summary in its unit; the delta of a percentage in
    percentage points (22.1% -> 15.0% is -7.13 pp, not a -7.13% change)."""
    cell = render.metric_cell
    assert [cell("gpu_busy_pct", c, v) for c, v in (("a", 22.1), ("b", 14.97), ("delta", -7.13),
                                                    ("delta_pct", None))] == ["22.1%", "15.0%", "-7.13 pp", ""]
    assert cell("gpu_busy_pct", "delta", 15.9) == "15.9 pp"
    assert [cell("wall_us", c, v) for c, v in (("a", 713_092.254), ("delta", -2000.0), ("delta_pct", -16.7))] \
        == ["713 ms", "-2.00 ms", "-16.7%"]
    assert cell("kernels", "delta", 12.0) == "12" and cell("kernels", "metric", "kernels") == "kernels"


def test_a_value_shown_as_zero_has_no_sign():
    """A tiny negative value that rounds to zero where it is shown reads 0, not
    -0 (failed before: the tiny_compare diff printed gpu_busy_pct's delta
    '-0.00 pp', a decrease where there is none to see); a value that shows
    a digit keeps its sign, and a name is text."""
    cell = render.human_cell
    assert render.metric_cell("gpu_busy_pct", "delta", -0.0012) == "0.00 pp"
    assert [cell("busy_pct", -0.004), cell("delta_us", -1e-4), cell("ratio", -1e-12), cell("ratio", -0.0)] \
        == ["0.00%", "0 ns", "0", "0"]
    assert [cell("busy_pct", -0.006), cell("delta_us", -0.002), cell("ratio", -0.0006)] == ["-0.01%", "-2 ns", "-0.000600"]
    assert cell("name", "-0") == "-0"
    # a report's terminal table too (it formats through _human, not human_cell)
    assert render.report_table(["s", "busy_pct"], [(1, -0.004), (2, 5.0)], []).split()[4:] == ["1", "0.00%", "2", "5.00%"]


def test_a_plain_fraction_or_a_rate_to_three_significant_digits():
    """A plain number with a fraction shows three significant digits, as times
    do (failed before: report queue's mean depth read 662.809, its mean pending
    704.917; diff's kernels per step 5.500); below 1, three decimals; a whole
    number none; csv and json keep the exact value."""
    cell = render.human_cell
    assert [cell("mean_depth", v) for v in (662.809, 12.066, 1.143, 0.116, 5.5, 1234.6, 2.0, 1e6 + 0.25)] \
        == ["663", "12.1", "1.14", "0.116", "5.50", "1,235", "2", "1,000,000"]
    # a rate likewise (312.0 TFLOP/s read '312.0' beside '1,307'), and a small value is not 0 (a gloo
    # all_reduce's bus bandwidth, 0.000123 GB/s, read '0.00')
    assert [cell("busbw_gbps", v) for v in (1307.0, 312.0, 4.57, 0.000123, 0.0)] == ["1,307", "312", "4.57", "0.000123", "0"]
    assert [cell("mean_depth", v) for v in (0.0004, -0.0004, 1e-12)] == ["0.000400", "-0.000400", "0"]
    text = render.report_table(["stream", "mean_depth"], [(7, 662.809), (25, 0.116)], [])
    assert text.split() == ["stream", "mean", "depth", "--------", "------------", "7", "663", "25", "0.116"]
    assert render.to_text(["mean_depth"], [(662.809,)], "csv") == "mean_depth\n662.809\n"


def test_a_whole_double_in_a_table_has_no_decimals():
    """A DOUBLE column's whole value reads as a whole number in a report table
    and in its footer, as human_cell (the html page) shows it (failed before:
    report queue on TraceLens's vllm_decode_full/graph_execution, one
    hipGraphLaunch of 421 kernels, read 'mean pending 217.000' beside 'mean
    depth 207'; a stream's mean depth 1.000 beside 0.987; steps --summary's
    zero times 0.000)."""
    text = render.report_table(["stream", "mean_depth", "mean_pending"],
                               [(20, 0.987, 0.5), (24, 1.0, 0.5), (28, 0.0, 0.5)], [])
    assert text.split("\n")[2:5] == ["      20         0.987", "      24             1", "      28             0"]
    assert "(every row: mean pending 0.500)" in text
    text = render.report_table(["stream", "mean_pending"], [(0, 217.0)], [])
    assert text.split() == ["stream", "mean", "pending", "--------", "--------------", "0", "217"]
    assert render.human_cell("mean_pending", 217.0) == "217"
    # csv keeps the value as DuckDB gives it
    assert render.to_text(["mean_pending"], [(217.0,)], "csv") == "mean_pending\n217.0\n"


@pytest.mark.parametrize("width", [60, 90, 120])
def test_fitting_is_checked_on_the_widest_rows_alone(monkeypatch, width):
    """report_table checks whether a table fits on the rows holding each column's
    widest cell (and those whose length differs from their width on screen):
    the table it prints is the one drawn when every row is checked. Rows with a
    long name, wide (CJK, 2 columns each) and combining characters (0 columns)."""
    documented = [sqlfiles.Column(name, "VARCHAR", "") for name in ("name", "step", "total_us", "note")]
    rows = [(f"kernel_{i}_" + "x" * (i % 12), i, 1000.0 * i, "short") for i in range(300)]
    rows[7] = ("核" * 15, 7, 7.0, "wide")  # 15 characters, 30 columns
    rows[11] = ("e\u0301" * 30, 11, 11.0, "combining")  # 60 characters, 30 columns
    rows[13] = ("n", 13, 1e12, "a long note " * 6)
    fast = render.report_table(["name", "step", "total_us", "note"], rows, documented, width=width)
    monkeypatch.setattr(render, "_visible_width", None)  # every row drawn at every width tried
    slow = render.report_table(["name", "step", "total_us", "note"], rows, documented, width=width)
    assert fast == slow
    assert max(map(len, fast.splitlines())) <= width or "more column(s)" in fast


def test_rows_told_apart_by_a_wide_identity_column_show_it():
    """report ranks on traces without a rank (no distributedInfo: a worker's
    schedule cycles, single-process runs): run and rank are the same on every
    row and go below, so the [wide] trace_id, which differs, is shown; with
    ranks it stays hidden, and one row needs nothing."""
    columns = ["run", "rank", "trace_id", "steps", "step_mean_us"]
    documented = [sqlfiles.Column(c, "VARCHAR", "", wide=c == "trace_id") for c in columns]
    no_ranks = [("default", None, 1, 3, 26_982.0), ("default", None, 2, 4, 56_549.0)]
    text = render.report_table(columns, no_ranks, documented)
    assert text.splitlines()[0].split() == ["trace", "id", "steps", "step", "mean"]
    assert [line.split()[0] for line in text.splitlines()[2:4]] == ["1", "2"]
    assert "run default" in text and "more column(s) with --wide" not in text
    ranked = [("job", 0, 1, 3, 26_982.0), ("job", 1, 2, 4, 56_549.0)]
    assert render.report_table(columns, ranked, documented).splitlines()[0].split() == [
        "rank", "steps", "step", "mean"]
    assert "trace id" not in render.report_table(columns, no_ranks[:1], documented)
    # two traces of rank 0 in one run (a job profiled twice): the rank shows, and the trace too
    twice = [("job", 1, 1, 2, 619_271.5), ("job", 0, 2, 2, 615_120.0), ("job", 0, 3, 3, 222_368.4)]
    text = render.report_table(columns, twice, documented)
    assert text.splitlines()[0].split() == ["rank", "trace", "id", "steps", "step", "mean"]
    assert [line.split()[:2] for line in text.splitlines()[2:5]] == [["1", "1"], ["0", "2"], ["0", "3"]]


CELLS = ["", "a", " padded ", "8.31 µs", "核核", "e\u0301x", "True", "False", "void at::kernel<float>", "1,234.500",
         "zero\u200bwidth", "x" * 40]


@pytest.mark.parametrize("seed", range(40))
def test_simple_table_draws_what_tabulate_draws(seed):
    """to_text's table is drawn by render._simple_table, not tabulate (5x quicker on
    10,000 rows): the same text, for cells with spaces to strip, wide (CJK),
    combining and zero-width characters, empty cells and columns, 'True'/'False'
    (a type to tabulate), left and right aligned; a line break, an escape
    sequence or another control character leaves it to tabulate."""
    import random

    from tabulate import tabulate
    rnd = random.Random(seed)
    ncol, nrow = rnd.randint(1, 5), rnd.randint(1, 8)
    headers = [rnd.choice(["name", "total µs", "核 step", "busy %", "n"]) for _ in range(ncol)]
    cells = [[rnd.choice(CELLS) + rnd.choice(["", " ", "µ"]) for _ in range(ncol)] for _ in range(nrow)]
    right = [rnd.random() < 0.5 for _ in range(ncol)]
    expected = tabulate(cells, headers=headers, tablefmt="simple", disable_numparse=True,
                        colalign=["right" if r else "left" for r in right]) + "\n"
    assert render._simple_table(headers, cells, right) == expected
    shown = [[render._cell(s, 80) for s in row] for row in cells]  # zero-width space: U+FFFD
    assert render.to_text(headers, cells, right_aligned={i for i, r in enumerate(right) if r}) == tabulate(
        shown, headers=headers, tablefmt="simple", disable_numparse=True,
        colalign=["right" if r else "left" for r in right]) + "\n"
    for odd in ("two\nlines", "\x1b[31mred\x1b[0m", "tab\there", "µ\r"):
        assert render._simple_table(headers, [[odd] * ncol] + cells, right) is None

def test_names_cut_alike_are_told_apart():
    """Templated kernel names share their first 40-100 characters: cut plainly
    to 32 they look the same. Each then shows its start and the word where it
    differs, at the same width; a name with no twin keeps the plain cut, and
    the same name on two rows stays the same cell."""
    a = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    b = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    gelu = "at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)>(int)"
    add = "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >"
    alone = "pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128> >"
    rows = [[a, 1], [b, 2], [gelu, 3], [add, 4], [alone, 5], [a, 6], ["short", 7]]
    lines = render.to_text(["name", "n"], rows, name_width=32).splitlines()[2:]
    cells = [line[:32].rstrip() for line in lines]
    assert cells == ["sm90_xmma_…tilesize128x128x64_w…", "sm90_xmma_…tilesize128x64x64_wa…",
                     "at::native…GeluCUDAKernelImpl(a…", "at::native…CUDAFunctor_add<c10:…",
                     "pytorch_flash::flash_fwd_kernel…", "sm90_xmma_…tilesize128x128x64_w…", "short"]
    # a name whose end fits after its start shows its end, without a second "…"
    assert render._distinct_cuts(["abcdefghij_x…", "abcdefghij_x…"], ["abcdefghij_xx_1", "abcdefghij_xx_2"], 13) == \
        ["abcd…hij_xx_1", "abcd…hij_xx_2"]


def test_names_that_differ_in_two_far_places_are_told_apart_as_far_as_one_window_can():
    """Four names that differ at '<8'/'<4' and again, 15 characters on, at the
    functor: one window of 14 cannot show both places. Each name is told apart
    from the one that shares its first place (failed before: the final rounds
    undid each other and all four read 'at::nati…8, at::native:…' or '…4, …',
    two pairs of twins; now one pair of twins is left)."""
    names = ["at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::BFloat16>",
             "at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>",
             "at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float>",
             "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>"]
    got = render._distinct_cuts([render._cell(n, 24) for n in names], names, 24)
    assert got == ["at::nati…8, at::native:…", "at::nati…CUDAFunctor_ad…",
                   "at::nati…4, at::native:…", "at::nati…CUDAFunctor_ad…"]
    # the same cells in every process (failed before: a set's order, which varies with the
    # string hash seed, decided which of the two places each name showed)
    code = ("import sys, json; from duckprof import render; names = json.loads(sys.argv[1]); "
            "print(json.dumps(render._distinct_cuts([render._cell(n, 24) for n in names], names, 24)))")
    for seed in ("1", "2", "3"):
        out = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}, check=True)
        assert json.loads(out.stdout) == got


@needs_corpus
def test_kernels_of_a_real_trace_are_told_apart(cli_app, monkeypatch):
    """h100_vit_inference's 14 kernels: cut plainly to the table's width, two
    pairs looked the same (sm90_xmma_gemm_bf16bf16_bf16f32…, at::native::
    vectorized_elementw…); now every row's name cell is its own."""
    monkeypatch.setenv("COLUMNS", "120")
    shown = invoke(cli_app, "report", "kernels", H100).stdout.splitlines()
    exact = list(csv.DictReader(io.StringIO(invoke(cli_app, "report", "kernels", H100, "--format", "csv").stdout)))
    cells = [line.split("  ")[0] for line in shown[2:2 + len(exact)]]
    assert len(exact) == 14 and len({r["name"] for r in exact}) == 14
    assert len(set(cells)) == 14, cells
    assert max(map(len, shown)) <= 120


def test_kernels_table_for_people(cli_app, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    res = invoke(cli_app, "report", "kernels", KERNELS)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= 120
    head = lines[0].split()
    assert head[:5] == ["name", "count", "total", "mean", "busy"] and "trace" not in head and "run" not in head
    # named as the headings are (failed before: 'trace_id 1', the column's name)
    assert "(every row: run default; trace id 1; device 0" in res.stdout
    assert "more column(s) with --wide: min_us, max_us" in " ".join(lines)
    assert "µs" in res.stdout and "TFLOP/s" in lines[0]
    wide = invoke(cli_app, "report", "kernels", KERNELS, "--wide")
    assert "GFLOP" in wide.stdout
    assert wide.stdout.splitlines()[0].split()[:3] == ["run", "trace", "id"]
    assert "min" in wide.stdout.splitlines()[0].split() and "every row" not in wide.stdout
    exact = invoke(cli_app, "report", "kernels", KERNELS, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(exact.stdout)))
    assert len(rows[0]) == 29 and "over_peak" in rows[0] and "flops_formula" in rows[0] and "flops_per_byte" in rows[0] and rows[0]["total_us"].replace(".", "").isdigit()


@pytest.mark.slow
@needs_corpus
@pytest.mark.parametrize("name", [r.name for r in reports.REPORTS])
def test_every_default_table_fits_120_columns(cli_app, monkeypatch, corpus_db, name):
    """Every corpus trace in one table (one load, one report): a table over many
    traces shows at least the columns a table of any one of them shows, as fewer
    columns are constant. (Each trace on its own, in csv: test_report_snapshots.)"""
    monkeypatch.setenv("COLUMNS", "120")
    res = invoke(cli_app, "report", name, "--db", corpus_db, "--run", "corpus")
    assert res.exit_code == 0, res.output
    assert len(res.stdout.splitlines()) > 1, res.output
    assert max(map(len, res.stdout.splitlines()), default=0) <= 120, (name, res.stdout)


def test_a_time_of_day_shows_to_the_second():
    """`duckprof runs`: when a run was loaded, to the second in the table
    (2026-12-07 09:15:48, not ...09:15:48.987916); csv keeps the microseconds."""
    from datetime import datetime
    at = datetime(2026, 12, 7, 9, 15, 48, 987916)
    columns = ["run", "traces", "last_loaded_at"]
    documented = [sqlfiles.Column(c, "VARCHAR", "") for c in columns]
    text = render.report_table(columns, [("a", 1, at), ("b", 2, at)], documented)
    assert "2026-12-07 09:15:48" in text and ".987916" not in text
    assert "2026-12-07 09:15:48.987916" in render.to_text(columns, [("a", 1, at)], "csv")


def test_a_one_row_table_leaves_out_its_empty_columns():
    """One row: `duckprof runs` of an untagged run showed an empty tags
    column, a kernels table of a trace without shapes four empty rate
    columns. They are left out, as an empty column of a longer table is;
    which trace the row is goes below; what has a value stays."""
    columns = ["run", "traces", "tags", "achieved_tflops", "busy_pct"]
    documented = [sqlfiles.Column(c, "VARCHAR", "") for c in columns]
    text = render.report_table(columns, [("a", 19, {}, None, 17.4)], documented)
    assert text.splitlines()[0].split() == ["traces", "busy"]
    assert text.splitlines()[2].split() == ["19", "17.4%"]
    assert "(every row: run a)" in text


def test_a_time_named_as_another_column_says_time():
    """report steps: step (the number) and step_us (its time) were both
    headed 'step'; the time is 'step time', as on the html page."""
    columns = ["step", "step_us", "gpu_busy_pct"]
    documented = [sqlfiles.Column(c, "VARCHAR", "") for c in columns]
    text = render.report_table(columns, [(4, 222_368.4, 22.2), (5, 220_100.0, 22.6)], documented)
    assert text.splitlines()[0].split() == ["step", "step", "time", "GPU", "busy"]
    assert text.splitlines()[2].split() == ["4", "222", "ms", "22.2%"]


def test_a_time_named_as_a_column_left_out_says_time():
    """report steps of a trace without steps (a serving loop): one row, its step empty and
    left out; the time was headed 'step' as if it were the step's number."""
    columns = ["step", "step_us", "gpu_busy_pct", "forward_us"]
    documented = [sqlfiles.Column(c, "VARCHAR", "") for c in columns]
    text = render.report_table(columns, [(None, 132_810.9, 0.0, 132_345.2)], documented)
    assert text.splitlines()[0].split() == ["step", "time", "GPU", "busy", "forward"]
    assert text.splitlines()[2].split() == ["133", "ms", "0.00%", "132", "ms"]
