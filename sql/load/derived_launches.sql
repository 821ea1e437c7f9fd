-- The derived_launches rows of the traces in $trace_ids (INTEGER[]): the
-- launches view's rows, computed here once per trace (the view reads them).
-- How each device event is linked to its launch call and issuing op: see
-- sql/views/base/launches.sql. Every source is filtered to the traces, so the
-- filter reaches the scans of events.
INSERT INTO derived_launches
WITH rt AS (  -- the launch call: the correlation's first runtime call (the earliest; calls that start
             -- together: the first in the file), every column from that one row, as gpu_activity reads it
    SELECT trace_id, correlation, event_id, name, ts_ns, dur_ns, pid, tid, external_id, op_event_id
    FROM runtime
    WHERE correlation IS NOT NULL AND trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id)
    QUALIFY row_number() OVER (PARTITION BY trace_id, correlation ORDER BY ts_ns NULLS LAST, event_id) = 1
),
link_mode AS (
    SELECT trace_id,
           count_if(external_id = correlation) * 2 > count(external_id) AS ext_is_correlation
    FROM runtime
    WHERE correlation IS NOT NULL AND trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id)
    GROUP BY trace_id
),
ops AS NOT MATERIALIZED (  -- read twice, for the ids and for the shapes: not held in between
    SELECT trace_id, event_id, name, external_id, input_dims, input_types, concrete_inputs
    FROM cpu_ops
    WHERE trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id)
),
ops_by_ext AS (
    SELECT trace_id, external_id, max(event_id) AS event_id
    FROM ops WHERE external_id IS NOT NULL
    GROUP BY trace_id, external_id
),
linked AS (
    SELECT g.*, r.event_id AS launch_event_id, r.name AS launch_name,
           r.ts_ns AS launch_ts_ns, r.dur_ns AS launch_dur_ns, r.pid, r.tid,
           x.event_id AS ext_op_id, r.op_event_id AS enclosing_op_id
    FROM gpu_ops g
    LEFT JOIN rt r ON r.trace_id = g.trace_id AND r.correlation = g.correlation
    LEFT JOIN link_mode m ON m.trace_id = g.trace_id
    LEFT JOIN ops_by_ext x
      ON x.trace_id = g.trace_id AND NOT coalesce(m.ext_is_correlation, false)
     AND x.external_id = coalesce(r.external_id, g.external_id)
    WHERE g.kind IN ('kernel', 'memcpy', 'memset')
      AND g.trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, g.trace_id)
)
SELECT l.trace_id, l.event_id, l.kind, l.name, l.device, l.stream, l.ts_ns, l.dur_ns, l.end_ns,
       l.correlation, l.launch_event_id, l.launch_name, l.launch_ts_ns, l.launch_dur_ns,
       l.pid, l.tid,
       o.event_id AS op_event_id, o.name AS op_name, o.external_id AS op_external_id,
       CASE WHEN l.ext_op_id IS NOT NULL THEN 'external_id'
            WHEN l.enclosing_op_id IS NOT NULL THEN 'enclosing' END AS op_link,
       o.input_dims, o.input_types, o.concrete_inputs
FROM linked l
LEFT JOIN ops o ON o.trace_id = l.trace_id AND o.event_id = coalesce(l.ext_op_id, l.enclosing_op_id);
