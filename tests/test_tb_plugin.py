"""TensorBoard's profiler plugin (torch-tb-profiler, kineto's tb_plugin/) tests its parser
on small hand-written traces with expected values (tb_plugin/test/test_profiler.py, the
last kineto commit with the plugin: fixtures/tb_plugin/README.md). Those traces are the
files of fixtures/tb_plugin/ (extract.py wrote them) and the plugin's expected numbers are
the oracle here: each test names the plugin test it checks. Where duckprof deliberately
gives another figure, the docstring says why and the assertion is duckprof's value computed
by hand. What duckprof does not report at all is listed in fixtures/tb_plugin/README.md."""

from __future__ import annotations

import json

import pytest

import duckprof
from conftest import REPO
from test_sql_macros import sql as macro_sql

TB = REPO / "fixtures" / "tb_plugin"

# the plugin's ProfileRole order (steps_costs[i].costs)
ROLES = ["kernel_us", "memcpy_us", "memset_us", "communication_us", "runtime_us", "dataloader_us",
         "cpu_exec_us", "other_us", "total_us"]
K, MC, MS, COMM, RT, DL, CPU, OTHER, TOTAL = ROLES


def report_rows(s, name, **options):
    rel = s.report(name, **options)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def session(*stems):
    s = duckprof.connect()
    s.load([str(TB / f"{stem}.json") for stem in stems], run="r")
    return s


def only(rows, key="name", **match):
    got = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(got) == 1, (match, rows)
    return got[0]


# -- overview: the step time breakdown (steps --breakdown tensorboard) ----------------------

# stem -> the plugin's assertions on steps_costs, per step (only the roles it asserts)
STEP_COSTS = {
    # test_all_categories
    "all_categories": [{K: 15, MC: 10, MS: 5, RT: 30, DL: 180, CPU: 35, OTHER: 125}],
    # test_runtime_called_by_profilerstep
    "runtime_called_by_profilerstep": [{K: 8, RT: 20, CPU: 0, OTHER: 300 - 8 - 20}],
    # test_no_profilerstep: the whole trace is one step
    "no_profilerstep": [{K: 100, MC: 0, MS: 0, RT: 320 - 310, DL: 0, CPU: 60 + (310 - 300),
                         OTHER: 300 - (100 + 60), TOTAL: (320 + 100) - 100}],
    # test_multiple_profilersteps_no_overlap: steps extend to the end of the device work
    "multiple_profilersteps_no_overlap": [
        {K: 0, MC: 40, MS: 0, RT: 5, DL: 0, CPU: 60 - 5, OTHER: 200 - 60 - 20, TOTAL: 320 - 100},
        {K: 200, MC: 0, MS: 0, RT: 5, DL: 0, CPU: 50 - 5, OTHER: 360 - 350, TOTAL: 610 - 350}],
    # test_multiple_profilersteps_with_overlap: a step starts where the previous one's device work ends
    "multiple_profilersteps_with_overlap": [
        {K: 0, MC: 100, MS: 0, RT: 5, DL: 0, CPU: (200 + 60) - (150 + 90) - 5, OTHER: 280 - (200 + 60),
         TOTAL: (280 + 100) - (150 + 90)},
        {K: 200, MC: 0, MS: 0, RT: 5, DL: 0, CPU: (280 + 100) - 360 + (410 - 405), OTHER: 0,
         TOTAL: 610 - (280 + 100)}],
    # test_last_steps_no_kernel: the trailing steps without device work are dropped
    "last_steps_no_kernel": [{TOTAL: (150 + 180) - (90 + 20)}],
    # test_pure_cpu
    "pure_cpu": [{K: 0, MC: 0, MS: 0, RT: 0, DL: 0, CPU: 10, OTHER: 200 - 10, TOTAL: 200},
                 {K: 0, MC: 0, MS: 0, RT: 0, DL: 0, CPU: 40, OTHER: 100 - 40, TOTAL: 100}],
    # TestDistributed: steps_costs[0].costs in full (test_distributed_nccl asserts only
    # Communication on worker1)
    "distributed_nccl_worker0": [dict(zip(ROLES, [105, 0, 0, 75, 0, 0, 20, 35, 235]))],
    "distributed_nccl_worker1": [{COMM: 74}],
    "distributed_gloo_gpu_worker0": [dict(zip(ROLES, [101, 0, 0, 39, 0, 0, 16, 0, 156]))],
    "distributed_gloo_gpu_worker1": [dict(zip(ROLES, [70, 0, 0, 44, 0, 0, 20, 12, 146]))],
    "distributed_gloo_cpu_worker0": [dict(zip(ROLES, [0, 0, 0, 109, 0, 0, 47, 0, 156]))],
    "distributed_gloo_cpu_worker1": [dict(zip(ROLES, [0, 0, 0, 98, 0, 0, 36, 12, 146]))],
    # TestDataPipe.test_datapipe: enumerate(DataPipe)# is data loading, [100, 123]
    "datapipe": [{DL: 23}],
}


