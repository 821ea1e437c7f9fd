"""Record a real with_stack trace with torch (dev venv only: torch is not a
duckprof dependency), the shape of the load benchmark in benchmarks/README.md
"with_stack traces: one nesting pass": a torch.compile'd conv net on the CPU,
three forward/backward steps under record_function labels, every profiler
option on (record_shapes, with_stack, with_flops, profile_memory,
with_modules). The first backward compiles the backward graph inside the
profile (Inductor's caches off, so every recording is the same shape): with
torch 2.13 on this machine ~150 MB, ~520,000 events, nearly all python
frames, with the crossings torch's python tracer writes where a frame opens
a label.

    /work/venv-torch/bin/python benchmarks/record_stack_trace.py OUT.json [--steps 3]
"""

import argparse
import os

os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"  # before torch is imported

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 30 * 30, 10))
    compiled = torch.compile(model)
    x = torch.randn(4, 3, 32, 32)
    compiled(x)  # compile outside the profile
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True, with_flops=True,
                 profile_memory=True, with_modules=True) as p:
        for _ in range(a.steps):
            with record_function("compiled_step"):
                compiled(x).sum().backward()
    p.export_chrome_trace(a.out)


if __name__ == "__main__":
    main()
