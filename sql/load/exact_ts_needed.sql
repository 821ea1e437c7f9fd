-- Whether one staged chunk table (stage_events.sql) has fractional timestamps
-- beyond 2^43 us, where a double is coarser than 1 ns and exact_ts.sql must
-- read ts from the text. Run by the loader right after the chunk is parsed,
-- while its file is still there. Such timestamps are absolute (a trace with
-- baseTimeNanoseconds has small relative ones); the loader uses the exact
-- values only for traces without baseTimeNanoseconds (normalize.sql).
-- Template: raw (the chunk table). Returns one row (needed INTEGER) or none.
SELECT 1 AS needed FROM {{ raw }} WHERE abs(ts) >= 8796093022208 AND ts <> floor(ts) LIMIT 1
