"""duckprof diff (issue 4): hand-computed deltas on the fixtures/diff pair, independent
per-name counts (Python's json module) on real corpus pairs, run-in-database vs file,
CLI formats and errors.

fixtures/diff/a.json: 2 ProfilerSteps, NVIDIA A100; b.json: 4 ProfilerSteps, Tesla V100.
Their timelines and every expected number below are written out in fixtures/diff/README.md.
"""
from __future__ import annotations

import collections
import functools
import csv
import gzip
import io
import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import duckprof
import duckprof.diff  # registers the `diff` command on cli.app
from duckprof.cli import app
from duckprof.diff import diff
from conftest import slow_when

# Each diff of two files opens a session and loads both (0.3 s): the quick run
# (-m "not slow") keeps one test per level and per output format, and the
# hand-computed tests diff the pair loaded once (fixture pair) as runs.

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "diff"
A, B = str(FIX / "a.json"), str(FIX / "b.json")
CORPUS = Path(os.environ.get("DUCKPROF_CORPUS", ROOT.parent / "shared" / "traces"))

TABLE_COLS = ["name", "a_count", "b_count", "delta_count", "a_total_us", "b_total_us",
              "delta_total_us", "delta_pct", "a_mean_us", "b_mean_us", "status"]


def rows_of(res, key=("name",)):
    cols = res.table.columns
    out = {}
    for r in res.table.fetchall():
        d = dict(zip(cols, r))
        out[tuple(d[k] for k in key) if len(key) > 1 else d[key[0]]] = d
    return out


def check(row, a_count, b_count, d_count, a_total, b_total, d_total, d_pct, a_mean, b_mean, status):
    got = [row[c] for c in TABLE_COLS[1:]]
    want = [a_count, b_count, d_count, a_total, b_total, d_total, d_pct, a_mean, b_mean, status]
    for g, w, c in zip(got, want, TABLE_COLS[1:]):
        if w is None or isinstance(w, str):
            assert g == w, (row["name"], c, g, w)
        else:
            assert g == pytest.approx(w, abs=1e-9), (row["name"], c, g, w)


# -- the hand-made pair ------------------------------------------------------------

@pytest.fixture(scope="module")
def pair():
    """a.json and b.json loaded once, as diff(A, B) loads them (an in-memory
    session, each file a run named after its side, 'A' and 'B'): the tests
    below diff these runs (session=pair); diffs of the files themselves equal
    them (test_run_in_database_equals_files) and the CLI tests diff files."""
    with duckprof.connect() as s:
        s.load([A], run="A")
        s.load([B], run="B")
        yield s


def test_kernels_per_step_hand_computed(pair):
    with diff("A", "B", session=pair) as d:
        assert d.per_step and d.steps == (2, 4)
        assert d.table.columns == TABLE_COLS
        rows = rows_of(d)
        order = [r[0] for r in d.table.fetchall()]
    assert len(rows) == 9
    check(rows["gemm_kernel"], 2, 2, 0, 200, 220, 20, 10, 100, 110, "slower")
    check(rows["softmax_kernel"], 1, 1, 0, 40, 30, -10, -25, 40, 30, "faster")
    check(rows["void foo<4, float>(float*)"], 1, None, -1, 30, None, -30, -100, 30, None, "removed")
    check(rows["void foo<2, float>(float*)"], None, 1, 1, None, 28, 28, None, None, 28, "added")
    check(rows["old_kernel"], 0.5, None, -0.5, 25, None, -25, -100, 50, None, "removed")
    check(rows["new_kernel"], None, 0.5, 0.5, None, 7.5, 7.5, None, None, 15, "added")
    check(rows["triton_poi_fused_add_3"], 1, None, -1, 10, None, -10, -100, 10, None, "removed")
    check(rows["triton_poi_fused_add_7"], None, 1, 1, None, 10, 10, None, None, 10, "added")
    check(rows["Memcpy HtoD (Pageable -> Device)"], 0.5, 0.5, 0, 10, 10, 0, 0, 20, 20, "unchanged")
    # sorted by |delta_total_us|, ties by name
    assert order == ["void foo<4, float>(float*)", "void foo<2, float>(float*)", "old_kernel", "gemm_kernel",
                     "softmax_kernel", "triton_poi_fused_add_3", "triton_poi_fused_add_7", "new_kernel",
                     "Memcpy HtoD (Pageable -> Device)"]


