"""FLOPs and output shapes of the matrix products: mm, addmm, _addmm_activation,
_scaled_mm, bmm, baddbmm, addbmm, matmul, linear, mv, addmv, dot, vdot, and the
in-place addmm_, baddbmm_, addbmm_, addmv_."""
from __future__ import annotations

import math

from .args import Args, broadcast

# Matrix ops: (min, max) recorded argument count (schema args, + an ``out=`` tensor).
# A record with another arity is not this op's call (e.g. mangled records in sampled traces).
GEMM_ARITY = {
    "mm": (2, 3), "_scaled_mm": (4, 9), "addmm": (5, 6), "_addmm_activation": (6, 7), "bmm": (2, 3),
    "baddbmm": (5, 6), "matmul": (2, 3), "linear": (2, 4), "mv": (2, 3), "addmv": (5, 6), "dot": (2, 3),
    "vdot": (2, 3), "addbmm": (5, 6),
    # in place (no flop_counter formula: counted as their out-of-place twin, see the package doc)
    "addmm_": (5, 5), "baddbmm_": (5, 5), "addmv_": (5, 5), "addbmm_": (5, 5),
}


def _mm(a, b):
    if a is None or b is None or a[1] != b[0]:
        return None
    return 2 * a[0] * a[1] * b[1]


def _bmm(a, b):
    if a is None or b is None or a[0] != b[0] or a[2] != b[1]:
        return None
    return 2 * a[0] * a[1] * a[2] * b[2]


def _matmul_shapes(a, b):
    """(flops, out_shape) of torch.matmul(a, b), or None."""
    if a is None or b is None or not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return (2 * a[0], []) if a[0] == b[0] else None
    m = a[-2] if len(a) >= 2 else None
    k = a[-1]
    n = b[-1] if len(b) >= 2 else None
    kb = b[-2] if len(b) >= 2 else b[0]
    if k != kb:
        return None
    batch = broadcast(a[:-2], b[:-2])
    if batch is None:
        return None
    out = list(batch) + ([m] if m is not None else []) + ([n] if n is not None else [])
    return 2 * math.prod(batch) * (m or 1) * k * (n or 1), out


def gemm(op, a: Args):
    """(flops, out_shape) for the matrix ops, or None."""
    arity = GEMM_ARITY.get(op)
    if arity is None or not arity[0] <= a.n() <= arity[1]:
        return None
    if op in ("mm", "_scaled_mm"):
        x, w = a.shape(0, 2), a.shape(1, 2)
        f = _mm(x, w)
        return None if f is None else (f, [x[0], w[1]])
    if op in ("addmm", "addmm_", "_addmm_activation"):
        x, w = a.shape(1, 2), a.shape(2, 2)
        f = _mm(x, w)
        return None if f is None else (f, [x[0], w[1]])
    if op == "bmm":
        x, w = a.shape(0, 3), a.shape(1, 3)
        f = _bmm(x, w)
        return None if f is None else (f, [x[0], x[1], w[2]])
    if op in ("baddbmm", "baddbmm_"):
        x, w = a.shape(1, 3), a.shape(2, 3)
        f = _bmm(x, w)
        return None if f is None else (f, [x[0], x[1], w[2]])
    if op in ("addbmm", "addbmm_"):  # the batch of products summed into one [M, N]
        x, w = a.shape(1, 3), a.shape(2, 3)
        f = _bmm(x, w)
        return None if f is None else (f, [x[1], w[2]])
    if op == "matmul":
        return _matmul_shapes(a.shape(0), a.shape(1))
    if op == "linear":
        x, w = a.shape(0), a.shape(1)
        if w is not None and len(w) == 1:  # a 1-D weight: matmul(x, w), an mv / dot
            return _matmul_shapes(x, w)
        if x is None or w is None or len(w) != 2 or not x or x[-1] != w[1]:
            return None
        return 2 * math.prod(x[:-1]) * w[0] * w[1], list(x[:-1]) + [w[0]]
    if op in ("mv", "addmv", "addmv_"):
        off = 0 if op == "mv" else 1
        x, v = a.shape(off, 2), a.shape(off + 1, 1)
        if x is None or v is None or x[1] != v[0]:
            return None
        return 2 * x[0] * x[1], [x[0]]
    if op in ("dot", "vdot"):
        x, y = a.shape(0, 1), a.shape(1, 1)
        if x is None or y is None or x != y:
            return None
        return 2 * x[0], []
    return None
