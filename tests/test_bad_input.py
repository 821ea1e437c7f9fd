"""Bad input: one clear line naming the file and the problem, exit code 2, no
traceback, and the database left exactly as it was. Merely unusual input
(NaN inside args, control characters, invalid UTF-8) loads, with a note."""

from __future__ import annotations

import gzip
import json

import pytest

import duckprof
from conftest import (HANDMADE, REPO, assert_one_line_error, cli_app, db_state, invoke, rows, run_cli,  # noqa: F401
                      scalar, slow_when)

GOOD = HANDMADE / "nesting3.json"
GOOD_TEXT = GOOD.read_bytes()
TINY = (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
        b'"ts": TS, "dur": DUR, "args": ARGS}]}')


def tiny(ts=b"1.5", dur=b"2", args=b"{}", name=None) -> bytes:
    t = TINY.replace(b"TS", ts).replace(b"DUR", dur).replace(b"ARGS", args)
    return t if name is None else t.replace(b'"name": "a"', b'"name": ' + name)


def named_ops(*names: bytes, args: bytes = b"{}") -> bytes:
    """A trace of one cpu_op per name (raw JSON string bytes), at ts 1, 3, 5, ...;
    the last one carries `args`."""
    events = [b'{"ph": "X", "cat": "cpu_op", "name": ' + n + b', "pid": 1, "tid": 1, "ts": %d, "dur": 1%s}'
              % (2 * i + 1, b', "args": ' + args if i == len(names) - 1 else b"")
              for i, n in enumerate(names)]
    return b'{"traceEvents": [' + b",".join(events) + b"]}"


def _flip_middle(data: bytes) -> bytes:
    b = bytearray(data)
    m = len(b) // 2
    for i in range(m, m + 16):
        b[i] ^= 0x5A
    return bytes(b)


GZ = gzip.compress(GOOD_TEXT, mtime=0)

