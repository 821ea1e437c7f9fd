"""Many ranks (issue 17): the collectives view and report, report ranks and its
stragglers, a job of rank files loaded as one run.

Expected values: hand-computed on fixtures/collectives/bus_bandwidth_rank0.json
(worked out in the test), counted with Python's json on the corpus, HTA 0.5.0's
get_comm_comp_overlap (fixtures/golden/hta/comm_comp_overlap.csv, made by
record_comm_overlap.py there), and the synthetic job's own construction (which
rank was made late).
"""

from __future__ import annotations

import collections
import csv
import json

import pytest

from conftest import REPO, corpus_path, invoke, needs_corpus, read_trace, trace_events

import duckprof
from duckprof.synth import generate_job

FIXTURE = REPO / "fixtures" / "collectives" / "bus_bandwidth_rank0.json"
HTA_OVERLAP = REPO / "fixtures" / "golden" / "hta" / "comm_comp_overlap.csv"


def report_rows(s, name, **options):
    rel = s.report(name, **options)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


# -- bus bandwidth: hand-computed --------------------------------------------------

def test_bus_bandwidth_equals_the_hand_computed_value():
    """all_gather of 4 ranks, 250,000 -> 1,000,000 BFloat16 elements (facts on its
    record_param_comms only): message = max(in, out) x 2 bytes = 2,000,000 bytes
    in 50 µs -> algbw 2e6 B / 50,000 ns = 40 GB/s, busbw 40 x (4-1)/4 = 30 GB/s,
    10% of the A100 SXM4's NVLink 300 GB/s per direction.
    all_reduce of 4 ranks, 1,000,000 Float (facts on the kernel): 4,000,000 bytes
    in 100 µs -> algbw 40 GB/s, busbw 40 x 2(4-1)/4 = 60 GB/s, 20% of peak; a
    compute kernel runs during its last 50 of 100 µs -> overlap 50%."""
    with duckprof.connect() as s:
        s.load([str(FIXTURE)], run="r")
        got = {r["collective"]: r for r in report_rows(s, "collectives")}
    assert set(got) == {"all_gather", "all_reduce"}
    ag, ar = got["all_gather"], got["all_reduce"]
    assert (ag["msg_bytes"], ag["total_us"], ag["group_size"]) == (2_000_000, 50, 4)
    assert ag["algbw_gbps"] == pytest.approx(40.0) and ag["busbw_gbps"] == pytest.approx(30.0)
    assert ag["busbw_peak_pct"] == pytest.approx(10.0) and ag["overlap_pct"] == pytest.approx(0.0)
    assert (ar["msg_bytes"], ar["total_us"], ar["group_size"]) == (4_000_000, 100, 4)
    assert ar["algbw_gbps"] == pytest.approx(40.0) and ar["busbw_gbps"] == pytest.approx(60.0)
    assert ar["busbw_peak_pct"] == pytest.approx(20.0) and ar["overlap_pct"] == pytest.approx(50.0)
    assert (ag["process_group"], ar["process_group"]) == ("0", "0")
    assert (ag["nccl_algorithm"], ag["nccl_protocol"]) == ("RING", "LL")



def test_a_group_of_no_rank_has_no_bus_bandwidth(tmp_path):
    """Found by test_fuzz_values: the fixture above with its all_reduce kernel's 'Group size' 0
    (a damaged value): its bus bandwidth factor 2(n-1)/n is -inf, and report collectives failed
    ("Could not cast value -inf to DECIMAL(38,9)"). Now no factor, no bus bandwidth; the
    message size and algorithm bandwidth stay (40 GB/s), the all_gather untouched (30 GB/s)."""
    doc = json.loads(FIXTURE.read_text())
    for e in (doc["traceEvents"] if isinstance(doc, dict) else doc):
        if str(e.get("name", "")).startswith("ncclDevKernel_AllReduce"):
            e["args"]["Group size"] = 0
    path = tmp_path / "zero_group.json"
    path.write_text(json.dumps(doc))
    with duckprof.connect() as s:
        s.load([str(path)], run="r")
        got = {r["collective"]: r for r in report_rows(s, "collectives")}
    ar, ag = got["all_reduce"], got["all_gather"]
    assert ar["busbw_gbps"] is None and ar["msg_bytes"] == 4_000_000 and ar["algbw_gbps"] == pytest.approx(40.0)
    assert ag["busbw_gbps"] == pytest.approx(30.0)

