"""Kineto's JSON layout as the generator writes it: event categories,
timestamps as microsecond text, the device description, and one %-template
per kind of event (operator, runtime call, kernel, memcpy/memset) whose slots
are filled per event, plus the file header up to traceEvents."""

from __future__ import annotations

# ---------------------------------------------------------------------------
# Static description of the machine
# ---------------------------------------------------------------------------

A100_PROPS = (
    '    {{\n'
    '      "id": {id}, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744,\n'
    '      "computeMajor": 8, "computeMinor": 0,\n'
    '      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,\n'
    '      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,\n'
    '      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,\n'
    '      "numSms": 108, "sharedMemPerBlockOptin": 166912\n'
    '    }}'
)
NUM_SMS = 108
COMPUTE_STREAM = 7
COMM_STREAM = 20
BASE_TIME_NS = 1735689600000000000  # 2025-01-01T00:00:00Z

# Event categories, in the order used by the counters.
CATS = (
    "cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
    "kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "ac2g",
    "cpu_instant_event", "Trace", "",
)
(C_OP, C_UA, C_PY, C_RT, C_DRV, C_KERN, C_CPY, C_SET, C_GUA, C_FLOW, C_INST,
 C_TRACE, C_NONE) = range(len(CATS))

_FRAC = tuple(".%03d" % i for i in range(1000))


def us(ns):
    """Integer nanoseconds -> Kineto microsecond text with 3 decimals."""
    q, r = divmod(ns, 1000)
    return str(q) + _FRAC[r]


def esc(s):
    return s.replace("%", "%%")


def num(x):
    s = "%.6f" % x
    s = s.rstrip("0").rstrip(".")
    return s or "0"


# (api name, category index, cbid)
API_LAUNCH = ("cudaLaunchKernel", C_RT, 211)
API_LAUNCH_EXC = ("cudaLaunchKernelExC", C_RT, 430)
API_CU_LAUNCH = ("cuLaunchKernel", C_DRV, 307)
API_MEMCPY = ("cudaMemcpyAsync", C_RT, 41)
API_MEMSET = ("cudaMemsetAsync", C_RT, 51)

# ---------------------------------------------------------------------------
# Templates (Kineto's own layout; '%s' slots are filled per event)
# ---------------------------------------------------------------------------

_X_HEAD = ',\n  {\n    "ph": "X", "cat": "%s", "name": "%s", "pid": %s, "tid": %s,\n    "ts": '
_FLOW_S = ',\n  {\n    "ph": "s", "id": %%d, "pid": %s, "tid": %s, "ts": %%s,\n    "cat": "ac2g", "name": "ac2g"\n  }'
_FLOW_F = ',\n  {\n    "ph": "f", "id": %%d, "pid": %s, "tid": %s, "ts": %%s,\n    "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }'


def x_head(cat, name, pid, tid):
    return esc(_X_HEAD % (cat, name, pid, tid))


def op_template(cat, name, pid, tid, static_args):
    """Slots: ts, dur, External id, seq text, Ev Idx."""
    return (x_head(cat, name, pid, tid) + '%s, "dur": %s,\n    "args": {\n      "External id": %d,'
            '"Record function id": 0%s' + esc(static_args) + ', "Ev Idx": %d\n    }\n  }')


def api_template(api, pid, tid, flow=True):
    """Slots: ts, dur, External id, correlation, flow id, flow ts (without flow: ts, dur, ext, corr)."""
    name, cat, cbid = api
    args = '"External id": %d,      "cbid": ' + str(cbid) + ', "correlation": %d'
    return (x_head(CATS[cat], name, pid, tid) + '%s, "dur": %s,\n    "args": {\n      ' + args
            + '\n    }\n  }' + (_FLOW_S % (pid, tid) if flow else ""))


def kernel_template(name, device, stream, grid, block, regs, smem, extra=""):
    """Slots: ts, dur, External id, correlation, flow id, flow ts."""
    nblocks = grid[0] * grid[1] * grid[2]
    threads = block[0] * block[1] * block[2]
    bps = nblocks / NUM_SMS
    wps = bps * ((threads + 31) // 32)
    # occupancy limited by registers, threads and shared memory per SM
    lim = min(2048 // max(threads, 1), 65536 // max(regs * threads, 1),
              (167936 // smem) if smem else 32, 32)
    occ = min(100, int(100 * min(bps, lim) * ((threads + 31) // 32) / 64))
    args = ('"External id": %d,      "queued": 0, "device": ' + str(device) + ', "context": 1,      "stream": '
            + str(stream) + ', "correlation": %d,      "registers per thread": ' + str(regs)
            + ',      "shared memory": ' + str(smem) + ',      "blocks per SM": ' + num(bps)
            + ',      "warps per SM": ' + num(wps) + ',      "grid": [%d, %d, %d]' % tuple(grid)
            + ',      "block": [%d, %d, %d]' % tuple(block) + ',      "est. achieved occupancy %%": ' + str(occ)
            + extra)
    return (x_head("kernel", name, device, stream) + '%s, "dur": %s,\n    "args": {\n      ' + args
            + '\n    }\n  }' + _FLOW_F % (device, stream))


def mem_template(cat, name, device, stream, nbytes, gbps):
    args = ('"External id": %d,      "device": ' + str(device) + ', "context": 1,      "stream": ' + str(stream)
            + ', "correlation": %d,      "bytes": ' + str(nbytes) + ', "memory bandwidth (GB/s)": ' + repr(gbps))
    return (x_head(cat, name, device, stream) + '%s, "dur": %s,\n    "args": {\n      ' + args
            + '\n    }\n  }' + _FLOW_F % (device, stream))


def write_header(rng, rank, world_size, ndev):
    devs = ",\n".join(A100_PROPS.format(id=i) for i in range(ndev))
    trace_id = "%032X" % rng.getrandbits(128)
    ranks = ", ".join(str(i) for i in range(world_size))
    dist = ('{"backend": "nccl", "rank": %d, "world_size": %d, "pg_count": 1, "pg_config": [{"pg_name": "0", '
            '"pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": %d, "ranks": [%s]}], '
            '"nccl_version": "2.21.5"}' % (rank, world_size, world_size, ranks))
    return ('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n' + devs + '\n  ],\n'
            '  "cupti_version": 24,\n  "cuda_runtime_version": 12040,\n  "with_flops": 1,\n  "record_shapes": 1,\n'
            '  "cuda_driver_version": 12040,\n  "profile_memory": 1,\n  "trace_id": "' + trace_id + '",\n'
            '  "distributedInfo": ' + dist + ',\n  "traceEvents": [\n')
