-- The derived_call_totals rows of the traces in $trace_ids (INTEGER[]): per
-- host call (cpu_op, user annotation, Python function, runtime call, with both
-- ends), what report ops and report memory --ops roll up, computed here once
-- instead of by four ASOF joins of every call at every query:
-- device_ns: the device time (kernels, memcpys, memsets) launched by the
--   calls on its thread that start in [start, end): each launch is owned by
--   the enclosing cpu_op its runtime call's External id names (templates/
--   launch_owner.sql), else by its innermost enclosing cpu_op, or by the
--   enclosing user annotation or operator that is the runtime call's parent
--   (the RecordFunction whose External id Kineto gives the launch);
-- cpu_mem_bytes, device_mem_bytes: the bytes of the [memory] events in
--   [start, end], any thread of the call's process (templates/memory.sql call_bytes).
-- Only calls with some device time or memory get a row.
{% from "templates/memory.sql" import call_bytes, memory_bytes %}
{% from "templates/launch_owner.sql" import external_owners %}
{%- set in_ids = "trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id)" %}
INSERT INTO derived_call_totals
WITH calls AS (
    SELECT trace_id, event_id, pid, ts_ns, end_ns,
           -- the thread, one key for the ASOF joins (no thread: no device time)
           CASE WHEN pid IS NOT NULL AND tid IS NOT NULL THEN hash(pid, tid) END AS th
    FROM (SELECT trace_id, event_id, pid, tid, ts_ns, end_ns FROM cpu_ops
          UNION ALL
          SELECT trace_id, event_id, pid, tid, ts_ns, end_ns FROM user_annotations
          UNION ALL
          SELECT trace_id, event_id, pid, tid, ts_ns, end_ns FROM python_functions
          UNION ALL
          SELECT trace_id, event_id, pid, tid, ts_ns, end_ns FROM runtime)
    WHERE {{ in_ids }} AND ts_ns IS NOT NULL AND end_ns IS NOT NULL
),
ext_owner AS (
    {{ external_owners('derived_launches', in_ids) | indent(4) }}
),
owner AS (  -- the device time each host call launched itself; a device event's launch call is the
           -- one derived_launches links it to (one per event, even when runtime calls share a correlation)
    SELECT trace_id, owner_id AS event_id, sum(dur_ns) AS dev_ns
    FROM (SELECT r.trace_id, l.dur_ns,
                 coalesce(x.owner_id,
                          CASE WHEN r.parent_event_id = r.op_event_id OR a.event_id IS NOT NULL THEN r.parent_event_id
                               ELSE r.op_event_id END) AS owner_id
          FROM (SELECT * FROM derived_launches WHERE {{ in_ids }}) l
          JOIN (SELECT * FROM runtime WHERE {{ in_ids }}) r ON r.trace_id = l.trace_id AND r.event_id = l.launch_event_id
          LEFT JOIN user_annotations a ON a.trace_id = r.trace_id AND a.event_id = r.parent_event_id
          LEFT JOIN ext_owner x ON x.trace_id = l.trace_id AND x.launch_event_id = l.launch_event_id
          WHERE l.dur_ns IS NOT NULL)
    WHERE owner_id IS NOT NULL
    GROUP BY trace_id, owner_id
),
dev_cum AS (  -- per thread, launched device time cumulated by the launching call's start; ts1: the start before
              -- (NULL: none), cum1: the time cumulated there
    SELECT c.trace_id, c.th, c.ts_ns,
           sum(sum(o.dev_ns)) OVER w AS cum,
           lag(c.ts_ns) OVER (PARTITION BY c.trace_id, c.th ORDER BY c.ts_ns) AS ts1,
           CASE WHEN ts1 IS NOT NULL THEN cum - sum(o.dev_ns) END AS cum1
    FROM owner o
    JOIN calls c ON c.trace_id = o.trace_id AND c.event_id = o.event_id
    GROUP BY c.trace_id, c.th, c.ts_ns
    WINDOW w AS (PARTITION BY c.trace_id, c.th ORDER BY c.ts_ns ROWS UNBOUNDED PRECEDING)
),
dev_hi AS (  -- the time cumulated at the call's end (at the last start before it), for the calls with some start
             -- in [start, end) (for the others the last start before the end is the last before the start:
             -- nothing in between), or that end before they start; at_ts1: the last start before the call's
             -- start is ts1, whose time is known
    SELECT c.trace_id, c.event_id, c.th, c.ts_ns, dh.cum, dh.cum1,
           c.end_ns >= c.ts_ns AND (dh.ts1 IS NULL OR dh.ts1 < c.ts_ns) AS at_ts1
    FROM calls c
    ASOF JOIN dev_cum dh ON dh.trace_id = c.trace_id AND dh.th = c.th AND c.end_ns > dh.ts_ns
    WHERE dh.ts_ns >= c.ts_ns OR c.end_ns < c.ts_ns
),
dev AS (  -- minus the time cumulated at its start: at ts1, or looked up (a call with several starts inside)
    SELECT trace_id, event_id, cum - coalesce(lo, 0) AS device_ns
    FROM (SELECT trace_id, event_id, cum, cum1 AS lo FROM dev_hi WHERE at_ts1
          UNION ALL
          SELECT c.trace_id, c.event_id, c.cum, dl.cum
          FROM (SELECT * FROM dev_hi WHERE NOT at_ts1) c
          ASOF LEFT JOIN dev_cum dl ON dl.trace_id = c.trace_id AND dl.th = c.th AND c.ts_ns > dl.ts_ns)
    WHERE cum IS DISTINCT FROM lo
),
mem_raw AS (
    SELECT trace_id, pid, ts_ns, {{ memory_bytes() }}
    FROM memory_events
    WHERE {{ in_ids }} AND bytes IS NOT NULL
),
mem AS (
    {{ call_bytes('calls', 'mem_raw', keys=['event_id']) | indent(4) }}
)
SELECT trace_id, event_id, coalesce(d.device_ns, 0)::BIGINT AS device_ns,
       coalesce(m.cpu_mem, 0)::BIGINT AS cpu_mem_bytes, coalesce(m.dev_mem, 0)::BIGINT AS device_mem_bytes
FROM dev d
FULL JOIN mem m USING (trace_id, event_id);
