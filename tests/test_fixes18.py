"""fixes18: torch.profiler traces recorded with torch 2.13 on CPU
(fixtures/fixes18/record_fixes18.py; fixtures/sweep16/gloo_p2p_3) against torch's
own key_averages() of the same profile and against the raw events read with
Python's json."""

from __future__ import annotations

import json
import re

import pytest

import duckprof
from conftest import CORPUS, REPO, needs_corpus, read_trace

FIX = REPO / "fixtures" / "fixes18"
P2P = [REPO / "fixtures" / "sweep16" / "gloo_p2p_3" / f"rank{r}.json.gz" for r in range(3)]


def ops_rows(path, **options):
    with duckprof.connect() as s:
        s.load([str(path)])
        res = s.report_result("ops", limit=0, **options)
        return ({r[0]: r[1:] for r in res.relation.select("name, count, self_cpu_us, cpu_total_us").fetchall()},
                list(res.notes))


@pytest.mark.parametrize("rank", [0, 1])
def test_top_level_only_sees_through_gloo_annotations(rank):
    """A call whose only enclosing range is a c10d Work annotation (gloo:*,
    async in torch: no one's parent) is top-level in torch; duckprof counted
    the annotation as its parent and left aten::view, select, copy_ and cat out
    of --top-level-only. Expected: the names torch's key_averages() gives no
    cpu_parent (recorded beside the trace), no more, no fewer."""
    theirs = json.loads((FIX / "gloo_top_2" / f"rank{rank}.key_averages.json").read_text())
    mine, _ = ops_rows(FIX / "gloo_top_2" / f"rank{rank}.json.gz", top_level_only=True)
    assert set(mine) == {t["key"] for t in theirs if t["top_level"]}
    assert {"aten::view", "aten::copy_", "aten::cat"} <= set(mine)


