"""FLOPs of one op call: dispatch to the op family's formula (gemm, conv,
attention), which also gives the shapes of the op's outputs."""
from __future__ import annotations

from .args import Args, base_name
from .attention import ATTN_BWD, ATTN_FWD, attention, sdpa_is_causal
from .conv import CONV, CONV_BACKWARD, conv, conv_backward
from .gemm import GEMM_ARITY, gemm


def estimate(name, input_dims, input_types, concrete_inputs):
    """(op, args, flops or None, output shapes or None)."""
    op = base_name(name)
    a = Args(input_dims, input_types, concrete_inputs)
    if op is None or a.dims is None:
        return op, a, None, None
    res = None
    if op in CONV:
        r = conv(op, a)
        res = None if r is None else (r[0], None if r[1] is None else [r[1]])
    elif op in CONV_BACKWARD:
        res = conv_backward(op, a)
    elif op in ATTN_FWD or op in ATTN_BWD:
        res = attention(op, a)
    else:
        r = gemm(op, a)
        res = None if r is None else (r[0], [r[1]])
    if res is None:
        return op, a, None, None
    return op, a, res[0], res[1]


def family(op) -> str | None:
    """The estimator (module and formula) that counts ``op``'s FLOPs: 'gemm',
    'conv', 'conv_backward' or 'attention'; None when none does."""
    if op in CONV:
        return "conv"
    if op in CONV_BACKWARD:
        return "conv_backward"
    if op in ATTN_FWD or op in ATTN_BWD:
        return "attention"
    if op in GEMM_ARITY:
        return "gemm"
    return None


def flops_formula(name, input_dims, input_types=None, concrete_inputs=None) -> str | None:
    """Which formula gave op_flops(...) its value, as op_estimates.flops_formula
    stores it: family(op), 'attention_causal' for causal attention (half the
    score matrix); None when op_flops is None."""
    try:
        op, a, flops, _ = estimate(name, input_dims, input_types, concrete_inputs)
        if flops is None:
            return None
        f = family(op)
        if f == "attention" and sdpa_is_causal(name, a.dims, a.types, a.concrete):
            return "attention_causal"
        return f
    except Exception:
        return None


def has_formula(op) -> bool:
    """Whether ``op`` (a base name) is one of the ops with a FLOP formula here."""
    return op in CONV or op in CONV_BACKWARD or op in ATTN_FWD or op in ATTN_BWD or op in GEMM_ARITY


def op_flops(name, input_dims, input_types=None, concrete_inputs=None, *, causal: bool = True) -> int | None:
    """FLOPs of one op call by torch.utils.flop_counter's formulas; None if unknown.

    Covered: mm, addmm, _addmm_activation, _scaled_mm, bmm, baddbmm, addbmm, the
    in-place addmm_ / baddbmm_ / addbmm_ / addmv_, matmul (all
    broadcasting / vector cases), linear ([out, in] or 1-D weight, any leading dims), mv,
    addmv, dot, vdot; the convolution family (convolution, _convolution,
    conv1d/2d/3d, conv_transpose1d/2d/3d, cudnn/miopen/mkldnn/slow convolutions,
    with stride/padding/dilation/groups/transposed read from Concrete Inputs);
    convolution_backward per output_mask (grad_input + grad_weight; grad_bias is
    free); scaled-dot-product attention forward and backward in all its kernels.
    Attention ops whose args say causal (``is_causal`` / ``custom_mask_type``
    in Concrete Inputs) count half; ``causal=False`` counts them in full, as
    flop_counter does (see the package doc).
    """
    try:
        op, a, flops, _ = estimate(name, input_dims, input_types, concrete_inputs)
        if flops is None:
            return None
        if causal and sdpa_is_causal(name, a.dims, a.types, a.concrete):
            flops //= 2
        return int(flops)
    except Exception:  # never let a malformed trace break a query
        return None
