"""duckprof html pages opened in headless Chromium (tests/browser.py): a GPU
training trace, a CPU-only trace, an AMD trace, a run of two ranks and a diff of two runs load
with no request beyond the file and no console error; every chart has the
marks its report's rows call for; every number in a table is the cell that
`duckprof report ... --format csv` prints; a screenshot of each is written
for review (to DUCKPROF_SCREENSHOTS if set, else the test's tmp directory).

Without Chromium these tests skip, saying why; with DUCKPROF_REQUIRE_BROWSER=1
(.ci/run sets it) they fail instead.

    DUCKPROF_UPDATE_SCREENSHOTS=1 python -m pytest tests/test_html_browser.py -k readme

rewrites the README's screenshots (docs/img/html_*.png) from the H100 trace.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

import duckprof
from browser import Browser, require_browser
from conftest import REPO, corpus_path, invoke, loaded, run_cli
from html_check import assert_rows_of, assert_subsequence, cli_options, csv_rows
from test_html import HOSTILE_KERNEL, HOSTILE_OP, hostile_trace

pytestmark = pytest.mark.slow

PAGES = {  # the run name in the test database -> corpus file
    "gpu_training": "a100_train_rank0.json.gz",
    "cpu_only": "cpu_only_rank34.json.gz",
    "amd": "mi300x_resnet_act_checkpoint.json.gz",
    "two_ranks": ("sampled_rank0_no_devprops.json.gz", "sampled_rank1_no_devprops.json.gz"),
}
#: the generic sections whose rows a page of several traces ranks over every trace
RANKED = ("ops", "steps-report", "memory", "patterns", "launches")
DIFF = ("base", "v100_resnet50_workers0_2021.json.gz", "cand", "v100_resnet50_workers4_2021.json.gz")

TABLES_JS = """Array.from(document.querySelectorAll('table[data-report]')).map(t => ({
  report: t.dataset.report, options: JSON.parse(t.dataset.options), section: t.closest('section').id,
  columns: Array.from(t.tHead.rows[0].cells).map(c => c.dataset.col),
  rows: Array.from(t.tBodies[0].rows).map(r => Array.from(r.cells).map(c => c.dataset.v)),
  texts: Array.from(t.tBodies[0].rows).map(r => Array.from(r.cells).map(c => c.textContent))}))"""


@pytest.fixture(scope="module")
def browser():
    require_browser()
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "corpus.duckdb"
    with duckprof.connect(path) as s:
        for run, names in PAGES.items():
            s.load([str(corpus_path(n)) for n in ((names,) if isinstance(names, str) else names)], run=run)
        s.load([str(corpus_path(DIFF[1]))], run=DIFF[0])
        s.load([str(corpus_path(DIFF[3]))], run=DIFF[2])
    return path


@pytest.fixture(scope="module")
def h100_page(tmp_path_factory):
    """The page of the H100 trace (the roofline test and the README's pictures)."""
    with loaded(corpus_path("h100_vit_inference.json.gz"), run="h100") as s:
        return s.html().save(tmp_path_factory.mktemp("h100") / "h100.html")


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    d = Path(os.environ.get("DUCKPROF_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


class Cli:
    """`duckprof report/diff ... --format csv` on the test database, each once
    (in-process: the page itself is written by a `duckprof html` process).
    The reports share one read-only session, opened as `report --db` opens
    it, instead of one each (an open checks the file; test_security and
    test_persistent test the open)."""

    def __init__(self, app, db, monkeypatch):
        self.app, self.db, self.memo = app, db, {}
        self.monkeypatch, self.shared = monkeypatch, None

    def csv(self, *args):
        if args not in self.memo:
            if args[0] == "report" and self.shared is None:
                from duckprof import cli_reports
                self.shared = duckprof.connect(self.db, read_only=True)
                self.monkeypatch.setattr(cli_reports, "open_data",
                                         lambda *a, **kw: contextlib.nullcontext(self.shared))
            r = invoke(self.app, *args, "--db", self.db, "--format", "csv",
                       "-q" if args[0] == "report" else "--no-summary")
            assert r.exit_code == 0, (args, r.output)
            self.memo[args] = csv_rows(r.stdout)
        return self.memo[args]

    def report(self, run, name, options):
        return self.csv("report", name, *cli_options(options), "--run", run)

    def dicts(self, run, name, options):
        header, rows = self.report(run, name, options)
        return [dict(zip(header, r)) for r in rows]

    def close(self):
        if self.shared is not None:
            self.shared.close()


@pytest.fixture
def cli(cli_app, db, monkeypatch):
    """A Cli on the test database; its session closes with the test (the next
    test's `duckprof html --db` process stores its results in the file)."""
    c = Cli(cli_app, db, monkeypatch)
    yield c
    c.close()


def build(db, tmp, *args) -> Path:
    out = tmp / "page.html"
    r = run_cli("html", "--db", db, *args, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def pages(db, tmp_path_factory):
    """run -> the page `duckprof html --db DB --run RUN` wrote, built once per
    module (the page tests and the sorting test open the same page; the
    browser changes only its own copy of the document)."""
    built = {}

    def page(run):
        if run not in built:
            built[run] = build(db, tmp_path_factory.mktemp(f"page_{run}"), "--run", run)
        return built[run]
    return page


def check_loaded(page):
    assert page.requests == [page.url], f"requests beyond the file: {page.requests}"
    assert page.errors == [], page.errors
    assert page.dialogs == []


def nonzero(row, *cols):
    return sum(1 for c in cols if row[c] not in ("", "0", "0.0") and float(row[c]) > 0)


@pytest.mark.parametrize("run", list(PAGES))
def test_page_in_a_browser(browser, cli, pages, shots, run):
    path = pages(run)
    page = browser.open(path)
    check_loaded(page)
    page.screenshot(shots / f"{run}.png")

    # every table: its cells are the CLI's cells, in the CLI's order
    tables = page.eval(TABLES_JS)
    assert tables
    for t in tables:
        header, rows = cli.report(run, t["report"], t["options"])
        if t["section"] == "overview" and t["report"] == "patterns" or (
                t["section"] in RANKED and isinstance(PAGES[run], tuple) and len(rows) > len(t["rows"])):
            # the top findings over every trace, and a generic section's rows of a page of
            # several traces that do not all fit: re-ranked over every trace (test_html
            # pins the order)
            assert_rows_of(t, header, rows)
        else:
            assert_subsequence(t, header, rows)

    gpu = cli.dicts(run, "gpu-time", {})
    if not gpu:  # the CPU-only trace: every GPU section says so in one line
        empties = page.eval("Array.from(document.querySelectorAll('p.empty')).map(p => p.textContent)")
        # overview, timeline, temporal, categories, idle, launches, steps
        assert sum(e.startswith("no GPU activity in this trace") for e in empties) == 7, empties
        assert page.eval("document.querySelectorAll('section:not(#ops) svg .mark, #timeline svg').length") == 0
        # the CPU operators are there: one bar per row of report ops
        assert page.eval("document.querySelectorAll('#ops svg .mark').length") == len(cli.dicts(run, "ops", {})) > 0
        return

    # overview: one segment per non-zero part of each device's window
    devices = [r for r in gpu if r["scope"] == "device"]
    assert page.eval("document.querySelectorAll('#overview .mark').length") == sum(
        nonzero(r, "busy_us", "host_wait_us", "kernel_wait_us", "other_us") for r in devices)
    # temporal: compute, communication, memory, idle segments
    assert page.eval("document.querySelectorAll('#temporal .mark').length") == sum(
        nonzero(r, "compute_us", "communication_us", "memory_us", "idle_us") for r in cli.dicts(run, "temporal", {}))

    # timeline: one row per device and stream of gpu-time, a busy mark per bucket with busy time
    n = page.eval("Number(document.getElementById('timeline-chart').dataset.buckets)")
    buckets = cli.dicts(run, "gpu-time", {"buckets": n})
    got = page.eval("""Array.from(document.querySelectorAll('#timeline .tl-row')).map(g => [g.dataset.device,
        g.dataset.stream, Number(g.dataset.buckets), g.querySelectorAll('rect.busy').length])""")
    want = [[r["device"], r["stream"], n,
             sum(1 for b in buckets if (b["device"], b["stream"], b["scope"]) == (r["device"], r["stream"], r["scope"])
                 and float(b["busy_us"]) > 0)] for r in gpu]
    assert got == want
    page.screenshot(shots / f"{run}_timeline.png", selector="#timeline")

    # kernels: one roofline dot per kernel of the table with an intensity and a rate
    kernels = cli.dicts(run, "kernels", {"limit": 25})
    for block in page.eval("""Array.from(document.querySelectorAll('#kernels .block')).map(b => [b.dataset.trace,
            b.dataset.device, b.querySelectorAll('table tbody tr').length,
            b.querySelectorAll('figure[data-chart=roofline] circle.mark').length])"""):
        tid, dev, n_rows, dots = block
        mine = [k for k in kernels if (k["trace_id"], k["device"]) == (tid, dev)]
        assert n_rows == len(mine)
        # csv cells are text: '0.0' (a rate that rounds to 0) gets no dot, as on the page
        assert dots == sum(1 for k in mine if float(k["flops_per_byte"] or 0) and float(k["achieved_tflops"] or 0))
    # idle: one bar per op of the ranking; none, and one line saying so, when no op overlaps GPU idle time
    idle = cli.dicts(run, "idle", {"limit": 15, "by": "event"})  # the page draws --by event
    for tid, dev, bars, starved in page.eval("""Array.from(document.querySelectorAll('#idle .block:not(.queue)'))
            .map(b => [b.dataset.trace, b.dataset.device, b.querySelectorAll('figure .mark').length,
                       b.querySelectorAll('p.starved').length])"""):
        mine = [r for r in idle if (r["trace_id"], r["device"]) == (tid, dev)]
        idle_time = any(float(r["gpu_idle_us"] or 0) > 0 for r in mine)
        assert (bars, starved) == ((len(mine), 0) if idle_time else (0, 1))
    # categories: one segment per category with time, per device, then per step
    cats = cli.dicts(run, "categories", {})
    assert page.eval("document.querySelectorAll('#categories figure')[0].querySelectorAll('.mark').length") == sum(
        1 for r in cats if float(r["total_us"]) > 0)
    by_step = cli.dicts(run, "categories", {"by_step": True})
    for tid, dev, segs in page.eval("""Array.from(document.querySelectorAll('#categories .block')).map(b =>
            [b.dataset.trace, b.dataset.device, b.querySelectorAll('.mark').length])"""):
        assert segs == sum(1 for r in by_step if (r["trace_id"], r["device"]) == (tid, dev)
                           and r["step"] != "" and float(r["total_us"]) > 0)
    # queue: one line per stream
    queue = cli.dicts(run, "queue", {})
    for tid, dev, lines in page.eval("""Array.from(document.querySelectorAll('#idle .block.queue')).map(b =>
            [b.dataset.trace, b.dataset.device, b.querySelectorAll('path.mark').length])"""):
        assert lines == sum(1 for r in queue if (r["trace_id"], r["device"]) == (tid, dev))
    # steps: one column per step (a chart per GPU), or one grid cell per step and GPU (more than 2 GPUs)
    steps = cli.dicts(run, "gpu-time", {"by_step": True})
    cells = page.eval("document.querySelectorAll('#steps .steps-grid rect.mark').length")
    if cells:
        assert cells == len(steps)
        assert page.eval("document.querySelectorAll('#steps .block[data-device]').length") == 0
    for tid, dev, cols in page.eval("""Array.from(document.querySelectorAll('#steps .block[data-device]')).map(b =>
            [b.dataset.trace, b.dataset.device, b.querySelectorAll('rect.mark').length])"""):
        assert cols == sum(1 for r in steps if (r["trace_id"], r["device"]) == (tid, dev))

    # ranks (a run of 2+ ranks): one bar per rank in each chart, the straggler in vermillion in each:
    # report ranks' first row (the most wait caused) when it caused any
    ranks = cli.dicts(run, "ranks", {})
    if len(ranks) > 1:
        figs = page.eval("""Array.from(document.querySelectorAll('#ranks figure')).map(f => [
            f.querySelectorAll('.mark').length, f.querySelectorAll('.mark.hot').length,
            f.querySelector('.mark.hot title').textContent])""")
        waited = float(ranks[0]["caused_wait_us"] or 0) > 0
        assert len(figs) == 2 + waited
        for marks, hot, tip in figs:
            assert (marks, hot) == (len(ranks), 1)
            if waited:
                assert tip.startswith(f"rank {ranks[0]['rank']}: ")
        page.screenshot(shots / f"{run}_ranks.png", selector="#ranks")
    else:
        assert page.eval("document.querySelectorAll('#ranks').length") == 0

    # zoom into the second step: the rows stay, the view changes, nothing breaks
    if steps:
        view = page.eval("""(() => { const s = document.querySelector('.tl-step'); s.value = '1';
            s.dispatchEvent(new Event('change'));
            return [document.querySelector('.tl-svg').dataset.view,
                    document.querySelectorAll('#timeline .tl-row').length]; })()""")
        assert view == [f"step {steps[1]['step']}", len(gpu)]
        page.screenshot(shots / f"{run}_timeline_step.png", selector="#timeline")
        browser.drain(0.2)
        assert [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"] == []


def test_sorting_a_table(browser, pages):
    page = browser.open(pages("gpu_training"))
    order = page.eval("""(() => { const t = document.querySelector('#kernels table');
        const th = Array.from(t.tHead.rows[0].cells).find(c => c.dataset.col === 'count');
        const i = th.cellIndex; th.click();
        return Array.from(t.tBodies[0].rows).map(r => Number(r.cells[i].dataset.v)); })()""")
    assert order == sorted(order, reverse=True) and len(set(order)) > 1


def test_diff_page_in_a_browser(browser, cli, db, tmp_path, shots):
    a, b = DIFF[0], DIFF[2]
    out = tmp_path / "diff.html"
    r = run_cli("html", "--db", db, "--diff", a, b, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    page = browser.open(out)
    check_loaded(page)
    page.screenshot(shots / "diff.png")
    tables = page.eval(TABLES_JS)
    for t in tables:
        if t["report"] == "diff-summary":  # the summary block: in json output
            res = run_cli("diff", a, b, "--db", db, "--format", "json")
            summary = json.loads(res.stdout)["summary"]
            assert [r[0] for r in t["rows"]] == [x["metric"] for x in summary]
            for row, x in zip(t["rows"], summary):
                for got, col in zip(row[1:], ("a", "b", "delta", "delta_pct")):
                    assert (got == "" and x[col] is None) or float(got) == x[col], (x["metric"], col)
            continue
        header, rows = cli.csv("diff", a, b, *cli_options(t["options"]))
        assert_subsequence(t, header, rows)
    # the waterfall: A's total, one bar per category that moved, B's total
    _, cats = cli.csv("diff", a, b, "--by", "category")
    header = cli.csv("diff", a, b, "--by", "category")[0]
    moved = sum(1 for c in cats if float(c[header.index("delta_total_us")]) != 0)
    assert page.eval("document.querySelectorAll('#diff-categories figure .mark').length") == moved + 2
    # slower / faster bars: one per row of the two tables
    for sec in ("diff-kernels", "diff-ops"):
        bars, rows = page.eval(f"""[document.querySelectorAll('#{sec} figure .mark').length,
            document.querySelectorAll('#{sec} table tbody tr').length]""")
        assert bars == rows > 0


def test_hostile_names_run_nothing(browser, tmp_path):
    with loaded(hostile_trace(tmp_path / "hostile.json")) as s:
        path = s.html().save(tmp_path / "hostile.html")
    page = browser.open(path)
    check_loaded(page)
    assert page.eval("document.title") == "duckprof: hostile.json"
    assert page.eval("document.scripts.length") == 2
    assert page.eval("document.querySelectorAll('img, b').length") == 0
    cells = page.eval("Array.from(document.querySelectorAll('td')).map(c => c.getAttribute('data-v'))")
    assert HOSTILE_KERNEL in cells and HOSTILE_OP in cells
    texts = page.eval("Array.from(document.querySelectorAll('td, svg title, svg text')).map(c => c.textContent)")
    assert HOSTILE_KERNEL in texts
    assert any(HOSTILE_OP in t for t in texts)
    # the device_name cell, by its column (a one-row table says its device below it, as the terminal's)
    assert page.eval("""(() => {
        const t = document.querySelector('#overview table[data-report=devices]');
        const i = Array.from(t.querySelectorAll('th')).findIndex(h => h.dataset.col === 'device_name');
        return t.querySelector('tbody tr').children[i].textContent; })()""") == "<script>alert(3)</script>GPU"


LABEL_BOXES_JS = """Array.from(document.querySelectorAll('figure[data-chart=roofline]')).map(f => {
    const svg = f.querySelector('svg').getBoundingClientRect();
    const boxes = Array.from(f.querySelectorAll('text.dot-label:not(.key)')).map(t => {
        const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; });
    return {svg: [svg.left, svg.top, svg.right, svg.bottom], boxes: boxes,
            key: f.querySelectorAll('text.axis.key').length, dots: f.querySelectorAll('circle.mark').length}; })"""


def overlapping(boxes) -> list:
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5]


def test_roofline_numbers_and_steps_grid_in_a_browser(browser, h100_page, tmp_path, shots):
    """As drawn by Chromium: the roofline of the H100 trace numbers its dots
    (one number per named dot up to 10, inside the chart, no two overlapping,
    a key line each); a run of 3 ranks draws its steps as one grid (a cell per
    step and rank), no console error."""
    from duckprof.html import charts
    page = browser.open(h100_page)
    check_loaded(page)
    (fig,) = page.eval(LABEL_BOXES_JS)
    assert len(fig["boxes"]) == min(fig["dots"], charts.ROOF_LABELS) == fig["key"] > 0
    assert overlapping(fig["boxes"]) == []
    sx0, sy0, sx1, sy1 = fig["svg"]
    assert all(sx0 <= b[0] and b[2] <= sx1 and sy0 <= b[1] and b[3] <= sy1 for b in fig["boxes"])
    page.screenshot(shots / "h100_roofline.png", selector="#kernels figure[data-chart=roofline]")

    from test_html import write_ranks
    job = tmp_path / "job"
    job.mkdir()
    write_ranks(job, 3)
    with loaded(job, run="job") as s:
        page = browser.open(s.html(run="job").save(tmp_path / "job.html"))
    check_loaded(page)
    assert page.eval("document.querySelectorAll('#steps figure').length") == 1
    assert page.eval("document.querySelectorAll('#steps .steps-grid rect.mark').length") == 6
    page.screenshot(shots / "steps_grid.png", selector="#steps figure")


def test_readme_screenshots(browser, h100_page, tmp_path):
    """The README's pictures of the H100 trace: overview, timeline, roofline."""
    update = os.environ.get("DUCKPROF_UPDATE_SCREENSHOTS") == "1"
    out = REPO / "docs" / "img" if update else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    page = browser.open(h100_page)
    check_loaded(page)
    for name, selector in (("overview", "#overview"), ("timeline", "#timeline"),
                           ("roofline", "#kernels figure[data-chart=roofline]")):
        png = page.screenshot(out / f"html_{name}.png", selector=selector, scale=0.7)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (REPO / "docs" / "img" / f"html_{name}.png").exists(), "README screenshot missing"