@pytest.mark.parametrize("stem", sorted(STEP_COSTS))
def test_step_breakdown_equals_the_plugin(stem):
    with session(stem) as s:
        got = report_rows(s, "steps", breakdown="tensorboard")
    want = STEP_COSTS[stem]
    assert len(got) == len(want)
    for row, costs in zip(got, want):
        assert {k: row[k] for k in costs} == costs
        assert row[TOTAL] == sum(row[k] for k in ROLES[:-1])


def test_breakdown_mean_equals_the_plugins_average():
    """test_multiple_profilersteps_no_overlap: avg_costs Total = ((320 - 100) + (610 - 350)) / 2."""
    with session("multiple_profilersteps_no_overlap") as s:
        got = report_rows(s, "steps", breakdown="tensorboard")
    assert sum(r[TOTAL] for r in got) / len(got) == ((320 - 100) + (610 - 350)) / 2


# -- GPU utilization --------------------------------------------------------------------------

def test_gpu_utilization():
    """test_gpu_utilization: the kernels' union (130-170, 200-220) over the profiled span (no
    steps: the trace, 100-220) = (40 + 20) / 120. duckprof's step GPU busy % and the
    categories report's busy % are that figure (no memcpy or memset here, which duckprof
    counts as busy and the plugin does not)."""
    with session("gpu_utilization") as s:
        (step,) = report_rows(s, "steps")
        cats = report_rows(s, "categories")
    assert step["gpu_busy_pct"] == pytest.approx((40 + 20) / 120 * 100)
    assert {(r["busy_us"], r["window_us"]) for r in cats} == {(60.0, 120.0)}


def test_blocks_per_sm_and_occupancy_per_kernel_name():
    """test_gpu_utilization's kernel_stat: per kernel name, the blocks per SM and est.
    achieved occupancy weighted by duration, a kernel of 0 µs not counted (gemmSN: its
    15 µs kernel alone, 0.6 and 0.1; the NLL kernel: 10, 25 and 20 µs). The plugin's
    test writes occupancy as a fraction: duckprof gives the trace's value as it is."""
    with session("gpu_utilization") as s:
        rows = {r["name"]: r for r in report_rows(s, "kernels", occupancy=True)}
        plain = report_rows(s, "kernels")
    gemm, nll = rows["void gemmSN_TN_kernel_64addr"], rows["void cunn_ClassNLLCriterion_updateGradInput_kernel<float>"]
    assert (gemm["blocks_per_sm"], gemm["occupancy_pct"]) == (0.6, 0.1)
    assert nll["blocks_per_sm"] == round((0.5 * 10 + 0.3 * 25 + 10.5 * 20) / (10 + 25 + 20), 3)
    assert nll["occupancy_pct"] == round((0.6 * 10 + 1.0 * 25 + 0.3 * 20) / (10 + 25 + 20), 2)
    assert "blocks_per_sm" not in plain[0]  # only asked for: it reads every kernel's args


def test_sm_efficiency_and_occupancy_per_device():
    """test_gpu_utilization's GPU summary: est. SM efficiency integrates min(1, the
    running kernels' summed blocks per SM) over time: 0.5*5 + 1.0*5 (0.5 + 0.6 capped)
    + 0.6*5 + 0.9*5 + 0.3*20 + 1.0*20 (10.5 capped) = 41 µs. The plugin divides by the
    profiled span (220 - 100); duckprof's gpu-time by its GPU window (first kernel start
    130 to last end 220), as every figure of that report. Occupancy: the kernels'
    duration-weighted mean, (0.6*10 + 0.1*15 + 1.0*25 + 0.3*20) / 70. Per stream the
    same over its own kernels and window (stream 8: its 15 µs kernel alone, the 0 µs
    one not counted)."""
    with session("gpu_utilization") as s:
        rows = {(r["scope"], r["stream"]): r for r in report_rows(s, "gpu-time", occupancy=True)}
    dev = rows[("device", None)]
    assert dev["window_us"] == 90.0
    assert dev["sm_efficiency_pct"] == pytest.approx(100 * 41 / 90)
    assert dev["occupancy_pct"] == pytest.approx((0.6 * 10 + 0.1 * 15 + 1.0 * 25 + 0.3 * 20) / 70)
    assert rows[("stream", 7)]["sm_efficiency_pct"] == pytest.approx(100 * (0.5 * 10 + 0.3 * 25 + 1.0 * 20) / 90)
    assert (rows[("stream", 8)]["sm_efficiency_pct"], rows[("stream", 8)]["occupancy_pct"]) == (pytest.approx(60.0), 0.1)


