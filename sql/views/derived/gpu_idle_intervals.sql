-- gpu_idle_intervals: the gaps between consecutive gpu_busy_intervals, per device
-- (scope 'device': no stream of the device busy) and per stream (scope 'stream'),
-- with HTA's idle category. Only gaps inside the window are listed: from the
-- first device event's start to the last one's end (per device or per stream),
-- as in HTA's temporal and idle-time breakdowns.
-- Computed from gpu_activity in one sorted pass (in gpu_busy_intervals' order,
-- an event that starts after every earlier one ended ends a gap that began
-- where they ended), without building the busy intervals; the same rows.
--
-- Category (HTA get_idle_time_breakdown, consecutive_kernel_delay):
--   host_wait    the launch call of the event that ends the gap started after
--                the gap began: the CPU was late
--   kernel_wait  otherwise, a gap shorter than kernel_wait_ns (default 30 µs):
--                launch overhead between back-to-back kernels
--   other        everything else (long gaps the host is not to blame for, or
--                the next event has no launch call in the trace)
-- Differences from HTA: HTA takes the gap between each event and the previous
-- event on the stream (negative when they overlap, and then subtracted from
-- kernel_wait); we take the gaps of the merged busy intervals, never negative.
-- With hta := true the stream rows are HTA's own (get_idle_time_breakdown): its
-- events of the categories kernel, gpu_memcpy, gpu_memset, mtia_ccp_events
-- (old spellings too; not its sync events) on the stream in start order, one
-- row per event but the first: the gap from the previous event's end to its
-- start (zero or negative when they touch or overlap), host_wait when its
-- ts_runtime (gpu_activity(hta := true).launch_ts_ns) is after the previous end.
-- The device rows stay gaps of merged busy intervals.
--
-- Also a table macro of the same name,
-- gpu_idle_intervals(exclude_last_step := false, hta := false, kernel_wait_ns := 30000)
-- (exclude_last_step and hta as in gpu_activity).
--
-- requires: gpu_activity
--
-- Columns:
-- trace_id           INTEGER  trace
-- device             INTEGER  GPU index
-- scope              VARCHAR  'device' or 'stream'
-- stream             BIGINT   the stream (scope 'stream'); NULL for scope 'device'
-- start_ns           BIGINT   gap start = end of the previous busy interval, ns since the epoch
-- end_ns             BIGINT   gap end = start of the next busy interval
-- dur_ns             BIGINT   end_ns - start_ns (> 0; with hta, stream rows: any, as HTA's idle_interval)
-- next_event_id      BIGINT   gpu_activity.event_id of the event that ends the gap
-- next_launch_ts_ns  BIGINT   when that event's launch call started (NULL if not in the trace)
-- host_wait          BOOLEAN  next_launch_ts_ns > start_ns
-- category           VARCHAR  'host_wait', 'kernel_wait' or 'other'
{% from "templates/intervals.sql" import merged_intervals %}
CREATE OR REPLACE MACRO gpu_idle_intervals(exclude_last_step := false, hta := false, kernel_wait_ns := 30000) AS TABLE
WITH a AS (
    SELECT trace_id, device, stream, event_id, ts_ns, end_ns, launch_ts_ns
    FROM gpu_activity(exclude_last_step := exclude_last_step, hta := hta)
),
both_scopes AS (  -- with hta, the stream rows are hta_gaps
    SELECT trace_id, device, 'device' AS scope, NULL::BIGINT AS stream, event_id, ts_ns, end_ns, launch_ts_ns FROM a
    UNION ALL
    SELECT trace_id, device, 'stream' AS scope, stream, event_id, ts_ns, end_ns, launch_ts_ns FROM a WHERE NOT hta
),
backward AS (  -- partitions with an event that ends before it starts (see gaps)
    SELECT DISTINCT trace_id, device, scope, stream FROM both_scopes WHERE end_ns < ts_ns
),
gaps AS (
    -- In gpu_busy_intervals' order, an event that starts after every earlier
    -- one ended (ended_ns) opens a busy interval: the gap before it runs from
    -- ended_ns, the end of the previous busy interval, to its start. One
    -- sorted pass, no busy intervals built.
    SELECT trace_id, device, scope, stream, ended_ns AS start_ns, ts_ns AS end_ns,
           event_id AS next_event_id, launch_ts_ns AS next_launch_ts_ns
    FROM (
        SELECT *, max(end_ns) OVER (PARTITION BY trace_id, device, scope, stream
                                    ORDER BY ts_ns, launch_ts_ns NULLS LAST, event_id
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ended_ns
        FROM both_scopes
    ) o
    WHERE ts_ns > ended_ns
      AND NOT EXISTS (SELECT 1 FROM backward b
                      WHERE b.trace_id = o.trace_id AND b.device = o.device AND b.scope = o.scope
                        AND b.stream IS NOT DISTINCT FROM o.stream)
    UNION ALL
    -- ended_ns is the previous busy interval's end unless all of that
    -- interval's events end before they start (each after ended_ns): in a
    -- partition with such events, the gaps between gpu_busy_intervals' rows
    SELECT trace_id, device, scope, stream,
           lag(end_ns) OVER (PARTITION BY trace_id, device, scope, stream ORDER BY interval_no) AS start_ns,
           start_ns AS end_ns, first_event_id AS next_event_id, first_launch_ts_ns AS next_launch_ts_ns
    FROM ({{ merged_intervals('(SELECT x.* FROM both_scopes x SEMI JOIN backward b ON b.trace_id = x.trace_id AND b.device = x.device '
                              'AND b.scope = x.scope AND b.stream IS NOT DISTINCT FROM x.stream)',
                              ['trace_id', 'device', 'scope', 'stream'],
                              order=['launch_ts_ns NULLS LAST', 'event_id'],
                              firsts={'first_event_id': 'event_id', 'first_launch_ts_ns': 'launch_ts_ns'}) | indent(10) }})
),
hta_gaps AS (  -- HTA's idle-time breakdown: every event's gap to the previous one on its stream
    SELECT trace_id, device, 'stream' AS scope, stream,
           lag(end_ns) OVER (PARTITION BY trace_id, device, stream ORDER BY ts_ns, event_id) AS start_ns,
           ts_ns AS end_ns, event_id AS next_event_id, launch_ts_ns AS next_launch_ts_ns
    FROM gpu_activity(hta := hta)
    WHERE hta AND kind IN ('kernel', 'memcpy', 'memset')
),
all_gaps AS (
    SELECT * FROM gaps
    UNION ALL
    SELECT * FROM hta_gaps
)
SELECT trace_id, device, scope, stream, start_ns, end_ns, end_ns - start_ns AS dur_ns,
       next_event_id, next_launch_ts_ns,
       coalesce(next_launch_ts_ns > start_ns, false) AS host_wait,
       CASE WHEN next_launch_ts_ns > start_ns THEN 'host_wait'
            WHEN end_ns - start_ns < kernel_wait_ns THEN 'kernel_wait'
            ELSE 'other' END AS category
FROM all_gaps
WHERE start_ns IS NOT NULL;

CREATE OR REPLACE VIEW gpu_idle_intervals AS SELECT * FROM gpu_idle_intervals();
