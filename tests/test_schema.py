"""The shape every view and report shares (issue 12), held to the database:

- every view and report file has a header whose Columns equal what DuckDB
  says the view / report returns (names, order, types);
- layers: base views read only tables, derived views read views (and the
  estimate / peak lookup tables, never the raw event tables), reports read
  views only; every file declares exactly what it reads (`requires:`);
- the report registry: every report's options parse, and no template pastes
  an option's value into the SQL (values are bound parameters);
- the README's schema reference is `duckprof schema --markdown`.

Each checker is a function of a file's text, so the tests also show it
failing on a broken header, declaration or template.
"""

from __future__ import annotations

import re

import pytest

from conftest import HANDMADE, REPO, JoinsExplained

import duckprof
from duckprof import reports, sqlfiles

GPU = REPO / "fixtures" / "gpu_time" / "two_streams.json"
H100 = REPO / "fixtures" / "kernels" / "h100_two_kernels_one_op.json"
LOOKUP_TABLES = {"op_estimates", "device_peaks", "interconnect_peaks"}   # derived views may read these
RAW_TABLES = set(sqlfiles.TABLES) - LOOKUP_TABLES


@pytest.fixture(scope="module")
def session():
    s = duckprof.connect()
    s.load([str(GPU), str(H100), str(HANDMADE / "nesting3.json")], run="r")
    yield s
    s.close()


# -- headers against DESCRIBE -------------------------------------------------------

def described(con, relation: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()]


def header_mismatch(header: sqlfiles.Header, actual: list[tuple[str, str]], optional=()) -> list[str]:
    """What differs between a header's Columns and the real columns; columns
    named in `optional` may be absent (they exist only with an option)."""
    documented = [(c.name, c.type) for c in header.columns if not (c.name in optional and
                                                                   c.name not in dict(actual))]
    if documented == actual:
        return []
    return [f"documented {documented}", f"actual     {actual}"]


@pytest.mark.parametrize("name", sorted(sqlfiles.view_headers()))
def test_view_header_equals_describe(session, name):
    h = sqlfiles.view_headers()[name]
    assert h.columns, f"sql/{h.path}: no Columns block"
    assert header_mismatch(h, described(session.con, name)) == []


def optional_columns(h: sqlfiles.Header) -> set[str]:
    return {c.name for c in h.columns if "(only with --" in c.description}


@pytest.mark.parametrize("name", [r.name for r in reports.REPORTS])
def test_report_header_equals_its_result(session, name):
    report = reports.lookup(name)
    opts = {o.name: o for o in report.options()}
    # a variant is chosen by a flag (--by-step), a choice (--breakdown tensorboard) or a count (--buckets 4)
    files = [(report.file, {})] + [(f"reports/{stem}.sql", {opt: opts[opt].choices[0] if opts[opt].choices
                                                           else 4 if opts[opt].type == "INTEGER" else True})
                                   for opt, stem in report.variants.items()]
    for rel, options in files:
        h = sqlfiles.parse_header(rel)
        res = session.report_result(name, **options)
        actual = list(zip(res.relation.columns, map(str, res.relation.types)))
        assert header_mismatch(h, actual, optional_columns(h)) == [], rel


def test_diff_headers_equal_their_results(session):
    session.load([str(GPU)], run="other")
    from duckprof.diff import diff
    d = diff("r", "other", session=session, by="op", group_by_input_shape=True, raw_names=True, per_step=False)
    for stem, rel in (("diff", d.table), ("diff_summary", d.summary)):
        h = sqlfiles.parse_header(f"reports/{stem}.sql")
        assert header_mismatch(h, list(zip(rel.columns, map(str, rel.types)))) == [], stem


def test_a_wrong_header_is_caught(session):
    h = sqlfiles.view_headers()["kernels"]
    broken = sqlfiles.Header(h.path, h.name, h.summary, h.text, h.requires,
                             [sqlfiles.Column(c.name, "INTEGER" if c.name == "stream" else c.type, c.description)
                              for c in h.columns])
    assert header_mismatch(broken, described(session.con, "kernels")) != []
    swapped = h.columns[:1] + h.columns[2:3] + h.columns[1:2] + h.columns[3:]
    assert header_mismatch(sqlfiles.Header(h.path, h.name, h.summary, h.text, h.requires, swapped),
                           described(session.con, "kernels")) != []


def test_no_hugeint_in_any_view(session):
    """sum() of BIGINT is HUGEINT: Arrow and pandas clients would get decimals."""
    for name in sqlfiles.view_headers():
        assert "HUGEINT" not in {t for _, t in described(session.con, name)}, name


class _Watched(JoinsExplained):
    """A connection that notes, for each statement a report runs, DuckDB's
    asof_loop_join_threshold then, and the join operators of the report's
    table statement."""

    def __init__(self, con):
        super().__init__(con, lambda sql: sql.startswith("CREATE OR REPLACE TEMP TABLE duckprof_report_"))
        self.thresholds = []

    def execute(self, sql, *params):
        if not sql.lstrip().upper().startswith(("SET ", "SELECT CURRENT_SETTING")):
            self.thresholds.append(
                self.con.execute("SELECT current_setting('asof_loop_join_threshold')").fetchone()[0])
        return super().execute(sql, *params)


