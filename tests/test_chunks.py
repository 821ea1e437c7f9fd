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


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("n_events", [3, 2_000, 60_000])  # ~0.3 KB, ~250 KB, ~7 MB of events
def test_top_level_keys_after_trace_events(tmp_path, gz, n_events):
    """The end of traceEvents is found from the end of the file: other arrays
    after it (deviceProperties, with brackets and escaped quotes inside strings)
    must not be taken for it, whatever the size of the events array."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f'op"]{i}\\', "pid": 1, "tid": 1, "ts": i, "dur": 1,
               "args": {"Input Dims": [[i, 2]], "x": "}]"}} for i in range(n_events)]
    devices = [{"id": d, "name": 'NVIDIA A100-SXM4-80GB "]" [', "totalGlobalMem": 85e9, "numSms": 108}
               for d in range(8)]
    doc = {"schemaVersion": 1, "traceEvents": events, "deviceProperties": devices,
           "distributedInfo": {"rank": 5, "backend": "nccl", "ranks": [0, 5]}, "traceName": "t]"}
    data = json.dumps(doc, indent=1 if n_events == 2_000 else None).encode()
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    with duckprof.connect() as s:
        s.load([str(path)])
        assert rows(s, "SELECT count(*), max(name) FILTER (WHERE event_id = 1) FROM events") == [
            (n_events, 'op"]0\\')]
        assert rows(s, "SELECT rank, metadata->>'traceName' FROM traces") == [(5, "t]")]
        assert rows(s, "SELECT count(*), min(num_sms) FROM devices") == [(8, 108)]
