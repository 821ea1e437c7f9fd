-- Exact timestamps for traces with fractional *absolute* microseconds (no
-- baseTimeNanoseconds, ts ~1.7e15 us with 3 decimals: some 2023 Kineto
-- versions). DuckDB parses numbers as DOUBLE, whose ulp at 1.7e15 is 0.25 us,
-- so insert_events.sql can be off by up to 0.125 us there, enough to turn a
-- sibling that starts where another ends into its child. This takes ts again
-- from the raw text of each event, exactly, and moves end_ns with it.
-- Parameters: files (the same chunk files, same order: event_id = position),
-- trace_id. Run by the loader only when such timestamps are present.
-- A ts that is not the event's own (a "ts" key inside args written before it)
-- is caught by requiring the exact value to be within 1 us of the double.
UPDATE events AS e
SET ts_ns = x.exact_ns, end_ns = x.exact_ns + e.dur_ns
FROM (
    SELECT event_id, round(try_cast(txt AS DECIMAL(38, 9)) * 1000)::BIGINT AS exact_ns
    FROM (
        SELECT row_number() OVER () AS event_id,
               regexp_extract(json, '"ts"\s*:\s*(-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)', 1) AS txt
        FROM read_json_objects($files, format = 'array', maximum_object_size = 33554432)
    )
    WHERE txt <> ''
) AS x
WHERE e.trace_id = $trace_id AND e.event_id = x.event_id
  AND x.exact_ns IS NOT NULL AND abs(x.exact_ns - e.ts_ns) <= 1000 AND x.exact_ns <> e.ts_ns
