-- Traces of a batch whose timestamps need exact_ts.sql: written without
-- baseTimeNanoseconds, as fractional absolute microseconds beyond 2^43 us,
-- where a double is coarser than 1 ns (see exact_ts.sql).
-- Parameters: first, last (INTEGER, the batch's trace ids); absolute
-- (INTEGER[], those of them without baseTimeNanoseconds).
-- trace_id  INTEGER  a trace to redo
SELECT DISTINCT trace_id FROM events
WHERE trace_id BETWEEN $first AND $last
  AND list_contains($absolute, trace_id)
  AND abs(ts_ns) >= 8796093022208000 AND ts_ns % 1000 <> 0
