"""`report launches`: HTA's get_cuda_kernel_launch_stats, per kernel name and
(--per-launch) per launch.

Expected values come from two independent sources:

* fixtures/launches/launch_stats.json, written by hand: one GPU, host thread
  (pid 100, tid 1), times in µs after 1,000,000:
    ProfilerStep#1 [0, 390], ProfilerStep#2 [390, 700]
    cudaLaunchKernel [10, 15]   corr 1 -> k_a [16, 18]    call 5, kernel 2, delay 1  (short)
    cudaLaunchKernel [20, 80]   corr 2 -> k_a [70, 72]    call 60, kernel 2, delay 0 (kernel starts
                                                          before the call returns; slow: 60 > 50)
    cudaLaunchKernel [100, 104] corr 3 -> k_a [300, 310]  call 4, kernel 10, delay 196 (long: > 100)
    cuLaunchKernel [400, 402]   corr 4 -> k_b [405, 505]  call 2, kernel 100, delay 3 (HTA skips
                                                          cuLaunchKernel; in the last step)
    cudaMemcpyAsync [500, 503]  corr 5 -> Memcpy [510, 530] (stream 8) call 3, kernel 20, delay 7
    k_c [600, 610] corr 99: no launch call in the trace (a note, not counted)
  so k_a: 3 launches, launch mean 69/3 = 23, max 60, kernel mean 14/3, delay mean 197/3,
  p95 of (0, 1, 196) = 1 + 0.9 * 195 = 176.5 (linear), max 196; short 1, slow 1, long 1.
* HTA 0.5.0's own tables on every corpus trace and on fixtures/hta/
  (fixtures/golden/hta/<stem>.cuda_kernel_launch_stats.csv, record_hta.py): with
  --hta every (correlation, cpu_duration, gpu_duration, launch_delay) row is
  HTA's, to its µs. Without --hta (exact ns, every launch call) and with
  --exclude-last-step, the launches of HTA's launch calls are the same ones,
  with HTA's values on traces whose ts are whole µs and within 2 µs of them
  where HTA rounds (ts up to the next µs, end down: up to 1 µs off at each end).
"""

from __future__ import annotations

import collections
import csv
import gzip
import json
import re

import pytest

from conftest import CORPUS, REPO, as_dicts, invoke, loaded

FIXTURE = REPO / "fixtures" / "launches" / "launch_stats.json"
GOLDEN = REPO / "fixtures" / "golden" / "hta"
HTA_FIXTURES = REPO / "fixtures" / "hta"
HTA_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
                "runFunction - job_prep_and_submit_for_execution")
MEMCPY = "Memcpy HtoD (Pinned -> Device)"


@pytest.fixture(scope="module")
def hand():
    with loaded(FIXTURE) as s:
        yield s


def _summary(s, **kw):
    res = s.report_result("launches", **kw)
    return {r["name"]: r for r in as_dicts(res.relation)}, [r["name"] for r in as_dicts(res.relation)]


def test_summary_by_hand(hand):
    rows, order = _summary(hand)
    assert order == ["k_a", MEMCPY, "k_b"]  # most host time in launch calls first: 69, 3, 2 µs
    a = rows["k_a"]
    assert (a["launches"], a["launch_mean_us"], a["launch_max_us"], a["launch_total_us"]) == (3, 23.0, 60.0, 69.0)
    assert a["kernel_mean_us"] == pytest.approx(14 / 3) and a["kernel_total_us"] == 14.0
    assert a["delay_mean_us"] == pytest.approx(197 / 3) and a["delay_p95_us"] == pytest.approx(176.5)
    assert (a["delay_max_us"], a["delay_total_us"]) == (196.0, 197.0)
    assert (a["short"], a["slow_launches"], a["long_delays"]) == (1, 1, 1)
    b, m = rows["k_b"], rows[MEMCPY]
    assert (b["launches"], b["launch_mean_us"], b["kernel_mean_us"], b["delay_max_us"]) == (1, 2.0, 100.0, 3.0)
    assert (m["launches"], m["launch_mean_us"], m["kernel_mean_us"], m["delay_max_us"]) == (1, 3.0, 20.0, 7.0)
    assert [(r["short"], r["slow_launches"], r["long_delays"]) for r in (b, m)] == [(0, 0, 0), (0, 0, 0)]
    assert "k_c" not in rows
    res = hand.report_result("launches")
    assert res.notes == ["launch_stats.json: 1 of 6 device events on device 0 have no launch call in the trace "
                         "(launched before the profile began, or by a call it does not record): not counted"]


def test_cutoffs_sort_and_limit(hand):
    rows, _ = _summary(hand, runtime_cutoff=4.5, delay_cutoff=0.5)
    # slow: calls > 4.5 µs (5, 60); short: kernel < call <= 4.5 (none: the 4 µs call's kernel ran 10);
    # long: delays > 0.5 µs (1, 196; k_b's 3, the memcpy's 7)
    assert [(rows[n]["short"], rows[n]["slow_launches"], rows[n]["long_delays"]) for n in ("k_a", "k_b", MEMCPY)] \
        == [(0, 2, 2), (0, 0, 1), (0, 0, 1)]
    assert _summary(hand, sort="kernel")[1] == ["k_b", MEMCPY, "k_a"]
    assert _summary(hand, sort="delay")[1] == ["k_a", MEMCPY, "k_b"]
    assert _summary(hand, sort="name", limit=2)[1] == [MEMCPY, "k_a"]


def test_last_step_and_hta_by_hand(hand):
    # the last step began at 390: k_b's (400) and the memcpy's (500) launches are cut
    assert _summary(hand, exclude_last_step=True)[1] == ["k_a"]
    rows, order = _summary(hand, hta=True)
    assert order == ["k_a"] and rows["k_a"]["launch_total_us"] == 69.0 and rows["k_a"]["delay_max_us"] == 196.0
    notes = hand.report_result("launches", hta=True).notes
    assert any("1 device event on device 0 was launched by cuLaunchKernel, which HTA's launch stats do not count"
               in n for n in notes), notes


def test_per_launch_by_hand(hand):
    got = [(r["correlation"], r["name"], r["launch_name"], r["cpu_duration_us"], r["gpu_duration_us"],
            r["launch_delay_us"], r["short"], r["slow_launch"], r["long_delay"], r["stream"])
           for r in as_dicts(hand.report_result("launches", per_launch=True).relation)]
    assert got == [
        (1, "k_a", "cudaLaunchKernel", 5.0, 2.0, 1.0, True, False, False, 7),
        (2, "k_a", "cudaLaunchKernel", 60.0, 2.0, 0.0, False, True, False, 7),
        (3, "k_a", "cudaLaunchKernel", 4.0, 10.0, 196.0, False, False, True, 7),
        (4, "k_b", "cuLaunchKernel", 2.0, 100.0, 3.0, False, False, False, 7),
        (5, MEMCPY, "cudaMemcpyAsync", 3.0, 20.0, 7.0, False, False, False, 8),
    ]
    res = hand.report_result("launches", per_launch=True, limit=2)
    assert [r["correlation"] for r in as_dicts(res.relation)] == [1, 2]
    assert "launch_stats.json: the first 2 of 5 launches on device 0 (-n 0 for all)" in res.notes
    assert {r["device_launches"] for r in as_dicts(res.relation)} == {5}
    assert not [n for n in hand.report_result("launches", per_launch=True, limit=5).notes if "first" in n]


# -- synchronous calls: no launches ---------------------------------------------------------
# fixtures/launches/sync_copies.json, by hand: one GPU, host thread (pid 100, tid 1), µs after 1,000,000:
#   cudaMemcpyAsync [10, 13]   corr 1 -> Memcpy HtoD (Pinned -> Device) [15, 25]  call 3, copy 10, delay 2
#   cudaMemcpy [30, 80]        corr 2 -> Memcpy DtoH (Device -> Pageable) [40, 75] call 50, copy 35 (the call
#                                        lasts the whole copy: it would be a 'short' launch, delay 0)
#   cudaMemcpy [100, 130]      corr 3 -> Memcpy HtoD (Pinned -> Device) [105, 125] call 30, copy 20
#   cudaMemset [140, 150]      corr 4 -> Memset (Device) [145, 148]                call 10, set 3
#   cudaLaunchKernel [160, 165] corr 5 -> k_a [170, 180]                          call 5, kernel 10, delay 5
# The synchronous calls (corr 2, 3, 4) are no launches: in sync_calls / sync_total_us only.
SYNC = REPO / "fixtures" / "launches" / "sync_copies.json"
HTOD, DTOH = "Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)"


