"""Traces split into several chunk files (parsed side by side) load exactly
like a single chunk: event_id is the position in traceEvents, across chunks."""

from __future__ import annotations

import gzip
import json
import os

import pytest

import duckprof
from duckprof import jsonscan, split, synth
from conftest import HANDMADE, corpus_path, rows, slow_when


@pytest.mark.slow  # a 20 MB trace (test_chunk_files_are_removed_once_staged splits into chunks quickly)
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
@pytest.mark.parametrize("n_events", slow_when([3, 2_000, 60_000], {60_000}))  # ~0.3 KB, ~250 KB, ~7 MB of events
def test_top_level_keys_after_trace_events(tmp_path, gz, n_events):
    """The end of traceEvents is found from the end of the file: other arrays
    after it (deviceProperties, with brackets and escaped quotes inside strings)
    must not be taken for it, whatever the size of the events array."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f'op"]{i}\\', "pid": 1, "tid": 1, "ts": i, "dur": 1,
               "args": {"Input Dims": [[i, 2]], "x": "}]"}} for i in range(n_events)]
    devices = [{"id": d, "name": 'NVIDIA A100-SXM4-80GB "]" [', "totalGlobalMem": 85e9, "numSms": 108}
               for d in range(8)]
    doc = {"schemaVersion": 1, "traceEvents": events, "deviceProperties": devices,
           "distributedInfo": {"rank": 5, "backend": "nccl", "ranks": [0, 5]},
           'odd "key" ]\\': [1, "]", {"a": "["}], "traceName": "t]"}
    data = json.dumps(doc, indent=1 if n_events == 2_000 else None).encode()
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    with duckprof.connect() as s:
        s.load([str(path)])
        assert rows(s, "SELECT count(*), max(name) FILTER (WHERE event_id = 1) FROM events") == [
            (n_events, 'op"]0\\')]
        assert rows(s, "SELECT rank, metadata->>'traceName' FROM traces") == [(5, "t]")]
        assert json.loads(rows(s, "SELECT metadata FROM traces")[0][0])['odd "key" ]\\'] == [1, "]", {"a": "["}]
        assert rows(s, "SELECT count(*), min(num_sms) FROM devices") == [(8, 108)]


@pytest.mark.parametrize("n_events", [3, 2_000])
def test_reverse_scan_names_the_closing_bracket_of_trace_events(n_events):
    """jsonscan.find_array_end itself, not only the load (which falls back to a slower
    forward scan when the reverse scan cannot decide): the arrays after
    traceEvents are skipped by their keys, which hold escaped quotes."""
    events = [{"ph": "X", "name": f'op"]{i}\\', "args": {"x": "}]"}} for i in range(n_events)]
    doc = {"traceEvents": events, "deviceProperties": [{"name": '"]" ['}],
           'odd "key" ]\\': [1, "]", {"a": "["}], "traceName": "t]"}
    data = json.dumps(doc).encode()
    expected = data.index(b', "deviceProperties"') - 1
    assert data[expected:expected + 1] == b"]"
    end, suffix = jsonscan.find_array_end(data, bare=False)
    assert end == expected
    assert suffix == {k: v for k, v in doc.items() if k != "traceEvents"}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("backslashes", [True, False])
def test_reverse_scan_skip_by_brackets_equals_the_token_walk(monkeypatch, seed, backslashes):
    """The reverse scan skips the budget behind the closing ']' by counting
    brackets (jsonscan._stays_inside) instead of a Python step per bracket,
    and before it the quick path (jsonscan._quick_array_end) counts them
    forward without reversing the window: on traces whose events hold
    brackets, escaped quotes (or no backslash at all: the quicker ways) and
    strings cut at the budget's edge, each must name the same bracket and
    suffix as the walk."""
    import random
    rnd = random.Random(seed)
    pieces = ['"]"', '"[{"', "[[1, 2], [3]]", "{}", '{"k": ["}"]}', "1.5"]
    names = ["y[", "z", "]{"]
    odd = {"deviceProperties": [{"id": 0}], "odd key ]": [1, "]", {"a": "["}]}
    if backslashes:
        pieces += [r'"\\"', r'"a\\\"]"']
        names += ['x"]']
        odd['odd "key" ]\\'] = odd.pop("odd key ]")

    def event(i):
        args = {f"a{k}": json.loads(rnd.choice(pieces)) for k in range(rnd.randrange(4))}
        return {"ph": "X", "name": rnd.choice(names) * rnd.randrange(1, 200), "ts": i, "args": args}
    answers, quick = [], []
    real, real_quick = jsonscan._stays_inside, jsonscan._quick_array_end
    monkeypatch.setattr(jsonscan, "_stays_inside", lambda *a: answers.append(real(*a)) or answers[-1])
    monkeypatch.setattr(jsonscan, "_quick_array_end", lambda *a: quick.append(real_quick(*a)) or quick[-1])
    for n_events in (0, 1, 50, 400, 3_000):
        events = [event(i) for i in range(n_events)]
        device = '"]" [' if backslashes else "] ["
        after = rnd.choice([{}, {"deviceProperties": [{"name": device}] * rnd.randrange(1, 300)}, odd])
        data = json.dumps({"schemaVersion": 1, "traceEvents": events, **after, "traceName": "t]"}).encode()
        assert backslashes or b"\\" not in data
        fast = jsonscan.find_array_end(data, bare=False)
        with monkeypatch.context() as m:  # the reversed scan alone
            m.setattr(jsonscan, "_quick_array_end", lambda *a: None)
            reverse = jsonscan.find_array_end(data, bare=False)
        with monkeypatch.context() as m:  # the walk alone
            m.setattr(jsonscan, "_quick_array_end", lambda *a: None)
            m.setattr(jsonscan, "_stays_inside", lambda *a: False)
            walk = jsonscan.find_array_end(data, bare=False)
        assert fast == reverse == walk, (seed, n_events)
        assert json.loads(data[:fast[0] + 1] + b"}")["traceEvents"] == events
    assert True in answers  # the big arrays were skipped by counting, not walked


@pytest.mark.parametrize("cut", range(4))
def test_quick_array_end_on_a_kineto_tail_equals_the_walk(monkeypatch, cut):
    """A trace as Kineto ends it (traceEvents, then a few scalar keys): the
    quick path (jsonscan._quick_array_end) names the closing ']' from the
    suffix and a forward count over the budget before it, whose start falls
    inside a string of closing or opening brackets, or not, or at a string's
    start (`cut` moves the events by a byte each); it gives the walk's answer, and so does a suffix with brackets in
    its strings. Cut by the file's whitespace at both ends too."""
    name = "[{" * 40 + "x" * cut + "}]" * 40
    events = [{"ph": "X", "name": name, "ts": i, "args": {"k": "]" * (i % 7), "l": [i, [i]]}} for i in range(2_000)]
    for suffix in ({"traceName": "/tmp/rank0.pt.trace.json", "displayTimeUnit": "ms",
                    "baseTimeNanoseconds": 1735689600000000000},
                   {"traceName": "t] [{", "x": {"y": "]"}}):
        data = b"\n" + json.dumps({"schemaVersion": 1, "traceEvents": events, **suffix}, indent=1).encode() + b"\n "
        start = data.index(b"[") + 1
        quick = jsonscan._quick_array_end(data, start, len(data.rstrip()))
        assert quick is not None
        got = jsonscan.find_array_end(data, bare=False, start=start)
        with monkeypatch.context() as m:
            m.setattr(jsonscan, "_quick_array_end", lambda *a: None)
            m.setattr(jsonscan, "_stays_inside", lambda *a: False)
            walk = jsonscan.find_array_end(data, bare=False, start=start)
        assert got == quick == walk
        assert walk[1] == suffix
        assert json.loads(data[:walk[0] + 1] + b"}")["traceEvents"] == events


