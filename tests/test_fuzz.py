"""Random corruption of real traces: every outcome is a load, or a clear
error (TraceError / DuckprofError naming the file), never another exception,
and a failed load leaves the session as it was."""

from __future__ import annotations

import gzip
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import duckprof
from conftest import CORPUS, HANDMADE, read_bytes, rows

SMALL = ["a100_triton_kernel.json.gz", "tiny_compare_base.json.gz", "legacy_categories_inference.json.gz",
         "cpu_only_rank34.json.gz", "backward_thread_minimal.json", "mi250_rocm_train.json.gz"]
SOURCES = {}
for _name in SMALL:
    if (CORPUS / _name).exists():
        SOURCES[_name] = read_bytes(CORPUS / _name)
for _name in ("nesting3.json", "fractional_base.json"):
    SOURCES[_name] = (HANDMADE / _name).read_bytes()

JUNK = [b"\x00", b"\xff\xfe", b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"NaN", b"-Infinity", b"N/A",
        b"1e999", b"\n", b"\t", b'"ts": "x"', b"}, {", b"\x1f\x8b", b"\xc3", b"null", b"[]", b"{}"]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just(0)),
    st.tuples(st.just("delete"), st.floats(0, 1), st.integers(1, 64)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.integers(0, len(JUNK) - 1)),
)


def mutate(data: bytes, muts) -> bytes:
    b = bytearray(data)
    for kind, where, arg in muts:
        if not b:
            break
        i = min(int(where * len(b)), len(b) - 1)
        if kind == "flip":
            b[i] ^= arg
        elif kind == "truncate":
            del b[i:]
        elif kind == "delete":
            del b[i:i + arg]
        else:
            b[i:i] = JUNK[arg]
    return bytes(b)


_counter = itertools.count()


@pytest.fixture(scope="module")
def session():
    s = duckprof.connect()
    yield s
    s.close()


def _state(s):
    return rows(s, "SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM events), "
                   "(SELECT count(*) FROM events WHERE depth IS NOT NULL), (SELECT count(*) FROM devices)")[0]


def _try_load(s, path, salvage):
    before = _state(s)
    run = f"fuzz{next(_counter)}"
    try:
        rep = s.load([str(path)], run=run, salvage=salvage)
    except (duckprof.TraceError, duckprof.DuckprofError) as e:
        msg = str(e)
        assert str(path) in msg, msg
        assert "\n" not in msg.strip(), msg
        assert _state(s) == before
        return "error"
    n = rep.files[0].events
    assert rows(s, "SELECT count(*) FROM events WHERE trace_id = $t", {"t": rep.files[0].trace_id}) == [(n,)]
    assert rows(s, "SELECT event_count FROM traces WHERE run = $r", {"r": run}) == [(n,)]
    return "loaded"


@pytest.mark.slow  # 60 loads; the quick run has test_fuzz_reaches_both_outcomes
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(sorted(SOURCES)), muts=st.lists(mutation, min_size=1, max_size=4),
       gz=st.booleans(), salvage=st.booleans())
def test_corrupted_json(session, tmp_path_factory, source, muts, gz, salvage):
    data = mutate(SOURCES[source], muts)
    d = tmp_path_factory.mktemp("fz")
    path = d / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data, compresslevel=1, mtime=0) if gz else data)
    _try_load(session, path, salvage)


@pytest.mark.slow  # 40 loads
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(sorted(SOURCES)), muts=st.lists(mutation, min_size=1, max_size=3),
       salvage=st.booleans())
def test_corrupted_gzip_stream(session, tmp_path_factory, source, muts, salvage):
    """Corrupt the compressed bytes themselves (the 10-byte header is kept)."""
    gz = gzip.compress(SOURCES[source], compresslevel=6, mtime=0)
    path = tmp_path_factory.mktemp("fzgz") / "t.json.gz"
    path.write_bytes(gz[:10] + mutate(gz[10:], muts))
    _try_load(session, path, salvage)


def test_fuzz_reaches_both_outcomes(session, tmp_path):
    """Guard against a fuzz test that only ever sees one outcome."""
    src = SOURCES["nesting3.json"]
    good = tmp_path / "good.json"
    good.write_bytes(src.replace(b'"name": "G"', b'"name": "G2"'))
    bad = tmp_path / "bad.json"
    bad.write_bytes(mutate(src, [("insert", 0.5, JUNK.index(b"{"))]))
    assert _try_load(session, good, False) == "loaded"
    assert _try_load(session, bad, False) == "error"
