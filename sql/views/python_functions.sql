-- python_functions: Python call-stack events (with_stack=True), e.g. 'nn.Module: Linear_0' or 'train.py(82): step'.
-- trace_id, event_id, name, pid, tid, ts_ns, dur_ns, end_ns  as in cpu_ops
-- self_ns       BIGINT   dur_ns minus direct children
-- depth         INTEGER  number of enclosing host events
-- parent_id     BIGINT   innermost enclosing host event
-- python_id     BIGINT   args 'Python id'
-- python_parent_id BIGINT  args 'Python parent id'
-- args          JSON
CREATE OR REPLACE VIEW python_functions AS
SELECT e.trace_id, e.event_id, e.name, e.pid, e.tid, e.ts_ns, e.dur_ns, e.end_ns,
       n.self_ns, n.depth, n.parent_id,
       try_cast(json_extract_string(e.args, '$."Python id"') AS BIGINT) AS python_id,
       try_cast(json_extract_string(e.args, '$."Python parent id"') AS BIGINT) AS python_parent_id,
       e.args
FROM events e
LEFT JOIN nesting n ON n.trace_id = e.trace_id AND n.event_id = e.event_id
WHERE e.ph = 'X' AND e.cat = 'python_function';
