-- gpu_time_steps: how busy each GPU was during each profiler step
-- (`duckprof report gpu-time --by-step`).
--
-- A step's window is its host-side ProfilerStep#N range (steps view); busy is
-- the part of the device's merged busy intervals (gpu_busy_intervals, scope
-- 'device') inside that window. GPU work runs behind the host, so a step's
-- window can hold work launched by the step before.
--
-- Parameters: exclude_last_step, round_to_us (BOOLEAN, see gpu_activity),
-- run (when by_run), device (when by_device).
--
-- run          VARCHAR  run label
-- rank         INTEGER  rank of the trace
-- trace_id     INTEGER  trace
-- device       INTEGER  GPU index
-- step         BIGINT   N of ProfilerStep#N
-- step_us      DOUBLE   the step's host-side duration, µs
-- busy_us      DOUBLE   device busy inside the step window, µs
-- idle_us      DOUBLE   step_us - busy_us
-- busy_pct     DOUBLE   busy_us / step_us, %
WITH b AS (  -- device busy intervals with the busy time before each
    SELECT trace_id, device, start_ns, end_ns,
           coalesce(sum(dur_ns) OVER (PARTITION BY trace_id, device ORDER BY start_ns
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS busy_before_ns
    FROM gpu_busy_intervals(exclude_last_step := $exclude_last_step, round_to_us := $round_to_us)
    WHERE scope = 'device'
),
devs AS (
    SELECT DISTINCT trace_id, device FROM b
),
sd AS (
    SELECT s.trace_id, d.device, s.step, s.event_id, s.ts_ns, s.end_ns, s.dur_ns
    FROM steps s JOIN devs d USING (trace_id)
),
-- busy time up to t, B(t) = busy before the last interval starting at or before t
-- + the part of that interval before t; a step gets B(end) - B(start)
per_step AS (
    SELECT sd.trace_id, sd.device, sd.step, sd.event_id, sd.dur_ns AS step_ns,
           coalesce(be.busy_before_ns + least(sd.end_ns, be.end_ns) - be.start_ns, 0)
         - coalesce(bs.busy_before_ns + least(sd.ts_ns, bs.end_ns) - bs.start_ns, 0) AS busy_ns
    FROM sd
    ASOF LEFT JOIN b bs ON bs.trace_id = sd.trace_id AND bs.device = sd.device AND sd.ts_ns >= bs.start_ns
    ASOF LEFT JOIN b be ON be.trace_id = sd.trace_id AND be.device = sd.device AND sd.end_ns >= be.start_ns
)
SELECT tr.run, tr.rank, p.trace_id, p.device, p.step,
       p.step_ns / 1e3 AS step_us, p.busy_ns / 1e3 AS busy_us, (p.step_ns - p.busy_ns) / 1e3 AS idle_us,
       100.0 * p.busy_ns / nullif(p.step_ns, 0) AS busy_pct
FROM per_step p
JOIN traces tr USING (trace_id)
WHERE TRUE
{%- if by_run %} AND tr.run = $run{% endif %}
{%- if by_device %} AND p.device = $device{% endif %}
ORDER BY tr.run, tr.rank NULLS LAST, p.trace_id, p.device, p.step, p.event_id