def test_gpu_utilization_kernel_out_of_step():
    """test_gpu_utilization_kernel_out_of_step: both kernels run outside ProfilerStep#2
    (100-200): its utilization is 0 (the plugin's SM efficiency and occupancy are None:
    it counts the steps only; duckprof's gpu-time --occupancy is over the GPU window)."""
    with session("gpu_utilization_kernel_out_of_step") as s:
        (step,) = report_rows(s, "steps")
        (tb,) = report_rows(s, "steps", breakdown="tensorboard")
    assert (step["step"], step["gpu_busy_pct"], step["kernel_us"]) == (2, 0.0, 0.0)
    assert (tb["step"], tb[K], tb[TOTAL]) == (2, 0.0, 100.0)


# -- operator view (op_list_groupby_name) ---------------------------------------------------

def op_rows(s, **options):
    return {r["name"]: r for r in report_rows(s, "ops", limit=0, **options) if r["kind"] == "cpu_op"}


def plugin_view(r):
    """(calls, host_duration, device_duration, self_host_duration, self_device_duration)"""
    return (r["count"], r["cpu_total_us"], r["device_total_us"], r["self_cpu_us"], r["self_device_us"])


# stem -> {operator: (calls, host, device, self host, self device)} as the plugin asserts
OPS = {
    "all_categories": {"aten::to": (1, 60, 0, 60, 0), "aten::nll_loss_backward": (1, 70, 30, 70 - 20 - 10 - 5, 30)},
    "no_profilerstep": {"aten::to": (1, 60, 0, 60, 0), "aten::nll_loss_backward": (1, 70, 100, 70 - 20, 100)},
    "multiple_profilersteps_no_overlap": {"aten::to": (1, 60, 40, 60 - 5, 40), "aten::mm": (1, 50, 200, 50 - 5, 200)},
}