def _outcome(fn, *args):
    """What fn(*args) returns, or the type and text of the error it raises."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - compared, not hidden
        return type(e).__name__, str(e)


@pytest.mark.parametrize("seed", range(4))
def test_array_start_by_brackets_equals_the_token_walk(monkeypatch, seed):
    """find_array_start finds '"traceEvents": [' by C-level scans
    (jsonscan._quick_array_start) when the text before it is plain, instead
    of a Python step per token: on metadata with brackets and quotes inside
    strings, escapes, nested or string-valued "traceEvents", a top-level
    object that closes early, or no array at all, the answer (or the error)
    must be the token walk's."""
    import random
    rnd = random.Random(seed)
    values = ['"]"', '"[{"', '"a}b"', "[[1, 2], [3]]", "{}", '{"k": ["}"]}', "1.5", '"traceEvents"',
              '{"traceEvents": [1]}', '"x\\"y"', '"\\u005b"', "null"]
    used = []
    real = jsonscan._quick_array_start
    monkeypatch.setattr(jsonscan, "_quick_array_start", lambda *a: used.append(real(*a)) or used[-1])
    for _ in range(300):
        keys = [f'"k{k}{rnd.choice(["", "[", "}", " {"])}": {rnd.choice(values)}' for k in range(rnd.randrange(6))]
        events = rnd.choice(['"traceEvents": [{"ph": "X"}, ', '"traceEvents" : [', '"traceEvents": 5, ', ""])
        spaces = rnd.choice(["", " ", "\n  "])
        data = ("{" + spaces + (", " + spaces).join(keys) + (", " if keys and events else "") + events
                + '{"ph": "i"}]}').encode()
        if rnd.random() < 0.1:
            data = b'{"a": 1} ' + data
        fast = _outcome(jsonscan.find_array_start, "t.json", data)
        with monkeypatch.context() as m:
            m.setattr(jsonscan, "_quick_array_start", lambda *a: None)
            walk = _outcome(jsonscan.find_array_start, "t.json", data)
        assert fast == walk, data
    assert sum(u is not None for u in used) > 20  # many were found the quick way
    assert None in used  # and the others by the walk


