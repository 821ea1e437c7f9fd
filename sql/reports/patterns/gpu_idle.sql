-- gpu-idle: long gaps inside the steps in which no stream of a GPU runs
-- anything.
--
-- Why it matters: the device does nothing for the whole gap; a training step
-- is only as fast as its GPU is busy.
-- How to fix: look at what the host did during the gap (the source, the ops
-- of `duckprof report idle`): data loading, a sync, Python work between
-- launches, a collective waiting on another rank; overlap it with GPU work
-- (prefetch, non_blocking copies, CUDA streams) or remove it.
-- The trace must contain: GPU activity. ProfilerStep#N annotations limit it
-- to the steps; without them the whole trace counts.
--
-- Matching: the device idle intervals (as gpu_idle_intervals, scope 'device':
-- no stream of the device busy) of at least --min-gap-us µs whose end was
-- launched inside a step (the launch call of the device event that ends the
-- gap; the gap's start when that call is not in the trace).
-- Time at stake: the gap's length.
--
-- severity: medium
-- fix: see what the host did during the gap (the source; duckprof report idle) and overlap or remove it
-- method: the length of the idle gaps
-- needs: gpu
-- option: --min-gap-us DOUBLE >= 0 = 100  gpu-idle: shortest device idle gap reported, µs
-- shared: device_idle, launched
-- requires: gpu_activity, host_events, steps, trace_files, gpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the device event that ends the gap (gpu_activity.event_id)
-- name         VARCHAR  its name
-- ts_ns        BIGINT   the gap's start, ns since the epoch
-- dur_ns       BIGINT   the gap's length, ns
-- at_stake_ns  BIGINT   = dur_ns
-- detail       VARCHAR  e.g. 'device 0 idle; next launched 1.2 ms into the gap' (host_wait in HTA's terms)
-- pid          BIGINT   host process of the launch call that ends the gap
-- tid          BIGINT   its thread
-- host_ts_ns   BIGINT   when that call started (the gap's start when it is not in the trace)
-- op_event_id  BIGINT   the host event around that call (its op)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, device_idle, launch_calls with context %}
WITH gaps AS (
    SELECT i.*, coalesce(i.next_launch_ts_ns, i.start_ns) AS host_ts_ns
    FROM ({{ device_idle() | indent(10) }}) i
    WHERE i.dur_ns >= $min_gap_us * 1000
),
stepped AS (
    SELECT g.*
    FROM gaps g
    ASOF LEFT JOIN steps st ON st.trace_id = g.trace_id AND g.host_ts_ns >= st.ts_ns
    WHERE g.host_ts_ns < st.end_ns
       OR NOT EXISTS (SELECT 1 FROM steps x WHERE x.trace_id = g.trace_id)
)
SELECT g.trace_id, g.next_event_id AS event_id, g.name, g.start_ns AS ts_ns, g.dur_ns, g.dur_ns AS at_stake_ns,
       'device ' || g.device || ' idle; ' ||
           CASE WHEN g.next_launch_ts_ns > g.start_ns
                THEN 'next launched ' || round((g.next_launch_ts_ns - g.start_ns) / 1e3)::BIGINT || ' µs into the gap'
                WHEN g.next_launch_ts_ns IS NULL THEN 'next launch not in the trace'
                ELSE 'next launched before the gap' END AS detail,
       g.call_pid AS pid, g.call_tid AS tid, g.host_ts_ns, g.call_parent_event_id AS op_event_id
FROM ({{ launch_calls("(SELECT g.*, a.event_id, a.name, a.launch_event_id FROM stepped g "
                      "JOIN gpu_activity a ON a.trace_id = g.trace_id AND a.event_id = g.next_event_id)") | indent(6) }}) g

-- @skipped
{{ skipped_unless(['gpu']) }}
