"""A load into an in-memory session (trace files without --db) leaves the
nesting columns of events, the op estimates, trace_facts and derived tables
to first use (session.DEFERRED): a query fills the tables its packaged views
and macros read (the nesting when a view it reads reads it, or DuckDB's plan
of a query of events names a nesting column), a report those it declares;
another statement, a view of the user's and taking `session.con` fill them
all. Every report and query then gives the rows a database file's load
(which computes everything at load) gives."""

from __future__ import annotations

import datetime
import time

import duckdb
import pytest

from conftest import CORPUS, REPO, corpus_files, invoke, slow_when

import duckprof
from duckprof import session as session_mod, sqlfiles
from duckprof.cli_common import Progress

GPU_TRACE = REPO / "fixtures" / "gpu_time" / "two_streams.json"
MEMORY_TRACE = REPO / "fixtures" / "memory" / "memory.json"
DEFERRED_TABLES = ["op_estimates", "trace_facts", *session_mod.DERIVED]

# (report, options): every registered report, and the variants that read other views
CASES = [("kernels", {"limit": 0}), ("kernels", {"group_by_launch": True, "limit": 5}), ("gpu-time", {}),
         ("gpu-time", {"by_step": True}), ("gpu-time", {"hta": True}), ("gpu-time", {"buckets": 12}), ("gpu-time", {"occupancy": True}),
         ("idle", {"limit": 15}), ("idle", {"hta": True}), ("idle", {"by": "event"}), ("queue", {}),
         ("queue", {"buckets": 12}), ("temporal", {}), ("ops-by-step", {}), ("traces", {}), ("devices", {}),
         ("categories", {}), ("categories", {"by_step": True}), ("categories", {"category": "gemm"}),
         ("ops", {"limit": 0}), ("ops", {"group_by_input_shape": True}), ("ops", {"group_by_stack": 3}),
         ("ops", {"by_graph_node": True}), ("memory", {}), ("memory", {"by_step": True}), ("memory", {"ops": True}),
         ("memory", {"live": True}), ("steps", {}), ("steps", {"summary": True}),
         ("steps", {"breakdown": "tensorboard"}), ("collectives", {"by_rank": True}), ("ranks", {}),
         ("trend", {}), ("patterns", {}), ("patterns", {"list": True}), ("patterns", {"events": True}),
         ("memory", {"curve": True}), ("modules", {})]


def filled(s) -> dict:
    """How many rows each deferred table holds, and how many events have their
    nesting ('nesting') (read past the session)."""
    got = {t: s._con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in DEFERRED_TABLES}
    return {**got, "nesting": nested(s)}


def nested(s) -> int:
    """How many events have their nesting columns (read past the session)."""
    return s._con.execute("SELECT count(depth) FROM events").fetchall()[0][0]


@pytest.fixture(scope="module")
def eager(tmp_path_factory):
    """The fixture traces loaded into a database file: everything computed at load."""
    db = tmp_path_factory.mktemp("eager") / "eager.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(GPU_TRACE), str(MEMORY_TRACE)], run="default")
    with duckprof.connect(db, read_only=True) as s:
        yield s


def lazy(*paths, run="default"):
    s = duckprof.connect()
    s.load([str(p) for p in paths], run=run)
    return s


def test_a_query_of_the_events_fills_nothing(eager):
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        assert s.sql("SELECT count(*) FROM events").fetchall() == eager.sql("SELECT count(*) FROM events").fetchall()
        assert filled(s) == dict.fromkeys([*DEFERRED_TABLES, "nesting"], 0)
        assert all(n > 0 for n in filled(eager).values())


# queries of events, and of views of events, that read no nesting column
NOT_NESTED = ["SELECT count(*) FROM events WHERE ph = 'X'",
              "SELECT name, count(*) AS n, sum(e.dur_ns) FROM events e GROUP BY 1 ORDER BY n",
              "WITH x AS (SELECT trace_id, pid FROM events) SELECT count(*) FROM x JOIN kernels USING (trace_id)",
              "SELECT count(*) FROM kernels", "SELECT * FROM gpu_ops", "SELECT * FROM steps",
              "SELECT * FROM hta_events"]
