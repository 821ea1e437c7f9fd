"""Traces split into several chunk files (parsed side by side) load exactly
like a single chunk: event_id is the position in traceEvents, across chunks."""

from __future__ import annotations

import gzip
import json

import pytest

import duckprof
from duckprof import split, synth
from conftest import rows


@pytest.mark.parametrize("gz", [False, True])
def test_many_chunks_keep_file_order(tmp_path, monkeypatch, gz):
    path = str(tmp_path / ("t.json.gz" if gz else "t.json"))
    synth.generate(path, target_bytes=20_000_000, seed=3)
    monkeypatch.setattr(split, "MIN_CHUNK", 1 << 20)  # 20 MB -> many chunks
    parts = split.split_trace(path, str(tmp_path), chunks=8)
    assert len(parts.chunks) >= 6
    opener = gzip.open if gz else open
    with opener(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    with duckprof.connect() as s:
        s.load([path])
        got = rows(s, "SELECT event_id, name, ph FROM events ORDER BY event_id")
    assert got == [(i + 1, e.get("name"), e.get("ph")) for i, e in enumerate(events)]
