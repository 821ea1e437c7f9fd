-- queue: how deep each stream's GPU queue was (queue_depth view: a device event
-- is queued from the start of its launch call until it ends), per stream.
-- question: How much work was queued on each GPU stream, and for how long?
--
-- Depth statistics are time-weighted over the stream's GPU window (gpu_windows:
-- from its first device event's start to its last one's end, as gpu-time and
-- temporal): mean_depth = time-average; p50/p95 = the smallest depth the queue
-- stays at or below for 50% / 95% of that time; time_at_max = how long the
-- queue held max_depth. Device events whose launch call is not in the trace
-- are in the window but not in the queue (device_unlaunched, and a note); a
-- stream none of whose events is queued has no row (a note names a device that
-- has none).
-- mean_pending, p50_pending and max_pending are HTA's queue length statistics
-- (get_queue_length_summary): launched-but-not-started events, described over
-- the change points (each launch and each start), unweighted by time, p50
-- linearly interpolated. With --hta they are HTA's numbers exactly: its launch
-- calls only (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, ...: see
-- queue_depth), its times and its last-step cut.
--
-- uses: device, gpu_window
-- option: --buckets/-b INTEGER >= 0 = 0  queue depth over time instead: N equal time buckets per stream (sql/reports/queue_buckets.sql)
-- requires: queue_depth, gpu_windows, trace_files, launches
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- device           INTEGER  GPU index
-- stream           BIGINT   stream
-- launches         BIGINT   device events with a launch call (the events counted)
-- window_us        DOUBLE   the stream's GPU window: first device event start to last end, µs
-- mean_depth       DOUBLE   time-weighted mean queue depth
-- p50_depth        BIGINT   time-weighted median depth
-- p95_depth        BIGINT   time-weighted 95th percentile depth
-- max_depth        BIGINT   maximum depth
-- time_at_max_us   DOUBLE   total time at max_depth, µs
-- time_at_max_pct  DOUBLE  [wide]  time_at_max_us / window_us, %
-- mean_pending     DOUBLE   mean number launched but not yet started, over change points (HTA's mean)
-- p50_pending      DOUBLE  [wide]  their median (HTA's 50%)
-- max_pending      BIGINT   maximum number launched but not yet started (HTA's max)
-- device_events      BIGINT  [wide]  device events in the GPU windows of the device's streams (all of them,
--                                    listed or not)
-- device_unlaunched  BIGINT  [wide]  of those, events whose launch call is not in the trace: not in the queue
--                                    (a note says how many)
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
WITH q AS (
    SELECT trace_id, device, stream, ts_ns, change, queue_depth, pending, dur_ns
    FROM queue_depth(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE TRUE {{ scope() }}
),
w AS (
    SELECT trace_id, device, stream, start_ns, end_ns, window_ns,
           sum(events) OVER (PARTITION BY trace_id, device) AS device_events,
           sum(unlaunched) OVER (PARTITION BY trace_id, device) AS device_unlaunched
    FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE scope = 'stream' {{ scope() }}
),
clipped AS (  -- each state's time inside the window (the last change leaves depth 0)
    SELECT q.*, greatest(least(q.ts_ns + coalesce(q.dur_ns, 0), w.end_ns) - greatest(q.ts_ns, w.start_ns), 0) AS in_ns
    FROM q JOIN w USING (trace_id, device, stream)
),
per_depth AS (  -- time at each depth; the queue is empty for the rest of the window
    SELECT trace_id, device, stream, queue_depth, sum(t_ns) AS t_ns
    FROM (SELECT trace_id, device, stream, queue_depth, in_ns AS t_ns FROM clipped WHERE in_ns > 0
          UNION ALL
          SELECT w.trace_id, w.device, w.stream, 0, w.window_ns - sum(c.in_ns)
          FROM w JOIN clipped c USING (trace_id, device, stream)
          GROUP BY w.trace_id, w.device, w.stream, w.window_ns
          HAVING w.window_ns > sum(c.in_ns))
    GROUP BY trace_id, device, stream, queue_depth
),
cum AS (
    SELECT *, sum(t_ns) OVER (PARTITION BY trace_id, device, stream ORDER BY queue_depth
                              ROWS UNBOUNDED PRECEDING) AS cum_ns,
           sum(t_ns) OVER (PARTITION BY trace_id, device, stream) AS total_ns
    FROM per_depth
),
pct AS (
    SELECT trace_id, device, stream,
           min(queue_depth) FILTER (WHERE cum_ns >= 0.5 * total_ns) AS p50_depth,
           min(queue_depth) FILTER (WHERE cum_ns >= 0.95 * total_ns) AS p95_depth,
           max(queue_depth) AS max_depth,
           arg_max(t_ns, queue_depth) AS time_at_max_ns,
           sum(t_ns * queue_depth) / nullif(sum(t_ns), 0) AS mean_depth
    FROM cum GROUP BY trace_id, device, stream
),
s AS (
    SELECT trace_id, device, stream,
           count(*) FILTER (WHERE change = 'launch') AS launches,
           avg(pending) FILTER (WHERE change <> 'end') AS mean_pending,
           quantile_cont(pending, 0.5) FILTER (WHERE change <> 'end') AS p50_pending,
           max(pending) AS max_pending
    FROM q GROUP BY trace_id, device, stream
)
SELECT tr.run, tr.rank, s.trace_id, s.device, s.stream, s.launches, w.window_ns / 1e3 AS window_us,
       p.mean_depth, p.p50_depth, p.p95_depth, p.max_depth,
       p.time_at_max_ns / 1e3 AS time_at_max_us,
       100.0 * p.time_at_max_ns / nullif(w.window_ns, 0) AS time_at_max_pct,
       s.mean_pending, s.p50_pending, s.max_pending,
       w.device_events::BIGINT AS device_events, w.device_unlaunched::BIGINT AS device_unlaunched
FROM s
JOIN w USING (trace_id, device, stream)
LEFT JOIN pct p USING (trace_id, device, stream)
JOIN trace_files tr USING (trace_id)
ORDER BY tr.run, tr.rank NULLS LAST, s.trace_id, s.device, s.stream

-- @notes
{{ gpu_notes(need_launches=true, unlaunched=true, rows=result,
             windows='(SELECT trace_id, device, any_value(device_events) AS events, '
                     ~ 'any_value(device_unlaunched) AS unlaunched FROM ' ~ result ~ ' GROUP BY trace_id, device)') }}
