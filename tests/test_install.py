"""A non-editable `pip install .` into a fresh virtual environment works: the
wheel ships the SQL files and the console script, `duckprof demo` runs, and
a query over a trace answers correctly, from outside the source tree.

Runs in CI. It needs pip to reach a package index (or a local wheel cache /
find-links) for duckdb, jinja2, typer, tabulate and setuptools; it is skipped
only when pip reports that no index can provide them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv

import pytest

from conftest import HANDMADE, REPO

# builds a wheel and a virtual environment (~18 s): CI runs it, the quick run does not
pytestmark = pytest.mark.slow

# ".*": every hidden entry (.git, .ci, caches, and a checkout's own .venv, which
# the copy would otherwise take along: most of the setup's time); the build reads none
IGNORE = shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__", "bench-out", "tests",
                                "fixtures", "benchmarks", "*.duckdb*")
OFFLINE_SIGNS = ("No matching distribution found", "Could not find a version that satisfies",
                 "Failed to establish a new connection", "Temporary failure in name resolution")


def _run(args, cwd, timeout=600):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    shutil.copytree(REPO, src, ignore=IGNORE)  # build from a copy: the repo stays clean
    env_dir = base / "venv"
    # A fresh venv without pip of its own; this interpreter's pip installs into
    # it (pip --python, pip >= 22.3), which saves bootstrapping pip each run.
    # Without that option, the venv gets its own pip.
    own_pip = _run([sys.executable, "-m", "pip", "--python", sys.executable, "--version"], cwd=base).returncode != 0
    venv.EnvBuilder(with_pip=own_pip, clear=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / "python"
    pip = [py, "-m", "pip"] if own_pip else [sys.executable, "-m", "pip", "--python", py]
    r = _run([*pip, "install", "--no-input", "--no-compile", "--disable-pip-version-check", str(src)], cwd=base)
    if r.returncode != 0:
        out = r.stdout + r.stderr
        if any(s in out for s in OFFLINE_SIGNS):
            pytest.skip("pip cannot reach a package index for the dependencies:\n" + out[-2000:])
        pytest.fail("pip install . failed:\n" + out[-4000:])
    return base, bindir, py


def test_installed_from_site_packages(installed):
    base, _bindir, py = installed
    r = _run([py, "-c", "import duckprof, duckprof.sqlfiles as s; print(duckprof.__file__); print(s.sql_root())"],
             cwd=base)
    assert r.returncode == 0, r.stderr
    mod, sql_root = r.stdout.split()
    assert "site-packages" in mod and not mod.startswith(str(REPO))
    assert "site-packages" in sql_root


def test_installed_demo(installed):
    base, bindir, _py = installed
    r = _run([bindir / "duckprof", "demo", "--events", "2000"], cwd=base)
    assert r.returncode == 0, r.stderr
    assert "run 'demo': loaded 1 trace(s)" in r.stdout
    assert "Top kernels by total time" in r.stdout
    assert "Traceback" not in r.stderr


def test_installed_query_and_schema(installed, tmp_path):
    base, bindir, _py = installed
    trace = tmp_path / "t.json"
    shutil.copy(HANDMADE / "nesting3.json", trace)
    db = tmp_path / "r.duckdb"
    r = _run([bindir / "duckprof", "load", trace, "--db", db, "--run", "x"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _run([bindir / "duckprof", "query", "select name, self_ns from cpu_ops where name = 'B2'",
              "--db", db, "-f", "csv"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["name,self_ns", "B2,15000"]
    r = _run([bindir / "duckprof", "schema", "launches"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("launches (view)")
    r = _run([bindir / "duckprof", "load", tmp_path / "missing.json"], cwd=tmp_path)
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr


def test_installed_html(installed, tmp_path):
    """The wheel ships the page's templates, CSS and script."""
    base, bindir, _py = installed
    trace = tmp_path / "t.json"
    shutil.copy(REPO / "fixtures" / "gpu_time" / "two_streams.json", trace)
    r = _run([bindir / "duckprof", "html", trace, "-o", tmp_path / "t.html", "-q"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert 'id="timeline-data"' in html and "function sortBy" in html
