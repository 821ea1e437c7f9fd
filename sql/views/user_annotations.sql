-- user_annotations: record_function ranges on host threads (ProfilerStep#N, user labels).
-- trace_id, event_id, name, pid, tid, ts_ns, dur_ns, end_ns, external_id
-- self_ns, depth, parent_id  from nesting
-- args          JSON
CREATE OR REPLACE VIEW user_annotations AS
SELECT e.trace_id, e.event_id, e.name, e.pid, e.tid, e.ts_ns, e.dur_ns, e.end_ns, e.external_id,
       n.self_ns, n.depth, n.parent_id, e.args
FROM events e
LEFT JOIN nesting n ON n.trace_id = e.trace_id AND n.event_id = e.event_id
WHERE e.ph = 'X' AND e.cat = 'user_annotation';