# file name -> (content, substrings the error line must contain besides the file name)
CASES = {
    "empty.json": (b"", ["empty file"]),
    "blank.json": (b"  \n\t \n", ["empty"]),
    "words.json": (b"hello world\n", ["not JSON"]),
    "binary.json": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ["not JSON"]),
    "object.json": (b'{"a": 1}', ["not a trace"]),
    "numbers.json": (b"[1, 2, 3]", ["not a trace"]),
    "events_not_array.json": (b'{"traceEvents": 5}', ["not a trace", "traceEvents"]),
    "events_not_objects.json": (b'{"traceEvents": [{"ph": "i", "name": "x", "ts": 1}, "oops"]}', ["not a trace"]),
    "corrupt.json.gz": (_flip_middle(GZ), ["gzip"]),
    "truncated.json.gz": (GZ[: len(GZ) // 2], ["truncated", "--salvage"]),
    "gz_of_words.json.gz": (gzip.compress(b"hello"), ["not JSON"]),
    "truncated.json": (GOOD_TEXT[:900], ["truncated", "--salvage"]),
    "before_events.json": (b'{"schemaVersion": 1, "deviceProp', ["truncated"]),
    "na.json": (tiny(ts=b"N/A"), ["not valid JSON"]),
    "string_ts.json": (tiny(ts=b'"abc"'), ["event 1 of traceEvents", "ts or dur", "not a number", '"abc"']),
    "string_dur.json": (named_ops(b'"a"', b'"b"').replace(b'"dur": 1, "args"', b'"dur": "1 ms", "args"'),
                        ["event 2 of traceEvents", "ts or dur", '"1 ms"']),
    "nan_ts.json": (tiny(ts=b"NaN"), ["NaN", "'a'"]),
    "inf_ts.json": (tiny(ts=b"Infinity"), ["not a usable number"]),
    "inf_dur.json": (tiny(dur=b"-Infinity"), ["not a usable number"]),
    "huge_ts.json": (tiny(ts=b"1e300"), ["out of range"]),
    "no_ts.json": (tiny().replace(b'"ts": 1.5, ', b""), ["no ts", "'a'"]),
    "garbage_inside.json": (GOOD_TEXT.replace(b'"name": "C5"', b'"name": "C5" @@'), ["not valid JSON"]),
    "duplicate_key.json": (tiny().replace(b'"tid": 1', b'"tid": 1, "tid": 2'), ["duplicate key", "tid"]),
    "duplicate_args.json": (tiny().replace(b'"args": {}', b'"args": {}, "args": {"x": 1}'), ["duplicate key"]),
    "bad_metadata.json": (b'{"schemaVersion": 1, "x": [1,, "traceEvents": [{"ph":"i","ts":1}]}', ["not valid JSON"]),
}


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("baddb") / "runs.duckdb"
    with duckprof.connect(db) as s:
        s.load([str(GOOD)], run="keep")
    return db


@pytest.fixture(scope="module")
def api_session():
    """One in-memory session for the API half of test_bad_file: every load
    into it fails, so it must stay empty (one per case took 0.2 s each)."""
    with duckprof.connect() as s:
        yield s


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_file(cli_app, shared_db, api_session, tmp_path, name):
    content, words = CASES[name]
    path = tmp_path / name
    path.write_bytes(content)
    before = db_state(shared_db)
    r = invoke(cli_app, "load", path, "--db", shared_db, "--run", "bad")
    assert r.exit_code == 2, r.stdout + r.stderr
    line = assert_one_line_error(r.stderr, [str(path)] + words)
    assert line.startswith("duckprof: ")
    assert r.stdout == ""
    assert db_state(shared_db) == before
    # and the Python API raises TraceError naming the file
    s = api_session
    with pytest.raises(duckprof.TraceError) as ei:
        s.load([str(path)])
    assert ei.value.path == str(path) and str(path) in str(ei.value)
    assert scalar(s, "select count(*) from events") == 0


@pytest.mark.parametrize("args,words", [
    (["missing.json"], ["missing.json", "no such file"]),
    (["nothing_here"], ["nothing_here", "no trace files"]),
    (["*.nomatch.json"], ["*.nomatch.json", "no files match"]),
])
def test_bad_paths(cli_app, shared_db, tmp_path, monkeypatch, args, words):
    (tmp_path / "nothing_here").mkdir()
    (tmp_path / "nothing_here" / "readme.txt").write_text("not a trace")
    monkeypatch.chdir(tmp_path)
    before = db_state(shared_db)
    r = invoke(cli_app, "load", *args, "--db", shared_db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, words)
    assert db_state(shared_db) == before


def test_bad_file_among_good_ones_loads_nothing(cli_app, shared_db, tmp_path):
    bad = tmp_path / "second.json"
    bad.write_bytes(b"{nope")
    before = db_state(shared_db)
    r = invoke(cli_app, "load", HANDMADE / "fractional_base.json", bad, HANDMADE / "absolute_fractional.json",
               "--db", shared_db, "--run", "mixed")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "second.json")
    assert db_state(shared_db) == before


def test_directory_skips_json_that_is_no_trace(cli_app, shared_db, tmp_path):
    """A config or metrics JSON next to the traces is skipped with a note; a
    broken trace in the same directory still fails the load."""
    (tmp_path / "run" / "sub").mkdir(parents=True)
    (tmp_path / "run" / "sub" / "rank0.json").write_bytes(GOOD_TEXT)
    (tmp_path / "run" / "config.json").write_text('{"lr": 0.1, "steps": [1, 2]}')
    r = invoke(cli_app, "load", tmp_path / "run", "--db", shared_db, "--run", "with_config")
    assert r.exit_code == 0, r.stderr
    assert f"{tmp_path / 'run' / 'config.json'}: not a trace" in r.stdout
    with duckprof.connect(shared_db, read_only=True) as s:
        assert rows(s, "select count(*), min(path) from traces where run = 'with_config'") == [
            (1, str(tmp_path / "run" / "sub" / "rank0.json"))]
    (tmp_path / "run" / "truncated.json").write_bytes(GOOD_TEXT[:900])
    before = db_state(shared_db)
    r = invoke(cli_app, "load", tmp_path / "run", "--db", shared_db, "--run", "broken")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, ["truncated.json", "truncated"])
    assert db_state(shared_db) == before


