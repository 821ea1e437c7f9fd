-- The window of each trace of a batch, stored in traces: the earliest start
-- and the latest end of its complete events (ph X with a duration >= 0).
-- Parameters: first_trace_id, last_trace_id.
-- Returns trace_id INTEGER, first_ts_ns BIGINT, last_end_ns BIGINT.
SELECT trace_id, min(ts_ns) AS first_ts_ns, max(end_ns) AS last_end_ns
FROM events
WHERE trace_id BETWEEN $first_trace_id AND $last_trace_id AND ph = 'X' AND dur_ns >= 0
GROUP BY trace_id
