"""Locate, document and render the SQL files shipped with duckprof (sql/ in the
source tree, duckprof/sql in an installed wheel).

Every view and report file starts with a header comment in one format
(parse_header), which the schema reference, the schema test, the layering
test, the view order and the report registry all read:

    -- <name>: <what it answers>
    -- <more prose>
    --
    -- requires: <the tables, views and macros it reads, comma-separated>
    --
    -- Columns:
    -- <column>  <TYPE>  [wide]  <description, unit>
    --                           <continued description>

A report file also declares `report:`, `question:` and `option:` lines, and
may end with a notes query after a line `-- @notes`; a rule file of a report
composed of rules declares `severity:`, `fix:`, `method:`, `needs:` and
`torch:` (see duckprof/reports.py).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def user_cache_dir(*parts: str) -> str:
    """A path in duckprof's directory of the user's cache (XDG_CACHE_HOME or
    ~/.cache)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "duckprof", *parts)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept in the user's cache: compiling the ~45
    templates a CLI command renders cost more than its SQL on a small trace.
    Jinja names an entry by the template's name and file path and keeps its
    source checksum inside (an edited file is compiled again), so every
    checkout or installation (a path) added one file per template for good;
    the entries live in the directory of this installation's source stamp
    (by-source/<stamp>/jinja: one file per template at most) and go with it
    (the _STAMPS_KEPT newest stamps stay). The directory is private to the
    user (the entries are code). None without a source stamp or a writable
    cache directory."""
    import jinja2
    stamp = source_stamp()
    if stamp is None:
        return None
    path = os.path.join(user_cache_dir(), _stamp_dir(stamp, user_cache_dir()), "jinja")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not os.access(path, os.W_OK):
        return None

    class StampCache(jinja2.FileSystemBytecodeCache):
        def dump_bytecode(self, bucket):
            try:
                super().dump_bytecode(bucket)
            except OSError:  # the stamp went (another process made newer ones): compiled next time again
                pass
    return StampCache(path)


@functools.lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    # Templates choose structure only (optional filters, groupings); every value
    # is a bound parameter, so autoescaping is not needed and would be wrong for SQL.
    import jinja2  # on first render: commands that render nothing (--help, a query on --db) skip it
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(sql_root())),
                              undefined=jinja2.StrictUndefined, autoescape=False,
                              keep_trailing_newline=True, bytecode_cache=_bytecode_cache())


def cached_text(key: str, compute) -> str:
    """compute() (a text), kept in the user's cache directory under `key`
    (a relative path, which names everything the text depends on): worked
    out once, not in every process. Best effort: without a writable cache it
    is computed each time."""
    path = user_cache_dir(key)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        pass
    text = compute()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass
    return text


def _file_stamps(root: str) -> list:
    """(path, size, modification time) of every file under root."""
    out, todo = [], [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        todo.append(e.path)
                else:
                    st = e.stat()
                    out.append((e.path, st.st_size, st.st_mtime_ns))
    return out


@functools.lru_cache(maxsize=1)
def source_stamp() -> str | None:
    """Identifies this installation's SQL, code and data the way Python
    identifies a module's source for its cached bytecode: by each file's
    path, size and modification time, not its bytes (stat()ing the ~200
    files costs ~1 ms; reading and hashing them several times that), and
    Jinja's the same way. None when they cannot be listed."""
    import importlib.util
    try:
        files = _file_stamps(str(sql_root())) + _file_stamps(str(Path(__file__).resolve().parent))
        spec = importlib.util.find_spec("jinja2")
        if spec is not None and spec.origin:
            st = os.stat(spec.origin)
            files.append((spec.origin, st.st_size, st.st_mtime_ns))
    except OSError:
        return None
    import hashlib
    return hashlib.blake2b(repr(sorted(set(files))).encode(), digest_size=12).hexdigest()


#: how many source stamps keep what was worked out from their sources in the
#: cache (a few checkouts or versions may share it)
_STAMPS_KEPT = 8
#: how many renderings a stamp keeps: some carry a load's own structure (the
#: tables and marker positions of its groups of files), so that every load of
#: other files adds a few, without end (the test suite left 10,000 a stamp,
#: 69 MB); past this many the oldest quarter goes. A process looks at the
#: directory at its first rendering not cached and then at every quarter of
#: this many more (a look at 2,000 files costs ~1.3 ms), which keeps the
#: bound, as the oldest quarter goes whenever it is reached
_ENTRIES_KEPT = 2000
_written: dict = {}  # stamp directory -> renderings this process has computed for it
_BY_SOURCE = "by-source"


