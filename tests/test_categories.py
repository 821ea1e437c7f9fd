"""`report categories` (GPU time by kernel category, the Inductor GPU-profiling
breakdown) and the kernel_categories view.

fixtures/steps/three_steps.json (table in fixtures/steps/make_fixtures.py), by hand:
device events (µs): triton_poi 20, triton_red 10, triton_per 15, Memcpy HtoD 4,
sgemm 40, nccl AllReduce 50, Memset 2, vectorized_elementwise 10, triton_tem 30,
Memcpy DtoH 5, fmha 10: GPU time 196 µs. Window: first event start 0 to last end
410 (the fmha kernel [400,410]) = 410 µs.
Busy (union): [10,50] 40 (poi, red and the overlapping per on stream 8) + [60,64] 4
+ [110,190] 80 (sgemm and nccl overlap) + [195,197] 2 + [210,220] 10 + [290,320] 30
+ [330,335] 5 + [400,410] 10 = 181 µs -> 44.146% of 410.
By step (an event belongs to the step its launch call started in):
  step 1 [0,100]: poi 20, per 15, red 10, HtoD 4 = 49; busy in [0,100]: 40 + 4 = 44 -> 44%
  step 2 [100,200]: nccl 50, sgemm 40, memset 2 = 92; busy [110,190] + [195,197] = 82 -> 82%
  step 3 [200,330]: tem 30, elementwise 10, DtoH 5 = 45; busy [210,220] + [290,320] = 40 -> 30.77%
  the fmha kernel, launched at 350 after the last step, is in no step.
"""

from __future__ import annotations

import collections
import csv
import functools
import gzip
import io
import json
import re

import pytest

from conftest import CORPUS, REPO, corpus_path, invoke, loaded, needs_corpus, read_trace, rows, trace_events

import duckprof
from duckprof import sqlfiles

THREE = REPO / "fixtures" / "steps" / "three_steps.json"
ORACLE = REPO.parent / "shared" / "oracles" / "tracelens_h100_vit_inference"


@pytest.fixture(scope="module")
def three():
    s = duckprof.connect()
    s.load([str(THREE)], run="r")
    yield s
    s.close()


def cats(s, **opts):
    r = s.report("categories", **opts)
    cols = r.columns
    return [dict(zip(cols, row)) for row in r.fetchall()]


def categories_of(names, kind="kernel", column="category") -> dict:
    """The kernel_categories view's rule alone, on device events of these names:
    name -> its `column` (category, uses_tensor_cores)."""
    with duckprof.connect() as s:
        s.sql("CREATE TEMP TABLE g(kind VARCHAR, name VARCHAR)")
        s.sql("INSERT INTO g SELECT $kind, unnest($n)", params={"kind": kind, "n": list(names)})
        sql = sqlfiles.render("views/derived/kernel_categories.sql").replace("FROM gpu_ops", "FROM g")
        s.sql(sql.replace("CREATE OR REPLACE VIEW kernel_categories", "CREATE TEMP VIEW kc"))
        return dict(rows(s, f"SELECT name, {column} FROM kc"))


def test_view_splits_persistent_reduction_and_memcpy_directions(three):
    got = dict(rows(three, "SELECT name, category FROM kernel_categories"))
    assert got["triton_red_fused_sum_1"] == "triton_reduction"
    assert got["triton_per_fused_softmax_2"] == "triton_persistent_reduction"
    assert got["triton_poi_fused_add_0"] == "triton_pointwise"
    assert got["triton_tem_fused_mm_3"] == "triton_template"
    assert got["Memcpy HtoD (Pageable -> Device)"] == "memcpy_htod"
    assert got["Memcpy DtoH (Device -> Pageable)"] == "memcpy_dtoh"
    assert got["Memset (Device)"] == "memset"
    others = {"Memcpy DtoD (Device -> Device)": "memcpy_dtod", "Memcpy PtoP (Device -> Device)": "memcpy_peer",
              "Memcpy HtoH (Pinned -> Pinned)": "memcpy_other"}  # the other directions
    assert categories_of(others, kind="memcpy") == others


