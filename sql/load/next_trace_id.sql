-- The trace_id the next loaded trace gets: one past the highest in the database.
-- trace_id  INTEGER  1 for an empty database
SELECT coalesce(max(trace_id), 0) + 1 AS trace_id FROM traces
