"""duckprof html's stored report results (table report_results, schema 5,
duckprof/html/store.py): the first page of a run on a writable database
stores them, later pages read them and are the same page; a change to what
they were computed from (a load into the run, its tags, a peak row, a
removed trace) makes the next page compute again and equal a live page; a
read-only database stores nothing; `duckprof rm` removes a run's rows.
`duckprof load --prepare-html` (Session.load(prepare_html=True)) stores
them at load: the first page reads them; a preparation that fails or is
interrupted leaves the load committed and stores nothing."""

from __future__ import annotations

import decimal
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import duckdb
import pytest

import duckprof
from conftest import REPO, assert_one_line_error, corpus_path, invoke, run_cli, slow_when
from duckprof import dbfile, reports
from duckprof.html import page as P
from duckprof.html import store

FIX = REPO / "fixtures"
TWO = FIX / "gpu_time" / "two_streams.json"
H100_TWO = FIX / "kernels" / "h100_two_kernels_one_op.json"
CPU = FIX / "cpu_small_model.json"


@pytest.fixture
def report_runs(monkeypatch):
    """The names of the reports run (reports.run) from now on."""
    ran = []
    run = reports.run

    def counted(con, name, /, **kw):
        ran.append(name)
        return run(con, name, **kw)
    monkeypatch.setattr(reports, "run", counted)
    return ran


def live_page(session, run) -> str:
    """The page computed from the data, the store left out."""
    key = store.inputs_key
    store.inputs_key = lambda s, r: None
    try:
        return str(session.html(run=run))
    finally:
        store.inputs_key = key


def near(html: str) -> str:
    """The page with each cell's exact value (data-v) to 12 significant
    digits: two live builds of a corpus trace's page can differ in a float's
    last bits (report idle's percentages: DuckDB's parallel sums of doubles
    add in the order the threads finish). A stored page is compared byte for
    byte with the page that stored it; with a live page, through this."""
    return re.sub(r'data-v="(-?[0-9]+\.[0-9]+(?:e[-+]?[0-9]+)?)"',
                  lambda m: f'data-v="{float(m.group(1)):.12g}"', html)


def stored_count(session, run) -> int:
    return session.sql("SELECT count(*) FROM report_results WHERE run IS NOT DISTINCT FROM $run",
                       {"run": run}).fetchall()[0][0]


@pytest.fixture(scope="module")
def single_template(tmp_path_factory):
    db = tmp_path_factory.mktemp("store") / "s.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(TWO)], run="r")
    return db


@pytest.fixture(scope="module")
def multi_template(tmp_path_factory):
    db = tmp_path_factory.mktemp("store") / "m.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(TWO), str(H100_TWO)], run="r")
        s.load([str(CPU)], run="other")
    return db


@pytest.fixture(scope="module")
def multi_stored_template(multi_template, tmp_path_factory):
    """multi_template with the first page of run r stored (computed once per
    module: the tests below that start from a stored page share it)."""
    db = tmp_path_factory.mktemp("store") / "m_r.duckdb"
    shutil.copyfile(multi_template, db)
    ran = []
    with pytest.MonkeyPatch.context() as mp, duckprof.connect(db) as s:
        run = reports.run
        mp.setattr(reports, "run", lambda con, name, /, **kw: (ran.append(name), run(con, name, **kw))[1])
        page = s.html(run="r")
        assert page.stored_results == 0 and page.unstored is None and stored_count(s, "r") == len(ran) > 10
    page.save(db.with_suffix(".html"))  # its live page: see multi_live_page
    db.with_suffix(".ran").write_text(str(len(ran)))  # how many reports it ran
    return db


def multi_live_page(multi_stored_template, db) -> str:
    """Run r's page of multi computed from the data (the page that stored
    multi_stored_template's results: computed, nothing read), as a page of
    the copy `db` names it (the page's subtitle holds its database's path)."""
    html = multi_stored_template.with_suffix(".html").read_text(encoding="utf-8")
    assert html.count(str(multi_stored_template)) == 1
    return html.replace(str(multi_stored_template), str(db))