def test_miopen_helper_kernels_are_conv():
    """MIOpen's helpers that it launches inside its convolutions (the names of
    the MI300X traces: the corpus' mi300x_resnet_act_checkpoint, TraceLens's
    tests/traces/mi300) fell in 'other' (9% of that trace's kernel time).
    TraceLens counts them under CONV_fwd / CONV_bwd (its kernel_summary.csv of
    Falconsai_nsfw_image_detection on MI300: batched_transpose_256x4_half,
    SubTensorOpWithScalar1d, ... 'CONV_fwd', parent aten::miopen_convolution).
    Expected: conv; names that only look alike keep their own category."""
    names = {"batched_transpose_16x32_half": "conv", "batched_transpose_32x32_half": "conv",
             "batched_transpose_256x4_half": "conv", "batched_transpose_64x4_float": "conv",
             "SubTensorOpWithScalar1d": "conv", "SubTensorOpWithCastTensor1d": "conv",
             "transpose_CNHW2NCHW_V2_2D_WG_off64": "conv", "transpose_NCHW2CNHW_V2_2D_WG_off64": "conv",
             # not MIOpen's: PyTorch's own transposes and copies, a Triton kernel
             "void at::native::(anonymous namespace)::transpose_kernel<float>(float*, float const*)": "other",
             "void at::native::elementwise_kernel<128, 2, batched_transpose_like>(int)": "elementwise",
             "triton_poi_fused_batched_transpose_0": "triton_pointwise"}
    assert categories_of(names) == names


def test_composable_kernel_convolution_backward_is_conv():
    """Composable kernel (ROCm) runs a convolution's backward as a batched GEMM named for
    it (the corpus' MI300X trace: kernel_batched_gemm_xdlops_bwd_weight, 44 launches by
    aten::miopen_convolution's backward); TraceLens counts it as CONV_bwd. It was 'gemm'
    (its name says gemm). Expected: conv; CK's plain GEMMs stay gemm."""
    names = {"_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm": "conv",
             "_ZN2ck16tensor_operation6device35kernel_batched_gemm_xdlops_bwd_dataINS_47GridwiseGemm": "conv",
             "_ZN2ck16tensor_operation6device30kernel_gemm_xdlops_v2r3INS_31GridwiseGemm": "gemm"}
    assert categories_of(names) == names


@needs_corpus
def test_miopen_helpers_get_none_of_the_convolutions_flops(corpus_session):
    """conv is a math category (kernel_estimates gives its kernels the op's
    FLOPs), but MIOpen's helpers do no convolution math. Expected on the MI300X
    corpus trace: every helper conv and no math kernel, 0 FLOPs where its op has
    an estimate, and each op's kernels' FLOPs still its estimate."""
    s, ids, _ = corpus_session
    t = ids["mi300x_resnet_act_checkpoint.json.gz"]
    got = rows(s, """SELECT category, bool_or(math_kernel), max(flops), count(*) FILTER (WHERE op_flops IS NOT NULL)
                     FROM kernel_estimates WHERE trace_id = $t
                       AND regexp_matches(name, '^(batched_transpose_|SubTensorOp|transpose_(NCHW|CNHW)2)')
                     GROUP BY category""", {"t": t})
    assert len(got) == 1 and got[0][0] == "conv" and got[0][1] is False and got[0][2] == 0 and got[0][3] > 0
    assert rows(s, """SELECT count(*) FROM (SELECT op_event_id, any_value(op_flops) AS f, sum(flops) AS s
                      FROM kernel_estimates WHERE trace_id = $t AND op_flops IS NOT NULL AND op_kernels > 1
                      GROUP BY op_event_id) WHERE f <> s""", {"t": t}) == [(0,)]




@functools.cache
def corpus_kernel_names(name: str) -> collections.Counter:
    """A corpus trace's kernels (complete events of category kernel, any case) per name, from
    the plain JSON: read once per process for the corpus tests below."""
    return collections.Counter(str(e.get("name")) for e in trace_events(read_trace(CORPUS / name))
                               if e.get("ph") == "X" and str(e.get("cat")).lower() == "kernel")