def test_directory_of_json_without_traces_is_an_error(cli_app, shared_db, tmp_path):
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "a.json").write_text('{"loss": 1.5}')
    (tmp_path / "metrics" / "b.json.gz").write_bytes(gzip.compress(b'{"loss": 1.4}'))
    before = db_state(shared_db)
    r = invoke(cli_app, "load", tmp_path / "metrics", "--db", shared_db)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, [str(tmp_path / "metrics"), "no trace among 2 JSON file(s)", "a.json"])
    assert db_state(shared_db) == before


TORCH_OUTPUTS = REPO / "fixtures" / "sweep13" / "torch_outputs"  # record_torch_outputs.py


@pytest.mark.parametrize("name,words", [
    ("memory_timeline.json", ["not a trace", "JSON array of arrays", "export_memory_timeline"]),
    ("execution_trace.json", ["not a trace", "execution trace", "ExecutionTraceObserver"]),
    ("stacks.txt", ["not JSON", "export_stacks"]),
])
def test_torch_outputs_that_are_no_trace_are_named(cli_app, shared_db, name, words):
    """The other files torch.profiler writes (recorded by torch 2.13), handed to
    duckprof by mistake: one line saying which torch output it is, exit 2, the
    database untouched (the memory timeline's message spoke of a traceEvents
    array it does not have)."""
    path = TORCH_OUTPUTS / name
    before = db_state(shared_db)
    r = invoke(cli_app, "load", path, "--db", shared_db, "--run", "bad")
    assert r.exit_code == 2, r.stdout + r.stderr
    line = assert_one_line_error(r.stderr, [str(path)] + words + ["export_chrome_trace"])
    assert "traceEvents holds" not in line
    assert db_state(shared_db) == before


@pytest.mark.parametrize("text,words", [
    # rocprofv3 --output-format json (TraceLens's tests/rocprof/908_results.json.gz), cut down
    ('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 908, "command": ["python3.10", "train.py"]}}]}',
     ["rocprofv3's JSON output", "rocprofiler-sdk-tool", "export_chrome_trace"]),
    # TraceLens's tests/traces/tracediff_test/cpu_op_map_trace1.json: op -> kernel names
    ('{"aten::mm": ["ampere_sgemm"], "aten::add": ["vectorized_elementwise_kernel"], "aten::_softmax": [], '
     '"aten::addmm": [], "aten::bmm": []}',
     ["JSON object without a 'traceEvents' array", "(its keys: aten::_softmax, aten::add, aten::addmm, "
                                                   "aten::bmm and 1 more)"]),
    # a key holding a newline (test_fuzz's corruption of a real trace: the error was two lines)
    ('{"\\n": 1, "schemaVersion": 1}', ["JSON object without a 'traceEvents' array", '(its keys: "\\n", schemaVersion)']),
])
def test_other_json_objects_say_what_they_hold(cli_app, shared_db, tmp_path, text, words):
    """A JSON object that is no trace: another profiler's output is named, any
    other object shows its first keys (before: 'JSON object without a
    traceEvents array' alone, for a rocprofv3 file too)."""
    path = tmp_path / "other.json"
    path.write_text(text)
    before = db_state(shared_db)
    r = invoke(cli_app, "load", path, "--db", shared_db, "--run", "bad")
    assert r.exit_code == 2, r.stdout + r.stderr
    assert_one_line_error(r.stderr, [str(path), "not a trace"] + words)
    assert db_state(shared_db) == before


def test_directory_skips_torchs_other_outputs(cli_app, shared_db, tmp_path):
    """A trace directory holding the memory timeline and execution trace of the
    same program beside its trace loads the trace and names the two it skipped
    (the memory timeline, a JSON array, failed the whole load)."""
    d = tmp_path / "prof"
    d.mkdir()
    for name in ("trace.json", "memory_timeline.json", "execution_trace.json"):
        (d / name).write_bytes((TORCH_OUTPUTS / name).read_bytes())
    r = invoke(cli_app, "load", d, "--db", shared_db, "--run", "torch_outputs")
    assert r.exit_code == 0, r.stderr
    assert f"{d / 'memory_timeline.json'}: not a trace: a JSON array of arrays" in r.stdout
    assert f"{d / 'execution_trace.json'}: not a trace: a PyTorch execution trace" in r.stdout
    with duckprof.connect(shared_db, read_only=True) as s:
        assert rows(s, "select count(*), min(path) from traces where run = 'torch_outputs'") == [
            (1, str(d / "trace.json"))]