# -- every NCCL kernel exactly once on the real A100 NCCL trace ------------------------

@pytest.mark.slow
def test_collectives_list_every_nccl_kernel_once():
    path = corpus_path("a100_nccl_train.json.gz")
    events = trace_events(read_trace(path))
    nccl = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel" and e["name"].startswith("nccl")]
    by_type = collections.Counter(e["args"]["Collective name"] for e in nccl)
    assert len(nccl) == 21 and by_type == {"allreduce": 15, "broadcast": 6}  # the trace, read with json
    with duckprof.connect() as s:
        s.load([str(path)], run="r")
        view = s.sql("SELECT count(*), count(DISTINCT event_id), sum(dur_ns) FROM collectives").fetchall()[0]
        rows = report_rows(s, "collectives")
    assert view[:2] == (21, 21)
    # durations: the trace's µs with three decimals, as integer ns
    assert view[2] == sum(round(e["dur"] * 1000) for e in nccl)
    assert {r["collective"]: r["calls"] for r in rows} == {"all_reduce": 15, "broadcast": 6}
    sizes = collections.defaultdict(int)
    for e in nccl:  # Float = 4 bytes, Long = 8
        sizes[e["args"]["Collective name"]] += e["args"]["In msg nelems"] * {"Float": 4, "Long": 8}[e["args"]["dtype"]]
    assert {r["collective"]: r["total_bytes"] for r in rows} == {"all_reduce": sizes["allreduce"],
                                                                 "broadcast": sizes["broadcast"]}


# -- comm/compute overlap against HTA -----------------------------------------------

def hta_overlap():
    with open(HTA_OVERLAP) as f:
        return {(r["job"], int(r["rank"])): float(r["comp_comm_overlap_pctg"]) for r in csv.DictReader(f)}


@pytest.mark.slow
@pytest.mark.parametrize("job, files", [
    ("a100_nccl_train", ["a100_nccl_train.json.gz"]),
    ("sampled_rank0_1", ["sampled_rank0_no_devprops.json.gz", "sampled_rank1_no_devprops.json.gz"]),
])
def test_comm_compute_overlap_agrees_with_hta(job, files):
    """HTA's get_comm_comp_overlap (drops the last ProfilerStep and rounds times
    to whole µs): `report ranks --hta` is within 1 percentage point (in fact
    within HTA's rounding to 2 decimals)."""
    want = {rank: v for (j, rank), v in hta_overlap().items() if j == job}
    with duckprof.connect() as s:
        s.load([str(corpus_path(f)) for f in files], run=job)
        got = {r["rank"]: r["overlap_pct"] for r in report_rows(s, "ranks", hta=True)}
    assert set(got) == set(want)
    for rank, v in want.items():
        assert got[rank] == pytest.approx(v, abs=0.006), rank


# -- a job of rank files ----------------------------------------------------------

@pytest.mark.slow
def test_sampled_ranks_load_as_one_two_rank_run():
    files = [str(corpus_path(f)) for f in ("sampled_rank0_no_devprops.json.gz", "sampled_rank1_no_devprops.json.gz")]
    with duckprof.connect() as s:
        rep = s.load(files, run="job")
        assert s.sql("SELECT run, traces, ranks, world_size FROM runs").fetchall() == [("job", 2, "0-1", 128)]
    job = rep.job()
    assert job["ranks"] == [0, 1] and job["world_size"] == 128
    assert job["missing"] == list(range(2, 128)) and job["duplicates"] == {}
    assert "ranks 0-1 of world size 128; 126 missing: 2-127" in rep.summary()


@pytest.fixture(scope="module")
def late_job(tmp_path_factory):
    """4 ranks, 2 steps, rank 2 late by 3 ms at every collective."""
    d = tmp_path_factory.mktemp("job4")
    generate_job(d, world_size=4, steps=2, late_rank=2, late_us=3000, blocks=1)
    return d