@needs_corpus
def test_cudnn_layout_transforms_in_a_convolution_are_conv(corpus_session):
    """cuDNN's nchwToNhwcKernel / nhwcToNchwKernel (an NHWC kernel run on an NCHW tensor: the
    transform in and back), launched by aten::cudnn_convolution / convolution_backward, are conv
    time as MIOpen's helpers are (TraceLens's CONV_fwd / CONV_bwd count them by their op), with
    none of the op's FLOPs. Expected: the corpus traces' counts of them in the plain JSON (200 or
    more), every one conv (they were 'other'), no math kernel, 0 FLOPs."""
    s, ids, _ = corpus_session
    transform = re.compile(r"^(void )?(cudnn::[a-z_]+::)?(nchwToNhwc|nhwcToNchw)Kernel<")
    want = {}
    for name in ids:
        n = sum(k for kernel, k in corpus_kernel_names(name).items() if transform.search(kernel))
        if n:
            want[ids[name]] = n
    assert sum(want.values()) >= 200
    got = rows(s, """SELECT trace_id, count(*), list(DISTINCT category), bool_or(math_kernel), max(flops),
                            list(DISTINCT op_name ORDER BY op_name)
                     FROM kernel_estimates WHERE regexp_matches(name, $p) GROUP BY trace_id""",
               {"p": transform.pattern})
    assert {t: n for t, n, *_ in got} == want
    for _, _, categories, math, flops, ops in got:
        assert categories == ["conv"] and math in (False, None) and flops in (0, None)  # None: op FLOPs unknown
        assert set(ops) <= {"aten::cudnn_convolution", "aten::convolution_backward"}

HELPERS = REPO / "fixtures" / "categories" / "miopen_helpers.json"
BT = "batched_transpose_32x32_half"
IGEMM = "igemm_fwd_gtcx3_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_tb1x8x2x1_1x4x1x64"


def test_miopen_helpers_outside_a_convolution_are_elementwise():
    """fixtures/categories/miopen_helpers.json, by hand (µs after 1,000,000; one thread, one GPU):
      aten::convolution [0,100] > aten::_convolution > aten::miopen_convolution [5,95]:
        hipLaunchKernel -> batched_transpose_32x32_half [20,30] (10), igemm_fwd_... [50,80] (30)
      aten::permute [200,205] (a view: no kernel); aten::contiguous [210,260] > aten::clone >
        aten::copy_ [215,255]: hipLaunchKernel -> batched_transpose_32x32_half [230,242] (12)
      batched_transpose_32x32_half [300,305] (5), correlation 99: no launch call, no op known
      aten::zero_ [400,420]: hipLaunchKernel -> SubTensorOpWithScalar1d [412,416] (4)
    The same helper name is conv inside the convolution and elementwise under aten::copy_; the one
    without an op keeps its name's conv. Expected: conv 3 events, 10 + 30 + 5 = 45 µs; elementwise
    2, 12 + 4 = 16 µs (before: conv 5, 61 µs)."""
    with loaded(HELPERS) as s:
        res = cats(s)
        assert {r["category"]: (r["count"], r["total_us"]) for r in res} == {"conv": (3, 45.0), "elementwise": (2, 16.0)}
        assert rows(s, "SELECT name, op_name, category FROM kernel_estimates ORDER BY ts_ns") == [
            (BT, "aten::miopen_convolution", "conv"), (IGEMM, "aten::miopen_convolution", "conv"),
            (BT, "aten::copy_", "elementwise"), (BT, None, "conv"),
            ("SubTensorOpWithScalar1d", "aten::zero_", "elementwise")]
        listed = s.report("categories", category="elementwise")
        assert sorted((r[listed.columns.index("name")], r[listed.columns.index("total_us")])
                      for r in listed.fetchall()) == [("SubTensorOpWithScalar1d", 4.0), (BT, 12.0)]
        # the view, one row per name, keeps the name's category
        assert dict(rows(s, "SELECT name, category FROM kernel_categories"))[BT] == "conv"
        assert [r[3] for r in s.report("trend", metric="category", name="elementwise").fetchall()] == [16.0]
        steps = s.report("steps")
        assert steps.fetchall()[0][steps.columns.index("top_categories")] == "conv 73.8%, elementwise 26.2%"
    from duckprof.diff import diff
    with diff(str(HELPERS), str(HELPERS), by="category") as d:
        cols = d.table.columns
        got = {r[cols.index("name")]: (r[cols.index("a_count")], r[cols.index("b_total_us")]) for r in d.table.fetchall()}
    assert got == {"conv": (3, 45.0), "elementwise": (2, 16.0)}


