"""Deterministic generator of realistic synthetic GPU Kineto traces.

The output imitates what PyTorch (2024-2026) writes with
``torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True,
profile_memory=True)`` around a data-parallel training loop on an
NVIDIA A100-SXM4-80GB: Kineto's own JSON layout and whitespace, fractional
microsecond timestamps with exactly three decimals (relative to
``baseTimeNanoseconds``), ``traceEvents`` followed by more top-level keys.

Each profiler step is one training iteration of a small hybrid conv-stem
vision transformer: data loading, host-to-device copies, a forward pass on
the main thread (nested ``cpu_op`` trees with shapes, dtypes and concrete
inputs, ``python_function`` module scopes, ``[memory]`` instant events), a
backward pass on the autograd thread (``autograd::engine::evaluate_function``
trees) with DDP gradient all-reduces (``record_param_comms`` ->
``nccl:all_reduce`` -> NCCL kernel on stream 20), a fused AdamW step and an
occasional ``loss.item()`` that synchronizes the stream.  Kernels run on
streams 7 and 20; each is linked to its launching runtime/driver call by
``correlation`` and by an ``ac2g`` flow pair.

Invariants (checked by tests/test_synth.py): durations are positive,
``X`` events on a CPU thread nest properly, every device event starts after
its launch call, events on one stream never overlap, correlation ids are
unique, and each runtime call's ``External id`` names a ``cpu_op`` that
encloses it.  The output is a pure function of the arguments
(``random.Random(seed)``, no clock), so the same arguments give the same
bytes; a ``.json.gz`` file holds exactly the bytes of the ``.json`` file.

Format notes for readers of the output:

* ``ts``/``dur`` are microseconds with exactly three decimals; absolute time
  is ``baseTimeNanoseconds + ts * 1000`` ns.  ``baseTimeNanoseconds``,
  ``traceName`` and ``displayTimeUnit`` come *after* ``traceEvents``.
* Metadata (``ph: M``) events come at the end of ``traceEvents``, followed by
  the ``Trace`` span (pid "Spans"), an ``Iteration Start`` instant (pid
  "Traces") and ``Record Window End`` (pid "" and tid "").
* CPU pid/tids are ints; the GPU pid is the device index and the tid of a
  device event is its stream.  The backward pass runs on a second CPU thread.
* A runtime call's ``External id`` is that of an enclosing ``cpu_op``, not
  always the innermost event: NCCL launches sit inside the ``nccl:all_reduce``
  user_annotation but carry the id of ``record_param_comms``.
* ``cudaStreamSynchronize`` (inside ``aten::_local_scalar_dense``) has an
  ``External id`` but no flow; ``cudaDeviceSynchronize`` has neither.
  Other runtime calls without device work (cudaEventRecord,
  cudaStreamWaitEvent) have no flow either.
* ``ac2g`` flows: ``ph: s`` on the launch (CPU pid/tid, same ts), ``ph: f``
  with ``bp: e`` on the device event; ``id`` equals ``correlation``.

Public API: :func:`generate`, :func:`generate_ranks`,
:func:`approx_events_for_bytes`; ``python -m duckprof.synth OUT --events N``.
"""

from __future__ import annotations

import gzip
import json
import os
import random

__all__ = ["generate", "generate_ranks", "approx_events_for_bytes", "BYTES_PER_EVENT"]

# Measured average size of one event in the emitted format (uncompressed).
BYTES_PER_EVENT = 337

# ---------------------------------------------------------------------------
# Static description of the machine
# ---------------------------------------------------------------------------

A100_PROPS = (
    '    {{\n'
    '      "id": {id}, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744,\n'
    '      "computeMajor": 8, "computeMinor": 0,\n'
    '      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,\n'
    '      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,\n'
    '      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,\n'
    '      "numSms": 108, "sharedMemPerBlockOptin": 166912\n'
    '    }}'
)
NUM_SMS = 108
COMPUTE_STREAM = 7
COMM_STREAM = 20
BASE_TIME_NS = 1735689600000000000  # 2025-01-01T00:00:00Z

# Event categories, in the order used by the counters.
CATS = (
    "cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
    "kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "ac2g",
    "cpu_instant_event", "Trace", "",
)
(C_OP, C_UA, C_PY, C_RT, C_DRV, C_KERN, C_CPY, C_SET, C_GUA, C_FLOW, C_INST,
 C_TRACE, C_NONE) = range(len(CATS))

_FRAC = tuple(".%03d" % i for i in range(1000))


def _us(ns):
    """Integer nanoseconds -> Kineto microsecond text with 3 decimals."""
    q, r = divmod(ns, 1000)
    return str(q) + _FRAC[r]


def _esc(s):
    return s.replace("%", "%%")


def _num(x):
    s = "%.6f" % x
    s = s.rstrip("0").rstrip(".")
    return s or "0"


# ---------------------------------------------------------------------------
# Kernel names (as cuBLAS / cuDNN / ATen / flash-attention / NCCL emit them)
# ---------------------------------------------------------------------------

def _vec(functor, n, width=4):
    return ("void at::native::vectorized_elementwise_kernel<%d, %s, std::array<char*, %dul> >"
            "(int, %s, std::array<char*, %dul>)" % (width, functor, n, functor, n))


_BF = "c10::BFloat16"
K = {
    "gemm_big": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
    "gemm_mid": ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8>"
                 "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8::Params)"),
    "gemm_nn": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn",
    "gemm_nt": "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nt",
    "gemm_nt_small": "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nt",
    "gemm_head": "ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_stages_64x5_tn",
    "gemm_head_nn": "ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nn",
    "splitk_bf16": ("void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>"
                    "(cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, "
                    "float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)"),
    "splitk_half": ("void splitKreduce_kernel<32, 16, int, float, __half, float, __half, true, false, false>"
                    "(cublasSplitKParams<float>, float const*, __half const*, __half*, float const*, float const*, "
                    "__half const*, float const*, __half*, void*, long, float*, int*)"),
    "n2n": ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>"
            "(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)"),
    "nhwc2nchw": ("void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>"
                  "(cudnn::ops::nhwc2nchw_params_t<float>, float const*, float*)"),
    "fprop": ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
              "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"),
    "dgrad": ("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
              "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"),
    "wgrad": ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
              "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train"),
    "relu": ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar"
             "(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::"
             "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
             "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
             "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
             "{lambda(float)#1}, std::array<char*, 2ul>)"),
    "relu_bwd": _vec("at::native::BinaryFunctor<float, float, float, at::native::(anonymous namespace)::"
                     "threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}>", 3),
    "add_f32": _vec("at::native::CUDAFunctor_add<float>", 3),
    "add_bf16": _vec("at::native::CUDAFunctor_add<c10::BFloat16>", 3),
    "gelu": _vec("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
                 "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}", 2),
    "gelu_bwd": _vec("at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
                     "{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
                     "{lambda(c10::BFloat16, c10::BFloat16)#1}", 3),
    "to_bf16": ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
                "::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, "
                "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
                "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
                "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
                "{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, "
                "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
                "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"),
    "ln": ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
           "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"),
    "ln_bwd_in": ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>"
                  "(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, "
                  "c10::BFloat16*, int)"),
    "ln_bwd_gb": ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>"
                  "(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
                  "c10::BFloat16*, c10::BFloat16*)"),
    "flash_fwd": ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
                  "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
                  "false, false, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)"),
    "flash_bwd_dot": ("void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, "
                      "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, "
                      "128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)"),
    "flash_bwd": ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits"
                  "<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, "
                  "128, 128, 8, cutlass::bfloat16_t> >, false, false, false, false, false, false>"
                  "(pytorch_flash::Flash_bwd_params)"),
    "flash_bwd_cvt": ("void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, "
                      "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, "
                      "128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params, int)"),
    "sum_bf16": ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t"
                 "<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()"
                 "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4> >"
                 "(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, "
                 "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::"
                 "{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4>)"),
    "sum_f32": ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
                "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
                "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
                "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
                "unsigned int, float, 4>)"),
    "mean_bf16": ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, "
                  "float, float, float>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, "
                  "at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4>)"),
    "logsoftmax": ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
                   "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"),
    "nll": ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, "
            "float*, float const*, long const*, float const*, bool, long, long, long, long)"),
    "nll_bwd": ("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, "
                "float const*, long const*, float const*, float const*, bool, int, int, long, long)"),
    "logsoftmax_bwd": ("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
                       "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, "
                       "float const*, long)"),
    "fill_f32": _vec("at::native::FillFunctor<float>", 1),
    "foreach_norm": ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
                     "::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, "
                     "(at::native::(anonymous namespace)::NormType)1, float, float>, float*, int>(at::native::"
                     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor"
                     "<float, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int)"),
    "foreach_mul": ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
                    "::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
                    "std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
                    "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, "
                    "float)"),
    "adamw": ("void at::native::(anonymous namespace)::multi_tensor_apply_for_fused_optimizer<4, "
              "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, "
              "float*, double, double, double, double, double, bool, bool, float*, float*>"),
    "nccl": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
}

# (api name, category index, cbid)
API_LAUNCH = ("cudaLaunchKernel", C_RT, 211)
API_LAUNCH_EXC = ("cudaLaunchKernelExC", C_RT, 430)
API_CU_LAUNCH = ("cuLaunchKernel", C_DRV, 307)
API_MEMCPY = ("cudaMemcpyAsync", C_RT, 41)
API_MEMSET = ("cudaMemsetAsync", C_RT, 51)

