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

* ``mv`` / ``addmv`` / ``dot`` / ``vdot`` and the ``matmul`` calls that reach
  them are counted (2*M*K, 2*K); flop_counter has no formula and counts 0.
* ``_flash_attention_forward/backward`` and ``_efficient_attention_forward/
  backward`` take [batch, seq, heads, dim]; flop_counter reads those dense
  shapes as [batch, heads, seq, dim] (heads^2 instead of seq^2).  duckprof
  reorders them, so they equal their ``_scaled_dot_product_*`` parent.
* CPU attention (``_scaled_dot_product_flash_attention_for_cpu`` and its
  backward, ``_scaled_dot_product_attention_math``), ``miopen_*`` and
  ``mkldnn`` convolutions, ``_addmm_activation`` and the legacy
  ``cudnn_convolution_backward*`` ops use the formula of their CUDA twin.
* Causal attention: like flop_counter, ``op_flops`` ignores ``is_causal`` by
  default.  ``op_flops(..., causal=True)`` halves the count of attention ops
  whose args say causal (FlashAttention's benchmark convention: half the score
  matrix is masked; the diagonal is ignored).
* A ``conv*d`` whose padding was the string "same"/"valid" records no padding
  value; it is resolved when the answer does not depend on it (stride > 1
  forces "valid"; 1x1 kernels make both equal), otherwise ``None``.  The child
  ``aten::convolution`` always carries explicit padding.