@needs_corpus
def test_miopen_helpers_on_the_amd_corpus_traces():
    """The MI250 and MI300X corpus traces: every helper kernel (counted in the plain JSON) is
    launched inside a convolution or has no launch call in the trace, so all stay conv; none is
    elementwise. MI300X: 1,345 helpers (1,005 launched by aten::miopen_convolution /
    convolution_backward, 340 without a launch call); MI250: none."""
    helper = re.compile(r"^(batched_transpose_|transpose_(nchw|cnhw|nhwc)2(nchw|cnhw|nhwc)|subtensorop)")
    for name, expected in (("mi300x_resnet_act_checkpoint.json.gz", 1345), ("mi250_rocm_train.json.gz", 0)):
        path = corpus_path(name)
        with gzip.open(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        n = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
                and helper.search(e["name"].lower()))
        assert n == expected
        with loaded(path) as s:
            by_cat = dict(rows(s, """SELECT category, count(*) FROM kernel_estimates
                                     WHERE regexp_matches(lower(name), $p) GROUP BY ALL""", {"p": helper.pattern}))
            assert by_cat == ({"conv": n} if n else {})
            listed = s.report("categories", category="elementwise")
            names = [r[listed.columns.index("name")] for r in listed.fetchall()]
            assert not [x for x in names if helper.search(x.lower())]


FAMILIES = REPO / "fixtures" / "categories" / "other_families.json"


def test_embedding_optimizer_pooling_sort_and_cat_kernels_by_hand():
    """fixtures/categories/other_families.json, by hand: 11 kernels on one stream, 10 µs apart
    from 1,000,000 µs (window 226 µs; GPU time 126 µs, busy 55.8%), each of a family that fell in
    'other', and near misses: FBGEMM's table-batched embedding forward (40 µs) and its backward
    fused with rowwise Adagrad (30: embedding, not optimizer though its name says adagrad), its
    permute_pooled_embs (5: embedding, not pooling though it says pooled); vLLM's
    rotary_embedding (7: no lookup, stays other); apex's multi_tensor_apply AdamFunctor (20:
    optimizer); max_pool_forward_nchw (6: pooling); cub's DeviceRadixSortOnesweep (4: sort_scan)
    and DeviceReduceSingleTile (8: a reduction, stays other); torch.cat's CatArrayBatchedCopy (3)
    and a direct_copy vectorized_elementwise_kernel (1): both elementwise, as copies are;
    FBGEMM's permute_2D_data (2: a sparse-feature shuffle, stays other).
    Expected: embedding 3 kernels 75 µs (59.5% of GPU time, 33.2% of the window), optimizer 1
    20, other 3 17 (7 + 8 + 2), pooling 1 6, elementwise 2 4, sort_scan 1 4.
    Before: other 10 kernels 125 µs, elementwise 1 1 µs."""
    with loaded(FAMILIES) as s:
        got = {r["category"]: (r["count"], r["total_us"]) for r in cats(s)}
        assert got == {"embedding": (3, 75.0), "optimizer": (1, 20.0), "other": (3, 17.0),
                       "pooling": (1, 6.0), "elementwise": (2, 4.0), "sort_scan": (1, 4.0)}
        by_name = dict(rows(s, "SELECT name, category FROM kernel_categories"))
        first_word = {re.match(r"(void )?([\w:]+::)?(\w+)", n.replace("(anonymous namespace)::", "")).group(3): c
                      for n, c in by_name.items()}
        assert first_word == {
            "split_embedding_codegen_forward_unweighted_kernel": "embedding",
            "split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1": "embedding",
            "permute_pooled_embs_kernel": "embedding", "rotary_embedding_kernel": "other",
            "multi_tensor_apply_kernel": "optimizer", "max_pool_forward_nchw": "pooling",
            "DeviceRadixSortOnesweepKernel": "sort_scan", "DeviceReduceSingleTileKernel": "other",
            "CatArrayBatchedCopy": "elementwise", "vectorized_elementwise_kernel": "elementwise",
            "permute_2D_data_kernel": "other"}
        r = s.report("categories", category="embedding")
        assert sorted(x[r.columns.index("total_us")] for x in r.fetchall()) == [5.0, 30.0, 40.0]


