-- launches: every kernel / memcpy / memset with the runtime call that launched
-- it (joined on correlation) and the cpu_op that issued it, with the op's shapes.
--
-- The op is found by External id (the runtime call's, else the kernel's) within
-- the same trace. In some real traces (2022 Kineto, e.g. HTA's test data) the
-- runtime call's External id is just its correlation id, and a match on it
-- would be wrong (some even collide with real op ids). When most runtime calls
-- of a trace have External id = correlation, that trace links every launch
-- to the innermost cpu_op enclosing the runtime call in time on its thread
-- (runtime.op_event_id) instead; other traces fall back to that only when the
-- External id finds no op. op_link says which way each row was linked.
--
-- requires: runtime, gpu_ops, cpu_ops
--
-- Columns:
-- trace_id         INTEGER  trace
-- event_id         BIGINT   the device event (gpu_ops.event_id)
-- kind             VARCHAR  'kernel', 'memcpy', 'memset'
-- name             VARCHAR  kernel name
-- device           INTEGER  GPU index
-- stream           BIGINT   stream
-- ts_ns            BIGINT   the device event's start, ns since the epoch
-- dur_ns           BIGINT   its duration, ns
-- end_ns           BIGINT   ts_ns + dur_ns
-- correlation      BIGINT   correlation id
-- launch_event_id  BIGINT   runtime.event_id of the launch call (NULL if not in the trace)
-- launch_name      VARCHAR  e.g. 'cudaLaunchKernel'
-- launch_ts_ns     BIGINT   when the launch call started, ns since the epoch
-- launch_dur_ns    BIGINT   how long the launch call took, ns
-- pid              BIGINT   host process of the launch call
-- tid              BIGINT   host thread of the launch call
-- op_event_id      BIGINT   cpu_ops.event_id of the issuing operator (NULL if none)
-- op_name          VARCHAR  e.g. 'aten::addmm'
-- op_external_id   BIGINT   the operator's 'External id'
-- op_link          VARCHAR  'external_id', 'enclosing', or NULL (no op found)
-- input_dims       JSON     the op's 'Input Dims'
-- input_types      JSON     the op's 'Input type'
-- concrete_inputs  JSON     the op's 'Concrete Inputs'
CREATE OR REPLACE VIEW launches AS
WITH rt AS (
    SELECT trace_id, correlation, any_value(event_id) AS event_id, any_value(name) AS name,
           any_value(ts_ns) AS ts_ns, any_value(dur_ns) AS dur_ns, any_value(pid) AS pid,
           any_value(tid) AS tid, any_value(external_id) AS external_id, any_value(op_event_id) AS op_event_id
    FROM runtime
    WHERE correlation IS NOT NULL
    GROUP BY trace_id, correlation
),
link_mode AS (
    SELECT trace_id,
           count_if(external_id = correlation) * 2 > count(external_id) AS ext_is_correlation
    FROM runtime
    WHERE correlation IS NOT NULL
    GROUP BY trace_id
),
ops AS (
    SELECT trace_id, event_id, name, external_id, input_dims, input_types, concrete_inputs
    FROM cpu_ops
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
