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


def test_arg_columns_read_every_form_of_a_value(tmp_path):
    """The numbers read from args (external_id, correlation, device, stream;
    normalize.sql) in each form a writer may give them: a string holding a
    number counts, a fraction rounds half away from zero, anything else is
    NULL; the first name present with a number wins ('External id', then
    'external id'; 'stream', 'stream_id', 'sycl queue'); a JSON arg keeps
    its text, null included. Written against the values of json_extract's
    text with its quotes trimmed (before 2026-11-25): the cheaper unquoting
    must give the same."""
    import json

    values = ['7', '"7"', '2.5', '"2.5"', '-2.5', '"  7 "', '1e3', '"1e3"', 'true', 'null', '"abc"', '{"a": 1}',
              '[1]', '"\\"5\\""', '"5\\""', '""', '9223372036854775808', '"0x10"', '1.0e-5', '12345678901234567890']
    expect = [7, 7, 3, 3, -3, 7, 1000, 1000, None, None, None, None,
              None, None, None, None, None, 16, 0, None]
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 1, "ts": i, "dur": 1,
               "args": "ARGS"} for i in range(len(values))]
    text = json.dumps({"traceEvents": events})
    for v in values:
        text = text.replace('"ARGS"', '{"correlation": %s, "device": %s}' % (v, v), 1)
    fallbacks = [
        '{"External id": "x", "external id": 4, "stream": null, "stream_id": "5", "sycl queue": 6}',
        '{"external id": "8", "sycl queue": "9", "Input Dims": null, "Input type": ["float"]}',
        '{"External id": 1, "external id": 2, "stream": 3, "Concrete Inputs": ["", "1"], "Input Dims": [[2, 3]]}',
    ]
    extra = [{"ph": "X", "cat": "kernel", "name": f"f{i}", "pid": 0, "tid": 2, "ts": i, "dur": 1, "args": "ARGS"}
             for i in range(len(fallbacks))]
    text = text[:-2] + ", " + ", ".join(json.dumps(e) for e in extra) + "]}"
    for f in fallbacks:
        text = text.replace('"ARGS"', f, 1)
    path = tmp_path / "arg_values.json"
    path.write_text(text)
    with duckprof.connect() as s:
        s.load([path])
        got = s.sql("SELECT correlation, device FROM events WHERE name LIKE 'k%' "
                    "ORDER BY ts_ns").fetchall()
        assert got == [(e, e) for e in expect]
        got = s.sql("""SELECT external_id, stream, input_dims::VARCHAR, input_types::VARCHAR,
                              concrete_inputs::VARCHAR
                       FROM events WHERE name LIKE 'f%' ORDER BY ts_ns""").fetchall()
        assert got == [(4, 5, None, None, None), (8, 9, "null", '["float"]', None),
                       (1, 3, "[[2,3]]", None, '["","1"]')]
