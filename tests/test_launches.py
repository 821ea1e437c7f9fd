"""The launches view: kernel -> runtime call (correlation) -> cpu_op.

Expected links are computed here from the raw JSON: the runtime call with the
kernel's correlation; its cpu_op either by External id, or (in 2022-format
traces where a runtime call's External id is just its correlation) the
innermost cpu_op enclosing the runtime call in time on its thread.
"""

from __future__ import annotations

import collections
import decimal

import pytest

from conftest import canonical_cat, corpus_path, needs_corpus, read_trace, rows, trace_events

pytestmark = needs_corpus

RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}


def _ns(x):
    return int(decimal.Decimal(x) * 1000)


def _ext(e):
    a = e.get("args") or {}
    v = a.get("External id", a.get("external id"))
    return v if isinstance(v, int) else None


def enclosing_ops(events, wanted):
    """index -> index of the innermost cpu_op on the same thread that contains
    event `index` entirely (starts no later, ends no earlier, ends after it
    starts), for every index in `wanted`. Ops and wanted events are walked in
    (start, longer first, file order) order."""
    threads = collections.defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") != "X" or e.get("ts") is None:
            continue
        is_op = canonical_cat(e) == "cpu_op"
        if not is_op and i not in wanted:
            continue
        ts, dur = _ns(e["ts"]), _ns(e.get("dur", 0))
        threads[(str(e.get("pid")), str(e.get("tid")))].append((ts, -dur, i, ts + dur, is_op))
    out = {}
    for items in threads.values():
        items.sort()
        open_ops = []  # (end, index), in walk order
        for ts, negdur, i, end, is_op in items:
            open_ops = [o for o in open_ops if o[0] > ts]
            if i in wanted:
                key = end + (1 if negdur == 0 else 0)  # a zero-length event at an op's end is outside
                inside = [o for o in open_ops if o[0] >= key]
                out[i] = inside[-1][1] if inside else None
            if is_op:
                open_ops.append((end, i))
    return out


def expected_launches(events):
    """kernel index -> (runtime index or None, op index or None, op_link)."""
    runtime = {}
    for i, e in enumerate(events):
        c = (e.get("args") or {}).get("correlation")
        if e.get("ph") == "X" and canonical_cat(e) in RUNTIME_CATS and c is not None:
            runtime.setdefault(c, i)
    with_ext = [i for i in runtime.values() if _ext(events[i]) is not None]
    ext_is_corr = 2 * sum(1 for i in with_ext if _ext(events[i]) == events[i]["args"]["correlation"]) > len(with_ext)
    op_by_ext = {}
    for i, e in enumerate(events):
        if e.get("ph") == "X" and canonical_cat(e) == "cpu_op" and _ext(e) is not None:
            op_by_ext[_ext(e)] = i  # the view takes the last one (max event_id)
    enclosing = enclosing_ops(events, set(runtime.values()))
    out = {}
    for i, e in enumerate(events):
        if e.get("ph") != "X" or canonical_cat(e) != "kernel":
            continue
        r = runtime.get((e.get("args") or {}).get("correlation"))
        op, link = None, None
        if not ext_is_corr:
            ext = _ext(events[r]) if r is not None and _ext(events[r]) is not None else _ext(e)
            if ext in op_by_ext:
                op, link = op_by_ext[ext], "external_id"
        if op is None and r is not None and enclosing[r] is not None:
            op, link = enclosing[r], "enclosing"
        out[i] = (r, op, link)
    return out, ext_is_corr


