-- v1_to_v2: migrate a database of schema version 1 (duckprof before issue 12)
-- to version 2: the nesting table's columns become columns of events
-- (parent_id -> parent_event_id, op_id -> op_event_id), and the table goes;
-- traces gain their window (first_ts_ns, last_end_ns); op_estimates gains the
-- names of the estimators behind its numbers (NULL for the signatures estimated
-- before: their numbers stay, the names are not recomputed); the tables
-- interconnect_peaks, run_tags and trace_facts are new (the session seeds
-- the first and fills the last after the step).
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
ALTER TABLE op_estimates ADD COLUMN flops_formula VARCHAR;
ALTER TABLE op_estimates ADD COLUMN bytes_formula VARCHAR;
CREATE TABLE IF NOT EXISTS interconnect_peaks (
    device VARCHAR, interconnect VARCHAR, gbps DOUBLE, source VARCHAR);
CREATE TABLE IF NOT EXISTS run_tags (
    run VARCHAR NOT NULL, key VARCHAR NOT NULL, value VARCHAR NOT NULL, set_at TIMESTAMP, PRIMARY KEY (run, key));
CREATE TABLE IF NOT EXISTS trace_facts (
    trace_id INTEGER, devices INTEGER, steps BIGINT, step_total_ns BIGINT, step_max_ns BIGINT,
    busy_ns BIGINT, window_ns BIGINT);
