"""Where a load's peak RSS comes from: one `duckprof load TRACE --db DB`
(session.load_into) in this process, with a thread that reads
/proc/self/status every 5 ms and, every 50 ms, jemalloc's counters (DuckDB's
allocator: allocated and resident), glibc's mallinfo2 (Python and DuckDB's
C++ allocations) and duckdb_memory() by tag, each sample named by the load's
phase (duckprof/phase.py) and the statement the loader's connection runs.

    python benchmarks/profile_load_rss.py TRACE --db /tmp/rss.duckdb
    python benchmarks/profile_load_rss.py TRACE --db F --set "SET write_buffer_row_group_count = 1"
    python benchmarks/profile_load_rss.py TRACE --db F --around "-- Stage 2 of loading|SET threads = 1|SET threads = 2"
    DUCKPROF_LOAD_MEMORY=auto python benchmarks/profile_load_rss.py TRACE --db F --quiet

--set runs a statement on the loader's connection before the load;
--around "PREFIX|BEFORE[|AFTER]" runs BEFORE ahead of every statement whose
text starts with PREFIX and AFTER once it is done (settings to try on one
statement). --quiet: no sampling thread, only ru_maxrss and CPU seconds.
The database file is replaced. Statements on the stagers' cursors (the
parses) are not wrapped: they show as "(between)".
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

T0 = time.perf_counter()


def status() -> dict:
    """VmRSS, RssAnon and RssFile of this process, MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "RssAnon", "RssFile")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) >> 10
    return out


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                              "fsmblks", "uordblks", "fordblks", "keepcost")]


class Allocators:
    """jemalloc's allocated / resident MiB (DuckDB's, linked in as duckdb_je_*)
    and glibc's in use / held MiB."""

    def __init__(self):
        import duckdb
        so = glob.glob(os.path.join(os.path.dirname(duckdb.__file__), "..", "_duckdb*.so"))
        self.je = ctypes.CDLL(so[0]).duckdb_je_mallctl if so else None
        self.libc = ctypes.CDLL("libc.so.6")
        self.libc.mallinfo2.restype = _Mallinfo2

    def jemalloc(self):
        if self.je is None:
            return None
        epoch, size = ctypes.c_uint64(1), ctypes.c_size_t(8)
        self.je(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch), ctypes.c_size_t(8))
        out = []
        for name in (b"stats.allocated", b"stats.resident"):
            v, size = ctypes.c_size_t(0), ctypes.c_size_t(8)
            self.je(name, ctypes.byref(v), ctypes.byref(size), None, ctypes.c_size_t(0))
            out.append(v.value >> 20)
        return tuple(out)

    def glibc(self):
        m = self.libc.mallinfo2()
        return (m.uordblks + m.hblkhd) >> 20, (m.arena + m.hblkhd) >> 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--db", required=True, help="the database file (replaced)")
    ap.add_argument("--set", action="append", default=[], help="a statement run before the load")
    ap.add_argument("--around", action="append", default=[], help="PREFIX|BEFORE[|AFTER]")
    ap.add_argument("--quiet", action="store_true", help="no sampling: ru_maxrss and CPU only")
    a = ap.parse_args()
    around = [(x.split("|") + ["", ""])[:3] for x in a.around]

    now = {"phase": "import", "stmt": "startup"}
    samples, wide, stop = [], [], threading.Event()
    import duckdb  # noqa: F401
    import duckprof.load as L
    import duckprof.phase as P
    from duckprof.session import load_into
    alloc, probe = Allocators(), {}

    def sampler():
        i = 0
        while not stop.is_set():
            s = status()
            samples.append((time.perf_counter() - T0, s["VmRSS"], s["RssAnon"], now["phase"], now["stmt"]))
            if i % 10 == 0:
                tags = None
                if "cur" in probe:
                    try:
                        tags = dict(probe["cur"].execute(
                            "SELECT tag, memory_usage_bytes // 1000000 FROM duckdb_memory() "
                            "WHERE memory_usage_bytes >= 1000000").fetchall())
                    except duckdb.Error:
                        pass
                wide.append((samples[-1], alloc.jemalloc(), alloc.glibc(), tags))
            i += 1
            time.sleep(0.005)

    mark = P.mark

    def marked(name):
        now["phase"] = name
        mark(name)
    P.mark = L.phase.mark = marked

    class Watched:
        """The loader's connection: each statement's name, the settings to try."""

        def __init__(self, con):
            self._c = con
            if not a.quiet:
                probe["cur"] = con.cursor()
            for sql in a.set:
                con.execute(sql)

        def __getattr__(self, name):
            return getattr(self._c, name)

        def execute(self, sql, *params):
            first = " ".join(sql.strip().split())[:90]
            hooks = [(b, f) for p, b, f in around if first.startswith(p)]
            for b, _ in hooks:
                self._c.execute(b)
            now["stmt"] = first
            try:
                return self._c.execute(sql, *params)
            finally:
                now["stmt"] = "(between)"
                for _, f in hooks:
                    if f:
                        self._c.execute(f)

    init = L.Loader.__init__

    def watched_init(self, con, *args, **kw):
        init(self, Watched(con), *args, **kw)
    L.Loader.__init__ = watched_init

    for f in (a.db, a.db + ".wal"):
        if os.path.exists(f):
            os.remove(f)
    thread = threading.Thread(target=sampler, daemon=True)
    if not a.quiet:
        thread.start()
    load_into(a.db, [a.trace], run="default")
    now["phase"] = "after"
    time.sleep(0.05)
    stop.set()
    if thread.is_alive():
        thread.join()
    print(f"ru_maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB, "
          f"{sum(os.times()[:2]):.2f} CPU-s, {time.perf_counter() - T0:.2f} s")
    if a.quiet:
        return
    print("phase: from-to s, peak RSS MiB (anonymous)")
    phases: dict = {}
    for t, rss, anon, ph, _ in samples:
        p = phases.setdefault(ph, [t, t, 0, 0])
        p[1], p[2], p[3] = t, max(p[2], rss), max(p[3], anon)
    for ph, (t0, t1, rss, anon) in phases.items():
        print(f"  {ph:18s} {t0:6.2f}-{t1:6.2f}  {rss:5d} ({anon})")
    print("every ~0.2 s: t, RSS, anonymous, jemalloc (allocated, resident), glibc (in use, held), "
          "duckdb_memory MB by tag, phase, statement")
    last = -1.0
    top = max(wide, key=lambda w: w[0][1]) if wide else None
    for (t, rss, anon, ph, stmt), je, gl, tags in wide:
        if t - last >= 0.2 or (top and t == top[0][0]):
            print(f"  {t:6.2f} {rss:5d} {anon:5d} {je} {gl} {tags} {ph} | {stmt[:60]}")
            last = t


if __name__ == "__main__":
    main()
