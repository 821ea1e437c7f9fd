-- python_functions: Python call-stack events (with_stack=True), e.g.
-- 'nn.Module: Linear_0' or 'train.py(82): step'.
--
-- requires: events
--
-- Columns:
-- trace_id          INTEGER  trace
-- event_id          BIGINT   events.event_id
-- name              VARCHAR  frame, e.g. 'train.py(82): step'
-- pid               BIGINT   process
-- tid               BIGINT   thread
-- ts_ns             BIGINT   start, ns since the epoch
-- dur_ns            BIGINT   duration, ns
-- end_ns            BIGINT   ts_ns + dur_ns
-- self_ns           BIGINT   dur_ns minus the direct children on the thread
-- depth             INTEGER  number of enclosing host events
-- parent_event_id   BIGINT   innermost enclosing host event
-- op_event_id       BIGINT   innermost enclosing cpu_op (NULL: none)
-- python_id         BIGINT   args 'Python id'
-- python_parent_id  BIGINT   args 'Python parent id'
-- args              JSON     all args
CREATE OR REPLACE VIEW python_functions AS
SELECT trace_id, event_id, name, pid, tid, ts_ns, dur_ns, end_ns,
       self_ns, depth, parent_event_id, op_event_id,
       try_cast(json_extract_string(args, '$."Python id"') AS BIGINT) AS python_id,
       try_cast(json_extract_string(args, '$."Python parent id"') AS BIGINT) AS python_parent_id,
       args
FROM events
WHERE ph = 'X' AND cat = 'python_function';
