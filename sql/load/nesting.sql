-- Interval nesting of the host (CPU-side) complete events of one trace.
-- Parameter: trace_id. Writes `nesting` (parent_id, depth, self_ns, op_id).
--
-- Quadratic interval joins die on big traces, so nesting comes from one sorted
-- pass instead. Per thread, every event contributes a start point (+1) and an
-- end point (-1), ordered by time; at equal times ends of non-empty events come
-- before starts (an event ending when another starts does not enclose it),
-- starts come longer-first, and a zero-length event's end comes right after
-- its own start. The running sum before an event's start is its depth (the
-- number of intervals still open); counting starts gives its sequence number.
-- Its parent is then the latest earlier event of depth d-1 on the thread: an
-- ASOF join. Counting only cpu_ops the same way gives each event's innermost
-- enclosing cpu_op (op_id).
INSERT INTO nesting
WITH host AS (
    SELECT event_id, hash(pid_label, tid_label) AS thread, (cat = 'cpu_op')::INTEGER AS op,
           ts_ns, end_ns, dur_ns
    FROM events
    WHERE trace_id = $trace_id AND ph = 'X' AND dur_ns >= 0 AND ts_ns IS NOT NULL
      AND cat NOT IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'gpu_user_annotation',
                      'mtia_ccp_events', 'trace')
),
points AS (
    SELECT event_id, thread, ts_ns AS t, 1 AS kind, -dur_ns AS longer_first, 0 AS sub,
           1 AS delta, op AS op_delta, op, ts_ns, end_ns, dur_ns
    FROM host
    UNION ALL
    SELECT event_id, thread, end_ns, CASE WHEN dur_ns = 0 THEN 1 ELSE 0 END, -dur_ns, 1,
           -1, -op, NULL, NULL, NULL, NULL
    FROM host
),
d AS (
    SELECT event_id, thread, op = 1 AS is_op, ts_ns, end_ns, dur_ns,
           sum(delta) OVER w - 1 AS depth,
           sum(op_delta) OVER w - op AS op_depth,
           sum(delta) FILTER (WHERE delta = 1) OVER w AS seq
    FROM points
    WINDOW w AS (PARTITION BY thread ORDER BY t, kind, longer_first, event_id, sub
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    QUALIFY sub = 0
),
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
    FROM d e ASOF LEFT JOIN (SELECT event_id, thread, op_depth, seq FROM d WHERE is_op) o
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