def test_embedding_optimizer_pooling_sort_names():
    """Names of these families from the libraries that launch them (PyTorch, FBGEMM, apex, cuDNN,
    MIOpen, cub), and names that only look alike: they keep the category they had."""
    names = {
        # torch's embedding (backward) and EmbeddingBag kernels
        "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(long const*, float const*, float*, int, long, int)": "embedding",
        "void at::native::(anonymous namespace)::EmbeddingBag_updateOutputKernel_sum_mean<float, long>(long const*, long const*)": "embedding",
        "void at::native::(anonymous namespace)::EmbeddingBag_accGradParametersKernel_max<float, long>(long const*, float const*)": "embedding",
        "void bounds_check_indices_kernel<long, false>(at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>)": "embedding",
        "void linearize_index_kernel<long>(at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>)": "embedding",
        "split_embedding_backward_codegen_find_long_segments(at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>)": "embedding",
        # torch's foreach and fused optimizers, apex's LAMB
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>)": "optimizer",
        "void at::native::(anonymous namespace)::multi_tensor_apply_for_fused_optimizer<5, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>)": "optimizer",
        "void multi_tensor_apply_kernel<TensorListMetadata<4>, LAMBStage1Functor<float, float>, float, float>(int, int volatile*, TensorListMetadata<4>)": "optimizer",
        # pooling: torch's, cuDNN's, MIOpen's
        "void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(float const*, long const*, int, long)": "pooling",
        "void at::native::(anonymous namespace)::adaptive_average_pool<float>(float const*, float*, int, int, int, int, long, long, long)": "pooling",
        "void at::native::(anonymous namespace)::avg_pool2d_out_cuda_frame<float, float, true>(int, float const*, long)": "pooling",
        "void cudnn::ops::pooling_fw_4d_kernel<float, float, cudnn::maxpooling_func<float, (cudnnNanPropagation_t)0>, (cudnnPoolingMode_t)0, false>(cudnnTensorStruct)": "pooling",
        "mloPoolingNDFwd": "pooling",
        # sort, scan, select, top-k
        "void at_cuda_detail::cub::DeviceScanKernel<at_cuda_detail::cub::AgentScanPolicy<128, 15, long>, long const*, long*>(long const*, long*)": "sort_scan",
        "void cub::DeviceScanInitKernel<cub::ScanTileState<int, true> >(cub::ScanTileState<int, true>, int)": "sort_scan",
        "void cub::DeviceSelectSweepKernel<cub::DispatchSelectIf<long*, long*, int*>::PtxSelectIfPolicyT, long*>(long*)": "sort_scan",
        "void cub::DeviceReduceByKeyKernel<cub::DispatchReduceByKey<long*, long*, cub::ConstantInputIterator<int, int>, int*, int*, cub::Equality, cub::Sum, int>::PtxReduceByKeyPolicy>(long*)": "sort_scan",
        "void at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, long, at::native::LTOp<float, true>, unsigned int>(at::cuda::detail::TensorInfo<float, unsigned int>)": "sort_scan",
        "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, unsigned int>)": "sort_scan",
        "void at::native::tensor_kernel_scan_innermost_dim<float, 16, 32>(float*, float const*, unsigned int, unsigned int, float, std::plus<float>)": "sort_scan",
        # near misses: their own category as before
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float>)": "reduction",
        "void topkGatingSoftmax<8, 256, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)": "reduction",
        "triton_poi_fused_sort_0": "triton_pointwise",
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::lambda_functor_like<float>, std::array<char*, 2ul> >(int)": "elementwise",
        "void cub::DeviceReduceKernel<cub::DeviceReducePolicy<float, int, cub::Sum>::Policy600, float*, float*, int, cub::Sum>(float*, float*, int)": "other",
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>)": "other",
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*)": "other",
        "void at::native::(anonymous namespace)::lpnorm_cleanup<float, (at::native::(anonymous namespace)::NormType)1, float, float>(float const*, at::native::(anonymous namespace)::TensorListAddresses, int)": "other",
    }
    assert categories_of(names) == names


# What each new rule takes on the corpus, by family, written apart from the view's regexes:
# the kernels (cat kernel in the plain JSON) whose name holds one of these.
CORPUS_FAMILIES = {
    "embedding": ("split_embedding_", "permute_pooled_embs_kernel", "bounds_check_indices_kernel", "linearize_index_kernel"),
    "optimizer": ("multi_tensor_apply_kernel",),
    "pooling": ("max_pool_forward_nchw", "max_pool_backward_nchw", "adaptive_average_pool"),
    "sort_scan": ("cub::DeviceRadixSort", "cub::DeviceScan", "cub::DeviceReduceByKey", "cub::DeviceCompactInit"),
    "elementwise": ("CatArrayBatchedCopy",),
}


