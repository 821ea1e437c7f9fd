-- sync: calls inside the steps that make the host wait for the GPU
-- (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, a
-- synchronous cudaMemcpy, and the ops that call them: aten::item,
-- aten::_local_scalar_dense, aten::nonzero), with the GPU idle time each causes.
--
-- Why it matters: the host stops issuing work until the GPU's queue is empty;
-- when the call returns the GPU has nothing to run until the host launches
-- the next kernel, so every sync costs at least a launch latency of idle GPU,
-- and more when the host then has work of its own to do first.
-- How to fix: keep values on the GPU (no .item(), .cpu(), .tolist(), print()
-- of a CUDA tensor inside the loop; log every N steps), avoid data-dependent
-- shapes (nonzero, boolean-mask indexing: use torch.where), remove explicit
-- torch.cuda.synchronize() calls.
-- The trace must contain: GPU activity and the runtime calls (any Kineto GPU
-- trace). ProfilerStep#N annotations limit it to the steps; without them the
-- whole trace counts.
--
-- Matching: a synchronising runtime call (cudaStreamSynchronize,
-- cudaDeviceSynchronize, cudaEventSynchronize, cudaMemcpy, cuStreamSynchronize,
-- cuCtxSynchronize and their hip* twins) that starts inside a step. The match is
-- the outermost aten::item, aten::_local_scalar_dense or aten::nonzero around
-- it on its thread (several syncs inside one op are one match), else the call.
-- Time at stake: the GPU idle time the sync causes: when the (last) sync call
-- returns with no device activity running (as gpu_idle_intervals, scope
-- 'device': all streams idle), from the call's start (or the moment the GPU
-- went idle, if later) to the start of the next device activity. Several
-- devices in one trace: the largest. 0 when the GPU is busy when the call
-- returns (or nothing runs after it).
--
-- severity: medium
-- fix: keep values on the GPU inside the loop: no .item()/.cpu()/print of CUDA tensors, no nonzero or mask indexing, no synchronize()
-- method: GPU idle from the sync call's start (or the GPU going idle) until the next device work starts
-- needs: gpu
-- shared: device_idle
-- requires: host_events, steps, gpu_activity, trace_files, gpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the op (aten::item, ...) or the runtime call
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   GPU idle time it causes, ns
-- detail       VARCHAR  the sync call inside, e.g. 'cudaStreamSynchronize'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   the op, or the host event around the call (its op, for a 'Call stack')
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, device_idle with context %}
{% from "templates/intervals.sql" import enclosing %}
WITH syncs AS (
    SELECT r.trace_id, r.event_id, r.name, r.pid, r.tid, r.ts_ns, r.end_ns, r.parent_event_id AS op_event_id
    FROM host_events r
    WHERE r.name IN ('cudaStreamSynchronize', 'cudaDeviceSynchronize', 'cudaEventSynchronize', 'cudaMemcpy',
                     'cuStreamSynchronize', 'cuCtxSynchronize', 'hipStreamSynchronize', 'hipDeviceSynchronize',
                     'hipEventSynchronize', 'hipMemcpy')
      {{ run_scope('r.') }}
),
stepped AS (  -- in a step, or anywhere in a trace without steps
    SELECT s.*
    FROM syncs s
    ASOF LEFT JOIN steps st ON st.trace_id = s.trace_id AND s.ts_ns >= st.ts_ns
    WHERE s.ts_ns < st.end_ns
       OR NOT EXISTS (SELECT 1 FROM steps x WHERE x.trace_id = s.trace_id)
),
points AS (
    SELECT trace_id, pid, tid, event_id AS point_id, ts_ns, end_ns FROM stepped
),
ops AS (
    SELECT trace_id, pid, tid, event_id AS span_id, depth, ts_ns, end_ns, name, dur_ns
    FROM host_events o
    WHERE o.cat = 'cpu_op' AND name IN ('aten::item', 'aten::_local_scalar_dense', 'aten::nonzero')
      {{ run_scope('o.') }}
),
outer_op AS (  -- the outermost such op around each call
    SELECT trace_id, point_id AS event_id, arg_min(span_id, span_depth) AS op_id
    FROM ({{ enclosing('points', 'ops', ['trace_id', 'pid', 'tid']) | indent(10) }})
    GROUP BY ALL
),
matches AS (  -- one per op (its last sync call), or per call
    SELECT s.trace_id, coalesce(o.op_id, s.event_id) AS match_id, o.op_id,
           arg_max(s.name, s.ts_ns) AS sync_name, max(s.ts_ns) AS sync_ts, max(s.end_ns) AS sync_end,
           arg_max(s.op_event_id, s.ts_ns) AS call_op_id, any_value(s.pid) AS pid, any_value(s.tid) AS tid,
           min(s.ts_ns) AS first_ts, max(s.end_ns) - min(s.ts_ns) AS calls_dur
    FROM stepped s LEFT JOIN outer_op o USING (trace_id, event_id)
    GROUP BY s.trace_id, coalesce(o.op_id, s.event_id), o.op_id
),
gaps AS (  -- the device idle gaps, the one before the first activity too (start_ns NULL)
    {{ device_idle(leading=true) | indent(4) }}
),
idle AS (  -- per device, the gap the sync returns in: idle from the sync's start (or the GPU going idle) to its end
    SELECT m.trace_id, m.match_id,
           max(g.end_ns - greatest(coalesce(g.start_ns, m.sync_ts), m.sync_ts)) FILTER (WHERE m.sync_end < g.end_ns)
               AS idle_ns
    FROM (SELECT m.*, d.device FROM matches m
          JOIN (SELECT DISTINCT trace_id, device FROM gaps) d USING (trace_id)) m
    ASOF JOIN gaps g ON g.trace_id = m.trace_id AND g.device = m.device AND m.sync_end >= g.from_ns
    GROUP BY m.trace_id, m.match_id
)
SELECT m.trace_id, m.match_id AS event_id, coalesce(o.name, m.sync_name) AS name,
       coalesce(o.ts_ns, m.first_ts) AS ts_ns, coalesce(o.dur_ns, m.calls_dur) AS dur_ns,
       coalesce(i.idle_ns, 0)::BIGINT AS at_stake_ns, m.sync_name AS detail, m.pid, m.tid,
       coalesce(o.ts_ns, m.first_ts) AS host_ts_ns, coalesce(m.op_id, m.call_op_id) AS op_event_id
FROM matches m
LEFT JOIN ops o ON o.trace_id = m.trace_id AND o.span_id = m.op_id
LEFT JOIN idle i ON i.trace_id = m.trace_id AND i.match_id = m.match_id

-- @skipped
{{ skipped_unless(['gpu']) }}
