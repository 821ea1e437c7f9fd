"""Parity with torch's profile_analysis (torch 2.13.0), from the saved outputs in
fixtures/golden/profile_analysis/ (see its README.md for how they were made).

What torch's CLI prints for `--analysis FILE float` on the corpus is one empty
table per deviceProperties entry: its _compute_stats() skips every kernel
event without args["name"], and no Kineto trace has that key. The golden
files therefore also hold the same torch code run on a copy where each kernel
got args["name"] ("devices_with_args_name_injected"), and a plain count of the
kernel events torch's other filters admit ("raw_events_passing_filters_...":
cat == "kernel" exactly, args.device listed in deviceProperties).

Checked here, per trace where the CLI runs and per device and kernel name:

* duckprof's count and total duration == the raw kernel events (exactly);
* torch's own "Kernel Count" and total duration == duckprof's count and sum of
  DISTINCT durations: torch keeps the per-kernel stats in an OrderedSet of
  frozen (flops, bw, latency, ...) tuples, so kernels that ran equally long
  (with equal estimates) are counted once -- a torch bug this reproduces
  exactly, to show the difference is that and nothing else;
* torch's per-kernel FLOP/s == the op's FLOPs / duration, i.e. torch gives
  every kernel of an op the op's full FLOPs; duckprof splits them
  (tests/test_kernels_report.py checks the split adds up);
* the printed text: one empty table per device, with the device names and ids
  duckprof stores.

And on every trace where the CLI crashes (CRASHES.md), duckprof's report runs.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, needs_corpus, rows, scalar

from duckprof.peaks import seed_peaks

GOLDEN = REPO / "fixtures" / "golden" / "profile_analysis"
STEMS = sorted(p.name[:-len(".kernels.json")] for p in GOLDEN.glob("*.kernels.json"))


def crashed() -> list[str]:
    """Files (and --diff pairs) listed in CRASHES.md."""
    text = (GOLDEN / "CRASHES.md").read_text()
    return re.findall(r"^\| (\S+\.json(?:\.gz)?) \| --analysis \|", text, re.M)


def trace_id(ids, stem):
    for name in (stem + ".json.gz", stem + ".json"):
        if name in ids:
            return ids[name]
    pytest.skip(f"{stem} not in the corpus")


def golden(stem):
    return json.loads((GOLDEN / f"{stem}.kernels.json").read_text())


@pytest.fixture(scope="module")
def corpus_report(corpus_session):
    """duckprof's kernels report over the whole corpus (limit 0), computed once."""
    s, _ids, _ = corpus_session
    seed_peaks(s.con)
    res = s.report_result("kernels", limit=0, run="corpus")
    cols = res.relation.columns
    return [dict(zip(cols, r)) for r in res.relation.fetchall()], res.notes


def test_goldens_present():
    assert len(STEMS) >= 9, "fixtures/golden/profile_analysis/*.kernels.json missing"
    assert "h100_vit_inference.json.gz" in crashed()


@needs_corpus
@pytest.mark.parametrize("stem", STEMS)
def test_counts_and_durations_equal_the_kernel_events_torch_admits(corpus_session, corpus_report, stem):
    s, ids, _ = corpus_session
    tid = trace_id(ids, stem)
    raw = golden(stem)["raw_events_passing_filters_except_args_name"]
    expected = {(int(dev), name): (v["events"], round(v["dur_sum_us"] * 1000))
                for dev, per in raw.items() for name, v in per.items()}
    # duckprof's kernels report, restricted to what torch's filters let through
    rep, _ = corpus_report
    admitted = {(d, n) for d, n in rows(s, """
        SELECT DISTINCT k.device, k.name FROM kernels k JOIN events e USING (trace_id, event_id)
        WHERE k.trace_id = $t AND e.cat_raw = 'kernel'
          AND k.device IN (SELECT device FROM devices WHERE trace_id = $t)""", {"t": tid})}
    got = {(r["device"], r["name"]): (r["count"], round(r["total_us"] * 1000)) for r in rep
           if r["trace_id"] == tid and (r["device"], r["name"]) in admitted}
    assert got == expected
    if not expected:  # torch sees no kernel; say why duckprof does
        legacy = scalar(s, "SELECT count(*) FROM kernels k JOIN events e USING (trace_id, event_id) "
                           "WHERE k.trace_id = $t AND e.cat_raw <> 'kernel'", {"t": tid})
        all_k = scalar(s, "SELECT count(*) FROM kernels WHERE trace_id = $t", {"t": tid})
        # torch ignores v100 2021 traces' 'Kernel' (old spelling) and MTIA's compute (mtia_ccp_events)
        assert legacy == all_k