@needs_corpus
def test_embedding_optimizer_pooling_sort_and_cat_on_the_corpus(corpus_session):
    """Every corpus kernel of these families (counted by name in the plain JSON) gets its family's
    category, and each new category holds only those: embedding 107 kernels (61 on
    a100_train_rank0, 30 and 16 on sampled_rank0/1), optimizer 173 (108 apex AdamFunctor on
    a100_train_rank0; torch's foreach add/mul of SGD on a100_nccl_train 27, mi250 1, mi300x 5,
    sampled 16 + 16), pooling 46, sort_scan 386, torch.cat's copies 279 (elementwise). All of
    them were 'other' before; no kernel of another category moved (the rules come last)."""
    s, ids, _ = corpus_session
    want = {}
    for name, t in ids.items():
        for kernel, n in corpus_kernel_names(name).items():
            for family, needles in CORPUS_FAMILIES.items():
                if any(x in kernel for x in needles):
                    want[(t, family)] = want.get((t, family), 0) + n
    got = dict(((t, c), n) for t, c, n in rows(s, """
        SELECT k.trace_id, c.category, count(*) FROM kernels k JOIN kernel_categories c ON c.kind = 'kernel' AND c.name = k.name
        WHERE c.category IN ('embedding', 'optimizer', 'pooling', 'sort_scan')
           OR (c.category = 'elementwise' AND k.name LIKE '%CatArrayBatchedCopy%') GROUP BY ALL"""))
    assert got == want
    totals = {f: sum(n for (_, c), n in want.items() if c == f) for f in CORPUS_FAMILIES}
    assert totals == {"embedding": 107, "optimizer": 173, "pooling": 46, "sort_scan": 386, "elementwise": 279}
    assert want[(ids["a100_train_rank0.json.gz"], "optimizer")] == 108


def test_whole_trace_totals_by_hand(three):
    got = {r["category"]: (r["count"], r["total_us"]) for r in cats(three)}
    assert got == {"communication": (1, 50.0), "gemm": (1, 40.0), "triton_template": (1, 30.0),
                   "triton_pointwise": (1, 20.0), "triton_persistent_reduction": (1, 15.0), "attention": (1, 10.0),
                   "elementwise": (1, 10.0), "triton_reduction": (1, 10.0), "memcpy_dtoh": (1, 5.0),
                   "memcpy_htod": (1, 4.0), "memset": (1, 2.0)}
    r = cats(three)
    assert [x["category"] for x in r[:3]] == ["communication", "gemm", "triton_template"]  # by time
    assert [x["busy_pct"] for x in r] == [pytest.approx(100 * 181 / 410)] * len(r)
    assert {x["busy_us"] for x in r} == {181.0} and {x["window_us"] for x in r} == {410.0}
    assert sum(x["gpu_pct"] for x in r) == pytest.approx(100.0)
    assert r[0]["gpu_pct"] == pytest.approx(100 * 50 / 196) and r[0]["wall_pct"] == pytest.approx(100 * 50 / 410)


def test_by_step_by_hand(three):
    r = cats(three, by_step=True)
    got = {(x["step"], x["category"]): x["total_us"] for x in r}
    assert got == {(1, "triton_pointwise"): 20.0, (1, "triton_persistent_reduction"): 15.0,
                   (1, "triton_reduction"): 10.0, (1, "memcpy_htod"): 4.0,
                   (2, "communication"): 50.0, (2, "gemm"): 40.0, (2, "memset"): 2.0,
                   (3, "triton_template"): 30.0, (3, "elementwise"): 10.0, (3, "memcpy_dtoh"): 5.0}
    busy = {x["step"]: x["busy_pct"] for x in r}
    assert busy == pytest.approx({1: 44.0, 2: 82.0, 3: 100 * 40 / 130})
    gpu = {(x["step"], x["category"]): x["gpu_pct"] for x in r}
    assert gpu[(1, "triton_pointwise")] == pytest.approx(100 * 20 / 49)
    assert gpu[(2, "communication")] == pytest.approx(100 * 50 / 92)


