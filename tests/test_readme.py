"""The README is the schema's documentation: it must name every table, view and
column that a fresh database exposes, and carry the test command CI runs."""

import os
import re

import duckprof

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_readme_documents_every_view_and_column():
    text = readme()
    missing = []
    with duckprof.connect() as s:
        for name, kind, cols in s.schema():
            if name == "duckprof_meta":
                continue
            if not re.search(rf"\b{name}\b", text):
                missing.append(name)
            for col, _type in cols:
                if not re.search(rf"\b{re.escape(col)}\b", text):
                    missing.append(f"{name}.{col}")
    assert missing == []


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    command = 'pip install ".[test]" && python -m pytest -q -n auto'
    assert command in readme()
    assert command in ci


def test_readme_says_how_long_the_tests_take():
    """issue 13 item 18: next to the test command, how long it takes on 2 cores, and the
    quick run without the slow tests."""
    text = readme()
    start = text.index('python -m pytest -q')
    part = text[start:start + 1500]
    assert re.search(r"on 2 cores the full command took [0-9.]+ min", part)
    assert re.search(r'`python -m pytest -q -n auto -m "not\s+slow"`', part)
    assert re.search(r"[0-9]+ tests in [0-9]+ min [0-9]+ s on 2 cores", part)