def test_kernels_totals_hand_computed(pair):
    with diff("A", "B", session=pair, per_step=False) as d:
        assert not d.per_step
        rows = rows_of(d)
    check(rows["gemm_kernel"], 4, 8, 4, 400, 880, 480, 120, 100, 110, "slower")
    check(rows["softmax_kernel"], 2, 4, 2, 80, 120, 40, 50, 40, 30, "slower")
    check(rows["Memcpy HtoD (Pageable -> Device)"], 1, 2, 1, 20, 40, 20, 100, 20, 20, "slower")
    check(rows["old_kernel"], 1, None, -1, 50, None, -50, -100, 50, None, "removed")
    check(rows["new_kernel"], None, 2, 2, None, 30, 30, None, None, 15, "added")
    assert isinstance(rows["gemm_kernel"]["a_count"], int)


@pytest.mark.slow
def test_thresholds_decide_status(pair):
    # gemm per step: +20 us, +10 %; softmax: -10 us, -25 %
    with diff("A", "B", session=pair, threshold_pct=15) as d:
        rows = rows_of(d)
    assert rows["gemm_kernel"]["status"] == "unchanged" and rows["softmax_kernel"]["status"] == "faster"
    with diff("A", "B", session=pair, min_delta_us=15) as d:
        rows = rows_of(d)
    assert rows["gemm_kernel"]["status"] == "slower" and rows["softmax_kernel"]["status"] == "unchanged"
    with diff("A", "B", session=pair, min_delta_us=0, threshold_pct=0) as d:
        rows = rows_of(d)
    assert rows["Memcpy HtoD (Pageable -> Device)"]["status"] == "unchanged"  # delta exactly 0


def test_normalize_matches_trivial_differences(pair):
    with diff("A", "B", session=pair, normalize=True, raw_names=True) as d:
        rows = rows_of(d)
    assert len(rows) == 7
    check(rows["void foo<N, float>(float*)"], 1, 1, 0, 30, 28, -2, -2 / 30 * 100, 30, 28, "unchanged")
    check(rows["triton_poi_fused_add"], 1, 1, 0, 10, 10, 0, 0, 10, 10, "unchanged")
    assert rows["void foo<N, float>(float*)"]["a_raw_names"] == "void foo<4, float>(float*)"
    assert rows["void foo<N, float>(float*)"]["b_raw_names"] == "void foo<2, float>(float*)"
    assert rows["triton_poi_fused_add"]["b_raw_names"] == "triton_poi_fused_add_7"
    with diff("A", "B", session=pair, collapse_templates=True) as d:
        names = set(rows_of(d))
    assert "void foo<>(float*)" in names and "triton_poi_fused_add" in names


@pytest.mark.slow
def test_normalization_rule(tmp_path):
    names_a = ["triton_red_fused_sum_12", "triton_red_fused_sum_3", "k<0x7f00AB12>(int)",
               "void f<128, 4>(int)::{lambda()#2}", "sm80_tile128x64_v2", "triton_poi_fused_add_mul_0",
               "void a<b<c<1> >, d>(x<y>)", "ProfilerStep#5"]
    ev = [{"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 100 + 10 * i, "dur": 5,
           "args": {"device": 0, "stream": 7}} for i, n in enumerate(names_a)]
    p = tmp_path / "names.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    with diff(str(p), str(p), normalize=True, raw_names=True, per_step=False) as d:
        rows = rows_of(d)
    assert set(rows) == {"triton_red_fused_sum", "k<0x?>(int)", "void f<N, N>(int)::{lambda()#N}",
                         "sm80_tile128x64_v2", "triton_poi_fused_add_mul", "void a<b<c<N> >, d>(x<y>)",
                         "ProfilerStep#N"}
    assert rows["triton_red_fused_sum"]["a_count"] == 2
    assert rows["triton_red_fused_sum"]["a_raw_names"] == "triton_red_fused_sum_12 | triton_red_fused_sum_3"
    with diff(str(p), str(p), collapse_templates=True, per_step=False) as d:
        assert "void a<>(x<>)" in rows_of(d)


