-- memory_steps: per profiler step and device, the allocator's peak in the step
-- and how much the step left allocated.
-- variant of: memory (with --by-step; its options)
-- question: How much memory did each step reach and leave behind on each device?
--
-- A [memory] event belongs to the ProfilerStep#N whose host range holds it.
-- Levels as in `report memory` (Total Allocated, else the running sum of the
-- bytes, sql/templates/memory.sql memory_levels); grown_bytes is the level
-- after the step's last event minus the level before its first (a step that
-- frees more than it allocates shrinks). Steps without memory events have no
-- row.
--
-- requires: memory_events, steps, cpu_ops, trace_files
--
-- Columns:
-- run                   VARCHAR  run label
-- rank                  INTEGER  rank of the trace
-- trace_id              INTEGER  trace
-- step                  BIGINT   N of ProfilerStep#N, or its place in time order where N repeat (the steps view)
-- device_kind           VARCHAR  'CPU', 'CUDA', ... (c10::DeviceType)
-- device                INTEGER  device index (-1: the host)
-- events                BIGINT   [memory] events in the step
-- allocated_bytes       BIGINT   bytes allocated in the step
-- freed_bytes           BIGINT  [wide]  bytes freed in the step
-- peak_allocated_bytes  BIGINT   the highest allocated level in the step
-- peak_op               VARCHAR  the innermost operator running on the allocating thread at that peak
-- end_allocated_bytes   BIGINT   the level after the step's last event
-- grown_bytes           BIGINT   end_allocated_bytes - the level before the step's first event
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/memory.sql" import memory_levels, memory_notes, device_kind with context %}
WITH {{ memory_levels() }},
placed AS (
    SELECT l.*, s.step, l.level - coalesce(l.bytes, 0) AS level_before
    FROM levels l ASOF JOIN steps s ON s.trace_id = l.trace_id AND l.ts_ns >= s.ts_ns
    WHERE l.ts_ns < s.end_ns
),
per_step AS (
    SELECT trace_id, step, device_type, device, count(*) AS events,
           coalesce(sum(bytes) FILTER (WHERE bytes > 0), 0)::BIGINT AS allocated_bytes,
           coalesce(-sum(bytes) FILTER (WHERE bytes < 0), 0)::BIGINT AS freed_bytes,
           max(level) AS peak, arg_max(event_id, (level, -ts_ns, -event_id)) AS peak_event_id,
           arg_max(level, (ts_ns, event_id)) AS end_level,
           arg_min(level_before, (ts_ns, event_id)) AS start_level
    FROM placed
    GROUP BY trace_id, step, device_type, device
),
peak_op AS (
    SELECT p.trace_id, p.peak_event_id, arg_max(c.name, (c.depth, c.ts_ns)) AS op
    FROM per_step p
    JOIN levels l ON l.trace_id = p.trace_id AND l.event_id = p.peak_event_id
    JOIN cpu_ops c ON c.trace_id = l.trace_id AND c.pid = l.pid AND c.tid = l.tid
                  AND c.ts_ns <= l.ts_ns AND c.end_ns >= l.ts_ns
    GROUP BY ALL
)
SELECT f.run, f.rank, p.trace_id, p.step, {{ device_kind('p.') }} AS device_kind, p.device, p.events,
       p.allocated_bytes, p.freed_bytes, p.peak AS peak_allocated_bytes, o.op AS peak_op,
       p.end_level AS end_allocated_bytes, (p.end_level - p.start_level)::BIGINT AS grown_bytes
FROM per_step p
JOIN trace_files f USING (trace_id)
LEFT JOIN peak_op o ON o.trace_id = p.trace_id AND o.peak_event_id = p.peak_event_id
ORDER BY f.run, f.rank NULLS LAST, p.trace_id, p.step, p.device_type, p.device

-- @notes
SELECT * FROM ({{ memory_notes() | indent(15) }})
UNION ALL
SELECT f.file_name || ': no ProfilerStep#N annotations in this trace, so no steps', false
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id)
  AND EXISTS (SELECT 1 FROM memory_events m WHERE m.trace_id = f.trace_id) {{ run_scope('f.') }}
