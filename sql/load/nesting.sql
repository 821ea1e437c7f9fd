-- Interval nesting of the host (CPU-side) complete events of one trace.
-- Parameters: trace_id; crossing_threads (UBIGINT[], see below: empty on the
-- first pass). Writes `nesting` (parent_id, depth, self_ns, op_id).
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
--
-- Real traces are not always properly nested: with with_stack, ProfilerStep#N
-- starts inside the python frame that opens it and outlives it. Like torch's
-- tree building (EventList._populate_cpu_children), an event's parent is the
-- innermost event that contains it entirely, and an open event that a later
-- event starts inside and outlives ("crosses") is closed where that event
-- starts: its end point moves to close_ns. Those intervals nest properly, so
-- the running sum and the ASOF join above apply unchanged. Crossed events are
-- found by a window over the events starting inside each one; only those few
-- are joined with their crossers. That window is costly, so the loader runs
-- this file first with no crossing_threads, then nesting_check.sql: the first
-- crossing on a thread always leaves a child whose parent ends before it does
-- (its parent is then the innermost open event, which it outlives). Only if
-- some thread has one is the trace's nesting computed again, with the window
-- on those threads.
INSERT INTO nesting
WITH host AS (
    SELECT event_id, hash(pid_label, tid_label) AS thread, (cat = 'cpu_op')::INTEGER AS op,
           ts_ns, end_ns, dur_ns
    FROM events
    WHERE trace_id = $trace_id AND ph = 'X' AND dur_ns >= 0 AND ts_ns IS NOT NULL
      AND cat NOT IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'gpu_user_annotation',
                      'mtia_ccp_events', 'trace')
),
inner_max AS (
    -- the latest end among the events that start strictly inside (ts_ns, end_ns)
    SELECT event_id, thread, ts_ns, end_ns,
           max(end_ns) OVER (PARTITION BY thread ORDER BY ts_ns
                             RANGE BETWEEN 1 FOLLOWING AND greatest(dur_ns - 1, 1) FOLLOWING) AS m
    FROM host
    WHERE list_contains(CAST($crossing_threads AS UBIGINT[]), thread)
),
crossed AS (
    SELECT c.event_id, min(x.ts_ns) AS close_ns
    FROM inner_max c JOIN host x
      ON x.thread = c.thread AND x.ts_ns > c.ts_ns AND x.ts_ns < c.end_ns AND x.end_ns > c.end_ns
    WHERE c.m > c.end_ns
    GROUP BY c.event_id
),
points AS (
    SELECT event_id, thread, ts_ns AS t, 1 AS kind, -dur_ns AS longer_first, 0 AS sub,
           1 AS delta, op AS op_delta, op, ts_ns, end_ns, dur_ns
    FROM host
    UNION ALL
    SELECT h.event_id, h.thread, coalesce(c.close_ns, h.end_ns), CASE WHEN h.dur_ns = 0 THEN 1 ELSE 0 END,
           -h.dur_ns, 1, -1, -h.op, NULL, NULL, NULL, NULL
    FROM host h LEFT JOIN crossed c USING (event_id)
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