def _small_plain_traces(tmp_path) -> list:
    """Plain .json traces under 2 * split.BLOCK: corpus traces decompressed
    (real metadata and device properties), handmade ones, synthetic ranks,
    and odd shapes: arrays after traceEvents, a bare array, a byte order mark,
    a long whitespace tail, a truncated file, no traceEvents, not JSON."""
    out = []
    for name in ("a100_alexnet_train.json.gz", "mi250_rocm_train.json.gz", "sampled_rank0_no_devprops.json.gz",
                 "cpu_only_rank34.json.gz", "backward_thread_minimal.json"):
        src = corpus_path(name)
        data = gzip.decompress(src.read_bytes()) if name.endswith(".gz") else src.read_bytes()
        if len(data) <= 2 * split.BLOCK:
            out.append(tmp_path / name.replace(".gz", ""))
            out[-1].write_bytes(data)
    out += sorted(HANDMADE.glob("*.json"))
    rank = tmp_path / "rank3.json"
    synth.generate(str(rank), target_bytes=300_000, seed=3, rank=3, world_size=8)
    out.append(rank)
    events = [{"ph": "X", "name": f"op]{i}", "ts": i, "dur": 1, "args": {"x": "}]"}} for i in range(50)]
    odd = {
        "after.json": json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0, "name": "] ["}],
                                  "traceName": "t]"}).encode(),
        "bare.json": json.dumps(events).encode(),
        "bom.json": b"\xef\xbb\xbf" + json.dumps({"schemaVersion": 1, "traceEvents": events}).encode(),
        "spaces.json": json.dumps({"traceEvents": events}).encode() + b" \n" * 5000,
        "truncated.json": json.dumps({"traceEvents": events}).encode()[:-700],
        "no_events.json": json.dumps({"schemaVersion": 1, "deviceProperties": []}).encode(),
        "not_json.json": b"hello",
    }
    for name, data in odd.items():
        out.append(tmp_path / name)
        out[-1].write_bytes(data)
    return [str(p) for p in out]