@pytest.fixture(scope="module")
def multi_read_only_page(multi_template, tmp_path_factory):
    """Run r's page of multi built by a read-only session (computed once per
    module): (the database, the page, the number of reports that ran). Its
    results are the page's `unstored`: store_in_file stores them in a copy of
    multi (the key names the data, not the file)."""
    db = tmp_path_factory.mktemp("store") / "m_ro.duckdb"
    shutil.copyfile(multi_template, db)
    ran = []
    with pytest.MonkeyPatch.context() as mp:
        run = reports.run
        mp.setattr(reports, "run", lambda con, name, /, **kw: (ran.append(name), run(con, name, **kw))[1])
        with duckprof.connect(db, read_only=True) as s:
            page = s.html(run="r")
    return db, page, len(ran)


@pytest.fixture(scope="module")
def multi_all_stored_template(multi_stored_template, tmp_path_factory):
    """multi_stored_template with the pages of run other and of every run stored too."""
    db = tmp_path_factory.mktemp("store") / "m_all.duckdb"
    shutil.copyfile(multi_stored_template, db)
    with duckprof.connect(db) as s:
        s.html(run="other")
        s.html()
        assert stored_count(s, "other") and stored_count(s, None)
    return db


def _copy(template, db):
    """A test's own copy of a template database (its pages store results in it)."""
    shutil.copyfile(template, db)
    return db


@pytest.fixture
def single(single_template, tmp_path):
    """two_streams.json as run r: the quick tests' database (a copy of
    single_template of the test's own: pages store their results in it)."""
    return _copy(single_template, tmp_path / "s.duckdb")


@pytest.fixture
def multi(multi_template, tmp_path):
    """A handmade run of two traces (two_streams: steps, 2 streams; an H100
    trace with FLOPs) and a second run in the same database (a copy of
    multi_template of the test's own)."""
    return _copy(multi_template, tmp_path / "m.duckdb")


@pytest.fixture
def multi_stored(multi_stored_template, tmp_path):
    """multi with run r's page stored, as its first page stores it (a copy of
    multi_stored_template of the test's own)."""
    return _copy(multi_stored_template, tmp_path / "m.duckdb")


@pytest.fixture
def multi_all_stored(multi_all_stored_template, tmp_path):
    """multi with the pages of run r, run other and every run stored (a copy
    of multi_all_stored_template of the test's own)."""
    return _copy(multi_all_stored_template, tmp_path / "m.duckdb")


@pytest.mark.parametrize("which", slow_when(["single", "multi"], {"multi"}))
def test_the_second_page_reads_every_result_and_is_the_same_page(which, request, report_runs):
    db = request.getfixturevalue("multi_stored" if which == "multi" else which)
    if which == "multi":  # the first page, computed and stored, is multi_stored_template's (once per module)
        template = request.getfixturevalue("multi_stored_template")
        first, n = multi_live_page(template, db), int(template.with_suffix(".ran").read_text())
    with duckprof.connect(db) as s:
        if which == "single":  # (multi_stored_template asserts the same of multi's first page)
            page = s.html(run="r")  # computed: every report ran (the live page)
            first, n = str(page), len(report_runs)
            assert page.stored_results == 0 and page.unstored is None
        assert n > 10 and stored_count(s, "r") == n and stored_count(s, "other") == 0
        report_runs.clear()
        second = s.html(run="r")
        assert report_runs == [] and second.stored_results == n  # no report ran
        assert first == str(second)
        if which == "multi":  # the other run's page is its own: it computes, and stores under its run
            s.html(run="other")
            assert report_runs and stored_count(s, "other") > 0 and stored_count(s, "r") == n


