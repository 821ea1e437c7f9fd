-- gpu_windows: the GPU window, one definition for every report that measures
-- GPU time (gpu-time, temporal, queue, idle): per device (scope 'device') and
-- per stream (scope 'stream'), from the first device event's start to the last
-- one's end (HTA's kernel_time). Every device event counts, whether or not
-- the trace holds the call that launched it (events with none: unlaunched;
-- a serving trace can start with hundreds of kernels and memsets launched
-- before the profile began), so the queue's statistics and the idle
-- breakdown cover the same time as busy %.
--
-- Also a table macro of the same name,
-- gpu_windows(exclude_last_step := false, hta := false) (see gpu_activity).
--
-- requires: gpu_activity
--
-- Columns:
-- trace_id     INTEGER  trace
-- device       INTEGER  GPU index
-- scope        VARCHAR  'device' (all streams of the device) or 'stream'
-- stream       BIGINT   the stream (scope 'stream'); NULL for scope 'device'
-- start_ns     BIGINT   first device event's start, ns since the epoch
-- end_ns       BIGINT   last device event's end, ns since the epoch
-- window_ns    BIGINT   end_ns - start_ns
-- events       BIGINT   device events in the window
-- unlaunched   BIGINT   of those, events whose launch call is not in the trace
CREATE OR REPLACE MACRO gpu_windows(exclude_last_step := false, hta := false) AS TABLE
SELECT trace_id, device, CASE WHEN grouping(stream) = 1 THEN 'device' ELSE 'stream' END AS scope,
       CASE WHEN grouping(stream) = 1 THEN NULL ELSE stream END AS stream,
       min(ts_ns) AS start_ns, max(end_ns) AS end_ns, max(end_ns) - min(ts_ns) AS window_ns,
       count(*) AS events, count(*) FILTER (WHERE launch_event_id IS NULL) AS unlaunched
FROM gpu_activity(exclude_last_step := exclude_last_step, hta := hta)
GROUP BY GROUPING SETS ((trace_id, device), (trace_id, device, stream));

CREATE OR REPLACE VIEW gpu_windows AS SELECT * FROM gpu_windows();
