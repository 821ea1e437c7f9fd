-- What a load must know of the database before it parses (and again once it
-- holds write access, when another process may have loaded meanwhile), in one
-- statement: the trace_id the next loaded trace gets, and the content hashes
-- of the traces already loaded into its run (a file whose hash is among them
-- is not loaded again: reloading is a no-op).
-- Parameter: run (VARCHAR).
-- next_trace_id  INTEGER    one past the highest trace_id (1 for an empty database)
-- known          VARCHAR[]  traces.content_hash of the run's traces (sha256 hex;
--                           blake2b-128 in runs loaded by older duckprof versions)
SELECT coalesce(max(trace_id), 0) + 1 AS next_trace_id,
       coalesce(list(content_hash) FILTER (WHERE run = $run), []) AS known
FROM traces
