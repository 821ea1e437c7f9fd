-- After a chunk was read straight into events (normalize.sql's {chunk},
-- load.Loader._insert), in the load's transaction: its number of events, and
-- how many of them might be what validate.sql refuses (no ts, or a ts or dur
-- beyond +-9e15 us: NaN and inf failed the insert already) or might need
-- exact timestamps (exact_ts_needed.sql: a fractional ts of at least 2^43 us,
-- which leaves ts_ns off a whole us, in a trace without baseTimeNanoseconds).
-- The test is wider than theirs (ns near the limits count too): a trace with
-- any such event is rolled back and staged as a trace of a file is, where
-- they are decided exactly.
-- Parameters: trace_id, base_ns (the trace's baseTimeNanoseconds; 0: none).
-- Returns events BIGINT, doubtful BIGINT.
SELECT count(*) AS events,
       count_if((ts_ns IS NULL AND ph <> 'M')
                OR abs(ts_ns - $base_ns) >= 8999000000000000000
                OR abs(dur_ns) >= 8999000000000000000
                OR ($base_ns = 0 AND abs(ts_ns) >= 8796093022207000 AND ts_ns % 1000 <> 0)) AS doubtful
FROM events
WHERE trace_id = $trace_id