@pytest.mark.slow
def test_the_store_holds_the_values_exactly(multi_stored):
    # every result read back equals what the report returns: types and floats to the bit
    with duckprof.connect(multi_stored) as s:
        key = store.inputs_key(s, "r")
        got = store.read(s.con, "r", key)
        assert len(got) == stored_count(s, "r")
        for (name, options), res in got.items():
            want = s.report_result(name, run="r", **json.loads(options))
            assert res.columns == list(want.relation.columns), name
            rows = [list(r) for r in want.relation.fetchall()]
            assert [[(type(v), repr(v)) for v in r] for r in res.rows] == \
                [[(type(v), repr(v)) for v in r] for r in rows], (name, options)
            assert (res.notes, res.instead) == (want.notes, want.instead), name


@pytest.mark.slow  # a corpus trace's page three times
def test_a_corpus_trace_page_from_the_store_is_the_live_page(tmp_path, report_runs):
    db = tmp_path / "c.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(corpus_path("h100_vit_inference.json.gz"))], run="h")
        live = live_page(s, "h")
        first = str(s.html(run="h"))
        report_runs.clear()
        second = str(s.html(run="h"))
        assert report_runs == []
        assert first == second and near(first) == near(live)


def change_and_recompute(db, change, report_runs, run="r"):
    """The page of `run` (stored: by this call, or before it in `db`), apply
    `change(session)`, then the next page: it runs reports again, equals a
    live page, differs from the page before when the change shows on the
    page, and the run keeps one set of rows."""
    with duckprof.connect(db) as s:
        before = str(s.html(run=run))
        n = stored_count(s, run)
        change(s)
        report_runs.clear()
        after = s.html(run=run)
        assert report_runs, "the page read results stored before the change"
        assert near(str(after)) == near(live_page(s, run))
        keys = s.sql("SELECT count(DISTINCT inputs_key) FROM report_results WHERE run = $run",
                     {"run": run}).fetchall()[0][0]
        assert keys == 1 and stored_count(s, run) >= n - 1  # the old key's rows went
        return before, str(after)


def add_cpu_trace(s):
    s.load([str(CPU)], run="r")


def add_cpu_trace_tagged(s):
    s.load([str(CPU)], run="r", tags={"commit": "abc123"})


def tag_run(s):
    s.set_tags("r", {"commit": "abc123"})


def double_h100_peaks(s):
    # the H100 trace's kernels: % of peak halves when the peak doubles
    s.con.execute("UPDATE device_peaks SET fp32_tflops = 2 * fp32_tflops, bf16_tflops = 2 * bf16_tflops, "
                  "tf32_tflops = 2 * tf32_tflops, fp16_tflops = 2 * fp16_tflops, dram_gbps = 2 * dram_gbps "
                  "WHERE device ILIKE '%H100%'")


def drop_h100_trace(s):
    # no command removes one trace of a run: the run goes and comes back without it
    s.remove_run("r")
    s.load([str(TWO)], run="r")


#: change -> (a text the page shows before it, a text it shows after)
CHANGES = {"load": (add_cpu_trace, None, "cpu_small_model.json"),
           "tags": (tag_run, None, "commit=abc123"),
           "peaks": (double_h100_peaks, None, None),
           "remove": (drop_h100_trace, "h100_two_kernels_one_op.json", None)}


@pytest.mark.slow  # three pages each; the quick run has test_the_key_changes_with_each_input
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_to_the_inputs_recomputes(change, request, report_runs):
    db = request.getfixturevalue("single" if change == "tags" else "multi_stored")
    fn, gone, new = CHANGES[change]
    before, after = change_and_recompute(db, fn, report_runs)
    assert before != after  # a page from the results stored before would be wrong
    if gone:
        assert gone in before and gone not in after
    if new:
        assert new in after and new not in before


