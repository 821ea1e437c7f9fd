"""Locate and render the SQL files shipped with duckprof (sql/ in the source tree,
duckprof/sql in an installed wheel)."""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2


@functools.lru_cache(maxsize=1)
def sql_root() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "sql", here.parent / "sql"):
        if (candidate / "schema.sql").is_file():
            return candidate
    raise FileNotFoundError("duckprof's sql/ directory is missing from the installation")


def read(rel: str) -> str:
    return (sql_root() / rel).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    # Templates choose structure only (optional filters, groupings); every value
    # is a bound parameter, so autoescaping is not needed and would be wrong for SQL.
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(sql_root())),
                              undefined=jinja2.StrictUndefined, autoescape=False,
                              keep_trailing_newline=True)


def render(rel: str, **structure) -> str:
    return _env().get_template(rel).render(**structure)


def header(rel: str) -> str:
    """The leading comment block of a SQL file (its documentation)."""
    lines = []
    for line in read(rel).splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    return "\n".join(lines)


def list_dir(sub: str) -> list[str]:
    return sorted(p.name for p in (sql_root() / sub).glob("*.sql"))
