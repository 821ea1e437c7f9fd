-- gpu_time_buckets: how busy each GPU and each stream was over time, and why it
-- was idle, in equal time buckets.
-- variant of: gpu-time (with --buckets N; its options, but not --by-step)
-- question: When was each GPU and stream busy or idle, and why was it idle?
--
-- Window: each trace's device window (first device event start to last end,
-- over all its devices, so the devices and streams of a trace share one time
-- axis), cut into N buckets of equal length (integer ns bounds). Per device
-- (scope 'device') and stream (scope 'stream'), each bucket holds: busy (the
-- part of it inside gpu_busy_intervals), idle by HTA's cause (the part inside
-- gpu_idle_intervals of each category, as gpu-time splits it), and outside:
-- before the first or after the last event of that device or stream, which
-- gpu-time counts neither as busy nor as idle. So over a trace's buckets
-- busy_us, host_wait_us, kernel_wait_us and other_us add up to gpu-time's
-- figures for the same device or stream. Each interval is split over the
-- buckets it spans (bucket_overlaps, sql/templates/intervals.sql).
--
-- requires: gpu_busy_intervals, gpu_idle_intervals, trace_files, launches
--
-- Columns:
-- run             VARCHAR  run label
-- rank            INTEGER  rank of the trace
-- trace_id        INTEGER  trace
-- device          INTEGER  GPU index
-- scope           VARCHAR  'device' (all streams together) or 'stream'
-- stream          BIGINT   the stream; NULL on device rows
-- bucket          BIGINT   0, 1, ... N - 1 in time order within the window
-- start_ms        DOUBLE   bucket start, ms after the trace's first event (trace_files.first_ts_ns)
-- width_us        DOUBLE   bucket length, µs
-- busy_us         DOUBLE   time with at least one device event running, µs
-- host_wait_us    DOUBLE   idle time the CPU was late for, µs
-- kernel_wait_us  DOUBLE   idle gaps shorter than --kernel-wait-us, µs
-- other_us        DOUBLE   other idle time, µs
-- outside_us      DOUBLE   before the device's (stream's) first event or after its last, µs
-- busy_pct        DOUBLE   busy_us / width_us, %
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import bucket_bound, bucket_overlaps %}
{%- set keys = ['trace_id', 'device', 'scope', 'skey'] %}
WITH busy AS (
    SELECT trace_id, device, scope, coalesce(stream, -1) AS skey, stream, start_ns, end_ns
    FROM gpu_busy_intervals(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE TRUE {{ scope() }}
),
idle AS (
    SELECT trace_id, device, scope, coalesce(stream, -1) AS skey, category, start_ns, end_ns
    FROM gpu_idle_intervals(exclude_last_step := $exclude_last_step OR $hta, hta := $hta,
                            kernel_wait_ns := CAST(round($kernel_wait_us * 1000) AS BIGINT))
    WHERE TRUE {{ scope() }}
),
series AS (
    SELECT DISTINCT trace_id, device, scope, skey, stream FROM busy
),
windows AS (
    SELECT trace_id, min(start_ns) AS w0, max(end_ns) AS w1 FROM busy WHERE scope = 'device' GROUP BY trace_id
),
buckets AS (
    SELECT s.trace_id, s.device, s.scope, s.skey, s.stream, b.bucket,
           {{ bucket_bound('b.bucket', '$buckets', 'w.w0', 'w.w1') }} AS ts_ns,
           {{ bucket_bound('b.bucket + 1', '$buckets', 'w.w0', 'w.w1') }} AS end_ns
    FROM series s
    JOIN windows w USING (trace_id)
    CROSS JOIN (SELECT unnest(range($buckets)) AS bucket) b
),
busy_len AS (
    {{ bucket_overlaps('busy', 'windows', ['trace_id'], keys, '$buckets', 'sum(overlap_ns) AS busy_ns')
       | indent(4) }}
),
idle_len AS (
    {{ bucket_overlaps('idle', 'windows', ['trace_id'], keys, '$buckets',
                       "sum(overlap_ns) FILTER (WHERE category = 'host_wait') AS host_wait_ns, "
                       ~ "sum(overlap_ns) FILTER (WHERE category = 'kernel_wait') AS kernel_wait_ns, "
                       ~ "sum(overlap_ns) FILTER (WHERE category = 'other') AS other_ns") | indent(4) }}
),
t AS (
    SELECT b.*, coalesce(u.busy_ns, 0) AS busy_ns, coalesce(i.host_wait_ns, 0) AS host_wait_ns,
           coalesce(i.kernel_wait_ns, 0) AS kernel_wait_ns, coalesce(i.other_ns, 0) AS other_ns
    FROM buckets b
    LEFT JOIN busy_len u USING (trace_id, device, scope, skey, bucket)
    LEFT JOIN idle_len i USING (trace_id, device, scope, skey, bucket)
)
SELECT f.run, f.rank, t.trace_id, t.device, t.scope, t.stream, t.bucket::BIGINT AS bucket,
       (t.ts_ns - f.first_ts_ns) / 1e6 AS start_ms,
       (t.end_ns - t.ts_ns) / 1e3 AS width_us,
       t.busy_ns / 1e3 AS busy_us,
       t.host_wait_ns / 1e3 AS host_wait_us,
       t.kernel_wait_ns / 1e3 AS kernel_wait_us,
       t.other_ns / 1e3 AS other_us,
       (t.end_ns - t.ts_ns - t.busy_ns - t.host_wait_ns - t.kernel_wait_ns - t.other_ns) / 1e3 AS outside_us,
       100.0 * t.busy_ns / nullif(t.end_ns - t.ts_ns, 0) AS busy_pct
FROM t
JOIN trace_files f ON f.trace_id = t.trace_id
ORDER BY f.run, f.rank NULLS LAST, t.trace_id, t.device, t.scope, t.stream NULLS FIRST, t.bucket

-- @notes
{{ gpu_notes() }}
