-- gpu_activity: the device activity the GPU-time reports measure (idle, gpu-time,
-- queue, temporal): every gpu_ops row (kernels, memcpys, memsets, MTIA device
-- events) with the start of the host call that launched it and a work class.
--
-- Also a table macro of the same name,
-- gpu_activity(exclude_last_step := false, round_to_us := false).
-- round_to_us := true rounds times like HTA does when a trace has fractional
-- µs timestamps (round_down_time_stamps): start up and end down to whole µs
-- (a sub-µs event can then end before it starts). It exists to reproduce HTA's
-- numbers; it changes nothing on traces with whole-µs timestamps.
-- With exclude_last_step := true it keeps only what HTA keeps by default
-- (TraceAnalysis include_last_profiler_step=False): in a trace with at least two
-- ProfilerStep#N host annotations, only device activity whose launch call started
-- before the start of the last ProfilerStep (device activity with no launch call
-- in the trace is dropped too). Traces with fewer than two steps are kept whole.
-- Difference from HTA: HTA takes the last step start over every non-device event
-- named ProfilerStep, including gpu_user_annotation events on the GPU timeline;
-- we use the host-side annotations only (the steps view).
--
-- The launch call is the runtime/driver call (runtime view) with the same
-- correlation: any such call, so cudaLaunchKernel(ExC), cuLaunchKernel(Ex),
-- cudaGraphLaunch, cudaMemcpyAsync, cudaMemsetAsync, synchronous cudaMemcpy,
-- hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyAsync, MTIA enqueueCommand ...
--
-- requires: gpu_ops, runtime, steps
--
-- Columns:
-- trace_id         INTEGER  trace
-- event_id         BIGINT   gpu_ops.event_id
-- kind             VARCHAR  'kernel', 'memcpy' or 'memset' (gpu_ops.kind)
-- name             VARCHAR  kernel name or memcpy/memset kind
-- device           INTEGER  GPU index
-- stream           BIGINT   CUDA/HIP stream
-- ts_ns            BIGINT   start, ns since the epoch
-- dur_ns           BIGINT   duration, ns
-- end_ns           BIGINT   ts_ns + dur_ns
-- correlation      BIGINT   links to the launch call
-- work_class       VARCHAR  'communication' (kernel named nccl* / rccl*, e.g. ncclDevKernel_AllReduce...),
--                           'memory' (memcpy, memset, and device events named Memcpy* /
--                           Memset* / dma* like MTIA's dma_request: HTA's MEMORY rule),
--                           else 'compute'
-- launch_event_id  BIGINT   runtime.event_id of the launch call (NULL: not in the trace)
-- launch_name      VARCHAR  e.g. 'cudaLaunchKernel'
-- launch_ts_ns     BIGINT   when the launch call started, ns since the epoch
CREATE OR REPLACE MACRO gpu_activity(exclude_last_step := false, round_to_us := false) AS TABLE
WITH rt AS (
    SELECT trace_id, correlation,
           min(CASE WHEN round_to_us THEN (ts_ns + 999) // 1000 * 1000 ELSE ts_ns END) AS launch_ts_ns,
           arg_min(event_id, ts_ns) AS launch_event_id, arg_min(name, ts_ns) AS launch_name
    FROM runtime
    WHERE correlation IS NOT NULL
    GROUP BY trace_id, correlation
),
last_step AS (
    SELECT trace_id,
           max(CASE WHEN round_to_us THEN (ts_ns + 999) // 1000 * 1000 ELSE ts_ns END) AS last_step_ts_ns
    FROM steps
    WHERE exclude_last_step
    GROUP BY trace_id
    HAVING count(DISTINCT step) >= 2
),
g AS (
    SELECT trace_id, event_id, kind, name, device, stream,
           CASE WHEN round_to_us THEN (ts_ns + 999) // 1000 * 1000 ELSE ts_ns END AS ts_ns,
           CASE WHEN round_to_us THEN end_ns // 1000 * 1000 ELSE end_ns END AS end_ns,
           correlation
    FROM gpu_ops
    WHERE dur_ns IS NOT NULL
)
SELECT g.trace_id, g.event_id, g.kind, g.name, g.device, g.stream,
       g.ts_ns, g.end_ns - g.ts_ns AS dur_ns, g.end_ns, g.correlation,
       CASE WHEN g.kind IN ('memcpy', 'memset') OR g.name LIKE 'Memcpy%' OR g.name LIKE 'Memset%'
                 OR g.name LIKE 'dma%' THEN 'memory'
            WHEN g.kind = 'kernel' AND (g.name ILIKE 'nccl%' OR g.name ILIKE 'rccl%') THEN 'communication'
            ELSE 'compute' END AS work_class,
       r.launch_event_id, r.launch_name, r.launch_ts_ns
FROM g
LEFT JOIN rt r ON r.trace_id = g.trace_id AND r.correlation = g.correlation
LEFT JOIN last_step s ON s.trace_id = g.trace_id
WHERE s.last_step_ts_ns IS NULL OR r.launch_ts_ns < s.last_step_ts_ns;

CREATE OR REPLACE VIEW gpu_activity AS SELECT * FROM gpu_activity();
