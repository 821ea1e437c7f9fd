-- v1_to_v2: migrate a database of schema version 1 (duckprof before issue 12)
-- to version 2: the nesting table's columns become columns of events
-- (parent_id -> parent_event_id, op_id -> op_event_id), and the table goes;
-- traces gain their window (first_ts_ns, last_end_ns). What came after
-- version 2 was released is v2_to_v3.sql.
-- Run by duckprof.session in one transaction, with the old views dropped first.
ALTER TABLE events ADD COLUMN parent_event_id BIGINT;
ALTER TABLE events ADD COLUMN depth INTEGER;
ALTER TABLE events ADD COLUMN self_ns BIGINT;
ALTER TABLE events ADD COLUMN op_event_id BIGINT;
UPDATE events AS e
SET parent_event_id = n.parent_id, depth = n.depth, self_ns = n.self_ns, op_event_id = n.op_id
FROM nesting AS n
WHERE n.trace_id = e.trace_id AND n.event_id = e.event_id;
DROP TABLE nesting;
ALTER TABLE traces ADD COLUMN first_ts_ns BIGINT;
ALTER TABLE traces ADD COLUMN last_end_ns BIGINT;
UPDATE traces AS t
SET first_ts_ns = w.first_ts_ns, last_end_ns = w.last_end_ns
FROM (SELECT trace_id, min(ts_ns) AS first_ts_ns, max(end_ns) AS last_end_ns
      FROM events WHERE ph = 'X' AND dur_ns >= 0 GROUP BY trace_id) AS w
WHERE w.trace_id = t.trace_id;