def test_category_level(pair):
    with diff("A", "B", session=pair, by="category") as d:
        rows = rows_of(d)
    assert set(rows) == {"gemm", "other", "reduction", "memcpy_htod", "triton_pointwise"}  # memcpys by direction
    check(rows["gemm"], 2, 2, 0, 200, 220, 20, 10, 100, 110, "slower")
    # other = foo (30 / 28 per step) + old_kernel (25) / new_kernel (7.5)
    check(rows["other"], 1.5, 1.5, 0, 55, 35.5, -19.5, -19.5 / 55 * 100, 110 / 3, 71 / 3, "faster")
    check(rows["reduction"], 1, 1, 0, 40, 30, -10, -25, 40, 30, "faster")
    check(rows["triton_pointwise"], 1, 1, 0, 10, 10, 0, 0, 10, 10, "unchanged")


def test_device_level(pair):
    with diff("A", "B", session=pair, by="device", normalize=True) as d:  # normalising does not touch 'device 0'
        rows = rows_of(d)
    # A: 12 device events, 630 us over 2 steps; B: 24 events, 1222 us over 4 steps
    check(rows["device 0"], 6, 6, 0, 315, 305.5, -9.5, -9.5 / 315 * 100, 52.5, 1222 / 24, "unchanged")


@pytest.mark.slow  # the quick run has test_summary_hand_computed and test_device_level
def test_op_level_total_self_and_shapes(pair):
    with diff("A", "B", session=pair, by="op") as d:
        rows = rows_of(d)
    assert set(rows) == {"aten::linear", "aten::mm", "aten::add", "aten::old_op", "aten::new_op"}
    check(rows["aten::linear"], 1, 1, 0, 120, 130, 10, 10 / 120 * 100, 120, 130, "slower")
    check(rows["aten::mm"], 1, 1, 0, 100, 100, 0, 0, 100, 100, "unchanged")
    check(rows["aten::old_op"], 0.5, None, -0.5, 15, None, -15, -100, 30, None, "removed")
    check(rows["aten::new_op"], None, 0.5, 0.5, None, 2.5, 2.5, None, None, 5, "added")
    with diff("A", "B", session=pair, by="op", op_time="self") as d:
        rows = rows_of(d)
    check(rows["aten::linear"], 1, 1, 0, 20, 30, 10, 50, 20, 30, "slower")  # 120-100, 130-100
    with diff("A", "B", session=pair, by="op", group_by_input_shape=True) as d:
        assert d.table.columns[:2] == ["name", "input_dims"]
        rows = rows_of(d, key=("name", "input_dims"))
    check(rows[("aten::mm", "[[4,8],[8,16]]")], 1, 0.5, -0.5, 100, 50, -50, -50, 100, 100, "faster")
    check(rows[("aten::mm", "[[8,8],[8,16]]")], None, 0.5, 0.5, None, 50, 50, None, None, 100, "added")
    check(rows[("aten::linear", None)], 1, 1, 0, 120, 130, 10, 10 / 120 * 100, 120, 130, "slower")


def _steps_as_operators(src, dst):
    """The fixture with its ProfilerStep#N annotations written as operators, as
    2021 Kineto traces do (cat 'Operator')."""
    doc = json.load(open(src))
    for e in doc["traceEvents"]:
        if e.get("name", "").startswith("ProfilerStep#"):
            e["cat"] = "Operator"
    dst.write_text(json.dumps(doc))
    return str(dst)


@pytest.mark.slow  # the quick run has test_op_level_total_self_and_shapes
def test_op_level_leaves_out_steps(tmp_path):
    """issue 13 item 15: ProfilerStep#N is no operator, also where a trace records it
    as one: no row per step (count 0.5 / 0.25 with per-step averaging), with or
    without --normalize (which would fold them into one 'ProfilerStep#N' row) and
    --group-by-input-shape; the operators' numbers stay the hand-computed ones."""
    a = _steps_as_operators(A, tmp_path / "a.json")
    b = _steps_as_operators(B, tmp_path / "b.json")
    ops = {"aten::linear", "aten::mm", "aten::add", "aten::old_op", "aten::new_op"}
    for kw in ({}, {"normalize": True}, {"group_by_input_shape": True, "normalize": True},
               {"per_step": False}):
        with diff(a, b, by="op", **kw) as d:
            assert d.steps == (2, 4)
            names = {r[0] for r in d.table.fetchall()}
        assert names == ops, kw
    with diff(a, b, by="op") as d:
        rows = rows_of(d)
    check(rows["aten::linear"], 1, 1, 0, 120, 130, 10, 10 / 120 * 100, 120, 130, "slower")
    check(rows["aten::old_op"], 0.5, None, -0.5, 15, None, -15, -100, 30, None, "removed")