def test_drill_down_and_rules(three, tmp_path):
    r = three.report("categories", category="gemm").fetchall()
    assert [(x[5], x[6], x[7]) for x in r] == [("ampere_sgemm_128x64_tn", 1, 40.0)]
    rules = tmp_path / "rules.csv"
    rules.write_text("pattern,category,comment\n"
                     "^triton_(red|per)_,reductions,first matching row wins\n"
                     "triton_per,never,(shadowed by the row above)\n"
                     "sgemm,fp32_gemm,\n")
    got = {x["category"]: x["total_us"] for x in cats(three, rules=str(rules))}
    assert got["reductions"] == 25.0 and got["fp32_gemm"] == 40.0
    assert "triton_reduction" not in got and "never" not in got and "gemm" not in got
    res = three.report_result("categories", rules=str(rules), category="reductions")
    assert sorted(x[5] for x in res.relation.fetchall()) == ["triton_per_fused_softmax_2", "triton_red_fused_sum_1"]
    assert "categories of 3 of 11 kernel name(s) come from --rules" in \
        three.report_result("categories", rules=str(rules)).notes


def test_rules_file_errors_and_unknown_category(three, tmp_path, cli_app):
    bad = tmp_path / "bad.csv"
    bad.write_text("regex,cat\nx,y\n")
    res = invoke(cli_app, "report", "categories", THREE, "--rules", bad)
    assert res.exit_code == 2 and "missing: pattern, category" in res.output
    res = invoke(cli_app, "report", "categories", THREE, "--rules", tmp_path / "nope.csv")
    assert res.exit_code == 2 and "cannot read the --rules file" in res.output
    res = three.report_result("categories", category="nosuch")
    assert res.relation.fetchall() == []
    assert res.notes[0].startswith("no device events of category 'nosuch' in this trace; its categories: attention")


def test_no_gpu_says_so(tmp_path, cli_app):
    res = invoke(cli_app, "report", "categories", REPO / "fixtures" / "gpu_time" / "cpu_only.json")
    assert res.exit_code == 0 and res.stdout.strip() == "no GPU activity in this trace"


@pytest.mark.slow
@needs_corpus
def test_every_corpus_event_in_exactly_one_category(corpus_session):
    s, ids, _ = corpus_session
    # one category per distinct (kind, name), and every device event has one
    assert rows(s, "SELECT count(*) FROM (SELECT kind, name FROM kernel_categories GROUP BY ALL HAVING count(*) > 1)") \
        == [(0,)]
    assert rows(s, """SELECT count(*) FROM gpu_ops g LEFT JOIN kernel_categories c USING (kind, name)
                      WHERE c.category IS NULL""") == [(0,)]
    # per trace and device the category times add up to the device's GPU time
    want = rows(s, """SELECT trace_id, device, count(*), sum(dur_ns) / 1e3 FROM gpu_activity
                      GROUP BY ALL ORDER BY 1, 2""")
    got = s.report("categories").query(
        "c", "SELECT trace_id, device, sum(count), sum(total_us), sum(gpu_pct) FROM c GROUP BY ALL ORDER BY 1, 2"
    ).fetchall()
    assert [g[:3] for g in got] == [w[:3] for w in want]
    for g, w in zip(got, want):
        assert g[3] == pytest.approx(w[3], abs=1e-6) and g[4] == pytest.approx(100.0)
    assert len(want) >= 12  # every GPU trace of the corpus


