-- temporal: where each GPU's time goes, per rank (trace) and device: idle,
-- compute, and non-compute (communication, memory). HTA get_temporal_breakdown.
--
-- Window (HTA kernel_time) = from the first device event's start to the last
-- one's end. idle = window minus the union of all device events (kernels,
-- memcpys, memsets, all streams: what gpu_busy_intervals merges, computed here
-- in one pass); compute = union of compute kernels;
-- non_compute = busy time when no compute kernel runs = communication (NCCL/RCCL
-- kernels running, no compute) + memory (only memcpy/memset running).
-- Work classes: gpu_activity.work_class.
-- Differences from HTA: HTA also counts cuda_sync events (Event/Context/Stream
-- Sync) and any other event that has a stream arg as GPU time (as non-compute
-- and compute respectively); we count kernels, memcpys and memsets only.
--
-- Parameters: exclude_last_step, round_to_us (BOOLEAN, see gpu_activity), run (when by_run), device (when by_device).
--
-- run                  VARCHAR  run label
-- rank                 INTEGER  rank of the trace
-- trace_id             INTEGER  trace
-- device               INTEGER  GPU index
-- window_us            DOUBLE   first device event start to last end, µs (HTA kernel_time)
-- idle_us              DOUBLE   no device event running, µs
-- compute_us           DOUBLE   some compute kernel running, µs
-- non_compute_us       DOUBLE   busy but no compute kernel, µs (= communication_us + memory_us)
-- communication_us     DOUBLE   a communication kernel but no compute kernel running, µs
-- memory_us            DOUBLE   only memcpy/memset running, µs
-- idle_pct, compute_pct, non_compute_pct  DOUBLE  share of window_us, %
WITH a AS (
    SELECT trace_id, device, event_id, ts_ns, end_ns, work_class
    FROM gpu_activity(exclude_last_step := $exclude_last_step, round_to_us := $round_to_us)
    {%- if by_run %}
    WHERE trace_id IN (SELECT trace_id FROM traces WHERE run = $run)
    {%- endif %}
),
-- Union lengths in one pass: in start order, an event that starts after every
-- earlier event of the same set has ended opens a merged interval and adds its
-- length; any other event adds the part of it that ends after all earlier ones.
-- That is HTA's merge_kernel_intervals (sum of group max end - group start),
-- summed without materialising the groups; with round_to_us a sub-µs event can
-- open a group of negative length, as in HTA.
-- Three sets: all events, compute, compute + communication.
prev AS (
    SELECT *,
           max(end_ns) OVER w AS prev_all,
           max(end_ns) FILTER (WHERE work_class = 'compute') OVER w AS prev_compute,
           max(end_ns) FILTER (WHERE work_class IN ('compute', 'communication')) OVER w AS prev_cc
    FROM a
    WINDOW w AS (PARTITION BY trace_id, device ORDER BY ts_ns, end_ns, event_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
t AS (
    SELECT trace_id, device,
           max(end_ns) - min(ts_ns) AS window_ns,
           sum(CASE WHEN prev_all IS NULL OR ts_ns > prev_all THEN end_ns - ts_ns ELSE greatest(end_ns - prev_all, 0) END) AS busy_ns,
           coalesce(sum(CASE WHEN prev_compute IS NULL OR ts_ns > prev_compute THEN end_ns - ts_ns ELSE greatest(end_ns - prev_compute, 0) END)
                        FILTER (WHERE work_class = 'compute'), 0) AS compute_ns,
           coalesce(sum(CASE WHEN prev_cc IS NULL OR ts_ns > prev_cc THEN end_ns - ts_ns ELSE greatest(end_ns - prev_cc, 0) END)
                        FILTER (WHERE work_class IN ('compute', 'communication')), 0) AS cc_ns
    FROM prev
    GROUP BY trace_id, device
)
SELECT tr.run, tr.rank, t.trace_id, t.device,
       t.window_ns / 1e3 AS window_us,
       (t.window_ns - t.busy_ns) / 1e3 AS idle_us,
       t.compute_ns / 1e3 AS compute_us,
       (t.busy_ns - t.compute_ns) / 1e3 AS non_compute_us,
       (t.cc_ns - t.compute_ns) / 1e3 AS communication_us,
       (t.busy_ns - t.cc_ns) / 1e3 AS memory_us,
       100.0 * (t.window_ns - t.busy_ns) / nullif(t.window_ns, 0) AS idle_pct,
       100.0 * t.compute_ns / nullif(t.window_ns, 0) AS compute_pct,
       100.0 * (t.busy_ns - t.compute_ns) / nullif(t.window_ns, 0) AS non_compute_pct
FROM t
JOIN traces tr USING (trace_id)
WHERE TRUE
{%- if by_run %} AND tr.run = $run{% endif %}
{%- if by_device %} AND t.device = $device{% endif %}
ORDER BY tr.run, tr.rank NULLS LAST, t.trace_id, t.device
