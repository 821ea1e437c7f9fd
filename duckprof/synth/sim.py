"""The simulator: runs operator trees on a clock, emits their events (and
the launches' runtime calls, kernels and flows, memory instants, Python
function scopes, annotations) as text, and plays one training step."""

from __future__ import annotations

from .format import (C_FLOW, C_INST, C_OP, C_PY, C_RT, C_UA, C_GUA, CATS, COMM_STREAM, COMPUTE_STREAM,
                     op_template, us, x_head)
from .ops import NONE, L, S, T, contiguous_strides


# python frames of with_stack traces (file(line): function), innermost last
PY_FRAMES = (
    "serve.py(212): run_engine", "vllm/engine/llm_engine.py(1388): step",
    "vllm/worker/model_runner.py(1654): execute_model", "torch/nn/modules/module.py(1751): _call_impl",
    "torch/nn/modules/module.py(1762): _wrapped_call_impl", "model.py(143): forward",
    "torch/nn/modules/linear.py(125): forward", "torch/nn/functional.py(2901): layer_norm",
    "torch/_ops.py(1158): __call__", "torch/utils/_contextlib.py(116): decorate_context",
    "vllm/attention/layer.py(244): forward", "vllm/model_executor/layers/activation.py(77): forward_cuda",
)


class Sim:
    def __init__(self, rng, out, pid, main, bwd, device, rank, world_size):
        self.rng = rng
        self.r = rng.random
        self.out = out
        self.pid, self.main, self.bwd, self.device = pid, main, bwd, device
        self.rank, self.world_size = rank, world_size
        self.cnt = [0] * len(CATS)
        self.ext = 0
        self.corr = 0
        self.evidx = 0
        self.seqno = 0
        self.pyid = 0
        self.t = 0
        self.free = {COMPUTE_STREAM: 0, COMM_STREAM: 0}
        self.first7 = None
        self.last7 = 0
        self.allocated = 1 << 30
        self.reserved = 6 << 30
        self.addr = 0x7F3A00000000 + (rank << 36)
        self.alloc_stack = []
        self._seq_for = []
        self._tpl_mem = {}
        self._tpl_py = {}
        self._tpl_gua = {}
        self._sync = {}
        self.job = None         # a job.Job when the ranks of one job are written together
        self.collective = None  # the sequence number of the NCCL kernel being launched (job mode)
        self.coll_seq = 0
        self.stack = 0          # python frames around each top-level op on the main thread (with_stack)
        self.serving = False    # inference steps: forward only (no backward, optimizer, all-reduce)
        self._depth = 0

    # --- primitive emitters ---------------------------------------------------
    def mem(self, tid, nbytes):
        key = tid
        tpl = self._tpl_mem.get(key)
        if tpl is None:
            tpl = self._tpl_mem[key] = (
                ',\n  {\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n    "pid": %d, '
                '"tid": %d,\n    "ts": %%s,\n    "args": {\n      "Total Reserved": %%d, "Total Allocated": %%d, '
                '"Bytes": %%d, "Addr": %%d, "Device Id": %d, "Device Type": 1, "Ev Idx": %%d\n    }\n  }'
                % (self.pid, tid, self.device))
        if nbytes > 0:
            addr = self.addr
            self.addr += (nbytes + 511) & ~511
            self.alloc_stack.append((nbytes, addr))
        else:
            addr = self.addr
        self.allocated += nbytes
        if self.allocated > self.reserved:
            self.reserved = (self.allocated + (2 << 20)) & ~((2 << 20) - 1)
        self.evidx += 1
        self.out.append(tpl % (us(self.t), self.reserved, self.allocated, nbytes, addr, self.evidx))
        self.cnt[C_INST] += 1

    def free_one(self, tid):
        if self.alloc_stack:
            nbytes, addr = self.alloc_stack.pop()
            saved = self.addr
            self.addr = addr
            self.mem(tid, -nbytes)
            self.addr = saved

    def launch(self, L, ext):
        r = self.r
        t0 = self.t + 400 + int(900 * r())
        d = int(L.api_ns * (0.7 + 0.6 * r()))
        if L.sync:
            # blocks until the stream drains
            w = self.free[L.stream] + 2000 + int(3000 * r()) - t0
            if w > d:
                d = w
        elif r() < 0.004:
            d += 40000 + int(160000 * r())      # rare slow launch
        self.corr += 1
        corr = self.corr
        ts = us(t0)
        out = self.out
        if L.sync:
            out.append(L.rt % (ts, us(d), ext, corr))
            self.cnt[L.rt_cat] += 1
            self.t = t0 + d
            return
        out.append(L.rt % (ts, us(d), ext, corr, corr, ts))
        self.cnt[L.rt_cat] += 1
        self.cnt[C_FLOW] += 1
        if L.dev is not None:
            s = L.stream
            issue = t0 + (d * 3) // 4
            start = issue + 2500 + int(3500 * r())
            f = self.free[s] + 900 + int(1500 * r())
            if f > start:
                start = f
            dd = int(L.dev_ns * (0.9 + 0.2 * r()))
            if dd < 900:
                dd = 900
            if self.collective is not None:
                # a collective kernel runs until the last rank has joined it
                dd += self.job.arrive(self.collective, self.rank, start) - start
                self.collective = None
            self.free[s] = start + dd
            if s == COMPUTE_STREAM:
                if self.first7 is None:
                    self.first7 = start
                self.last7 = start + dd
            self.dev_start = start
            ks = us(start)
            out.append(L.dev % (ks, us(dd), ext, corr, corr, ks))
            self.cnt[L.dev_cat] += 1
            self.cnt[C_FLOW] += 1
        self.t = t0 + d

    def op(self, o, seq=None, fwd_thread=0):
        """Emit one Op tree starting at the current time; returns the op's External id.
        With ``stack``, a top-level op of the main thread runs inside that many
        python frames, as ``profile(with_stack=True)`` records them."""
        if self.stack and self._depth == 0 and fwd_thread == 0:
            frames = [self.py_begin_at(200 + int(600 * self.r())) for _ in range(self.stack)]
            self._depth += 1
            try:
                ext = self._op(o, seq, fwd_thread)
            finally:
                self._depth -= 1
            parent = None
            parents = []
            for f in frames:
                parents.append(parent)
                parent = f[2]
            for k in range(len(frames) - 1, -1, -1):
                self.t += 150 + int(400 * self.r())
                self.py_end(frames[k], PY_FRAMES[k % len(PY_FRAMES)], parents[k])
            return ext
        self._depth += 1
        try:
            return self._op(o, seq, fwd_thread)
        finally:
            self._depth -= 1

    def _op(self, o, seq=None, fwd_thread=0):
        r = self.r
        out = self.out
        slot = len(out)
        out.append(None)
        self.ext += 1
        ext = self.ext
        self.evidx += 1
        ev = self.evidx
        start = self.t
        self.t += int(o.pre * (0.75 + 0.5 * r()))
        if o.seq:
            if seq is None:
                self.seqno += 1
                seq = self.seqno
            seqtxt = ', "Sequence number": %d, "Fwd thread id": %d' % (seq, fwd_thread)
        else:
            seqtxt = ""
        op = self._op
        for c in o.children:
            op(c, None, fwd_thread)
            self.t += 300 + int(1200 * r())
        launch = self.launch
        for Lc in o.launches:
            launch(Lc, ext)
        if o.mem:
            self.t += 200 + int(600 * r())
            self.mem(self.main if fwd_thread == 0 else self.bwd, o.mem)
        self.t += int(o.post * (0.75 + 0.5 * r()))
        out[slot] = o.tpl % (us(start), us(self.t - start), ext, seqtxt, ev)
        self.cnt[o.cat] += 1
        return ext

    def span_begin(self):
        slot = len(self.out)
        self.out.append(None)
        self.ext += 1
        self.evidx += 1
        return slot, self.t, self.ext, self.evidx

    def ua_end(self, span, name, tid, cat="user_annotation"):
        slot, start, ext, ev = span
        tpl = op_template(cat, name, self.pid, tid, "")
        self.out[slot] = tpl % (us(start), us(self.t - start), ext, "", ev)
        self.cnt[C_UA if cat == "user_annotation" else C_OP] += 1
        return ext

    def py_begin(self):
        slot = len(self.out)
        self.out.append(None)
        self.pyid += 1
        self.evidx += 1
        return slot, self.t, self.pyid, self.evidx

    def py_begin_at(self, gap_ns):
        """A python frame opened gap_ns after the current time (which moves there)."""
        self.t += gap_ns
        return self.py_begin()

    def py_end(self, span, name, parent):
        slot, start, pyid, ev = span
        key = name
        tpl = self._tpl_py.get(key)
        if tpl is None:
            tpl = self._tpl_py[key] = (x_head("python_function", name, self.pid, self.main)
                                       + '%s, "dur": %s,\n    "args": {\n      "Python parent id": %s, '
                                         '"Python id": %d, "Ev Idx": %d\n    }\n  }')
        self.out[slot] = tpl % (us(start), us(self.t - start), "null" if parent is None else parent, pyid, ev)
        self.cnt[C_PY] += 1
        return pyid

    def gpu_annotation(self, name, stream, start, end, ext):
        tpl = self._tpl_gua.get((name, stream))
        if tpl is None:
            tpl = self._tpl_gua[(name, stream)] = (
                x_head("gpu_user_annotation", name, self.device, stream)
                + '%s, "dur": %s,\n    "args": {\n      "External id": %d\n    }\n  }')
        self.out.append(tpl % (us(start), us(max(end - start, 1)), ext))
        self.cnt[C_GUA] += 1

    def sync_call(self, name, cbid, tid, wait_until, ext=None):
        """cudaStreamSynchronize / cudaDeviceSynchronize: blocks the CPU until `wait_until`."""
        key = (name, tid, ext is not None)
        tpl = self._sync.get(key)
        if tpl is None:
            args = ('"External id": %d,      "cbid": ' if ext is not None else '"cbid": ') + str(cbid) + \
                   ', "correlation": %d'
            tpl = self._sync[key] = (x_head("cuda_runtime", name, self.pid, tid)
                                     + '%s, "dur": %s,\n    "args": {\n      ' + args + '\n    }\n  }')
        t0 = self.t + 500 + int(800 * self.r())
        end = max(t0 + 1500 + int(2000 * self.r()), wait_until + 2000 + int(3000 * self.r()))
        self.corr += 1
        vals = (us(t0), us(end - t0)) + ((ext,) if ext is not None else ()) + (self.corr,)
        self.out.append(tpl % vals)
        self.cnt[C_RT] += 1
        self.t = end

    def plain_rt(self, name, cbid, tid, ext, dur):
        key = ("plain", name, tid)
        tpl = self._sync.get(key)
        if tpl is None:
            tpl = self._sync[key] = (x_head("cuda_runtime", name, self.pid, tid)
                                     + '%s, "dur": %s,\n    "args": {\n      "External id": %d,      "cbid": '
                                     + str(cbid) + ', "correlation": %d\n    }\n  }')
        t0 = self.t + 300 + int(700 * self.r())
        d = int(dur * (0.7 + 0.6 * self.r()))
        self.corr += 1
        self.out.append(tpl % (us(t0), us(d), ext, self.corr))
        self.cnt[C_RT] += 1
        self.t = t0 + d


