"""Operator trees: the args an operator records with record_shapes, the Op
and Launch nodes of a tree, and the Builder that makes the building blocks
(GEMMs, elementwise kernels, linear, layer norm) with their kernel times."""

from __future__ import annotations

import json

from .format import (API_LAUNCH, API_MEMCPY, API_MEMSET, C_CPY, C_KERN, C_OP, C_SET, C_RT, C_UA,
                     COMPUTE_STREAM, api_template, kernel_template, mem_template, op_template)
from .kernels import K

BF16 = "c10::BFloat16"


def contiguous_strides(dims):
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]


def T(dims, dtype, strides=None):
    return ("", dtype, strides if strides is not None else contiguous_strides(dims), list(dims))


def S(value):
    return (str(value), "Scalar", [], [])


def L(values):
    return ("[" + ", ".join(str(v) for v in values) + "]", "ScalarList", [], [])


NONE = ("", "", [], [])


def _shape_args(inputs):
    if inputs is None:
        return ""
    ci = json.dumps([i[0] for i in inputs])
    ty = json.dumps([i[1] for i in inputs])
    st = json.dumps([i[2] for i in inputs])
    di = json.dumps([i[3] for i in inputs])
    return ', "Concrete Inputs": %s, "Input type": %s, "Input Strides": %s, "Input Dims": %s' % (ci, ty, st, di)


class Op:
    """A CPU operator node: template, self time, children, device launches."""

    __slots__ = ("tpl", "pre", "post", "children", "launches", "seq", "mem", "cat")

    def __init__(self, tpl, cat, pre, post, children, launches, seq, mem):
        self.tpl, self.cat, self.pre, self.post = tpl, cat, pre, post
        self.children, self.launches, self.seq, self.mem = children, launches, seq, mem


class Launch:
    """One launch call and (optionally) the device activity it enqueues."""

    __slots__ = ("rt", "rt_cat", "api_ns", "dev", "dev_cat", "dev_ns", "stream", "sync")

    def __init__(self, rt, rt_cat, api_ns, dev, dev_cat, dev_ns, stream, sync=False):
        self.rt, self.rt_cat, self.api_ns = rt, rt_cat, api_ns
        self.dev, self.dev_cat, self.dev_ns, self.stream = dev, dev_cat, dev_ns, stream
        self.sync = sync  # True: a blocking stream synchronize (no device activity)


# ---------------------------------------------------------------------------
# Building blocks of the model's Op trees, with their kernels' durations
# ---------------------------------------------------------------------------

GEMM_FLOP_PER_NS = 170e3     # ~170 TFLOP/s achieved bf16 tensor-core GEMM
TF32_FLOP_PER_NS = 70e3
HBM_BYTES_PER_NS = 1400.0    # ~1.4 TB/s achieved