@pytest.mark.parametrize("stem", sorted(OPS))
def test_operator_view(stem):
    """The plugin's operator list leaves out ProfilerStep#N, enumerate(DataLoader)# and
    runtime calls; duckprof's is torch's key_averages() table, which lists them as rows
    (ProfilerStep*, the DataLoader annotation, cudaLaunchKernel, ...): the operators the
    plugin lists have its figures."""
    with session(stem) as s:
        ops = op_rows(s)
        by_shape = report_rows(s, "ops", limit=0, group_by_input_shape=True)
    for name, want in OPS[stem].items():
        assert plugin_view(ops[name]) == want, name
    # op_list_groupby_name_input: the same figures per name and Input Dims
    shapes = {"aten::to": [[2, 8, 5], [], [], [], [], [], [], []],
              "aten::nll_loss_backward": [[], [32, 1000], [32], [], [], [], []], "aten::mm": []}
    for name, want in OPS[stem].items():
        row = only(by_shape, name=name)
        assert json.loads(row["input_shapes"]) == shapes[name]
        assert plugin_view(row) == want
    assert set(ops) - set(OPS[stem]) <= {"ProfilerStep*", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"}


def test_device_time_follows_the_external_id():
    """test_external_id: launch calls of 0 µs at 120 (mm's start) and 190 (its end) are as much
    inside aten::mm (120-190) as inside aten::mat_mul (100-200) by time; their External id
    says which op launched them. mat_mul: device 5 + 6 + 7 + 8, self 6 + 8; mm: 5 + 7, self the
    same. (Before: by time alone, both calls at 120 went to mm and both at 190 to mat_mul:
    mm 5 + 6, mat_mul self 7 + 8.)"""
    with session("external_id") as s:
        ops = op_rows(s)
    assert (ops["aten::mat_mul"]["device_total_us"], ops["aten::mat_mul"]["self_device_us"]) == (26, 14)
    assert (ops["aten::mm"]["device_total_us"], ops["aten::mm"]["self_device_us"]) == (12, 12)


def test_external_id_of_an_op_that_does_not_contain_the_call(tmp_path):
    """duckprof's guard on the rule above (not a plugin test): an External id names the owner
    only when that op contains the launch call on its thread. external_id.json with mm's
    second launch (7 µs, at 190) carrying the id of an op that runs later (300-310): it stays
    with the op that contains it in time, as before the External id rule (mat_mul, whose end
    190 is inside), while the launches view keeps linking the kernel by its id."""
    doc = json.loads((TB / "external_id.json").read_text())
    doc["traceEvents"].append({"ph": "X", "cat": "Operator", "name": "aten::later", "pid": 13721, "tid": "456",
                               "ts": 300, "dur": 10, "args": {"Input Dims": [], "External id": 9}})
    for e in doc["traceEvents"]:
        if e["args"].get("correlation") == 336:
            e["args"]["external id"] = 9
    path = tmp_path / "later.json"
    path.write_text(json.dumps(doc))
    with duckprof.connect() as s:
        s.load([str(path)], run="r")
        ops = op_rows(s)
        (link,) = s.sql("SELECT op_name FROM launches WHERE correlation = 336").fetchall()
    assert (ops["aten::mat_mul"]["device_total_us"], ops["aten::mat_mul"]["self_device_us"]) == (26, 6 + 8 + 7)
    assert (ops["aten::mm"]["device_total_us"], ops["aten::later"]["device_total_us"]) == (5, 0)
    assert link == ("aten::later",)


@pytest.mark.parametrize("stem", ["operator_relation_0", "operator_relation_1"])
def test_operator_relation(stem):
    """test_operator_relation: aten::mm (70 µs) starts (ends) with aten::mat_mul (100 µs) and is its child."""
    with session(stem) as s:
        ops = op_rows(s)
    assert (ops["aten::mat_mul"]["self_cpu_us"], ops["aten::mm"]["self_cpu_us"]) == (100 - 70, 70)


def test_self_time():
    """test_self_time: runtime calls are children (they leave an op's self time)."""
    with session("self_time") as s:
        ops = op_rows(s)
    assert plugin_view(ops["aten::mat_mul"]) == (1, 100, 20 + 16, 100 - 40 - 25, 16)
    assert plugin_view(ops["aten::mm"]) == (1, 40, 20, 30, 20)


def test_remove_dup_nodes():
    """test_remove_dup_nodes: aten::mm in aten::mm in aten::mm is one call (torch's
    _remove_dup_nodes), which keeps the innermost one's kernel."""
    with session("remove_dup_nodes") as s:
        ops = op_rows(s)
    assert list(ops) == ["aten::mm"]
    assert (ops["aten::mm"]["count"], ops["aten::mm"]["self_device_us"]) == (1, 8)


def test_top_level_runtime():
    """test_top_level_runtime: a launch on another thread than the op is not the op's."""
    with session("top_level_runtime") as s:
        ops = op_rows(s)
        (kernel,) = report_rows(s, "kernels")
    assert (ops["aten::mm"]["device_total_us"], ops["aten::mm"]["self_device_us"]) == (0, 0)
    assert kernel["count"] == 1


def test_runtime_called_by_profilerstep():
    """test_runtime_called_by_profilerstep: the plugin's operator list is empty (ProfilerStep
    is not an operator); duckprof's has torch's ProfilerStep* row, which launched the kernel."""
    with session("runtime_called_by_profilerstep") as s:
        ops = op_rows(s)
        (kernel,) = report_rows(s, "kernels")
        (launch,) = s.sql("SELECT op_name FROM launches").fetchall()
    assert list(ops) == ["ProfilerStep*"] and ops["ProfilerStep*"]["self_device_us"] == 8
    assert kernel["count"] == 1 and launch == ("ProfilerStep#1",)


def test_runtime_launch_multiple_kernels():
    """test_runtime_launch_multipe_kernels: one launch call, two kernels (one per GPU)."""
    with session("runtime_launch_multipe_kernels") as s:
        ops = op_rows(s)
        kernels = report_rows(s, "kernels")
    assert ops["Broadcast"]["device_total_us"] == 120318 + 132800
    assert [(r["name"], r["count"]) for r in kernels] == [("ncclBroadcastRingLLKernel_copy_i8(ncclColl)", 2)]


def test_datapipe_is_data_loading_not_an_operator_row_of_the_plugin():
    """test_datapipe: the plugin leaves enumerate(DataPipe)# out of its operators; duckprof's
    ops is key_averages(), where it is a row like any record_function (by design)."""
    with session("datapipe") as s:
        ops = op_rows(s)
    assert list(ops) == ["enumerate(DataPipe)#ShufflerIterDataPipe"]


def test_tensor_core_trace_operators():
    """test_tensor_core: the three operators and their kernels."""
    with session("tensor_core") as s:
        ops = op_rows(s)
        launches = s.sql("SELECT name, op_name FROM launches ORDER BY name").fetchall()
    assert sorted(ops) == ["aten::conv2d", "aten::cudnn_convolution", "op_no_tc"]
    assert ops["aten::conv2d"]["device_total_us"] == 15 + 10
    assert launches == [("kernel_no_tc", "op_no_tc"),
                        ("volta_fp16_s884cudnn_fp16_128x128_ldg8_splitK_relu_f2f_exp_small_nhwc_tn_v1",
                         "aten::cudnn_convolution")]


def test_tensor_core_figures():
    """test_tensor_core: per operator tc_eligible, tc_self_ratio, tc_total_ratio: aten::conv2d
    eligible (its name), self 0 (duckprof: NULL, it has no self device time), total 15 / (15 + 10);
    op_no_tc not eligible, 0, 0; aten::cudnn_convolution eligible, 1.0, 1.0 (report ops
    --tensor-cores, in %). Per kernel tc_used: the s884 kernel yes, kernel_no_tc no (report kernels'
    tensor_cores_used); the device's tc_ratio 15 / (15 + 10) (gpu-time's tensor_cores_pct). (Before:
    no such columns or option.)"""
    expected = {"aten::conv2d": (True, None, 100 * 15 / 25), "op_no_tc": (False, 0.0, 0.0),
                "aten::cudnn_convolution": (True, 100.0, 100.0)}
    with session("tensor_core") as s:
        ops = {r["name"]: r for r in report_rows(s, "ops", tensor_cores=True, limit=0)}
        kernels = {r["name"]: r["tensor_cores_used"] for r in report_rows(s, "kernels")}
        device = only(report_rows(s, "gpu-time"), key="scope", scope="device")
    for name, (eligible, self_pct, total_pct) in expected.items():
        r = ops[name]
        assert r["tc_eligible"] is eligible, name
        assert r["tc_self_pct"] == (None if self_pct is None else pytest.approx(self_pct)), name
        assert r["tc_total_pct"] == pytest.approx(total_pct), name
    assert kernels == {"kernel_no_tc": False,
                       "volta_fp16_s884cudnn_fp16_128x128_ldg8_splitK_relu_f2f_exp_small_nhwc_tn_v1": True}
    assert device["tensor_cores_pct"] == pytest.approx(100 * 15 / 25)

# -- kernel view (kernel_stat, kernel_list_groupby_name_op) ---------------------------------

# stem -> (kernel name, the op that launched it, count, sum, mean, min, max) as the plugin asserts
KERNELS = {
    "all_categories": ("void cunn_ClassNLLCriterion_updateGradInput_kernel<float>", "aten::nll_loss_backward",
                       1, 15, 15, 15, 15),
    "no_profilerstep": ("void cunn_ClassNLLCriterion_updateGradInput_kernel<float>", "aten::nll_loss_backward",
                        1, 100, 100, 100, 100),
    "multiple_profilersteps_no_overlap": ("void cunn_ClassNLLCriterion_updateGradInput_kernel<float>", "aten::mm",
                                          1, 200, 200, 200, 200),
}


@pytest.mark.parametrize("stem", sorted(KERNELS))
def test_kernel_view(stem):
    name, op, *stats = KERNELS[stem]
    with session(stem) as s:
        (row,) = report_rows(s, "kernels")
        ops = s.sql("SELECT DISTINCT op_name FROM launches WHERE kind = 'kernel'").fetchall()
    assert [row["name"], row["count"], row["total_us"], row["mean_us"], row["min_us"], row["max_us"]] == [name, *stats]
    assert ops == [(op,)]


def test_kernels_by_launch_configuration():
    """test_group_by_kernel_columns groups kernels by name, op, grid, block, registers and
    shared memory: (kernel1, op1, block 16x16x16) 2 calls 15 + 10; (op1, 16x16x64) 1 call 13;
    (op2, 16x16x64) 1 call 17. duckprof's --group-by-launch groups by name, grid and block
    only (the op is the launches view's op_name): the 16x16x64 rows are one, 2 calls, 13 + 17."""
    with session("group_by_kernel_columns") as s:
        rows = report_rows(s, "kernels", group_by_launch=True)
        by_op = s.sql("SELECT op_name, block::VARCHAR, count(*), sum(l.dur_ns) // 1000 FROM launches l "
                      "JOIN kernels k USING (trace_id, event_id) GROUP BY ALL ORDER BY ALL").fetchall()
    got = {(r["grid"], r["block"]): (r["count"], r["total_us"], r["min_us"], r["max_us"]) for r in rows}
    assert got == {("[16,1,1]", "[16,16,16]"): (2, 25.0, 10.0, 15.0), ("[16,1,1]", "[16,16,64]"): (2, 30.0, 13.0, 17.0)}
    assert by_op == [("op1", "[16,16,16]", 2, 25), ("op1", "[16,16,64]", 1, 13), ("op2", "[16,16,64]", 1, 17)]


def test_kernels_missing_launch_fields():
    """test_group_by_kernel_columns_invalid_input: kernels without grid, block, registers or
    shared memory load, and a missing field is a group of its own (the plugin: 5 groups, as
    it also keys on registers and shared memory; duckprof's name/grid/block: 4)."""
    with session("group_by_kernel_columns_invalid_input") as s:
        rows = report_rows(s, "kernels", group_by_launch=True)
        regs = s.sql("SELECT registers_per_thread, shared_memory_bytes FROM kernels ORDER BY ts_ns").fetchall()
    got = {(r["grid"], r["block"]): (r["count"], r["total_us"]) for r in rows}
    assert got == {(None, "[16,16,16]"): (1, 1.0), ("[16,1,1]", None): (1, 2.0),
                   ("[16,1,1]", "[16,16,16]"): (2, 3.0 + 4.0), (None, None): (1, 5.0)}
    assert regs == [(18, 0), (18, 0), (None, 0), (18, None), (None, None)]


# -- memory view ------------------------------------------------------------------------------

def test_memory_view_per_operator():
    """test_memory_view: get_memory_statistics per device, [self increase, self allocation size,
    self allocation count, increase, allocation size, allocation count, calls]; duckprof's
    memory --ops has torch's net bytes (self_*_mem_bytes, *_mem_bytes: the plugin's 'increase
    size'), the allocations' bytes and number (self_*_alloc_bytes, *_alloc_bytes, self_*_allocs,
    *_allocs: the [memory] events of positive bytes) and the calls. An operator whose figures
    are all 0 is not a row of memory --ops. (Before: no allocation columns, and the operators
    that free all they allocate, aten::nll_loss_backward, aten::copy_, aten::addmm, no rows.)"""
    gpu = {"aten::to": [104, 104, 2, 104, 204, 3, 4], "aten::nll_loss_backward": [0, 10, 1, 0, 10, 1, 1],
           "aten::copy_": [0, 100, 1, 0, 100, 1, 1], "aten::addmm": [0, 30, 1, 0, 30, 1, 1],
           "aten::tranas_stride": [0, 50, 1, 0, 50, 1, 1], "aten::transpose": [0, 50, 1, 0, 100, 2, 1],
           "aten::t": [0, 100, 1, 0, 200, 3, 1], "aten::liner": [20, 130, 3, 20, 360, 7, 1]}
    cpu = {"aten::to": [4, 4, 1, 4, 4, 1, 4], "aten::liner": [0, 100, 1, 50, 150, 2, 1],
           "aten::tranas_stride": [50, 50, 1, 50, 50, 1, 1], "aten::transpose": [0, 0, 0, 50, 50, 1, 1],
           "aten::t": [0, 0, 0, 50, 50, 1, 1]}
    with session("memory_view") as s:
        rows = {r["name"]: r for r in report_rows(s, "memory", ops=True, allocs=True, limit=0)}
    for kind, expected in (("device", gpu), ("cpu", cpu)):
        cols = [f"self_{kind}_mem_bytes", f"self_{kind}_alloc_bytes", f"self_{kind}_allocs",
                f"{kind}_mem_bytes", f"{kind}_alloc_bytes", f"{kind}_allocs", "calls"]
        for name, values in expected.items():
            assert [rows[name][c] for c in cols] == values, (kind, name)
        # the other operators (and ProfilerStep*, not an operator in the plugin) have none
        assert all(rows[n][c] == 0 for n in rows if n not in expected and not n.startswith(("ProfilerStep",
                                                                                              "enumerate"))
                   for c in cols[:-1]), kind


def test_memory_curve_peaks():
    """TestMemoryCurve: the curve is each event's Total Allocated / Total Reserved at its time
    after the profiler's start (the first event, at 1); duckprof reports its peaks and its end,
    not the curve: CPU peak 8000 at 100 - 1, reserved 0; GPU peak 8000 at 106 - 1, reserved
    10240; both end at 0 (the last events' totals). (Before: no time for the peaks, as the
    trace, [memory] events only, has no complete event to start its window.) The test's last
    CPU event frees Addr 4 (freed at 600) instead of 5, so duckprof's live-allocation count
    keeps the 4000 bytes of Addr 5 (its totals are the trace's, not its own sum)."""
    with session("memory_curve") as s:
        rows = {r["device_kind"]: r for r in report_rows(s, "memory")}
    assert {k: (r["peak_allocated_bytes"], r["peak_at_us"], r["peak_reserved_bytes"], r["end_allocated_bytes"])
            for k, r in rows.items()} == {"CPU": (8000, 99, 0, 0), "CUDA": (8000, 105, 10240, 0)}
    assert (rows["CPU"]["live_allocs"], rows["CPU"]["live_bytes"]) == (1, 4000)


def test_memory_curve():
    """TestMemoryCurve.test_memory_curve_no_step_plot: per device ('CPU', 'GPU0') one point per
    [memory] event, [ts - profiler_start_ts, Total Allocated, Total Reserved], the start the
    trace's first event (ts 1). `report memory --curve` gives the same points (its default
    --buckets 100 keeps every event of a device with at most 100). The step plot's extra points
    (test_memory_curve_step_plot: each point repeated at the next one's time) are drawing, not data."""
    cpu = [[1, 4, 0], [20, 0, 0], [100, 8000, 0], [200, 0, 0], [300, 4, 0], [400, 20, 0], [500, 4020, 0],
           [600, 4004, 0], [700, 4084, 0], [800, 4080, 0], [900, 4000, 0], [905, 0, 0]]
    gpu = [[2, 400, 512], [22, 0, 512], [105, 5000, 10240], [106, 8000, 10240], [205, 3000, 10240],
           [401, 4024, 10240], [499, 4028, 10240], [501, 1028, 10240], [502, 1024, 10240], [906, 0, 10240]]
    with session("memory_curve") as s:
        rows = report_rows(s, "memory", curve=True)
    curves = {}
    for r in rows:
        curves.setdefault((r["device_kind"], r["device"]), []).append(
            [r["at_us"], r["allocated_bytes"], r["reserved_bytes"]])
    assert curves == {("CPU", 0): [[ts - 1, a, b] for ts, a, b in cpu],
                      ("CUDA", 0): [[ts - 1, a, b] for ts, a, b in gpu]}
    assert {r["events"] for r in rows} == {1}


# -- module view -------------------------------------------------------------------------------

def test_module_view():
    """TestModuleView.test_build_module_hierarchy: two root modules, Conv2 and MyModule (sorted
    by name), MyModule with one child, Linear. The plugin's figures (aggegate_module_view, summed
    per module over its ModuleNodes; its test asserts only the tree), from module_op.py by hand:
    MyModule 3 occurrences of 211 us = 633, self 633 - 3 x 62 (its Linear) = 447, no operator
    of its own; Linear 3 x 62 = 186, 3 operators (one aten::addmm each), self 186 - (31 + 32 +
    33) = 90; Conv2 1 x 211, self 211. No kernels: device 0, and the average is the host's
    (211, 211, 62)."""
    with session("build_module_hierarchy") as s:
        rows = report_rows(s, "modules")
    cols = ["module", "level", "path", "calls", "operators", "host_us", "self_host_us", "device_us",
            "self_device_us", "avg_us"]
    assert [tuple(r[c] for c in cols) for r in rows] == [
        ("Conv2", 1, "Conv2", 1, 0, 211, 211, 0, 0, 211),
        ("MyModule", 1, "MyModule", 3, 0, 633, 447, 0, 0, 211),
        ("· Linear", 2, "MyModule/Linear", 3, 3, 186, 90, 0, 0, 62),
    ]
    assert [(r["module"], r["module_id"]) for r in rows] == [("Conv2", 100), ("MyModule", 0), ("· Linear", 1)]


# -- distributed view --------------------------------------------------------------------------

def test_communication_sizes_from_the_nccl_ops():
    """test_distributed_nccl, comm_ops rows [name, calls, total size, avg size, ...]: per worker
    nccl:broadcast 1 call of 212,480 bytes (its Input Dims [[53120]] x float), nccl:all_reduce
    1 of 8,196,000 ([[2049000]]). The NCCL kernels carry no size: duckprof's collectives take
    the nccl:* op's first input, as the plugin (before: msg_bytes NULL, no bandwidth). The
    plugin's latency and data-transfer columns and its overlap and wait views have no
    counterpart (fixtures/tb_plugin/README.md)."""
    with session("distributed_nccl_worker0", "distributed_nccl_worker1") as s:
        got = s.sql("SELECT trace_id, collective, count(*), sum(msg_bytes), any_value(dtype) FROM collectives "
                    "GROUP BY ALL ORDER BY ALL").fetchall()
        rows = {r["collective"]: r for r in report_rows(s, "collectives")}
    assert got == [(t, c, 1, b, "Float") for t in (1, 2) for c, b in (("all_reduce", 8196000), ("broadcast", 212480))]
    assert (rows["broadcast"]["msg_bytes"], rows["broadcast"]["total_bytes"]) == (212480, 2 * 212480)
    # algbw: the bytes over the kernel's time, the two ranks' kernels: 212,480 B / (16 + 31) µs
    assert rows["broadcast"]["algbw_gbps"] == pytest.approx(2 * 212480 / 47e-6 / 1e9)


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_gloo_collectives_recorded_as_operators(kind):
    """test_distributed_gloo_gpu/_cpu, comm_ops rows per worker: gloo:broadcast 3 calls, 637,440
    bytes in all (3 x [[53120]] float), gloo:all_reduce 2 calls, 16,392,000 (2 x [[2049000]]).
    The traces write the gloo:* annotations as operators (cpu_op), as PyTorch 1.9 did (before:
    duckprof's collectives read them only as user annotations: none). The plugin's latency
    (63 µs for worker0's broadcasts: the union of their spans) is not duckprof's total_us (the
    sum of the calls' durations, 38 + 36 + 18)."""
    with session(f"distributed_gloo_{kind}_worker0", f"distributed_gloo_{kind}_worker1") as s:
        got = s.sql("SELECT trace_id, collective, count(*), sum(msg_bytes), sum(dur_ns) // 1000 FROM collectives "
                    "GROUP BY ALL ORDER BY ALL").fetchall()
    assert got == [(1, "all_reduce", 2, 16392000, 18 + 36), (1, "broadcast", 3, 637440, 38 + 36 + 18),
                   (2, "all_reduce", 2, 16392000, 38 + 16), (2, "broadcast", 3, 637440, 28 + 30 + 6)]


def test_a_trace_of_one_nccl_annotation():
    """test_distributed_nccl_user_annotation_has_communication: the plugin only flags the trace
    (one nccl:all_reduce user annotation) as having communication. duckprof lists the
    annotation in ops (an async c10d annotation: total time only) and, with no CPU operator to
    make a step of, gives no breakdown and says why (before: its note claimed one step over
    the CPU operators, and the table was empty)."""
    stem = "distributed_nccl_user_annotation_has_communication_worker0"
    with session(stem) as s:
        res = s.report_result("steps", breakdown="tensorboard")
        rows = res.relation.fetchall()
        ops = report_rows(s, "ops")
    assert rows == [] and res.notes == [
        f"{stem}.json: no ProfilerStep#N annotations in this trace: no CPU operators either, so no step"]
    assert [(r["name"], r["kind"], r["cpu_total_us"], r["self_cpu_us"]) for r in ops] == [
        ("nccl:all_reduce", "user_annotation", 71.0, 0.0)]


# -- loading what the plugin's tests feed it ---------------------------------------------------

@pytest.mark.parametrize("path", sorted(p.name for p in TB.glob("*.json")))
def test_every_plugin_trace_loads(path):
    with duckprof.connect() as s:
        s.load([str(TB / path)], run="r")
        assert s.sql("SELECT count(*) FROM events").fetchall()[0][0] > 0


def test_a_bare_event_list_loads(tmp_path):
    """The plugin's test strings are bare JSON lists of events (the Chrome trace format
    allows it): the same figures as the wrapped document."""
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(json.loads((TB / "all_categories.json").read_text())["traceEvents"]))
    with duckprof.connect() as s:
        s.load([str(bare)], run="r")
        (row,) = report_rows(s, "steps", breakdown="tensorboard")
    assert {k: row[k] for k in STEP_COSTS["all_categories"][0]} == STEP_COSTS["all_categories"][0]


