"""What any DuckDB-based load of a trace costs at least, per trace, against
`json.load` of the same file: where 2x faster than json.load is reachable.

    python benchmarks/bench_floor.py --corpus --shapes stack:40MB,serving:34MB,mi300x_resnet_act_checkpoint:40MB

Each figure is the CPU seconds (user + sys of every thread) of a fresh
process, medians of --repeat rounds, every measure of a trace interleaved in
each round, after one uncounted round:

- json.load: `json.load` of the file as the user has it (a .json.gz through
  gzip.open), in process (imports done before the clock).
- connect: `duckdb.connect()` alone, the first of the process (DuckDB
  registers its functions and extensions per database instance).
- read_json: connect, then one `CREATE TABLE AS SELECT ... FROM
  read_json(...)` of the trace's events, already cut out of the file into a
  JSON array (duckprof's chunk; the cut is not timed), with the columns
  duckprof reads (bench_load's duckdb-raw without its split): DuckDB's own
  parse of the events, nothing else.
- read_json_auto: connect, then `CREATE TABLE AS SELECT * FROM
  read_json_auto(FILE)` of the file as it is (what a DuckDB user would try
  first: one row holding the whole trace), or why it fails.
- duckprof: `duckprof.connect()`, load, `select count(*) from events`, close
  (bench_vs_json.py's in-process figure).
- process floor: `python -c "import duckdb; <read_json as above>"` against
  `python -c "import json, gzip; json.load(...)"`: the interpreter, DuckDB's
  import and its parse, against the interpreter and json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
from common import add_trace_args, run_measured, trace_paths  # noqa: E402

COLUMNS = ("{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', "
           "dur: 'DOUBLE', id: 'VARCHAR', args: 'JSON'}")
READ = ("CREATE TABLE t AS SELECT * FROM read_json($f, format = 'array', maximum_object_size = 33554432, "
        f"columns = {COLUMNS})")

CHILD = r"""
import sys, time, json, gzip
import duckdb
what, path, chunk = sys.argv[1], sys.argv[2], sys.argv[3]
READ = %r
out = None
c0 = time.process_time()
if what == "json":
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        json.load(f)
elif what == "connect":
    duckdb.connect()
elif what == "read_json":
    con = duckdb.connect()
    con.execute(READ, {"f": [chunk]})
elif what == "read_json_auto":
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT * FROM read_json_auto($f, maximum_object_size = 2000000000)", {"f": path})
    except duckdb.Error as e:
        out = str(e).splitlines()[0][:120]
elif what == "duckprof":
    import duckprof
    c0 = time.process_time()
    s = duckprof.connect()
    s.load([path])
    s.sql("select count(*) from events").fetchall()
    s.close()
print("RESULT", json.dumps([time.process_time() - c0, out]))
""" % READ

PROCESS_JSON = ("import json, gzip, sys; p = sys.argv[1]; "
                "json.load(gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb'))")
PROCESS_READ = "import duckdb, sys; duckdb.connect().execute(%r, {'f': [sys.argv[1]]})" % READ


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_trace_args(ap)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args(argv)
    from duckprof.split import split_trace
    py = sys.executable
    paths = trace_paths(a)
    tmp = tempfile.mkdtemp(prefix="duckprof-floor-")
    chunks = {}
    for p in paths:  # the events as one JSON array, cut once, untimed
        d = os.path.join(tmp, str(len(chunks)))
        os.makedirs(d)
        chunks[p] = split_trace(p, d, chunks=1).chunks[0]
    inproc = ["json", "connect", "read_json", "read_json_auto", "duckprof"]
    jobs = []
    for p in paths:
        for w in inproc:
            jobs.append(((p, w), [py, "-c", CHILD, w, p, chunks[p]]))
        jobs.append(((p, "process json"), [py, "-c", PROCESS_JSON, p]))
        jobs.append(((p, "process read_json"), [py, "-c", PROCESS_READ, chunks[p]]))
    for _, cmd in jobs:
        run_measured(cmd)
    got = {k: [] for k, _ in jobs}
    notes = {}
    load0, t0 = open("/proc/loadavg").read().split()[0], time.strftime("%H:%M", time.gmtime())
    for _ in range(a.repeat):
        for k, cmd in jobs:
            cpu, _, res = run_measured(cmd)
            got[k].append(res[0] if res else cpu)
            if res and res[1]:
                notes[k] = res[1]
    load1 = open("/proc/loadavg").read().split()[0]
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{t0}-{time.strftime('%H:%M', time.gmtime())} UTC, load average {load0}-{load1}; "
          f"CPU ms, median of {a.repeat} fresh processes")
    head = ["trace", "MB", "json.load", "connect", "read_json", "read_json_auto", "duckprof",
            "json.load / (read_json)", "json.load / duckprof", "process: json", "process: read_json",
            "json / read_json (process)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    out = []
    from bench_load_phases import json_bytes
    for p in paths:
        med = {w: 1e3 * statistics.median(got[(p, w)]) for w in inproc + ["process json", "process read_json"]}
        auto = notes.get((p, "read_json_auto"))
        row = [os.path.basename(p), f"{json_bytes(p) / 1e6:.3g}", f"{med['json']:.1f}", f"{med['connect']:.1f}",
               f"{med['read_json']:.1f}", f"fails ({auto})" if auto else f"{med['read_json_auto']:.1f}",
               f"{med['duckprof']:.1f}", f"{med['json'] / med['read_json']:.2f}",
               f"{med['json'] / med['duckprof']:.2f}", f"{med['process json']:.0f}",
               f"{med['process read_json']:.0f}", f"{med['process json'] / med['process read_json']:.2f}"]
        print("| " + " | ".join(row) + " |")
        out.append({"trace": os.path.basename(p), "cpu_ms": med, "read_json_auto_error": auto,
                    "runs": {w: got[(p, w)] for w in inproc + ["process json", "process read_json"]}})
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