# ---------------------------------------------------------------------------
# One training step
# ---------------------------------------------------------------------------

def run_step(sim, model, img, step_no):
    r = sim.r
    main, bwd = model.main, model.bwd
    fwd, bwd_groups, head_bwd, stem_bwd, opt, adamw, zero, n, D = model.shape(img)
    sim.first7 = None
    sim.t += 2000 + int(r() * 6000)
    if sim.stack:
        # with_stack: ProfilerStep#N starts inside the python frame that opens
        # it and outlives it (the frame "crosses" it), as in real traces
        opener = sim.py_begin()
        sim.t += 1500 + int(r() * 1000)
    step_span = sim.span_begin()
    if sim.stack:
        sim.t += 2000 + int(r() * 1000)
        sim.py_end(opener, "torch/autograd/profiler.py(754): __enter__", None)
    sim.t += 8000 + int(r() * 8000)

    # --- data loading (CPU only: leaves the GPU idle) ------------------------
    dl = sim.span_begin()
    x = r()
    if sim.serving:
        sim.t += 20_000 + int(r() * 60_000)               # the scheduler picks the next batch
    elif x < 0.12 and sim.job is None:  # a job: its late rank is the straggler
        sim.t += 8_000_000 + int(r() * 25_000_000)        # loader stall
    else:
        sim.t += 300_000 + int(r() * 2_500_000)
    sim.ua_end(dl, "scheduler.schedule" if sim.serving else "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
               main)
    sim.t += 5000 + int(r() * 10000)

    # --- host-to-device copies ----------------------------------------------
    b = model.b
    key = img
    h2d = model.h2d.get(key)
    if h2d is None:
        F32 = "float"
        ops = []
        for dims, dt, nbytes in (([8, 3, img, img], F32, 8 * 3 * img * img * 4), ([8], "long", 8 * 8)):
            ops.append(b.op(main, "aten::to", [T(dims, dt), NONE, S(4), NONE, NONE, S("True"), S("False"), NONE],
                            children=[b.op(main, "aten::_to_copy", [T(dims, dt), NONE, NONE, NONE, NONE, S("True"),
                                                                    NONE], children=[
                                b.op(main, "aten::empty_strided", [L(dims), L(contiguous_strides(dims)), S(6), NONE, NONE, NONE],
                                     pre=3000, post=1000),
                                b.op(main, "aten::copy_", [T(dims, dt), T(dims, dt), S("True")],
                                     launches=[b.memcpy(main, "HtoD", nbytes)], pre=6000, post=2000)],
                                pre=3000, post=1500, mem=nbytes)], pre=2500, post=1000))
        h2d = model.h2d[key] = ops
    for o in h2d:
        sim.op(o)
        sim.t += 1000 + int(r() * 3000)

    # --- forward on the main thread -----------------------------------------
    step_py = sim.py_begin()
    sim.t += 3000 + int(r() * 3000)
    fwd_py = sim.py_begin()
    for mod_name, ops in fwd:
        py = sim.py_begin() if mod_name else None
        sim.t += 1500 + int(r() * 2000)
        for o in ops:
            sim.op(o)
            sim.t += 1500 + int(r() * 5000)
        if py is not None:
            sim.py_end(py, mod_name, fwd_py[2])
    sim.py_end(fwd_py, "nn.Module: HybridViT_0", step_py[2])
    sim.t += 5000 + int(r() * 10000)

    if sim.serving:
        # inference: the step ends with the forward pass
        sim.t += 3000 + int(r() * 5000)
        sim.py_end(step_py, "serve.py(88): serve_step", None)
        sim.t += 3000 + int(r() * 5000)
        ext = sim.ua_end(step_span, "ProfilerStep#%d" % step_no, main)
        if sim.first7 is not None:
            sim.gpu_annotation("ProfilerStep#%d" % step_no, COMPUTE_STREAM, sim.first7 - 1, sim.last7 + 1, ext)
        return

    # --- backward on the autograd thread ------------------------------------
    bwd_py = sim.py_begin()
    sim.t += 20000 + int(r() * 15000)
    seq = sim.seqno
    nb = len(bwd_groups)

    def group(items):
        nonlocal seq
        for name, _inner, kids, _free in items:
            seq -= 1
            ev_span = sim.span_begin()
            sim.t += 2500 + int(r() * 2500)
            in_span = sim.span_begin()
            sim.t += 1500 + int(r() * 2000)
            for k in kids:
                sim.op(k, None, 1)
                sim.t += 800 + int(r() * 2500)
            if sim.alloc_stack and r() < 0.8:
                sim.free_one(bwd)
            sim.t += 1500 + int(r() * 2000)
            _end_seq(sim, in_span, name, bwd, seq)
            sim.t += 1000 + int(r() * 1500)
            _end_seq(sim, ev_span, "autograd::engine::evaluate_function: " + name, bwd, seq)
            sim.t += 1000 + int(r() * 4000)

    group(head_bwd)
    params_per_block = 12 * D * D + 13 * D
    done_blocks = 0
    pending = 0
    for gi in range(nb - 1, -1, -1):
        group(bwd_groups[gi])
        done_blocks += 1
        pending += params_per_block
        # DDP: gradient bucket ready -> all-reduce on the NCCL stream
        if done_blocks == max(1, nb // 2) or gi == 0:
            _allreduce(sim, model, pending)
            pending = 0
    group(stem_bwd)
    _allreduce(sim, model, 64 * 27 + 64 + 64 * D * 64 + D)
    # DDP finalize: the compute stream waits for the last all-reduce
    sim.free[COMPUTE_STREAM] = max(sim.free[COMPUTE_STREAM], sim.free[COMM_STREAM])
    sim.t += 10000 + int(r() * 10000)
    sim.py_end(bwd_py, "torch/_tensor.py(626): backward", step_py[2])

    # --- optimizer -----------------------------------------------------------
    sim.t += 5000 + int(r() * 10000)
    clip = sim.py_begin()
    sim.t += 3000
    for o in opt:
        sim.op(o)
        sim.t += 2000 + int(r() * 4000)
    sim.py_end(clip, "torch/nn/utils/clip_grad.py(138): clip_grad_norm_", step_py[2])
    sim.t += 3000 + int(r() * 5000)
    sim.op(adamw)
    sim.t += 3000 + int(r() * 5000)
    sim.op(zero)
    while sim.alloc_stack:
        sim.free_one(main)
    sim.t += 2000 + int(r() * 3000)

    # --- loss.item(): device-to-host copy + stream synchronize ---------------
    if r() < 0.6:
        sim.op(model.item)
    sim.t += 2000 + int(r() * 4000)
    sim.py_end(step_py, "train.py(88): train_step", None)
    if r() < 0.08:
        sim.sync_call("cudaDeviceSynchronize", 165, main,
                      max(sim.free[COMPUTE_STREAM], sim.free[COMM_STREAM]))
    sim.t += 3000 + int(r() * 5000)
    ext = sim.ua_end(step_span, "ProfilerStep#%d" % step_no, main)
    if sim.first7 is not None:
        sim.gpu_annotation("ProfilerStep#%d" % step_no, COMPUTE_STREAM, sim.first7 - 1, sim.last7 + 1, ext)


def _end_seq(sim, span, name, tid, seq):
    slot, start, ext, ev = span
    key = ("seqop", name, tid)
    tpl = sim._sync.get(key)
    if tpl is None:
        tpl = sim._sync[key] = op_template("cpu_op", name, sim.pid, tid, "")
    sim.out[slot] = tpl % (us(start), us(sim.t - start), ext,
                           ', "Sequence number": %d, "Fwd thread id": 1' % max(seq, 0), ev)
    sim.cnt[C_OP] += 1


def _allreduce(sim, model, nelems):
    """AccumulateGrad -> c10d::allreduce_ -> record_param_comms -> nccl:all_reduce -> NCCL kernel (stream 20)."""
    r = sim.r
    bwd = model.bwd
    nelems = int(nelems)
    seq = None
    if sim.job is not None:
        seq = sim.coll_seq
        sim.coll_seq += 1
    ar, rpc, kl, dur = model.comm(nelems, seq)
    acc = sim.span_begin()
    sim.t += 3000 + int(r() * 3000)
    ar_span = sim.span_begin()
    sim.t += 2000 + int(r() * 2000)
    rpc_span = sim.span_begin()
    rpc_ext = rpc_span[2]
    sim.t += 3000 + int(r() * 2000)
    nccl_span = sim.span_begin()
    sim.t += 2000
    sim.plain_rt("cudaEventRecord", 135, bwd, rpc_ext, 2500)
    sim.plain_rt("cudaStreamWaitEvent", 147, bwd, rpc_ext, 1800)
    # the NCCL stream waits for the gradients produced so far on the compute stream
    sim.free[COMM_STREAM] = max(sim.free[COMM_STREAM], sim.free[COMPUTE_STREAM])
    # rank skew: other ranks arrive later, the ring waits
    kl.dev_ns = int(dur + r() * 150_000 * (1 if sim.world_size > 1 else 0.1))
    if seq is not None:
        kl.dev_ns = int(dur)  # the wait comes from the other ranks' real arrival (Sim.launch)
        sim.t += sim.job.delay_ns(sim.rank)
        sim.collective = seq
    sim.launch(kl, rpc_ext)
    k_start = sim.dev_start
    sim.plain_rt("cudaEventRecord", 135, bwd, rpc_ext, 1500)
    sim.t += 2000 + int(r() * 2000)
    nccl_ext = sim.ua_end(nccl_span, "nccl:all_reduce", bwd)
    sim.gpu_annotation("nccl:all_reduce", COMM_STREAM, max(k_start - 50, 0), sim.free[COMM_STREAM], nccl_ext)
    sim.t += 2000 + int(r() * 2000)
    slot, start, ext, ev = rpc_span
    sim.out[slot] = rpc.tpl % (us(start), us(sim.t - start), ext, "", ev)
    sim.cnt[C_OP] += 1
    sim.t += 1500 + int(r() * 1500)
    slot, start, ext, ev = ar_span
    sim.out[slot] = ar.tpl % (us(start), us(sim.t - start), ext, "", ev)
    sim.cnt[C_OP] += 1
    sim.t += 2000 + int(r() * 2000)
    _end_seq(sim, acc, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", bwd, 0)
    sim.t += 2000 + int(r() * 3000)
