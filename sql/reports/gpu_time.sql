-- gpu-time: how busy each GPU and each stream was, and why it was idle.
-- question: How busy was each GPU and each stream, and why was it idle?
-- One row per device (scope 'device': all streams together, overlapping work
-- counted once) and one per stream (scope 'stream').
--
-- Window: the GPU window (gpu_windows: from the first device event's start to
-- the last one's end, of the device or of the stream, as HTA). idle = the gaps
-- between the merged busy intervals (gpu_idle_intervals); busy = window - idle
-- = the union of device events (gpu_busy_intervals); split by HTA's idle
-- categories: host_wait (the next event's launch call began after the gap
-- began: the CPU was late), kernel_wait (shorter than --kernel-wait-us, default
-- 30 µs: launch overhead between back-to-back kernels), other.
-- With --hta the stream rows are HTA's idle-time breakdown exactly (its
-- events, times, last-step cut, and its per-event gaps, which are negative
-- where events on a stream overlap: gpu_idle_intervals(hta := true)); the
-- device rows and windows use HTA's GPU events (as temporal --hta).
--
-- uses: device, gpu_window
-- option: --kernel-wait-us DOUBLE >= 0 = 30  gaps shorter than this (µs) are kernel_wait (launch overhead), as HTA's consecutive_kernel_delay
-- option: --by-step FLAG  busy % per ProfilerStep instead (sql/reports/gpu_time_steps.sql)
-- option: --occupancy FLAG  est. SM efficiency and achieved occupancy of each window (TensorBoard's GPU summary)
-- option: --buckets/-b INTEGER >= 0 = 0  busy and idle over time instead: N equal time buckets per device and stream (sql/reports/gpu_time_buckets.sql)
-- requires: gpu_windows, gpu_activity, gpu_idle_intervals, trace_files, launches
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- device           INTEGER  GPU index
-- scope            VARCHAR  'device' or 'stream'
-- stream           BIGINT   the stream; NULL on the device row
-- events           BIGINT   device events (kernels, memcpys, memsets)
-- window_us        DOUBLE   first event start to last event end, µs
-- busy_us          DOUBLE   time with at least one event running, µs
-- idle_us          DOUBLE   window_us - busy_us
-- busy_pct         DOUBLE   busy_us / window_us, %
-- host_wait_us     DOUBLE   idle time the CPU was late for, µs
-- kernel_wait_us   DOUBLE   idle gaps shorter than --kernel-wait-us, µs
-- other_us         DOUBLE   other idle time, µs
-- host_wait_pct    DOUBLE  [wide]  host_wait_us / idle_us, % (HTA idle_time_ratio x 100)
-- kernel_wait_pct  DOUBLE  [wide]  kernel_wait_us / idle_us, %
-- other_pct        DOUBLE  [wide]  other_us / idle_us, %
-- tensor_cores_pct  DOUBLE  of its kernels' time, the kernels using Tensor Cores (TensorBoard's
--                           rule and newer kernels: kernel_categories.uses_tensor_cores), %; all its kernels, not only
--                           the window's (as TensorBoard's GPU summary); NULL: no kernels
-- unlaunched       BIGINT  [wide]  of the events, those whose launch call is not in the trace (a note
--                                  says how many on each device)
-- sm_efficiency_pct  DOUBLE  est. SM efficiency (only with --occupancy): the time integral of
--                            min(1, the sum of the running kernels' blocks per SM) / window_us, %,
--                            as TensorBoard's (which divides by the steps' span, not the GPU window)
-- occupancy_pct    DOUBLE   est. achieved occupancy of the window's kernels, mean weighted by
--                           duration, % (only with --occupancy)
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import capped_level_length %}
{% from "templates/numbers.sql" import weighted_mean %}
{% from "templates/categories.sql" import uses_tensor_cores %}
WITH win AS (  -- window and event count per device and per stream
    SELECT trace_id, device, scope, stream, events, unlaunched, window_ns, start_ns, end_ns
    FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta) w
    -- with --hta, as HTA's idle-time breakdown: the streams of its kernels, memcpys and
    -- memsets ($hta inside the subquery: without --hta it is planned empty, not run)
    WHERE scope = 'device' OR NOT $hta
       OR EXISTS (SELECT 1 FROM gpu_activity(hta := $hta) a
                  WHERE $hta AND a.trace_id = w.trace_id AND a.stream = w.stream
                    AND a.kind IN ('kernel', 'memcpy', 'memset'))
),
idle AS (
    SELECT trace_id, device, scope, stream,
           sum(dur_ns) FILTER (WHERE category = 'host_wait') AS host_wait_ns,
           sum(dur_ns) FILTER (WHERE category = 'kernel_wait') AS kernel_wait_ns,
           sum(dur_ns) FILTER (WHERE category = 'other') AS other_ns
    FROM gpu_idle_intervals(exclude_last_step := $exclude_last_step OR $hta, hta := $hta,
                            kernel_wait_ns := CAST(round($kernel_wait_us * 1000) AS BIGINT))
    GROUP BY trace_id, device, scope, stream
),
kernel_names AS (  -- kernel time per stream and name (launches: a stored table, no args read)
    SELECT trace_id, device, stream, name, sum(dur_ns) AS dur_ns
    FROM launches
    WHERE kind = 'kernel' AND dur_ns IS NOT NULL {{ scope() }}
    GROUP BY ALL
),
tc AS (  -- the share of the kernel time on Tensor Cores, per device and per stream (the rule on each name once)
    SELECT trace_id, device, CASE WHEN GROUPING(stream) = 1 THEN 'device' ELSE 'stream' END AS scope, stream,
           coalesce(sum(dur_ns) FILTER (WHERE tc), 0) / nullif(sum(dur_ns), 0) AS tc_frac
    FROM (SELECT *, {{ uses_tensor_cores() }} AS tc FROM kernel_names)
    GROUP BY GROUPING SETS ((trace_id, device), (trace_id, device, stream))
),
{%- if occupancy %}
kw AS (  -- the kernels of each window (0 µs ones count for nothing), clipped to it
    SELECT w.trace_id, w.device, w.scope, w.stream, k.dur_ns, k.blocks_per_sm, k.occupancy_pct,
           greatest(k.ts_ns, w.start_ns) AS s, least(k.end_ns, w.end_ns) AS e
    FROM win w
    JOIN kernels k ON k.trace_id = w.trace_id AND k.device = w.device AND (w.scope = 'device' OR k.stream = w.stream)
    WHERE k.dur_ns > 0 AND k.ts_ns < w.end_ns AND k.end_ns > w.start_ns
),
sm AS (  -- est. SM efficiency's integral: min(1, the running kernels' summed blocks per SM) over time
    {{ capped_level_length('kw', ['trace_id', 'device', 'scope', 'stream'], 'blocks_per_sm', s='s', e='e') | indent(4) }}
),
occ AS (
    SELECT trace_id, device, scope, stream,
           {{ weighted_mean('occupancy_pct') }} AS occ
    FROM kw
    GROUP BY trace_id, device, scope, stream
),
{%- endif %}
t AS (
    SELECT w.trace_id, w.device, w.scope, w.stream, w.events, w.unlaunched, w.window_ns,
           coalesce(i.host_wait_ns, 0) AS host_wait_ns,
           coalesce(i.kernel_wait_ns, 0) AS kernel_wait_ns,
           coalesce(i.other_ns, 0) AS other_ns,
           coalesce(i.host_wait_ns, 0) + coalesce(i.kernel_wait_ns, 0) + coalesce(i.other_ns, 0) AS idle_ns
    FROM win w
    LEFT JOIN idle i ON i.trace_id = w.trace_id AND i.device = w.device AND i.scope = w.scope
                    AND i.stream IS NOT DISTINCT FROM w.stream
)
SELECT tr.run, tr.rank, t.trace_id, t.device, t.scope, t.stream, t.events,
       t.window_ns / 1e3 AS window_us, (t.window_ns - t.idle_ns) / 1e3 AS busy_us, t.idle_ns / 1e3 AS idle_us,
       100.0 * (t.window_ns - t.idle_ns) / nullif(t.window_ns, 0) AS busy_pct,
       t.host_wait_ns / 1e3 AS host_wait_us, t.kernel_wait_ns / 1e3 AS kernel_wait_us,
       t.other_ns / 1e3 AS other_us,
       100.0 * t.host_wait_ns / nullif(t.idle_ns, 0) AS host_wait_pct,
       100.0 * t.kernel_wait_ns / nullif(t.idle_ns, 0) AS kernel_wait_pct,
       100.0 * t.other_ns / nullif(t.idle_ns, 0) AS other_pct,
       100.0 * tc.tc_frac AS tensor_cores_pct, t.unlaunched
       {%- if occupancy %},
       100.0 * sm.level_ns / nullif(t.window_ns, 0) AS sm_efficiency_pct, o.occ AS occupancy_pct
       {%- endif %}
FROM t
JOIN trace_files tr USING (trace_id)
LEFT JOIN tc ON tc.trace_id = t.trace_id AND tc.device = t.device AND tc.scope = t.scope
            AND tc.stream IS NOT DISTINCT FROM t.stream
{%- if occupancy %}
LEFT JOIN occ o ON o.trace_id = t.trace_id AND o.device = t.device AND o.scope = t.scope
               AND o.stream IS NOT DISTINCT FROM t.stream
LEFT JOIN sm ON sm.trace_id = t.trace_id AND sm.device = t.device AND sm.scope = t.scope
            AND sm.stream IS NOT DISTINCT FROM t.stream
{%- endif %}
WHERE TRUE {{ scope('t.') }}
ORDER BY tr.run, tr.rank NULLS LAST, t.trace_id, t.device, t.scope, t.stream NULLS FIRST

-- @notes
{#- the device rows carry the counts: gpu_windows is not computed again #}
{{ gpu_notes(unlaunched=true, windows="(SELECT * FROM " ~ result ~ " WHERE scope = 'device')") }}