# ... and that read one (or may: a star) from events, or a view that reads one. (A
# plan of `depth > 0` would not say: its statistics say the column is NULL.)
NESTED = ["SELECT count(*) FROM events WHERE depth > 0", "SELECT * FROM events", "SELECT e FROM events e",
          "SELECT count(*) FROM events WHERE to_json(events) LIKE '%\"depth\":1%'",
          "SELECT * EXCLUDE (args) FROM events", "SELECT count(*) FROM events NATURAL JOIN events",
          "SELECT max(\"DEPTH\") FROM events", "SELECT x FROM events e(a, b, c, d, e, f, g, h, i, j, k, l, m, n, "
          "o, p, q, r, s, t, u, v, w, x, y, z) WHERE x IS NOT NULL",
          "SELECT count(*) FROM (SELECT * FROM events) WHERE self_ns > 1000",
          "SELECT count(*) FROM events WHERE event_id IN (SELECT parent_event_id FROM events)",
          "SELECT columns('.*_event_id') FROM events", "SELECT * FROM cpu_ops",
          "SELECT name, sum(self_ns) FROM runtime GROUP BY 1", "SELECT * FROM host_events WHERE depth = $d"]


def test_a_query_of_events_leaves_the_nesting_unless_it_reads_it(eager):
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        for sql in NOT_NESTED:
            assert _cells(s.sql(sql)) == _cells(eager.sql(sql)) != [], sql
        assert filled(s) == dict.fromkeys([*DEFERRED_TABLES, "nesting"], 0)
    for sql in NESTED:
        params = {"d": 1} if "$d" in sql else None
        with lazy(GPU_TRACE, MEMORY_TRACE) as s:
            assert _cells(s.sql(sql, params)) == _cells(eager.sql(sql, params)) != [], sql
            assert filled(s) == {**dict.fromkeys(DEFERRED_TABLES, 0), "nesting": nested(eager)}, sql


def test_the_views_that_read_the_nesting():
    """session.nesting_views (what a view's SQL names) against what the
    headers document: the views of events with a nesting column."""
    headers = sqlfiles.view_headers()
    assert session_mod.nesting_views() == {
        name for name, h in headers.items()
        if "events" in h.requires and {c.name for c in h.columns} & set(session_mod.NESTING_COLUMNS)} == {
        "cpu_ops", "host_events", "python_functions", "runtime", "user_annotations"}


def test_every_view_gives_the_rows_of_a_database_file(eager):
    """Every packaged view, first thing after the load: those that read
    neither the nesting nor a table whose fill reads it leave it to a later
    use, and give the eager rows without it."""
    views = sorted(sqlfiles.view_headers())
    needs = {v for v in views
             if session_mod.NESTING in session_mod.deferred_tables(sqlfiles.tables_read([v]))
             or session_mod.reads_nesting([v])}
    assert {"kernels", "gpu_ops", "steps", "runs", "memory_events"} <= set(views) - needs
    def cells(rel):  # but the load times (runs, trace_files)
        return [tuple(None if isinstance(c, datetime.datetime) else c for c in r) for r in _cells(rel)]

    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        for v in [v for v in views if v not in needs] + [v for v in views if v in needs]:
            assert cells(s.sql(f"SELECT * FROM {v}")) == cells(eager.sql(f"SELECT * FROM {v}")), v
            if v not in needs:
                assert filled(s)["nesting"] == 0, v


def test_a_query_fills_the_tables_its_views_read(eager):
    """gpu_idle_intervals reads gpu_activity, which reads launches, which reads
    derived_launches: that table alone is filled, and the nesting its fill
    reads (the runtime calls' enclosing ops); the kernel estimates read
    the launches and op_estimates; the call totals the memory events; runs
    reads trace_facts."""
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        want = dict.fromkeys(DEFERRED_TABLES, 0)
        want["nesting"] = 0
        for sql, tables in [("SELECT * FROM gpu_idle_intervals", ["derived_launches", "nesting"]),
                            ("SELECT * FROM kernel_estimates", ["derived_kernel_estimates", "op_estimates"]),
                            ("SELECT steps, busy_pct FROM runs", ["trace_facts"]),
                            ("SELECT * FROM call_totals", ["derived_call_totals", "derived_memory_events"])]:
            assert _cells(s.sql(sql)) == _cells(eager.sql(sql)) != []
            want.update({t: filled(eager)[t] for t in tables})
            assert filled(s) == want, sql
        assert want == filled(eager)


def test_a_view_of_the_users_is_resolved_after_a_second_load(eager):
    """A view the user made before the second trace was loaded: reading it
    fills the second trace's memory events too."""
    sql = "SELECT trace_id, count(*) AS n FROM memory_events GROUP BY 1 ORDER BY 1"
    with lazy(GPU_TRACE) as s:
        s.sql(f"CREATE TEMP VIEW mine AS {sql}")
        s.load([str(MEMORY_TRACE)], run="default")
        got = s.sql("SELECT * FROM mine").fetchall()
    assert got == eager.sql(sql).fetchall() == [(2, filled(eager)["derived_memory_events"])]