def test_sync_calls_are_no_launches_by_hand():
    with loaded(SYNC) as s:
        rows, order = _summary(s)
        # launch call time 5 (k_a), 3 (the async copy); then the rows without launches, by name
        assert order == ["k_a", HTOD, DTOH, "Memset (Device)"]
        got = {n: (r["launches"], r["launch_total_us"], r["kernel_total_us"], r["delay_max_us"],
                   r["short"], r["slow_launches"], r["long_delays"], r["sync_calls"], r["sync_total_us"])
               for n, r in rows.items()}
        assert got == {
            "k_a": (1, 5.0, 10.0, 5.0, 0, 0, 0, 0, None),
            HTOD: (1, 3.0, 10.0, 2.0, 0, 0, 0, 1, 30.0),  # the cudaMemcpy's 30 µs call is not launch time
            DTOH: (0, None, None, None, 0, 0, 0, 1, 50.0),  # was 1 launch, 'short' (35 < 50 <= 50)
            "Memset (Device)": (0, None, None, None, 0, 0, 0, 1, 10.0),
        }
        per = [(r["correlation"], r["launch_name"], r["cpu_duration_us"], r["short"], r["slow_launch"],
                r["long_delay"], r["sync_call"])
               for r in as_dicts(s.report_result("launches", per_launch=True, runtime_cutoff=20).relation)]
        # with a 20 µs cutoff the 50 and 30 µs synchronous calls would be slow launches: they are not launches
        assert per == [(1, "cudaMemcpyAsync", 3.0, False, False, False, False),
                       (2, "cudaMemcpy", 50.0, False, False, False, True),
                       (3, "cudaMemcpy", 30.0, False, False, False, True),
                       (4, "cudaMemset", 10.0, False, False, False, True),
                       (5, "cudaLaunchKernel", 5.0, False, False, False, False)]
        # HTA counts none of them either (only cudaMemcpyAsync and cudaLaunchKernel here)
        rows, order = _summary(s, hta=True)
        assert order == ["k_a", HTOD] and rows[HTOD]["launches"] == 1 and rows[HTOD]["sync_calls"] == 0


