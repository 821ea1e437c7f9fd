"""Shared by the benchmarks: where the synthetic traces live and which Python
runs the reference tools.

DUCKPROF_BENCH_DIR: directory for the generated synthetic traces (default: a
duckprof-bench directory in the system temp dir); they are generated once
(duckprof.synth, seed 0) and reused.
DUCKPROF_REFERENCE_PYTHON: an interpreter with the reference tools installed
(HolisticTraceAnalysis, torch), when this one does not have them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

SIZES = {"100MB": 100_000_000, "1GB": 1_000_000_000}
DATA_DIR = os.environ.get("DUCKPROF_BENCH_DIR", os.path.join(tempfile.gettempdir(), "duckprof-bench"))


def synthetic_trace(size: str, gz: bool = False, data_dir: str = DATA_DIR) -> str:
    """Path of the synthetic trace of `size` ('100MB' or '1GB'), generated if missing."""
    from duckprof.synth import generate

    size = size.upper()
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, f"synth_{size.lower()}.json" + (".gz" if gz else ""))
    if not os.path.exists(path):
        print(f"generating {path} ...", file=sys.stderr)
        generate(path, target_bytes=SIZES[size], seed=0)
    return path


def parse_size(size: str) -> int:
    """'1MB' -> 1_000_000, '1GB' -> 1_000_000_000 (decimal units, like MB/s)."""
    size = size.strip().upper()
    for unit, mult in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size.endswith(unit):
            return int(float(size[:-len(unit)]) * mult)
    return int(size)


def synthetic_ranks(spec: str, gz: bool = False, data_dir: str = DATA_DIR) -> str:
    """Directory of the synthetic rank traces of one job, spec 'NxSIZE' (e.g.
    '200x1MB': 200 ranks of ~1 MB each), generated if missing."""
    from duckprof.synth import generate

    n, size = spec.lower().split("x")
    d = os.path.join(data_dir, f"ranks_{spec.lower()}" + ("_gz" if gz else ""))
    if not os.path.isdir(d) or len(os.listdir(d)) != int(n):
        print(f"generating {d} ...", file=sys.stderr)
        os.makedirs(d, exist_ok=True)
        for r in range(int(n)):
            generate(os.path.join(d, f"rank{r}.json" + (".gz" if gz else "")), target_bytes=parse_size(size),
                     seed=r, rank=r, world_size=int(n))
    return d


def rank_blocks(size_bytes: int) -> int:
    """The transformer blocks per step duckprof.synth.generate picks for a
    trace of this size (its default): 1 for a 1 MB rank, 12 from ~30 MB."""
    from duckprof.synth import approx_events_for_bytes, default_blocks

    return default_blocks(approx_events_for_bytes(size_bytes))


def synthetic_job_trace(spec: str, data_dir: str = DATA_DIR) -> str:
    """Path of ONE trace holding as many bytes as the rank job `spec`
    ('NxSIZE', synthetic_ranks) with the same events per event: rank 0 of a
    world of N (the same "Process Group Ranks" args, 5.3 KB at N = 1000)
    and the rank files' blocks per step (rank_blocks: one 1 MB rank is 1
    block a step, where a 1 GB trace would get 12), so as many collectives
    and long args per event as the ranks. Loading the job against this file
    measures the per-file cost alone; against synth_1gb.json (one GPU, 12
    blocks a step: 4x fewer long args an event, 6% fewer bytes) it also
    counts the job's heavier events. Generated once."""
    from duckprof.synth import generate

    n, size = spec.lower().split("x")
    total = int(n) * parse_size(size)
    name = f"synth_{_size_name(total)}_job{int(n)}.json"
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, name)
    if not os.path.exists(path):
        print(f"generating {path} ...", file=sys.stderr)
        generate(path + ".part", target_bytes=total, seed=0, rank=0, world_size=int(n),
                 blocks=rank_blocks(parse_size(size)))
        os.rename(path + ".part", path)
    return path


def _size_name(n: int) -> str:
    """1_000_000_000 -> '1gb', 1_600_000_000 -> '1600mb'."""
    return f"{n // 10**9}gb" if n % 10**9 == 0 else f"{n // 10**6}mb"


SHAPES = {
    # python frames around every top-level op, crossing every ProfilerStep (with_stack)
    "stack": dict(stack=6),
    # a model server's inference steps with deep stacks and fractional epoch timestamps
    "serving": dict(serving=True, epoch_ts=True),
    "epoch": dict(epoch_ts=True),
}
REPLICATE = os.path.join(os.path.dirname(REPO), "shared", "tools", "replicate_trace.py")
CORPUS = os.environ.get("DUCKPROF_CORPUS", os.path.join(os.path.dirname(REPO), "shared", "traces"))


