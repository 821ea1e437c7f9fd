"""Bytes one op call moves: its minimum DRAM traffic, from the shapes and
dtypes of its recorded args and (per op family) the shapes of its outputs."""
from __future__ import annotations

import math

from .args import Args, broadcast, op_dtype, shape
from .dtypes import DTYPE_ALIASES, DTYPE_BYTES
from .flops import estimate, has_formula

# Ops that only reinterpret or allocate memory: no DRAM traffic of their own (a
# copy, when reshape/contiguous/flatten make one, is a child aten::clone/copy_).
ZERO_TRAFFIC = frozenset({
    "view", "_unsafe_view", "view_as", "reshape", "_reshape_alias", "as_strided", "transpose", "t",
    "permute", "expand", "expand_as", "squeeze", "unsqueeze", "slice", "select", "narrow", "detach",
    "alias", "unfold", "split", "split_with_sizes", "chunk", "unbind", "flatten", "unflatten",
    "diagonal", "lift_fresh", "contiguous", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "resize_", "set_", "record_stream", "result_type", "_local_scalar_dense",
    "item", "resolve_conj", "resolve_neg", "to", "numpy_T", "mT", "mH", "adjoint",
})
# Ops that write their output without reading their tensor inputs' data.
WRITE_ONLY = frozenset({
    "fill_", "zero_", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "normal_", "uniform_", "random_", "exponential_",
})


def _tensor_inputs(a: Args):
    """[(numel, element bytes or None)] of every defined tensor input (TensorList elements too)."""
    out = []
    for i in range(a.n()):
        t = a.type(i)
        d = a.dims[i]
        if t == "TensorList" and isinstance(d, list):
            for sub in d:
                s = shape(sub)
                if s is not None:
                    out.append((math.prod(s), None))
            continue
        if not a.is_tensor(i):
            continue
        s = shape(d)
        if s is None:
            continue
        dt = DTYPE_ALIASES.get(t) if t is not None else None
        out.append((math.prod(s), DTYPE_BYTES.get(dt) if dt else None, s))
    return out


def op_bytes(name, input_dims, input_types=None, concrete_inputs=None) -> int | None:
    """Minimum DRAM traffic of one op call, in bytes; None if unknown.

    One formula for every op: each tensor input is read once and each output
    written once (perfect caching, no re-reads).  Inputs are all defined tensor
    arguments (bias, attention masks, logsumexp, optimizer states ...), with
    their own element size.  Outputs are written with the element size of the
    op's dtype (``op_dtype``), shapes derived per op:

    * mm/addmm/_scaled_mm [M, N]; bmm/baddbmm [B, M, N]; matmul the broadcast
      result; linear [..., out]; mv/addmv [M]; dot [] (one element).
    * convolutions: computed from stride/padding/dilation (transposed: with
      output_padding); convolution_backward: grad_input (input's shape),
      grad_weight (weight's), grad_bias ([C_out]) as output_mask says.
    * attention forward: q's shape with v's last dim (logsumexp and RNG state,
      O(seq) not O(seq*dim), are not counted); backward: dq, dk, dv.
    * views and allocations (view, reshape, transpose, expand, empty_like, ...)
      move nothing: 0.  fill_/zero_/*_like: only the output is written.
    * every other ``aten::`` op: output = broadcast shape of all tensor inputs (the largest
      input when they do not broadcast), i.e. elementwise.  This overestimates
      reductions and ops with smaller outputs, and an in-place op counts its
      self tensor as read and written.

    * ``triton_*`` (the record_function of an Inductor-generated Triton kernel):
      its tensor args are all the buffers it reads or writes (in/out pointers),
      so the sum of their sizes (an in-place in_out_ptr counts once).

    ``None`` when there are no tensor inputs, a tensor's dtype is unknown, the
    op's output shape cannot be derived from the recorded args, or the op is not
    an ``aten::`` op without a formula here (fbgemm::, vllm::, autograd nodes).
    """
    try:
        op, a, flops, outs = estimate(name, input_dims, input_types, concrete_inputs)
        if op is None or a.dims is None or a.types is None:
            return None
        if isinstance(name, str) and name.strip().startswith("triton_") and flops is None:
            # An Inductor-generated Triton kernel's record_function: its tensor args are exactly
            # the buffers it reads and writes (in_ptr*, out_ptr*, in_out_ptr*), so each counted once.
            inputs = _tensor_inputs(a)
            if not inputs or any(i[1] is None for i in inputs):
                return None
            return int(sum(i[0] * i[1] for i in inputs))
        if not (isinstance(name, str) and name.strip().startswith("aten::")) and flops is None:
            return None  # fbgemm::, vllm::, c10d::, autograd nodes ...: no shape semantics to rely on
        if op in ZERO_TRAFFIC:
            return 0
        inputs = _tensor_inputs(a)
        if not inputs:
            return None
        dtype = op_dtype(a.dims, a.types)
        out_size = DTYPE_BYTES.get(dtype) if dtype else None
        if out_size is None:
            return None
        total = 0
        for item in inputs:
            size = item[1] if item[1] is not None else out_size
            total += item[0] * size
        if op in WRITE_ONLY:
            shapes = [max((i for i in inputs if len(i) == 3), key=lambda i: i[0])[2]] if inputs else None
            return sum(math.prod(s) for s in shapes) * out_size if shapes else None
        if flops is None and (has_formula(op) or op.startswith(("convolution_backward",
                                                               "cudnn_convolution_backward"))):
            return None  # a known op whose shapes do not fit: no guessing
        if outs is None and flops is not None:
            return None  # e.g. a transposed conv without output_padding recorded
        if outs is None:
            shapes = [i[2] for i in inputs if len(i) == 3]
            if not shapes:
                return None
            b = broadcast(*shapes)
            outs = [b if b is not None else max(shapes, key=math.prod)]
        total += sum(math.prod(s) for s in outs) * out_size
        return int(total)
    except Exception:
        return None