def test_a_report_keeps_its_asof_joins(session):
    """DuckDB plans an ASOF join whose left side it estimates small (a CTE: 0
    or 1 row) as a nested loop over every pair: report idle --hta's covered
    idle time took 7 s on a100_train_rank0 (0.5 s as an ASOF join) and grew
    with the square of the trace; only the reports of rules ran with the
    threshold at 0. Every connection duckprof opens now has it at 0
    (dbfile.plan_settings; the loader's nesting: test_nesting), so every
    statement of a report runs with it."""
    con = session.con
    before = con.execute("SELECT current_setting('asof_loop_join_threshold')").fetchone()[0]
    w = _Watched(con)
    reports.run(w, "idle", hta=True)
    assert w.thresholds and set(w.thresholds) == {0}, w.thresholds
    assert w.joins == [["Asof Join", "Asof Join"]]  # covered_length's two, not loops
    assert con.execute("SELECT current_setting('asof_loop_join_threshold')").fetchone()[0] == before


# -- layers and declarations ------------------------------------------------------------

_CTE = re.compile(r"(?:\bWITH\s+(?:RECURSIVE\s+)?|,\s*)([a-z_][a-z0-9_]*)\s*(?:\([a-z0-9_,\s]*\))?\s+AS\s*"
                  r"(?:MATERIALIZED\s*)?\(", re.I)
_READ = re.compile(r"\b(?:FROM|JOIN)\s+([a-z_][a-z0-9_.]*)", re.I)
_CREATED = re.compile(r"CREATE\s+OR\s+REPLACE\s+(?:TEMP\s+)?(?:VIEW|MACRO)\s+([a-z_][a-z0-9_]*)", re.I)


def strip_sql(text: str) -> str:
    text = re.sub(r"--[^\n]*", " ", text)
    text = re.sub(r"'(?:[^']|'')*'", "''", text)
    return re.sub(r"\bDISTINCT\s+FROM\b", "DISTINCT_FROM", text, flags=re.I)


def relations_read(sql: str) -> set[str]:
    """The tables, views and table macros a SQL text reads (not its own CTEs,
    not what it creates, not the report's result table)."""
    sql = strip_sql(sql)
    own = {m.lower() for m in _CTE.findall(sql)} | {m.lower() for m in _CREATED.findall(sql)}
    read = {m.lower().split(".")[-1] for m in _READ.findall(sql)}
    return {r for r in read - own if not r.startswith("duckprof_report_")}


def layer_problems(path: str, text: str) -> list[str]:
    """The layering rules for one view or report file (its rendered text)."""
    h = sqlfiles.parse_header(path)
    declared, read = set(h.requires), relations_read(text)
    views = set(sqlfiles.view_headers())
    problems = [f"reads {r} without declaring it" for r in sorted(read - declared)]
    problems += [f"declares {r} but does not read it" for r in sorted(declared - read)]
    if path.startswith("views/base/"):
        problems += [f"a base view reads the view {r}" for r in sorted(declared & views)]
    elif path.startswith("views/derived/"):
        problems += [f"a derived view reads the raw table {r}" for r in sorted(declared & RAW_TABLES)]
        if not declared & views:
            problems.append("a derived view reads no view (it is a base view)")
    elif path.startswith("reports/"):
        problems += [f"a report reads the table {r}" for r in sorted(declared - views)]
    return problems


def rendered(path: str) -> str:
    if path.startswith("views/"):
        return sqlfiles.render(path)
    # every structural choice at once is not possible; render defaults and each variant
    structure = dict(run="r", device=0, limit=5, sort="total", group_by_launch=True, peak_tflops=None,
                     peak_gbps=None, by_step=False, result="duckprof_report_0", by="op", shapes=True,
                     op_time="total", normalize=True, collapse_templates=True, raw_names=True,
                     per_step=True, qa="", qb="", rules=None, category=None, summary=False, breakdown=None,
                     group_by_input_shape=False, group_by_stack=0, top_level_only=False, by_graph_node=False,
                     by_rank=True, exclude_last_step=False, hta=False)
    for r in reports.REPORTS:  # options this structure does not set, or sets to a value they do not take
        if path == r.file or path in {f"reports/{stem}.sql" for stem in r.variants.values()}:
            for o in r.options():
                if o.name not in structure or (o.choices and structure[o.name] not in o.choices):
                    structure[o.name] = o.default
    if path == "reports/ops.sql":  # the stack grouping reads more views
        return "\n".join(sqlfiles.render(path, **dict(structure, **extra))
                         for extra in ({}, {"group_by_stack": 5, "group_by_input_shape": True}))
    if path == "reports/diff.sql":  # each level reads other views
        return "\n".join(sqlfiles.render(path, **dict(structure, by=by))
                         for by in ("kernel", "op", "category", "device"))
    if path in ("reports/launches.sql", "reports/launches_per_launch.sql"):  # --hta reads hta_events instead
        return "\n".join(sqlfiles.render(path, **dict(structure, hta=h)) for h in (False, True))
    if path == "reports/trend.sql":  # each metric reads other views
        return "\n".join(sqlfiles.render(path, **dict(structure, metric=m))
                         for m in ("step_time", "busy", "kernel", "op", "category"))
    return sqlfiles.render(path, **structure)