def test_the_key_changes_with_each_input(single):
    """What a page's stored results are found under: every change the
    page would show gives another key; another run's load does not."""
    with duckprof.connect(single) as s:
        keys = [store.inputs_key(s, "r")]
        every = [store.inputs_key(s, None)]
        for change in (tag_run, double_h100_peaks, add_cpu_trace, drop_h100_trace):
            change(s)
            keys.append(store.inputs_key(s, "r"))
            every.append(store.inputs_key(s, None))
        assert len(set(keys)) == len(keys) and len(set(every)) == len(every)
        s.load([str(H100_TWO)], run="other")
        assert store.inputs_key(s, "r") == keys[-1]  # a load into another run: r's results stand
        assert store.inputs_key(s, None) != every[-1]  # but not those of a page of every run
        s.con.execute("UPDATE duckprof_meta SET value = 'x' WHERE key = 'estimators_hash'")
        assert store.inputs_key(s, "r") != keys[-1]  # estimates another duckprof computed


@pytest.mark.slow
def test_rm_deletes_the_runs_stored_results(multi_all_stored):
    with duckprof.connect(multi_all_stored) as s:  # the pages of r, other and every run stored
        assert stored_count(s, "r") and stored_count(s, "other") and stored_count(s, None)
        s.remove_run("r")
        assert stored_count(s, "r") == 0 and stored_count(s, None) == 0 and stored_count(s, "other") > 0


def test_a_load_or_a_tag_deletes_the_runs_stored_results(multi_all_stored, tmp_path):
    """Rows a page can no longer use (their key names the run's old traces or
    tags) go with the change, not at the run's next page: a load into the run,
    a tag of it, a load with tags; another run's rows stay. The pages are stored once; each
    change is made to a copy of that file."""
    with duckprof.connect(multi_all_stored, read_only=True) as s:  # the pages of r, other and every run stored
        counts = stored_count(s, "r"), stored_count(s, None), stored_count(s, "other")
    assert all(counts)
    for i, change in enumerate((add_cpu_trace, tag_run, add_cpu_trace_tagged)):
        db = tmp_path / f"copy{i}.duckdb"
        shutil.copyfile(multi_all_stored, db)
        with duckprof.connect(db) as s:
            assert (stored_count(s, "r"), stored_count(s, None), stored_count(s, "other")) == counts
            change(s)
            assert (stored_count(s, "r"), stored_count(s, None), stored_count(s, "other")) == (0, 0, counts[2])


def test_a_read_only_session_stores_nothing(multi_read_only_page):
    db, page, ran = multi_read_only_page
    assert ran > 10 and page.unstored is not None and len(page.unstored.rows) == ran
    assert "two_streams.json" in str(page) and "h100_two_kernels_one_op.json" in str(page)
    with duckprof.connect(db, read_only=True) as s:
        assert stored_count(s, "r") == 0


@pytest.mark.slow
def test_an_in_memory_session_stores_nothing(report_runs):
    with duckprof.connect() as s:
        s.load([str(TWO)], run="r")
        first = str(s.html(run="r"))
        n = len(report_runs)
        page = s.html(run="r")
        assert len(report_runs) == 2 * n and page.unstored is None and str(page) == first
        assert stored_count(s, "r") == 0


def test_a_result_json_cannot_hold_exactly_is_not_stored():
    got = store.encode("r", "k", [("a", "{}", ["x"], [[1, 2.5, "t", None, True]], [], []),
                                  ("b", "{}", ["x"], [[decimal.Decimal("1.5")]], [], []),
                                  ("c", "{}", ["x"], [[[1, 2]]], [], []),
                                  ("d", "{}", ["x"], [(1, 2.5, "t", None, True)], [], []),  # fetched tuples
                                  ("e", "{}", ["x"], [(1,), ({"k": 1},)], [], [])])
    assert [r[0] for r in got.rows] == ["a", "d"] and got.rows[0][3] == got.rows[1][3] == '[[1,2.5,"t",null,true]]'


