"""FLOPs and output shapes of the convolutions: the aten entry points
(convolution, _convolution, conv1d/2d/3d, conv_transpose1d/2d/3d, the cudnn /
miopen / mkldnn / slow kernels) and their backward (convolution_backward and
the legacy cudnn_convolution_backward*), with stride / padding / dilation /
groups / transposed read from Concrete Inputs."""
from __future__ import annotations

import math

from .args import Args

# Convolution entry points: positions of (input, weight, bias, stride, padding,
# dilation, transposed, output_padding, groups) in each op's schema.  An int is
# an argument position; a bool/list is a fixed value; None = absent (defaults).
CONV = {
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
# the functional entry points that take an unbatched input ([C, L], [C, H, W], ...) and
# add the batch dim of 1 before calling aten::convolution
UNBATCHED_OK = frozenset({"conv1d", "conv2d", "conv3d", "_convolution_mode", "conv_transpose1d", "conv_transpose2d",
                          "conv_transpose3d"})
# convolution_backward and the legacy cudnn backward ops (conv_backward's names)
CONV_BACKWARD = frozenset({"convolution_backward", "cudnn_convolution_backward", "cudnn_convolution_backward_input",
                           "cudnn_convolution_backward_weight"})


def _conv_flop_count(x, w, out, transposed):
    """torch.utils.flop_counter.conv_flop_count."""
    conv_shape = (x if transposed else out)[2:]
    return 2 * math.prod(conv_shape) * math.prod(w[2:]) * x[0] * w[0] * w[1]


def _spatial(a: Args, pos, nsp, default):
    """A per-spatial-dim int list at position ``pos`` (broadcasting a single value)."""
    if pos is None:
        return [default] * nsp
    v = a.ints(pos)
    if v is None:
        return None
    if len(v) == 1 and nsp > 1:
        v = v * nsp
    return v if len(v) == nsp else None


def conv(op, a: Args):
    """(flops, out_shape or None) for the convolution entry points, or None."""
    spec = CONV[op]
    bias_p, stride_p, pad_p, dil_p, tr_p, outpad_p, groups_p = spec
    x, w = a.shape(0), a.shape(1)
    unbatched = op in UNBATCHED_OK and x is not None and w is not None and len(x) == len(w) - 1 >= 2
    if unbatched:
        x = [1] + x
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
    if unbatched and out is not None:
        out = out[1:]
    return flops, out


def _t(s):
    return [s[1], s[0]] + list(s[2:])


def conv_backward(op, a: Args):
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
