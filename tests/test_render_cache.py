"""The user's cache of rendered SQL (sqlfiles.render -> from_sources): a
rendering is read back instead of rendered again, and a stamp's directory
stays bounded though some renderings carry a load's own structure."""

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
    return [p for d in cache.iterdir() for p in d.iterdir()]


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