# ---------------------------------------------------------------------------
# Templates (Kineto's own layout; '%s' slots are filled per event)
# ---------------------------------------------------------------------------

_X_HEAD = ',\n  {\n    "ph": "X", "cat": "%s", "name": "%s", "pid": %s, "tid": %s,\n    "ts": '
_FLOW_S = ',\n  {\n    "ph": "s", "id": %%d, "pid": %s, "tid": %s, "ts": %%s,\n    "cat": "ac2g", "name": "ac2g"\n  }'
_FLOW_F = ',\n  {\n    "ph": "f", "id": %%d, "pid": %s, "tid": %s, "ts": %%s,\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }'


def _x_head(cat, name, pid, tid):
    return _esc(_X_HEAD % (cat, name, pid, tid))


def _op_template(cat, name, pid, tid, static_args):
    """Slots: ts, dur, External id, seq text, Ev Idx."""
    return (_x_head(cat, name, pid, tid) + '%s, "dur": %s,\n    "args": {\n      "External id": %d,'
            '"Record function id": 0%s' + _esc(static_args) + ', "Ev Idx": %d\n    }\n  }')


def _api_template(api, pid, tid, flow=True):
    """Slots: ts, dur, External id, correlation, flow id, flow ts (without flow: ts, dur, ext, corr)."""
    name, cat, cbid = api
    args = '"External id": %d,      "cbid": ' + str(cbid) + ', "correlation": %d'
    return (_x_head(CATS[cat], name, pid, tid) + '%s, "dur": %s,\n    "args": {\n      ' + args
            + '\n    }\n  }' + (_FLOW_S % (pid, tid) if flow else ""))


