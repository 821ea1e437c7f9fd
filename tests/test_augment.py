"""`duckprof augment IN OUT`: kernel_flop / kernel_num_gb written into the args
of kernels and their ops, everything else kept, and the result loads back
with the same numbers.

Checked independently: both files are read with Python's json module and
compared event by event; the values written are compared with the
kernel_estimates view of the original; the augmented file is loaded again.
"""

from __future__ import annotations

import gzip
import json
import os

import pytest

from conftest import REPO, assert_one_line_error, cli_app, corpus_path, invoke, needs_corpus, run_cli  # noqa: F401

import duckprof
from duckprof.augment import augment

FIX = REPO / "fixtures" / "kernels"
ADDED = ("kernel_flop", "kernel_num_gb")


def _read(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)

    def no_dup(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
        return dict(pairs)

    return json.loads(data, object_pairs_hook=no_dup)


def _events(doc):
    return doc if isinstance(doc, list) else doc["traceEvents"]


def _expected(src):
    """{1-based event position: (flops, bytes)} from the original trace's kernel_estimates."""
    with duckprof.connect() as s:
        s.load([str(src)])
        k = s.con.execute("SELECT event_id, flops, bytes FROM kernel_estimates "
                          "WHERE flops IS NOT NULL OR bytes IS NOT NULL").fetchall()
        o = s.con.execute("SELECT DISTINCT op_event_id, op_flops, op_bytes FROM kernel_estimates "
                          "WHERE op_event_id IS NOT NULL AND (op_flops IS NOT NULL OR op_bytes IS NOT NULL)"
                          ).fetchall()
        est = s.con.execute("SELECT event_id, name, flops, bytes, dtype, peak_dtype FROM kernel_estimates "
                            "ORDER BY event_id").fetchall()
    exp = {i: (f, b) for i, f, b in k}
    assert not set(exp) & {i for i, _, _ in o}
    exp.update({i: (f, b) for i, f, b in o})
    return exp, est


def check_round_trip(src, dst):
    a, b = _read(src), _read(dst)
    if isinstance(a, dict):  # every top-level key kept, in order
        assert list(a) == list(b)
        assert {k: v for k, v in a.items() if k != "traceEvents"} == {k: v for k, v in b.items() if k != "traceEvents"}
    ea, eb = _events(a), _events(b)
    assert len(ea) == len(eb)
    written = {}
    for i, (x, y) in enumerate(zip(ea, eb), start=1):
        if x == y:
            continue
        assert list(x) == list(y) or ("args" not in x and list(y) == list(x) + ["args"])  # key order kept
        assert {k: v for k, v in x.items() if k != "args"} == {k: v for k, v in y.items() if k != "args"}
        ya = dict(y["args"])
        got = {k: ya.pop(k) for k in ADDED if k in ya}
        assert ya == {k: v for k, v in (x.get("args") or {}).items() if k not in ADDED}, i
        assert got, i
        flops = got.get("kernel_flop")
        assert flops is None or isinstance(flops, int)
        gb = got.get("kernel_num_gb")
        written[i] = (flops, None if gb is None else round(gb * 1e9))
    exp, est = _expected(src)
    assert written == exp
    # loads back into duckprof with the same numbers
    with duckprof.connect() as s:
        s.load([str(dst)])
        assert s.con.execute("SELECT event_id, name, flops, bytes, dtype, peak_dtype FROM kernel_estimates "
                             "ORDER BY event_id").fetchall() == est
        # and the numbers are in the args, readable with plain SQL
        got = s.con.execute("""SELECT event_id, (args->>'kernel_flop')::BIGINT,
                                      round((args->>'kernel_num_gb')::DOUBLE * 1e9)::BIGINT
                               FROM events WHERE json_exists(args, '$.kernel_flop')
                                  OR json_exists(args, '$.kernel_num_gb')""").fetchall()
        assert {i: (f, b) for i, f, b in got} == exp
    return written


@pytest.mark.slow  # 1.5 to 4.5 s each
@needs_corpus
@pytest.mark.parametrize("name, kernels, ops", [
    ("h100_vit_inference.json.gz", 153, 150),
    ("mi300x_resnet_act_checkpoint.json.gz", 2217, 921),
    ("b200_eager_stack.json.gz", 223, 223),
])
def test_round_trip_on_real_traces(tmp_path, name, kernels, ops):
    src = corpus_path(name)
    dst = tmp_path / name  # .json.gz: gzip
    rep = augment(src, dst)
    assert (rep.kernels, rep.ops, rep.exact_scan) == (kernels, ops, False)
    assert open(dst, "rb").read(2) == b"\x1f\x8b"
    written = check_round_trip(src, dst)
    assert len(written) == kernels + ops


def test_split_kernels_get_shares_and_ops_the_total(tmp_path):
    src = FIX / "h100_two_kernels_one_op.json"
    dst = tmp_path / "out.json"
    rep = augment(src, dst)
    assert open(dst, "rb").read(1) == b"{"  # plain JSON when OUT does not end in .gz
    check_round_trip(src, dst)
    ev = _events(_read(dst))
    args = {e["name"]: e["args"] for e in ev if e.get("cat") in ("kernel", "cpu_op")}
    mm_flops, mm_bytes = 2 * 4096 ** 3, 3 * 4096 * 4096 * 2
    assert args["aten::mm"]["kernel_flop"] == mm_flops
    assert args["aten::mm"]["kernel_num_gb"] == mm_bytes / 1e9
    gemm = args["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_splitk"]
    red = args["splitKreduce_kernel"]
    assert gemm["kernel_flop"] + red["kernel_flop"] == mm_flops  # not counted once per kernel
    assert (gemm["kernel_flop"], red["kernel_flop"]) == (mm_flops, 0)  # the GEMM kernel does the math
    # unknown values are left out, not written as 0
    assert "kernel_flop" not in args["vectorized_elementwise_kernel_add"]
    assert args["vectorized_elementwise_kernel_add"]["kernel_num_gb"] == 3 * 1048576 * 4 / 1e9
    assert not set(ADDED) & set(args["my_custom_kernel"])
    assert rep.kernels_unknown == 1
    # untouched events are byte for byte the same
    src_bytes, dst_bytes = open(src, "rb").read(), open(dst, "rb").read()
    marker = b'"name": "my_custom_kernel"'
    i, j = src_bytes.index(marker), dst_bytes.index(marker)
    assert src_bytes[i - 60:i + 400] == dst_bytes[j - 60:j + 400]
    assert dst_bytes.endswith(src_bytes[src_bytes.rindex(b"]"):])


@pytest.mark.slow  # three sessions; the quick run has test_split_kernels_... and test_cli
def test_nested_braces_fall_back_to_the_exact_scan(tmp_path):
    src = FIX / "nested_braces.json"  # '}, {' inside args and inside strings
    dst = tmp_path / "out.json.gz"
    rep = augment(src, dst)
    assert rep.exact_scan
    check_round_trip(src, dst)


@pytest.mark.slow  # three sessions; the quick run has test_split_kernels_... and test_cli
def test_bare_array_trace(tmp_path):
    src = FIX / "bare_array.json"
    dst = tmp_path / "out.json"
    augment(src, dst)
    assert isinstance(_read(dst), list)
    check_round_trip(src, dst)


@pytest.mark.slow  # three sessions; the quick run has test_split_kernels_... and test_cli
def test_augmenting_twice_replaces_the_values(tmp_path):
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    augment(FIX / "h100_two_kernels_one_op.json", once)
    rep = augment(once, twice)
    assert _read(once) == _read(twice)  # no duplicate keys (checked by _read), same values
    assert rep.kernels == 7


def test_cli(cli_app, tmp_path):
    """In process (the real entry point: tests/test_cli.py, test_bad_input.py)."""
    dst = tmp_path / "a.json.gz"
    r = invoke(cli_app, "augment", FIX / "h100_two_kernels_one_op.json", dst)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"wrote {dst}: kernel_flop/kernel_num_gb on 7 kernel(s) and 4 op(s); "
                               "1 kernel(s) without an estimate left as they were")
    assert oct(os.stat(dst).st_mode & 0o777) != "0o600"
    r = invoke(cli_app, "augment", "--help")
    assert "Example: duckprof augment" in r.stdout
    r = invoke(cli_app, "augment", tmp_path / "nope.json", tmp_path / "x.json")
    assert r.exit_code == 2
    assert_one_line_error(r.stderr, "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": ')
    r = invoke(cli_app, "augment", bad, tmp_path / "y.json")
    assert r.exit_code == 2 and "bad.json" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "y.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json.gz", "bad.json"]  # no temp files left


def test_output_errors_name_the_users_path(tmp_path):
    """issue 13 item 14: an output path that cannot be written is named as the user
    gave it, never as duckprof's temp file (nodir/.augment-xxxx.json), and the
    trace is not loaded first."""
    src = FIX / "h100_two_kernels_one_op.json"
    for dst, problem in [("nodir/out.json", "no directory nodir"),
                         (str(tmp_path), "it is a directory")]:
        r = run_cli("augment", src, dst, cwd=tmp_path)
        assert r.returncode == 2
        line = assert_one_line_error(r.stderr, [f"{dst}: cannot write", problem])
        assert ".augment-" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []
