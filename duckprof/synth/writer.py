"""generate(): one synthetic trace file, written step by step; generate_ranks()
for the ranks of one job; the ``python -m duckprof.synth`` command line."""

from __future__ import annotations

import gzip
import json
import os
import random
import sys

from .format import (BASE_TIME_NS, C_NONE, C_TRACE, CATS, COMM_STREAM, COMPUTE_STREAM, us, write_header)
from .model import Model
from .sim import Sim, run_step

# Measured average size of one event in the emitted format (uncompressed).
BYTES_PER_EVENT = 337


class _Sink:
    """Streaming byte sink: plain file, or gzip (isal igzip when available)."""

    def __init__(self, path, compresslevel):
        path = os.fspath(path)
        self.path = path
        self.raw = open(path, "wb")
        self.bytes = 0
        if path.endswith(".gz"):
            try:
                from isal import igzip  # type: ignore
                self.f = igzip.IGzipFile(filename="", mode="wb", fileobj=self.raw,
                                         compresslevel=min(3, compresslevel), mtime=0)
            except ImportError:
                self.f = gzip.GzipFile(filename="", mode="wb", fileobj=self.raw, compresslevel=compresslevel, mtime=0)
        else:
            self.f = self.raw

    def write(self, s):
        b = s.encode("ascii")
        self.bytes += len(b)
        self.f.write(b)

    def close(self):
        if self.f is not self.raw:
            self.f.close()
        self.raw.close()