def test_small_file_split_equals_the_stream(monkeypatch, tmp_path):
    """A plain file of at most 2 * BLOCK (the ranks of a big job) is split by
    split._split_small: read once, hashed from the same bytes, one chunk
    written from them. The chunk, the metadata, the hash and every other
    field (or the error) must be the streaming path's."""
    files = _small_plain_traces(tmp_path)
    used = []
    real = split._split_small
    monkeypatch.setattr(split, "_split_small", lambda *a: used.append(real(*a)) or used[-1])

    def split_and_read(path, out):
        os.makedirs(out, exist_ok=True)
        got = _outcome(split.split_trace, path, out, 4, True)
        if isinstance(got, split.SplitTrace):
            got.content_hash  # noqa: B018 - resolves a hashing thread
            got.chunks = [(os.path.basename(c), open(c, "rb").read()) for c in got.chunks]
        return got
    for path in files:
        fast = split_and_read(path, str(tmp_path / "fast"))
        with monkeypatch.context() as m:
            m.setattr(split, "_split_small", lambda *a: None)
            stream = split_and_read(path, str(tmp_path / "stream"))
        assert fast == stream, path
    assert sum(u is not None for u in used) >= 10  # split the quick way
    assert None in used  # the truncated file went on to the stream (salvaged there)


@pytest.mark.slow  # loads 7 traces (two of them big corpus files) twice
def test_traces_inserted_together_equal_traces_inserted_one_by_one(monkeypatch, tmp_path):
    """Small traces are inserted and nested in batches (load.BATCH_BYTES): every
    table must come out as when each trace is inserted alone. The files cover
    crossing events (with_stack), fractional absolute us (exact_ts.sql),
    baseTimeNanoseconds, three nesting levels, and two ranks whose threads have
    the same pid/tid and overlap in time."""
    from conftest import HANDMADE, corpus_path
    from duckprof import load
    rank1 = tmp_path / "nesting3_rank1.json"
    doc = json.loads((HANDMADE / "nesting3.json").read_text())
    for e in doc["traceEvents"]:
        e["ts"] += 1  # overlaps the original's events, starting 1 us later
    rank1.write_text(json.dumps(doc))
    files = [str(HANDMADE / f) for f in ("nesting3.json", "absolute_fractional.json", "fractional_base.json")]
    files.append(str(rank1))
    files += [str(corpus_path(f)) for f in ("b200_eager_stack.json.gz", "a100_nccl_train.json.gz",
                                             "backward_thread_minimal.json")]
    queries = {
        "events": "SELECT t.path, e.* EXCLUDE (trace_id) FROM events e JOIN traces t USING (trace_id)",
        "nesting": "SELECT t.path, n.event_id, n.parent_event_id, n.depth, n.self_ns, n.op_event_id "
                   "FROM events n JOIN traces t USING (trace_id) WHERE n.depth IS NOT NULL",
        "traces": "SELECT * EXCLUDE (trace_id, loaded_at) FROM traces",
        "devices": "SELECT t.path, d.* EXCLUDE (trace_id) FROM devices d JOIN traces t USING (trace_id)",
        "op_estimates": "SELECT * FROM op_estimates",
    }

    def tables(batch_bytes):
        monkeypatch.setattr(load, "BATCH_BYTES", batch_bytes)
        said = []
        with duckprof.connect() as s:
            s.con  # the session's loads then nest at load, batch by batch (not at first use)
            report = s.load(files, run="r", progress=said.append)
            return ([f.trace_id for f in report.files], [m for m in said if m.split()[1] == "nesting"],
                    {k: sorted(rows(s, q), key=repr) for k, q in queries.items()})

    default = load.BATCH_BYTES
    ids_alone, said_alone, alone = tables(0)
    ids_together, said_together, together = tables(default)
    assert ids_alone == ids_together == [1, 2, 3, 4, 5, 6, 7]
    assert len(said_alone) == 7 and said_together == ["[1-7/7] nesting 7 traces (nesting3.json, ...)"]
    assert len(together["nesting"]) > 20_000
    for k in queries:
        assert together[k] == alone[k], k