def _plain(v) -> bool:
    """A value whose repr() says all it holds: the key of a rendering."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(_plain(k) and _plain(x) for k, x in v.items())
    return False


@functools.lru_cache(maxsize=8)
def _stamp_dir(stamp: str, cache: str) -> str:
    """The cache directory of what is worked out from the sources of stamp
    (relative to the cache); made on first use, when the oldest of the
    others go (_STAMPS_KEPT are kept)."""
    rel = os.path.join(_BY_SOURCE, stamp)
    path = os.path.join(cache, rel)
    if not os.path.isdir(path):
        parent = os.path.dirname(path)
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            old = sorted((os.path.join(parent, d) for d in os.listdir(parent)),
                         key=os.path.getmtime, reverse=True)[_STAMPS_KEPT:]
        except OSError:
            old = []
        import shutil
        for d in old:
            shutil.rmtree(d, ignore_errors=True)
        _empty_legacy_jinja(os.path.join(cache, "jinja"))
    return rel


def _empty_legacy_jinja(path: str):
    """Remove the compiled templates of duckprof versions that kept them all
    in one directory, never evicted (24 MB seen): its files, not the
    directory itself, into which an older duckprof still running may write."""
    try:
        with os.scandir(path) as entries:
            files = [e.path for e in entries if e.is_file(follow_symlinks=False)]
    except OSError:
        return
    for f in files:
        try:
            os.remove(f)
        except OSError:
            pass


def from_sources(name: str, compute) -> str:
    """compute() (a text that depends on duckprof's sources only), kept in
    the user's cache per source stamp (source_stamp) under `name`: worked out
    once for these sources, not in every process."""
    stamp = source_stamp()
    if stamp is None:
        return compute()
    rel = _stamp_dir(stamp, user_cache_dir())

    def computed():  # not cached yet: it is about to be written
        path = os.path.join(user_cache_dir(), rel)
        n = _written[path] = _written.get(path, 0) + 1
        if (n - 1) % max(1, _ENTRIES_KEPT // 4) == 0:
            _make_room(path)
        return compute()
    return cached_text(os.path.join(rel, name), computed)


def _make_room(path: str):
    """Keep a stamp's directory under _ENTRIES_KEPT files: past it the oldest
    quarter goes (by modification time: when each was written). Best effort:
    another process may be removing the same files."""
    try:
        with os.scandir(path) as entries:
            files = [e for e in entries if e.is_file(follow_symlinks=False)]
        if len(files) < _ENTRIES_KEPT:
            return
        files.sort(key=lambda e: e.stat().st_mtime_ns)
    except OSError:
        return
    for e in files[: len(files) - _ENTRIES_KEPT * 3 // 4]:
        try:
            os.remove(e.path)
        except OSError:
            pass


def render(rel: str, **structure) -> str:
    """sql/<rel> rendered with `structure`. A rendering of plain values
    (strings, numbers, lists and dicts of them) is kept in the user's cache
    (from_sources) and read from there the next time, so that a process
    whose renderings are all cached never imports Jinja (~0.015 CPU-s)."""
    key = f"{rel}\0{sorted(structure.items())!r}" if len(structure) < 32 and _plain(structure) else ""
    if not key or len(key) > 8192:
        return _env().get_template(rel).render(**structure)
    import hashlib
    name = hashlib.blake2b(key.encode(), digest_size=16).hexdigest() + ".sql"
    return from_sources(name, lambda: _env().get_template(rel).render(**structure))


def render_string(text: str, **structure) -> str:
    """Jinja text (e.g. a macro imported from sql/templates/) rendered like a file."""
    return _env().from_string(text).render(**structure)


def list_dir(sub: str) -> list[str]:
    """The .sql files under sql/<sub> (recursively), as paths relative to sql/."""
    root = sql_root()
    return sorted(str(p.relative_to(root)) for p in (root / sub).rglob("*.sql"))


# -- headers ----------------------------------------------------------------------

_COLUMN = re.compile(r"^(\w+)\s+([A-Z][A-Z0-9_]*(?:\([A-Z0-9, ]+\))?(?:\[\])?)\s+(\[wide\]\s+)?(\S.*)$")


@dataclass
class Column:
    name: str
    type: str
    description: str
    wide: bool = False  # reports: shown in the terminal table only with --wide


@dataclass
class Header:
    """The documented header of a SQL file."""
    path: str                  # relative to sql/
    name: str                  # the object it defines (view name, or report name)
    summary: str               # the first line after 'name:'
    text: str                  # the whole comment block, without the '-- '
    requires: list[str] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    fields: dict = field(default_factory=dict)   # other 'key: value' lines (report:, question:, ...)
    options: list[str] = field(default_factory=list)  # the 'option:' lines, as written


def comment_block(text: str) -> list[str]:
    """The leading '--' lines of a SQL file, without the '--' and one space."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[3:] if line.startswith("-- ") else line[2:])
    return lines


def parse_header(rel: str) -> Header:
    """Parse the header comment of sql/<rel> (see the module docstring)."""
    lines = comment_block(read(rel))
    if not lines or ":" not in lines[0]:
        raise ValueError(f"sql/{rel}: the header must start with '-- <name>: <what it answers>'")
    first, summary = lines[0].split(":", 1)
    h = Header(path=rel, name=first.strip(), summary=summary.strip(), text="\n".join(lines))
    for line in lines[1:]:  # the summary is the first paragraph
        if not line.strip() or re.match(r"^[a-z ]+:", line):
            break
        h.summary += " " + line.strip()
    in_columns = False
    for line in lines[1:]:
        if in_columns:
            if not line.strip():
                continue
            if line.startswith("  ") and h.columns:  # continuation of the description
                h.columns[-1].description += " " + line.strip()
                continue
            m = _COLUMN.match(line)
            if not m:
                raise ValueError(f"sql/{rel}: not a column line ('name TYPE description'): {line!r}")
            h.columns.append(Column(m.group(1), m.group(2), m.group(4).strip(), bool(m.group(3))))
            continue
        if line.strip() == "Columns:":
            in_columns = True
        elif re.match(r"^requires:", line):
            h.requires = [r.strip() for r in line.split(":", 1)[1].split(",") if r.strip()]
        elif re.match(r"^option:", line):
            h.options.append(line.split(":", 1)[1].strip())
        elif re.match(r"^(question|uses|variant of|example|shared|severity|fix|fix-no-gpu|method|needs|torch):", line):
            k, v = line.split(":", 1)
            h.fields[k] = v.strip()
    return h


def body(rel: str) -> str:
    """The SQL of a file without its header comment."""
    text = read(rel)
    lines = text.splitlines(keepends=True)
    n = len(comment_block(text))
    return "".join(lines[n:])


# -- views ---------------------------------------------------------------------------

#: the raw tables (sql/schema.sql)
TABLES = ("duckprof_meta", "traces", "devices", "events", "op_estimates", "device_peaks", "interconnect_peaks",
          "run_tags", "trace_facts", "derived_launches", "derived_kernel_estimates", "derived_memory_events",
          "derived_call_totals", "report_results")


@functools.lru_cache(maxsize=1)
def view_headers() -> dict[str, Header]:
    """Every view file (sql/views/**), by the name of the view it defines."""
    out = {}
    for rel in list_dir("views"):
        h = parse_header(rel)
        if h.name != Path(rel).stem:
            raise ValueError(f"sql/{rel} defines {h.name!r}: a view's file is named after it")
        if h.name in out:  # e.g. a file an older version had elsewhere, left by an install over it
            raise ValueError(f"{sql_root()}: two files define the view {h.name!r} (sql/{out[h.name].path}, "
                             f"sql/{rel}): this installation holds files of an older duckprof; reinstall it "
                             "(pip uninstall duckprof; remove build/ from the source tree; pip install)")
        out[h.name] = h
    return out


def views_in_order() -> list[Header]:
    """The views, each after the views its header says it requires."""
    views = view_headers()
    ordered, done = [], set()

    def visit(name, stack=()):
        if name in done:
            return
        if name in stack:
            raise ValueError(f"views require each other in a cycle: {' -> '.join(stack + (name,))}")
        h = views[name]
        for r in h.requires:
            if r in views:
                visit(r, stack + (name,))
            elif r not in TABLES:
                raise ValueError(f"sql/{h.path}: requires {r!r}, which is neither a table nor a view")
        done.add(name)
        ordered.append(h)

    for name in sorted(views):
        visit(name)
    return ordered


@functools.lru_cache(maxsize=1)
def view_names() -> frozenset:
    """The names of the packaged views: their files' (see view_headers),
    without parsing them."""
    return frozenset(Path(rel).stem for rel in list_dir("views"))


def relations_read(names) -> set[str]:
    """`names` and the views and tables that reading them reads, through the
    views' `requires:` (parsed only when a view is among them)."""
    if not view_names() & set(names):
        return set(names)
    views, out, todo = view_headers(), set(), list(names)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(views[name].requires if name in views else ())
    return out


def tables_read(names) -> set[str]:
    """The tables that reading the views and tables `names` reads, through
    the views' `requires:` (names that are neither stay as they are)."""
    return {n for n in relations_read(names) if n not in view_names()}


def view_sql(h: Header) -> str:
    """The CREATE statements of one view file (rendered: views use the macros)."""
    return render(h.path)