def approx_events_for_bytes(n_bytes):
    """Number of events for roughly ``n_bytes`` of uncompressed JSON."""
    return max(1, int(n_bytes) // BYTES_PER_EVENT)


def default_blocks(events):
    """Transformer blocks per step for a trace of about ``events`` events:
    about ten steps or more, so the size is hit within ~5% (1 for a 1 MB
    rank, 12 from ~30 MB)."""
    return max(1, min(12, int(events) // 2500))


def generate(out_path, events=20000, seed=0, rank=0, world_size=1, target_bytes=None, blocks=None,
             compresslevel=1, steps=None, job=None, stack=None, epoch_ts=False, serving=False):
    """Write one synthetic Kineto trace to ``out_path`` (gzip if it ends in ``.gz``).

    events        approximate number of trace events (whole steps are written,
                  so the count is rounded to a step boundary; at least 1 step)
    seed          RNG seed; identical arguments give identical bytes
    rank, world_size
                  distributed identity written to distributedInfo; the GPU
                  (pid of device events, "device" arg) is ``rank % 8``
    target_bytes  if given, overrides ``events``: write steps until the
                  uncompressed JSON is about this many bytes (within ~1 step)
    blocks        transformer blocks per step (default: chosen from the size)
    compresslevel gzip level for .gz output (isal levels 0-3, zlib 1-9)
    steps         if given, overrides ``events``/``target_bytes``: write exactly
                  this many profiler steps
    job           a job.Job when this rank is one of several written together
                  (duckprof.synth.generate_job): the ranks share one clock and
                  each NCCL kernel ends when the last rank has joined it
    stack         python frames around each top-level operator of the main
                  thread, as ``profile(with_stack=True)`` writes them
                  (``python_function`` events), and a python frame that
                  opens each ProfilerStep#N and ends inside it (so the two
                  cross); default 0, or 12 with ``serving``
    epoch_ts      timestamps in absolute microseconds since the Unix epoch
                  with three decimals (~1.7e15), and no
                  ``baseTimeNanoseconds`` (as some Kineto versions write them)
    serving       inference steps like a model server's (vLLM): forward pass
                  only, a short scheduling gap instead of data loading

    Returns a summary dict: path, events, bytes (uncompressed JSON size),
    file_bytes (size on disk), steps, categories (event count per "cat";
    events without a cat under ""), kernels/streams, time span.
    """
    if target_bytes is not None:
        events = approx_events_for_bytes(target_bytes)
    events = max(1, int(events))
    if blocks is None:
        blocks = default_blocks(events)
    rng = random.Random(int(seed) * 1000003 + int(rank) * 7919 + 17)
    r = rng.random
    device = int(rank) % 8
    pid = 2_900_000 + int(rng.random() * 90_000) + 11 * int(rank)
    main = pid
    bwd = pid + 4000 + int(r() * 5000)
    ndev = min(8, max(1, int(world_size)))
    if device >= ndev:
        ndev = device + 1

    sink = _Sink(out_path, compresslevel)
    header = write_header(rng, int(rank), int(world_size), ndev)
    out = []
    sim = Sim(rng, out, pid, main, bwd, device, int(rank), int(world_size))
    sim.job = job
    sim.serving = bool(serving)
    sim.stack = int(stack) if stack is not None else (12 if serving else 0)
    model = Model(pid, main, bwd, device, blocks, int(world_size))
    # monotonic-clock microseconds, like Kineto (~2 weeks of uptime)
    t_origin = (1_200_000_000_000 + int(r() * 80_000_000_000)) * 1000
    if job is not None:
        t_origin = job.t_origin  # the ranks of one job share one clock
    base_ns = BASE_TIME_NS
    if epoch_ts:
        t_origin += BASE_TIME_NS  # absolute: ns since the epoch, written as us
        base_ns = None
    sim.t = t_origin
    sim.free = {COMPUTE_STREAM: t_origin, COMM_STREAM: t_origin}
    trace_start = t_origin
    sim.t += 150_000 + int(r() * 100_000)      # warm-up before the first profiled step
    meta_ts = sim.t - 40_000

    sink.write(header)
    written_events = 0
    step_no = 5 + int(r() * 20)
    first_step = step_no
    n_steps = steps
    steps = 0
    first = True
    images = (192, 224, 224, 224, 256, 256, 320)
    while True:
        img = images[int(r() * len(images))]
        run_step(sim, model, img, step_no)
        if first:
            out[0] = out[0][2:]            # the first event has no leading ",\n"
            first = False
        total = sum(sim.cnt)
        n_ev = total - written_events
        chunk = "".join(out)
        out.clear()
        sink.write(chunk)
        written_events += n_ev
        steps += 1
        step_no += 1
        # running averages of one step's size decide when to stop
        step_events_est = written_events // steps
        step_bytes_est = (sink.bytes - len(header)) // steps
        if n_steps is not None:
            if steps >= n_steps:
                break
        elif target_bytes is not None:
            if sink.bytes + step_bytes_est // 2 >= target_bytes - 4000:
                break
        elif written_events + step_events_est // 2 >= events:
            break

    # trailing metadata, spans and instants (as Kineto writes them)
    t_end = max(sim.t, sim.free[COMPUTE_STREAM], sim.free[COMM_STREAM]) + 20_000
    ts = us(meta_ts)
    m = []

    def meta(name, mpid, mtid, key, val):
        m.append(',\n  {\n    "name": "%s", "ph": "M", "ts": %s, "pid": %s, "tid": %s,\n    "args": {\n      "%s": %s\n'
                 '    }\n  }' % (name, ts, mpid, mtid, key, val))

    meta("process_name", pid, 0, "name", '"python3"')
    meta("process_labels", pid, 0, "labels", '"CPU"')
    meta("process_sort_index", pid, 0, "sort_index", pid)
    meta("process_name", device, 0, "name", '"python3"')
    meta("process_labels", device, 0, "labels", '"GPU %d"' % device)
    meta("process_sort_index", device, 0, "sort_index", 16777216 + device)
    for s in (COMPUTE_STREAM, COMM_STREAM):
        meta("thread_name", device, s, "name", '"stream %d "' % s)
        meta("thread_sort_index", device, s, "sort_index", s)
    for tid in (bwd, main):
        meta("thread_name", pid, tid, "name", '"thread %d (python3)"' % tid)
        meta("thread_sort_index", pid, tid, "sort_index", tid)
    m.append(',\n  {\n    "ph": "X", "cat": "Trace", "ts": %s, "dur": %s,\n    "pid": "Spans", "tid": "PyTorch Profiler",'
             '\n    "name": "PyTorch Profiler (0)",\n    "args": {\n      "Op count": 0\n    }\n  }'
             % (us(trace_start), us(t_end - trace_start)))
    m.append(',\n  {\n    "name": "process_sort_index", "ph": "M", "ts": %s,\n    "pid": "Spans", "tid": 0,\n'
             '    "args": {\n      "sort_index": 536870912\n    }\n  }' % us(trace_start))
    m.append(',\n  {\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n    "pid": "Traces", '
             '"tid": "Trace PyTorch Profiler", "ts": %s\n  }' % us(trace_start))
    m.append(',\n  {\n    "name": "Record Window End", "ph": "i", "s": "g",\n    "pid": "", "tid": "", "ts": %s\n  }'
             % us(t_end + 5_000))
    sim.cnt[C_NONE] += len(m) - 1
    sim.cnt[C_TRACE] += 1
    written_events = sum(sim.cnt)
    trace_name = "/tmp/duckprof_synth/seed%d_rank%d.pt.trace.json" % (int(seed), int(rank))
    sink.write("".join(m) + '\n  ],\n  "traceName": "%s",\n  "displayTimeUnit": "ms"' % trace_name
               + ('' if base_ns is None else ',\n  "baseTimeNanoseconds": %d' % base_ns) + '\n}\n')
    sink.close()
    cats = {CATS[i]: c for i, c in enumerate(sim.cnt) if c}
    return {
        "path": os.fspath(out_path),
        "events": written_events,
        "bytes": sink.bytes,
        "file_bytes": os.path.getsize(out_path),
        "steps": steps,
        "first_step": first_step,
        "blocks": blocks,
        "seed": int(seed),
        "rank": int(rank),
        "world_size": int(world_size),
        "device": device,
        "pid": pid,
        "threads": [main, bwd],
        "streams": [COMPUTE_STREAM, COMM_STREAM],
        "categories": cats,
        "trace_start_us": trace_start / 1000.0,
        "trace_end_us": t_end / 1000.0,
        "base_time_ns": base_ns,
    }


def generate_ranks(out_dir, world_size=2, events=20000, seed=0, **kw):
    """Write ``rank<R>.json(.gz)`` for every rank of one job into ``out_dir``.

    Keyword ``suffix`` (default ".json") selects gzip with ".json.gz".
    Returns the list of per-rank summaries.
    """
    suffix = kw.pop("suffix", ".json")
    os.makedirs(out_dir, exist_ok=True)
    return [generate(os.path.join(os.fspath(out_dir), "rank%d%s" % (r, suffix)), events=events, seed=seed, rank=r,
                     world_size=world_size, **kw) for r in range(world_size)]


def main(argv=None):
    """``python -m duckprof.synth OUT [--events N | --target-bytes B] [--seed S]``"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m duckprof.synth",
                                 description=sys.modules[__package__].__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--target-bytes", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world-size", type=int, default=1)
    ap.add_argument("--stack", type=int, default=None, help="python frames per top-level op (with_stack)")
    ap.add_argument("--epoch-ts", action="store_true", help="absolute fractional timestamps, no baseTimeNanoseconds")
    ap.add_argument("--serving", action="store_true", help="inference steps (forward only), 12 frames deep")
    a = ap.parse_args(argv)
    s = generate(a.out, events=a.events, seed=a.seed, rank=a.rank, world_size=a.world_size,
                 target_bytes=a.target_bytes, stack=a.stack, epoch_ts=a.epoch_ts, serving=a.serving)
    print(json.dumps(s, indent=1))