def test_chunk_files_are_removed_once_staged(tmp_path, monkeypatch):
    """A load of many big files must not hold a copy of all their JSON in the
    temp dir: each chunk file goes as soon as DuckDB has parsed it."""
    import tempfile
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(split, "MIN_CHUNK", 1 << 20)
    files = []
    for seed in range(3):
        files.append(str(tmp_path / f"rank{seed}.json"))
        synth.generate(files[-1], target_bytes=3_000_000, seed=seed)
    left = []

    def progress(msg):
        if " inserting " in msg:
            left.append(sorted(p.name for p in temp.rglob("*.json")))
    with duckprof.connect() as s:
        s.load(files, progress=progress)
        assert rows(s, "SELECT count(*) FROM traces") == [(3,)]
    assert left == [[]]  # one batch, nothing left when it is inserted
    assert list(temp.iterdir()) == []  # and the load's temp dir is gone


def test_progress_counts_files_and_bytes(tmp_path):
    """A load of several files says which file of how many it is at, and how many
    of the job's bytes it has read and parsed before it."""
    files = [tmp_path / "rank0.json", tmp_path / "rank1.json"]
    for seed, f in enumerate(files):
        synth.generate(str(f), target_bytes=400_000 * (seed + 1), seed=seed)
    sizes = [os.path.getsize(f) for f in files]
    said = []
    with duckprof.connect() as s:
        s.load([str(f) for f in files], run="r", progress=said.append)
    total = f"{sum(sizes) / 1e6:.1f} MB"
    assert sizes[0] > 300_000 and total == f"{sum(sizes) / 1e6:.1f} MB" != "0.0 MB"
    assert said[:4] == [f"[1/2] reading rank0.json, 0.0 of {total}",
                        f"[2/2] reading rank1.json, {sizes[0] / 1e6:.1f} of {total}",
                        f"[1/2] parsing rank0.json, 0.0 of {total}",
                        f"[2/2] parsing rank1.json, {sizes[0] / 1e6:.1f} of {total}"]


def test_exact_timestamps_of_every_chunk(tmp_path, monkeypatch):
    """Fractional absolute timestamps (no baseTimeNanoseconds) are read exactly
    from each chunk's text while it is staged (exact_ts.sql), numbered across
    chunks like the events: every ts_ns equals the Decimal value of the text,
    which a double at ~1.7e15 us misses by up to 125 ns."""
    import decimal
    path = str(tmp_path / "epoch.json")
    synth.generate(path, target_bytes=3_000_000, seed=5, serving=True, epoch_ts=True)
    monkeypatch.setattr(split, "MIN_CHUNK", 1 << 20)  # 3 MB -> 3 chunks
    assert len(split.split_trace(path, str(tmp_path), chunks=4).chunks) >= 3
    with open(path, "rb") as f:
        events = json.loads(f.read(), parse_float=decimal.Decimal)["traceEvents"]
    expected = [int(e["ts"] * 1000) for e in events]
    with duckprof.connect() as s:
        s.load([path])
        got = [t for (t,) in rows(s, "SELECT ts_ns FROM events ORDER BY event_id")]
    assert len(got) == len(expected)
    assert got == expected
    # the doubles alone are off for most events here
    assert sum(round(float(e["ts"]) * 1000) != x for e, x in zip(events, expected)) > len(events) / 4
