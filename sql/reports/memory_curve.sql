-- memory_curve: per device, the allocator's allocated and reserved levels over
-- time (TensorBoard profiler plugin's memory curve), at most --buckets rows
-- per device.
-- variant of: memory (with --curve; its options)
-- question: How did each device's allocated and reserved memory change over the trace?
--
-- Levels as in `report memory` (sql/templates/memory.sql memory_levels): the
-- allocator's Total Allocated after each [memory] event (else the running sum
-- of the bytes) and its Total Reserved. Times: µs after the profiler's start,
-- the earliest event of the trace ([memory] events included: the plugin's
-- profiler_start_ts). A device with at most --buckets events (or --buckets 0)
-- gets one row per event: the plugin's curve (its 'rows', without the step
-- plot's interpolated points; the plugin skips events without Addr, duckprof
-- keeps them). A device with more gets its span, first to last event, cut
-- into N buckets of equal length: a row per bucket with events, each with
-- the bucket's highest levels and when the highest allocated level was first
-- reached there, so a peak of the curve is never lost (the plugin draws every
-- event).
--
-- requires: memory_events, trace_files
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- device_kind      VARCHAR  'CPU', 'CUDA', ... (c10::DeviceType)
-- device           INTEGER  device index (-1: the host)
-- at_us            DOUBLE   the event's time (in a bucket: when its highest allocated level was first
--                           reached), µs after the profiler's start
-- events           BIGINT   [memory] events of the row (1 without buckets)
-- allocated_bytes  BIGINT   allocated level after the event (in a bucket: its highest)
-- reserved_bytes   BIGINT   reserved level after the event (in a bucket: its highest; empty: not in the
--                           trace)
-- end_allocated_bytes  BIGINT  [wide]  allocated level after the row's last event
-- bucket           BIGINT  [wide]  0, 1, ... N - 1 in time order (empty: one row per event)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/memory.sql" import memory_levels, memory_notes, device_kind with context %}
WITH {{ memory_levels() }},
origin AS (  -- the profiler's start: the earliest event, complete or [memory]
    SELECT l.trace_id, least(min(l.ts_ns), any_value(f.first_ts_ns)) AS t0_ns
    FROM levels l JOIN trace_files f USING (trace_id)
    GROUP BY l.trace_id
),
placed AS (
    SELECT l.*, count(*) OVER d AS n, min(l.ts_ns) OVER d AS first_ns, max(l.ts_ns) OVER d AS last_ns
    FROM levels l
    WINDOW d AS (PARTITION BY l.trace_id, l.device_type, l.device)
),
rows_ AS (
    SELECT trace_id, device_type, device, NULL::BIGINT AS bucket, ts_ns, 1::BIGINT AS events,
           level AS allocated, total_reserved_bytes AS reserved, level AS end_level, event_id
    FROM placed
    WHERE $buckets = 0 OR n <= $buckets
    UNION ALL
    SELECT trace_id, device_type, device, bucket,
           arg_min(ts_ns, (-level, ts_ns, event_id)), count(*), max(level), max(total_reserved_bytes),
           arg_max(level, (ts_ns, event_id)), min(event_id)
    FROM (SELECT *, least(((ts_ns - first_ns)::HUGEINT * $buckets) // (last_ns - first_ns + 1), $buckets - 1)::BIGINT
                    AS bucket
          FROM placed WHERE $buckets > 0 AND n > $buckets)
    GROUP BY trace_id, device_type, device, bucket
)
SELECT f.run, f.rank, r.trace_id, {{ device_kind('r.') }} AS device_kind, r.device,
       (r.ts_ns - o.t0_ns) / 1e3 AS at_us, r.events, r.allocated::BIGINT AS allocated_bytes,
       r.reserved::BIGINT AS reserved_bytes, r.end_level::BIGINT AS end_allocated_bytes, r.bucket
FROM rows_ r
JOIN trace_files f USING (trace_id)
JOIN origin o USING (trace_id)
ORDER BY f.run, f.rank NULLS LAST, r.trace_id, r.device_type, r.device, r.ts_ns, r.event_id

-- @notes
{{ memory_notes() }}