@needs_corpus
@pytest.mark.parametrize("stem", STEMS)
def test_torch_counts_distinct_stats_not_kernels(corpus_session, stem):
    s, ids, _ = corpus_session
    tid = trace_id(ids, stem)
    injected = golden(stem)["devices_with_args_name_injected"]
    assert isinstance(injected, dict)
    ours = {(d, n): (c, t) for d, n, c, t in rows(s, """
        SELECT e.device, e.name, count(DISTINCT (e.dur_ns, e.op_flops)), sum(DISTINCT e.dur_ns)
        FROM kernel_estimates e JOIN events ev USING (trace_id, event_id)
        WHERE trace_id = $t AND ev.cat_raw = 'kernel' GROUP BY ALL""", {"t": tid})}
    n = 0
    for dev, d in injected.items():
        for name, k in d["kernels"].items():
            c, total_ns = ours[(int(dev), name)]
            assert c == k["count"], name
            assert total_ns == round(k["total_dur_us"] * 1000), name
            # the row torch prints: count, mean duration
            assert d["table_rows"][name][0] == str(k["count"])
            assert d["table_rows"][name][3] == f"{total_ns / 1000 / c:.4f}"
            n += 1
    assert n == sum(len(v) for v in golden(stem)["raw_events_passing_filters_except_args_name"].values())


@needs_corpus
@pytest.mark.parametrize("stem", ["b200_eager_stack", "mi250_rocm_train"])
def test_torch_gives_every_kernel_the_ops_full_flops(corpus_session, stem):
    s, ids, _ = corpus_session
    tid = trace_id(ids, stem)
    injected = golden(stem)["devices_with_args_name_injected"]
    checked = 0
    for dev, d in injected.items():
        for name, k in d["kernels"].items():
            if not k["flops_nonzero_count"]:
                continue
            # torch: sum over its distinct stats of kernel_flop / dur, kernel_flop = the op's FLOPs
            (rate,) = rows(s, """SELECT sum(op_flops / (dur_ns / 1e9)) FROM (
                                    SELECT DISTINCT dur_ns, op_flops FROM kernel_estimates
                                    WHERE trace_id = $t AND device = $d AND name = $n AND op_flops > 0)""",
                           {"t": tid, "d": int(dev), "n": name})[0]
            assert rate == pytest.approx(k["flops_sum"], rel=1e-9), name
            checked += 1
    assert checked >= 3
    # ... so an op with two kernels is counted twice by torch; duckprof splits it
    doubled = rows(s, """SELECT op_name, op_flops, list(flops ORDER BY ts_ns) FROM kernel_estimates
                         WHERE trace_id = $t AND op_kernels > 1 AND op_flops > 0 GROUP BY ALL""", {"t": tid})
    for _op, total, parts in doubled:
        assert sum(parts) == total


def _printed_devices(text):
    return [(m.group(1), int(m.group(2))) for m in re.finditer(r"^Device\((.*), (\d+)\): None:$", text, re.M)]


@needs_corpus
@pytest.mark.parametrize("stem", STEMS)
def test_the_printed_output_is_empty_tables_one_per_device(corpus_session, stem):
    s, ids, _ = corpus_session
    tid = trace_id(ids, stem)
    text = (GOLDEN / f"{stem}.analysis.txt").read_text()
    devices = rows(s, "SELECT name, device FROM devices WHERE trace_id = $t ORDER BY rowid", {"t": tid})
    assert _printed_devices(text) == devices
    lines = [l for l in text.splitlines() if l.strip()]
    data = [l for l in lines if not l.startswith(("Device(", " Kernel Name |", "-----"))]
    assert data == []  # no kernel rows at all: torch's tables are empty on every real trace


@needs_corpus
@pytest.mark.parametrize("name", crashed() or ["<none>"])
def test_duckprof_runs_where_torch_crashes(corpus_session, corpus_report, name):
    s, ids, _ = corpus_session
    if name not in ids:
        pytest.skip(f"{name} not in the corpus")
    rep, _ = corpus_report
    mine = [r for r in rep if r["trace_id"] == ids[name]]
    n_kernels = scalar(s, "SELECT count(*) FROM kernels WHERE trace_id = $t", {"t": ids[name]})
    assert sum(r["count"] for r in mine) == n_kernels
    if name in ("h100_vit_inference.json.gz", "mi300x_resnet_act_checkpoint.json.gz",
                "a100_train_rank0.json.gz"):
        assert max(r["compute_pct"] or 0 for r in mine) > 0
