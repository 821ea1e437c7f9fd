"""duckprof html without a browser: what the page holds (sections, report
tables whose cells are the reports' cells, marks per chart), escaping,
the section registry, the Python API and the command. tests/test_html_browser.py
opens pages in Chromium."""

from __future__ import annotations

import dataclasses
import gzip
import html as html_lib
import importlib.util
import json
import re

import pytest

import duckprof
from duckprof import sqlfiles
from test_gpu_time import two  # noqa: F401  (two_streams.json loaded as run r1)
from conftest import REPO, assert_one_line_error, corpus_path, invoke, run_cli
from duckprof import render, reports
from duckprof.html import page as P
from duckprof.html import charts
from html_check import page_tables, same_row

FIX = REPO / "fixtures" / "gpu_time"
TWO = FIX / "two_streams.json"

HOSTILE_KERNEL = "</svg><script>document.title='pwned'</script><img src=x onerror=alert(1)>"
HOSTILE_OP = "aten::\"quoted\" 'single' & <b>bold</b></script><!--"
HOSTILE_DEVICE = "<script>alert(3)</script>GPU"


def make_fixtures():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIX / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def hostile_trace(path):
    """two_streams.json with a kernel, an op and a device named to break out of HTML."""
    doc = make_fixtures().two_streams()
    for e in doc["traceEvents"]:
        if e["name"] == "K1":
            e["name"] = HOSTILE_KERNEL
        elif e["name"] == "aten::big":
            e["name"] = HOSTILE_OP
    doc["deviceProperties"] = [{"id": 0, "name": HOSTILE_DEVICE, "totalGlobalMem": 1 << 34,
                                "computeMajor": 9, "computeMinor": 0, "numSms": 132}]
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def two_page(two):
    return two.html()


def report_rows(session, name, options):
    res = session.report_result(name, **options)
    cols = res.relation.columns
    return cols, [[P.raw(v) for v in r] for r in res.relation.fetchall()]


# -- what the page holds ------------------------------------------------------------------

def section(html: str, sid: str) -> str:
    a = html.index(f'<section id="{sid}"')
    return html[a:html.index("</section>", a)]


def figures(html: str) -> list[tuple[str, int]]:
    return [(k, int(n)) for k, n in re.findall(r'data-chart="(\w+)" data-marks="(\d+)"', html)]


def test_page_sections_of_a_gpu_trace(two_page):
    assert two_page.sections == ["overview", "timeline", "temporal", "categories", "kernels", "idle", "launches", "ops",
                                 "modules", "steps", "steps-report", "collectives", "memory", "patterns"]
    html = str(two_page)
    for s in two_page.sections:
        assert f'<section id="{s}"' in html


@pytest.mark.slow  # runs every report of the page again
def test_every_table_cell_is_a_report_cell(two, two_page):
    tables = page_tables(str(two_page))
    assert {t["report"] for t in tables} >= {"traces", "devices", "temporal", "kernels", "idle", "queue",
                                              "ops-by-step"}
    for t in tables:
        cols, rows = report_rows(two, t["report"], t["options"])
        idx = [cols.index(c) for c in t["columns"]]
        want = [[r[i] for i in idx] for r in rows]
        assert t["rows"], t
        assert all(any(same_row(row, w) for w in want) for row in t["rows"]), (t["report"], t["options"])
        assert len(t["rows"]) == t["declared_rows"]


