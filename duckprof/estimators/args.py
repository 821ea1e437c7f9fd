"""Reading one op's recorded args: ``Input Dims``, ``Input type`` and
``Concrete Inputs`` (JSON text as Kineto writes it, or already-parsed lists),
its name, and the dtype they give the op.  Every accessor returns None
instead of raising: a malformed record is "unknown", never an error."""
from __future__ import annotations

import json
import math
import re

from .dtypes import DTYPE_ALIASES, NON_TENSOR_TYPES


def load_list(text):
    """JSON text (or an already-parsed list) -> list, else None."""
    if text is None:
        return None
    if isinstance(text, list):
        return text
    if not isinstance(text, (str, bytes, bytearray)):
        return None
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def shape(v):
    """A tensor shape: list of non-negative ints (possibly empty = 0-dim)."""
    if isinstance(v, list) and all(is_int(d) and d >= 0 for d in v):
        return v
    return None


def broadcast(*shapes):
    """Broadcast shapes (numpy rules) or None if incompatible."""
    n = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(n):
        dim = 1
        for s in shapes:
            j = i - (n - len(s))
            if j < 0:
                continue
            d = s[j]
            if d != 1:
                if dim not in (1, d):
                    return None
                dim = d
        out.append(dim)
    return out


def base_name(name) -> str | None:
    """'aten::mm' -> 'mm' (an overload suffix dropped); None for other namespaces."""
    if not isinstance(name, str):
        return None
    name = name.strip()
    if name.startswith("aten::"):
        name = name[6:]
    elif "::" in name:
        return None
    return name.split(".")[0]  # an overload suffix, if any


class Args:
    """Parsed args of one op; every accessor returns None instead of raising."""

    __slots__ = ("dims", "types", "concrete")

    def __init__(self, dims, types, concrete):
        self.dims = load_list(dims)
        self.types = load_list(types)
        self.concrete = load_list(concrete)
        # args of different lengths do not describe one call: treat the whole record as unknown
        # (absent types/concrete are fine: old traces lack Concrete Inputs)
        n = len(self.dims) if self.dims is not None else None
        if (types is not None and (self.types is None or len(self.types) != n)) or (
                concrete is not None and (self.concrete is None or len(self.concrete) != n)):
            self.dims = self.types = self.concrete = None

    def n(self) -> int:
        return len(self.dims) if self.dims is not None else 0

    def type(self, i):
        if self.types is None or i >= len(self.types) or not isinstance(self.types[i], str):
            return None
        return self.types[i]

    def is_tensor(self, i) -> bool:
        """Argument i is a (defined) tensor: known dtype, or an unknown non-scalar type."""
        t = self.type(i)
        if t is None:  # no types recorded: trust non-empty dims
            return self.dims is not None and i < len(self.dims) and bool(shape(self.dims[i]))
        return t in DTYPE_ALIASES or (t not in NON_TENSOR_TYPES and shape(self.dims[i]) is not None)

    def shape(self, i, ndim=None):
        """Shape of tensor argument i (optionally requiring ``ndim`` dims)."""
        if self.dims is None or i >= len(self.dims):
            return None
        s = shape(self.dims[i])
        if s is None or (ndim is not None and len(s) not in ((ndim,) if is_int(ndim) else ndim)):
            return None
        if self.types is not None and not self.is_tensor(i):
            return None
        return s

    def raw(self, i):
        if self.concrete is None or i >= len(self.concrete) or not isinstance(self.concrete[i], str):
            return None
        return self.concrete[i].strip()

    def int(self, i):
        s = self.raw(i)
        if s is None or not re.fullmatch(r"-?\d+", s):
            return None
        return int(s)

    def ints(self, i):
        """'[16, 16]' -> [16, 16]; '2' -> [2]; otherwise None."""
        s = self.raw(i)
        if s is None:
            return None
        if re.fullmatch(r"-?\d+", s):
            return [int(s)]
        m = re.fullmatch(r"\[\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*,?\s*\]", s)
        if not m:
            return None
        return [int(x) for x in re.findall(r"-?\d+", s)]

    def bool(self, i):
        s = self.raw(i)
        if s is None:
            return None
        s = s.lower()
        if s in ("true", "1"):
            return True
        if s in ("false", "0"):
            return False
        return None

    def bools(self, i):
        s = self.raw(i)
        if s is None or not re.fullmatch(r"\[\s*((true|false)\s*,?\s*)*\]", s, re.IGNORECASE):
            return None
        return [w.lower() == "true" for w in re.findall(r"true|false", s, re.IGNORECASE)]


def op_dtype(input_dims, input_types) -> str | None:
    """Canonical dtype of an op: that of its largest tensor input.

    As ``torch._inductor.analysis.profile_analysis`` does ("use the largest
    buffer dtype"), except that size is the element count (profile_analysis
    sums the dims): a [4096, 2] int64 index does not outweigh a [1024, 1024]
    bf16 matrix.  Tensors with >= 1 dim come first; 0-dim tensors (wrapped
    Python scalars, typed e.g. 'double') only decide when nothing else is
    there.  Ties go to the earlier argument.  Returns None when there is no
    tensor input or the winning tensor's spelling is unknown.
    """
    try:
        a = Args(input_dims, input_types, None)
        if a.dims is None or a.types is None:
            return None
        best = None  # (rank, numel, -position, type)
        for i in range(a.n()):
            if not a.is_tensor(i):
                continue
            s = shape(a.dims[i])
            if s is None:
                continue
            key = (1 if s else 0, math.prod(s), -i)
            if best is None or key > best[0]:
                best = (key, a.types[i])
        if best is None:
            return None
        return DTYPE_ALIASES.get(best[1])
    except Exception:
        return None
