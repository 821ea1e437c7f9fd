"""How long `duckprof load --db` holds the database's write lock, against the
whole load (readers are refused, or wait with --wait, only while it holds
it); and what opening a database costs a command (the checks of dbfile.py
that keep a file's SQL from running, and the TEMP views).

    python benchmarks/bench_locks.py                      # the 100 MB synthetic trace, 3 loads
    python benchmarks/bench_locks.py --size 1GB --repeat 1

The load runs in a fresh process (the CLI) with DUCKPROF_PHASE_FILE; this
script polls that file every 5 ms and stamps each phase as it appears, so a
phase's time is good to about 5 ms. "lock held" is from the phase "locking"
(the write lock is asked for) to the end of the process; "before the lock"
is reading, splitting, parsing, validating and nesting. Each load goes into a
database holding one small run, copied fresh for every repeat.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import REPO, synthetic_trace

CLI = [sys.executable, "-c", "import sys; from duckprof.cli import main; sys.argv[0] = 'duckprof'; main()"]
SMALL = os.path.join(REPO, "fixtures", "handmade", "nesting3.json")


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = REPO + os.pathsep + e.get("PYTHONPATH", "")
    e.update(extra)
    return e


def timed_load(trace: str, db: str, phase_file: str) -> dict:
    """Seconds from the start of the process to each phase, and to its end."""
    t0 = time.monotonic()
    p = subprocess.Popen([*CLI, "load", trace, "--db", db, "-q", "-r", "big"],
                         env=env(DUCKPROF_PHASE_FILE=phase_file), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: dict[str, float] = {}
    while p.poll() is None:
        if os.path.exists(phase_file):
            with open(phase_file) as f:
                for name in f.read().splitlines():
                    seen.setdefault(name, time.monotonic() - t0)
        time.sleep(0.005)
    out, err = p.communicate()
    if p.returncode:
        raise SystemExit(f"load failed: {err.decode()}")
    seen["end"] = time.monotonic() - t0
    return seen


def open_cost(db: str, repeat: int) -> tuple[float, float, float]:
    """(fresh `duckprof runs --db` process, first read-only connect in a
    process, later ones): medians in seconds."""
    procs = []
    for _ in range(repeat):
        t = time.monotonic()
        subprocess.run([*CLI, "runs", "--db", db], env=env(), capture_output=True, check=True)
        procs.append(time.monotonic() - t)
    code = ("import time, sys, duckprof; ts = []\n"
            "for _ in range(6):\n"
            "    t = time.perf_counter(); duckprof.connect(sys.argv[1], read_only=True).close()\n"
            "    ts.append(time.perf_counter() - t)\n"
            "print(ts[0], sorted(ts[1:])[2])")
    first, later = [], []
    for _ in range(repeat):
        r = subprocess.run([sys.executable, "-c", code, db], env=env(), capture_output=True, text=True, check=True)
        a, b = map(float, r.stdout.split())
        first.append(a)
        later.append(b)
    return statistics.median(procs), statistics.median(first), statistics.median(later)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    trace = synthetic_trace(args.size)
    work = tempfile.mkdtemp(prefix="duckprof-bench-locks-")
    try:
        base = os.path.join(work, "base.duckdb")
        subprocess.run([*CLI, "load", SMALL, "--db", base, "-q", "-r", "base"], env=env(), check=True)
        runs = []
        for k in range(args.repeat):
            db = os.path.join(work, f"runs{k}.duckdb")
            shutil.copy(base, db)
            runs.append(timed_load(trace, db, os.path.join(work, f"phase{k}.txt")))
        total = statistics.median(r["end"] for r in runs)
        held = statistics.median(r["end"] - r["locking"] for r in runs)
        insert = statistics.median(r.get("committed", r["end"]) - r["inserting"] for r in runs)
        print(f"load of {args.size} into a database file, median of {args.repeat}:")
        print(f"  whole load (process)   {total:7.2f} s")
        print(f"  before the lock        {total - held:7.2f} s   (readers run meanwhile)")
        print(f"  lock held              {held:7.2f} s   ({100 * held / total:.0f}% of the load; insert+commit "
              f"{insert:.2f} s)")
        proc, first, later = open_cost(os.path.join(work, "runs0.duckdb"), args.repeat)
        print("opening that database:")
        print(f"  `duckprof runs --db`   {proc:7.2f} s   (fresh process)")
        print(f"  connect(read_only)     {first:7.3f} s first in a process, {later:.3f} s after")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
