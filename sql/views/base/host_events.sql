-- host_events: every host-side complete event with its nesting on its thread:
-- the tree the profiler builds on the host (torch's experimental_event_tree):
-- operators, record_function ranges, Python frames, runtime calls, ...
--
-- These are the events sql/load/nesting.sql nests (depth is set): complete
-- events on host threads, not device activity, GPU-side annotations or the
-- trace span. Siblings are the events with one parent_event_id, in time order
-- (top-level events: one list per thread). Narrow on purpose (no args, only
-- the input shapes and types operators record): the anti-pattern rules of
-- report patterns walk this tree.
--
-- requires: events
--
-- Columns:
-- trace_id         INTEGER  trace
-- event_id         BIGINT   events.event_id
-- cat              VARCHAR  canonical category: 'cpu_op', 'python_function', 'user_annotation', 'cuda_runtime', ...
-- name             VARCHAR  event name
-- pid              BIGINT   process
-- tid              BIGINT   thread
-- ts_ns            BIGINT   start, ns since the epoch
-- dur_ns           BIGINT   duration, ns
-- end_ns           BIGINT   ts_ns + dur_ns
-- depth            INTEGER  number of enclosing host events on the thread
-- parent_event_id  BIGINT   event_id of the innermost enclosing host event (NULL at top level)
-- input_dims       JSON     'Input Dims' (operators, record_shapes), e.g. [[788,768],[768,768]]
-- input_types      JSON     'Input type' (operators), e.g. ["c10::BFloat16","float"]
CREATE OR REPLACE VIEW host_events AS
SELECT trace_id, event_id, cat, name, pid, tid, ts_ns, dur_ns, end_ns, depth, parent_event_id,
       input_dims, input_types
FROM events
WHERE depth IS NOT NULL;
