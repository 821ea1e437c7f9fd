"""The Python API (issue 13 item 17): every standard report on a session, as a
DuckDB relation whose integer totals are BIGINT (never HUGEINT, which pandas
turns into float64 and DuckDB's own sum() returns for BIGINT input), and
`.df()` on it, with `pip install "duckprof[pandas]"` (pandas is in the `test`
extra, so CI runs the .df() test)."""

from __future__ import annotations

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

import duckprof
from duckprof import reports
from conftest import REPO

FIXTURES = [REPO / "fixtures" / "diff" / "a.json", REPO / "fixtures" / "kernels" / "h100_two_kernels_one_op.json",
            REPO / "fixtures" / "memory" / "memory.json", REPO / "fixtures" / "steps" / "three_steps.json",
            REPO / "fixtures" / "collectives" / "bus_bandwidth_rank0.json",
            REPO / "fixtures" / "tb_plugin" / "build_module_hierarchy.json"]

#: option sets that switch a report's structure (another file, other columns)
VARIANTS = {"kernels": [{}, {"group_by_launch": True}], "gpu-time": [{}, {"by_step": True}, {"hta": True}],
            "idle": [{}, {"hta": True}, {"by": "event"}], "queue": [{}, {"hta": True}], "temporal": [{}, {"hta": True}],
            "categories": [{}, {"by_step": True}, {"category": "gemm"}], "ops": [{}, {"group_by_input_shape": True}],
            "memory": [{}, {"by_step": True}, {"ops": True}, {"live": True}, {"curve": True}],
            "steps": [{}, {"summary": True}, {"breakdown": "tensorboard"}], "collectives": [{}, {"by_rank": True}],
            "ranks": [{}, {"hta": True}], "launches": [{}, {"per_launch": True}, {"hta": True}]}
# ops --by-graph-node needs torch.compile's graph markers, which these fixtures lack: its rows are
# tested in tests/test_ops_report.py (test_by_graph_node_by_hand)


@pytest.fixture(scope="module")
def session():
    s = duckprof.connect()
    s.load([str(p) for p in FIXTURES], run="r")
    yield s
    s.close()


@pytest.fixture(scope="module")
def reports_run(session):
    """session.report(name, **options), run once per module for both tests
    below (each report's relation reads its own result table, so it can be
    fetched again; running a report costs 0.02-0.6 CPU-s, fetching it 2 ms)."""
    done = {}

    def report(name, kw):
        key = (name, tuple(sorted(kw.items())))
        if key not in done:
            done[key] = session.report(name, **kw)
        return done[key]
    return report


def _all_reports():
    return [(r.name, kw) for r in reports.REPORTS for kw in VARIANTS.get(r.name, [{}])]


@pytest.mark.parametrize("name,kw", _all_reports())
def test_every_report_is_a_relation_without_hugeint(reports_run, name, kw):
    rel = reports_run(name, kw)
    types = dict(zip(rel.columns, map(str, rel.types)))
    assert not [c for c, t in types.items() if "HUGEINT" in t or "DECIMAL" in t], types
    assert rel.fetchall(), (name, kw)  # the fixtures give every report rows


def test_every_registered_report_is_covered():
    assert {n for n, _ in _all_reports()} == set(reports.BY_NAME)


def test_pandas_extra_and_test_extra():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("pandas") for d in meta["pandas"])
    assert any(d.startswith("pandas") for d in meta["test"])  # so CI runs test_df below


@pytest.mark.parametrize("name,kw", _all_reports())
def test_df(reports_run, name, kw):
    pd = pytest.importorskip("pandas")  # pip install "duckprof[pandas]"
    rel = reports_run(name, kw)
    df = rel.df()
    rows = rel.fetchall()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == rel.columns and len(df) == len(rows)
    for i, (col, typ) in enumerate(zip(rel.columns, map(str, rel.types))):
        values = [r[i] for r in rows]
        if typ in ("BIGINT", "INTEGER") and None not in values:
            # integer totals stay integers in pandas (a HUGEINT column would be float64)
            assert str(df[col].dtype) in ("int64", "int32"), (col, df[col].dtype)
            assert df[col].tolist() == values


def test_readme_notebook_example_runs():
    """The README's notebook-style example, run on a fixture trace."""
    pytest.importorskip("pandas")
    import re
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"In a notebook.*?```python\n(.*?)```", text, re.S).group(1)
    assert "s.report(" in block and ".df()" in block
    code = block.replace('"trace.json.gz"', repr(str(FIXTURES[1])))
    env = {}
    exec(compile(code, "README.md", "exec"), env)  # noqa: S102 - our own README
    s = env["s"]
    assert env["k"].df()["name"].tolist() == [r[4] for r in s.report("kernels", limit=10).fetchall()]
    s.close()