def _sync_copies_in_json(path):
    """(device, name) -> [device events, host ns in their synchronous calls], read from the trace's
    plain JSON: runtime calls of the synchronous copy/set API (a name without Async) and the device
    events with their correlation."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    sync = {e["args"]["correlation"]: e["dur"] for e in events
            if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "hip_runtime")
            and re.match(r"(cuda|hip)Mem(cpy|set)", e["name"]) and "Async" not in e["name"]}
    got = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") \
                and e.get("args", {}).get("correlation") in sync:
            got[(e["args"]["device"], e["name"])][0] += 1
            got[(e["args"]["device"], e["name"])][1] += sync[e["args"]["correlation"]]
    return dict(got)


@pytest.mark.skipif(not (CORPUS / "mi250_rocm_train.json.gz").exists(), reason="corpus trace missing")
def test_sync_copies_on_mi250_counted_apart():
    """mi250_rocm_train: PyTorch's blocking copy_ on ROCm is hipMemcpyWithStream (2 calls, each lasting
    its whole copy): sync_calls, not launches. The counts and host times from the plain JSON."""
    path = CORPUS / "mi250_rocm_train.json.gz"
    expected = _sync_copies_in_json(path)
    assert sum(n for n, _ in expected.values()) == 2
    with loaded(path) as s:
        rows = {(r["device"], r["name"]): r for r in as_dicts(s.report_result("launches", limit=0).relation)}
        every = {(r["device"], r["name"]): r["n"] for r in as_dicts(s.sql(
            "SELECT device, name, count(*) AS n FROM launches WHERE launch_event_id IS NOT NULL GROUP BY ALL"))}
    got = {k: [r["sync_calls"], r["sync_total_us"]] for k, r in rows.items() if r["sync_calls"]}
    assert got == {k: [n, pytest.approx(us)] for k, (n, us) in expected.items()}
    for k in got:
        assert rows[k]["launches"] == every[k] - got[k][0]


def test_cpu_only_and_no_launch_calls():
    with loaded(REPO / "fixtures" / "gpu_time" / "cpu_only.json") as s:
        res = s.report_result("launches")
        assert res.instead == ["no GPU activity in this trace"] and res.relation.fetchall() == []
    with loaded(REPO / "fixtures" / "gpu_time" / "no_launches.json") as s:
        res = s.report_result("launches")
        assert res.relation.fetchall() == []
        assert any("no launch call in this trace matches its device activity" in n for n in res.notes), res.notes


def test_cli_table_fits_120_columns(cli_app, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    res = invoke(cli_app, "report", "launches", FIXTURE, "-q")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= 120, res.stdout
    for heading in ("launches", "launch mean", "kernel mean", "delay p95", "short", "slow launches", "long delays"):
        assert heading in lines[0], (heading, lines[0])
    assert "23.0 µs" in res.stdout and "176 µs" in res.stdout


# -- against HTA's own tables -------------------------------------------------------------

def _golden(stem):
    with open(GOLDEN / f"{stem}.cuda_kernel_launch_stats.csv") as f:
        return collections.Counter((int(r["correlation"]), float(r["cpu_duration"]), float(r["gpu_duration"]),
                                    float(r["launch_delay"])) for r in csv.DictReader(f))


def _rows(res, trace_id=None, hta_names_only=False):
    return collections.Counter(
        (r["correlation"], r["cpu_duration_us"], r["gpu_duration_us"], r["launch_delay_us"])
        for r in as_dicts(res.relation)
        if (trace_id is None or r["trace_id"] == trace_id) and (not hta_names_only or r["launch_name"] in HTA_LAUNCHES))


@pytest.mark.parametrize("stem", ["fractional_absolute", "relative_base"])
def test_hta_fixtures_equal_htas_table(stem):
    """fixtures/hta: fractional epoch µs and a base time that is no whole µs, where HTA's
    rounding decides the µs (a sub-µs kernel gets -1 µs); every row is HTA's."""
    with loaded(HTA_FIXTURES / f"{stem}.json") as s:
        got = _rows(s.report_result("launches", per_launch=True, hta=True, limit=0))
    assert got == _golden(stem) and sum(got.values()) > 0


def _corpus_traces(ids):
    """The corpus traces HTA's table was recorded on (a corpus may hold others)."""
    return sorted((stem, tid) for stem, tid in ((name.split(".json")[0], tid) for name, tid in ids.items())
                  if (GOLDEN / f"{stem}.cuda_kernel_launch_stats.csv").exists())


def test_hta_every_corpus_launch_equals_htas_table(corpus_session):
    s, ids, _ = corpus_session
    res = s.report_result("launches", per_launch=True, hta=True, limit=0)
    nonempty = 0
    for stem, tid in _corpus_traces(ids):
        gold = _golden(stem)
        assert _rows(res, tid) == gold, stem
        nonempty += bool(gold)
    assert nonempty >= 14  # all but the CPU-only, AMD and cuLaunchKernel-only traces


def test_exact_launches_are_htas_to_its_rounding(corpus_session):
    """Without --hta (exact ns), with --exclude-last-step and only HTA's launch calls: the same
    launches as HTA's table, with its values where the trace's ts are whole µs, and within 2 µs
    where HTA rounds them (ts up, end down)."""
    s, ids, _ = corpus_session
    res = s.report_result("launches", per_launch=True, exclude_last_step=True, limit=0)
    exact = rounded = 0
    for stem, tid in _corpus_traces(ids):
        gold, got = _golden(stem), _rows(res, tid, hta_names_only=True)
        assert sorted(k[0] for k in got.elements()) == sorted(k[0] for k in gold.elements()), stem
        if got == gold:
            exact += bool(gold)
            continue
        theirs = {k[0]: k[1:] for k in gold}
        worst = max(abs(a - b) for k in got for a, b in zip(k[1:], theirs[k[0]]))
        assert 0 < worst <= 2, (stem, worst)
        rounded += 1
    assert exact >= 8 and rounded >= 4, (exact, rounded)
