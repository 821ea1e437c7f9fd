"""The fixed cost of a `duckprof` process: what a command imports, and the
parameter coercion that keeps typer's pydantic out of it (cli_common.App)
giving exactly typer's values and error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer.main
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from conftest import HANDMADE, REPO, cli_app  # noqa: F401
from duckprof.cli_common import _NOT_PLAIN, QuickParam, _plain

NESTING3 = HANDMADE / "nesting3.json"

# strings a user may type for any option (numbers, not numbers, edge cases)
TYPED = ["0", "12", "-3", "007", "-0", "1e3", " 5", "5 ", "+4", "2.5", "-2.5", ".5", "5.", "1_000", "abc", "",
         "nan", "inf", "0.1", "3000", "123456789012345678901", "0x10", "٣", "-", "1.0", "x y"]


def _params(app):
    root = typer.main.get_command(app)
    todo, out = [(root, [])], []
    while todo:
        cmd, path = todo.pop()
        out += [(path, p) for p in cmd.params if hasattr(p, "type_descriptor")]
        todo += [(sub, path + [name]) for name, sub in getattr(cmd, "commands", {}).items()]
    return out


def _coerce(runtime, value, param):
    try:
        got = runtime.coerce(value, param=param, ctx=None)
        return "ok", type(got).__name__, repr(got)
    except BadParameter as e:
        return "error", e.message


def test_quick_coercion_is_typers(cli_app):
    """For every parameter of every command: the default, no value, typed
    strings and lists of them come out of QuickParam as out of typer's own
    (pydantic) coercion: same value, same type, same error message."""
    checked = 0
    for path, p in _params(cli_app):
        d = p.type_descriptor
        multi = p.multiple or p.nargs == -1 or (p.nargs or 1) > 1
        values = [None, p.default]
        if multi:
            n = p.nargs if (p.nargs or 0) > 1 else 2
            values += [tuple(TYPED[i:i + n]) for i in range(0, len(TYPED) - n, n)] + [[], "one"]
        else:
            values += TYPED
        for v in values:
            assert _coerce(QuickParam(d), v, p) == _coerce(build_runtime_param(d), v, p), (path, p.name, v)
            checked += 1
    assert checked > 5000


def test_every_default_is_plain(cli_app):
    """No command imports pydantic for its defaults: each is taken as it is
    (e.g. a DOUBLE report option declared with an int default would not)."""
    for path, p in _params(cli_app):
        if p.default is None or (p.type_descriptor.annotation is bool and isinstance(p.default, bool)):
            continue
        assert _plain(p.type_descriptor, p.default) is not _NOT_PLAIN, (path, p.name, p.default)


def _imports(*args, env=None) -> dict:
    """Run `duckprof ARGS` as the entry point does, in a fresh process, and
    say which of the libraries a command may not need it imported."""
    code = ("import sys\nsys.argv[0] = 'duckprof'\nfrom duckprof.cli import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
            "import json\nprint(json.dumps({'exit': code, 'modules': sorted(set(sys.modules) "
            "& {'pydantic', 'rich', 'jinja2', 'tabulate', 'duckprof.html.page', 'duckprof.diff', 'duckprof.augment'})}))")
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [
    ("query", "select count(*) from events", NESTING3),
    ("query", "select count(*) from events", NESTING3, "--wait", "1.5", "--name-width", "40", "-f", "csv"),
    ("report", "ops", NESTING3, "--limit", "3"),
    ("diff", NESTING3, NESTING3, "--by", "op", "--threshold", "2.5"),
    ("--help",), ("query", "--help"), ("report", "kernels", "--help"), ("--version",)])
def test_commands_do_not_import_pydantic(args):
    """typer's parameter coercion imports pydantic (0.05-0.06 CPU-s a
    process): no command given plain values does."""
    got = _imports(*args)
    assert got["exit"] in (0, None)
    assert "pydantic" not in got["modules"] and "rich" not in got["modules"]


def test_bad_number_error_is_typers():
    """A bad value still gets typer's message (from its own coercion)."""
    r = subprocess.run([sys.executable, "-m", "duckprof", "report", "kernels", str(NESTING3), "--limit", "2.5"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == ("Error: Invalid value for '--limit' / '-n': Input should be a "
                                                  "valid integer, unable to parse string as an integer")


def test_commands_import_what_they_use(tmp_path):
    """Jinja2 only to render SQL, tabulate only for a table it must draw
    itself, the html page, diff and augment only in their commands: the
    rest of the CLI does not import them (a few ms each, every process)."""
    plain = {"duckprof.html.page", "duckprof.diff", "duckprof.augment", "tabulate"}
    assert not (set(_imports("query", "select count(*) as n from events", NESTING3)["modules"]) & plain)
    db = tmp_path / "t.duckdb"
    assert _imports("load", NESTING3, "--db", db, "-q")["exit"] in (0, None)
    assert not set(_imports("query", "select count(*) as n from events", "--db", db)["modules"]) & (plain | {"jinja2"})
    assert not set(_imports("--help")["modules"]) & (plain | {"jinja2"})
    # Jinja2 renders the SQL a process has not rendered before: diff in a cache of its own (in the
    # user's cache an earlier run may have left every rendering of diff, and then it needs no Jinja2)
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    got = _imports("diff", NESTING3, NESTING3, env=cache)
    assert {"duckprof.diff", "jinja2"} <= set(got["modules"])
    got = _imports("diff", NESTING3, NESTING3, env=cache)  # now rendered
    assert "duckprof.diff" in got["modules"] and "jinja2" not in got["modules"]
