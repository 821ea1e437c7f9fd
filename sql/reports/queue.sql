-- queue: how deep each stream's GPU queue was (queue_depth view: a device event
-- is queued from the start of its launch call until it ends), per stream.
-- question: How much work was queued on each GPU stream, and for how long?
--
-- Statistics are time-weighted over the stream's series, from its first launch
-- call to its last event's end: mean_depth = time-average; p50/p95 = the
-- smallest depth the queue stays at or below for 50% / 95% of that time;
-- time_at_max = how long the queue held max_depth.
-- max_pending is the maximum of launched-but-not-started events: HTA's
-- queue_length max (HTA's other statistics are per change point, unweighted).
--
-- uses: device, gpu_window
-- option: --buckets/-b INTEGER >= 0 = 0  queue depth over time instead: N equal time buckets per stream (sql/reports/queue_buckets.sql)
-- requires: queue_depth, trace_files, gpu_ops, runtime
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- device           INTEGER  GPU index
-- stream           BIGINT   stream
-- launches         BIGINT   device events with a launch call (the events counted)
-- window_us        DOUBLE   first launch call start to last event end, µs
-- mean_depth       DOUBLE   time-weighted mean queue depth
-- p50_depth        BIGINT   time-weighted median depth
-- p95_depth        BIGINT   time-weighted 95th percentile depth
-- max_depth        BIGINT   maximum depth
-- time_at_max_us   DOUBLE   total time at max_depth, µs
-- time_at_max_pct  DOUBLE  [wide]  time_at_max_us / window_us, %
-- max_pending      BIGINT   maximum number launched but not yet started
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
WITH q AS (
    SELECT trace_id, device, stream, ts_ns, change, queue_depth, pending, coalesce(dur_ns, 0) AS dur_ns
    FROM queue_depth(exclude_last_step := $exclude_last_step OR $hta, round_to_us := $hta)
    WHERE TRUE {{ scope() }}
),
per_depth AS (
    SELECT trace_id, device, stream, queue_depth, sum(dur_ns) AS t_ns
    FROM q GROUP BY trace_id, device, stream, queue_depth
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
           arg_max(t_ns, queue_depth) AS time_at_max_ns
    FROM cum GROUP BY trace_id, device, stream
),
s AS (
    SELECT trace_id, device, stream,
           count(*) FILTER (WHERE change = 'launch') AS launches,
           max(ts_ns) - min(ts_ns) AS window_ns,
           sum(queue_depth * dur_ns) / nullif(sum(dur_ns), 0) AS mean_depth,
           max(pending) AS max_pending
    FROM q GROUP BY trace_id, device, stream
)
SELECT tr.run, tr.rank, s.trace_id, s.device, s.stream, s.launches, s.window_ns / 1e3 AS window_us,
       s.mean_depth, p.p50_depth, p.p95_depth, p.max_depth,
       p.time_at_max_ns / 1e3 AS time_at_max_us,
       100.0 * p.time_at_max_ns / nullif(s.window_ns, 0) AS time_at_max_pct,
       s.max_pending
FROM s
JOIN pct p USING (trace_id, device, stream)
JOIN trace_files tr USING (trace_id)
ORDER BY tr.run, tr.rank NULLS LAST, s.trace_id, s.device, s.stream

-- @notes
{{ gpu_notes(need_launches=true) }}