ALL_FILES = sqlfiles.list_dir("views") + sqlfiles.list_dir("reports")


@pytest.mark.parametrize("path", ALL_FILES)
def test_layers_and_declarations(path):
    assert layer_problems(path, rendered(path)) == []


def test_layer_checker_catches_broken_declarations():
    text = rendered("views/derived/collectives.sql")
    assert layer_problems("views/derived/collectives.sql", text + "\nSELECT * FROM events") == [
        "reads events without declaring it"]
    assert layer_problems("reports/ops_by_step.sql", rendered("reports/ops_by_step.sql")
                          + "\nSELECT * FROM traces") == ["reads traces without declaring it"]
    assert "declares launches but does not read it" in layer_problems(
        "views/derived/collectives.sql", "SELECT * FROM kernels, cpu_ops, trace_files")
    assert layer_problems("views/base/launches.sql", rendered("views/base/launches.sql")
                          + "\nSELECT * FROM kernels") == ["reads kernels without declaring it"]


def test_views_are_created_in_declared_order():
    order = [v.name for v in sqlfiles.views_in_order()]
    for v in sqlfiles.views_in_order():
        for r in v.requires:
            if r in order:
                assert order.index(r) < order.index(v.name), (v.name, r)



def test_a_view_file_left_by_an_older_install_is_named(tmp_path, monkeypatch):
    """An install over an older duckprof can keep a view file the older version
    had elsewhere (setuptools reuses a source tree's build/lib, which keeps
    deleted files): two files then define one view. duckprof names both and
    the cure instead of failing later on a view created out of order."""
    import shutil
    root = tmp_path / "sql"
    shutil.copytree(sqlfiles.sql_root(), root)
    shutil.copy(root / "views" / "base" / "gpu_ops.sql", root / "views" / "gpu_ops.sql")  # the pre-refactor place
    monkeypatch.setattr(sqlfiles, "sql_root", lambda: root)
    with pytest.raises(ValueError, match=r"two files define the view 'gpu_ops' \(sql/views/base/gpu_ops.sql, "
                                         r"sql/views/gpu_ops.sql\): .*reinstall"):
        sqlfiles.view_headers.__wrapped__()
    (root / "views" / "gpu_ops.sql").unlink()
    assert "gpu_ops" in sqlfiles.view_headers.__wrapped__()

# -- the registry -------------------------------------------------------------------

@pytest.mark.parametrize("name", [r.name for r in reports.REPORTS])
def test_option_values_are_bound_never_pasted(name):
    report = reports.lookup(name)
    for opt, stem in [(None, None)] + list(report.variants.items()):
        values = {o.name: o.default for o in report.options()}
        if opt:
            values[opt] = True
        for o in report.options():
            if o.type == "VARCHAR":
                values[o.name] = "SENTINEL'x"
            elif o.type in ("INTEGER", "DOUBLE") and o.name not in ("limit",):
                values[o.name] = 987654321
        rel = report.file if opt is None else f"reports/{stem}.sql"
        text = sqlfiles.render(rel, **values, result="t")
        assert "SENTINEL" not in text and "987654321" not in text, rel


def test_every_report_is_documented_and_has_a_question():
    for r in reports.REPORTS:
        h = r.header()
        assert h.fields.get("question", "").endswith("?"), r.name
        assert h.columns, r.name
        for o in r.options():
            assert o.help, (r.name, o.flag)


def test_option_lines_parse_strictly():
    o = reports.parse_option("--limit/-n INTEGER >= 0 = 20  rows per device", "x")
    assert (o.name, o.flag, o.short, o.type, o.default, o.minimum) == ("limit", "--limit", "-n", "INTEGER", 20,
                                                                      (">=", 0.0))
    with pytest.raises(duckprof.DuckprofError, match="--limit must be >= 0"):
        o.check(-1)
    with pytest.raises(ValueError):
        reports.parse_option("limit INTEGER rows", "x")
    c = reports.parse_option("--sort CHOICE(a,b) = a  order", "x")
    with pytest.raises(duckprof.DuckprofError, match="choose one of a, b"):
        c.check("z")


# -- the README ----------------------------------------------------------------------

def test_readme_schema_section_is_schema_markdown():
    from duckprof.cli import schema_markdown
    text = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- schema:begin -->\n(.*?)<!-- schema:end -->", text, re.S)
    assert m, "README has no schema section between <!-- schema:begin --> and <!-- schema:end -->"
    assert m.group(1).strip() == schema_markdown().strip(), \
        "README's schema section differs from `duckprof schema --markdown`: paste it in again"
