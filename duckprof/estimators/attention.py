"""FLOPs and output shapes of scaled-dot-product attention, forward and
backward, in all its kernels (math, flash, efficient, cudnn, CPU flash, the
``_flash_attention_*`` / ``_efficient_attention_*`` [batch, seq, heads, dim]
kernels, jagged/varlen included), and whether a call is causal."""
from __future__ import annotations

from .args import Args, base_name

# Attention: name -> (layout, is_causal position, varlen positions); positions
# from torch's schemas (Kineto records every schema argument, keyword-only ones too)
#   layout "bhsd": [batch, heads, seq, dim]; "bshd": [batch, seq, heads, dim]
#   causal: int position of a bool, ("mask", pos) for a custom_mask_type int,
#           or {recorded argument count: position} when overloads differ
#   varlen: (cum_seq_q, cum_seq_k, max_q, max_k) positions, for the bshd kernels
#   Backward ops take grad_out first, then q, k, v.
ATTN_FWD = {
    "scaled_dot_product_attention": ("bhsd", 5, None),
    "_scaled_dot_product_flash_attention": ("bhsd", {7: 4, 10: 7}, None),  # 10: .quantized
    "_scaled_dot_product_flash_attention_for_cpu": ("bhsd", 4, None),
    "_scaled_dot_product_efficient_attention": ("bhsd", 6, None),
    "_scaled_dot_product_cudnn_attention": ("bhsd", 6, None),
    "_scaled_dot_product_attention_math": ("bhsd", 5, None),
    "_scaled_dot_product_fused_attention_overrideable": ("bhsd", 5, None),
    "_flash_attention_forward": ("bshd", 8, (3, 4, 5, 6)),
    "_efficient_attention_forward": ("bshd", ("mask", 9), (4, 5, 6, 7)),
}
ATTN_BWD = {
    "_scaled_dot_product_flash_attention_backward": ("bhsd", 11, None),
    "_scaled_dot_product_efficient_attention_backward": ("bhsd", 11, None),
    "_scaled_dot_product_cudnn_attention_backward": ("bhsd", 14, None),
    "_scaled_dot_product_flash_attention_for_cpu_backward": ("bhsd", 7, None),
    "_scaled_dot_product_fused_attention_overrideable_backward": ("bhsd", 13, None),
    "_flash_attention_backward": ("bshd", 11, (6, 7, 8, 9)),
    "_efficient_attention_backward": ("bshd", ("mask", 14), (6, 7, 8, 9)),
}


def _sdpa_fwd_count(q, k, v):
    """torch.utils.flop_counter.sdpa_flop_count ([b, h, s, d] shapes)."""
    b, hq, sq, dq = q
    b2, hkv, sk, d2 = k
    b3, h3, s3, dv = v
    if not (b == b2 == b3 and hkv == h3 and dq == d2 and sk == s3) or hkv == 0 or hq % hkv or hq < hkv:
        return None
    return 2 * b * hq * sq * dq * sk + 2 * b * hq * sq * sk * dv


def _sdpa_bwd_count(g, q, k, v):
    """torch.utils.flop_counter.sdpa_backward_flop_count ([b, h, s, d] shapes)."""
    b, hq, sq, dq = q
    b2, hkv, sk, d2 = k
    b3, h3, s3, dv = v
    b4, h4, s4, d4 = g
    if not (b == b2 == b3 == b4 and hkv == h3 and hq == h4) or hkv == 0 or hq % hkv or hq < hkv:
        return None
    if not (dq == d2 and dv == d4 and sk == s3 and sq == s4):
        return None
    return 2 * b * hq * (3 * sq * sk * dq + 2 * sq * sk * dv)


def _as_bhsd(shape):
    """A [..., seq, dim] shape of rank >= 2 as [batch, 1, seq, dim]; None for rank < 2."""
    if len(shape) < 2:
        return None
    batch = 1
    for d in shape[:-2]:
        batch *= d
    return [batch, 1, shape[-2], shape[-1]]


def attention(op, a: Args):
    """(flops, [output shapes]) for the attention ops, or None."""
    backward = op in ATTN_BWD
    layout, _causal, varlen = (ATTN_BWD if backward else ATTN_FWD)[op]
    off = 1 if backward else 0
    qkv = [a.shape(off + i) for i in range(3)]
    g = a.shape(0) if backward else None
    if any(s is None for s in qkv) or (backward and g is None):
        return None
    q, k, v = qkv
    if varlen is not None and a.shape(varlen[0], 1):
        # jagged/varlen: [total, heads, dim] (flash) or [1, total, heads, dim] (efficient) plus
        # cumulative offsets [batch + 1]; like flop_counter without real offsets, every sequence
        # is counted at max_q / max_k tokens.
        batch = a.shape(varlen[0], 1)[0] - 1
        max_q, max_k = a.int(varlen[2]), a.int(varlen[3])
        if batch < 0 or max_q is None or max_k is None:
            return None
        strip = (lambda s: s[-2:]) if all(len(s) in (3, 4) for s in qkv) else None
        if strip is None:
            return None
        (hq, dq), (hk, dk), (hv, dv) = (strip(s) for s in qkv)
        qb, kb, vb = [1, hq, max_q, dq], [1, hk, max_k, dk], [1, hv, max_k, dv]
        one = _sdpa_bwd_count([1, hq, max_q, dv], qb, kb, vb) if backward else _sdpa_fwd_count(qb, kb, vb)
        if one is None:
            return None
        outs = [q, k, v] if backward else [q[:-1] + [v[-1]]]
        return batch * one, outs
    if layout == "bhsd" and not all(len(s) == 4 for s in qkv):
        # the math path takes any rank >= 2 ([seq, dim], [batch, seq, dim], [b, g, h, seq, dim]):
        # every leading dim is a batch dim (one head)
        q, k, v, g = (_as_bhsd(s) if s is not None else None for s in (*qkv, g))
        if q is None or k is None or v is None or (backward and g is None):
            return None
    elif not all(len(s) == 4 for s in qkv) or (backward and len(g) != 4):
        return None
    if layout == "bshd":
        q, k, v = ([s[0], s[2], s[1], s[3]] for s in qkv)
        g = [g[0], g[2], g[1], g[3]] if backward else None
    flops = _sdpa_bwd_count(g, q, k, v) if backward else _sdpa_fwd_count(q, k, v)
    if flops is None:
        return None
    outs = list(qkv) if backward else [qkv[0][:-1] + [qkv[2][-1]]]
    return flops, outs


def sdpa_is_causal(name, input_dims, input_types, concrete_inputs) -> bool | None:
    """Whether an attention op's args say it is causal (None: not an attention op / not recorded)."""
    op = base_name(name)
    spec = ATTN_FWD.get(op) or ATTN_BWD.get(op)
    if spec is None:
        return None
    a = Args(input_dims, input_types, concrete_inputs)
    pos = spec[1]
    if isinstance(pos, dict):
        pos = pos.get(a.n())
        if pos is None:
            return None
    if isinstance(pos, tuple):  # custom_mask_type: 0 none, 1 top-left causal, 2 bottom-right causal
        m = a.int(pos[1])
        return None if m is None else m != 0
    return a.bool(pos)

