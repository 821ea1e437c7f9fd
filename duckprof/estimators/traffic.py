"""Bytes one op call moves: its minimum DRAM traffic, from the shapes and
dtypes of its recorded args and (per op family) the shapes of its outputs."""
from __future__ import annotations

import math
from typing import NamedTuple

from . import reductions, schemas
from .args import Args, broadcast, op_dtype, shape
from .dtypes import DTYPE_ALIASES, DTYPE_BYTES, SCALAR_TYPE_CODES
from .flops import estimate, family, has_formula

# Ops that only reinterpret or allocate memory: no DRAM traffic of their own (a
# copy, when reshape/contiguous/flatten make one, is a child aten::clone/copy_).
ZERO_TRAFFIC = frozenset({
    "view", "_unsafe_view", "view_as", "reshape", "_reshape_alias", "as_strided", "transpose", "t",
    "permute", "expand", "expand_as", "squeeze", "unsqueeze", "slice", "select", "narrow", "detach",
    "alias", "unfold", "split", "split_with_sizes", "chunk", "unbind", "flatten", "unflatten",
    "diagonal", "lift_fresh", "contiguous", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "resize_", "set_", "record_stream", "result_type", "_local_scalar_dense",
    "item", "resolve_conj", "resolve_neg", "to", "numpy_T", "mT", "mH", "adjoint",
    # in-place views: they change the tensor's metadata, not its data
    "squeeze_", "unsqueeze_", "as_strided_", "transpose_", "t_", "swapdims_", "swapaxes_", "detach_",
    "resize_as_", "_resize_output_",
})
# Ops that write their output without reading their tensor inputs' data.
WRITE_ONLY = frozenset({
    "fill_", "zero_", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "normal_", "uniform_", "random_", "exponential_", "bernoulli_", "geometric_", "cauchy_", "log_normal_",
})
# Copies: (position of the source, position of the destination). The source is
# read and the destination written, each with its own element size (a copy_
# from fp32 into bf16 reads 4 bytes and writes 2 per element).
COPIES = {"copy_": (1, 0), "_copy_from": (0, 1), "_copy_from_and_resize": (0, 1)}
# Functional ops whose output dtype is an argument (a c10::ScalarType code).
DTYPE_ARG = {"_to_copy": 1}


NONE = (None, None)


class _Tensor(NamedTuple):
    pos: int            # argument position
    numel: int
    size: int | None    # element bytes (None: unknown, as for TensorList elements)
    shape: list | None  # None for the elements of a TensorList


def _tensors(a: Args) -> list[_Tensor]:
    """Every defined tensor argument, and every element of a TensorList argument."""
    out = []
    for i in range(a.n()):
        t = a.type(i)
        d = a.dims[i]
        if t == "TensorList" and isinstance(d, list):
            for sub in d:
                s = shape(sub)
                if s is not None:
                    out.append(_Tensor(i, math.prod(s), None, None))
            continue
        if not a.is_tensor(i):
            continue
        s = shape(d)
        if s is None:
            continue
        dt = DTYPE_ALIASES.get(t) if t is not None else None
        out.append(_Tensor(i, math.prod(s), DTYPE_BYTES.get(dt) if dt else None, s))
    return out


def _in_place(op: str) -> bool:
    """torch's naming convention: add_, relu_, _foreach_mul_ (not __and__)."""
    return op.endswith("_") and not op.endswith("__")


def op_bytes(name, input_dims, input_types=None, concrete_inputs=None) -> int | None:
    """Minimum DRAM traffic of one op call, in bytes; None if unknown (rules:
    bytes_and_rule)."""
    return bytes_and_rule(name, input_dims, input_types, concrete_inputs)[0]


#: op_estimates.bytes_formula: the rule of bytes_and_rule that gave the bytes
BYTES_RULES = ("view", "triton_buffers", "write_only", "copy", "out", "in_place", "gemm", "conv",
               "conv_backward", "attention", "reduction", "elementwise")


