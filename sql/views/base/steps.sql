-- steps: one row per profiler step (the 'ProfilerStep#N' annotation on the host
-- thread).
--
-- requires: events
--
-- Columns:
-- trace_id  INTEGER  trace
-- step      BIGINT   N; or, in a trace whose N repeat or go back in time order, the
--                    step's place in that order (1, 2, ...): Lightning's PyTorchProfiler
--                    numbers training and validation (test, predict) steps each
--                    from its own counter, so a validation loop inside the profiled
--                    steps gives ProfilerStep#3 twice, and N no longer tells steps apart
-- recorded  BIGINT   N as recorded (equal to step unless the N repeat or go back)
-- event_id  BIGINT   events.event_id of the annotation
-- pid       BIGINT   host process that ran the step
-- tid       BIGINT   host thread that ran the step
-- ts_ns     BIGINT   the step's host-side start, ns since the epoch
-- dur_ns    BIGINT   its duration, ns
-- end_ns    BIGINT   ts_ns + dur_ns
CREATE OR REPLACE VIEW steps AS
SELECT trace_id,
       CASE WHEN bool_and(coalesce(n > prev_n, true)) OVER (PARTITION BY trace_id) THEN n ELSE place END AS step,
       n AS recorded, event_id, pid, tid, ts_ns, dur_ns, end_ns
FROM (SELECT *, lag(n) OVER w AS prev_n, row_number() OVER w AS place
      FROM (SELECT trace_id, try_cast(regexp_extract(name, '#\s*([0-9]+)', 1) AS BIGINT) AS n,
                   event_id, pid, tid, ts_ns, dur_ns, end_ns
            FROM events
            WHERE ph = 'X' AND cat IN ('user_annotation', 'cpu_op') AND name LIKE 'ProfilerStep#%')
      WINDOW w AS (PARTITION BY trace_id ORDER BY ts_ns, event_id));
