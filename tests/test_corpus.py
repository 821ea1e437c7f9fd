"""Every file of the real corpus loads, and what is stored matches an
independent reading of the file with Python's json module."""

from __future__ import annotations

import collections
import json
import re

import pytest

from conftest import (CORPUS, rows, scalar, canonical_cat, category_counts, corpus_files, needs_corpus,
                      read_trace, trace_events)

pytestmark = needs_corpus
NAMES = [p.name for p in corpus_files()] or ["<no corpus>"]


def test_every_corpus_file_loaded(corpus_session):
    s, ids, report = corpus_session
    assert sorted(ids) == sorted(NAMES)
    assert all(not f.skipped for f in report.files)
    # identical content in one run would be skipped: corpus_files() leaves copies out
    assert scalar(s, "SELECT count(*) FROM traces WHERE run = 'corpus'") == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_file_matches_json(corpus_session, name):
    s, ids, report = corpus_session
    doc = read_trace(CORPUS / name)
    events = trace_events(doc)
    expected = category_counts(events)
    got = dict(rows(s, "SELECT cat, count(*) FROM events WHERE trace_id = $t GROUP BY cat",
                     {"t": ids[name]}))
    assert got == expected
    assert sum(got.values()) == len(events)
    # per phase too (ph is stored as written)
    ph = collections.Counter(e.get("ph") for e in events)
    got_ph = dict(rows(s, "SELECT ph, count(*) FROM events WHERE trace_id = $t GROUP BY ph",
                        {"t": ids[name]}))
    assert got_ph == dict(ph)
    # the traces row
    (count, base, rank, meta, salvaged) = rows(s, 
        "SELECT event_count, base_time_ns, rank, metadata, salvaged_bytes FROM traces WHERE trace_id = $t",
        {"t": ids[name]})[0]
    assert count == len(events)
    assert salvaged == 0
    if isinstance(doc, dict):
        assert base == doc.get("baseTimeNanoseconds")
        info = doc.get("distributedInfo")
        if isinstance(info, dict) and "rank" in info:
            assert rank == int(info["rank"])
        else:  # e.g. mtia_inference_rank0: no distributedInfo, rank from the name
            m = re.search(r"rank(\d+)", name)
            assert rank == (int(m.group(1)) if m else None)
        stored = json.loads(meta)
        assert set(stored) == set(doc) - {"traceEvents"}
        n_dev = len(doc.get("deviceProperties") or [])
        assert scalar(s, "SELECT count(*) FROM devices WHERE trace_id = $t",
                     {"t": ids[name]}) == n_dev

    _check_columns(s, ids, name, events)


def _check_columns(s, ids, name, events):
    """Normalised columns against the file, event by event (in file order)."""
    got = rows(s, "SELECT name, cat_raw, pid_label, tid_label, correlation, external_id, flow_id "
                 "FROM events WHERE trace_id = $t ORDER BY event_id", {"t": ids[name]})
    assert len(got) == len(events)

    def label(v):
        return None if v is None else (v if isinstance(v, str) else json.dumps(v))

    def ext(e):
        a = e.get("args") or {}
        v = a.get("External id", a.get("external id"))
        return v if isinstance(v, int) else None

    expected = [(e.get("name"), e.get("cat"), label(e.get("pid")), label(e.get("tid")),
                 (e.get("args") or {}).get("correlation"), ext(e),
                 None if e.get("id") is None else str(e.get("id"))) for e in events]
    assert got == expected


def test_no_negative_durations_in_corpus(corpus_session):
    s, _, _ = corpus_session
    assert scalar(s, "SELECT count(*) FROM events WHERE dur_ns < 0") == 0
    assert scalar(s, "SELECT count(*) FROM events WHERE ph = 'X' AND (ts_ns IS NULL OR end_ns IS NULL)"
                 ) == 0


def test_legacy_spellings_are_canonical(corpus_session):
    s, ids, _ = corpus_session
    raw = dict(rows(s, """SELECT cat_raw, any_value(cat) FROM events
                          WHERE trace_id IN (SELECT unnest($t)) AND cat_raw IS NOT NULL GROUP BY 1""",
                    {"t": [ids["v100_resnet50_workers0_2021.json.gz"],
                           ids["legacy_categories_inference.json.gz"]]}))
    assert raw["Operator"] == "cpu_op"
    assert raw["Kernel"] == "kernel"
    assert raw["Runtime"] == "cuda_runtime"
    assert raw["Memcpy"] == "gpu_memcpy"
    assert raw["Memset"] == "gpu_memset"
    assert raw["async"] == "ac2g"
    assert raw["async_gpu"] == "ac2g"
    assert raw["Trace"] == "trace"
    # [memory] instants have no cat in 2021 traces
    n_mem = sum(1 for e in trace_events(read_trace(CORPUS / "v100_resnet50_workers0_2021.json.gz"))
                if e.get("name") == "[memory]" and "cat" not in e)
    assert n_mem == 12838
    assert scalar(s, "SELECT count(*) FROM events WHERE trace_id = $t AND cat = 'cpu_instant_event'",
                 {"t": ids["v100_resnet50_workers0_2021.json.gz"]}) == n_mem


def test_canonical_cat_helper_is_not_the_identity():
    # guard: the test's own mapping does map the legacy spellings
    assert canonical_cat({"cat": "Operator"}) == "cpu_op"
    assert canonical_cat({"cat": "gpu_user_Annotation"}) == "gpu_user_annotation"
    assert canonical_cat({"name": "[memory]"}) == "cpu_instant_event"
    assert canonical_cat({"name": "thread_name"}) is None
    assert canonical_cat({"cat": "Mystery"}) == "Mystery"
