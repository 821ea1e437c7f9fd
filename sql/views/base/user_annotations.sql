-- user_annotations: record_function ranges on host threads (ProfilerStep#N,
-- user labels).
--
-- requires: events
--
-- Columns:
-- trace_id         INTEGER  trace
-- event_id         BIGINT   events.event_id
-- name             VARCHAR  the label
-- pid              BIGINT   process
-- tid              BIGINT   thread
-- ts_ns            BIGINT   start, ns since the epoch
-- dur_ns           BIGINT   duration, ns
-- end_ns           BIGINT   ts_ns + dur_ns
-- external_id      BIGINT   'External id'
-- self_ns          BIGINT   dur_ns minus the direct children on the thread
-- depth            INTEGER  number of enclosing host events
-- parent_event_id  BIGINT   innermost enclosing host event
-- op_event_id      BIGINT   innermost enclosing cpu_op (NULL: none)
-- unfinished       BOOLEAN  true: not ended on its thread while profiling ('"finished": false':
--                           ended on another thread or still open at the stop, which is its
--                           end_ns); async in torch, so no one's parent, depth 0, self_ns 0; else NULL
-- args             JSON     all args
CREATE OR REPLACE VIEW user_annotations AS
SELECT trace_id, event_id, name, pid, tid, ts_ns, dur_ns, end_ns, external_id,
       self_ns, depth, parent_event_id, op_event_id, unfinished, args
FROM events
WHERE ph = 'X' AND cat = 'user_annotation';
