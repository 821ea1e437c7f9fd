-- queue_buckets: how deep each stream's GPU queue was over time, in equal time buckets.
-- variant of: queue (with --buckets N; its options)
-- question: How much work was queued on each GPU stream over time?
--
-- Window: each trace's GPU window (gpu_windows: first device event start to
-- last device event end, over all its streams, so the streams of a trace
-- share one time axis; the queue report's window when the trace has one
-- stream), cut into N buckets of equal length (integer ns bounds). Per stream and
-- bucket: the time-weighted mean of queue_depth (the queue_depth view: launched
-- and unfinished device events) over the bucket, and the largest depth the
-- queue took in it (zero-length states at a change included, as the queue
-- report's max_depth). Each state of the series (a change and the time until
-- the next) is split over the buckets it spans (bucket_overlaps,
-- sql/templates/intervals.sql). Before a stream's first launch and after its
-- last event the depth is 0; depth before the window (work launched before
-- the first device event starts) is not counted, as in the queue report.
--
-- requires: queue_depth, gpu_windows, trace_files, launches
--
-- Columns:
-- run         VARCHAR  run label
-- rank        INTEGER  rank of the trace
-- trace_id    INTEGER  trace
-- device      INTEGER  GPU index
-- stream      BIGINT   stream
-- bucket      BIGINT   0, 1, ... N - 1 in time order
-- start_ms    DOUBLE   bucket start, ms after the trace's first event (trace_files.first_ts_ns)
-- width_us    DOUBLE   bucket length, µs
-- mean_depth  DOUBLE   time-weighted mean queue depth in the bucket
-- max_depth   BIGINT   largest queue depth in the bucket
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import bucket_bound, bucket_overlaps %}
WITH q AS (  -- each state of a stream's queue, from its change to the next
    SELECT trace_id, device, stream, ts_ns AS start_ns, ts_ns + coalesce(dur_ns, 0) AS end_ns, queue_depth
    FROM queue_depth(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE TRUE {{ scope() }}
),
series AS (
    SELECT DISTINCT trace_id, device, stream FROM q
),
windows AS (
    SELECT trace_id, min(start_ns) AS w0, max(end_ns) AS w1
    FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE scope = 'stream' {{ scope() }}
    GROUP BY trace_id
),
buckets AS (
    SELECT s.trace_id, s.device, s.stream, b.bucket,
           {{ bucket_bound('b.bucket', '$buckets', 'w.w0', 'w.w1') }} AS ts_ns,
           {{ bucket_bound('b.bucket + 1', '$buckets', 'w.w0', 'w.w1') }} AS end_ns
    FROM series s
    JOIN windows w USING (trace_id)
    CROSS JOIN (SELECT unnest(range($buckets)) AS bucket) b
),
depth AS (
    {{ bucket_overlaps('q', 'windows', ['trace_id'], ['trace_id', 'device', 'stream'], '$buckets',
                       'sum(overlap_ns * queue_depth) AS depth_ns, max(queue_depth) AS max_depth') | indent(4) }}
)
SELECT f.run, f.rank, b.trace_id, b.device, b.stream, b.bucket::BIGINT AS bucket,
       (b.ts_ns - f.first_ts_ns) / 1e6 AS start_ms, (b.end_ns - b.ts_ns) / 1e3 AS width_us,
       coalesce(d.depth_ns, 0) / nullif(b.end_ns - b.ts_ns, 0) AS mean_depth,
       coalesce(d.max_depth, 0)::BIGINT AS max_depth
FROM buckets b
LEFT JOIN depth d ON d.trace_id = b.trace_id AND d.device = b.device AND d.stream = b.stream
                 AND d.bucket = b.bucket
JOIN trace_files f ON f.trace_id = b.trace_id
ORDER BY f.run, f.rank NULLS LAST, b.trace_id, b.device, b.stream, b.bucket

-- @notes
{{ gpu_notes(need_launches=true) }}