@pytest.mark.slow  # a real process
def test_real_process_prints_no_traceback(tmp_path):
    """The real entry point (not CliRunner): corrupt gzip, one line, exit 2."""
    path = tmp_path / "corrupt.json.gz"
    path.write_bytes(_flip_middle(GZ))
    r = run_cli("load", path)
    assert r.returncode == 2
    assert_one_line_error(r.stderr, [str(path), "gzip"])


# -- salvage --------------------------------------------------------------------

def complete_events(text: bytes) -> int:
    """Events that are complete in a truncated trace, counted with json.raw_decode."""
    s = text.decode("utf-8", "replace")
    i = s.index("[", s.index('"traceEvents"')) + 1
    dec = json.JSONDecoder()
    n = 0
    while True:
        while i < len(s) and s[i] in " \t\r\n,":
            i += 1
        try:
            _, i = dec.raw_decode(s, i)
        except ValueError:
            return n
        n += 1


AFTER_B2 = GOOD_TEXT.index(b"},", GOOD_TEXT.index(b'"name": "B2"')) + 2  # right after "...},"


# the quick run: a cut inside an event and one right after an event's comma
@pytest.mark.parametrize("cut", slow_when([700, 1200, AFTER_B2, len(GOOD_TEXT) - 120], {1200, len(GOOD_TEXT) - 120}))
def test_salvage_truncated_json(tmp_path, cut):
    path = tmp_path / "cut.json"
    path.write_bytes(GOOD_TEXT[:cut])
    expected = complete_events(GOOD_TEXT[:cut])
    assert 0 < expected < 19
    with duckprof.connect() as s:
        rep = s.load([str(path)], salvage=True)
        assert scalar(s, "select count(*) from events") == expected
        assert scalar(s, "select event_count from traces") == expected
        dropped = scalar(s, "select salvaged_bytes from traces")
        partial = GOOD_TEXT[:cut].rstrip(b" \n,")
        assert (dropped == 0) == partial.endswith(b"}")
        # the events kept are the first ones of the file, intact
        names = [n for (n,) in rows(s, "select name from events order by event_id")]
        assert names == [e["name"] for e in json.loads(GOOD_TEXT)["traceEvents"][:expected]]
    note = rep.summary()
    assert "salvaged" in note and str(path) in note
    if dropped:
        assert f"loaded {expected:,} complete events, dropped the last {dropped:,} bytes" in note
    else:
        assert "nothing dropped" in note