def test_kernels_table_and_roofline_hand_checked(two_page):
    (k,) = [t for t in page_tables(str(two_page)) if t["report"] == "kernels"]
    # two_streams.json: kernels K1..K6 and the NCCL kernel, one row each; record_shapes is off, so
    # no FLOPs: no dot, and the page says why
    assert sorted(r[k["columns"].index("name")] for r in k["rows"]) == sorted(
        ["K1", "K2", "K3", "K4", "K5", "K6", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"])
    assert 'data-chart="roofline"' not in str(two_page)
    assert "No kernel here has both a FLOP and a byte estimate, so no roofline." in str(two_page)


def test_marks_per_chart(two, two_page):
    html = str(two_page)
    # idle: one bar per op of the idle report (device 0), then the queue: one line per stream
    idle = two.report("idle", limit=P.TOP_IDLE, by="event").fetchall()
    assert figures(section(html, "idle")) == [("hbars", len(idle)), ("lines", 2)]
    # temporal: one segment per non-zero part: compute 73, communication 20, memory 30, idle 192
    assert figures(section(html, "temporal")) == [("stacked", 4)]
    # steps: one column per step
    assert figures(section(html, "steps")) == [("columns", 2)]
    # categories: one segment per (device, category) row with time; then per step
    cats = two.report_result("categories").relation
    by_step = [r for r in two.report("categories", by_step=True).fetchall() if r[4] is not None]
    assert figures(section(html, "categories")) == [("stacked", len(cats.fetchall())), ("stacked", len(by_step))]
    # ops: one bar per row of report ops shown (at most GENERIC_ROWS)
    ops = two.report("ops").fetchall()
    assert figures(section(html, "ops")) == [("hbars", min(len(ops), P.GENERIC_ROWS))]


def test_overview_busy_chart_hand_computed(two_page):
    # device window 315 µs: busy 123, host wait 150, kernel wait 12, other 30 (tests/test_gpu_time.py)
    m = re.search(r'<figure class="chart" data-chart="stacked" data-marks="4">.*?</figure>', str(two_page), re.S)
    assert m, "no busy/idle chart with 4 segments"
    tips = re.findall(r"<title>(GPU 0: [^<]*)</title>", m.group(0))
    assert tips == ["GPU 0: busy 123 µs", "GPU 0: idle: host wait 150 µs", "GPU 0: idle: kernel wait 12 µs",
                    "GPU 0: idle: other 30 µs"]


def test_timeline_data_is_the_bucket_report(two, two_page):
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', str(two_page), re.S)
    data = json.loads(m.group(1))
    (t,) = data["traces"]
    n = t["n"]
    assert [s["label"] for s in t["series"]] == ["GPU 0", "stream 7", "stream 8"]
    buckets = two.report_result("gpu-time", buckets=n).relation
    cols = buckets.columns
    rows = [dict(zip(cols, r)) for r in buckets.fetchall()]
    for s, (scope, stream) in zip(t["series"], [("device", None), ("stream", 7), ("stream", 8)]):
        mine = [r for r in rows if r["scope"] == scope and r["stream"] == stream]
        assert len(s["b"]) == 4 * n == 4 * len(mine)
        # a bucket with busy time never shows as empty, and an empty one never shows busy
        assert [c != "0" for c in s["b"][0::4]] == [r["busy_us"] > 0 for r in mine]
    assert [(x["step"], x["t0"]) for x in t["steps"]] == [(1, 0.0), (2, 0.09)]


@pytest.mark.slow
def test_cpu_only_page_says_so_in_one_line():
    s = duckprof.connect()
    s.load([str(corpus_path("cpu_only_rank34.json.gz"))], run="r")
    html = str(s.html())
    empties = re.findall(r'<p class="empty">([^<]*)</p>', html)
    # overview, timeline, temporal, categories, idle, launches, steps
    assert empties.count("no GPU activity in this trace") == 7
    assert "cpu_only_rank34.json.gz: no GPU kernels in this trace" in empties
    assert 'id="timeline-data"' not in html
    s.close()


# -- escaping -----------------------------------------------------------------------------

@pytest.mark.slow  # a page of its own; the quick run has test_script_json_cannot_close_its_element
def test_hostile_names_are_text(tmp_path):
    s = duckprof.connect()
    s.load([str(hostile_trace(tmp_path / "hostile.json"))], run="r")
    html = str(s.html())
    s.close()
    for bad in ("<script>document.title", "<img src=x", "<b>bold</b>", "<script>alert(3)", "</script><!--"):
        assert bad not in html
    # two scripts: the timeline's data and the page's own code
    assert len(re.findall(r"<script\b", html)) == 2
    assert "&lt;/svg&gt;&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in html
    tables = page_tables(html)
    names = [r[t["columns"].index("name")] for t in tables if t["report"] == "kernels" for r in t["rows"]]
    assert HOSTILE_KERNEL in names
    ops = [r[t["columns"].index("op")] for t in tables if t["report"] == "idle" for r in t["rows"]]
    assert HOSTILE_OP in ops


def test_script_json_cannot_close_its_element():
    text = str(P.script_json({"a": "</script><!-- & \u2028"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_content_security_policy_runs_only_the_page_script(two_page):
    import base64
    import hashlib
    html = str(two_page)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1)
    assert "default-src 'none'" in csp
    script = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(script) == 1
    digest = base64.b64encode(hashlib.sha256(script[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp


def test_no_address_outside_the_file(two_page):
    html = str(two_page)
    assert not re.search(r'(src|href)="(?!#)', html)
    assert not re.search(r"url\(", html)
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html


# -- the section registry ---------------------------------------------------------------------

@pytest.mark.slow
def test_a_section_appears_when_its_report_exists(two, monkeypatch):
    """The sections of reports other issues add (categories, ops, ...) are in
    SECTIONS already: registering the report is all it takes."""
    # the overview and the future section only (the other sections' reports are not what is
    # tested here, and two pages of all of them cost 3 s)
    overview = [s for s in P.SECTIONS if s.id == "overview"]
    monkeypatch.setattr(P, "SECTIONS", overview + [P.Section("future", "A future report", "future")])
    assert two.html().sections == ["overview"]
    # stand-in: a report named 'future' that runs sql/reports/temporal.sql
    monkeypatch.setitem(reports.BY_NAME, "future", reports.Report("temporal"))
    page = two.html()
    assert page.sections == ["overview", "future"]
    sec = section(str(page), "future")
    assert 'data-report="future"' in sec and "compute" in sec


@pytest.mark.slow  # a page of its own
def test_a_section_whose_report_has_no_rows_says_so(two, monkeypatch):
    monkeypatch.setitem(reports.BY_NAME, "memory", reports.BY_NAME["kernels"])
    monkeypatch.setattr(P, "SECTIONS", [s for s in P.SECTIONS if s.id in ("overview", "memory")])
    s = duckprof.connect()
    s.load([str(corpus_path("cpu_only_rank34.json.gz"))], run="r")
    html = str(s.html())
    s.close()
    sec = html[html.index('<section id="memory"'):]
    assert re.findall(r'<p class="empty">([^<]*)</p>', sec)[0] == "cpu_only_rank34.json.gz: no GPU kernels in this trace"


# -- charts ------------------------------------------------------------------------------------

def test_roofline_one_dot_per_point_and_roofs():
    pts = [dict(x=10, y=50, size_us=100, bound="memory", tip="a"), dict(x=500, y=700, size_us=5, bound="compute",
                                                                          tip="b")]
    c = charts.roofline(pts, title="t", gbps=3350, peaks=[("bf16 peak", 989.5)])
    assert c.marks() == 2
    roofs = [i for i in c.items if i.get("cls") == "roof"]
    assert len(roofs) == 2  # the DRAM slope up to the ridge, then flat
    slope, flat = roofs
    assert slope["x2"] == flat["x1"] and slope["y2"] == flat["y1"]  # they meet at the ridge point


def test_roofline_numbers_the_top_kernels_and_names_them_in_a_key():
    """25 kernels, 18 of them in one crowded decade: the 10 with the most time
    get the numbers 1..10 (the most time first), the key under the plot names
    them in that order, no two numbers overlap (their boxes as placed), and
    every dot keeps its hover title."""
    pts = [dict(x=20 + 3 * i, y=30 + 2 * (i % 5), size_us=1000 - 10 * i, bound="memory", label=f"kernel_{i}",
                tip=f"kernel_{i}: details") for i in range(18)]
    pts += [dict(x=400 + 50 * i, y=200, size_us=5 + i, bound="compute", label=f"gemm_{i}", tip=f"gemm_{i}")
            for i in range(7)]
    c = charts.roofline(pts, title="t", gbps=2039, peaks=[("tf32 peak", 156.0)])
    assert c.marks() == 25
    assert sorted(i["tip"] for i in c.items if i["t"] == "circle") == sorted(p["tip"] for p in pts)
    numbers = [i for i in c.items if i.get("cls") == "dot-label" and i.get("tip")]
    assert [n["s"] for n in numbers] == [str(k) for k in range(1, 11)]
    assert [n["tip"] for n in numbers] == [f"kernel_{i}: details" for i in range(10)]
    key = [i["s"] for i in c.items if i.get("cls") == "axis key"]
    assert key == [f"kernel_{i}" for i in range(10)]
    boxes = [(n["x"], n["y"] - charts.FONT + 2, n["x"] + charts.DIGIT_W * len(n["s"]), n["y"] + 1) for n in numbers]
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            A, B = boxes[a], boxes[b]
            assert min(A[2], B[2]) <= max(A[0], B[0]) or min(A[3], B[3]) <= max(A[1], B[1]), (numbers[a], numbers[b])
    # no label: no number (a kernel without a name is only a dot)
    bare = charts.roofline([dict(p, label=None) for p in pts], title="t", gbps=2039, peaks=[])
    assert not [i for i in bare.items if i.get("cls") == "dot-label"] and bare.height < c.height


def test_step_grid_fits_64_ranks_in_one_chart():
    """64 ranks x 3 steps: one chart, one cell per (rank, step), at most ~460
    px tall, the hot cells marked, rows labelled every other one (6 px rows)."""
    series = [dict(label=f"rank {r} · GPU 0", cells=[(s, 100.0 + r + 10 * s, f"r{r}s{s}", r == 7 and s == 2)
                                                      for s in (1, 2, 3)]) for r in range(64)]
    c = charts.step_grid(series, title="t", x_label="ProfilerStep#", unit="µs")
    cells = [i for i in c.items if "mark" in i.get("cls", "")]
    assert c.kind == "grid" and len(cells) == c.marks() == 192
    assert c.height <= 460
    assert [i["tip"] for i in cells if "hot" in i["cls"]] == ["r7s2"]
    labels = [i["s"] for i in c.items if i["t"] == "text" and i["s"].startswith("rank ")]
    assert labels[:3] == ["rank 0 · GPU 0", "rank 2 · GPU 0", "rank 4 · GPU 0"] and len(labels) == 32
    # one scale for the grid: the shortest step the lightest shade, the longest the darkest
    by_tip = {i["tip"]: i["fill"] for i in cells}
    assert by_tip["r0s1"] == charts.RAMP[0] and by_tip["r63s3"] == charts.RAMP[-1]


def test_hbars_bar_lengths_are_proportional():
    rows = [{"n": "a", "v": 10.0}, {"n": "b", "v": 5.0}]
    c = charts.hbars(rows, title="t", axis="x (µs)", label=lambda r: r["n"], value=lambda r: r["v"],
                     value_text=lambda r: str(r["v"]))
    bars = [i for i in c.items if "mark" in i.get("cls", "")]
    assert len(bars) == 2 and bars[0]["w"] == pytest.approx(2 * bars[1]["w"])


def test_waterfall_ends_at_b():
    c = charts.waterfall([("gemm", 30.0), ("conv", -10.0)], title="t", axis="time (ms)", start=("A", 100.0),
                         end=("B", 120.0))
    bars = [i for i in c.items if "mark" in i.get("cls", "")]
    assert len(bars) == 4
    a, up, down, b = bars
    assert up["y"] + up["h"] == pytest.approx(a["y"])          # +30 starts at A's top
    assert down["y"] == pytest.approx(up["y"])                 # -10 hangs from +30's top
    assert b["y"] == pytest.approx(down["y"] + down["h"])      # B's top is where -10 ends


def test_diff_summary_delta_of_a_percentage_in_points():
    """The diff page's summary as the CLI's: busy % 35.1% -> 31.7%, its delta
    -3.37 pp (failed before: -0.95%, which reads as a relative change), and no
    relative change of a percentage; each cell's data-v the exact value."""
    from duckprof.diff import diff
    from duckprof.html import diff_page as D
    fix = REPO / "fixtures" / "diff"
    with diff(str(fix / "a.json"), str(fix / "b.json"), by="category") as res:
        (sec,) = P.render_sections(D.DiffContext(res, None, 5), D.DIFF_SECTIONS[:1])
    (t,) = page_tables(str(sec.html))
    (i,) = [i for i, r in enumerate(t["rows"]) if r[0] == "gpu_busy_pct"]
    assert t["columns"] == ["metric", "a", "b", "delta", "delta_pct"]
    assert t["texts"][i] == ["gpu_busy_pct", "35.1%", "31.7%", "-3.37 pp", ""]
    assert float(t["rows"][i][3]) == pytest.approx(100 * 1182 / 3730 - 100 * 610 / 1740) and t["rows"][i][4] == ""


# -- the API and the command ---------------------------------------------------------------

def test_page_api(two_page, tmp_path):
    p = two_page.save(tmp_path / "r.html")
    assert p.read_text(encoding="utf-8") == str(two_page)
    assert len(two_page) == p.stat().st_size
    frame = two_page._repr_html_()
    assert frame.startswith("<iframe srcdoc=\"") and "<script" not in frame  # all of it escaped in srcdoc


@pytest.mark.slow
def test_html_of_a_run_in_a_database(tmp_path):
    db = tmp_path / "p.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(TWO)], run="a")
        s.load([str(corpus_path("h100_vit_inference.json.gz"))], run="b")
    with duckprof.connect(db, read_only=True) as s:
        page = s.html(run="b")
        assert "h100_vit_inference.json.gz" in str(page) and "two_streams" not in str(page)
        # the session still works after the page's own connection is gone
        assert s.sql("select count(*) from kernels").fetchall()[0][0] > 0
        with pytest.raises(duckprof.DuckprofError, match="no run named 'c'"):
            s.html(run="c")


@pytest.mark.slow
def test_cli_writes_the_page(tmp_path):
    out = tmp_path / "x.html"
    r = run_cli("html", TWO, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: ") and "14 sections" in r.stdout
    assert "<title>duckprof: two_streams.json</title>" in out.read_text(encoding="utf-8")


@pytest.mark.slow  # two loads and a diff page; the quick run has test_waterfall_ends_at_b
def test_cli_diff(tmp_path, cli_app):
    out = tmp_path / "d.html"
    a, b = corpus_path("tiny_compare_base.json.gz"), corpus_path("tiny_compare_test.json.gz")
    r = invoke(cli_app, "html", "--diff", a, b, "-o", out)
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert [t["report"] for t in page_tables(html)][:2] == ["diff-summary", "diff"]


@pytest.mark.slow
def test_cli_errors_are_one_line(tmp_path, cli_app):
    db = tmp_path / "p.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(TWO)], run="a")
    r = run_cli("html", "--db", db, "--run", "nope", "-o", tmp_path / "x.html")
    assert r.returncode == 2
    assert_one_line_error(r.stderr, "no run named 'nope'")
    r = run_cli("html", TWO, "--diff", "a", "b", "--db", db, "-o", tmp_path / "x.html")
    assert r.returncode == 2
    assert_one_line_error(r.stderr, "--diff takes its two sides")
    assert not (tmp_path / "x.html").exists()


def test_a_missing_browser_skips_locally_and_fails_in_ci(monkeypatch):
    import browser
    monkeypatch.setattr(browser, "find_chromium", lambda: None)
    monkeypatch.delenv("DUCKPROF_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium found"):
        browser.require_browser()
    monkeypatch.setenv("DUCKPROF_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="DUCKPROF_REQUIRE_BROWSER=1 requires them"):
        browser.require_browser()


def write_ranks(directory, n: int, slow_rank: int | None = None):
    """rank0.json .. rank<n-1>.json: two_streams.json as the ranks of one job;
    slow_rank's ProfilerStep#2 lasts 500 µs instead of 310."""
    mf = make_fixtures()
    for rank in range(n):
        doc = mf.two_streams()
        doc["distributedInfo"] = {"rank": rank}
        if rank == slow_rank:
            (step2,) = [e for e in doc["traceEvents"] if e["name"] == "ProfilerStep#2"]
            step2["dur"] = 500
        (directory / f"rank{rank}.json").write_text(json.dumps(doc))


@pytest.mark.slow  # a page of 16 ranks; the quick run has test_step_grid_fits_64_ranks_in_one_chart
def test_steps_of_many_ranks_are_one_grid(tmp_path):
    """Three ranks of two_streams.json (steps of 90 and 310 µs; rank 2's
    second step cut to 500 µs): the steps section is one grid, not a chart per
    rank: 6 cells, shaded on one scale from 90 to 500 µs (hand-computed: 90 ->
    the lightest shade, 310 -> the middle one, 500 -> the darkest)."""
    write_ranks(tmp_path, 3, slow_rank=2)
    with duckprof.connect() as s:
        s.load([str(tmp_path)], run="job")
        sec = section(str(s.html(run="job")), "steps")
    assert figures(sec) == [("grid", 6)]
    cells = re.findall(r'<rect [^>]*class="mark cell"[^>]*fill="([^"]+)"><title>([^<]*)</title>', sec)
    shade = {html_lib.unescape(t).split(",")[0]: f for f, t in cells}
    assert shade == {f"rank {r} · GPU 0 · ProfilerStep#{st}: {us}": charts.RAMP[k]
                     for r, st, us, k in [(0, 1, "90.0 µs", 0), (1, 1, "90.0 µs", 0), (2, 1, "90.0 µs", 0),
                                          (0, 2, "310 µs", 2), (1, 2, "310 µs", 2), (2, 2, "500 µs", 4)]}
    # the operators below it are rank 2's (the longest step): its outlier step (of two steps as far from their
    # median, the slower) and its median step; the line says whose, and that the others' are not
    assert [html_lib.unescape(h) for h in re.findall(r"<h3>([^<]*)</h3>", sec)] == [
        "rank 2 · ProfilerStep#2 (the outlier step)", "rank 2 · ProfilerStep#1 (the median step)"]
    assert ("Operators of rank 2's steps only (the trace with the longest step); the other 2 traces' are not "
            "shown: <code>duckprof report ops-by-step</code> lists them all.") in html_lib.unescape(sec)


@pytest.mark.slow
def test_ranks_section_names_the_straggler(tmp_path):
    """Two ranks of two_streams.json; rank 1's ProfilerStep#2 lasts 500 µs
    instead of 310: mean step time 200 vs 295 µs, rank 1 is the straggler."""
    write_ranks(tmp_path, 2, slow_rank=1)
    s = duckprof.connect()
    s.load([str(tmp_path)], run="job")
    page = s.html(run="job")
    s.close()
    assert "ranks" in page.sections
    sec = section(str(page), "ranks")
    step_chart = sec[sec.index("Which rank&#39;s steps take longest"):]
    step_chart = step_chart[:step_chart.index("</figure>")]
    bars = re.findall(r'<rect [^>]*class="mark bar( hot)?"[^>]*><title>([^<]*)</title>', step_chart)
    assert [(hot, tip) for hot, tip in bars] == [("", "rank 0: 200 µs"), (" hot", "rank 1: 295 µs")]
    # no collectives, so no wait caused: the straggler is the rank with the longest mean step
    assert "vermillion: the rank with the longest mean step" in sec
    assert "keeps the others waiting" not in sec


@pytest.mark.slow
def test_ranks_section_names_the_rank_that_keeps_the_others_waiting(job4):
    """A synthetic 4-rank job, rank 2 late by 3 ms at every all-reduce: report
    ranks puts it first (most wait caused); the page draws that wait per rank,
    rank 2 in vermillion, in every chart of the section, and its table is the report's."""
    page = job4.html(run="job")
    want = job4.report_result("ranks", run="job").relation
    cols, rows = want.columns, want.fetchall()
    sec = section(str(page), "ranks")
    wait = sec[sec.index("Which rank keeps the others waiting"):]
    wait = wait[:wait.index("</figure>")]
    bars = re.findall(r'<rect [^>]*class="mark bar( hot)?"[^>]*><title>rank (\d)', wait)
    assert bars == [("", "0"), ("", "1"), (" hot", "2"), ("", "3")]
    assert len(re.findall(r'class="mark bar hot"', sec)) == 3  # wait, step time, busy: rank 2 in each
    assert "vermillion: the rank whose late arrival at the collectives cost the others the most wait" in sec
    (t,) = [t for t in page_tables(sec) if t["report"] == "ranks"]
    assert [r[t["columns"].index("rank")] for r in t["rows"]] == [str(r[cols.index("rank")]) for r in rows]
    assert rows[0][cols.index("rank")] == 2


def test_constant_columns_are_said_once(two, two_page):
    """The terminal's rule (render.split_constant, shared): a column holding one
    value on every row of a table of several rows is said once below it, run,
    rank, trace and device as much as the categories' busy % (failed before:
    busy % stayed a column, 30.8% on every row); a column empty on every row
    (step without --by-step) is left out; the terminal's table of the same
    report says the same columns; a one-row table moves only run, rank,
    trace and device, and leaves out an empty column; 2 columns at least stay."""
    sec = section(str(two_page), "categories")
    (t,) = [t for t in page_tables(sec) if t["report"] == "categories"]
    assert t["columns"] == ["category", "count", "total_us", "gpu_pct", "wall_pct"]
    assert '<p class="note every-row">every row: run r1; rank 0; trace id 1; device 0; busy 30.8%</p>' in sec
    res = two.report_result("categories", **t["options"])
    text = render.report_table(res.relation.columns, res.relation.fetchall(), res.columns, width=200)
    said = text[text.index("(every row: ") + 12:].split(")")[0]
    # in the same words (failed before: the terminal said 'trace_id 1; ...; busy_pct 30.8%')
    assert said == "run r1; rank 0; trace id 1; device 0; busy 30.8%"

    cols = ["run", "step", "name", "count", "total_us"]
    table = P.Table("x", {}, cols, {}, [])
    rows = [{"run": "a", "step": None, "name": "k1", "count": 1, "total_us": 1.0},
            {"run": "a", "step": None, "name": "k2", "count": 2, "total_us": 1.0}]
    assert P.split_constant(table, rows, cols) == (["name", "count"], ["run a", "total 1.00 µs"])
    # one row: which trace it is goes below, an empty column (step) is left out, the rest stays
    assert P.split_constant(table, rows[:1], cols) == (cols[2:], ["run a"])
    # columns go in order while more than 2 are left: the empty step stays with name
    assert P.split_constant(table, rows, cols[:3]) == (["step", "name"], ["run a"])


def test_rows_of_one_rank_show_their_trace():
    """The ranks table of a run holding two traces of one rank (a job profiled
    twice): rank 0 on two rows said nothing of which trace each is; the [wide]
    trace id is shown then (render.told_apart, the terminal's rule), and
    stays hidden when the ranks tell the rows apart; the overview's devices
    table, whose columns leave out trace_id, the same; its charts name such
    a trace by rank and file."""
    from duckprof.sqlfiles import Column
    cols = ["run", "rank", "trace_id", "steps"]
    documented = {c: Column(c, "VARCHAR", "", wide=c == "trace_id") for c in cols}
    twice = P.Table("ranks", {}, cols, documented, [{"run": "a", "rank": 0, "trace_id": 1, "steps": 2},
                                                    {"run": "a", "rank": 0, "trace_id": 2, "steps": 3},
                                                    {"run": "a", "rank": 1, "trace_id": 3, "steps": 3}])
    assert P.split_constant(twice, twice.rows, twice.shown()) == (["rank", "trace_id", "steps"], ["run a"])
    apart = twice.rows[1:]
    assert P.split_constant(twice, apart, twice.shown()) == (["rank", "steps"], ["run a"])



def test_a_page_of_two_traces_of_one_rank_names_each():
    """tiny_compare_base and tiny_compare_test are both rank 1: the overview's
    devices table shows their trace ids, and the busy chart names each by
    rank and file (both were 'rank 1 · GPU 1')."""
    s = duckprof.connect()
    s.load([str(corpus_path("tiny_compare_base.json.gz")), str(corpus_path("tiny_compare_test.json.gz"))], run="r")
    sec = section(str(s.html()), "overview")
    (dev,) = [t for t in page_tables(sec) if t["report"] == "devices"]
    # rank and device hold one value on every row: said below; the trace id tells the rows apart
    assert dev["columns"] == ["trace_id", "gpu_events"] and sorted(r[0] for r in dev["rows"]) == ["1", "2"]
    # the files without the suffix both have (failed before: '.json.gz' too, which a chart's label box cut)
    assert "rank 1 · tiny_compare_base · GPU 1" in sec and "rank 1 · tiny_compare_test · GPU 1" in sec


def test_two_files_of_one_rank_that_differ_in_their_suffix_keep_it(tmp_path):
    """x.json and x.json.gz of one rank are told apart by their whole names."""
    def trace(dur):
        return {"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": dur,
             "args": {"device": 0, "stream": 7}}]}
    (tmp_path / "x.json").write_text(json.dumps(trace(5)))
    (tmp_path / "x.json.gz").write_bytes(gzip.compress(json.dumps(trace(6)).encode()))
    s = duckprof.connect()
    s.load([str(tmp_path / "x.json"), str(tmp_path / "x.json.gz")], run="r")
    sec = section(str(s.html()), "overview")
    assert "rank 0 · x.json · GPU 0" in sec and "rank 0 · x.json.gz · GPU 0" in sec


@pytest.mark.slow  # a page of its own
def test_idle_ops_without_gpu_idle_get_a_line_not_a_chart(two, monkeypatch):
    """When none of the ranked ops overlaps GPU idle time (a deep queue, as on
    a100_train_rank0), a chart of zero-length bars says nothing: one line says it."""
    real = P.Reports.get

    def zero_idle(self, name, **options):
        t = real(self, name, **options)
        if name == "idle":
            t = dataclasses.replace(t, rows=[dict(r, gpu_idle_us=0.0) for r in t.rows])
        return t

    monkeypatch.setattr(P.Reports, "get", zero_idle)
    sec = section(str(two.html()), "idle")
    assert figures(sec) == [("lines", 2)]
    assert ("None of the 4 CPU operators ranked here overlaps time when this GPU's queue was empty"
            in html_lib.unescape(sec))


@pytest.mark.slow  # a page of its own
def test_steps_chart_highlights_the_outlier_of_report_steps(tmp_path):
    """fixtures/steps/three_steps.json: steps of 100, 100 and 130 µs; report
    steps --summary names step 3 (+30% vs the median): its column is outlined
    and the note says why; its operators are listed as the outlier step's."""
    s = duckprof.connect()
    s.load([str(REPO / "fixtures" / "steps" / "three_steps.json")], run="r")
    sec = html_lib.unescape(section(str(s.html()), "steps"))
    s_summary = s.report("steps", summary=True)
    as_rows = lambda rel: [dict(zip(rel.columns, r)) for r in rel.fetchall()]  # noqa: E731
    summary = as_rows(s_summary)
    s.close()
    cols = re.findall(r'class="mark col( hot)?"[^>]*><title>ProfilerStep# (\d)', sec)
    assert cols == [("", "1"), ("", "2"), (" hot", "3")]
    assert "vermillion: ProfilerStep#3, the step furthest from the median step (+30.0%, report steps)" in sec
    assert [r["outlier_step"] for r in summary if r["figure"] == "step_us"] == [3]  # the step steps --summary names
    assert "ProfilerStep#3 (the outlier step)" in sec


@pytest.mark.slow
def test_steps_chart_highlights_nothing_when_no_step_stands_out(tmp_path):
    """three_steps.json with ProfilerStep#3 cut to 104 µs: 100, 100, 104; the
    step furthest from the median is 4% away, under STEP_OUTLIER_PCT: no column
    is outlined, the note says so, and the slowest step's operators are listed."""
    doc = json.loads((REPO / "fixtures" / "steps" / "three_steps.json").read_text())
    (step3,) = [e for e in doc["traceEvents"] if e["name"] == "ProfilerStep#3"]
    step3["dur"] = 104
    (tmp_path / "calm.json").write_text(json.dumps(doc))
    s = duckprof.connect()
    s.load([str(tmp_path / "calm.json")], run="r")
    sec = html_lib.unescape(section(str(s.html()), "steps"))
    s.close()
    assert re.findall(r'class="mark col( hot)?"', sec) == ["", "", ""]
    assert ("No step stands out: every step is within 4.0% of the median step (report steps), so none is "
            "highlighted.") in sec
    assert "ProfilerStep#3 (the slowest step)" in sec


@pytest.mark.slow  # runs report patterns again
def test_overview_shows_the_top_three_findings_of_report_patterns(two, two_page):
    (t,) = [t for t in page_tables(section(str(two_page), "overview")) if t["report"] == "patterns"]
    cols, rows = report_rows(two, "patterns", {})
    assert len(rows) > 3
    assert t["rows"] == [[r[cols.index(c)] for c in t["columns"]] for r in rows[:3]]


@pytest.mark.slow
def test_overview_names_the_run_its_ranks_and_tags(tmp_path):
    db = tmp_path / "p.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(TWO)], run="base", tags={"commit": "abc123", "batch": "64"})
        sec = section(str(s.html(run="base")), "overview")
    assert '<p class="runline">run base · ranks 0 · tags: batch=64, commit=abc123</p>' in sec


def test_page_connection_shares_views_once(two):
    # every shared view is a TEMP table on the page's connection, and reading its name there
    # gives the database view's rows (the reports read it unchanged)
    con = P.page_connection(two)
    try:
        temp = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
        names = [n for n, readers in P.SHARED_PLAIN_VIEWS.items() if any(P.Reports.has(r) for r in readers)]
        assert {"kernel_categories"} <= set(names)
        # launches, kernel_estimates and memory_events read the derived tables: nothing to share
        assert not {"launches", "kernel_estimates", "memory_events"} & set(P.SHARED_PLAIN_VIEWS)
        for name in [*P.SHARED_VIEWS, *names]:
            assert f"duckprof_page_{name}" in temp, name
            got = sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr)
            assert got == sorted(two.con.execute(f"SELECT * FROM {name}").fetchall(), key=repr), name
        assert con.execute("SELECT count(*) FROM launches").fetchone()[0] == 8  # K1..K6, NCCL, a memcpy
    finally:
        con.close()


@pytest.mark.slow  # two runs and two pages; the quick run has test_page_connection_shares_views_once
def test_a_runs_page_computes_the_shared_views_for_that_run_only(tmp_path, monkeypatch):
    """In a database of two runs the page of one computes the views it shares
    for that run's traces only, and is the same page as when they hold every
    run's rows."""
    db = tmp_path / "two_runs.duckdb"
    gt = REPO / "fixtures" / "gpu_time"
    with duckprof.connect(db) as s:
        s.load([str(gt / "two_streams.json")], run="a")
        s.load([str(gt / "who_starves.json")], run="b")
        a = s.con.execute("SELECT trace_id FROM trace_files WHERE run = 'a'").fetchall()
        con = P.page_connection(s, "a")
        try:
            for name in P.shared_names():
                if not any(c.name == "trace_id" for c in sqlfiles.view_headers()[name].columns):
                    continue  # kernel_categories: one row per kernel name, of any trace
                held = {r[0] for r in con.execute(f"SELECT DISTINCT trace_id FROM duckprof_page_{name}").fetchall()}
                assert held <= {t for (t,) in a}, name
            assert con.execute("SELECT count(DISTINCT trace_id) FROM gpu_activity").fetchone()[0] == 1
        finally:
            con.close()
        scoped = str(s.html(run="a"))
        share = P.share_view
        monkeypatch.setattr(P, "share_view", lambda con, name, run=None: share(con, name))
        assert str(s.html(run="a")) == scoped
        assert "two_streams.json" in scoped and "who_starves.json" not in scoped


def test_the_pages_kernels_read_its_busy_intervals_with_the_same_rows(two):
    """On the page's connection, which holds gpu_busy_intervals computed,
    report kernels takes each device's busy time (busy_pct's denominator) from
    it instead of merging the device events again: the same rows as the
    report on a plain connection. two_streams.json's streams overlap, so a sum
    of the events instead of their union would change busy_pct."""
    values = {o.name: o.default for o in reports.lookup("kernels").options()} | {"result": "r"}
    plain_sql = sqlfiles.render("reports/kernels.sql", **values)
    paged_sql = sqlfiles.render("reports/kernels.sql", **values, materialized=["gpu_busy_intervals"])
    assert "FROM gpu_busy_intervals b" in paged_sql and "FROM gpu_busy_intervals" not in plain_sql
    con = P.page_connection(two)
    try:
        for opts in ({}, {"device": 0, "limit": 3}):
            plain = reports.run(two.con, "kernels", **opts).relation.fetchall()
            paged = reports.run(con, "kernels", materialized=P.shared_names(), **opts).relation.fetchall()
            assert paged == plain and plain
        busy = {r[0] for r in reports.run(con, "kernels", materialized=P.shared_names()).relation
                .select("busy_pct").fetchall()}
        assert None not in busy
    finally:
        con.close()


def test_patterns_reads_the_views_the_page_holds_instead_of_copying_them():
    """report patterns computes the views its rules share (header `shared:`)
    once, in a CTE; on the page's connection, which holds them computed
    (materialized), the rules read the page's table instead of a copy."""
    pat = reports.lookup("patterns")
    rules = reports.rules_of(pat)
    values = {o.name: o.default for o in pat.options()} | {"run": "r"}
    assert "gpu_activity AS MATERIALIZED (" in reports._shared_views(pat, rules, values)
    held = reports._shared_views(pat, rules, values | {"materialized": list(P.shared_names())})
    assert "gpu_activity AS MATERIALIZED (" not in held


@pytest.fixture(scope="module")
def schedule(tmp_path_factory):
    """fixtures/sweep13/schedule (six CPU-only cycle files of two workers) in
    a database file of the module's: the first page computes the reports and
    stores them, the next ones (other tests, other page settings) read them
    (test_html_store: a page from stored results is the computed page, byte
    for byte), so the three tests below compute one page, not three."""
    with duckprof.connect(tmp_path_factory.mktemp("schedule") / "schedule.duckdb") as s:
        s.load([str(REPO / "fixtures" / "sweep13" / "schedule")])
        yield s


@pytest.fixture(scope="module")
def job4(tmp_path_factory):
    """A synthetic 4-rank job (duckprof.synth, rank 2 late by 3 ms at every
    all-reduce) as run job in a database file of the module's: as schedule,
    the second test's page reads the results the first one's stored."""
    from duckprof.synth import generate_job
    d = tmp_path_factory.mktemp("job4")
    (d / "job").mkdir()
    generate_job(d / "job", world_size=4, steps=2, late_rank=2, late_us=3000, blocks=1)
    with duckprof.connect(d / "job4.duckdb") as s:
        s.load([str(d / "job")], run="job")
        yield s


def test_overview_top_findings_rank_every_trace(schedule):
    """A page of several traces (fixtures/sweep13/schedule: six cycle files of
    two workers, each with a single-tensor-optimizer finding: trace 3's is
    medium, 170 µs at stake, the others low, 405, 346, 351, 320, 286 µs) shows
    the three that matter most over all of them: trace 3's, then 1's and 4's.
    It showed the first trace's rows, two of them skipped rules, and hid
    trace 3's medium finding."""
    s = schedule
    (t,) = [t for t in page_tables(section(str(s.html()), "overview")) if t["report"] == "patterns"]
    found = s.sql("select trace_id, severity, at_stake_us from ({}) where severity <> 'skipped' "
                  "order by trace_id".format(s.report("patterns").sql_query())).fetchall()
    assert [(f[0], f[1], round(f[2])) for f in found] == [
        (1, "low", 406), (2, "low", 346), (3, "medium", 170), (4, "low", 351), (5, "low", 320), (6, "low", 286)]
    col = t["columns"].index
    assert [(r[col("trace_id")], r[col("severity")]) for r in t["rows"]] == [("3", "medium"), ("1", "low"), ("4", "low")]


def _ranked(cols, rows, col, n):
    """The report's rows with the largest `col` first over every trace (the
    report's order among equals), the first n, as data-v strings."""
    i = cols.index(col)
    return sorted(rows, key=lambda r: (r[i] == "", -float(r[i] or 0)))[:n]


def test_generic_sections_rank_rows_across_every_trace(schedule):
    """A page of six traces (fixtures/sweep13/schedule: two workers' cycle
    files): report ops lists 30 rows per trace (180), trace by trace; the
    Operators table showed trace 1's 30 rows as if they were the run's. It
    shows the 30 with the most self CPU time over every trace, the trace of
    each row in its rank/trace column and in its bar's label, and says what is
    left out. Anti-patterns: the 30 findings that matter most (severity, then
    time at stake)."""
    s = schedule
    html = str(s.html())
    cols, rows = report_rows(s, "ops", {})
    pcols, prows = report_rows(s, "patterns", {})
    # a trace without a rank is named by its file, without the suffix every trace has
    labels = {t["trace_id"]: t["file_name"].removesuffix(".pt.trace.json.gz")
              for t in s.report("traces").df().to_dict("records")}
    ops = section(html, "ops")
    (t,) = page_tables(ops)
    assert len(rows) == 180 and len({r[cols.index("trace_id")] for r in rows[:30]}) == 1
    want = _ranked(cols, rows, "self_cpu_us", 30)
    assert [r[cols.index("trace_id")] for r in want].count("1") < 30
    assert [[r[t["columns"].index(c)] for c in t["columns"]] for r in t["rows"]] == \
        [[r[cols.index(c)] for c in t["columns"]] for r in want]
    assert "trace_id" in t["columns"]
    assert "The top 30 of 180 rows across 6 traces, by self CPU time: <code>duckprof report ops</code>" in ops
    bars = [html_lib.unescape(b) for b in re.findall(r'class="mark bar[^"]*"[^>]*><title>([^<]*)</title>', ops)]
    first = want[0]
    assert bars[0].startswith(f"{labels[int(first[cols.index('trace_id')])]} · {first[cols.index('name')]}")
    pat = section(html, "patterns")
    (pt,) = page_tables(pat)
    sev = {"high": 0, "medium": 1, "low": 2}
    pwant = sorted(prows, key=lambda r: (sev.get(r[pcols.index("severity")], 3), r[pcols.index("at_stake_us")] == "",
                                         -float(r[pcols.index("at_stake_us")] or 0)))[:30]
    assert [r[pt["columns"].index("trace_id")] for r in pt["rows"]] == [r[pcols.index("trace_id")] for r in pwant]
    assert pt["rows"][0][pt["columns"].index("severity")] == "medium"  # trace 3's, listed after trace 1's and 2's rows
    assert f"The top 30 of {len(prows)} rows across 6 traces, by severity, then time at stake" in pat


@pytest.mark.slow
def test_generic_sections_of_many_ranks_rank_steps_and_memory(job4, monkeypatch):
    """A synthetic 4-rank job, 3 rows shown per table: Step breakdown shows
    the 3 longest steps of the run and Memory the 3 ranks with the highest
    peak (the report lists rank by rank), each with its rank."""
    monkeypatch.setattr(P, "GENERIC_ROWS", 3)
    html = str(job4.html(run="job"))
    got = {name: report_rows(job4, name, {"run": "job"}) for name in ("steps", "memory")}
    for sid, name, col, by in [("steps-report", "steps", "step_us", "step time"),
                               ("memory", "memory", "peak_allocated_bytes", "peak allocated memory")]:
        cols, rows = got[name]
        sec = section(html, sid)
        (t,) = page_tables(sec)
        want = _ranked(cols, rows, col, 3)
        assert want != rows[:3]
        assert [[r[t["columns"].index(c)] for c in ("rank", col)] for r in t["rows"]] == \
            [[r[cols.index(c)] for c in ("rank", col)] for r in want]
        assert f"The top 3 of {len(rows)} rows across 4 traces, by {by}: " in sec


def test_per_device_sections_of_many_ranks_show_ranks_in_order_and_name_the_rest(tmp_path):
    """Eleven ranks of two_streams.json: the directory loads rank10.json
    third, and reports that list traces by trace_id put rank 10 before rank 2;
    the kernels, idle and categories sections showed the first eight GPUs of
    that order (rank 10 in, ranks 7-9 out) and said only '3 more GPU(s) not
    shown', and the idle section drew the queue of eight GPUs without a word
    on the rest. Each shows ranks 0-7, names the three it leaves out, and says
    whose queue is not drawn. The categories table holds the rows of the
    eight GPUs drawn."""
    write_ranks(tmp_path, 11)
    with duckprof.connect() as s:
        s.load([str(tmp_path)], run="job")
        rank = {t["trace_id"]: t["rank"] for t in s.report("traces", run="job").df().to_dict("records")}
        html = str(s.html(run="job"))
    assert [rank[t] for t in sorted(rank)][:3] == [0, 1, 10]
    left = "3 more GPU(s) not shown (rank 8 · GPU 0, rank 9 · GPU 0, rank 10 · GPU 0): "
    for sid in ("kernels", "idle"):
        sec = section(html, sid)
        shown = [rank[int(t)] for t in re.findall(r'<div class="block" data-trace="(\d+)"', sec)]
        assert shown == list(range(8)), sid
        assert html_lib.unescape(left) in html_lib.unescape(sec), sid
    idle = html_lib.unescape(section(html, "idle"))
    assert [rank[int(t)] for t in re.findall(r'<div class="block queue" data-trace="(\d+)"', idle)] == list(range(8))
    assert ("The queue over time of 3 more GPU(s) not drawn (rank 8 · GPU 0, rank 9 · GPU 0, rank 10 · GPU 0): "
            in idle)
    cat = section(html, "categories")
    assert html_lib.unescape(left) in html_lib.unescape(cat)
    # its table: the rows of the GPUs drawn (it listed all eleven ranks' rows)
    (t,) = page_tables(cat)
    assert sorted({int(r[t["columns"].index("rank")]) for r in t["rows"]}) == list(range(8))
    assert "Device time by kernel category of the 8 GPUs drawn above (report categories)" in cat


def test_steps_section_names_the_traces_whose_operators_it_leaves_out(schedule, monkeypatch):
    """Six CPU-only traces with steps (fixtures/sweep13/schedule), two blocks
    per section: the steps section lists the operators of the first two
    traces' slowest or outlier step and said nothing of the other four; it
    names them."""
    monkeypatch.setattr(P, "MAX_DEVICES", 2)
    s = schedule
    # named by their files without the suffix every trace has
    files = [t["file_name"].removesuffix(".pt.trace.json.gz") for t in s.report("traces").df().to_dict("records")]
    sec = html_lib.unescape(section(str(s.html()), "steps"))
    assert [h.split(" · ")[0] for h in re.findall(r"<h3>([^<]*)</h3>", sec)] == files[:2]
    assert (f"The operators of 4 more trace(s)' steps not shown ({files[2]}, {files[3]}, {files[4]}, {files[5]}): "
            "<code>duckprof report ops-by-step</code> lists them all." in sec)


def test_per_device_sections_of_many_ranks_show_the_straggler(tmp_path):
    """Eleven ranks of two_streams.json, rank 9's second step slower (the
    straggler of the Ranks section): the kernels and idle sections showed the
    first eight GPUs, without rank 9; rank 9 takes the eighth place, and the
    line under them says so."""
    write_ranks(tmp_path, 11, slow_rank=9)
    with duckprof.connect() as s:
        s.load([str(tmp_path)], run="job")
        rank = {t["trace_id"]: t["rank"] for t in s.report("traces", run="job").df().to_dict("records")}
        html = str(s.html(run="job"))
    assert "vermillion: the rank with the longest mean step" in section(html, "ranks")
    for sid in ("kernels", "idle"):
        sec = html_lib.unescape(section(html, sid))
        shown = [rank[int(t)] for t in re.findall(r'<div class="block" data-trace="(\d+)"', sec)]
        assert shown == [0, 1, 2, 3, 4, 5, 6, 9], sid
        assert ("3 more GPU(s) not shown (rank 7 · GPU 0, rank 8 · GPU 0, rank 10 · GPU 0); rank 9, the straggler "
                "(section Ranks), is shown: ") in sec, sid


def test_memory_section_draws_the_curve_and_modules_have_a_table():
    """fixtures/memory/memory.json: a step line per device from report memory --curve (every
    event: fewer than CURVE_BUCKETS). CUDA 0's levels 1000, 1500, 500 B at 120, 130, 140 µs, in
    kB on a 0..1.5 axis 200 px high from y = 10: y = 210 - 200 * level / 1.5 = 76.7, 10.0,
    143.3. build_module_hierarchy.json: the modules table, Conv2 then MyModule (633 µs) then its
    Linear."""
    s = duckprof.connect()
    s.load([str(REPO / "fixtures" / "memory" / "memory.json"),
            str(REPO / "fixtures" / "tb_plugin" / "build_module_hierarchy.json")], run="r")
    html = str(s.html())
    s.close()
    mem = html[html.index('<section id="memory"'):]
    mem = mem[:mem.index("</section>")]
    assert re.findall(r"<title>([^<]*)</title>", mem)[:2] == ["memory · CPU", "memory · CUDA 0"]
    cuda = re.findall(r'<path d="([^"]*)" class="mark line"', mem)[1]
    assert [float(p.split(",")[1]) for p in cuda.split()] == [76.7, 76.7, 10.0, 10.0, 143.3, 143.3]
    mod = html[html.index('<section id="modules"'):]
    mod = mod[:mod.index("</section>")]
    cells = re.findall(r'<td data-v="([^"]*)" class="txt">', mod)
    assert cells == ["Conv2", "MyModule", "· Linear"]
    assert '<td data-v="633.0" class="num">633 µs</td>' in mod
