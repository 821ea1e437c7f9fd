-- gpu_time_steps: how busy each GPU was during each profiler step.
-- variant of: gpu-time (with --by-step; its options)
-- question: How busy was each GPU during each profiler step?
--
-- A step's window is its host-side ProfilerStep#N range (steps view); busy is
-- the part of the device's merged busy intervals (gpu_busy_intervals, scope
-- 'device') inside that window (covered_length, sql/templates/intervals.sql).
-- GPU work runs behind the host, so a step's window can hold work launched by
-- the step before.
--
-- requires: gpu_busy_intervals, steps, trace_files, launches
--
-- Columns:
-- run       VARCHAR  run label
-- rank      INTEGER  rank of the trace
-- trace_id  INTEGER  trace
-- device    INTEGER  GPU index
-- step      BIGINT   N of ProfilerStep#N, or its place in time order where N repeat (the steps view)
-- start_ms  DOUBLE  [wide]  the step's start, ms after the trace's first event (trace_files.first_ts_ns)
-- step_us   DOUBLE   the step's host-side duration, µs
-- busy_us   DOUBLE   device busy inside the step window, µs
-- idle_us   DOUBLE   step_us - busy_us
-- busy_pct  DOUBLE   busy_us / step_us, %
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import covered_length %}
WITH b AS (
    SELECT trace_id, device, start_ns, end_ns
    FROM gpu_busy_intervals(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE scope = 'device'
),
sd AS (  -- each step once per device with activity
    SELECT s.trace_id, d.device, s.step, s.event_id, s.ts_ns, s.end_ns, s.dur_ns
    FROM steps s JOIN (SELECT DISTINCT trace_id, device FROM b) d USING (trace_id)
),
per_step AS (
    {{ covered_length('sd', 'b', ['trace_id', 'device']) | indent(4) }}
)
SELECT tr.run, tr.rank, p.trace_id, p.device, p.step, (p.ts_ns - tr.first_ts_ns) / 1e6 AS start_ms,
       p.dur_ns / 1e3 AS step_us, p.covered_ns / 1e3 AS busy_us, (p.dur_ns - p.covered_ns) / 1e3 AS idle_us,
       100.0 * p.covered_ns / nullif(p.dur_ns, 0) AS busy_pct
FROM per_step p
JOIN trace_files tr USING (trace_id)
WHERE TRUE {{ scope('p.') }}
ORDER BY tr.run, tr.rank NULLS LAST, p.trace_id, p.device, p.step, p.event_id

-- @notes
{{ gpu_notes() }}