@pytest.mark.slow  # three CLI processes
def test_cli_stores_after_a_read_only_build_and_the_next_page_reads(multi, tmp_path):
    out1, out2 = tmp_path / "1.html", tmp_path / "2.html"
    r = run_cli("html", "--db", multi, "--run", "r", "-o", out1)
    assert r.returncode == 0, r.stderr
    assert "report results stored" in r.stdout
    with duckprof.connect(multi, read_only=True) as s:
        assert stored_count(s, "r") > 10
    r = run_cli("html", "--db", multi, "--run", "r", "-o", out2)
    assert r.returncode == 0, r.stderr
    assert "report results" not in r.stdout + r.stderr  # nothing computed, nothing to store
    assert out1.read_bytes() == out2.read_bytes()


@pytest.mark.slow  # a second process holds the database
def test_cli_page_works_when_another_process_reads_the_database(multi, multi_stored_template, tmp_path):
    """Another process holding the file open (read-only: DuckDB then refuses
    a writer) leaves the page as it was, written from live results, and the
    store empty."""
    code = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
            "print('open', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(multi)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        out = tmp_path / "p.html"
        r = run_cli("html", "--db", multi, "--run", "r", "-o", out)
        assert r.returncode == 0, r.stderr
        assert "report results not stored" in r.stderr and out.exists()
    finally:
        holder.kill()
        holder.wait()
    with duckprof.connect(multi, read_only=True) as s:
        assert stored_count(s, "r") == 0
    assert near(out.read_text(encoding="utf-8")) == near(multi_live_page(multi_stored_template, multi))