def test_a_table_macro_is_resolved(eager):
    sql = "SELECT * FROM queue_depth ORDER BY ALL"
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        assert s.sql(sql).fetchall() == eager.sql(sql).fetchall() != []


def test_a_statement_that_is_no_query_fills_everything():
    with lazy(GPU_TRACE) as s, lazy(GPU_TRACE) as everything:
        everything.con  # taking the connection fills everything
        s.sql("CREATE TEMP TABLE t AS SELECT * FROM launches")
        assert filled(s) == filled(everything) and filled(s)["trace_facts"] == 1


def test_a_query_of_a_users_view_fills_everything():
    """A view of the user's (made before the load) is not followed: reading
    it fills everything."""
    with duckprof.connect() as s, lazy(GPU_TRACE) as everything:
        s.sql("CREATE TEMP VIEW mine AS SELECT * FROM kernel_estimates")
        s.load([str(GPU_TRACE)])
        assert filled(s)["derived_launches"] == 0
        s.sql("SELECT count(*) FROM mine").fetchall()
        assert filled(s) == filled(everything.con and everything)


def test_a_connection_taken_before_a_load_sees_its_rows(eager):
    """SQL on the connection is not seen by the session: once taken, the
    session's loads compute everything at load."""
    with lazy(GPU_TRACE) as s:
        con = s.con
        s.load([str(MEMORY_TRACE)])
        got = con.execute("SELECT trace_id, count(*) FROM memory_events GROUP BY 1").fetchall()
    assert got == eager.sql("SELECT trace_id, count(*) FROM memory_events GROUP BY 1").fetchall() != []


def test_a_query_names_its_views_in_strings_too():
    with lazy(GPU_TRACE) as s, lazy(GPU_TRACE) as everything:
        assert s.sql("SELECT count(*) FROM query_table('launches')").fetchall() == \
            everything.con.execute("SELECT count(*) FROM launches").fetchall() != [(0,)]


def test_the_connection_fills_everything(eager):
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        con = s.con
        assert filled(s) == filled(eager)
        assert con.execute("SELECT count(*) FROM call_totals").fetchall() == \
            eager.sql("SELECT count(*) FROM call_totals").fetchall()


def test_a_users_transaction_begins_with_everything_filled():
    """No fill runs inside the user's transaction, which may roll back."""
    with lazy(GPU_TRACE) as s, lazy(GPU_TRACE) as everything:
        s.sql("BEGIN TRANSACTION")
        assert filled(s) == filled(everything.con and everything)
        s.sql("ROLLBACK")
        assert s.sql("SELECT count(*) FROM launches").fetchall() == [(filled(everything)["derived_launches"],)]


def _cells(rel) -> list:
    """The rows in a set order (ties), every float rounded: DuckDB's parallel
    sums differ in their last bits from one run to the next."""
    out = [tuple(round(c, 6) if isinstance(c, float) else c for c in r) for r in rel.fetchall()]
    return sorted(out, key=repr)


def _same(got, want):
    """Two report results: the same columns, rows, notes; trend's order_value
    is the run's load time, which differs between the loads."""
    assert got.relation.columns == want.relation.columns
    cols = [c for c in got.relation.columns if c != "order_value"]
    assert _cells(got.relation.select(*cols)) == _cells(want.relation.select(*cols))
    assert (got.notes, got.instead) == (want.notes, want.instead)


# the quick run: a report reading each deferred table, and one composed of rules
QUICK = [("kernels", {"limit": 0}), ("gpu-time", {}), ("ops", {"limit": 0}), ("memory", {"ops": True}),
         ("traces", {}), ("ranks", {}), ("patterns", {})]


@pytest.mark.parametrize("name,options", slow_when(CASES, lambda case: case not in QUICK))
def test_every_report_gives_the_rows_of_a_database_file(eager, name, options):
    """Each report first thing after the load: it fills what it reads (the
    quick run: QUICK; CORPUS_CASES below: each case on one corpus trace)."""
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        _same(s.report_result(name, **options), eager.report_result(name, **options))


# Small corpus traces with what the reports read: python frames crossing labels,
# memory events and steps (H100), NCCL collectives (A100), an AMD GPU (MI250).
# The 14-26 MB traces used before (a100_train_rank0, mi300x, b200) cost ~78 CPU-s
# of the suite for the same fills; test_nesting nests with_stack traces at first
# use, test_corpus loads every corpus trace.
CORPUS_TRACES = ["h100_vit_inference.json.gz", "a100_nccl_train.json.gz", "mi250_rocm_train.json.gz"]
# Each case on one of the corpus traces, in turn: what a report fills is the
# same on any trace (its declared tables), the traces add real data to each
# (every case on every trace was 105 loads, ~100 CPU-s of the suite)
CORPUS_CASES = [(CORPUS_TRACES[i % len(CORPUS_TRACES)], *case) for i, case in enumerate(CASES)]


