-- Interval nesting of the host (CPU-side) complete events of one trace.
-- Parameter: trace_id. Writes `nesting` (parent_id, depth, self_ns, op_id).
--
-- Quadratic interval joins die on big traces, so nesting is computed from
-- sorted sequences instead: per thread, events are ordered by (start, longer
-- first). An event's depth is the number of intervals still open when it
-- starts: a running sum of +1 at each start and -1 at each end, with ends at
-- time t sorted before starts at t (a zero-length event's end sorts right
-- after its own start). Its parent is then the latest earlier event of depth
-- d-1 on the thread: an ASOF join. The same is done with cpu_ops as the only
-- containers to find each event's innermost enclosing cpu_op (op_id).
INSERT INTO nesting
WITH host AS (
    SELECT event_id, cat = 'cpu_op' AS is_op, ts_ns, dur_ns, end_ns,
           hash(pid_label, tid_label) AS thread,
           row_number() OVER (PARTITION BY pid_label, tid_label
                              ORDER BY ts_ns, dur_ns DESC, event_id) AS seq
    FROM events
    WHERE trace_id = $trace_id AND ph = 'X' AND dur_ns >= 0 AND ts_ns IS NOT NULL
      AND cat NOT IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'gpu_user_annotation',
                      'mtia_ccp_events', 'trace')
),
points AS (
    -- (time, kind, key): kind 0 = end of a non-empty interval, 1 = start or zero-length end
    SELECT thread, ts_ns AS t, 1 AS kind, 2 * seq AS k, 1 AS all_delta,
           is_op::INTEGER AS op_delta, event_id FROM host
    UNION ALL
    SELECT thread, end_ns, CASE WHEN dur_ns = 0 THEN 1 ELSE 0 END,
           CASE WHEN dur_ns = 0 THEN 2 * seq + 1 ELSE 0 END, -1, -(is_op::INTEGER), NULL
    FROM host
),
depths AS (
    SELECT event_id,
           coalesce(sum(all_delta) OVER w, 0) AS depth,
           coalesce(sum(op_delta) OVER w, 0) AS op_depth
    FROM points
    WINDOW w AS (PARTITION BY thread ORDER BY t, kind, k
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
    QUALIFY event_id IS NOT NULL
),
d AS (
    SELECT h.event_id, h.thread, h.seq, h.is_op, h.ts_ns, h.end_ns, h.dur_ns, x.depth, x.op_depth
    FROM host h JOIN depths x USING (event_id)
),
ops AS (SELECT * FROM d WHERE is_op),
linked AS (
    SELECT e.event_id, e.depth, e.dur_ns, p.event_id AS parent_id,
           -- a child is clipped to its parent: overlapping (not properly nested)
           -- events in real traces must not make self time negative
           greatest(0, least(e.end_ns, p.end_ns) - greatest(e.ts_ns, p.ts_ns)) AS inside_ns
    FROM d e ASOF LEFT JOIN d p
      ON e.thread = p.thread AND e.depth - 1 = p.depth AND e.seq > p.seq
),
op_linked AS (
    SELECT e.event_id, o.event_id AS op_id
    FROM d e ASOF LEFT JOIN ops o
      ON e.thread = o.thread AND e.op_depth - 1 = o.op_depth AND e.seq > o.seq
),
child_time AS (
    SELECT parent_id, sum(inside_ns) AS child_ns FROM linked
    WHERE parent_id IS NOT NULL GROUP BY parent_id
)
SELECT $trace_id, l.event_id, l.parent_id, l.depth,
       l.dur_ns - coalesce(c.child_ns, 0) AS self_ns, o.op_id
FROM linked l
LEFT JOIN child_time c ON c.parent_id = l.event_id
LEFT JOIN op_linked o ON o.event_id = l.event_id