def _kernel_template(name, device, stream, grid, block, regs, smem, extra=""):
    """Slots: ts, dur, External id, correlation, flow id, flow ts."""
    nblocks = grid[0] * grid[1] * grid[2]
    threads = block[0] * block[1] * block[2]
    bps = nblocks / NUM_SMS
    wps = bps * ((threads + 31) // 32)
    # occupancy limited by registers, threads and shared memory per SM
    lim = min(2048 // max(threads, 1), 65536 // max(regs * threads, 1),
              (167936 // smem) if smem else 32, 32)
    occ = min(100, int(100 * min(bps, lim) * ((threads + 31) // 32) / 64))
    args = ('"External id": %d,      "queued": 0, "device": ' + str(device) + ', "context": 1,      "stream": '
            + str(stream) + ', "correlation": %d,      "registers per thread": ' + str(regs)
            + ',      "shared memory": ' + str(smem) + ',      "blocks per SM": ' + _num(bps)
            + ',      "warps per SM": ' + _num(wps) + ',      "grid": [%d, %d, %d]' % tuple(grid)
            + ',      "block": [%d, %d, %d]' % tuple(block) + ',      "est. achieved occupancy %%": ' + str(occ)
            + extra)
    return (_x_head("kernel", name, device, stream) + '%s, "dur": %s,\n    "args": {\n      ' + args
            + '\n    }\n  }' + _FLOW_F % (device, stream))


def _mem_template(cat, name, device, stream, nbytes, gbps):
    args = ('"External id": %d,      "device": ' + str(device) + ', "context": 1,      "stream": ' + str(stream)
            + ', "correlation": %d,      "bytes": ' + str(nbytes) + ', "memory bandwidth (GB/s)": ' + repr(gbps))
    return (_x_head(cat, name, device, stream) + '%s, "dur": %s,\n    "args": {\n      ' + args
            + '\n    }\n  }' + _FLOW_F % (device, stream))


# ---------------------------------------------------------------------------
# Operator arguments (record_shapes)
# ---------------------------------------------------------------------------

def _strides(dims):
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


def T(dims, dtype, strides=None):
    return ("", dtype, strides if strides is not None else _strides(dims), list(dims))


def S(value):
    return (str(value), "Scalar", [], [])


def L(values):
    return ("[" + ", ".join(str(v) for v in values) + "]", "ScalarList", [], [])


NONE = ("", "", [], [])


def _shape_args(inputs):
    if inputs is None:
        return ""
    ci = json.dumps([i[0] for i in inputs])
    ty = json.dumps([i[1] for i in inputs])
    st = json.dumps([i[2] for i in inputs])
    di = json.dumps([i[3] for i in inputs])
    return ', "Concrete Inputs": %s, "Input type": %s, "Input Strides": %s, "Input Dims": %s' % (ci, ty, st, di)


class Op:
    """A CPU operator node: template, self time, children, device launches."""

    __slots__ = ("tpl", "pre", "post", "children", "launches", "seq", "mem", "cat")

    def __init__(self, tpl, cat, pre, post, children, launches, seq, mem):
        self.tpl, self.cat, self.pre, self.post = tpl, cat, pre, post
        self.children, self.launches, self.seq, self.mem = children, launches, seq, mem


class Launch:
    """One launch call and (optionally) the device activity it enqueues."""

    __slots__ = ("rt", "rt_cat", "api_ns", "dev", "dev_cat", "dev_ns", "stream", "sync")

    def __init__(self, rt, rt_cat, api_ns, dev, dev_cat, dev_ns, stream, sync=False):
        self.rt, self.rt_cat, self.api_ns = rt, rt_cat, api_ns
        self.dev, self.dev_cat, self.dev_ns, self.stream = dev, dev_cat, dev_ns, stream
        self.sync = sync  # True: a blocking stream synchronize (no device activity)


# ---------------------------------------------------------------------------
# The model: builds Op trees for one step shape on one thread
# ---------------------------------------------------------------------------

GEMM_FLOP_PER_NS = 170e3     # ~170 TFLOP/s achieved bf16 tensor-core GEMM
TF32_FLOP_PER_NS = 70e3
HBM_BYTES_PER_NS = 1400.0    # ~1.4 TB/s achieved


class _Builder:
    def __init__(self, pid, device):
        self.pid = pid
        self.device = device
        self._kt = {}
        self._at = {}

    # --- launch helpers -----------------------------------------------------
    def api(self, api, tid):
        key = (api, tid)
        t = self._at.get(key)
        if t is None:
            t = self._at[key] = _api_template(api, self.pid, tid)
        return t

    def kern(self, tid, kname, dur_ns, grid, block, regs, smem, stream=COMPUTE_STREAM, api=API_LAUNCH,
             api_ns=4500, extra=""):
        key = (kname, stream, tuple(grid), tuple(block), regs, smem, extra)
        t = self._kt.get(key)
        if t is None:
            t = self._kt[key] = _kernel_template(K[kname] if kname in K else kname, self.device, stream,
                                                 grid, block, regs, smem, extra)
        return Launch(self.api(api, tid), api[1], api_ns, t, C_KERN, max(1200, int(dur_ns)), stream)

    def memcpy(self, tid, kind, nbytes, stream=COMPUTE_STREAM):
        name = {"HtoD": "Memcpy HtoD (Pinned -> Device)", "DtoH": "Memcpy DtoH (Device -> Pageable)",
                "DtoD": "Memcpy DtoD (Device -> Device)"}[kind]
        bw = {"HtoD": 22.0, "DtoH": 0.9, "DtoD": 1200.0}[kind]  # GB/s == bytes/ns
        dur = max(1100, int(nbytes / bw) + 900)
        gbps = nbytes / dur
        tpl = _mem_template("gpu_memcpy", name, self.device, stream, nbytes, gbps)
        return Launch(self.api(API_MEMCPY, tid), C_RT, 9000 if kind != "DtoD" else 5000, tpl, C_CPY, dur, stream)

    def memset(self, tid, nbytes, stream=COMPUTE_STREAM):
        dur = max(1000, int(nbytes / 1300.0) + 800)
        tpl = _mem_template("gpu_memset", "Memset (Device)", self.device, stream, nbytes, nbytes / dur)
        return Launch(self.api(API_MEMSET, tid), C_RT, 5500, tpl, C_SET, dur, stream)

    # --- op helper ------------------------------------------------------------
    def op(self, tid, name, inputs=None, children=(), launches=(), pre=3000, post=2000, seq=False, mem=0,
           cat="cpu_op", extra_args=""):
        tpl = _op_template(cat, name, self.pid, tid, extra_args + _shape_args(inputs))
        return Op(tpl, C_OP if cat == "cpu_op" else C_UA, pre, post, tuple(children), tuple(launches), seq, mem)

    # --- building blocks ------------------------------------------------------
    def view(self, tid, name, dims, dtype, args=()):
        return self.op(tid, name, [T(dims, dtype)] + list(args), pre=1500, post=800)

    def gemm(self, tid, m, k, n, fwd_name, bwd=False, splitk=False, dtype_half=False):
        """Launches of one GEMM (m x k) @ (k x n)."""
        flops = 2.0 * m * k * n
        dur = flops / GEMM_FLOP_PER_NS + 3500
        tiles = max(1, ((m + 127) // 128) * ((n + 127) // 128))
        grid = [((n + 127) // 128), ((m + 127) // 128), 1] if not splitk else [max(1, (n + 63) // 64), 1, 8]
        block = [256, 1, 1] if tiles > 1 else [128, 1, 1]
        ls = [self.kern(tid, fwd_name, dur, grid, block, 232 if "128x128" in K.get(fwd_name, fwd_name) else 168,
                        73728 if not splitk else 49152)]
        if splitk:
            sk = "splitk_half" if dtype_half else "splitk_bf16"
            ls.append(self.kern(tid, sk, 1800 + m * n * 8 / HBM_BYTES_PER_NS, [max(1, (m * n + 255) // 256), 1, 1],
                                [256, 1, 1], 30, 0))
        return ls

    def ew(self, tid, kname, numel, nbytes_per_elem, grid_div=512, regs=24):
        dur = numel * nbytes_per_elem / HBM_BYTES_PER_NS + 1800
        blocks = max(1, min(numel // grid_div, 2 ** 20))
        return self.kern(tid, kname, dur, [blocks, 1, 1], [128, 1, 1], regs, 0)

    def linear(self, tid, n, k, m, dims_in, dtype=_BF, kname="gemm_big", splitk=False):
        x = T(dims_in, dtype)
        w = T([m, k], dtype)
        b = T([m], dtype)
        t_op = self.op(tid, "aten::t", [w], children=[
            self.op(tid, "aten::transpose", [w, S(0), S(1)], children=[
                self.op(tid, "aten::as_strided", [w, L([k, m]), L([1, k]), NONE], pre=1200, post=700)],
                pre=1500, post=900)], pre=1800, post=900)
        addmm = self.op(tid, "aten::addmm", [b, T([n, k], dtype), T([k, m], dtype, [1, k]), S(1), S(1)],
                        launches=self.gemm(tid, n, k, m, kname, splitk=splitk, dtype_half=(dtype == "c10::Half")),
                        pre=9000, post=3000, mem=n * m * 2)
        kids = [t_op]
        if len(dims_in) > 2:
            kids.append(self.view(tid, "aten::view", dims_in, dtype, [L([n, k])]))
        kids.append(addmm)
        if len(dims_in) > 2:
            kids.append(self.view(tid, "aten::view", [n, m], dtype, [L(dims_in[:-1] + [m])]))
        return self.op(tid, "aten::linear", [x, w, b], children=kids, pre=4000, post=1500, seq=True)

    def layer_norm(self, tid, dims, d):
        n = 1
        for x in dims[:-1]:
            n *= x
        inner = self.op(tid, "aten::native_layer_norm", [T(dims, _BF), L([d]), T([d], _BF), T([d], _BF), S("1e-06")],
                        launches=[self.ew(tid, "ln", n * d, 4, grid_div=d, regs=40)], pre=6000, post=2500,
                        mem=n * d * 2)
        return self.op(tid, "aten::layer_norm", [T(dims, _BF), L([d]), T([d], _BF), T([d], _BF), S("1e-06"),
                                                 S("True")], children=[inner], pre=3500, post=1200, seq=True)


def _step_model(b, pid, main, bwd, device, batch, img, nblocks, gelu_triton_every=2):
    """Return (forward ops, backward groups, optimizer ops) for one step shape."""
    D, FF, H, HD, NCLS = 768, 3072, 12, 64, 1000
    p = img // 16
    seq = p * p
    n = batch * seq
    F32, BF, HALF = "float", _BF, "c10::Half"
    fwd = []

    # ---- conv stem: conv(3->64, k3 s2 p1) + relu, conv(64->768, k8 s8)
    def conv(cin, cout, hw, k, s, pad, out_hw):
        x = T([batch, cin, hw, hw], F32)
        w = T([cout, cin, k, k], F32)
        bias = T([cout], F32)
        st, pd, dl = L([s, s]), L([pad, pad]), L([1, 1])
        flops = 2.0 * batch * cout * out_hw * out_hw * cin * k * k
        in_b = batch * cin * hw * hw * 4
        out_b = batch * cout * out_hw * out_hw * 4
        ls = [b.kern(main, "n2n", in_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, in_b // 4096), 1, 1], [256, 1, 1], 32, 4224),
              b.kern(main, "fprop", max(flops / TF32_FLOP_PER_NS, (in_b + out_b) / HBM_BYTES_PER_NS) + 4000,
                     [max(1, batch * out_hw * out_hw // 128), max(1, cout // 128), 1], [256, 1, 1], 168, 81920,
                     api_ns=6500),
              b.kern(main, "nhwc2nchw", out_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, out_b // 4096), 1, 1],
                     [256, 1, 1], 32, 4224)]
        cud = b.op(main, "aten::cudnn_convolution", [x, w, pd, st, dl, S(1), S("False"), S("False"), S("True")],
                   launches=ls, pre=22000, post=6000, mem=out_b)
        add = b.op(main, "aten::add_", [T([batch, cout, out_hw, out_hw], F32), T([1, cout, 1, 1], F32, [cout, 1, 1, 1]),
                                        S(1)], launches=[b.ew(main, "add_f32", out_b // 4, 12)], pre=5000, post=2000)
        _c = b.op(main, "aten::_convolution", [x, w, bias, st, pd, dl, S("False"), L([0, 0]), S(1), S("False"),
                                                S("False"), S("True"), S("True")],
                  children=[cud, b.view(main, "aten::reshape", [cout], F32, [L([1, -1, 1, 1])]), add], pre=3000, post=1500)
        c = b.op(main, "aten::convolution", [x, w, bias, st, pd, dl, S("False"), L([0, 0]), S(1)], children=[_c],
                 pre=2500, post=1000)
        return b.op(main, "aten::conv2d", [x, w, bias, st, pd, dl, S(1)], children=[c], pre=3000, post=1200, seq=True)

    h1 = img // 2
    fwd.append(("nn.Module: Conv2d_0", [conv(3, 64, img, 3, 2, 1, h1)]))
    relu = b.op(main, "aten::relu", [T([batch, 64, h1, h1], F32)], children=[
        b.op(main, "aten::clamp_min", [T([batch, 64, h1, h1], F32), S(0)],
             launches=[b.ew(main, "relu", batch * 64 * h1 * h1, 8)], pre=6000, post=2000,
             mem=batch * 64 * h1 * h1 * 4)], pre=3000, post=1000, seq=True)
    fwd.append(("nn.Module: ReLU_0", [relu]))
    fwd.append(("nn.Module: Conv2d_1", [conv(64, D, h1, 8, 8, 0, p)]))
    to_bf16 = b.op(main, "aten::to", [T([batch, seq, D], F32, [seq * D, 1, seq]), S(15), S("False"), S("False"), NONE],
                   children=[b.op(main, "aten::_to_copy", [T([batch, seq, D], F32, [seq * D, 1, seq]), S(15), NONE, NONE,
                                                           NONE, S("False"), NONE], children=[
                       b.op(main, "aten::empty_strided", [L([batch, seq, D]), L([seq * D, D, 1]), S(15), NONE, NONE, NONE],
                            pre=2500, post=1000),
                       b.op(main, "aten::copy_", [T([batch, seq, D], BF), T([batch, seq, D], F32, [seq * D, 1, seq]),
                                                  S("False")], launches=[b.ew(main, "to_bf16", n * D, 6, regs=28)],
                            pre=5000, post=2000)], pre=3000, post=1500, mem=n * D * 2)], pre=2500, post=1000, seq=True)
    fwd.append((None, [b.view(main, "aten::flatten", [batch, D, p, p], F32, [S(2), S(-1)]),
                       b.view(main, "aten::transpose", [batch, D, seq], F32, [S(1), S(2)]), to_bf16]))

    bwd_groups = []
    xdims = [batch, seq, D]
    for i in range(nblocks):
        ops = []
        ops.append(b.layer_norm(main, xdims, D))
        ops.append(b.linear(main, n, D, 3 * D, xdims))
        ops.append(b.view(main, "aten::view", [batch, seq, 3 * D], BF, [L([batch, seq, 3, H, HD])]))
        ops.append(b.view(main, "aten::permute", [batch, seq, 3, H, HD], BF, [L([2, 0, 3, 1, 4])]))
        qkv = T([batch, H, seq, HD], BF, [seq * 3 * D, HD, 3 * D, 1])
        attn_flops = 4.0 * batch * H * seq * seq * HD
        fa = b.op(main, "aten::_flash_attention_forward",
                  [qkv, qkv, qkv, NONE, NONE, S(seq), S(seq), S("0."), S("False"), S("False"), NONE],
                  children=[b.op(main, "aten::empty", [L([batch, seq, H, HD]), S(15), NONE, NONE, NONE, NONE],
                                 pre=2000, post=800),
                            b.op(main, "aten::empty", [L([batch, H, seq]), S(6), NONE, NONE, NONE, NONE],
                                 pre=1500, post=700)],
                  launches=[b.kern(main, "flash_fwd", attn_flops / (0.7 * GEMM_FLOP_PER_NS) + 4000,
                                   [max(1, (seq + 127) // 128), batch, H], [128, 1, 1], 255, 49152)],
                  pre=8000, post=3000, mem=n * D * 2)
        sd = b.op(main, "aten::_scaled_dot_product_flash_attention",
                  [qkv, qkv, qkv, S("0."), S("False"), S("False"), S("0.125")],
                  children=[b.view(main, "aten::transpose", [batch, H, seq, HD], BF, [S(1), S(2)]), fa],
                  pre=5000, post=2000)
        ops.append(b.op(main, "aten::scaled_dot_product_attention",
                        [qkv, qkv, qkv, NONE, S("0."), S("False"), NONE, S("False")], children=[sd],
                        pre=4000, post=1500, seq=True))
        ops.append(b.view(main, "aten::reshape", [batch, seq, H, HD], BF, [L([batch, seq, D])]))
        ops.append(b.linear(main, n, D, D, xdims, kname="gemm_mid", splitk=(seq <= 144)))
        ops.append(b.op(main, "aten::add", [T(xdims, BF), T(xdims, BF), S(1)],
                        launches=[b.ew(main, "add_bf16", n * D, 6)], pre=7000, post=2500, seq=True, mem=n * D * 2))
        ops.append(b.layer_norm(main, xdims, D))
        ops.append(b.linear(main, n, D, FF, xdims))
        ffdims = [batch, seq, FF]
        if gelu_triton_every and (i + img // 32) % gelu_triton_every == 1:
            kn = "triton_poi_fused_gelu_%d" % (3 + i)
            ops.append(b.op(main, kn, [T(ffdims, BF), T(ffdims, BF), S(n * FF)], launches=[
                b.kern(main, kn, n * FF * 4 / HBM_BYTES_PER_NS + 2500, [(n * FF + 1023) // 1024, 1, 1], [256, 1, 1],
                       18, 0, api=API_CU_LAUNCH, api_ns=7000)], pre=12000, post=3000, mem=n * FF * 2,
                extra_args=', "kernel_backend": "triton", "kernel_hash": "c%s", "grid": "grid(%d,)", "stream": 0'
                % ("qaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggf"[:44], (n * FF + 1023) // 1024)))
        else:
            ops.append(b.op(main, "aten::gelu", [T(ffdims, BF), NONE],
                            launches=[b.ew(main, "gelu", n * FF, 4, regs=30)], pre=8000, post=2500, seq=True,
                            mem=n * FF * 2))
        ops.append(b.linear(main, n, FF, D, ffdims, kname="gemm_mid"))
        ops.append(b.op(main, "aten::add", [T(xdims, BF), T(xdims, BF), S(1)],
                        launches=[b.ew(main, "add_bf16", n * D, 6)], pre=7000, post=2500, seq=True, mem=n * D * 2))
        fwd.append(("nn.Module: Block_%d" % i, ops))

        # ---- backward of this block (executed in reverse block order)
        def lin_bwd(nn_, k, m, name_nt="gemm_nt", splitk=False):
            return [
                b.op(bwd, "aten::t", [T([k, m], BF, [1, k])], pre=2500, post=1000),
                b.op(bwd, "aten::mm", [T([nn_, m], BF), T([m, k], BF)],
                     launches=b.gemm(bwd, nn_, m, k, "gemm_nn"), pre=8000, post=2500),
                b.op(bwd, "aten::t", [T([nn_, m], BF)], pre=2500, post=1000),
                b.op(bwd, "aten::mm", [T([m, nn_], BF, [1, m]), T([nn_, k], BF)],
                     launches=b.gemm(bwd, m, nn_, k, name_nt, splitk=splitk), pre=8000, post=2500),
                b.op(bwd, "aten::sum", [T([nn_, m], BF), L([0]), S("True"), NONE],
                     launches=[b.ew(bwd, "sum_bf16", nn_ * m, 2, grid_div=4096, regs=32)], pre=9000, post=2500),
                b.op(bwd, "aten::view", [T([1, m], BF), L([m])], pre=1500, post=800),
            ]

        def node(name, inner, kids, mem_free=True):
            return (name, inner, kids, mem_free)

        bg = []
        bg.append(node("AddBackward0", None, []))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, FF, D, "gemm_nt_small", splitk=(seq <= 144))))
        if gelu_triton_every and (i + img // 32) % gelu_triton_every == 1:
            kn = "triton_poi_fused_gelu_gelu_backward_%d" % (7 + i)
            bg.append(node("CompiledFunctionBackward", None, [
                b.op(bwd, kn, [T(ffdims, BF), T(ffdims, BF), T(ffdims, BF), S(n * FF)], launches=[
                    b.kern(bwd, kn, n * FF * 6 / HBM_BYTES_PER_NS + 2500, [(n * FF + 1023) // 1024, 1, 1],
                           [256, 1, 1], 22, 0, api=API_CU_LAUNCH, api_ns=7000)], pre=12000, post=3000,
                     extra_args=', "kernel_backend": "triton", "grid": "grid(%d,)", "stream": 0'
                     % ((n * FF + 1023) // 1024))]))
        else:
            bg.append(node("GeluBackward0", "aten::gelu_backward", [
                b.op(bwd, "aten::gelu_backward", [T(ffdims, BF), T(ffdims, BF), NONE],
                     launches=[b.ew(bwd, "gelu_bwd", n * FF, 6, regs=30)], pre=8000, post=2500)]))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, D, FF)))
        bg.append(node("NativeLayerNormBackward0", None, [
            b.op(bwd, "aten::native_layer_norm_backward",
                 [T(xdims, BF), T(xdims, BF), L([D]), T([batch, seq, 1], F32), T([batch, seq, 1], F32), T([D], BF),
                  T([D], BF), L(["True", "True", "True"])],
                 launches=[b.ew(bwd, "ln_bwd_in", n * D, 6, grid_div=D, regs=48),
                           b.kern(bwd, "ln_bwd_gb", n * D * 2 / HBM_BYTES_PER_NS + 3000, [(D + 31) // 32, 1, 1],
                                  [32, 32, 1], 64, 8320)], pre=10000, post=3000)]))
        bg.append(node("AddBackward0", None, []))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, D, D, "gemm_nt_small", splitk=(seq <= 144))))
        bg.append(node("ScaledDotProductFlashAttentionBackward0", None, [
            b.op(bwd, "aten::_scaled_dot_product_flash_attention_backward",
                 [qkv, qkv, qkv, qkv, qkv, T([batch, H, seq], F32), NONE, NONE, S(seq), S(seq), S("0."), S("False"),
                  T([2], "long"), T([], "long"), S("0.125")],
                 children=[b.op(bwd, "aten::_flash_attention_backward",
                                [qkv, qkv, qkv, qkv, qkv, T([batch, H, seq], F32), NONE, NONE, S(seq), S(seq),
                                 S("0."), S("False"), T([2], "long"), T([], "long"), S("0.125")],
                                children=[b.op(bwd, "aten::empty_like", [qkv, NONE, NONE, NONE, NONE, NONE],
                                               pre=2500, post=1000),
                                          b.op(bwd, "aten::zeros", [L([batch, H, seq, HD]), S(6), NONE, NONE, NONE],
                                               launches=[b.memset(bwd, n * D * 4)], pre=6000, post=2000)],
                                launches=[b.ew(bwd, "flash_bwd_dot", n * D, 4, grid_div=HD * 128, regs=40),
                                          b.kern(bwd, "flash_bwd", 2.5 * attn_flops / (0.6 * GEMM_FLOP_PER_NS) + 6000,
                                                 [max(1, (seq + 127) // 128), batch, H], [256, 1, 1], 255, 98304),
                                          b.ew(bwd, "flash_bwd_cvt", n * D, 6, grid_div=HD * 128, regs=32)],
                                pre=9000, post=3000)], pre=5000, post=2000)]))
        bg.append(node("AddmmBackward0", None, lin_bwd(n, D, 3 * D)))
        bg.append(node("NativeLayerNormBackward0", None, [
            b.op(bwd, "aten::native_layer_norm_backward",
                 [T(xdims, BF), T(xdims, BF), L([D]), T([batch, seq, 1], F32), T([batch, seq, 1], F32), T([D], BF),
                  T([D], BF), L(["True", "True", "True"])],
                 launches=[b.ew(bwd, "ln_bwd_in", n * D, 6, grid_div=D, regs=48),
                           b.kern(bwd, "ln_bwd_gb", n * D * 2 / HBM_BYTES_PER_NS + 3000, [(D + 31) // 32, 1, 1],
                                  [32, 32, 1], 64, 8320)], pre=10000, post=3000)]))
        bwd_groups.append(bg)

    # ---- head + loss
    head = [
        b.op(main, "aten::mean", [T(xdims, BF), L([1]), S("False"), NONE],
             launches=[b.ew(main, "mean_bf16", n * D, 2, grid_div=4096, regs=32)], pre=9000, post=2500, seq=True),
        b.op(main, "aten::to", [T([batch, D], BF), S(5), S("False"), S("False"), NONE],
             children=[b.op(main, "aten::_to_copy", [T([batch, D], BF), S(5), NONE, NONE, NONE, S("False"), NONE],
                            children=[b.op(main, "aten::copy_", [T([batch, D], HALF), T([batch, D], BF), S("False")],
                                           launches=[b.ew(main, "to_bf16", batch * D, 4)], pre=4000, post=1500)],
                            pre=3000, post=1200)], pre=2500, post=1000, seq=True),
        b.linear(main, batch, D, NCLS, [batch, D], dtype=HALF, kname="gemm_head", splitk=True),
    ]
    logits = T([batch, NCLS], F32)
    head.append(b.op(main, "aten::cross_entropy_loss", [logits, T([batch], "long"), NONE, S(1), S(-100), S("0.")],
                     children=[
                         b.op(main, "aten::log_softmax", [logits, S(1), NONE], children=[
                             b.op(main, "aten::_log_softmax", [logits, S(1), S("False")],
                                  launches=[b.kern(main, "logsoftmax", 3500, [batch, 1, 1], [1024, 1, 1], 38, 0)],
                                  pre=7000, post=2000)], pre=3000, post=1000),
                         b.op(main, "aten::nll_loss_nd", [logits, T([batch], "long"), NONE, S(1), S(-100)], children=[
                             b.op(main, "aten::nll_loss", [logits, T([batch], "long"), NONE, S(1), S(-100)], children=[
                                 b.op(main, "aten::nll_loss_forward", [logits, T([batch], "long"), NONE, S(1), S(-100)],
                                      launches=[b.kern(main, "nll", 2600, [1, 1, 1], [32, 1, 1], 28, 0)],
                                      pre=6000, post=2000)], pre=2500, post=1000)], pre=2500, post=1000)],
                     pre=4000, post=1500, seq=True))
    fwd.append(("nn.Module: Linear_head", head))

    head_bwd = [
        ("NllLossBackward0", None, [b.op(bwd, "aten::nll_loss_backward",
                                         [T([], F32), logits, T([batch], "long"), NONE, S(1), S(-100), T([], F32)],
                                         children=[b.op(bwd, "aten::zero_", [logits], launches=[
                                             b.ew(bwd, "fill_f32", batch * NCLS, 4)], pre=5000, post=1500)],
                                         launches=[b.kern(bwd, "nll_bwd", 2400, [1, 1, 1], [32, 1, 1], 26, 0)],
                                         pre=7000, post=2000)], True),
        ("LogSoftmaxBackward0", None, [b.op(bwd, "aten::_log_softmax_backward_data",
                                            [logits, logits, S(1), S(6)],
                                            launches=[b.kern(bwd, "logsoftmax_bwd", 3200, [batch, 1, 1], [1024, 1, 1],
                                                             40, 0)], pre=7000, post=2000)], True),
        ("AddmmBackward0", None, [
            b.op(bwd, "aten::mm", [T([batch, NCLS], HALF), T([NCLS, D], HALF)],
                 launches=b.gemm(bwd, batch, NCLS, D, "gemm_head_nn", splitk=True, dtype_half=True),
                 pre=8000, post=2500),
            b.op(bwd, "aten::sum", [T([batch, NCLS], HALF), L([0]), S("True"), NONE],
                 launches=[b.ew(bwd, "sum_bf16", batch * NCLS, 2, grid_div=4096, regs=32)], pre=9000, post=2500)],
         True),
        ("MeanBackward1", None, [b.op(bwd, "aten::expand", [T([batch, 1, D], BF), L([batch, seq, D]), S("False")],
                                      pre=2500, post=1000),
                                 b.op(bwd, "aten::div", [T([batch, seq, D], BF, [D, 0, 1]), S(seq)],
                                      launches=[b.ew(bwd, "add_bf16", n * D, 4)], pre=7000, post=2000)], True),
    ]

    stem_bwd = [
        ("ToCopyBackward0", None, [b.op(bwd, "aten::to", [T(xdims, BF), S(6), S("False"), S("False"), NONE],
                                        children=[b.op(bwd, "aten::copy_", [T(xdims, F32), T(xdims, BF), S("False")],
                                                       launches=[b.ew(bwd, "to_bf16", n * D, 6)],
                                                       pre=5000, post=2000)], pre=3000, post=1200)], True),
    ]

    def conv_bwd(cin, cout, hw, k, s, pad, out_hw, need_input_grad):
        flops = 2.0 * batch * cout * out_hw * out_hw * cin * k * k
        in_b = batch * cin * hw * hw * 4
        out_b = batch * cout * out_hw * out_hw * 4
        ls = [b.kern(bwd, "n2n", out_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, out_b // 4096), 1, 1], [256, 1, 1],
                     32, 4224)]
        if need_input_grad:
            ls.append(b.kern(bwd, "dgrad", max(flops / TF32_FLOP_PER_NS, (in_b + out_b) / HBM_BYTES_PER_NS) + 5000,
                             [max(1, batch * hw * hw // 128), max(1, cin // 128), 1], [256, 1, 1], 168, 81920))
            ls.append(b.kern(bwd, "nhwc2nchw", in_b * 2 / HBM_BYTES_PER_NS + 1500, [max(1, in_b // 4096), 1, 1],
                             [256, 1, 1], 32, 4224))
        ls.append(b.kern(bwd, "wgrad", max(flops / TF32_FLOP_PER_NS, (in_b + out_b) / HBM_BYTES_PER_NS) + 6000,
                         [max(1, cout // 128), max(1, cin * k * k // 128), 4], [256, 1, 1], 168, 81920))
        ls.append(b.ew(bwd, "sum_f32", out_b // 4, 4, grid_div=4096, regs=32))
        x = T([batch, cin, hw, hw], F32)
        return ("ConvolutionBackward0", None, [
            b.op(bwd, "aten::convolution_backward",
                 [T([batch, cout, out_hw, out_hw], F32), x, T([cout, cin, k, k], F32), L([cout]), L([s, s]),
                  L([pad, pad]), L([1, 1]), S("False"), L([0, 0]), S(1), L([str(need_input_grad), "True", "True"])],
                 launches=ls, pre=30000, post=8000)], True)

    stem_bwd.append(conv_bwd(64, D, h1, 8, 8, 0, p, True))
    stem_bwd.append(("ReluBackward0", None, [
        b.op(bwd, "aten::threshold_backward", [T([batch, 64, h1, h1], F32), T([batch, 64, h1, h1], F32), S(0)],
             launches=[b.ew(bwd, "relu_bwd", batch * 64 * h1 * h1, 12)], pre=7000, post=2000)], True))
    stem_bwd.append(conv_bwd(3, 64, img, 3, 2, 1, h1, False))

    # ---- optimizer (fused AdamW over all parameters, with grad clipping)
    nparams = 4 + nblocks * 12 + 2
    plist = T([nparams], F32)
    opt = [
        b.op(main, "aten::_foreach_norm", [plist, S(2), NONE],
             launches=[b.kern(main, "foreach_norm", 9000 + nblocks * 3000, [320, 1, 1], [512, 1, 1], 40, 0)],
             pre=40000, post=6000),
        b.op(main, "aten::stack", [plist, S(0)], launches=[b.ew(main, "add_f32", nparams, 8)], pre=15000, post=3000),
        b.op(main, "aten::linalg_vector_norm", [T([nparams], F32), S(2), NONE, S("False"), NONE],
             launches=[b.ew(main, "sum_f32", nparams, 4)], pre=9000, post=2500),
        b.op(main, "aten::_foreach_mul_", [plist, T([], F32)],
             launches=[b.kern(main, "foreach_mul", 7000 + nblocks * 2500, [320, 1, 1], [512, 1, 1], 32, 0)],
             pre=30000, post=5000),
    ]
    adam_launches = [b.kern(main, "adamw", 30000 + nblocks * 14000, [640, 1, 1], [512, 1, 1], 64, 0,
                            api=API_LAUNCH_EXC, api_ns=8000) for _ in range(3)]
    adamw = b.op(main, "Optimizer.step#AdamW.step", None, children=[
        b.op(main, "aten::_fused_adamw_", [plist, plist, plist, plist, plist, plist, S("0.0001"), S("0.9"), S("0.999"),
                                           S("0.05"), S("1e-08"), S("False"), S("False"), NONE, NONE],
             launches=adam_launches, pre=60000, post=9000)], pre=20000, post=8000, cat="user_annotation")
    zero = b.op(main, "Optimizer.zero_grad#AdamW.zero_grad", None, children=[
        b.op(main, "aten::zero_", [T([64, 3, 3, 3], F32)], children=[
            b.op(main, "aten::fill_", [T([64, 3, 3, 3], F32), S(0)], launches=[b.memset(main, 64 * 27 * 4)],
                 pre=4000, post=1500)], pre=2500, post=1000)], pre=15000, post=5000, cat="user_annotation")
    return fwd, bwd_groups, head_bwd, stem_bwd, opt, adamw, zero, n, D


# ---------------------------------------------------------------------------
# The simulator / writer
# ---------------------------------------------------------------------------

class _Sim:
    def __init__(self, rng, out, pid, main, bwd, device, rank, world_size):
        self.rng = rng
        self.r = rng.random
        self.out = out
        self.pid, self.main, self.bwd, self.device = pid, main, bwd, device
        self.rank, self.world_size = rank, world_size
        self.cnt = [0] * len(CATS)
        self.ext = 0
        self.corr = 0
        self.evidx = 0
        self.seqno = 0
        self.pyid = 0
        self.t = 0
        self.free = {COMPUTE_STREAM: 0, COMM_STREAM: 0}
        self.first7 = None
        self.last7 = 0
        self.allocated = 1 << 30
        self.reserved = 6 << 30
        self.addr = 0x7F3A00000000 + (rank << 36)
        self.alloc_stack = []
        self._seq_for = []
        self._tpl_mem = {}
        self._tpl_py = {}
        self._tpl_gua = {}
        self._sync = {}

    # --- primitive emitters ---------------------------------------------------
    def mem(self, tid, nbytes):
        key = tid
        tpl = self._tpl_mem.get(key)
        if tpl is None:
            tpl = self._tpl_mem[key] = (
                ',\n  {\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n    "pid": %d, '
                '"tid": %d,\n    "ts": %%s,\n    "args": {\n      "Total Reserved": %%d, "Total Allocated": %%d, '
                '"Bytes": %%d, "Addr": %%d, "Device Id": %d, "Device Type": 1, "Ev Idx": %%d\n    }\n  }'
                % (self.pid, tid, self.device))
        if nbytes > 0:
            addr = self.addr
            self.addr += (nbytes + 511) & ~511
            self.alloc_stack.append((nbytes, addr))
        else:
            addr = self.addr
        self.allocated += nbytes
        if self.allocated > self.reserved:
            self.reserved = (self.allocated + (2 << 20)) & ~((2 << 20) - 1)
        self.evidx += 1
        self.out.append(tpl % (_us(self.t), self.reserved, self.allocated, nbytes, addr, self.evidx))
        self.cnt[C_INST] += 1

    def free_one(self, tid):
        if self.alloc_stack:
            nbytes, addr = self.alloc_stack.pop()
            saved = self.addr
            self.addr = addr
            self.mem(tid, -nbytes)
            self.addr = saved

    def launch(self, L, ext):
        r = self.r
        t0 = self.t + 400 + int(900 * r())
        d = int(L.api_ns * (0.7 + 0.6 * r()))
        if L.sync:
            # blocks until the stream drains
            w = self.free[L.stream] + 2000 + int(3000 * r()) - t0
            if w > d:
                d = w
        elif r() < 0.004:
            d += 40000 + int(160000 * r())      # rare slow launch
        self.corr += 1
        corr = self.corr
        ts = _us(t0)
        out = self.out
        if L.sync:
            out.append(L.rt % (ts, _us(d), ext, corr))
            self.cnt[L.rt_cat] += 1
            self.t = t0 + d
            return
        out.append(L.rt % (ts, _us(d), ext, corr, corr, ts))
        self.cnt[L.rt_cat] += 1
        self.cnt[C_FLOW] += 1
        if L.dev is not None:
            s = L.stream
            issue = t0 + (d * 3) // 4
            start = issue + 2500 + int(3500 * r())
            f = self.free[s] + 900 + int(1500 * r())
            if f > start:
                start = f
            dd = int(L.dev_ns * (0.9 + 0.2 * r()))
            if dd < 900:
                dd = 900
            self.free[s] = start + dd
            if s == COMPUTE_STREAM:
                if self.first7 is None:
                    self.first7 = start
                self.last7 = start + dd
            self.dev_start = start
            ks = _us(start)
            out.append(L.dev % (ks, _us(dd), ext, corr, corr, ks))
            self.cnt[L.dev_cat] += 1
            self.cnt[C_FLOW] += 1
        self.t = t0 + d

    def op(self, o, seq=None, fwd_thread=0):
        """Emit one Op tree starting at the current time; returns the op's External id."""
        r = self.r
        out = self.out
        slot = len(out)
        out.append(None)
        self.ext += 1
        ext = self.ext
        self.evidx += 1
        ev = self.evidx
        start = self.t
        self.t += int(o.pre * (0.75 + 0.5 * r()))
        if o.seq:
            if seq is None:
                self.seqno += 1
                seq = self.seqno
            seqtxt = ', "Sequence number": %d, "Fwd thread id": %d' % (seq, fwd_thread)
        else:
            seqtxt = ""
        op = self.op
        for c in o.children:
            op(c, None, fwd_thread)
            self.t += 300 + int(1200 * r())
        launch = self.launch
        for Lc in o.launches:
            launch(Lc, ext)
        if o.mem:
            self.t += 200 + int(600 * r())
            self.mem(self.main if fwd_thread == 0 else self.bwd, o.mem)
        self.t += int(o.post * (0.75 + 0.5 * r()))
        out[slot] = o.tpl % (_us(start), _us(self.t - start), ext, seqtxt, ev)
        self.cnt[o.cat] += 1
        return ext

    def span_begin(self):
        slot = len(self.out)
        self.out.append(None)
        self.ext += 1
        self.evidx += 1
        return slot, self.t, self.ext, self.evidx

    def ua_end(self, span, name, tid, cat="user_annotation"):
        slot, start, ext, ev = span
        tpl = _op_template(cat, name, self.pid, tid, "")
        self.out[slot] = tpl % (_us(start), _us(self.t - start), ext, "", ev)
        self.cnt[C_UA if cat == "user_annotation" else C_OP] += 1
        return ext

    def py_begin(self):
        slot = len(self.out)
        self.out.append(None)
        self.pyid += 1
        self.evidx += 1
        return slot, self.t, self.pyid, self.evidx

    def py_end(self, span, name, parent):
        slot, start, pyid, ev = span
        key = name
        tpl = self._tpl_py.get(key)
        if tpl is None:
            tpl = self._tpl_py[key] = (_x_head("python_function", name, self.pid, self.main)
                                       + '%s, "dur": %s,\n    "args": {\n      "Python parent id": %s, '
                                         '"Python id": %d, "Ev Idx": %d\n    }\n  }')
        self.out[slot] = tpl % (_us(start), _us(self.t - start), "null" if parent is None else parent, pyid, ev)
        self.cnt[C_PY] += 1
        return pyid

    def gpu_annotation(self, name, stream, start, end, ext):
        tpl = self._tpl_gua.get((name, stream))
        if tpl is None:
            tpl = self._tpl_gua[(name, stream)] = (
                _x_head("gpu_user_annotation", name, self.device, stream)
                + '%s, "dur": %s,\n    "args": {\n      "External id": %d\n    }\n  }')
        self.out.append(tpl % (_us(start), _us(max(end - start, 1)), ext))
        self.cnt[C_GUA] += 1

    def sync_call(self, name, cbid, tid, wait_until, ext=None):
        """cudaStreamSynchronize / cudaDeviceSynchronize: blocks the CPU until `wait_until`."""
        key = (name, tid, ext is not None)
        tpl = self._sync.get(key)
        if tpl is None:
            args = ('"External id": %d,      "cbid": ' if ext is not None else '"cbid": ') + str(cbid) + \
                   ', "correlation": %d'
            tpl = self._sync[key] = (_x_head("cuda_runtime", name, self.pid, tid)
                                     + '%s, "dur": %s,\n    "args": {\n      ' + args + '\n    }\n  }')
        t0 = self.t + 500 + int(800 * self.r())
        end = max(t0 + 1500 + int(2000 * self.r()), wait_until + 2000 + int(3000 * self.r()))
        self.corr += 1
        vals = (_us(t0), _us(end - t0)) + ((ext,) if ext is not None else ()) + (self.corr,)
        self.out.append(tpl % vals)
        self.cnt[C_RT] += 1
        self.t = end

    def plain_rt(self, name, cbid, tid, ext, dur):
        key = ("plain", name, tid)
        tpl = self._sync.get(key)
        if tpl is None:
            tpl = self._sync[key] = (_x_head("cuda_runtime", name, self.pid, tid)
                                     + '%s, "dur": %s,\n    "args": {\n      "External id": %d,      "cbid": '
                                     + str(cbid) + ', "correlation": %d\n    }\n  }')
        t0 = self.t + 300 + int(700 * self.r())
        d = int(dur * (0.7 + 0.6 * self.r()))
        self.corr += 1
        self.out.append(tpl % (_us(t0), _us(d), ext, self.corr))
        self.cnt[C_RT] += 1
        self.t = t0 + d


class _Model:
    """Caches built op trees per step shape."""

    def __init__(self, pid, main, bwd, device, nblocks, world_size):
        self.b = _Builder(pid, device)
        self.pid, self.main, self.bwd, self.device = pid, main, bwd, device
        self.nblocks = nblocks
        self.world_size = world_size
        self._cache = {}
        b = self.b
        self.h2d = {}
        self.item = b.op(main, "aten::item", [T([], "float")], children=[
            b.op(main, "aten::_local_scalar_dense", [T([], "float")],
                 launches=[b.memcpy(main, "DtoH", 4),
                           Launch(_api_template(("cudaStreamSynchronize", C_RT, 131), pid, main, flow=False), C_RT,
                                  2000, None, None, 0, COMPUTE_STREAM, sync=True)],
                 pre=5000, post=1500)], pre=3000, post=1000)

    def shape(self, img):
        m = self._cache.get(img)
        if m is None:
            m = self._cache[img] = _step_model(self.b, self.pid, self.main, self.bwd, self.device, 8, img,
                                               self.nblocks)
        return m

    def comm(self, nelems):
        """record_param_comms tree for one gradient bucket (built per call: cheap, few per step)."""
        b = self.b
        ws = self.world_size
        ranks = "[" + ", ".join(str(i) for i in range(ws)) + "]"
        meta = (', "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "%s", '
                '"Group size": %d, "Global rank start": 0, "Global rank stride": 1, "In msg nelems": %d, '
                '"Out msg nelems": %d, "In split size": "[]", "Out split size": "[]", "dtype": "Float", '
                '"Collective name": "allreduce"' % (ranks, ws, nelems, nelems))
        nbytes = nelems * 4
        # ring all-reduce: 2(n-1)/n of the data over ~80 GB/s NVLink-ish bus bandwidth
        dur = 9000 + (2.0 * max(ws - 1, 1) / max(ws, 1)) * nbytes / 80.0
        kern_extra = (', "Collective name": "allreduce", "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d, '
                      '"dtype": "Float", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0", '
                      '"Process Group Description": "default_pg", "Process Group Ranks": "%s"'
                      % (nelems, nelems, ws, ranks))
        kl = b.kern(self.bwd, "nccl", dur, [8, 1, 1], [544, 1, 1], 96, 87568, stream=COMM_STREAM,
                    api=API_LAUNCH_EXC, api_ns=11000, extra=kern_extra)
        rpc = Op(_op_template("cpu_op", "record_param_comms", self.pid, self.bwd, meta), C_OP, 4000, 3000,
                 (), (), False, 0)
        ar = Op(_op_template("cpu_op", "c10d::allreduce_", self.pid, self.bwd, ""), C_OP, 3000, 2000,
                (), (), False, 0)
        return ar, rpc, kl, dur


def _write_header(rng, rank, world_size, ndev):
    devs = ",\n".join(A100_PROPS.format(id=i) for i in range(ndev))
    trace_id = "%032X" % rng.getrandbits(128)
    ranks = ", ".join(str(i) for i in range(world_size))
    dist = ('{"backend": "nccl", "rank": %d, "world_size": %d, "pg_count": 1, "pg_config": [{"pg_name": "0", '
            '"pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": %d, "ranks": [%s]}], '
            '"nccl_version": "2.21.5"}' % (rank, world_size, world_size, ranks))
    return ('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n' + devs + '\n  ],\n'
            '  "cupti_version": 24,\n  "cuda_runtime_version": 12040,\n  "with_flops": 1,\n  "record_shapes": 1,\n'
            '  "cuda_driver_version": 12040,\n  "profile_memory": 1,\n  "trace_id": "' + trace_id + '",\n'
            '  "distributedInfo": ' + dist + ',\n  "traceEvents": [\n')


class _Sink:
    """Streaming byte sink: plain file, or gzip (isal igzip when available)."""

    def __init__(self, path, compresslevel):
        path = os.fspath(path)
        self.path = path
        self.raw = open(path, "wb")
        self.bytes = 0
        if path.endswith(".gz"):
            try:
                from isal import igzip  # type: ignore
                self.f = igzip.IGzipFile(filename="", mode="wb", fileobj=self.raw,
                                         compresslevel=min(3, compresslevel), mtime=0)
            except ImportError:
                self.f = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, compresslevel=compresslevel, mtime=0)
        else:
            self.f = self.raw

    def write(self, s):
        b = s.encode("ascii")
        self.bytes += len(b)
        self.f.write(b)

    def close(self):
        if self.f is not self.raw:
            self.f.close()
        self.raw.close()


def approx_events_for_bytes(n_bytes):
    """Number of events for roughly ``n_bytes`` of uncompressed JSON."""
    return max(1, int(n_bytes) // BYTES_PER_EVENT)


def generate(out_path, events=20000, seed=0, rank=0, world_size=1, target_bytes=None, blocks=None,
             compresslevel=1):
    """Write one synthetic Kineto trace to ``out_path`` (gzip if it ends in ``.gz``).

    events        approximate number of trace events (whole steps are written,
                  so the count is rounded to a step boundary; at least 1 step)
    seed          RNG seed; identical arguments give identical bytes
    rank, world_size
                  distributed identity written to distributedInfo; the GPU
                  (pid of device events, "device" arg) is ``rank % 8``
    target_bytes  if given, overrides ``events``: write steps until the
                  uncompressed JSON is about this many bytes (within ~1 step)
    blocks        transformer blocks per step (default: chosen from the size)
    compresslevel gzip level for .gz output (isal levels 0-3, zlib 1-9)

    Returns a summary dict: path, events, bytes (uncompressed JSON size),
    file_bytes (size on disk), steps, categories (event count per "cat";
    events without a cat under ""), kernels/streams, time span.
    """
    if target_bytes is not None:
        events = approx_events_for_bytes(target_bytes)
    events = max(1, int(events))
    if blocks is None:
        # about ten steps or more, so the size is hit within ~5%
        blocks = max(1, min(12, events // 2500))
    rng = random.Random(int(seed) * 1000003 + int(rank) * 7919 + 17)
    r = rng.random
    device = int(rank) % 8
    pid = 2_900_000 + int(rng.random() * 90_000) + 11 * int(rank)
    main = pid
    bwd = pid + 4000 + int(r() * 5000)
    ndev = min(8, max(1, int(world_size)))
    if device >= ndev:
        ndev = device + 1

    sink = _Sink(out_path, compresslevel)
    header = _write_header(rng, int(rank), int(world_size), ndev)
    out = []
    sim = _Sim(rng, out, pid, main, bwd, device, int(rank), int(world_size))
    model = _Model(pid, main, bwd, device, blocks, int(world_size))
    # monotonic-clock microseconds, like Kineto (~2 weeks of uptime)
    t_origin = (1_200_000_000_000 + int(r() * 80_000_000_000)) * 1000
    sim.t = t_origin
    sim.free = {COMPUTE_STREAM: t_origin, COMM_STREAM: t_origin}
    trace_start = t_origin
    sim.t += 150_000 + int(r() * 100_000)      # warm-up before the first profiled step
    meta_ts = sim.t - 40_000

    sink.write(header)
    written_events = 0
    step_no = 5 + int(r() * 20)
    first_step = step_no
    steps = 0
    first = True
    images = (192, 224, 224, 224, 256, 256, 320)
    while True:
        img = images[int(r() * len(images))]
        _run_step(sim, model, img, step_no)
        if first:
            out[0] = out[0][2:]            # the first event has no leading ",\n"
            first = False
        total = sum(sim.cnt)
        n_ev = total - written_events
        chunk = "".join(out)
        out.clear()
        sink.write(chunk)
        written_events += n_ev
        steps += 1
        step_no += 1
        # running averages of one step's size decide when to stop
        step_events_est = written_events // steps
        step_bytes_est = (sink.bytes - len(header)) // steps
        if target_bytes is not None:
            if sink.bytes + step_bytes_est // 2 >= target_bytes - 4000:
                break
        elif written_events + step_events_est // 2 >= events:
            break

    # trailing metadata, spans and instants (as Kineto writes them)
    t_end = max(sim.t, sim.free[COMPUTE_STREAM], sim.free[COMM_STREAM]) + 20_000
    ts = _us(meta_ts)
    m = []

    def meta(name, mpid, mtid, key, val):
        m.append(',\n  {\n    "name": "%s", "ph": "M", "ts": %s, "pid": %s, "tid": %s,\n    "args": {\n      "%s": %s\n'
                 '    }\n  }' % (name, ts, mpid, mtid, key, val))

    meta("process_name", pid, 0, "name", '"python3"')
    meta("process_labels", pid, 0, "labels", '"CPU"')
    meta("process_sort_index", pid, 0, "sort_index", pid)
    meta("process_name", device, 0, "name", '"python3"')
    meta("process_labels", device, 0, "labels", '"GPU %d"' % device)
    meta("process_sort_index", device, 0, "sort_index", 16777216 + device)
    for s in (COMPUTE_STREAM, COMM_STREAM):
        meta("thread_name", device, s, "name", '"stream %d "' % s)
        meta("thread_sort_index", device, s, "sort_index", s)
    for tid in (bwd, main):
        meta("thread_name", pid, tid, "name", '"thread %d (python3)"' % tid)
        meta("thread_sort_index", pid, tid, "sort_index", tid)
    m.append(',\n  {\n    "ph": "X", "cat": "Trace", "ts": %s, "dur": %s,\n    "pid": "Spans", "tid": "PyTorch Profiler",'
             '\n    "name": "PyTorch Profiler (0)",\n    "args": {\n      "Op count": 0\n    }\n  }'
             % (_us(trace_start), _us(t_end - trace_start)))
    m.append(',\n  {\n    "name": "process_sort_index", "ph": "M", "ts": %s,\n    "pid": "Spans", "tid": 0,\n'
             '    "args": {\n      "sort_index": 536870912\n    }\n  }' % _us(trace_start))
    m.append(',\n  {\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n    "pid": "Traces", '
             '"tid": "Trace PyTorch Profiler", "ts": %s\n  }' % _us(trace_start))
    m.append(',\n  {\n    "name": "Record Window End", "ph": "i", "s": "g",\n    "pid": "", "tid": "", "ts": %s\n  }'
             % _us(t_end + 5_000))
    sim.cnt[C_NONE] += len(m) - 1
    sim.cnt[C_TRACE] += 1
    written_events = sum(sim.cnt)
    trace_name = "/tmp/duckprof_synth/seed%d_rank%d.pt.trace.json" % (int(seed), int(rank))
    sink.write("".join(m) + '\n  ],\n  "traceName": "%s",\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d\n}\n'
               % (trace_name, BASE_TIME_NS))
    sink.close()
    cats = {CATS[i]: c for i, c in enumerate(sim.cnt) if c}
    return {
        "path": os.fspath(out_path),
        "events": written_events,
        "bytes": sink.bytes,
        "file_bytes": os.path.getsize(out_path),
        "steps": steps,
        "first_step": first_step,
        "blocks": blocks,
        "seed": int(seed),
        "rank": int(rank),
        "world_size": int(world_size),
        "device": device,
        "pid": pid,
        "threads": [main, bwd],
        "streams": [COMPUTE_STREAM, COMM_STREAM],
        "categories": cats,
        "trace_start_us": trace_start / 1000.0,
        "trace_end_us": t_end / 1000.0,
        "base_time_ns": BASE_TIME_NS,
    }


def generate_ranks(out_dir, world_size=2, events=20000, seed=0, **kw):
    """Write ``rank<R>.json(.gz)`` for every rank of one job into ``out_dir``.

    Keyword ``suffix`` (default ".json") selects gzip with ".json.gz".
    Returns the list of per-rank summaries.
    """
    suffix = kw.pop("suffix", ".json")
    os.makedirs(out_dir, exist_ok=True)
    return [generate(os.path.join(os.fspath(out_dir), "rank%d%s" % (r, suffix)), events=events, seed=seed, rank=r,
                     world_size=world_size, **kw) for r in range(world_size)]


# ---------------------------------------------------------------------------
# One training step
# ---------------------------------------------------------------------------

def _run_step(sim, model, img, step_no):
    r = sim.r
    main, bwd = model.main, model.bwd
    fwd, bwd_groups, head_bwd, stem_bwd, opt, adamw, zero, n, D = model.shape(img)
    sim.first7 = None
    sim.t += 2000 + int(r() * 6000)
    step_span = sim.span_begin()
    sim.t += 8000 + int(r() * 8000)

    # --- data loading (CPU only: leaves the GPU idle) ------------------------
    dl = sim.span_begin()
    x = r()
    if x < 0.12:
        sim.t += 8_000_000 + int(r() * 25_000_000)        # loader stall
    else:
        sim.t += 300_000 + int(r() * 2_500_000)
    sim.ua_end(dl, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", main)
    sim.t += 5000 + int(r() * 10000)

    # --- host-to-device copies ----------------------------------------------
    b = model.b
    key = img
    h2d = model.h2d.get(key)
    if h2d is None:
        F32 = "float"
        ops = []
        for dims, dt, nbytes in (([8, 3, img, img], F32, 8 * 3 * img * img * 4), ([8], "long", 8 * 8)):
            ops.append(b.op(main, "aten::to", [T(dims, dt), NONE, S(4), NONE, NONE, S("True"), S("False"), NONE],
                            children=[b.op(main, "aten::_to_copy", [T(dims, dt), NONE, NONE, NONE, NONE, S("True"),
                                                                    NONE], children=[
                                b.op(main, "aten::empty_strided", [L(dims), L(_strides(dims)), S(6), NONE, NONE, NONE],
                                     pre=3000, post=1000),
                                b.op(main, "aten::copy_", [T(dims, dt), T(dims, dt), S("True")],
                                     launches=[b.memcpy(main, "HtoD", nbytes)], pre=6000, post=2000)],
                                pre=3000, post=1500, mem=nbytes)], pre=2500, post=1000))
        h2d = model.h2d[key] = ops
    for o in h2d:
        sim.op(o)
        sim.t += 1000 + int(r() * 3000)

    # --- forward on the main thread -----------------------------------------
    step_py = sim.py_begin()
    sim.t += 3000 + int(r() * 3000)
    fwd_py = sim.py_begin()
    for mod_name, ops in fwd:
        py = sim.py_begin() if mod_name else None
        sim.t += 1500 + int(r() * 2000)
        for o in ops:
            sim.op(o)
            sim.t += 1500 + int(r() * 5000)
        if py is not None:
            sim.py_end(py, mod_name, fwd_py[2])
    sim.py_end(fwd_py, "nn.Module: HybridViT_0", step_py[2])
    sim.t += 5000 + int(r() * 10000)

    # --- backward on the autograd thread ------------------------------------
    bwd_py = sim.py_begin()
    sim.t += 20000 + int(r() * 15000)
    seq = sim.seqno
    nb = len(bwd_groups)

    def group(items):
        nonlocal seq
        for name, _inner, kids, _free in items:
            seq -= 1
            ev_span = sim.span_begin()
            sim.t += 2500 + int(r() * 2500)
            in_span = sim.span_begin()
            sim.t += 1500 + int(r() * 2000)
            for k in kids:
                sim.op(k, None, 1)
                sim.t += 800 + int(r() * 2500)
            if sim.alloc_stack and r() < 0.8:
                sim.free_one(bwd)
            sim.t += 1500 + int(r() * 2000)
            _end_seq(sim, in_span, name, bwd, seq)
            sim.t += 1000 + int(r() * 1500)
            _end_seq(sim, ev_span, "autograd::engine::evaluate_function: " + name, bwd, seq)
            sim.t += 1000 + int(r() * 4000)

    group(head_bwd)
    params_per_block = 12 * D * D + 13 * D
    done_blocks = 0
    pending = 0
    for gi in range(nb - 1, -1, -1):
        group(bwd_groups[gi])
        done_blocks += 1
        pending += params_per_block
        # DDP: gradient bucket ready -> all-reduce on the NCCL stream
        if done_blocks == max(1, nb // 2) or gi == 0:
            _allreduce(sim, model, pending)
            pending = 0
    group(stem_bwd)
    _allreduce(sim, model, 64 * 27 + 64 + 64 * D * 64 + D)
    # DDP finalize: the compute stream waits for the last all-reduce
    sim.free[COMPUTE_STREAM] = max(sim.free[COMPUTE_STREAM], sim.free[COMM_STREAM])
    sim.t += 10000 + int(r() * 10000)
    sim.py_end(bwd_py, "torch/_tensor.py(626): backward", step_py[2])

    # --- optimizer -----------------------------------------------------------
    sim.t += 5000 + int(r() * 10000)
    clip = sim.py_begin()
    sim.t += 3000
    for o in opt:
        sim.op(o)
        sim.t += 2000 + int(r() * 4000)
    sim.py_end(clip, "torch/nn/utils/clip_grad.py(138): clip_grad_norm_", step_py[2])
    sim.t += 3000 + int(r() * 5000)
    sim.op(adamw)
    sim.t += 3000 + int(r() * 5000)
    sim.op(zero)
    while sim.alloc_stack:
        sim.free_one(main)
    sim.t += 2000 + int(r() * 3000)

    # --- loss.item(): device-to-host copy + stream synchronize ---------------
    if r() < 0.6:
        sim.op(model.item)
    sim.t += 2000 + int(r() * 4000)
    sim.py_end(step_py, "train.py(88): train_step", None)
    if r() < 0.08:
        sim.sync_call("cudaDeviceSynchronize", 165, main,
                      max(sim.free[COMPUTE_STREAM], sim.free[COMM_STREAM]))
    sim.t += 3000 + int(r() * 5000)
    ext = sim.ua_end(step_span, "ProfilerStep#%d" % step_no, main)
    if sim.first7 is not None:
        sim.gpu_annotation("ProfilerStep#%d" % step_no, COMPUTE_STREAM, sim.first7 - 1, sim.last7 + 1, ext)


def _end_seq(sim, span, name, tid, seq):
    slot, start, ext, ev = span
    key = ("seqop", name, tid)
    tpl = sim._sync.get(key)
    if tpl is None:
        tpl = sim._sync[key] = _op_template("cpu_op", name, sim.pid, tid, "")
    sim.out[slot] = tpl % (_us(start), _us(sim.t - start), ext,
                           ', "Sequence number": %d, "Fwd thread id": 1' % max(seq, 0), ev)
    sim.cnt[C_OP] += 1


def _allreduce(sim, model, nelems):
    """AccumulateGrad -> c10d::allreduce_ -> record_param_comms -> nccl:all_reduce -> NCCL kernel (stream 20)."""
    r = sim.r
    bwd = model.bwd
    nelems = int(nelems)
    ar, rpc, kl, dur = model.comm(nelems)
    acc = sim.span_begin()
    sim.t += 3000 + int(r() * 3000)
    ar_span = sim.span_begin()
    sim.t += 2000 + int(r() * 2000)
    rpc_span = sim.span_begin()
    rpc_ext = rpc_span[2]
    sim.t += 3000 + int(r() * 2000)
    nccl_span = sim.span_begin()
    sim.t += 2000
    sim.plain_rt("cudaEventRecord", 135, bwd, rpc_ext, 2500)
    sim.plain_rt("cudaStreamWaitEvent", 147, bwd, rpc_ext, 1800)
    # the NCCL stream waits for the gradients produced so far on the compute stream
    sim.free[COMM_STREAM] = max(sim.free[COMM_STREAM], sim.free[COMPUTE_STREAM])
    # rank skew: other ranks arrive later, the ring waits
    kl.dev_ns = int(dur + r() * 150_000 * (1 if sim.world_size > 1 else 0.1))
    sim.launch(kl, rpc_ext)
    k_start = sim.dev_start
    sim.plain_rt("cudaEventRecord", 135, bwd, rpc_ext, 1500)
    sim.t += 2000 + int(r() * 2000)
    nccl_ext = sim.ua_end(nccl_span, "nccl:all_reduce", bwd)
    sim.gpu_annotation("nccl:all_reduce", COMM_STREAM, max(k_start - 50, 0), sim.free[COMM_STREAM], nccl_ext)
    sim.t += 2000 + int(r() * 2000)
    slot, start, ext, ev = rpc_span
    sim.out[slot] = rpc.tpl % (_us(start), _us(sim.t - start), ext, "", ev)
    sim.cnt[C_OP] += 1
    sim.t += 1500 + int(r() * 1500)
    slot, start, ext, ev = ar_span
    sim.out[slot] = ar.tpl % (_us(start), _us(sim.t - start), ext, "", ev)
    sim.cnt[C_OP] += 1
    sim.t += 2000 + int(r() * 2000)
    _end_seq(sim, acc, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", bwd, 0)
    sim.t += 2000 + int(r() * 3000)


def main(argv=None):
    """``python -m duckprof.synth OUT [--events N | --target-bytes B] [--seed S]``"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m duckprof.synth", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--target-bytes", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world-size", type=int, default=1)
    a = ap.parse_args(argv)
    s = generate(a.out, events=a.events, seed=a.seed, rank=a.rank, world_size=a.world_size,
                 target_bytes=a.target_bytes)
    print(json.dumps(s, indent=1))


if __name__ == "__main__":
    main()
