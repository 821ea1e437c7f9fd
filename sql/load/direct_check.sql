-- After a chunk was read straight into events (normalize.sql's {chunk},
-- load.Loader._insert), in the load's transaction: its number of events, and
-- how many of them might be what validate.sql refuses (no ts, or a ts or dur
-- beyond +-9e15 us: NaN and inf failed the insert already) or, read as
-- doubles (not exact), might need exact timestamps (exact_ts_needed.sql: a
-- fractional ts of at least 2^43 us, which leaves ts_ns off a whole us, in a
-- trace without baseTimeNanoseconds). The test is wider than theirs (ns near
-- the limits count too): a trace with any such event is rolled back and
-- staged as a trace of a file is, where they are decided exactly.
-- Read with its exact timestamps (exact), the trace is staged unless one
-- confirms what staging would have found: a ts of at least 2^43 us whose
-- double is fractional for sure: below 2^51 us (2041) doubles are at most
-- 0.25 us apart, so one whose ns are 252-748 past a whole us.
-- Parameters: trace_id, base_ns (the trace's baseTimeNanoseconds; 0: none),
-- exact (BOOLEAN).
-- Returns events BIGINT, doubtful BIGINT, confirmed BIGINT.
SELECT count(*) AS events,
       count_if((ts_ns IS NULL AND ph <> 'M')
                OR abs(ts_ns - $base_ns) >= 8999000000000000000
                OR abs(dur_ns) >= 8999000000000000000
                OR (NOT $exact AND $base_ns = 0 AND abs(ts_ns) >= 8796093022207000 AND ts_ns % 1000 <> 0))
           AS doubtful,
       count_if(NOT $exact OR (abs(ts_ns) BETWEEN 8796093022208000 AND 2251799813685247999
                               AND abs(ts_ns) % 1000 BETWEEN 252 AND 748))
           AS confirmed
FROM events
WHERE trace_id = $trace_id