@needs_corpus
def test_h100_split_against_tracelens():
    """TraceLens's perf report on the H100 ViT trace (../shared/oracles): its
    categories are the *parent operator's* (GEMM = aten::addmm's kernels, ...),
    ours the kernel name's; they agree within 1% where both name the same work,
    and each difference is one of these kernels, checked by name:
    - attention: the 12 flash_fwd kernels (122.848 µs), which TraceLens files
      under 'other' with aten::cat's CatArrayBatchedCopy kernel (7.264 µs; ours
      elementwise, a copy, as TraceLens's own kernel-name classifier,
      Agent/Analysis/utils/classify_kernels.py, files it);
    - conv: the cuDNN fprop kernel (98.176 µs) and the convolution's NCHW<->NHWC
      layout kernels (20.864 + 2.208 µs: conv helpers), as TraceLens's CONV_fwd,
      which also holds its two memsets (4.384 µs, our 'memset');
    - busy: the same 1,225.31 µs (union of device events), but TraceLens divides
      by the span of the GPU events (7,559.844 µs), we by the profiled window
      (8,193.56 µs), so 16.21% there and 14.95% here."""
    trace = corpus_path("h100_vit_inference.json.gz")
    if not ORACLE.is_dir():
        pytest.skip(f"no TraceLens oracle at {ORACLE}")
    tl = {r["op category"]: float(r["total_direct_kernel_time_ms"]) * 1e3
          for r in csv.DictReader(open(ORACLE / "ops_summary_by_category.csv", encoding="utf-8"))}
    timeline = {r["type"]: float(r["time ms"]) * 1e3 for r in csv.DictReader(open(ORACLE / "gpu_timeline.csv"))}
    kernels = list(csv.DictReader(open(ORACLE / "kernel_summary.csv", encoding="utf-8")))
    with duckprof.connect() as s:
        s.load([str(trace)], run="h100")
        ours = {r["category"]: r for r in cats(s)}
        per_name = dict(rows(s, """SELECT c.name, sum(g.dur_ns) / 1e3 FROM gpu_ops g
                                   JOIN kernel_categories c USING (kind, name) GROUP BY 1"""))
        span = rows(s, "SELECT (max(end_ns) - min(ts_ns)) / 1e3 FROM gpu_ops")[0][0]
    for mine, theirs in (("gemm", "GEMM"), ("normalization", "NORM_fwd")):
        assert ours[mine]["total_us"] == pytest.approx(tl[theirs], rel=0.01), mine
    flash = sum(float(k["Kernel duration (µs)_sum"]) for k in kernels if "flash_fwd_kernel" in k["Kernel name"])
    cat_copy = sum(float(k["Kernel duration (µs)_sum"]) for k in kernels if "CatArrayBatchedCopy" in k["Kernel name"])
    assert ours["attention"]["total_us"] == pytest.approx(flash, abs=1e-3) == pytest.approx(122.848, abs=1e-3)
    assert tl["other"] == pytest.approx(flash + cat_copy, abs=1e-3)
    assert ours["elementwise"]["total_us"] == pytest.approx(tl["elementwise"] + cat_copy, rel=0.01)
    assert cat_copy == pytest.approx(7.264, abs=1e-3)
    layout = sum(float(k["Kernel duration (µs)_sum"]) for k in kernels
                 if k["Parent op category"] == "CONV_fwd" and "fprop" not in k["Kernel name"])
    assert layout == pytest.approx(20.864 + 2.208, abs=1e-3)
    assert tl["CONV_fwd"] == pytest.approx(ours["conv"]["total_us"] + ours["memset"]["total_us"], abs=1e-3)
    assert "other" not in ours
    assert sum(v for k, v in per_name.items() if "fprop" in k) + layout == pytest.approx(ours["conv"]["total_us"])
    busy = ours["gemm"]["busy_us"]
    assert busy == pytest.approx(timeline["busy_time"], abs=1e-2)
    assert timeline["total_time"] == pytest.approx(span, abs=1e-2)
    assert 100 * busy / span == pytest.approx(timeline["busy_time"] / timeline["total_time"] * 100, rel=1e-4)
    assert ours["gemm"]["busy_pct"] == pytest.approx(100 * busy / 8193.56, rel=1e-6)


def test_tensor_cores_of_kernels_newer_than_the_plugin():
    """TensorBoard's plugin's list (kineto tb_plugin tensor_core.py) knows no
    Hopper, Blackwell or AMD matrix-core kernel: every GEMM of the B200 and
    MI300X corpus traces counted as not using Tensor Cores (0%). Real names
    from the corpus and from cuBLAS/CUTLASS/Tensile/CK/MIOpen; an FP32 or SIMT
    kernel of the same families stays False."""
    want = {
        "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT": True,      # cuBLAS on B200 (bf16)
        "nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_TNN": True,
        "nvjet_sss_128x64_32x4_1x2_h_bz_NNT": False,                # FP32: not a Tensor Core GEMM
        "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp2": True,
        "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext": True,
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4>>": True,
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8>": True,
        "void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>": False,
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1": True,  # the plugin's
        "Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0": True,  # Tensile, MFMA
        "Cijk_Ailk_Bljk_SB_MT64x64x8_SN_1LDSB0_AMAS0_BL0": False,                    # Tensile, no MFMA
        "_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm": True,
        "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2": True,  # MIOpen xdlops
        "batched_transpose_16x32_half": False,
        "ampere_sgemm_128x64_nn": False,
        "volta_h884gemm_64x64_ldg8_nn": True,                                          # the plugin's
    }
    assert categories_of(want, column="uses_tensor_cores") == want