Counting is per op, not per call tree: ``aten::linear`` and its child
``aten::addmm`` both get the same FLOPs, so sum over one level only (e.g. the
ops that launch kernels).
"""
from __future__ import annotations

import json
import math
import re

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
]

# --------------------------------------------------------------------------- dtypes

#: Every "Input type" spelling of a tensor seen in traces (C++ demangled type
#: names from c10's TypeMeta, plus older / other-platform spellings) -> canonical.
DTYPE_ALIASES: dict[str, str] = {
    "double": "fp64", "float64": "fp64",
    "float": "fp32", "float32": "fp32",
    "c10::Half": "fp16", "half": "fp16", "float16": "fp16",
    "c10::BFloat16": "bf16", "bfloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "c10::Float8_e8m0fnu": "fp8",
    "c10::Float4_e2m1fn_x2": "fp4",  # two fp4 values packed per element (1 byte)
    "long int": "int64", "long": "int64", "long long": "int64", "long long int": "int64",
    "__int64": "int64", "int64": "int64", "int64_t": "int64",
    "int": "int32", "int32": "int32",
    "short int": "int16", "short": "int16", "int16": "int16",
    "signed char": "int8", "int8": "int8", "c10::qint8": "int8",
    "unsigned char": "uint8", "uint8": "uint8", "c10::quint8": "uint8",
    "c10::quint4x2": "uint8", "c10::quint2x4": "uint8",
    "short unsigned int": "uint16", "unsigned short": "uint16", "uint16": "uint16",
    "unsigned int": "uint32", "uint32": "uint32",
    "long unsigned int": "uint64", "unsigned long": "uint64", "uint64": "uint64",
    "c10::qint32": "int32",
    "bool": "bool",
    "c10::complex<c10::Half>": "complex32",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
}

#: Bytes per element of each canonical dtype.
DTYPE_BYTES: dict[str, int] = {
    "fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "fp4": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1, "bool": 1,
    "complex32": 4, "complex64": 8, "complex128": 16,
}

# "Input type" values of arguments that are not tensors (capitalised Int/Bool/
# Double are scalars in old traces; lower-case int/bool/double are tensors).
_NON_TENSOR_TYPES = frozenset({
    "", "Scalar", "ScalarList", "GenericList", "TensorList", "Int", "Bool", "Double", "Float",
    "Long", "String", "Str", "Device", "Layout", "ScalarType", "MemoryFormat", "None", "Tuple",
    "Dict", "Generator", "Storage", "Stream", "Object", "Dimname", "QScheme", "SymInt",
    "SymFloat", "SymBool", "IntList", "BoolList", "DoubleList", "Capsule", "Future", "Enum",
})

#: Canonical peak key -> column of duckprof/data/peaks.csv.
PEAK_COLUMNS: dict[str, str] = {
    "fp64": "fp64_tflops", "fp32": "fp32_tflops", "tf32": "tf32_tflops", "bf16": "bf16_tflops",
    "fp16": "fp16_tflops", "fp8": "fp8_tflops", "fp4": "fp4_tflops", "int8": "int8_tops",
}


def peak_dtype_for(dtype: str | None, tf32: bool = False) -> str | None:
    """Which datasheet peak applies to an op of canonical ``dtype`` (a PEAK_COLUMNS key).

    fp32 ops use the plain 'fp32' peak unless ``tf32=True`` (torch's
    ``allow_tf32`` / ``set_float32_matmul_precision('high')``, which a trace does
    not record), then 'tf32'.  fp16/bf16/fp8/fp4/fp64 map to themselves; int8 and
    uint8 to 'int8' (integer tensor cores take both).  Anything else -> None.
    """
    if dtype == "fp32":
        return "tf32" if tf32 else "fp32"
    if dtype in ("fp64", "fp16", "bf16", "fp8", "fp4", "int8"):
        return dtype
    if dtype == "uint8":
        return "int8"
    return None


# --------------------------------------------------------------------------- parsing

def _load(text):
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


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shape(v):
    """A tensor shape: list of non-negative ints (possibly empty = 0-dim)."""
    if isinstance(v, list) and all(_is_int(d) and d >= 0 for d in v):
        return v
    return None


class _Args:
    """Parsed args of one op; every accessor returns None instead of raising."""

    __slots__ = ("dims", "types", "concrete")

    def __init__(self, dims, types, concrete):
        self.dims = _load(dims)
        self.types = _load(types)
        self.concrete = _load(concrete)
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
            return self.dims is not None and i < len(self.dims) and bool(_shape(self.dims[i]))
        return t in DTYPE_ALIASES or (t not in _NON_TENSOR_TYPES and _shape(self.dims[i]) is not None)

    def shape(self, i, ndim=None):
        """Shape of tensor argument i (optionally requiring ``ndim`` dims)."""
        if self.dims is None or i >= len(self.dims):
            return None
        s = _shape(self.dims[i])
        if s is None or (ndim is not None and len(s) not in ((ndim,) if _is_int(ndim) else ndim)):
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


def _base(name) -> str | None:
    if not isinstance(name, str):
        return None
    name = name.strip()
    if name.startswith("aten::"):
        name = name[6:]
    elif "::" in name:
        return None
    return name.split(".")[0]  # an overload suffix, if any


# --------------------------------------------------------------------------- FLOPs

def _mm(a, b):
    if a is None or b is None or a[1] != b[0]:
        return None
    return 2 * a[0] * a[1] * b[1]


def _bmm(a, b):
    if a is None or b is None or a[0] != b[0] or a[2] != b[1]:
        return None
    return 2 * a[0] * a[1] * a[2] * b[2]


def _broadcast(*shapes):
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
    batch = _broadcast(a[:-2], b[:-2])
    if batch is None:
        return None
    out = list(batch) + ([m] if m is not None else []) + ([n] if n is not None else [])
    return 2 * math.prod(batch) * (m or 1) * k * (n or 1), out


# Matrix ops: (min, max) recorded argument count (schema args, + an ``out=`` tensor).
# A record with another arity is not this op's call (e.g. mangled records in sampled traces).
_GEMM_ARITY = {
    "mm": (2, 3), "_scaled_mm": (4, 9), "addmm": (5, 6), "_addmm_activation": (6, 7), "bmm": (2, 3),
    "baddbmm": (5, 6), "matmul": (2, 3), "linear": (2, 4), "mv": (2, 3), "addmv": (5, 6), "dot": (2, 3),
    "vdot": (2, 3),
}


def _gemm(op, a: _Args):
    """(flops, out_shape) for the matrix ops, or None."""
    arity = _GEMM_ARITY.get(op)
    if arity is None or not arity[0] <= a.n() <= arity[1]:
        return None
    if op in ("mm", "_scaled_mm"):
        x, w = a.shape(0, 2), a.shape(1, 2)
        f = _mm(x, w)
        return None if f is None else (f, [x[0], w[1]])
    if op in ("addmm", "_addmm_activation"):
        x, w = a.shape(1, 2), a.shape(2, 2)
        f = _mm(x, w)
        return None if f is None else (f, [x[0], w[1]])
    if op == "bmm":
        x, w = a.shape(0, 3), a.shape(1, 3)
        f = _bmm(x, w)
        return None if f is None else (f, [x[0], x[1], w[2]])
    if op == "baddbmm":
        x, w = a.shape(1, 3), a.shape(2, 3)
        f = _bmm(x, w)
        return None if f is None else (f, [x[0], x[1], w[2]])
    if op == "matmul":
        return _matmul_shapes(a.shape(0), a.shape(1))
    if op == "linear":
        x, w = a.shape(0), a.shape(1, 2)
        if x is None or w is None or not x or x[-1] != w[1]:
            return None
        return 2 * math.prod(x[:-1]) * w[0] * w[1], list(x[:-1]) + [w[0]]
    if op in ("mv", "addmv"):
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


# Convolution entry points: positions of (input, weight, bias, stride, padding,
# dilation, transposed, output_padding, groups) in each op's schema.  An int is
# an argument position; a bool/list is a fixed value; None = absent (defaults).
_CONV = {
    # name: (bias, stride, padding, dilation, transposed, output_padding, groups)
    "convolution": (2, 3, 4, 5, 6, 7, 8),
    "_convolution": (2, 3, 4, 5, 6, 7, 8),
    "convolution_overrideable": (2, 3, 4, 5, 6, 7, 8),
    "conv1d": (2, 3, 4, 5, False, None, 6),
    "conv2d": (2, 3, 4, 5, False, None, 6),
    "conv3d": (2, 3, 4, 5, False, None, 6),
    "_convolution_mode": (2, 3, 4, 5, False, None, 6),
    "conv_transpose1d": (2, 3, 4, 7, True, 5, 6),
    "conv_transpose2d": (2, 3, 4, 7, True, 5, 6),
    "conv_transpose3d": (2, 3, 4, 7, True, 5, 6),
    "cudnn_convolution": (None, 3, 2, 4, False, None, 5),
    "cudnn_convolution_transpose": (None, 4, 2, 5, True, 3, 6),
    "cudnn_convolution_relu": (2, 3, 4, 5, False, None, 6),
    "cudnn_convolution_add_relu": (4, 5, 6, 7, False, None, 8),
    "miopen_convolution": (2, 4, 3, 5, False, None, 6),
    "miopen_depthwise_convolution": (2, 4, 3, 5, False, None, 6),
    "miopen_convolution_transpose": (2, 5, 3, 6, True, 4, 7),
    "mkldnn_convolution": (2, 4, 3, 5, False, None, 6),
    "_slow_conv2d_forward": (3, 4, 5, None, False, None, None),
    "slow_conv_transpose2d": (3, 4, 5, 7, True, 6, None),
    "slow_conv_transpose3d": (3, 4, 5, 7, True, 6, None),
}


def _conv_flop_count(x, w, out, transposed):
    """torch.utils.flop_counter.conv_flop_count."""
    conv_shape = (x if transposed else out)[2:]
    return 2 * math.prod(conv_shape) * math.prod(w[2:]) * x[0] * w[0] * w[1]


def _spatial(a: _Args, pos, nsp, default):
    """A per-spatial-dim int list at position ``pos`` (broadcasting a single value)."""
    if pos is None:
        return [default] * nsp
    v = a.ints(pos)
    if v is None:
        return None
    if len(v) == 1 and nsp > 1:
        v = v * nsp
    return v if len(v) == nsp else None


def _conv(op, a: _Args):
    """(flops, out_shape, reads) for the convolution entry points, or None."""
    spec = _CONV[op]
    bias_p, stride_p, pad_p, dil_p, tr_p, outpad_p, groups_p = spec
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) < 3 or len(x) != len(w):
        return None
    nsp = len(x) - 2
    transposed = tr_p if isinstance(tr_p, bool) else a.bool(tr_p)
    if transposed is None:
        return None
    groups = 1 if groups_p is None else a.int(groups_p)
    stride = _spatial(a, stride_p, nsp, 1)
    dilation = _spatial(a, dil_p, nsp, 1)
    padding = _spatial(a, pad_p, nsp, 0)
    kernel = w[2:]
    if padding is None and stride and dilation and a.raw(pad_p) == "" and a.type(pad_p) == "":
        # padding given as a string ("same"/"valid"), which the profiler records as ''.
        # torch rejects "same" with stride > 1, and with a 1x1 (dilated) kernel both agree.
        if any(s != 1 for s in stride) or all(d * (k - 1) == 0 for d, k in zip(dilation, kernel)):
            padding = [0] * nsp
        else:
            return None
    out = None
    if transposed:
        output_padding = _spatial(a, outpad_p, nsp, 0) if outpad_p is not None else [0] * nsp
        if groups and stride and padding and dilation and output_padding:
            out = [x[0], w[1] * groups] + [
                (i - 1) * s - 2 * p + d * (k - 1) + op_ + 1
                for i, s, p, d, k, op_ in zip(x[2:], stride, padding, dilation, kernel, output_padding)
            ]
        flops = _conv_flop_count(x, w, None, True)  # needs only the input's spatial size
    else:
        if not (stride and padding is not None and dilation and groups):
            return None
        if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation):
            return None
        sp = [(i + 2 * p - d * (k - 1) - 1) // s + 1
              for i, s, p, d, k in zip(x[2:], stride, padding, dilation, kernel)]
        if any(v <= 0 for v in sp):
            return None
        out = [x[0], w[0]] + sp
        flops = _conv_flop_count(x, w, out, False)
    if out is not None and any(v <= 0 for v in out):
        out = None
    return flops, out


def _t(s):
    return [s[1], s[0]] + list(s[2:])


def _conv_backward(op, a: _Args):
    """(flops, [output shapes]) for convolution_backward and the legacy cudnn ones."""
    if op == "convolution_backward":
        g, x, w = a.shape(0), a.shape(1), a.shape(2)
        transposed = a.bool(7)
        mask = a.bools(10)
        groups = a.int(9)
        if None in (g, x, w, transposed, mask) or len(mask) != 3 or not (len(g) == len(x) == len(w) >= 3):
            return None
        flops = 0
        outs = []
        if mask[0]:
            flops += _conv_flop_count(g, w, x, not transposed)
            outs.append(x)
        if mask[1]:
            if transposed:
                flops += _conv_flop_count(_t(g), _t(x), _t(w), False)
            else:
                flops += _conv_flop_count(_t(x), _t(g), _t(w), False)
            outs.append(w)
        if mask[2]:
            bias = a.ints(3)
            c_out = (w[1] * groups if groups else None) if transposed else w[0]
            outs.append(bias if bias and len(bias) == 1 else ([c_out] if c_out else None))
        if any(o is None for o in outs):
            outs = None
        return flops, outs
    if op == "cudnn_convolution_backward":  # (self, grad_output, weight, ..., output_mask[2])
        x, g, w = a.shape(0), a.shape(1), a.shape(2)
        mask = a.bools(a.n() - 1)
        if None in (x, g, w, mask) or len(mask) != 2 or not (len(g) == len(x) == len(w) >= 3):
            return None
        flops, outs = 0, []
        if mask[0]:
            flops += _conv_flop_count(g, w, x, True)
            outs.append(x)
        if mask[1]:
            flops += _conv_flop_count(_t(x), _t(g), _t(w), False)
            outs.append(w)
        return flops, outs
    if op == "cudnn_convolution_backward_input":  # (self_size, grad_output, weight, ...)
        g, w = a.shape(1), a.shape(2)
        if g is None or w is None or len(g) != len(w) or len(g) < 3:
            return None
        size = a.ints(0)
        return _conv_flop_count(g, w, None, True), ([size] if size and len(size) == len(g) else None)
    if op == "cudnn_convolution_backward_weight":  # (weight_size, grad_output, self, ...)
        g, x, wsize = a.shape(1), a.shape(2), a.ints(0)
        if g is None or x is None or wsize is None or not (len(g) == len(x) == len(wsize) >= 3):
            return None
        return _conv_flop_count(_t(x), _t(g), _t(wsize), False), [wsize]
    return None


# Attention: name -> (layout, grad_out?, is_causal position, varlen positions)
#   layout "bhsd": [batch, heads, seq, dim]; "bshd": [batch, seq, heads, dim]
#   causal: int position of a bool, or ("mask", pos) for a custom_mask_type int
#   varlen: (cum_seq_q, cum_seq_k, max_q, max_k) positions, for the bshd kernels
_ATTN_FWD = {
    "scaled_dot_product_attention": ("bhsd", 5, None),
    "_scaled_dot_product_flash_attention": ("bhsd", 4, None),
    "_scaled_dot_product_flash_attention_for_cpu": ("bhsd", 4, None),
    "_scaled_dot_product_efficient_attention": ("bhsd", 6, None),
    "_scaled_dot_product_cudnn_attention": ("bhsd", 6, None),
    "_scaled_dot_product_attention_math": ("bhsd", 5, None),
    "_scaled_dot_product_fused_attention_overrideable": ("bhsd", 5, None),
    "_flash_attention_forward": ("bshd", 8, (3, 4, 5, 6)),
    "_efficient_attention_forward": ("bshd", ("mask", 9), (4, 5, 6, 7)),
}
_ATTN_BWD = {
    "_scaled_dot_product_flash_attention_backward": ("bhsd", 11, None),
    "_scaled_dot_product_efficient_attention_backward": ("bhsd", 11, None),
    "_scaled_dot_product_cudnn_attention_backward": ("bhsd", 14, None),
    "_scaled_dot_product_flash_attention_for_cpu_backward": ("bhsd", 7, None),
    "_scaled_dot_product_fused_attention_overrideable_backward": ("bhsd", 12, None),
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


def _attention(op, a: _Args):
    """(flops, [output shapes]) for the attention ops, or None."""
    backward = op in _ATTN_BWD
    layout, _causal, varlen = (_ATTN_BWD if backward else _ATTN_FWD)[op]
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
    if not all(len(s) == 4 for s in qkv) or (backward and len(g) != 4):
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
    op = _base(name)
    spec = _ATTN_FWD.get(op) or _ATTN_BWD.get(op)
    if spec is None:
        return None
    a = _Args(input_dims, input_types, concrete_inputs)
    pos = spec[1]
    if isinstance(pos, tuple):  # custom_mask_type: 0 none, 1 top-left causal, 2 bottom-right causal
        m = a.int(pos[1])
        return None if m is None else m != 0
    return a.bool(pos)


def _estimate(name, input_dims, input_types, concrete_inputs):
    """(op, args, flops or None, output shapes or None)."""
    op = _base(name)
    a = _Args(input_dims, input_types, concrete_inputs)
    if op is None or a.dims is None:
        return op, a, None, None
    res = None
    if op in _CONV:
        r = _conv(op, a)
        res = None if r is None else (r[0], None if r[1] is None else [r[1]])
    elif op in ("convolution_backward", "cudnn_convolution_backward", "cudnn_convolution_backward_input",
                "cudnn_convolution_backward_weight"):
        res = _conv_backward(op, a)
    elif op in _ATTN_FWD or op in _ATTN_BWD:
        res = _attention(op, a)
    else:
        r = _gemm(op, a)
        res = None if r is None else (r[0], [r[1]])
    if res is None:
        return op, a, None, None
    return op, a, res[0], res[1]


def op_flops(name, input_dims, input_types=None, concrete_inputs=None, *, causal: bool = False) -> int | None:
    """FLOPs of one op call by torch.utils.flop_counter's formulas; None if unknown.

    Covered: mm, addmm, _addmm_activation, _scaled_mm, bmm, baddbmm, matmul (all
    broadcasting / vector cases), linear ([out, in] weight, any leading dims), mv,
    addmv, dot, vdot; the convolution family (convolution, _convolution,
    conv1d/2d/3d, conv_transpose1d/2d/3d, cudnn/miopen/mkldnn/slow convolutions,
    with stride/padding/dilation/groups/transposed read from Concrete Inputs);
    convolution_backward per output_mask (grad_input + grad_weight; grad_bias is
    free); scaled-dot-product attention forward and backward in all its kernels.
    ``causal=True`` halves attention ops whose args say causal (see module doc).
    """
    try:
        op, a, flops, _ = _estimate(name, input_dims, input_types, concrete_inputs)
        if flops is None:
            return None
        if causal and sdpa_is_causal(name, a.dims, a.types, a.concrete):
            flops //= 2
        return int(flops)
    except Exception:  # never let a malformed trace break a query
        return None


# --------------------------------------------------------------------------- bytes

# Ops that only reinterpret or allocate memory: no DRAM traffic of their own (a
# copy, when reshape/contiguous/flatten make one, is a child aten::clone/copy_).
_ZERO_TRAFFIC = frozenset({
    "view", "_unsafe_view", "view_as", "reshape", "_reshape_alias", "as_strided", "transpose", "t",
    "permute", "expand", "expand_as", "squeeze", "unsqueeze", "slice", "select", "narrow", "detach",
    "alias", "unfold", "split", "split_with_sizes", "chunk", "unbind", "flatten", "unflatten",
    "diagonal", "lift_fresh", "contiguous", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "resize_", "set_", "record_stream", "result_type", "_local_scalar_dense",
    "item", "resolve_conj", "resolve_neg", "to", "numpy_T", "mT", "mH", "adjoint",
})
# Ops that write their output without reading their tensor inputs' data.
_WRITE_ONLY = frozenset({
    "fill_", "zero_", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "normal_", "uniform_", "random_", "exponential_",
})


def _tensor_inputs(a: _Args):
    """[(numel, element bytes or None)] of every defined tensor input (TensorList elements too)."""
    out = []
    for i in range(a.n()):
        t = a.type(i)
        d = a.dims[i]
        if t == "TensorList" and isinstance(d, list):
            for sub in d:
                s = _shape(sub)
                if s is not None:
                    out.append((math.prod(s), None))
            continue
        if not a.is_tensor(i):
            continue
        s = _shape(d)
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
        op, a, flops, outs = _estimate(name, input_dims, input_types, concrete_inputs)
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
        if op in _ZERO_TRAFFIC:
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
        if op in _WRITE_ONLY:
            shapes = [max((i for i in inputs if len(i) == 3), key=lambda i: i[0])[2]] if inputs else None
            return sum(math.prod(s) for s in shapes) * out_size if shapes else None
        if flops is None and (op in _CONV or op in _ATTN_FWD or op in _ATTN_BWD or op in (
                "mm", "addmm", "_addmm_activation", "_scaled_mm", "bmm", "baddbmm", "matmul", "linear",
                "mv", "addmv", "dot", "vdot") or op.startswith("convolution_backward")
                or op.startswith("cudnn_convolution_backward")):
            return None  # a known op whose shapes do not fit: no guessing
        if outs is None and flops is not None:
            return None  # e.g. a transposed conv without output_padding recorded
        if outs is None:
            shapes = [i[2] for i in inputs if len(i) == 3]
            if not shapes:
                return None
            b = _broadcast(*shapes)
            outs = [b if b is not None else max(shapes, key=math.prod)]
        total += sum(math.prod(s) for s in outs) * out_size
        return int(total)
    except Exception:
        return None


# --------------------------------------------------------------------------- dtype

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
        a = _Args(input_dims, input_types, None)
        if a.dims is None or a.types is None:
            return None
        best = None  # (rank, numel, -position, type)
        for i in range(a.n()):
            if not a.is_tensor(i):
                continue
            s = _shape(a.dims[i])
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


# --------------------------------------------------------------------------- DuckDB

def estimate_table(con, source_sql: str, table: str = "op_estimates") -> int:
    """Materialise estimates for the DISTINCT op signatures of ``source_sql``; no UDF needed.

    ``source_sql`` is a query (structure, not user values) returning columns
    ``name, input_dims, input_types, concrete_inputs`` (VARCHAR or JSON).  Creates
    (or replaces) ``table`` with those four columns as VARCHAR plus ``flops``
    BIGINT, ``bytes`` BIGINT, ``dtype`` VARCHAR, and returns its row count.  Join it
    back with ``IS NOT DISTINCT FROM`` on the four keys cast to VARCHAR.  Python runs
    once per distinct signature (thousands, not per event); the results go back
    in one statement as one bound JSON parameter.
    """
    rows = con.execute(
        f"SELECT DISTINCT CAST(name AS VARCHAR), CAST(input_dims AS VARCHAR), CAST(input_types AS VARCHAR),"
        f" CAST(concrete_inputs AS VARCHAR) FROM ({source_sql}) AS src"
    ).fetchall()
    data = [[n, d, t, c, op_flops(n, d, t, c), op_bytes(n, d, t, c), op_dtype(d, t)] for n, d, t, c in rows]
    con.execute(
        f"CREATE OR REPLACE TABLE {table} (name VARCHAR, input_dims VARCHAR, input_types VARCHAR,"
        f" concrete_inputs VARCHAR, flops BIGINT, bytes BIGINT, dtype VARCHAR)"
    )
    if data:
        con.execute(
            f"INSERT INTO {table} SELECT r->>0, r->>1, r->>2, r->>3, CAST(r->>4 AS BIGINT),"
            f" CAST(r->>5 AS BIGINT), r->>6 FROM (SELECT unnest(CAST(CAST(? AS JSON) AS JSON[])) AS r)",
            [json.dumps(data)],
        )
    return len(data)


def register(con) -> None:
    """Register the estimators as DuckDB scalar UDFs on connection ``con``.

    duckprof_flops(name, dims, types, concrete VARCHAR) -> BIGINT
    duckprof_bytes(name, dims, types, concrete VARCHAR) -> BIGINT
    duckprof_dtype(dims, types VARCHAR) -> VARCHAR

    Native (row-at-a-time) UDFs: they are meant for the DISTINCT op signatures
    of a load, not per event.  null_handling='special' so SQL NULLs (ops
    recorded without shapes) reach Python as None; the functions then return
    NULL themselves.  Deterministic: side_effects=False.  DuckDB's
    create_function requires numpy (even for native UDFs); without it this raises
    RuntimeError: use ``estimate_table`` then.
    """
    try:
        import numpy  # noqa: F401  (DuckDB's create_function imports it, even for native UDFs)
    except ImportError:
        raise RuntimeError(
            "duckprof.estimators.register() needs numpy: DuckDB's Python UDFs require it even in "
            "'native' mode. Install numpy, or use estimate_table(), which needs no UDF."
        ) from None
    from duckdb import sqltypes as _t  # duckdb >= 1.4; older: duckdb.typing

    varchar, bigint = _t.VARCHAR, _t.BIGINT
    kw = dict(type="native", null_handling="special", side_effects=False)
    con.create_function("duckprof_flops", lambda n, d, t, c: op_flops(n, d, t, c),
                        [varchar] * 4, bigint, **kw)
    con.create_function("duckprof_bytes", lambda n, d, t, c: op_bytes(n, d, t, c),
                        [varchar] * 4, bigint, **kw)
    con.create_function("duckprof_dtype", lambda d, t: op_dtype(d, t), [varchar] * 2, varchar, **kw)
