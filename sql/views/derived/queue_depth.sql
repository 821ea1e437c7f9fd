-- queue_depth: the GPU queue as a time series, one row per change, per stream.
-- A device event enters its stream's queue when its launch call starts (+1) and
-- leaves when it ends (-1) (gpu_activity: launch and device event matched on
-- correlation; events with no launch call in the trace are not counted).
-- queue_depth is the number of launched, unfinished events (queued or running).
-- pending is the number of launched events that have not started yet (+1 at the
-- launch call, -1 at the event's start): what HTA calls queue length and what
-- torch's BasicEvaluation calls queue depth.
-- Changes at the same time are applied ends first, then starts, then launches.
-- Each row's state lasts dur_ns, until the next change on the same stream.
--
-- Also a table macro of the same name, queue_depth(exclude_last_step := false,
-- hta := false, per_device := false) (exclude_last_step and hta as in
-- gpu_activity). With per_device := true the series is per device (all streams
-- together; stream is NULL), as BasicEvaluation's queue depth is. With hta := true
-- it is HTA's queue length series (TraceCounters): only events launched by a
-- call HTA counts (cudaLaunchKernel(ExC), cuLaunchKernel, cudaMemcpyAsync,
-- cudaMemsetAsync, MTIA's runFunction - job_prep_and_submit_for_execution,
-- hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyAsync, hipMemsetAsync,
-- hipMemcpyWithStream) whose own link is not the trace's first event
-- (index_correlation > 0), and HTA's pending (queue_length) orders a launch and
-- a start at the same time as HTA's sort of its rows does: the launch first.
--
-- requires: gpu_activity
--
-- Columns:
-- trace_id     INTEGER  trace
-- device       INTEGER  GPU index
-- stream       BIGINT   stream (NULL with per_device := true)
-- seq          BIGINT   1, 2, ... : order of the changes within the series
-- ts_ns        BIGINT   time of the change, ns since the epoch
-- change       VARCHAR  'launch' (launch call starts), 'start' (event starts), 'end' (event ends)
-- event_id     BIGINT   gpu_activity.event_id of the device event
-- queue_depth  BIGINT   launched and not yet finished, after this change
-- pending      BIGINT   launched and not yet started, after this change
-- dur_ns       BIGINT   time until the next change (NULL for the last change, which leaves depth 0)
CREATE OR REPLACE MACRO queue_depth(exclude_last_step := false, hta := false, per_device := false) AS TABLE
WITH a AS (
    SELECT trace_id, device, CASE WHEN per_device THEN NULL ELSE stream END AS stream,
           event_id, launch_ts_ns, ts_ns, end_ns
    FROM gpu_activity(exclude_last_step := exclude_last_step, hta := hta)
    WHERE launch_ts_ns IS NOT NULL
      AND (NOT hta OR (event_id > 1 AND launch_name IN (
          'cudaLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernel', 'cudaMemcpyAsync', 'cudaMemsetAsync',
          'runFunction - job_prep_and_submit_for_execution', 'hipLaunchKernel', 'hipExtModuleLaunchKernel',
          'hipMemsetAsync', 'hipMemcpyAsync', 'hipMemcpyWithStream')))
),
changes AS (  -- ord: the order of changes at the same time (end 0, HTA's launch 1, start 2, launch 3),
              -- and all a change carries: its kind and steps follow from it (a narrower sort)
    SELECT trace_id, device, stream, launch_ts_ns AS ts_ns, (CASE WHEN hta THEN 1 ELSE 3 END)::UTINYINT AS ord, event_id FROM a
    UNION ALL
    SELECT trace_id, device, stream, ts_ns, 2::UTINYINT, event_id FROM a
    UNION ALL
    SELECT trace_id, device, stream, end_ns, 0::UTINYINT, event_id FROM a
)
SELECT trace_id, device, stream, row_number() OVER w AS seq, ts_ns,
       CASE ord WHEN 0 THEN 'end' WHEN 2 THEN 'start' ELSE 'launch' END AS change, event_id,
       (sum(CASE ord WHEN 0 THEN -1 WHEN 2 THEN 0 ELSE 1 END) OVER w)::BIGINT AS queue_depth,
       (sum(CASE ord WHEN 0 THEN 0 WHEN 2 THEN -1 ELSE 1 END) OVER w)::BIGINT AS pending,
       lead(ts_ns) OVER w - ts_ns AS dur_ns
FROM changes
WINDOW w AS (PARTITION BY trace_id, device, stream ORDER BY ts_ns, ord, event_id
             ROWS UNBOUNDED PRECEDING);

CREATE OR REPLACE VIEW queue_depth AS SELECT * FROM queue_depth();