def test_compute_properties_are_device_properties():
    """gpu_metrics_input.json (the plugin's trace-viewer test input, PyTorch 1.8) names its GPUs
    in 'computeProperties', Kineto's first name for deviceProperties (with 'major'/'minor'):
    its device 0 is a Tesla V100-DGXS-32GB with 80 SMs (before: no device name, no peaks)."""
    with session("gpu_metrics_input") as s:
        devs = s.sql("SELECT device, name, compute_major, compute_minor, num_sms FROM devices "
                     "ORDER BY device").fetchall()
        rows = report_rows(s, "devices")
    assert devs[0] == (0, "Tesla V100-DGXS-32GB", 7, 0, 80) and len(devs) == 4
    assert [(r["device"], r["device_name"], r["peak_device"], r["gpu_events"]) for r in rows][0] == (
        0, "Tesla V100-DGXS-32GB", "NVIDIA V100 SXM2", 32)


# -- the plugin's interval helpers (tb_plugin/test/test_ranges.py) ---------------------------
# Its ranges are in µs with one decimal: here in tenths, as integers. duckprof's macros
# (sql/templates/intervals.sql) merge and measure; the plugin's subtraction and intersection
# lists are checked by their lengths per range of the first list.

RANGES1 = "VALUES (1, 11, 22), (1, 33, 44), (1, 55, 66)"
RANGES2 = "VALUES (1, 0, 1), (1, 10, 14), (1, 15, 16), (1, 19, 34), (1, 43, 46)"