def test_summary_hand_computed(pair):
    with diff("A", "B", session=pair) as d:
        summary = {r[0]: r[1:] for r in d.summary.fetchall()}
        sides = d.sides
    want = {  # metric: (A, B)
        "traces": (1, 1), "steps": (2, 4), "wall_us": (2000, 4000), "step_mean_us": (1000, 1000),
        "gpu_devices": (1, 1),
        # union of device intervals: A's memcpy [150,170) lies inside gemm [100,200); busy % over
        # the GPU window, first device event to last end: A [100, 1840), B [100, 3830)
        "gpu_busy_us": (610, 1182), "gpu_busy_pct": (100 * 610 / 1740, 100 * 1182 / 3730), "kernels": (11, 22),
        "kernel_us": (610, 1182), "gpu_busy_us_per_step": (305, 295.5), "kernels_per_step": (5.5, 5.5),
        "kernel_us_per_step": (305, 295.5)}
    assert list(summary) == list(want)
    for m, (a, b) in want.items():
        got_a, got_b, delta, pct = summary[m]
        assert (got_a, got_b, delta) == (pytest.approx(a), pytest.approx(b), pytest.approx(b - a)), m
        if m.endswith("_pct"):
            assert pct is None
        else:
            assert pct == pytest.approx(100 * (b - a) / a), m
    assert [s["devices"] for s in sides] == ["NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB"]
    assert [s["steps"] for s in sides] == [2, 4]


def test_summary_busy_pct_is_the_runs_busy_pct(pair):
    """diff's gpu_busy_pct is the figure `duckprof runs` and report gpu-time
    give for the same run (busy time over the GPU window); failed before:
    diff divided by the trace window, 30.5% and 29.55% against the runs' 35.06%
    and 31.69%: two busy % for one run."""
    runs = dict(pair.sql("SELECT run, busy_pct FROM runs").fetchall())
    with diff("A", "B", session=pair) as d:
        (a, b), = [r[1:3] for r in d.summary.fetchall() if r[0] == "gpu_busy_pct"]
    assert (a, b) == (pytest.approx(runs["A"]), pytest.approx(runs["B"]))
    assert (a, b) == (pytest.approx(100 * 610 / 1740), pytest.approx(100 * 1182 / 3730))



@pytest.mark.slow
def test_per_step_choice(tmp_path):
    p = tmp_path / "nosteps.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 300,
         "args": {"device": 0, "stream": 7}}]}))
    with diff(A, str(p)) as d:  # one side without steps: totals
        assert not d.per_step
        check(rows_of(d)["gemm_kernel"], 4, 1, -3, 400, 300, -100, -25, 100, 300, "faster")
    with pytest.raises(duckprof.DuckprofError, match="side B has no ProfilerStep"):
        diff(A, str(p), per_step=True)


@pytest.mark.slow
def test_filters_sort_limit(pair):
    with diff("A", "B", session=pair, statuses=["added", "removed"], sort="name") as d:
        names = [r[0] for r in d.table.fetchall()]
    assert names == sorted(names) and len(names) == 6
    with diff("A", "B", session=pair, sort="delta", limit=2) as d:
        assert [r[0] for r in d.table.fetchall()] == ["void foo<2, float>(float*)", "gemm_kernel"]
    with diff("A", "B", session=pair, sort="a_total", limit=1) as d:
        assert [r[0] for r in d.table.fetchall()] == ["gemm_kernel"]
    for bad in (dict(by="nope"), dict(sort="x"), dict(statuses=["worse"]), dict(group_by_input_shape=True)):
        with pytest.raises(duckprof.DuckprofError):
            diff(A, B, **bad)


# -- runs in a database ---------------------------------------------------------------

@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("diffdb") / "runs.duckdb"
    with duckprof.connect(path) as s:
        s.load([A], run="baseline")
        s.load([B], run="candidate")
    return str(path)


def _table(res):
    with res:
        return res.table.columns, res.table.fetchall(), res.summary.fetchall()


