"""FLOP, byte and dtype estimates for one Kineto ``cpu_op`` from its recorded args.

Every public function takes the op's name (``"aten::mm"``) and the raw JSON text
of the op's ``"Input Dims"``, ``"Input type"`` and ``"Concrete Inputs"`` args,
exactly as ``torch.profiler(record_shapes=True)`` writes them, e.g.::

    op_flops("aten::addmm", "[[768], [788, 768], [768, 768], [], []]",
             '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]',
             '["", "", "", "1", "1"]')                      # -> 929562624

Already-parsed lists are accepted too.  Nothing here raises on bad input:
malformed JSON, wrong lengths, strings where ints are expected, shapes that do
not fit the op -> ``None`` ("unknown"), never an exception, so the functions are
safe as DuckDB UDFs over every distinct op signature of any trace.

FLOPs follow ``torch.utils.flop_counter`` (the numbers ``FlopCounterMode``,
``profile(with_flops=True)`` and ``torch._inductor.analysis.profile_analysis``
report): 2 FLOPs per multiply-add, bias/epilogue/softmax ignored, convolution
and attention by the same formulas.  Golden tests compare against torch itself
(``fixtures/golden/flops_torch.json``).  Deliberate differences, all in the
direction of "what the kernel really computes":

* ``mv`` / ``addmv`` / ``dot`` / ``vdot`` and the ``matmul`` and ``linear``
  (1-D weight) calls that reach them are counted (2*M*K, 2*K); flop_counter
  has no formula and counts 0.
* In-place ``addmm_`` / ``baddbmm_`` / ``addmv_`` and ``addbmm`` / ``addbmm_``
  are counted as their out-of-place twin (``addbmm``: 2*B*M*K*N, the bmm
  summed into one [M, N]); flop_counter registers its addmm / baddbmm
  formulas for the out-of-place ops only and counts 0 (CPU's ``addbmm``
  runs one ``addmm_`` per batch, now counted too: sum one level).
* ``_flash_attention_forward/backward`` and ``_efficient_attention_forward/
  backward`` take [batch, seq, heads, dim]; flop_counter reads those dense
  shapes as [batch, heads, seq, dim] (heads^2 instead of seq^2).  duckprof
  reorders them, so they equal their ``_scaled_dot_product_*`` parent.
* CPU attention (``_scaled_dot_product_flash_attention_for_cpu`` and its
  backward, ``_scaled_dot_product_attention_math``), ``miopen_*`` and
  ``mkldnn`` convolutions, ``_addmm_activation`` and the legacy
  ``cudnn_convolution_backward*`` ops use the formula of their CUDA twin.
* Causal attention counts half: an attention op (forward or backward, any
  kernel) whose Concrete Inputs say ``is_causal=True`` (or a causal
  ``custom_mask_type``) skips the masked half of the score matrix
  (FlashAttention's benchmark convention and TraceLens's; the diagonal is
  ignored).  flop_counter counts it in full; ``op_flops(..., causal=False)``
  does too.
* A ``conv*d`` whose padding was the string "same"/"valid" records no padding
  value; it is resolved when the answer does not depend on it (stride > 1
  forces "valid"; 1x1 kernels make both equal), otherwise ``None``.  The child
  ``aten::convolution`` always carries explicit padding.

Counting is per op, not per call tree: ``aten::linear`` and its child
``aten::addmm`` both get the same FLOPs, so sum over one level only (e.g. the
ops that launch kernels).

Every formula lives in this package, one module per concern:

* ``dtypes``: "Input type" spellings, element sizes, datasheet peak keys;
* ``args``: parsing the recorded args, and the op's dtype (``op_dtype``);
* ``gemm``, ``conv``, ``attention``: FLOPs and output shapes per op family;
* ``flops``: ``op_flops``, dispatching to the families;
* ``traffic``: ``op_bytes``, the minimum DRAM traffic, with ``schemas``
  (which arguments an op reads and writes: out=, in place) and
  ``reductions`` (the outputs of sum, mean, amax, ...);
* ``store``: estimates in DuckDB (``add_estimates`` at load, ``estimate_table``,
  ``register``).

One count is not an estimate and so not here: ``report ops``' FLOPs column
of ``aten::add`` / ``aten::mul`` repeats torch's profiler (computeFlops: the
first input's element count, whatever the other's shape), in
sql/reports/ops.sql (``call_flops``); flop_counter, and so these estimates,
give those ops none.
"""
from __future__ import annotations

from .args import op_dtype
from .attention import sdpa_is_causal
from .dtypes import DTYPE_ALIASES, DTYPE_BYTES, PEAK_COLUMNS, peak_dtype_for
from .flops import op_flops
from .store import add_estimates, estimate_table, register
from .traffic import op_bytes

__all__ = [
    "DTYPE_ALIASES",
    "DTYPE_BYTES",
    "PEAK_COLUMNS",
    "op_flops",
    "op_bytes",
    "op_dtype",
    "peak_dtype_for",
    "sdpa_is_causal",
    "register",
    "estimate_table",
    "add_estimates",
]