def bytes_and_rule(name, input_dims, input_types=None, concrete_inputs=None) -> tuple[int | None, str | None]:
    """(bytes, rule): the minimum DRAM traffic of one op call, in bytes, and which
    rule below gave it (one of BYTES_RULES: 'view', 'write_only', 'copy', 'out',
    'in_place', the FLOP family whose output shapes it used ('gemm', 'conv',
    'conv_backward', 'attention'), 'reduction', 'elementwise', 'triton_buffers');
    (None, None) if unknown.

    Every tensor the op reads is read once and every tensor it writes is
    written once (perfect caching, no re-reads), each with its own element
    size; which arguments an op reads and writes comes from torch's schemas
    (``schemas.roles``):

    * inputs (bias, attention masks, logsumexp, optimizer states ...) are read;
    * an ``out=`` tensor (e.g. ``aten::clamp_min`` or ``aten::mm`` recorded
      with one more trailing tensor) is written, not read, and is the output;
    * an in-place op (``add_``, ``relu_``, ``mul_``, ``_foreach_mul_``: a name
      ending in ``_``) reads and writes its self tensor once each and has no
      other output; ``copy_`` reads its source and writes its destination,
      each with its own dtype; ``fill_``/``zero_``/``normal_``/... and
      ``*_like`` only write.

    Otherwise the op writes new outputs, with the element size of the op's
    dtype (``op_dtype``), shapes derived per op:

    * mm/addmm/_scaled_mm [M, N]; bmm/baddbmm [B, M, N]; matmul the broadcast
      result; linear [..., out]; mv/addmv [M]; dot [] (one element).
    * convolutions: computed from stride/padding/dilation (transposed: with
      output_padding); convolution_backward: grad_input (input's shape),
      grad_weight (weight's), grad_bias ([C_out]) as output_mask says.
    * attention forward: q's shape with v's last dim (logsumexp and RNG state,
      O(seq) not O(seq*dim), are not counted); backward: dq, dk, dv.
    * reductions (sum, mean, amax, max/min over a dim, var, std, norm, argmax,
      logsumexp, ...: ``reductions.REDUCTIONS``): the input with the reduced
      dims (Concrete Inputs; none or [] = all) removed, or kept as 1 with
      keepdim; argmax/argmin and max/min's indices are int64, all/any bool,
      and a dtype argument sets the output's dtype.
    * views and allocations (view, reshape, transpose, expand, empty_like,
      unsqueeze_, ...) move nothing: 0.
    * every other ``aten::`` op: output = broadcast shape of all tensor inputs
      (the largest input when they do not broadcast), i.e. elementwise; this
      includes softmax, layer norm and cumsum, whose outputs are input-sized.
      ``_to_copy`` writes it with the dtype it converts to.

    * ``triton_*`` (the record_function of an Inductor-generated Triton kernel):
      its tensor args are all the buffers it reads or writes (in/out pointers),
      so the sum of their sizes (an in-place in_out_ptr counts once).

    ``None`` when there are no tensor inputs, a tensor's dtype is unknown, the
    op's output shape cannot be derived from the recorded args (a reduction
    recorded without Concrete Inputs), or the op is not an ``aten::`` op
    without a formula here (fbgemm::, vllm::, autograd nodes).
    """
    try:
        op, a, flops, outs = estimate(name, input_dims, input_types, concrete_inputs)
        if op is None or a.dims is None or a.types is None:
            return NONE
        if isinstance(name, str) and name.strip().startswith("triton_") and flops is None:
            # An Inductor-generated Triton kernel's record_function: its tensor args are exactly
            # the buffers it reads and writes (in_ptr*, out_ptr*, in_out_ptr*), so each counted once.
            tensors = _tensors(a)
            if not tensors or any(t.size is None for t in tensors):
                return NONE
            return int(sum(t.numel * t.size for t in tensors)), "triton_buffers"
        if not (isinstance(name, str) and name.strip().startswith("aten::")) and flops is None:
            return NONE  # fbgemm::, vllm::, c10d::, autograd nodes ...: no shape semantics to rely on
        if op in ZERO_TRAFFIC:
            return 0, "view"
        tensors = _tensors(a)
        if not tensors:
            return NONE
        dtype = op_dtype(a.dims, a.types)
        out_size = DTYPE_BYTES.get(dtype) if dtype else None
        if out_size is None:
            return NONE

        def nbytes(t: _Tensor) -> int:
            return t.numel * (t.size if t.size is not None else out_size)

        if op in WRITE_ONLY:
            largest = max((t for t in tensors if t.shape is not None), key=lambda t: t.numel)
            return largest.numel * out_size, "write_only"
        if op in COPIES:
            src, dst = (next((t for t in tensors if t.pos == p and t.shape is not None), None) for p in COPIES[op])
            return (NONE if src is None or dst is None else (nbytes(src) + nbytes(dst), "copy"))
        if flops is None and (has_formula(op) or op.startswith(("convolution_backward",
                                                               "cudnn_convolution_backward"))):
            return NONE  # a known op whose shapes do not fit: no guessing
        role = schemas.roles(name, a)
        n_args = a.n()  # without the out= tensors of an empty out (below)
        outs_given = [t for t in tensors if role[t.pos] == schemas.WRITE]
        if any(t.numel == 0 for t in outs_given) and any(t.numel for t in tensors if role[t.pos] != schemas.WRITE):
            # an empty out= tensor (torch's composite ops pass one) is resized by the op: its
            # recorded shape is not what the op writes, so count the op's own outputs instead
            n_args = min(t.pos for t in outs_given)  # out= arguments come last
            tensors = [t for t in tensors if t not in outs_given]
            outs_given = []
        total = 0
        for t in tensors:
            total += nbytes(t) * (2 if role[t.pos] == schemas.READ_WRITE else 1)
        if outs_given:
            return int(total), "out"  # an out= variant: its out tensors are its outputs
        if _in_place(op) and any(r == schemas.READ_WRITE for r in role):
            return int(total), "in_place"  # in place: self is the output
        if flops is not None:
            if outs is None:
                return NONE  # e.g. a transposed conv without output_padding recorded
            return int(total + sum(math.prod(s) for s in outs) * out_size), family(op)
        reduced = reductions.outputs(op, a, n_args)
        if reduced == reductions.UNKNOWN:
            return NONE
        if reduced is not None:
            return (int(total + sum(math.prod(s) * (DTYPE_BYTES[dt] if dt else out_size) for s, dt in reduced)),
                    "reduction")
        shapes = [t.shape for t in tensors if t.shape is not None]
        if not shapes:
            return NONE
        out = broadcast(*shapes)
        out = out if out is not None else max(shapes, key=math.prod)
        if op in DTYPE_ARG:
            converted = SCALAR_TYPE_CODES.get(a.int(DTYPE_ARG[op]))
            out_size = DTYPE_BYTES[converted] if converted else out_size
        return int(total + math.prod(out) * out_size), "elementwise"
    except Exception:
        return NONE