@pytest.mark.slow  # 5 diffs per case; the quick run has test_cli_db_run_vs_file_same_output
@pytest.mark.parametrize("kw", [{}, {"by": "op", "group_by_input_shape": True}, {"by": "category"},
                                {"normalize": True, "per_step": False}])
def test_run_in_database_equals_files(db, kw):
    files = _table(diff(A, B, **kw))
    assert _table(diff("baseline", B, db=db, **kw)) == files   # a run and a file
    assert _table(diff(A, "candidate", db=db, **kw)) == files   # a file and a run
    assert _table(diff("baseline", "candidate", db=db, **kw)) == files  # two runs
    with duckprof.connect(db, read_only=True) as s:
        assert _table(diff("baseline", "candidate", session=s, **kw)) == files


@pytest.mark.slow
def test_cli_db_run_vs_file_same_output(db):
    r = CliRunner()
    out_files = r.invoke(app, ["diff", A, B, "--format", "csv", "--no-summary"])
    out_mixed = r.invoke(app, ["diff", "baseline", B, "--db", db, "--format", "csv", "--no-summary"])
    out_runs = r.invoke(app, ["diff", "baseline", "candidate", "--db", db, "--format", "csv", "--no-summary"])
    assert out_files.exit_code == out_mixed.exit_code == out_runs.exit_code == 0
    assert out_files.stdout == out_mixed.stdout == out_runs.stdout
    bad = r.invoke(app, ["diff", "baselin", B, "--db", db])
    assert bad.exit_code == 2
    assert "baselin: not a run in" in bad.stderr and "baseline, candidate" in bad.stderr


# -- CLI formats and errors -------------------------------------------------------------

