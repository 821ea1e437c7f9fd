"""The user's cache of rendered SQL (sqlfiles.render -> from_sources): a
rendering is read back instead of rendered again, and a stamp's directory
stays bounded though some renderings carry a load's own structure; Jinja's
compiled templates (sqlfiles._bytecode_cache) go with their stamp."""

from __future__ import annotations

import os

import pytest

from duckprof import sqlfiles


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "duckprof" / sqlfiles._BY_SOURCE


def _group_structure(k: int) -> dict:
    """stage_group_view.sql's structure in a load of k + 2 small files: its
    marker positions are the load's own."""
    starts = [0] + [1000 * (i + 1) + k for i in range(k + 1)]
    return dict(raw="dp_stage.grp_0", table="dp_stage.grp_0_t", starts=starts, srcs=list(range(len(starts))))


def _group_view(k: int) -> str:
    return sqlfiles.render("load/stage_group_view.sql", **_group_structure(k))


def _files(cache) -> list:
    """The renderings (each stamp's files; its jinja/ directory holds compiled templates)."""
    return [p for d in cache.iterdir() for p in d.iterdir() if p.is_file()]


def test_a_rendering_is_read_back(own_cache, monkeypatch):
    first = _group_view(3)
    assert len(_files(own_cache)) == 1

    def no_jinja():
        raise AssertionError("rendered again")
    monkeypatch.setattr(sqlfiles, "_env", no_jinja)
    assert _group_view(3) == first


def test_a_stamp_keeps_at_most_its_share_of_renderings(own_cache, monkeypatch):
    """With room for 8: twenty loads' renderings leave at most 8, the newest
    among them, and each rendering is what Jinja renders (failed before: 20
    files, and no bound)."""
    monkeypatch.setattr(sqlfiles, "_ENTRIES_KEPT", 8, raising=False)
    texts = [_group_view(k) for k in range(20)]
    files = _files(own_cache)
    assert 6 <= len(files) <= 8
    newest = max(files, key=os.path.getmtime)
    assert newest.read_text(encoding="utf-8") == texts[-1]
    for k in (0, 19):  # evicted or not, the same text
        assert _group_view(k) == sqlfiles._env().get_template("load/stage_group_view.sql").render(
            **_group_structure(k))
    assert len(_files(own_cache)) <= 8


@pytest.fixture
def installations(own_cache, tmp_path, monkeypatch):
    """install(k): sqlfiles as if installed from a copy of sql/ at its own
    path (a checkout, a virtualenv): its own source stamp, a new Jinja
    environment. The caches are cleared again at the end."""
    import shutil

    def clear():
        for f in (sqlfiles.source_stamp, sqlfiles._env, sqlfiles._stamp_dir):
            f.cache_clear()
    real = sqlfiles.sql_root()

    def install(k: int):
        root = tmp_path / f"install{k}" / "sql"
        if not root.exists():
            shutil.copytree(real, root)
        monkeypatch.setattr(sqlfiles, "sql_root", lambda: root)
        clear()
    yield install
    monkeypatch.undo()
    clear()


def _compiled(cache_root) -> list:
    """The compiled templates anywhere in the cache."""
    return sorted(p for p in cache_root.rglob("*") if p.is_file() and p.name.startswith("__jinja2_"))


def test_compiled_templates_go_with_their_stamp(own_cache, installations, monkeypatch):
    """Jinja's compiled templates live in their source stamp's directory and go
    with it: twelve installations at their own paths (as checkouts and
    virtualenvs are), with room for 3 stamps, leave the compiled templates of
    3 (failed before: all in one jinja/ directory, 12 installations' worth,
    never evicted; 2,643 files, 27 MB on a dev machine). A process whose
    stamp's directory went still renders (its compiled templates are not kept)."""
    monkeypatch.setattr(sqlfiles, "_STAMPS_KEPT", 3)
    root = own_cache.parent
    installations(0)
    sqlfiles.render("reports/diff_summary.sql", qa="", qb="")  # imports templates/intervals.sql
    per_install = len(_compiled(root))
    assert per_install == 2
    for k in range(1, 12):
        installations(k)
        sqlfiles.render("reports/diff_summary.sql", qa="", qb="")
    compiled = _compiled(root)
    assert len(compiled) == 3 * per_install
    stamps = {d.name for d in own_cache.iterdir()}
    assert len(stamps) == 3 and sqlfiles.source_stamp() in stamps
    assert {(p.parent.parent.parent, p.parent.parent.name, p.parent.name) for p in compiled} \
        == {(own_cache, s, "jinja") for s in stamps}
    import shutil
    shutil.rmtree(own_cache / sqlfiles.source_stamp())
    assert "SELECT" in sqlfiles.render("reports/diff.sql", by="device", shapes=False, op_time="total",
                                       normalize=False, collapse_templates=False, raw_names=False,
                                       per_step=False, sort="name", qa="", qb="")


def test_older_versions_compiled_templates_are_emptied_once(own_cache, installations):
    """The jinja/ directory of versions that kept every compiled template there
    is emptied when a new stamp's directory is made; the directory stays (an
    older duckprof still running may write into it)."""
    legacy = own_cache.parent / "jinja"
    legacy.mkdir(parents=True)
    (legacy / "__jinja2_0123.cache").write_bytes(b"x" * 100)
    installations(0)
    sqlfiles.render("reports/diff_summary.sql", qa="", qb="")
    assert legacy.is_dir() and not list(legacy.iterdir())