def test_merge_ranges():
    """test_merge_ranges: (1.1,2.2) (1.5,2.3) (3.3,3.9) (3.5,3.6) (3.7,3.8) (4.1,4.2)
    -> (1.1,2.3) (3.3,3.9) (4.1,4.2)."""
    got = macro_sql("""{% from 'templates/intervals.sql' import merged_intervals %}
        WITH src(trace_id, ts_ns, end_ns) AS (VALUES (1, 11, 22), (1, 15, 23), (1, 33, 39), (1, 35, 36),
                                                     (1, 37, 38), (1, 41, 42))
        SELECT start_ns, end_ns FROM ({{ merged_intervals('src', ['trace_id']) }}) ORDER BY start_ns""")
    assert got == [(11, 23), (33, 39), (41, 42)]


def test_get_ranges_sum():
    """test_get_ranges_sum: (1.1,2.2) (3.3,4.4) (5.5,6.6) -> 3.3."""
    got = macro_sql("""{% from 'templates/intervals.sql' import union_lengths %}
        WITH src(trace_id, ts_ns, end_ns) AS (""" + RANGES1 + """)
        {{ union_lengths('src', ['trace_id']) }}""")
    assert got == [(1, 33)]


def test_intersection_and_subtraction_of_range_lists():
    """test_intersection_ranges_lists: (1.1,1.4) (1.5,1.6) (1.9,2.2) (3.3,3.4) (4.3,4.4), i.e.
    0.7, 0.2 and 0 within the three ranges of the first list; test_subtract_ranges_lists:
    (1.4,1.5) (1.6,1.9) (3.4,4.3) (5.5,6.6), i.e. 0.4, 0.9 and 1.1: each range's length less
    its intersection."""
    got = macro_sql("""{% from 'templates/intervals.sql' import covered_length, merged_intervals %}
        WITH w(trace_id, ts_ns, end_ns) AS (""" + RANGES1 + """),
             r(trace_id, ts_ns, end_ns) AS (""" + RANGES2 + """),
             m AS ({{ merged_intervals('r', ['trace_id']) }})
        SELECT ts_ns, covered_ns, end_ns - ts_ns - covered_ns
        FROM ({{ covered_length('w', 'm', ['trace_id']) }}) ORDER BY ts_ns""")
    assert got == [(11, 3 + 1 + 3, 1 + 3), (33, 1 + 1, 9), (55, 0, 11)]
