-- Interval nesting of the host (CPU-side) complete events of one batch of
-- staged traces (normalize.sql; several small traces are nested in one
-- statement), before they are inserted: writes the staging table {{ nest }}
-- (trace_id, event_id, thread, parent_event_id, depth, self_ns, op_event_id),
-- which insert_events.sql joins to the events. Template: raws, exact (see
-- normalize.sql), nest, crossing, packed, block (see below). Parameters: first_trace_id,
-- base_ns (normalize.sql), and with crossing = 'threads' crossing_threads
-- (UBIGINT[]). raws none: the rows of `events` of the traces in the
-- parameter trace_ids (INTEGER[]) instead, the same columns stored (an
-- in-memory load leaves the nesting to first use: session.DEFERRED); then
-- first_trace_id and base_ns are not parameters. A thread is hash(trace_id,
-- pid_label, tid_label): pid and tid as written.
--
-- Quadratic interval joins die on big traces, so nesting comes from sorted
-- passes instead. Per thread, every event contributes a start point (+1) and
-- an end point (-1), in time order. At equal times, ends of non-empty events
-- come before starts (an event ending when another starts does not enclose
-- it); starts come longer-first; ends come innermost-first (the reverse of the
-- start order); a zero-length event's end comes right after its own start.
-- The running sum of the points then counts the open intervals: after an
-- event's start it is the event's level + 1, after its end the level of its
-- parent + 1. So the parent of an event is the latest start, before the
-- event's end point, whose level equals that of the parent: a window
-- partitioned by (thread, running sum - 1) finds it for every end point in
-- one sort (cheaper than two ASOF joins). Counting only cpu_ops the
-- same way gives each event's innermost enclosing cpu_op (op_id), which is
-- its parent when that is a cpu_op.
--
-- Real traces are not always properly nested: with with_stack, ProfilerStep#N
-- starts inside the python frame that opens it and outlives it. Like torch's
-- tree building (EventList._populate_cpu_children), an event's parent is the
-- innermost event that contains it entirely, and an open event that a later
-- event starts inside and outlives ("crosses") is closed where that event
-- starts: its end point moves to close_ns. Those intervals nest properly, so
-- the passes above apply unchanged. Crossed events are found with the events
-- in start order: those starting strictly inside an event are a run of
-- consecutive positions, from a count and an ASOF join, whose latest end a
-- ROWS window takes (RANGE frames bounded by each event's duration cost
-- more, and worse than linearly: long events make long searches);
-- only the few events outlived by one are joined with their crossers. That
-- costs part of a pass, so `crossing` chooses:
-- 'all': every thread with crossings found, one pass (with_stack traces, where
-- the python frame that opens a label crosses it: the loader asks
-- nesting_crossing.sql);
-- 'check': no crossings looked for, but the first crossing on a thread always
-- leaves an event whose parent ends before it does (or that is its own
-- parent), written with depth -1; nesting_check.sql finds their threads,
-- whose rows are deleted (nesting_clear.sql) and computed again with
-- 'threads': crossings found on crossing_threads only. So no -1 stays in the
-- table, and the three give the same rows.
--
-- A RecordFunction not ended on its thread while profiling (events.unfinished:
-- ended on another thread, or still open at the stop, which the trace gives as
-- its end) is async in torch, out of its tree: it is no part of the walk
-- (host), and gets no parent, depth 0 and self time 0 (its row at the end).
{% from "templates/categories.sql" import not_host_cats, sql_list %}
{% from "load/normalize.sql" import normalized_events %}
INSERT INTO {{ nest }}
-- host_all is read twice (the walk's host, the unfinished rows at the end):
-- DuckDB would then materialize it, and the walk over the materialized rows
-- planned ~10x slower (mi300x_resnet_act_checkpoint: 1.3 -> 14.6 CPU-s a load):
-- NOT MATERIALIZED reads the events twice instead, which is cheap.
WITH host_all AS NOT MATERIALIZED (
    SELECT trace_id, event_id, hash(trace_id, pid_label, tid_label) AS thread,
           (cat = 'cpu_op')::INTEGER AS op, ts_ns, end_ns, dur_ns, unfinished
    {%- if raws is none %}
    FROM events
    WHERE trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id)
      AND ph = 'X' AND dur_ns >= 0 AND ts_ns IS NOT NULL
    {%- else %}
    FROM ({{ normalized_events(raws, exact, nesting=true) }})
    WHERE ph = 'X' AND dur_ns >= 0 AND ts_ns IS NOT NULL
    {%- endif %}
      AND cat NOT IN {{ sql_list(not_host_cats) }}
      {%- if crossing == 'threads' %}
      AND list_contains(CAST($crossing_threads AS UBIGINT[]), hash(trace_id, pid_label, tid_label))
      {%- endif %}
),
host AS (  -- the events of the walk: not the unfinished ones (see the end)
    SELECT * EXCLUDE (unfinished) FROM host_all WHERE unfinished IS NULL
),
{%- if crossing in ('all', 'threads') %}
started AS (
    -- in start order (pos): the events starting at or before ts_ns (le)
    SELECT trace_id, event_id, thread, ts_ns, end_ns,
           row_number() OVER ws AS pos,
           count(*) OVER (ws RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS le
    FROM host
    WINDOW ws AS (PARTITION BY thread ORDER BY ts_ns)
),
ends AS (
    -- and those starting before end_ns (lt_end: le of the last one; at
    -- least le), so the events starting strictly inside are the positions
    -- le + 1 .. lt_end
    SELECT c.*, greatest(c.le, coalesce(x.le, 0)) AS lt_end
    FROM started c ASOF LEFT JOIN started x ON x.thread = c.thread AND x.ts_ns < c.end_ns
),
inner_max AS (
    -- the latest end among the events that start strictly inside (ts_ns, end_ns)
    SELECT trace_id, event_id, thread, ts_ns, end_ns, le, lt_end,
           CASE WHEN lt_end > le THEN max(end_ns) OVER (PARTITION BY thread ORDER BY pos
                ROWS BETWEEN le - pos + 1 FOLLOWING AND lt_end - pos FOLLOWING) END AS m
    FROM ends
),
-- A crossed event closes where its first crosser starts: the first position
-- in le + 1 .. lt_end whose event ends after it. Comparing it with every
-- event of its thread would be quadratic (crossed events x thread events:
-- every record_function label of a with_stack trace is crossed), so the
-- positions go in blocks (of `block` positions, a template parameter): only
-- its range's first and last blocks, and the first block between them whose
-- latest end passes its end, are searched.
blocks AS (
    SELECT thread, (pos - 1) // {{ block }} AS blk, max(end_ns) AS blk_end
    FROM started GROUP BY ALL
),
crossing_blocks AS (
    SELECT trace_id, event_id, thread, end_ns, le, lt_end, unnest([le // {{ block }}, (lt_end - 1) // {{ block }},
        (SELECT min(b.blk) FROM blocks b
         WHERE b.thread = c.thread AND b.blk > c.le // {{ block }} AND b.blk < (c.lt_end - 1) // {{ block }}
           AND b.blk_end > c.end_ns)]) AS blk
    FROM inner_max c
    WHERE m > end_ns
),
crossed AS (
    SELECT c.trace_id, c.event_id, min(x.ts_ns) AS close_ns
    FROM crossing_blocks c JOIN started x
      ON x.thread = c.thread AND (x.pos - 1) // {{ block }} = c.blk
     AND x.pos > c.le AND x.pos <= c.lt_end AND x.end_ns > c.end_ns
    GROUP BY c.trace_id, c.event_id
),
{%- endif %}
{%- if packed %}
ranges AS (
    -- the ranges of the packed key's fields; a key that might not fit stops
    -- the statement (the loader then nests with the six keys)
    SELECT min(ts_ns) AS t0, min(event_id) AS e0,
           CASE WHEN NOT (log2(max(end_ns) - min(ts_ns) + 1) + log2(max(dur_ns) + 1)
                          + log2(max(event_id) - min(event_id) + 1) + 2 < 124)
                THEN error('nesting: packed key does not fit ' || (max(end_ns) - min(ts_ns))::VARCHAR)
                ELSE max(dur_ns) END AS d,
           max(event_id) - min(event_id) AS e
    FROM host
),
points AS (
    -- the six keys below packed into one HUGEINT, field by field:
    -- (((t - t0) * 2 + kind) * (d + 1) + a) * (e + 1) + b) * 2 + sub, with
    -- a and b each in [0, d] and [0, e]. An end point's -ts_ns, at its time
    -- end_ns = ts_ns + dur_ns, orders as dur_ns, which makes its k3 a repeat.
    -- starts (kind 1): a = d - dur_ns, b = event_id - e0, sub 0; ends of
    -- non-empty events (kind 0): a = dur_ns, b = e - (event_id - e0); a
    -- zero-length event's end: its start's key + 1. sub (the key's last bit)
    -- is also a column of its own: k % 2 on a HUGEINT is a long division in
    -- software, a fifth of the statement.
    -- With crossings an end's time is close_ns where the event was closed
    -- (t), and dur_ns still orders the ends at one time as -ts_ns then
    -- dur_ns do: the closed intervals nest, so of two events ending at t the
    -- one starting later lies inside the other, and started inside it, so it
    -- did not outlive it: its duration is the shorter (or both start together)
    SELECT trace_id, event_id, thread,
           (((((ts_ns - t0)::HUGEINT * 2 + 1) * (d + 1) + (d - dur_ns)) * (e + 1) + (event_id - e0)) * 2) AS k,
           1 AS delta, 0 AS sub, op, ts_ns, end_ns
    FROM host, ranges
    UNION ALL
    SELECT trace_id, event_id, thread,
           CASE WHEN dur_ns = 0
                THEN (((((ts_ns - t0)::HUGEINT * 2 + 1) * (d + 1) + d) * (e + 1) + (event_id - e0)) * 2) + 1
                ELSE (((((t - t0)::HUGEINT * 2) * (d + 1) + dur_ns) * (e + 1) + (e - (event_id - e0))) * 2) + 1
           END,
           -1, 1, op, ts_ns, end_ns
    {%- if crossing in ('all', 'threads') %}
    FROM (SELECT h.*, coalesce(c.close_ns, h.end_ns) AS t FROM host h LEFT JOIN crossed c USING (trace_id, event_id)),
         ranges
    {%- else %}
    FROM (SELECT *, end_ns AS t FROM host), ranges
    {%- endif %}
),
counted AS (
    SELECT trace_id, event_id, thread, sub, op, ts_ns, end_ns,
           row_number() OVER w AS pos,
           (sum(delta * (1 + op * 4294967296)) OVER w)::BIGINT AS n
    FROM points
    WINDOW w AS (PARTITION BY thread ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
{%- else %}
points AS (
    -- starts at one time: longer first, then in file order
    SELECT trace_id, event_id, thread, ts_ns AS t, 1 AS kind, -dur_ns AS k2, event_id AS k3, 0 AS k4, 0 AS sub,
           1 AS delta, op, ts_ns, end_ns
    FROM host
    UNION ALL
    -- ends at one time: innermost first, the reverse of the start order (by the
    -- original duration: a closed event's end may meet its children's); a
    -- zero-length event's end right after its own start
    SELECT h.trace_id, h.event_id, h.thread,
           {% if crossing in ('all', 'threads') %}coalesce(c.close_ns, h.end_ns){% else %}h.end_ns{% endif %}, CASE WHEN h.dur_ns = 0 THEN 1 ELSE 0 END,
           CASE WHEN h.dur_ns = 0 THEN 0 ELSE -h.ts_ns END,
           CASE WHEN h.dur_ns = 0 THEN h.event_id ELSE h.dur_ns END,
           CASE WHEN h.dur_ns = 0 THEN 0 ELSE -h.event_id END,
           1, -1, h.op, h.ts_ns, h.end_ns
    FROM host h
    {%- if crossing in ('all', 'threads') %} LEFT JOIN crossed c USING (trace_id, event_id){% endif %}
),
counted AS (
    SELECT trace_id, event_id, thread, sub, op, ts_ns, end_ns,
           row_number() OVER w AS pos,
           (sum(delta * (1 + op * 4294967296)) OVER w)::BIGINT AS n
    FROM points
    WINDOW w AS (PARTITION BY thread ORDER BY t, kind, k2, k3, k4, sub
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
{%- endif %}
walk AS (
    -- lvl: open intervals after this point, minus 1; op_lvl: the same for
    -- cpu_ops. Both from one running sum n (a cpu_op's point counts 1 + 2^32:
    -- the open intervals are n's low 32 bits, the open cpu_ops the rest; a
    -- second running sum cost about as much as the sort), as INTEGERs: they
    -- are the partition keys of the two windows below, narrower than the
    -- HUGEINT a sum is (together -12 to -16% of the statement on 1 GB).
    -- Exact while a thread has fewer than 2^31 events open at once: far
    -- more than a load holds
    SELECT trace_id, event_id, thread, sub, op, ts_ns, end_ns, pos,
           (n & 4294967295)::INTEGER - 1 AS lvl, (n >> 32)::INTEGER - 1 AS op_lvl
    FROM counted
),
linked AS (
    -- one row per event, from its end point; cpu_op start points stay for
    -- enclosing_op. The parent's four columns come from one window function
    -- (a struct): four cost ~1.3x its CPU (benchmarks/bench_nesting.py).
    SELECT trace_id, event_id, thread, sub, op, pos, op_lvl, ts_ns, end_ns, depth,
           parent.id AS parent_id, parent.op AS parent_op, parent.ts AS parent_ts, parent."end" AS parent_end
    FROM (
        SELECT trace_id, event_id, thread, sub, op, pos, op_lvl, ts_ns, end_ns, lvl + 1 AS depth,
               last_value(CASE WHEN sub = 0 THEN {'id': event_id, 'op': op, 'ts': ts_ns, 'end': end_ns} END
                          IGNORE NULLS) OVER wp AS parent
        FROM walk
        WINDOW wp AS (PARTITION BY thread, lvl ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
        QUALIFY sub = 1 OR op = 1
    )
),
enclosing_op AS (
    -- op_id of the events whose parent is not a cpu_op (for the others it is
    -- the parent): sorting only these and the cpu_op starts, not every point,
    -- saves a third of nesting's sorting
    SELECT trace_id, event_id,
           last_value(CASE WHEN sub = 0 THEN event_id END IGNORE NULLS) OVER wo AS op_id
    FROM linked
    WHERE sub = 0 OR parent_op = 0
    WINDOW wo AS (PARTITION BY thread, op_lvl ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    QUALIFY sub = 1
),
child_time AS (
    -- a child is clipped to its parent: overlapping (not properly nested)
    -- events in real traces must not make self time negative
    SELECT trace_id, parent_id, sum(greatest(0, least(end_ns, parent_end) - greatest(ts_ns, parent_ts))) AS child_ns
    FROM linked WHERE sub = 1 AND parent_id IS NOT NULL GROUP BY trace_id, parent_id
)
SELECT l.trace_id, l.event_id, l.thread, l.parent_id AS parent_event_id,
       {%- if crossing == 'check' %}
       -- depth -1 marks the event of a crossing (see above)
       CASE WHEN l.parent_id = l.event_id OR l.end_ns > l.parent_end OR l.ts_ns < l.parent_ts
            THEN -1 ELSE l.depth END AS depth,
       {%- else %}
       l.depth,
       {%- endif %}
       l.end_ns - l.ts_ns - coalesce(c.child_ns, 0) AS self_ns,
       CASE WHEN l.parent_op = 1 THEN l.parent_id ELSE o.op_id END AS op_event_id
FROM linked l
LEFT JOIN child_time c ON c.trace_id = l.trace_id AND c.parent_id = l.event_id
LEFT JOIN enclosing_op o ON o.trace_id = l.trace_id AND o.event_id = l.event_id
WHERE l.sub = 1
UNION ALL
-- the unfinished RecordFunctions (events.unfinished): torch calls them async
-- and leaves them out of its tree (EventList._populate_cpu_children), so the
-- walk above never saw them: no one's parent (their would-be children are
-- the ranges' they cross, which are not closed at their start), no parent,
-- self time 0 (FunctionEvent.self_cpu_time_total of an async event)
SELECT trace_id, event_id, thread, NULL, 0, 0, NULL FROM host_all WHERE unfinished