def shaped_trace(spec: str, data_dir: str = DATA_DIR) -> str:
    """Path of a real-shaped trace of about SIZE, generated once, from a spec
    'SHAPE:SIZE': SHAPE is a synthetic shape (SHAPES: stack, serving, epoch)
    or the name of a corpus trace (e.g. mi300x_resnet_act_checkpoint), which
    ../shared/tools/replicate_trace.py grows to SIZE by repeating its steps."""
    import gzip
    import shutil

    shape, size = spec.split(":")
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, f"{shape}_{size.lower()}.json")
    if os.path.exists(path):
        return path
    print(f"generating {path} ...", file=sys.stderr)
    if shape in SHAPES:
        from duckprof.synth import generate
        generate(path, target_bytes=parse_size(size), seed=0, **SHAPES[shape])
        return path
    src = os.path.join(CORPUS, shape + ".json.gz")
    plain = os.path.join(data_dir, shape + ".src.json")
    with gzip.open(src, "rb") as f, open(plain, "wb") as out:
        shutil.copyfileobj(f, out)
    try:
        subprocess.run([sys.executable, REPLICATE, plain, path, "--target-mb", str(parse_size(size) // 10**6)],
                       check=True, capture_output=True)
    finally:
        os.remove(plain)
        if os.path.exists(path + ".meta.json"):
            os.remove(path + ".meta.json")
    return path


def joined_ranks(rank_dir: str, data_dir: str = DATA_DIR) -> str:
    """One trace file holding the events of every rank file of `rank_dir` (in
    file name order), with the first file's metadata: the same events as the
    job in one file, to tell a job's per-file costs from its events' (rank
    files carry collectives and other args than a single-GPU trace). Written
    once, a file at a time (plain .json ranks of one clock, as
    synthetic_ranks writes them)."""
    from duckprof.jsonscan import find_array_end, find_array_start

    path = os.path.join(data_dir, os.path.basename(rank_dir.rstrip("/")) + "_joined.json")
    if os.path.exists(path):
        return path
    print(f"generating {path} ...", file=sys.stderr)
    files = sorted(os.listdir(rank_dir))
    with open(path + ".part", "wb") as out:
        for k, name in enumerate(files):
            with open(os.path.join(rank_dir, name), "rb") as f:
                data = f.read()
            _bare, start, _prefix = find_array_start(name, data)
            end, _suffix = find_array_end(data, False)
            if k == 0:
                out.write(data[:start])
                rest = data[end:]
            else:
                out.write(b",")
            out.write(data[start:end].strip())
        out.write(rest)
    os.rename(path + ".part", path)
    return path


def reference_python(explicit: str | None, module: str) -> str | None:
    """The interpreter to run a reference tool with: `explicit` if given, else
    $DUCKPROF_REFERENCE_PYTHON, else this one; None if it cannot import `module`."""
    for py in (explicit, os.environ.get("DUCKPROF_REFERENCE_PYTHON"), sys.executable):
        if py and os.path.exists(py):
            ok = subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0
            return py if ok else None
    return None


def run_once(args, repo: str = REPO) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `duckprof ARGS` in a fresh process
    (the duckprof of `repo`). CPU seconds (user + system of the child) move
    less than wall time when other work shares the machine."""
    args = [str(a) for a in args]
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "duckprof", *args], capture_output=True, text=True, env=env, cwd="/")
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"duckprof {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def add_trace_args(ap):
    """The trace inputs of a per-trace benchmark: paths, --corpus, --shapes,
    --data-dir (trace_paths turns them into files)."""
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--corpus", action="store_true", help="every trace of $DUCKPROF_CORPUS (../shared/traces)")
    ap.add_argument("--shapes", default="",
                    help="SHAPE:SIZE,... real-shaped traces, generated once (shaped_trace)")
    ap.add_argument("--data-dir", default=DATA_DIR)


def trace_paths(args) -> list:
    """The files named by add_trace_args' arguments: the paths, the shaped
    traces, then every corpus trace."""
    paths = list(args.paths) + [shaped_trace(spec, args.data_dir) for spec in args.shapes.split(",") if spec]
    if args.corpus:
        paths += sorted(os.path.join(CORPUS, f) for f in os.listdir(CORPUS) if f.endswith((".json", ".json.gz")))
    return paths


def child_env(tree: str = REPO) -> dict:
    """The environment of a child Python running the duckprof of `tree`:
    its own bytecode cache per checkout (checkouts of one code would share
    .pyc files otherwise)."""
    tree = os.path.abspath(tree)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join("/tmp/duckprof-pyc", tree.strip("/").replace("/", "_"))
    env["PYTHONPATH"] = tree
    return env


def run_measured(cmd, tree: str = REPO):
    """Run cmd in `tree` (child_env): (its CPU-s from wait4, wall s, the JSON
    of its stdout's line 'RESULT ...' or None). A failing child stops the
    benchmark with the end of its stderr."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=tree, env=child_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.stdout.close()
    p.stderr.close()
    if status:
        raise SystemExit(f"{' '.join(cmd[:4])} in {tree} failed: {err.decode()[-800:]}")
    result = None
    for line in out.decode().splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
    return ru.ru_utime + ru.ru_stime, wall, result
