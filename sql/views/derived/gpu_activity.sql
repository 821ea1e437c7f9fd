-- gpu_activity: the device activity the GPU-time reports measure (idle, gpu-time,
-- queue, temporal): every gpu_ops row (kernels, memcpys, memsets, MTIA device
-- events) with the start of the host call that launched it and a work class.
--
-- Also a table macro of the same name,
-- gpu_activity(exclude_last_step := false, hta := false).
-- With exclude_last_step := true it keeps what HTA keeps by default
-- (TraceAnalysis include_last_profiler_step=False), the way duckprof reads a
-- trace: in a trace with at least two ProfilerStep#N host annotations, only
-- device activity whose launch call started before the start of the last
-- ProfilerStep (device activity with no launch call in the trace is dropped
-- too). Traces with fewer than two steps are kept whole.
-- With hta := true the rows are HTA's own GPU events (hta_events: every event
-- with a stream arg, so also cuda_sync events and a cpu_op that records a
-- stream), with HTA's times (whole µs when the trace's ts are fractional,
-- end = floor of the float64 ts + dur), HTA's last-step cut (also when a
-- GPU-side annotation holds the last ProfilerStep) and HTA's launch link
-- (index_correlation; launch_ts_ns is its ts_runtime); work_class follows HTA's
-- kernel type, with 'other' for its OTHER events (Event/Stream/Context Sync).
-- exclude_last_step is then implied. It exists to reproduce HTA's numbers.
--
-- The launch call is the runtime/driver call (runtime view) with the same
-- correlation: any such call, so cudaLaunchKernel(ExC), cuLaunchKernel(Ex),
-- cudaGraphLaunch, cudaMemcpyAsync, cudaMemsetAsync, synchronous cudaMemcpy,
-- hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyAsync, MTIA enqueueCommand ...
-- Of several, the first (the earliest; of calls that start together, the first
-- in the file). Without hta the rows and their launch calls are the launches
-- view's (stored at load), not joined again here.
--
-- requires: launches, gpu_ops, runtime, steps, hta_events
--
-- Columns:
-- trace_id         INTEGER  trace
-- event_id         BIGINT   gpu_ops.event_id
-- kind             VARCHAR  'kernel', 'memcpy' or 'memset' (gpu_ops.kind); with hta also the category of
--                           HTA's other GPU events ('cuda_sync', 'cpu_op')
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
--                           'other' (only with hta: HTA's OTHER kernel type, the sync events),
--                           else 'compute'
-- launch_event_id  BIGINT   runtime.event_id of the launch call (NULL: not in the trace)
-- launch_name      VARCHAR  e.g. 'cudaLaunchKernel'
-- launch_ts_ns     BIGINT   when the launch call started, ns since the epoch
{% from "templates/categories.sql" import device_cats, device_kind, sql_list %}
CREATE OR REPLACE MACRO gpu_activity(exclude_last_step := false, hta := false) AS TABLE
WITH last_step AS (
    SELECT trace_id, max(ts_ns) AS last_step_ts_ns
    FROM steps
    WHERE exclude_last_step AND NOT hta
    GROUP BY trace_id
    HAVING count(DISTINCT step) >= 2
),
ours AS (  -- the launch call as launches stores it (computed once at load)
    SELECT l.trace_id, l.event_id, l.kind, l.name, l.device, l.stream, l.ts_ns, l.dur_ns, l.end_ns, l.correlation,
           CASE WHEN l.kind IN ('memcpy', 'memset') OR l.name LIKE 'Memcpy%' OR l.name LIKE 'Memset%'
                     OR l.name LIKE 'dma%' THEN 'memory'
                WHEN l.kind = 'kernel' AND (l.name ILIKE 'nccl%' OR l.name ILIKE 'rccl%') THEN 'communication'
                ELSE 'compute' END AS work_class,
           l.launch_event_id, l.launch_name, l.launch_ts_ns
    FROM launches l
    LEFT JOIN last_step s ON s.trace_id = l.trace_id
    WHERE NOT hta AND l.dur_ns IS NOT NULL
      AND (s.last_step_ts_ns IS NULL OR l.launch_ts_ns < s.last_step_ts_ns)
),
one_device AS (  -- HTA has no devices: its other GPU events (a cpu_op's stream) join the trace's only one
    SELECT trace_id, min(device) AS device FROM gpu_ops WHERE hta GROUP BY trace_id HAVING count(DISTINCT device) = 1
),
theirs AS (
    SELECT h.trace_id, h.event_id,
           CASE WHEN h.cat IN {{ sql_list(device_cats) }} THEN {{ device_kind('h.cat', 'h.name') }} ELSE h.cat END AS kind,
           h.name, coalesce(h.device, d.device) AS device, h.stream, h.ts_ns, h.dur_ns, h.end_ns, h.correlation,
           CASE h.kernel_type WHEN 'COMPUTATION' THEN 'compute' WHEN 'COMMUNICATION' THEN 'communication'
                              WHEN 'MEMORY' THEN 'memory' ELSE 'other' END AS work_class,
           h.partner_event_id AS launch_event_id, r.name AS launch_name, h.partner_ts_ns AS launch_ts_ns
    FROM hta_events h
    LEFT JOIN one_device d USING (trace_id)
    LEFT JOIN runtime r ON r.trace_id = h.trace_id AND r.event_id = h.partner_event_id
    WHERE hta AND h.stream <> -1
)
SELECT * FROM ours
UNION ALL
SELECT * FROM theirs;

CREATE OR REPLACE VIEW gpu_activity AS SELECT * FROM gpu_activity();
