"""Trace formats outside the corpus: torch's pre-Kineto profiler (torch < 1.8,
written by EventList.export_chrome_trace: no categories, pids "CPU functions" /
"CUDA functions") and Intel XPU (xpu_runtime calls, kernels on a "sycl queue").
Expected values are read by hand off the fixtures in fixtures/handmade/."""

import duckprof

from conftest import HANDMADE


def test_pre_kineto_ops_kernels_flows_and_nesting():
    with duckprof.connect() as s:
        s.load([HANDMADE / "pre_kineto_torch17.json"])
        ops = s.sql("SELECT name, tid, ts_ns, dur_ns, depth, self_ns FROM cpu_ops ORDER BY ts_ns").fetchall()
        assert ops == [
            ("aten::linear", 1, 100_500, 40_250, 0, 40_250 - 30_000),
            ("aten::addmm", 1, 102_000, 30_000, 1, 30_000),
            ("aten::relu", 1, 141_000, 5_000, 0, 5_000),
            # a remote (RPC) event: its tid is the text ' node_id:1, thread_id:5 '
            ("rpc_async#aten::add", 5, 150_000, 2_000, 0, 2_000),
        ]
        kernels = s.sql("SELECT name, device, ts_ns, dur_ns FROM kernels").fetchall()
        assert kernels == [("volta_sgemm_128x64_nn", 0, 140_000, 12_500)]
        flows = s.sql("SELECT cat, flow_id, src_ts_ns, dst_ts_ns FROM flows").fetchall()
        assert flows == [("cpu_to_cuda", "0", 102_000, 140_000)]
        raw = s.sql("SELECT count(*) FILTER (cat_raw IS NULL), count(*) FROM events").fetchall()
        assert raw == [(5, 7)]


def test_xpu_runtime_call_links_kernel_to_op_and_sycl_queue_is_the_stream():
    with duckprof.connect() as s:
        s.load([HANDMADE / "xpu_launch.json"])
        rt = s.sql("SELECT api, name, correlation, external_id FROM runtime").fetchall()
        assert rt == [("xpu_runtime", "urEnqueueKernelLaunch", 4131, 7)]
        row = s.sql("""SELECT name, device, stream, dur_ns, launch_name, launch_ts_ns, op_name,
                              op_link, input_dims::VARCHAR
                       FROM launches""").fetchall()
        assert row == [("gemm_kernel", 0, 64, 8_960, "urEnqueueKernelLaunch", 1_010_000, "aten::mm",
                        "external_id", "[[64,32],[32,16]]")]
        # the runtime call sits inside its op: nesting links it
        assert s.sql("SELECT depth FROM runtime").fetchall() == [(1,)]