# file: (kernels, kernels whose runtime call is in the trace, External id == correlation,
#        kernels per op_link). Counted independently with expected_launches() and
#        pinned here so a regression in either shows.
A100 = {
    "a100_alexnet_train.json.gz": (79, 79, True, {"enclosing": 79}),
    "a100_nccl_train.json.gz": (2700, 2700, False, {"external_id": 2700}),
    # 705 kernels were launched before the trace window; 90 launches are outside any cpu_op
    "a100_train_rank0.json.gz": (6080, 5375, True, {"enclosing": 5285, None: 795}),
    "a100_triton_kernel.json.gz": (1, 1, False, {"external_id": 1}),
    "sampled_rank0_no_devprops.json.gz": (1154, 1154, True, {"enclosing": 1138, None: 16}),
    "sampled_rank1_no_devprops.json.gz": (1104, 1104, True, {"enclosing": 1088, None: 16}),
    "tiny_compare_base.json.gz": (6, 2, True, {None: 6}),
    "tiny_compare_test.json.gz": (5, 1, True, {None: 5}),
}
OTHERS = ["b200_eager_stack.json.gz", "h100_vit_inference.json.gz", "mi250_rocm_train.json.gz",
          "mi300x_resnet_act_checkpoint.json.gz", "v100_resnet50_workers0_2021.json.gz",
          "legacy_categories_inference.json.gz", "backward_thread_minimal.json"]


def _check(corpus_session, name):
    s, ids, _ = corpus_session
    events = trace_events(read_trace(corpus_path(name)))
    expected, ext_is_corr = expected_launches(events)
    got = {eid - 1: (None if r is None else r - 1, None if o is None else o - 1, link)
           for eid, r, o, link in rows(s, """
               SELECT event_id, launch_event_id, op_event_id, op_link FROM launches
               WHERE trace_id = $t AND kind = 'kernel'""", {"t": ids[name]})}
    assert len(got) == len(expected)
    diff = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
    assert not diff, f"{len(diff)} kernels linked differently, e.g. {sorted(diff.items())[:3]}"
    return expected, ext_is_corr, got


@pytest.mark.parametrize("name", sorted(A100))
def test_a100_launch_links(corpus_session, name):
    n_kernels, n_with_runtime, ext_is_corr, by_link = A100[name]
    expected, corr_mode, got = _check(corpus_session, name)
    assert corr_mode == ext_is_corr
    assert len(got) == n_kernels
    # every kernel whose runtime call is in the trace finds it
    assert sum(1 for r, _, _ in got.values() if r is not None) == n_with_runtime
    assert dict(collections.Counter(link for _, _, link in got.values())) == by_link
    if ext_is_corr:
        # 2022 format: every kernel whose runtime call is inside a cpu_op gets that op
        enclosed = sum(1 for r, o, _ in expected.values() if r is not None and o is not None)
        assert by_link.get("enclosing", 0) == enclosed
    else:
        # every kernel whose runtime call has an External id finds its cpu_op by that id
        events = trace_events(read_trace(corpus_path(name)))
        ext_runtime = sum(1 for r, _, _ in expected.values() if r is not None and _ext(events[r]) is not None)
        assert by_link["external_id"] == ext_runtime == n_with_runtime


def test_a100_nccl_counts_by_hand(corpus_session):
    """Numbers for the README: every one of the 2700 kernels links by External id."""
    s, ids, _ = corpus_session
    got = dict(rows(s, "SELECT coalesce(op_link, 'none'), count(*) FROM launches "
                       "WHERE trace_id = $t AND kind = 'kernel' GROUP BY 1",
                    {"t": ids["a100_nccl_train.json.gz"]}))
    assert got == {"external_id": 2700}


@pytest.mark.parametrize("name", OTHERS)
def test_other_gpu_traces_launch_links(corpus_session, name):
    _check(corpus_session, name)


def test_memcpy_and_memset_are_launches(corpus_session):
    s, ids, _ = corpus_session
    name = "a100_alexnet_train.json.gz"
    kinds = dict(rows(s, "SELECT kind, count(*) FROM launches WHERE trace_id = $t GROUP BY 1",
                      {"t": ids[name]}))
    assert kinds == {"kernel": 79, "memcpy": 16, "memset": 3}