class Builder:
    def __init__(self, pid, device):
        self.pid = pid
        self.device = device
        self._kt = {}
        self._at = {}

    # --- launch helpers -----------------------------------------------------
    def api(self, api, tid):
        key = (api, tid)
        t = self._at.get(key)
        if t is None:
            t = self._at[key] = api_template(api, self.pid, tid)
        return t

    def kern(self, tid, kname, dur_ns, grid, block, regs, smem, stream=COMPUTE_STREAM, api=API_LAUNCH,
             api_ns=4500, extra=""):
        key = (kname, stream, tuple(grid), tuple(block), regs, smem, extra)
        t = self._kt.get(key)
        if t is None:
            t = self._kt[key] = kernel_template(K[kname] if kname in K else kname, self.device, stream,
                                                 grid, block, regs, smem, extra)
        return Launch(self.api(api, tid), api[1], api_ns, t, C_KERN, max(1200, int(dur_ns)), stream)

    def memcpy(self, tid, kind, nbytes, stream=COMPUTE_STREAM):
        name = {"HtoD": "Memcpy HtoD (Pinned -> Device)", "DtoH": "Memcpy DtoH (Device -> Pageable)",
                "DtoD": "Memcpy DtoD (Device -> Device)"}[kind]
        bw = {"HtoD": 22.0, "DtoH": 0.9, "DtoD": 1200.0}[kind]  # GB/s == bytes/ns
        dur = max(1100, int(nbytes / bw) + 900)
        gbps = nbytes / dur
        tpl = mem_template("gpu_memcpy", name, self.device, stream, nbytes, gbps)
        return Launch(self.api(API_MEMCPY, tid), C_RT, 9000 if kind != "DtoD" else 5000, tpl, C_CPY, dur, stream)

    def memset(self, tid, nbytes, stream=COMPUTE_STREAM):
        dur = max(1000, int(nbytes / 1300.0) + 800)
        tpl = mem_template("gpu_memset", "Memset (Device)", self.device, stream, nbytes, nbytes / dur)
        return Launch(self.api(API_MEMSET, tid), C_RT, 5500, tpl, C_SET, dur, stream)

    # --- op helper ------------------------------------------------------------
    def op(self, tid, name, inputs=None, children=(), launches=(), pre=3000, post=2000, seq=False, mem=0,
           cat="cpu_op", extra_args=""):
        tpl = op_template(cat, name, self.pid, tid, extra_args + _shape_args(inputs))
        return Op(tpl, C_OP if cat == "cpu_op" else C_UA, pre, post, tuple(children), tuple(launches), seq, mem)

    # --- building blocks ------------------------------------------------------
    def view(self, tid, name, dims, dtype, args=()):
        return self.op(tid, name, [T(dims, dtype)] + list(args), pre=1500, post=800)

    def gemm(self, tid, m, k, n, fwd_name, bwd=False, splitk=False, dtype_half=False):
        """Launches of one GEMM (m x k) @ (k x n)."""
        flops = 2.0 * m * k * n
        dur = flops / GEMM_FLOP_PER_NS + 3500
        tiles = max(1, ((m + 127) // 128) * ((n + 127) // 128))
        grid = [((n + 127) // 128), ((m + 127) // 128), 1] if not splitk else [max(1, (n + 63) // 64), 1, 8]
        block = [256, 1, 1] if tiles > 1 else [128, 1, 1]
        ls = [self.kern(tid, fwd_name, dur, grid, block, 232 if "128x128" in K.get(fwd_name, fwd_name) else 168,
                        73728 if not splitk else 49152)]
        if splitk:
            sk = "splitk_half" if dtype_half else "splitk_bf16"
            ls.append(self.kern(tid, sk, 1800 + m * n * 8 / HBM_BYTES_PER_NS, [max(1, (m * n + 255) // 256), 1, 1],
                                [256, 1, 1], 30, 0))
        return ls

    def ew(self, tid, kname, numel, nbytes_per_elem, grid_div=512, regs=24):
        dur = numel * nbytes_per_elem / HBM_BYTES_PER_NS + 1800
        blocks = max(1, min(numel // grid_div, 2 ** 20))
        return self.kern(tid, kname, dur, [blocks, 1, 1], [128, 1, 1], regs, 0)

    def linear(self, tid, n, k, m, dims_in, dtype=BF16, kname="gemm_big", splitk=False):
        x = T(dims_in, dtype)
        w = T([m, k], dtype)
        b = T([m], dtype)
        t_op = self.op(tid, "aten::t", [w], children=[
            self.op(tid, "aten::transpose", [w, S(0), S(1)], children=[
                self.op(tid, "aten::as_strided", [w, L([k, m]), L([1, k]), NONE], pre=1200, post=700)],
                pre=1500, post=900)], pre=1800, post=900)
        addmm = self.op(tid, "aten::addmm", [b, T([n, k], dtype), T([k, m], dtype, [1, k]), S(1), S(1)],
                        launches=self.gemm(tid, n, k, m, kname, splitk=splitk, dtype_half=(dtype == "c10::Half")),
                        pre=9000, post=3000, mem=n * m * 2)
        kids = [t_op]
        if len(dims_in) > 2:
            kids.append(self.view(tid, "aten::view", dims_in, dtype, [L([n, k])]))
        kids.append(addmm)
        if len(dims_in) > 2:
            kids.append(self.view(tid, "aten::view", [n, m], dtype, [L(dims_in[:-1] + [m])]))
        return self.op(tid, "aten::linear", [x, w, b], children=kids, pre=4000, post=1500, seq=True)

    def layer_norm(self, tid, dims, d):
        n = 1
        for x in dims[:-1]:
            n *= x
        inner = self.op(tid, "aten::native_layer_norm", [T(dims, BF16), L([d]), T([d], BF16), T([d], BF16), S("1e-06")],
                        launches=[self.ew(tid, "ln", n * d, 4, grid_div=d, regs=40)], pre=6000, post=2500,
                        mem=n * d * 2)
        return self.op(tid, "aten::layer_norm", [T(dims, BF16), L([d]), T([d], BF16), T([d], BF16), S("1e-06"),
                                                 S("True")], children=[inner], pre=3500, post=1200, seq=True)