@pytest.fixture(scope="module")
def corpus_pair(request, tmp_path_factory):
    path = CORPUS / request.param
    if not path.exists():
        pytest.skip(f"{path} not in the corpus")
    db = tmp_path_factory.mktemp("eager") / "eager.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(path)], run="default")
    with duckprof.connect(db, read_only=True) as s:
        yield path, s


@pytest.mark.slow  # a load per report
@pytest.mark.skipif(not corpus_files(), reason="no corpus")
@pytest.mark.parametrize("corpus_pair,name,options", CORPUS_CASES, indirect=["corpus_pair"])
def test_every_report_on_corpus_traces(corpus_pair, name, options):
    path, eager_s = corpus_pair
    with lazy(path) as s:
        _same(s.report_result(name, **options), eager_s.report_result(name, **options))


def test_cli_query_and_report_fill_before_reading(cli_app, eager):
    got = invoke(cli_app, "query", "select count(*) as n from kernel_estimates", str(GPU_TRACE), str(MEMORY_TRACE),
                 "--format", "csv")
    assert got.exit_code == 0, got.output
    assert got.stdout.split() == ["n", str(eager.sql("SELECT count(*) FROM kernel_estimates").fetchall()[0][0])]
    got = invoke(cli_app, "report", "kernels", str(GPU_TRACE), str(MEMORY_TRACE), "--format", "csv")
    want = invoke(cli_app, "report", "kernels", "--db", eager.db, "--format", "csv")
    assert got.exit_code == 0 and got.stdout == want.stdout and got.stdout.count("\n") > 1


class _Progress:
    """What cli_common.Progress is told: phase messages, attach and done."""

    def __init__(self):
        self.calls = []

    def __call__(self, msg):
        self.calls.append(msg)

    def attach(self, con):
        self.calls.append("attach")

    def done(self):
        self.calls.append("done")


def test_first_use_fill_is_shown_on_the_progress_line():
    """A report on an in-memory load: the tables it fills are named on the
    progress line (a 1 GB trace fills for seconds), drawn from attach to done;
    a second report that fills nothing more draws nothing."""
    with duckprof.connect() as s:
        s.load([str(MEMORY_TRACE)], run="r")
        s.fill_progress = p = _Progress()
        s.report("memory", ops=True).fetchall()
        first = list(p.calls)
        s.report("memory", ops=True).fetchall()
    assert first[0] == "attach" and first[-1] == "done"
    assert first[1:-1] == [f"[{k}/{len(first) - 2}] first use: computing {t}"
                           for k, t in enumerate([t for t in session_mod.DEFERRED
                                                  if any(t in m for m in first)], 1)]
    assert "first use: computing derived_call_totals" in " ".join(first)
    assert p.calls == first


def test_progress_line_can_be_drawn_again_after_done(capsys):
    """cli_common.Progress restarts after done(): the load's bar, then the
    first-use fill's, each cleared when it ends."""
    p = Progress(quiet=True)
    p.enabled = True
    con = duckdb.connect()
    for phase in ("loading", "first use"):
        p.attach(con)
        p(phase)
        p.t0 -= 1  # past the delay before the first draw
        con.execute("SELECT count(*) FROM range(20000000) a, range(3) b").fetchall()
        time.sleep(0.5)
        p.done()
        assert p._thread is None and not p.shown
    err = capsys.readouterr().err
    assert "loading" in err and "first use" in err and err.endswith("\r\033[K")


def test_the_nesting_is_committed_before_the_other_fills(eager, monkeypatch):
    """The nesting's fill commits on its own, before the tables that read it
    (the old values its UPDATE keeps until then would sit beside their
    statements): a fill that fails after it leaves the nesting filled, and
    itself still to fill."""
    def broken(con, trace_ids):
        raise duckdb.InvalidInputException("a fill that fails")
    with lazy(GPU_TRACE, MEMORY_TRACE) as s:
        monkeypatch.setitem(session_mod.DEFERRED, "derived_launches", broken)
        with pytest.raises(duckdb.InvalidInputException):
            s.sql("SELECT count(*) FROM launches")
        assert filled(s)["nesting"] == nested(eager) > 0
        assert session_mod.NESTING not in s._deferred and "derived_launches" in s._deferred
        monkeypatch.undo()
        assert _cells(s.sql("SELECT * FROM launches")) == _cells(eager.sql("SELECT * FROM launches")) != []