def test_salvage_truncated_gzip(cli_app, tmp_path):
    big = json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10 + 0.5, "dur": 5}
        for i in range(3000)]}).encode()
    gz = gzip.compress(big, mtime=0)
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gz[: len(gz) * 2 // 3])
    # what an independent decoder can still read from the cut stream
    import zlib
    readable = zlib.decompressobj(31).decompress(gz[: len(gz) * 2 // 3])
    expected = complete_events(readable)
    assert 100 < expected < 3000
    r = invoke(cli_app, "load", path)
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, [str(path), "--salvage"])
    r = invoke(cli_app, "load", path, "--salvage")
    assert r.exit_code == 0, r.stderr
    assert f"loaded {expected:,} complete events" in r.stdout


@pytest.mark.parametrize("reader", ["isal", "stdlib"])
def test_data_appended_after_a_gzip_stream_is_ignored_with_a_note(tmp_path, monkeypatch, reader):
    """`gzip -d` decompresses such a file and warns; isal's reader called it a
    truncated stream, the stdlib's a bad header."""
    if reader == "stdlib":
        from duckprof import split
        monkeypatch.setattr(split, "_gzip", gzip)
    n = len(json.loads(GOOD_TEXT)["traceEvents"])
    # two members (as pigz or `cat a.gz b.gz` make) then 9 bytes of junk
    half = len(GOOD_TEXT) // 2
    path = tmp_path / "appended.json.gz"
    path.write_bytes(gzip.compress(GOOD_TEXT[:half], mtime=0) + gzip.compress(GOOD_TEXT[half:], mtime=0)
                     + b"junk\n1234")
    with duckprof.connect() as s:
        rep = s.load([str(path)])
        assert scalar(s, "select count(*) from events") == n
    assert f"{path}: 9 byte(s) after the end of the gzip stream ignored" in rep.summary()
    # a second member cut short is still a truncated file
    cut = tmp_path / "cut_member.json.gz"
    second = gzip.compress(GOOD_TEXT[half:], mtime=0)
    cut.write_bytes(gzip.compress(GOOD_TEXT[:half], mtime=0) + second[: len(second) // 2])
    with duckprof.connect() as s, pytest.raises(duckprof.TraceError, match="truncated"):
        s.load([str(cut)])


def test_salvage_on_cli(cli_app, tmp_path):
    path = tmp_path / "cut.json"
    path.write_bytes(GOOD_TEXT[:1500])
    r = invoke(cli_app, "query", "select count(*) as n from events", path, "--salvage", "-f", "csv")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["n", str(complete_events(GOOD_TEXT[:1500]))]


# -- unusual but loadable ----------------------------------------------------------

def test_nan_and_inf_inside_args_load(tmp_path):
    path = tmp_path / "nan_args.json"
    path.write_bytes(tiny(args=b'{"x": NaN, "y": Infinity, "z": -Infinity, "w": 1}'))
    with duckprof.connect() as s:
        s.load([str(path)])
        assert rows(s, "select name, ts_ns, dur_ns, args->>'w' from events") == [("a", 1500, 2000, "1")]


def test_metadata_without_ts_loads(tmp_path):
    """Only timed events need a ts (no_ts.json above): Kineto's metadata ('M') often has none."""
    path = tmp_path / "meta.json"
    path.write_bytes(tiny().replace(b'{"ph": "X"', b'{"ph": "M", "name": "process_name", "pid": 1, '
                                                  b'"args": {"name": "python"}}, {"ph": "X"'))
    with duckprof.connect() as s:
        s.load([str(path)])
        assert rows(s, "select ph, name, ts_ns from events order by event_id") == [
            ("M", "process_name", None), ("X", "a", 1500)]


def test_pid_beyond_integer_is_no_device(tmp_path):
    """A pid out of INTEGER's range (2^40 on a kernel, 2^53 + 1 on a host op) is no
    GPU index: the kernel has no device, and reports run (they failed on the cast)."""
    path = tmp_path / "big_pid.json"
    path.write_bytes(
        b'{"traceEvents": ['
        b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 9007199254740993, "tid": 1, "ts": 1, "dur": 5,'
        b' "args": {"External id": 7}},'
        b'{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9007199254740993, "tid": 1,'
        b' "ts": 2, "dur": 1, "args": {"External id": 7, "correlation": 9}},'
        b'{"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 1099511627776, "tid": 7, "ts": 4, "dur": 3,'
        b' "args": {"External id": 7, "correlation": 9, "stream": 7}}]}')
    with duckprof.connect() as s:
        s.load([str(path)])
        assert rows(s, "select name, device, stream, dur_ns from kernels") == [("add_kernel", None, 7, 3000)]
        assert rows(s, "select name, count, total_us from (%s)" % s.report("kernels").sql_query()) == [
            ("add_kernel", 1, 3.0)]
        assert rows(s, "select name, device_total_us from (%s)" % s.report("ops").sql_query()
                    + " where name = 'aten::add'") == [("aten::add", 3.0)]


def test_control_characters_and_invalid_utf8(cli_app, tmp_path):
    path = tmp_path / "odd_names.json"
    path.write_bytes(named_ops(b'"ctl\x01x"', b'"bad\xff\xfeutf8"', b'"tab\there"', b'"caf\xc3\xa9 ok"'))
    with duckprof.connect() as s:
        rep = s.load([str(path)])
        names = [n for (n,) in rows(s, "select name from events order by event_id")]
    assert names == ["ctl\x01x", "bad\ufffd\ufffdutf8", "tab here", "café ok"]
    text = rep.summary()
    assert "2 invalid UTF-8 sequence(s) replaced by U+FFFD" in text
    assert "1 raw control character(s) in strings escaped" in text
    assert str(path) in text
    r = invoke(cli_app, "load", path)
    assert r.exit_code == 0
    assert "invalid UTF-8" in r.stdout and str(path) in r.stdout


def test_torch_verbose_trace_with_invalid_utf8():
    """torch 2.13's verbose mode (experimental_config verbose=True) writes some
    Call stack args from freed memory: this recorded file
    (fixtures/torch_verbose/record_verbose.py) holds 120 invalid UTF-8
    sequences, on which torch's own key_averages() raises UnicodeDecodeError.
    duckprof loads it with a note, keeps every event (against Python's json of
    the text decoded with replacement characters), and groups its operators by
    stack."""
    path = REPO / "fixtures" / "torch_verbose" / "verbose_stack.json.gz"
    events = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8", "replace"), strict=False)["traceEvents"]
    damaged = sum("\ufffd" in e.get("args", {}).get("Call stack", "") for e in events)
    assert (len(events), damaged) == (578, 24)
    with duckprof.connect() as s:
        rep = s.load([str(path)])
        assert sorted(n for (n,) in rows(s, "select name from events")) == sorted(e["name"] for e in events)
        assert rows(s, "select count(*) from events where contains(args->>'Call stack', '\ufffd')") == [(damaged,)]
        by_stack = s.report_result("ops", group_by_stack=5)
        assert len(by_stack.relation.fetchall()) == 30
    assert "120 invalid UTF-8 sequence(s) replaced by U+FFFD" in rep.summary()


def test_only_invalid_utf8(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(tiny(name=b'"M\xfcller"'))
    with duckprof.connect() as s:
        rep = s.load([str(path)])
        assert rows(s, "select name from events") == [("M\ufffdller",)]
    assert "1 invalid UTF-8 sequence(s)" in rep.summary()


def test_unpaired_surrogate_escapes_load_as_replacement_characters(tmp_path):
    """Python's json reads a lone \\uD800-\\uDFFF escape; DuckDB rejects it. A pair
    stays an emoji, and an escaped backslash before 'ud800' stays text."""
    path = tmp_path / "surrogates.json"
    path.write_bytes(named_ops(rb'"hi\ud800"', rb'"\udc00lo"', rb'"\ud83d\ude00"',
                               args=rb'{"path": "C:\\ud800", "s": "\udbff"}'))
    with duckprof.connect() as s:
        rep = s.load([str(path)])
        got = rows(s, "select name, args->>'path', args->>'s' from events order by event_id")
    assert got == [("hi\ufffd", None, None), ("\ufffdlo", None, None),
                   ("\U0001F600", "C:\\ud800", "\ufffd")]
    assert "3 unpaired UTF-16 surrogate escape(s) replaced by \\ufffd" in rep.summary()


def test_empty_trace_loads(tmp_path):
    for name, text in [("no_events.json", b'{"traceEvents": [], "schemaVersion": 1}'), ("bare.json", b"[]")]:
        path = tmp_path / name
        path.write_bytes(text)
        with duckprof.connect() as s:
            rep = s.load([str(path)])
            assert rep.files[0].events == 0
            assert scalar(s, "select count(*) from traces") == 1


# -- files above 16 MB take the loader's fast path (kernel copy of byte ranges) ---

@pytest.fixture(scope="module")
def big_plain(tmp_path_factory):
    from duckprof import synth
    from duckprof.split import BLOCK
    path = tmp_path_factory.mktemp("big") / "big.json"
    synth.generate(path, target_bytes=2 * BLOCK + (1 << 20), seed=1)
    data = path.read_bytes()
    assert len(data) > 2 * BLOCK
    return path, data, len(json.loads(data)["traceEvents"])


@pytest.mark.slow  # a 17 MB file
def test_big_plain_file_loads(big_plain):
    path, data, n = big_plain
    with duckprof.connect() as s:
        s.load([str(path)])
        assert scalar(s, "select count(*) from events") == n
        assert scalar(s, "select json_bytes from traces") == len(data)


@pytest.mark.slow  # four loads of 8 to 17 MB files
def test_big_plain_file_bad_inputs(big_plain, tmp_path):
    _, data, n = big_plain
    mid = data.index(b'"name": "', len(data) // 2) + len(b'"name": "')
    junk = tmp_path / "junk.json"
    junk.write_bytes(data[:mid] + b'"@@' + data[mid:])
    trunc = tmp_path / "trunc.json"
    trunc.write_bytes(data[:len(data) // 2])
    utf8 = tmp_path / "utf8.json"
    utf8.write_bytes(data[:mid] + b"\xff" + data[mid:])
    with duckprof.connect() as s:
        with pytest.raises(duckprof.TraceError) as ei:
            s.load([str(junk)])
        assert str(junk) in str(ei.value) and "not valid JSON" in str(ei.value)
        with pytest.raises(duckprof.TraceError) as ei:
            s.load([str(trunc)])
        assert str(trunc) in str(ei.value) and "--salvage" in str(ei.value)
        assert scalar(s, "select count(*) from traces") == 0
        rep = s.load([str(trunc)], salvage=True, run="salvaged")
        assert rep.files[0].events == complete_events(data[:len(data) // 2])
        rep = s.load([str(utf8)], run="utf8")
        assert rep.files[0].events == n
        assert "1 invalid UTF-8 sequence(s) replaced by U+FFFD" in rep.summary()
        assert scalar(s, "select count(*) from events where name like '\ufffd%'") == 1


def test_directory_skips_json_arrays_of_records(cli_app, shared_db, tmp_path):
    """A JSON list of records beside the traces (a metrics log, a dump of
    key_averages() or of torch's step ranges, fixtures/sweep13/schedule) is no
    trace: its objects have no 'ph'. It was loaded as a trace of events with no
    name and no time, one more trace in the run; now it is skipped with a note,
    and named when given alone."""
    d = tmp_path / "prof"
    d.mkdir()
    (d / "trace.json").write_bytes((TORCH_OUTPUTS / "trace.json").read_bytes())
    (d / "metrics.json").write_text('[{"step": 1, "loss": 2.5}, {"step": 2, "loss": 2.1}]')
    r = invoke(cli_app, "load", d, "--db", shared_db, "--run", "with_records")
    assert r.exit_code == 0, r.stderr
    assert (f"{d / 'metrics.json'}: not a trace: a JSON array of objects that are not trace events "
            "(the first has no 'ph'; its keys: step, loss)") in r.stdout
    with duckprof.connect(shared_db, read_only=True) as s:
        assert rows(s, "select count(*), min(path) from traces where run = 'with_records'") == [
            (1, str(d / "trace.json"))]
    before = db_state(shared_db)
    r = invoke(cli_app, "load", d / "metrics.json", "--db", shared_db, "--run", "records")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, [str(d / "metrics.json"), "not a trace", "no 'ph'"])
    assert db_state(shared_db) == before


def test_a_ts_that_is_no_number_in_a_file_of_several_chunks_is_not_numbered():
    """DuckDB counts the events of the chunk it read: in a file of several
    chunks (over 96 MB), its number is not the event's in the file, so the
    error names the problem without it."""
    from types import SimpleNamespace

    from duckprof.load import Loader
    e = Exception('Conversion Error: JSON transform error in record/value 5: Failed to cast value to numerical: "x"')
    one = SimpleNamespace(chunks=["/tmp/t.0000.json"])
    two = SimpleNamespace(chunks=["/tmp/t.0000.json", "/tmp/t.0001.json"])
    assert Loader._describe(e, one) == 'event 5 of traceEvents has a ts or dur that is not a number: "x"'
    assert Loader._describe(e, two) == 'an event has a ts or dur that is not a number: "x"'


def test_a_duckdb_database_given_as_a_trace_says_so(cli_app, tmp_path):
    """A database file where a trace is expected (duckprof diff a.duckdb b.duckdb,
    report kernels runs.duckdb) says what it is and how to pass it (before: only
    'not JSON: the file does not start with '{' or '['')."""
    import duckdb
    db = tmp_path / "runs.duckdb"
    duckdb.connect(str(db)).close()
    for args in (("diff", db, db), ("report", "kernels", db)):
        r = invoke(cli_app, *args)
        assert r.exit_code == 2, r.stdout + r.stderr
        assert_one_line_error(r.stderr, [str(db), "not JSON", "it is a DuckDB database: pass it with --db FILE"])