def test_cli_json_has_summary_and_rows():
    r = CliRunner().invoke(app, ["diff", A, B, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["by"] == "kernel" and doc["per_step"] is True
    assert [s["side"] for s in doc["sides"]] == ["A", "B"]
    assert {m["metric"]: m["b"] for m in doc["summary"]}["gpu_busy_us"] == 1182
    gemm = next(x for x in doc["rows"] if x["name"] == "gemm_kernel")
    assert gemm["delta_total_us"] == 20 and gemm["status"] == "slower"


def test_cli_csv_table_only_summary_on_stderr(tmp_path):
    out = tmp_path / "d.csv"
    r = CliRunner().invoke(app, ["diff", A, B, "--format", "csv", "--output", str(out)])
    assert r.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == TABLE_COLS and len(rows) == 9
    assert "gpu_busy_us" in r.stderr and "gpu_busy_us" not in out.read_text()


@pytest.mark.slow
def test_cli_table_and_markdown():
    r = CliRunner().invoke(app, ["diff", A, B, "--by", "op", "--format", "markdown", "--limit", "2"])
    assert r.exit_code == 0
    text = r.stdout
    assert "per-step averages" in text and "A: " in text and "NVIDIA A100-SXM4-80GB" in text
    assert "| metric" in text and "| name" in text
    body = text[text.index("| name"):].strip().splitlines()
    assert len(body) == 5  # header, rule, 2 rows, as a report's markdown: the footer naming the --wide columns
    assert body[-1] == "(3 more column(s) with --wide: delta_count, a_mean_us, b_mean_us)"
    r = CliRunner().invoke(app, ["diff", A, B, "--status", "slower"])
    assert r.exit_code == 0 and "gemm_kernel" in r.stdout and "old_kernel" not in r.stdout


@pytest.mark.slow
def test_cli_parquet(tmp_path):
    out = tmp_path / "d.parquet"
    r = CliRunner().invoke(app, ["diff", A, B, "--format", "parquet", "--output", str(out)])
    assert r.exit_code == 0, r.stderr
    with duckprof.connect() as s:
        n = s.con.execute("SELECT count(*) FROM read_parquet($p)", {"p": str(out)}).fetchall()[0][0]
    assert n == 9


@pytest.mark.parametrize("args,msg", [
    (["--by", "kernels"], "unknown --by 'kernels'"),
    (["--status", "worse"], "unknown --status worse"),
    (["--format", "xml"], "unknown --format"),
    (["--group-by-input-shape"], "needs --by op"),
])
def test_cli_errors(args, msg):
    r = CliRunner().invoke(app, ["diff", A, B, *args])
    assert r.exit_code == 2 and msg in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_cli_missing_file():
    r = CliRunner().invoke(app, ["diff", A, str(FIX / "nope.json")])
    assert r.exit_code == 2 and "nope.json: no such file" in r.stderr


# -- the real corpus: counts made here with Python's json module ---------------------------

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}  # lower-cased, 2021 spellings too
OP_CATS = {"cpu_op", "operator"}


@functools.lru_cache(maxsize=None)
def _events(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def _independent(path, cats):
    """name -> [count, total dur in us] over complete events of these categories, and the step count."""
    agg = collections.defaultdict(lambda: [0, 0.0])
    steps = set()
    for e in _events(path):
        if e.get("ph") != "X":
            continue
        m = re.match(r"ProfilerStep#\s*(\d+)", e.get("name") or "")
        if m and (e.get("cat") or "").lower() in ("user_annotation", "cpu_op", "operator"):
            steps.add(int(m.group(1)))
        if (e.get("cat") or "").lower() in cats and not (m and cats == OP_CATS):  # steps are not ops
            a = agg[e["name"]]
            a[0] += 1
            a[1] += float(e.get("dur", 0))
    return agg, len(steps)


PAIRS = {"tiny_compare": ("tiny_compare_base.json.gz", "tiny_compare_test.json.gz"),
         "resnet50_workers0_vs_4": ("v100_resnet50_workers0_2021.json.gz", "v100_resnet50_workers4_2021.json.gz")}


@pytest.fixture(scope="module", params=slow_when(list(PAIRS), {"resnet50_workers0_vs_4"}))
def corpus_pair(request):
    """(path A, path B, an in-memory session with them loaded as runs 'A' and 'B')."""
    pa, pb = (CORPUS / f for f in PAIRS[request.param])
    if not (pa.exists() and pb.exists()):
        pytest.skip(f"corpus not found at {CORPUS}")
    s = duckprof.connect()
    s.load([str(pa)], run="A")
    s.load([str(pb)], run="B")
    yield pa, pb, s
    s.close()


@pytest.mark.parametrize("by,cats", [("kernel", DEVICE_CATS), ("op", OP_CATS)])
def test_corpus_counts_match_json_module(corpus_pair, by, cats):
    pa, pb, s = corpus_pair
    (ea, sa), (eb, sb) = _independent(pa, frozenset(cats)), _independent(pb, frozenset(cats))
    assert sa and sb
    with diff("A", "B", session=s, by=by, per_step=False) as d:
        totals = rows_of(d)
    with diff("A", "B", session=s, by=by) as d:
        assert d.per_step and d.steps == (sa, sb)
        per_step = rows_of(d)
    assert set(totals) == set(ea) | set(eb)
    for name, row in totals.items():
        a, b = ea.get(name), eb.get(name)
        assert row["a_count"] == (a[0] if a else None), name
        assert row["b_count"] == (b[0] if b else None), name
        assert row["a_total_us"] == (pytest.approx(a[1], abs=1e-6) if a else None), name
        assert row["b_total_us"] == (pytest.approx(b[1], abs=1e-6) if b else None), name
        assert row["delta_total_us"] == pytest.approx((b[1] if b else 0) - (a[1] if a else 0), abs=1e-6)
        assert row["status"] == ("added" if not a else "removed" if not b else row["status"])
        p = per_step[name]
        if a:
            assert p["a_count"] == pytest.approx(a[0] / sa) and p["a_total_us"] == pytest.approx(a[1] / sa)
        if b:
            assert p["b_count"] == pytest.approx(b[0] / sb) and p["b_total_us"] == pytest.approx(b[1] / sb)


def test_corpus_summary_counts(corpus_pair):
    pa, pb, s = corpus_pair
    kernels = [sum(1 for e in _events(p) if e.get("ph") == "X" and (e.get("cat") or "").lower() == "kernel")
               for p in (pa, pb)]
    steps = [_independent(p, frozenset())[1] for p in (pa, pb)]
    with diff("A", "B", session=s, by="device") as d:
        summary = {r[0]: r[1:] for r in d.summary.fetchall()}
        devices = [x["devices"] for x in d.sides]
    assert summary["kernels"][:2] == tuple(float(k) for k in kernels)
    assert summary["steps"][:2] == tuple(float(n) for n in steps)
    if "resnet" in str(pa):
        assert all(x.startswith("Tesla V100-DGXS-32GB") for x in devices)


def test_corpus_files_route_tiny():
    pa, pb = (CORPUS / f for f in PAIRS["tiny_compare"])
    if not (pa.exists() and pb.exists()):
        pytest.skip(f"corpus not found at {CORPUS}")
    ea, _ = _independent(pa, frozenset(DEVICE_CATS))
    eb, _ = _independent(pb, frozenset(DEVICE_CATS))
    with diff(str(pa), str(pb), per_step=False) as d:
        rows = rows_of(d)
    assert {n: (r["a_count"], r["b_count"]) for n, r in rows.items()} == \
        {n: (ea[n][0] if n in ea else None, eb[n][0] if n in eb else None) for n in set(ea) | set(eb)}
    # the one change: a CUDAFunctor_add<int> kernel of base is missing from test
    changed = {n: r["delta_count"] for n, r in rows.items() if r["delta_count"]}
    assert list(changed.values()) == [-1] and "CUDAFunctor_add<int>" in next(iter(changed))


def test_cli_table_reads_as_a_report(monkeypatch):
    """The terminal table is drawn as a report's: times with their unit in the
    cell, delta % in the heading, whole per-step counts without decimals, the
    mean and delta-count columns only with --wide (the footer names them), and
    it fits 120 columns (212 before, with cells like 15,587.386 and 5.000)."""
    monkeypatch.setenv("COLUMNS", "120")
    r = CliRunner().invoke(app, ["diff", A, B, "--no-summary"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[0].split() == ["name", "a", "count", "b", "count", "a", "total", "b", "total", "delta", "total",
                                "delta", "status"]
    row = {line.split()[0]: line.split()[1:] for line in lines[2:] if line.strip()}
    assert row["gemm_kernel"] == ["2", "2", "200", "µs", "220", "µs", "20.0", "µs", "10.0%", "slower"]
    assert row["old_kernel"] == ["0.500", "25.0", "µs", "-25.0", "µs", "-100.0%", "removed"]
    assert lines[-1] == "(3 more column(s) with --wide: delta_count, a_mean_us, b_mean_us)"
    r = CliRunner().invoke(app, ["diff", A, B, "--no-summary", "--wide"])
    assert r.exit_code == 0, r.stderr
    gemm = next(line for line in r.stdout.splitlines() if line.startswith("gemm_kernel")).split()
    assert gemm == ["gemm_kernel", "2", "2", "0", "200", "µs", "220", "µs", "20.0", "µs", "10.0%", "100", "µs",
                    "110", "µs", "slower"]


def test_cli_summary_in_units():
    """The summary block's values in their metric's unit, as the html page's
    (wall_us 2.00 ms, not 2,000.000; busy % as a percentage, its delta in
    percentage points; counts whole), right-aligned; json keeps the exact
    numbers (failed before: the busy % delta read -0.95%, a relative change)."""
    r = CliRunner().invoke(app, ["diff", A, B])
    assert r.exit_code == 0, r.stderr
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()
            if line.split() and line.split()[0] in ("steps", "wall_us", "gpu_busy_pct", "gpu_busy_us_per_step",
                                                    "kernels_per_step")}
    assert rows["steps"] == ["2", "4", "2", "100.0%"]
    assert rows["wall_us"] == ["2.00", "ms", "4.00", "ms", "2.00", "ms", "100.0%"]
    # a difference of percentages is in percentage points, and no relative change is given for it
    assert rows["gpu_busy_pct"] == ["35.1%", "31.7%", "-3.37", "pp"]
    assert rows["gpu_busy_us_per_step"] == ["305", "µs", "296", "µs", "-9.50", "µs", "-3.11%"]
    assert rows["kernels_per_step"] == ["5.50", "5.50", "0", "0.00%"]
    doc = json.loads(CliRunner().invoke(app, ["diff", A, B, "--format", "json"]).stdout)
    assert doc["summary"][2] == {"metric": "wall_us", "a": 2000.0, "b": 4000.0, "delta": 2000.0, "delta_pct": 100.0}
    busy = next(r for r in doc["summary"] if r["metric"] == "gpu_busy_pct")
    assert busy["delta"] == pytest.approx(100 * 1182 / 3730 - 100 * 610 / 1740) and busy["delta_pct"] is None