@pytest.mark.slow  # a second process holds the database
def test_cli_page_with_wait_stores_once_the_other_process_is_done(multi, tmp_path):
    """With --wait, the store waits for the file as the page's open does: a
    reader that closes it after a few seconds delays the store, not skips it."""
    code = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
            "print('open', flush=True); time.sleep(4); c.close()")
    holder = subprocess.Popen([sys.executable, "-c", code, str(multi)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        r = run_cli("html", "--db", multi, "--run", "r", "-o", tmp_path / "p.html", "--wait", "60")
        assert r.returncode == 0, r.stderr
        assert "report results stored" in r.stdout, (r.stdout, r.stderr)
    finally:
        holder.kill()
        holder.wait()
    with duckprof.connect(multi, read_only=True) as s:
        assert stored_count(s, "r") > 0


@pytest.mark.slow
def test_store_in_file_gives_up_on_a_locked_file(multi, multi_read_only_page, report_runs):
    # the same, in process: a session (as the one that built the page) still holds the file
    built_in, page, _ = multi_read_only_page
    with duckprof.connect(multi, read_only=True):
        why = store.store_in_file(multi, page.unstored)
    assert why  # DuckDB refuses a second configuration of an open file in one process
    assert store.store_in_file(multi, page.unstored) is None  # closed: stored
    with duckprof.connect(multi, read_only=True) as s:
        assert stored_count(s, "r") == len(page.unstored.rows)
        report_runs.clear()
        assert str(s.html(run="r")) == str(page).replace(str(built_in), str(multi)) and report_runs == []


@pytest.mark.slow
def test_store_in_file_stores_nothing_when_the_run_changed_meanwhile(multi, multi_read_only_page):
    page = multi_read_only_page[1]  # built before the change
    with duckprof.connect(multi) as s:
        s.set_tags("r", {"x": "1"})
    assert store.store_in_file(multi, page.unstored) == "the database changed while the page was built"
    with duckprof.connect(multi, read_only=True) as s:
        assert stored_count(s, "r") == 0


@pytest.mark.slow
def test_the_page_connection_computes_shared_views_only_for_a_live_report(multi_stored, monkeypatch):
    with duckprof.connect(multi_stored) as s:  # run r's page stored
        shared = []
        share = P.share_view
        monkeypatch.setattr(P, "share_view", lambda con, name, run=None: (shared.append(name), share(con, name, run)))
        s.html(run="r")
        assert shared == []
        s.html(run="other")
        assert shared == list(P.shared_names())


def test_code_key_names_the_sql(monkeypatch):
    # a changed report SQL file gives another key (the stored results are not found)
    key = store.code_key()
    assert key is not None
    read = store.sqlfiles.read
    store.code_key.cache_clear()
    monkeypatch.setattr(store.sqlfiles, "read",
                        lambda rel: read(rel) + (" " if rel == "reports/kernels.sql" else ""))
    try:
        assert store.code_key() not in (None, key)
    finally:
        store.code_key.cache_clear()


# -- load --prepare-html ---------------------------------------------------------------------------

def runs_loaded(db) -> dict:
    with duckprof.connect(db, read_only=True) as s:
        return dict(s.sql("SELECT run, count(*) FROM traces GROUP BY 1").fetchall())


def test_a_prepared_load_makes_the_first_page_read_every_result(cli_app, tmp_path, report_runs):
    """`load --prepare-html`, then `html`: no report runs, nothing is stored
    (every result was read), and the page is byte for byte the page a plain
    load's first `html` computes (the same file path: the page names it)."""
    db, prepared, live = tmp_path / "p.duckdb", tmp_path / "prepared.html", tmp_path / "live.html"
    r = invoke(cli_app, "load", TWO, "--db", db, "-r", "r", "--prepare-html")
    assert r.exit_code == 0, r.stderr
    assert "html page of run 'r' prepared" in r.stdout
    assert len(report_runs) > 10
    with duckprof.connect(db, read_only=True) as s:
        assert stored_count(s, "r") == len(report_runs)
    report_runs.clear()
    r = invoke(cli_app, "html", "--db", db, "--run", "r", "-o", prepared)
    assert r.exit_code == 0, r.stderr
    assert report_runs == [] and "report results" not in r.stdout + r.stderr
    # a database of one run: its page without --run is that run's, and reads too
    r = invoke(cli_app, "html", "--db", db, "-o", tmp_path / "no_run.html")
    assert r.exit_code == 0, r.stderr
    assert report_runs == [] and (tmp_path / "no_run.html").read_bytes() == prepared.read_bytes()

    for f in (db, f"{db}.wal"):  # the same file again, loaded without the flag: it stores nothing
        if os.path.exists(f):
            os.remove(f)
    r = invoke(cli_app, "load", TWO, "--db", db, "-r", "r")
    assert r.exit_code == 0, r.stderr
    assert report_runs == [] and "html page" not in r.stdout
    with duckprof.connect(db, read_only=True) as s:
        assert stored_count(s, None) + stored_count(s, "r") == 0
    r = invoke(cli_app, "html", "--db", db, "--run", "r", "-o", live)
    assert r.exit_code == 0, r.stderr
    assert report_runs and "report results stored" in r.stdout and "--prepare-html" in r.stdout
    assert prepared.read_bytes() == live.read_bytes()


def test_session_load_prepare_html_each_load_recomputes_the_runs_page(tmp_path, report_runs):
    """The API, and a run loaded in two loads: each load with prepare_html
    computes the run's page again; the page then reads every result and is
    the live page of both traces."""
    db = tmp_path / "a.duckdb"
    with duckprof.connect(db) as s:
        rep = s.load([str(TWO)], run="r", prepare_html=True)
        assert rep.page_prepared and "html page of run 'r' prepared" in rep.summary()
        first = len(report_runs)
        assert first > 10 and stored_count(s, "r") == first
        s.load([str(H100_TWO)], run="r", prepare_html=True)
        second = len(report_runs) - first  # every report again (and ranks: two traces)
        assert second >= first and stored_count(s, "r") == second
        report_runs.clear()
        page = s.html(run="r")
        assert report_runs == [] and page.stored_results == second and page.unstored is None
        assert "h100_two_kernels_one_op.json" in str(page) and str(page) == live_page(s, "r")


def test_prepare_html_needs_a_database_file(cli_app, report_runs):
    r = invoke(cli_app, "load", TWO, "--prepare-html")
    assert r.exit_code == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, ["--prepare-html", "--db"])
    with duckprof.connect() as s:
        with pytest.raises(duckprof.DuckprofError, match="prepare_html"):
            s.load([str(TWO)], prepare_html=True)
        assert s.sql("SELECT count(*) FROM traces").fetchall() == [(0,)]  # nothing loaded
    assert report_runs == []


def fail_after(n: int, error: BaseException):
    """reports.run raising `error` at its n-th call."""
    run = reports.run
    calls = []

    def failing(con, name, /, **kw):
        calls.append(name)
        if len(calls) == n:
            raise error
        return run(con, name, **kw)
    return failing


@pytest.mark.parametrize("error, code", [(KeyboardInterrupt(), 130),
                                         (RuntimeError("Query interrupted"), 130),
                                         (duckdb.IOException("IO Error: could not read block"), 2)])
def test_a_failed_preparation_keeps_the_load_and_stores_nothing(cli_app, tmp_path, monkeypatch, error, code):
    db = tmp_path / "f.duckdb"
    monkeypatch.setattr(reports, "run", fail_after(5, error))
    r = invoke(cli_app, "load", TWO, "--db", db, "-q", "-r", "r", "--prepare-html")
    assert r.exit_code == code, r.stderr
    line = assert_one_line_error(r.stderr, ["run 'r' is loaded", "html page was not prepared", str(db)])
    if code == 130:
        assert "interrupted" in line and r.stdout == ""
    else:
        assert "could not read block" in line and "loaded 1 trace(s)" in r.stdout  # the load's summary
    assert runs_loaded(db) == {"r": 1}
    with duckprof.connect(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM report_results").fetchall() == [(0,)]


def test_an_interrupt_in_the_stores_transaction_stores_nothing(cli_app, tmp_path, monkeypatch):
    """Ctrl-C once the results are inserted, before the COMMIT: rolled back."""
    db = tmp_path / "i.duckdb"
    held = []

    class Interrupting:  # dbfile, whose in_transaction is interrupted before it commits
        def __getattr__(self, name):
            return getattr(dbfile, name)

        @staticmethod
        def in_transaction(con, fn):
            def then_interrupt():
                fn()
                held.append(con.execute("SELECT count(*) FROM report_results").fetchall()[0][0])
                raise KeyboardInterrupt
            dbfile.in_transaction(con, then_interrupt)
    monkeypatch.setattr(store, "dbfile", Interrupting())
    r = invoke(cli_app, "load", TWO, "--db", db, "-q", "-r", "r", "--prepare-html")
    assert r.exit_code == 130, r.stderr
    assert_one_line_error(r.stderr, ["interrupted while preparing the html page", "run 'r' is loaded"])
    assert held and held[0] > 10  # the rows were in the transaction
    assert runs_loaded(db) == {"r": 1}
    with duckprof.connect(db, read_only=True) as s:
        assert stored_count(s, "r") == 0


@pytest.mark.slow  # a real process
def test_sigint_while_preparing_the_page(tmp_path):
    """A real Ctrl-C while the page is being prepared (paused there through
    DUCKPROF_PHASE_PAUSE): one line, exit 130, the run loaded, nothing stored."""
    db, phases = tmp_path / "s.duckdb", tmp_path / "phase.txt"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DUCKPROF_PHASE_FILE=str(phases), DUCKPROF_PHASE_PAUSE="preparing html")
    code = "import sys; from duckprof.cli import main; sys.argv[0] = 'duckprof'; main()"
    p = subprocess.Popen([sys.executable, "-c", code, "load", str(TWO), "--db", str(db), "-r", "r",
                          "--prepare-html"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (phases.exists() and "preparing html" in phases.read_text().split("\n")):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert_one_line_error(err, ["interrupted while preparing the html page", "run 'r' is loaded"])
    assert runs_loaded(db) == {"r": 1}
    with duckprof.connect(db, read_only=True) as s:
        assert stored_count(s, "r") == 0
