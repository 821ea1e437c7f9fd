"""The floor of duckprof's load design, shared by bench_load.py and
bench_load_phases.py (run in their child processes): the same chunking as
duckprof (split_trace), then one read_json of every chunk into a table of
raw events, as written: no normalisation, validation, nesting or estimates.
Splitting and parsing run one after the other here (duckprof overlaps them),
but both are CPU-bound on every core, so overlapping them would save little.
No side effects on import: the child puts the duckprof under test first on
sys.path, this folder last.
"""
import duckdb


def raw_load(files, tmp: str, db_file: str | None) -> int:
    """Load `files` into a raw table of `db_file` (capped at 1 GB of memory,
    duckprof's cap for file loads) or of an in-memory database (None); the
    number of events."""
    from duckprof.split import split_trace
    con = duckdb.connect(db_file or ":memory:")
    if db_file:
        con.execute("SET memory_limit = '1GB'")
    con.execute("CREATE TABLE raw (ph VARCHAR, cat VARCHAR, name VARCHAR, pid VARCHAR, tid VARCHAR, "
                "ts DOUBLE, dur DOUBLE, id VARCHAR, args JSON USING COMPRESSION zstd)")
    chunks = [c for p in files for c in split_trace(p, tmp, chunks=4).chunks]
    con.execute("INSERT INTO raw SELECT * FROM read_json($f, format = 'array', columns = {ph: 'VARCHAR', "
                "cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', "
                "dur: 'DOUBLE', id: 'VARCHAR', args: 'JSON'})", {"f": chunks})
    n = con.execute("SELECT count(*) FROM raw").fetchall()[0][0]
    con.close()
    return n