def test_report_ranks_names_the_late_rank(late_job):
    with duckprof.connect() as s:
        rep = s.load([str(late_job)], run="job")
        rows = report_rows(s, "ranks")
        coll = report_rows(s, "collectives")
    assert rep.job_summary() == "ranks 0-3 of world size 4; none missing"
    assert rows[0]["rank"] == 2  # the rank whose lateness costs the others most comes first
    late = rows[0]
    assert late["late_count"] == late["collectives"] == 4  # 2 steps x 2 all-reduces, matched by Seq
    # three others wait for it at each of 4 collectives, at least the 3 ms it was made late
    assert late["caused_wait_us"] >= 4 * 3 * 3000 * 0.9
    assert all(r["caused_wait_us"] == 0 for r in rows[1:])
    assert [c["collective"] for c in coll] == ["all_reduce"] and coll[0]["calls"] == 16 and coll[0]["ranks"] == 4
    assert coll[0]["spread_mean_us"] >= 3000 * 0.9


def test_job_summary_names_missing_and_duplicate_ranks(late_job, tmp_path):
    """Ranks 0, 1, 3 of the 4-rank job, rank 1 twice (a second file of other
    content): rank 2 missing, rank 1 loaded more than once."""
    import shutil
    for r in (0, 1, 3):
        shutil.copy(late_job / f"rank{r}.json", tmp_path / f"rank{r}.json")
    doc = json.loads((late_job / "rank1.json").read_text())
    doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "extra", "pid": 1, "tid": 1,
                               "ts": doc["traceEvents"][-1]["ts"], "dur": 1})
    (tmp_path / "again_rank1.json").write_text(json.dumps(doc))
    with duckprof.connect() as s:
        rep = s.load([str(tmp_path)], run="job")
    job = rep.job()
    assert (job["ranks"], job["world_size"], job["missing"], job["duplicates"]) == ([0, 1, 3], 4, [2], {1: 2})
    assert rep.job_summary() == "ranks 0-1,3 of world size 4; 1 missing: 2; loaded more than once: rank 1 (2 files)"


@pytest.mark.slow
def test_sixteen_rank_job_loads_as_one_run_and_report_ranks_names_the_late_rank(tmp_path, cli_app):
    d = tmp_path / "job16"
    r = invoke(cli_app, "synth", "-o", d, "--world-size", 16, "--late-rank", 11, "--steps", 2, "-n", 2500)
    assert r.exit_code == 0, r.stderr
    db = tmp_path / "perf.duckdb"
    r = invoke(cli_app, "load", d, "--db", db, "--run", "job16", "--tag", "commit=abc123", "-q")
    assert r.exit_code == 0, r.stderr
    assert "ranks 0-15 of world size 16; none missing" in r.stdout
    r = invoke(cli_app, "report", "ranks", "--db", db, "--run", "job16", "-f", "csv")
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(r.stdout.splitlines()))
    assert len(rows) == 16 and rows[0]["rank"] == "11"
    assert int(rows[0]["late_count"]) == int(rows[0]["collectives"]) > 0


@needs_corpus
def test_sizes_from_the_nccl_annotations():
    """sampled_rank0 (2023): no size on its NCCL kernels nor its record_param_comms; each launch
    call lies in c10d's nccl:* annotation, whose first input gives the size (before: all 10
    without). In start order, by hand from the annotations' Input Dims and Input type:
    all_to_all [[384]] long, [[419430400]] unsigned char; all_reduce [[19618307]] float, ...;
    the _all_gather_base's output is n times its input, and n (128) is only the world size
    assumed: no size."""
    with duckprof.connect() as s:
        s.load([str(corpus_path("sampled_rank0_no_devprops.json.gz"))], run="r")
        got = s.sql("SELECT collective, dtype, msg_bytes FROM collectives ORDER BY ts_ns").fetchall()
    assert got == [("all_to_all", "Long", 384 * 8), ("all_to_all", "Byte", 419430400),
                   ("all_reduce", "Float", 19618307 * 4), ("all_reduce", "Float", 26955536 * 4),
                   ("all_gather", "Char", None), ("all_to_all", "Byte", 419430400),
                   ("all_to_all", "Int", 2846720 * 4), ("all_reduce", "Float", 26258430 * 4),
                   ("all_reduce", "Float", 5716654 * 4), ("all_gather", "Char", None)]
