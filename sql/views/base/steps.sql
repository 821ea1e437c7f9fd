-- steps: one row per profiler step (the 'ProfilerStep#N' annotation on the host
-- thread).
--
-- requires: events
--
-- Columns:
-- trace_id  INTEGER  trace
-- step      BIGINT   N
-- event_id  BIGINT   events.event_id of the annotation
-- pid       BIGINT   host process that ran the step
-- tid       BIGINT   host thread that ran the step
-- ts_ns     BIGINT   the step's host-side start, ns since the epoch
-- dur_ns    BIGINT   its duration, ns
-- end_ns    BIGINT   ts_ns + dur_ns
CREATE OR REPLACE VIEW steps AS
SELECT trace_id, try_cast(regexp_extract(name, '#\s*([0-9]+)', 1) AS BIGINT) AS step,
       event_id, pid, tid, ts_ns, dur_ns, end_ns
FROM events
WHERE ph = 'X' AND cat IN ('user_annotation', 'cpu_op') AND name LIKE 'ProfilerStep#%';
