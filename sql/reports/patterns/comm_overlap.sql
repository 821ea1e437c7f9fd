-- comm-overlap: communication kernels (NCCL, RCCL collectives) that run while
-- no compute kernel runs on their GPU.
--
-- Why it matters: exposed communication adds to the step time one for one;
-- overlapped with compute (backward's gradient buckets, prefetched FSDP
-- all-gathers) it is nearly free.
-- How to fix: let DDP/FSDP overlap (bucket_cap_mb, gradient_as_bucket_view,
-- FSDP backward_prefetch / forward_prefetch), avoid syncs between backward and
-- the optimizer, compute while waiting (async_op=True + work.wait() later).
-- The trace must contain: GPU activity with communication kernels (named
-- nccl* / rccl*: gpu_activity.work_class).
--
-- Matching: each communication kernel whose time not covered by the union of
-- the device's compute kernels (gpu_activity work_class 'compute', all
-- streams) is at least --comm-exposed-pct % of its duration.
-- Time at stake: that exposed time.
--
-- severity: medium
-- fix: overlap communication with compute (DDP buckets, FSDP prefetch, async collectives waited on later)
-- method: the communication kernels' time not covered by compute kernels on their GPU
-- needs: gpu
-- option: --comm-exposed-pct DOUBLE >= 0 = 50  comm-overlap: share of a collective's time with no compute beside it, %
-- shared: launched
-- requires: gpu_activity, host_events, trace_files, gpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the communication kernel
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   its time with no compute kernel running on its device, ns
-- detail       VARCHAR  e.g. '92% exposed on device 0'
-- pid          BIGINT   host process of its launch call
-- tid          BIGINT   its thread
-- host_ts_ns   BIGINT   when the launch call started (the kernel's start when it is not in the trace)
-- op_event_id  BIGINT   the host event around the launch call (its op)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, launch_calls with context %}
{% from "templates/intervals.sql" import merged_intervals, covered_length, overlaps_any %}
WITH act AS (
    SELECT * FROM gpu_activity a WHERE a.work_class IN ('communication', 'compute') {{ run_scope('a.') }}
),
comm AS (
    SELECT * FROM act WHERE work_class = 'communication'
),
comm_spans AS (  -- the stretches some communication kernel runs on each device
    {{ merged_intervals('comm', ['trace_id', 'device']) | indent(4) }}
),
near AS (  -- the compute kernels that overlap one (the others cover no communication)
    SELECT trace_id, device, ts_ns, end_ns
    FROM ({{ overlaps_any("(SELECT * FROM act WHERE work_class = 'compute')", 'comm_spans', ['trace_id', 'device'],
                          name='near') | indent(10) }})
    WHERE near
),
compute AS (  -- their union
    {{ merged_intervals('near', ['trace_id', 'device']) | indent(4) }}
),
covered AS (
    {{ covered_length('comm', 'compute', ['trace_id', 'device']) | indent(4) }}
)
SELECT c.trace_id, c.event_id, c.name, c.ts_ns, c.dur_ns, (c.dur_ns - c.covered_ns)::BIGINT AS at_stake_ns,
       round(100.0 * (c.dur_ns - c.covered_ns) / c.dur_ns)::INTEGER || '% exposed on device ' || c.device AS detail,
       c.call_pid AS pid, c.call_tid AS tid, coalesce(c.launch_ts_ns, c.ts_ns) AS host_ts_ns,
       c.call_parent_event_id AS op_event_id
FROM ({{ launch_calls('covered') }}) c
WHERE c.dur_ns > 0 AND c.dur_ns - c.covered_ns > 0
  AND 100.0 * (c.dur_ns - c.covered_ns) / c.dur_ns >= $comm_exposed_pct

-- @skipped
{{ skipped_unless(['gpu']) }}
