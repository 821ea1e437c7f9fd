"""The outputs of reductions (sum, mean, amax, max/min over a dim, var, std,
norm, argmax, logsumexp, ...): their shapes from the reduced dims recorded
in Concrete Inputs, and their dtypes.

A reduction writes one element per kept position, not one per input
element: ``mean`` of a [16, 559, 1024] tensor over dim -1 writes [16, 559, 1]
(keepdim) or [16, 559]. Ops whose internal reductions stay on chip and whose
output is input-sized (softmax, log_softmax, layer norm, cumsum) are not
reductions here: they are elementwise for bytes.
"""
from __future__ import annotations

from typing import NamedTuple

from .args import Args
from .dtypes import SCALAR_TYPE_CODES


class Reduction(NamedTuple):
    dim: int                  # position of the dims argument (int, int[] or None = every dim)
    keepdim: int | None       # position of keepdim (None: the op has none, i.e. False)
    dtype: int | None         # position of a dtype argument (the output's dtype when given)
    outputs: tuple            # dtype of each output: None = the op's dtype, else canonical
    dim_arities: frozenset    # recorded argument counts of the overloads with dims
    full: dict                # argument count of an overload that reduces every element
                              # -> position of its dtype argument (or None)


def _r(dim, keepdim, dtype, outputs, dim_arities, full=None):
    return Reduction(dim, keepdim, dtype, outputs, frozenset(dim_arities), full or {})


# Positions from torch's schemas: sum.dim_IntList(self, dim, keepdim, *, dtype) / sum(self, *, dtype);
# var.correction(self, dim, *, correction, keepdim) and var.dim(self, dim, unbiased, keepdim) /
# var(self, unbiased); norm.ScalarOpt_dim(self, p, dim, keepdim) / norm.ScalarOpt_dim_dtype(..., dtype) /
# norm.Scalar(self, p) / norm.ScalarOpt_dtype(self, p, dtype); max.dim(self, dim, keepdim) returns
# (values, indices), max(self) one value, max.other(self, other) is elementwise.
REDUCTIONS: dict[str, Reduction] = {
    "sum": _r(1, 2, 3, (None,), {4}, {2: 1}),
    "nansum": _r(1, 2, 3, (None,), {4}),
    "mean": _r(1, 2, 3, (None,), {4}, {2: 1}),
    "nanmean": _r(1, 2, 3, (None,), {4}),
    "prod": _r(1, 2, 3, (None,), {4}, {2: 1}),
    "amax": _r(1, 2, None, (None,), {3}),
    "amin": _r(1, 2, None, (None,), {3}),
    "max": _r(1, 2, None, (None, "int64"), {3}, {1: None}),
    "min": _r(1, 2, None, (None, "int64"), {3}, {1: None}),
    "aminmax": _r(1, 2, None, (None, None), {3}),
    "argmax": _r(1, 2, None, ("int64",), {3}),
    "argmin": _r(1, 2, None, ("int64",), {3}),
    "logsumexp": _r(1, 2, None, (None,), {3}),
    "var": _r(1, 3, None, (None,), {4}, {2: None}),
    "std": _r(1, 3, None, (None,), {4}, {2: None}),
    "var_mean": _r(1, 3, None, (None, None), {4}, {2: None}),
    "std_mean": _r(1, 3, None, (None, None), {4}, {2: None}),
    "norm": _r(2, 3, 4, (None,), {4, 5}, {2: None, 3: 2}),
    "linalg_vector_norm": _r(2, 3, 4, (None,), {5}),
    "all": _r(1, 2, None, ("bool",), {3}, {1: None}),
    "any": _r(1, 2, None, ("bool",), {3}, {1: None}),
    "count_nonzero": _r(1, None, None, ("int64",), {2}),
}
# Returned when an op is a reduction but its record does not say what it reduces
UNKNOWN = "unknown"


def reduced_shape(shape: list, dims, keepdim: bool):
    """Shape of reducing ``shape`` over ``dims`` (None or []: every dim); None if a dim is out of range."""
    n = len(shape)
    if dims is None or not dims:
        axes = set(range(n))
    else:
        axes = set()
        for d in dims:
            if not -max(n, 1) <= d < max(n, 1):
                return None
            axes.add(d % max(n, 1))
    if keepdim:
        return [1 if i in axes else s for i, s in enumerate(shape)]
    return [s for i, s in enumerate(shape) if i not in axes]


def outputs(op: str, a: Args, n: int | None = None):
    """[(shape, canonical dtype or None = the op's)] of a reduction's outputs;
    None when ``op`` is no reduction or this record is not one (max(a, b));
    UNKNOWN when it is one but the record lacks what it reduces (no Concrete
    Inputs, as in traces from before torch 2.0) or fits none of its overloads.
    ``n``: the number of arguments to consider (the record's, without out= ones)."""
    spec = REDUCTIONS.get(op)
    x = a.shape(0)
    if spec is None or x is None:
        return None
    n = a.n() if n is None else n
    if n in spec.full:
        # max(self) / min(self): one value, no indices
        dims, keepdim, kinds = None, False, spec.outputs[:1] if op in ("max", "min") else spec.outputs
        dtype_pos = spec.full[n]
    elif n in spec.dim_arities:
        # dim=None is recorded as type '' (and value ''), also in traces without Concrete Inputs
        raw = "" if a.type(spec.dim) == "" else a.raw(spec.dim)
        dims = None if raw == "" else a.ints(spec.dim)
        if raw is None or (raw != "" and dims is None):
            return UNKNOWN
        keepdim = False if spec.keepdim is None else a.bool(spec.keepdim)
        if keepdim is None:
            if dims:
                return UNKNOWN
            keepdim = False  # every dim reduced: one element either way
        kinds, dtype_pos = spec.outputs, spec.dtype
    elif any(a.is_tensor(i) for i in range(1, n)):
        return None  # a second tensor: the elementwise overload (max(a, b), min(a, b))
    else:
        return UNKNOWN  # no overload of this op takes this many arguments
    shape = reduced_shape(x, dims, keepdim)
    if shape is None:
        return UNKNOWN
    code = a.int(dtype_pos) if dtype_pos is not None else None
    given = SCALAR_TYPE_CODES.get(code) if code is not None else None
    return [(shape, kind if kind is not None else given) for kind in kinds]