def _torch_top_level(path):
    """The names whose first event (in start order, longer first) has no parent
    in torch's tree: _populate_cpu_children's stack walk over the raw host
    events of each thread, async ones (gloo:*) left out and always top-level."""
    ev = [e for e in read_trace(path)["traceEvents"]
          if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    is_async = [e["cat"] == "user_annotation" and e["name"].startswith("gloo:") for e in ev]
    parent = {}
    by_thread = {}
    for i, e in enumerate(ev):
        if not is_async[i]:
            by_thread.setdefault((e["pid"], e["tid"]), []).append(i)
    for idx in by_thread.values():
        stack = []
        for i in sorted(idx, key=lambda i: (ev[i]["ts"], -(ev[i]["ts"] + ev[i]["dur"]))):
            s, e_ = ev[i]["ts"], ev[i]["ts"] + ev[i]["dur"]
            while stack and (s >= ev[stack[-1]]["ts"] + ev[stack[-1]]["dur"]
                             or e_ > ev[stack[-1]]["ts"] + ev[stack[-1]]["dur"]):
                stack.pop()
            if stack:
                parent[i] = stack[-1]
            stack.append(i)
    first = {}
    for i in sorted(range(len(ev)), key=lambda i: (ev[i]["ts"], -(ev[i]["ts"] + ev[i]["dur"]))):
        first.setdefault(ev[i]["name"], i)
    return {n for n, i in first.items() if i not in parent}


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_top_level_only_on_gloo_p2p_as_torch_stack_walk(rank):
    """The same on sweep16's 3-rank gloo job (whose key_averages goldens carry
    no parent): the names torch's tree building makes top-level, from the raw
    events."""
    mine, _ = ops_rows(P2P[rank], top_level_only=True)
    assert set(mine) == _torch_top_level(P2P[rank])


@pytest.mark.parametrize("stem", ["cross_thread", "still_open"])
def test_unfinished_record_function_is_async_as_in_torch(stem):
    """A record_function entered inside 'outer' and not ended on its thread
    while profiling: ended on a worker thread (cross_thread) or after the
    profiler stopped (still_open). The trace writes '"finished": false' and a
    duration to the profiler's stop, crossing 'outer', which the nesting then
    closed at its start. duckprof gave it self CPU time (cross_thread: 12.0 ms;
    torch: 0), outer its whole duration (20.9 ms; torch: 2.48 ms, the mm inside
    it being its child) and listed aten::mm as top-level. Expected: torch's
    key_averages() (recorded beside the trace) for every row's calls, self and
    total CPU time and top-level flag, but the unfinished range's total, which
    the trace cannot tell (duckprof keeps the trace's and says so in a note)."""
    path = FIX / f"{stem}.json.gz"
    theirs = {t["key"]: t for t in json.loads((FIX / f"{stem}.key_averages.json").read_text())}
    mine, notes = ops_rows(path)
    assert set(mine) == set(theirs)
    raw = next(e for e in read_trace(path)["traceEvents"] if e.get("name") == stem)
    assert raw["args"]["finished"] is False
    for key, t in theirs.items():
        total = raw["dur"] if key == stem else t["cpu_us"]
        assert mine[key] == (t["count"], pytest.approx(t["self_cpu_us"], abs=0.01),
                             pytest.approx(total, abs=0.01)), key
    assert mine[stem][2] > theirs[stem]["cpu_us"]  # to the profiler's stop
    top, _ = ops_rows(path, top_level_only=True)
    assert set(top) == {k for k, t in theirs.items() if t["top_level"]}
    assert [n for n in notes if "finished" in n] == [
        f"{stem}.json.gz: 1 record_function range(s) not ended on their thread while profiling ('finished': false: "
        "ended on another thread, or still open at the stop): the trace gives them the profiler's stop as end, so "
        "their CPU total is longer than torch's; as in torch, they have no self CPU time and the calls inside them "
        "are their enclosing range's"]


@pytest.mark.parametrize("stem", ["cross_thread", "still_open"])
def test_stored_nesting_of_an_unfinished_range_is_torchs(stem):
    """The stored nesting (events.parent_event_id, self_ns, depth), which
    cpu_ops, user_annotations and every view and report over them read, not
    report ops alone: the unfinished range is flagged, has no parent, no
    children and self time 0, and 'outer', which it crosses, keeps the calls
    after its start (before, the nesting closed it there: self 20.9 ms in
    cross_thread for torch's 2.48). Expected: per name, the calls and summed
    self CPU time of the views equal torch's key_averages() (recorded beside
    the trace), and the names whose first call is at depth 0 are those torch
    gives no parent (key_averages' cpu_parent: its first event's)."""
    theirs = {t["key"]: t for t in json.loads((FIX / f"{stem}.key_averages.json").read_text())}
    with duckprof.connect() as s:
        s.load([str(FIX / f"{stem}.json.gz")])
        mine = {n: (c, us, top) for n, c, us, top in s.sql("""
            SELECT name, count(*), sum(self_ns) / 1e3, arg_min(depth = 0, (ts_ns, -end_ns))
            FROM (SELECT name, self_ns, depth, ts_ns, end_ns FROM cpu_ops
                  UNION ALL SELECT name, self_ns, depth, ts_ns, end_ns FROM user_annotations)
            GROUP BY name""").fetchall()}
        flagged = s.sql("SELECT name, parent_event_id, depth, self_ns FROM user_annotations WHERE unfinished").fetchall()
        kids = s.sql("SELECT count(*) FROM events e JOIN user_annotations u ON u.trace_id = e.trace_id "
                     "AND u.event_id = e.parent_event_id WHERE u.unfinished").fetchall()
    assert flagged == [(stem, None, 0, 0)] and kids == [(0,)]
    assert set(mine) == set(theirs)
    for key, t in theirs.items():
        assert mine[key] == (t["count"], pytest.approx(t["self_cpu_us"], abs=0.01), t["top_level"]), key


def _torch_rows(path):
    """Per (name, is annotation): calls and self CPU µs by torch's rules over the
    raw host events: the tree of _populate_cpu_children with async events left
    out (c10d's gloo:*, nccl:*, ... annotations, '"finished": false' ranges:
    torch's is_async, start and end threads differ), _filter_name's names
    dropped, _remove_dup_nodes' merge (same name, only child), self = duration
    - the children's (0 for an async event)."""
    dropped = {"[memory]", "[OutOfMemory]", "profiler::_record_function_enter", "aten::is_leaf",
               "profiler::_record_function_enter_new", "profiler::_record_function_exit", "aten::output_nr",
               "aten::_version"}
    host = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver", "mtia_runtime"}
    ev = [dict(e) for e in read_trace(path)["traceEvents"]
          if e.get("ph") == "X" and e.get("cat") in host and e.get("name") not in dropped and "dur" in e]
    for i, e in enumerate(ev):
        e.update(i=i, end=e["ts"] + e["dur"], kids=[], parent=None,
                 is_async=e["cat"] == "user_annotation"
                 and (re.match(r"(gloo|nccl|mpi|ucc|xccl|hccl):", e["name"]) is not None
                      or e.get("args", {}).get("finished") is False))
    order = sorted(ev, key=lambda e: (e["ts"], -e["end"]))
    stacks = {}
    for e in order:
        if e["is_async"]:
            continue
        stack = stacks.setdefault((e["pid"], e["tid"]), [])
        while stack and (e["ts"] >= stack[-1]["end"] or e["end"] > stack[-1]["end"]):
            stack.pop()
        if stack:
            e["parent"] = stack[-1]
            stack[-1]["kids"].append(e)
        stack.append(e)
    merged = set()
    for e in order:
        p = e["parent"]
        if p is not None and p["name"] == e["name"] and len(p["kids"]) == 1:
            p["kids"] = e["kids"]
            for k in e["kids"]:
                k["parent"] = p
            merged.add(e["i"])
    rows = {}
    for e in ev:
        if e["i"] not in merged:
            key = ("ProfilerStep*" if e["name"].startswith("ProfilerStep#") else e["name"],
                   e["cat"] == "user_annotation")
            r = rows.setdefault(key, [0, 0.0])
            r[0] += 1
            r[1] += 0 if e["is_async"] else e["dur"] - sum(k["dur"] for k in e["kids"])
    return rows


@needs_corpus
def test_unfinished_ranges_of_a_serving_trace_as_torch_builds_its_tree():
    """The corpus' MTIA serving trace holds 9 record_functions still open at the
    profiler's stop ('"finished": false'), some inside others (runRemote >
    FBAPredictorExecutor-run-remote.forward), some crossing the runtime range
    around them. duckprof gave 9 rows other self CPU times than torch's rules
    (Stage::PyTorchMRSGIFTask::run 18.6 ms for 1.51 ms, gif_merge 23.7 ms for
    40.8 ms, ...). Expected: every row's calls and self CPU time as torch's
    tree over the raw events gives them (_torch_rows)."""
    path = CORPUS / "mtia_inference_rank0.json.gz"
    theirs = _torch_rows(path)
    with duckprof.connect() as s:
        s.load([str(path)])
        mine = {(n, k == "user_annotation"): (c, us) for n, k, c, us in s.report("ops", limit=0)
                .select("name, kind, count, self_cpu_us").fetchall()
                if k in ("cpu_op", "user_annotation", "python_function", "runtime")}
    assert len(theirs) == 60 and set(mine) == set(theirs)
    for key, (count, self_us) in theirs.items():
        assert mine[key] == (count, pytest.approx(self_us, abs=0.05)), key


def test_gloo_size_note_speaks_of_annotations_not_kernels():
    """gloo's non-root scatters (ranks 1 and 2) record no size: their gloo:scatter
    annotation, on gloo's thread, has no Input Dims (the tensors are on the
    calling thread's c10d::scatter_). The note said '2 of 51 communication
    kernels record no message size (In/Out msg nelems and dtype, on the kernel
    or its record_param_comms)': gloo has neither kernels nor
    record_param_comms. Expected: a count of the gloo:* annotations without
    Input Dims (raw events) over all of them, in a note naming the annotation."""
    ann = [e for p in P2P for e in read_trace(p)["traceEvents"]
           if e.get("ph") == "X" and e.get("name", "").startswith("gloo:") and e["name"] != "gloo:barrier"]
    missing = [e for e in ann if not e.get("args", {}).get("Input Dims")]
    assert [e["name"] for e in missing] == ["gloo:scatter", "gloo:scatter"]
    with duckprof.connect() as s:
        s.load([str(p) for p in P2P], run="p2p")
        notes = s.report_result("collectives").notes
    assert [n for n in notes if "no message size" in n] == [
        f"{len(missing)} of {len(ann)} gloo collectives record no message size (Input Dims and type on their gloo:* "
        "annotation, written with record_shapes only; a non-root scatter's has none): no bandwidth for them"]


def test_gloo_bandwidth_reads_as_a_number_in_the_terminal(cli_app):
    """gloo's host collectives move kB in ms: ~1e-4 GB/s, which the table printed
    as '0.00'. Kept in GB/s (README: a rate's unit is in the heading, one for the
    column, as in the csv's algbw_gbps; a small value keeps three significant
    digits): each row's cell is its value to three significant digits, never 0,
    and the table fits 120 columns."""
    from conftest import invoke
    paths = [str(p) for p in P2P]
    with duckprof.connect() as s:
        s.load(paths)
        exact = {r[0]: r[1:] for r in s.report("collectives").select("collective, algbw_gbps, busbw_gbps").fetchall()}
    res = invoke(cli_app, "report", "collectives", *paths)
    assert res.exit_code == 0, res.output
    out = res.stdout.splitlines()
    assert max(len(ln) for ln in out) <= 120
    # the columns' spans from the dashes under the heading
    spans, pos = [], 0
    for dash in out[1].split():
        start = out[1].index(dash, pos)
        spans.append((start, start + len(dash)))
        pos = start + len(dash)
    head = [out[0][a:b].strip() for a, b in spans]
    ia, ib = head.index("algbw GB/s"), head.index("busbw GB/s")
    rows = {ln[spans[0][0]:spans[0][1]].strip(): ln for ln in out[2:] if ln.strip() and not ln.startswith("(")}
    assert set(rows) == set(exact) and len(rows) == 9
    for name, ln in rows.items():
        shown = (float(ln[slice(*spans[ia])]), float(ln[slice(*spans[ib])]))
        for cell, value in zip(shown, exact[name]):
            assert 0 < value < 0.01 and cell == pytest.approx(value, rel=5e-3), (name, cell, value)
