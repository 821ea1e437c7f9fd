-- tiny-memcpy: many tiny host<->device copies issued by the same op in one step:
-- a Python loop moving one scalar or one small tensor at a time.
--
-- Why it matters: each copy costs a runtime call on the host (several µs,
-- and a sync for device-to-host copies into pageable memory) for a few bytes
-- of data; one copy of a stacked tensor costs about the same as one of them.
-- How to fix: batch the values: torch.stack / torch.tensor(list) once, then
-- one .to(device); read results back once per step, not per element.
-- The trace must contain: GPU memcpy events with their bytes, and the runtime
-- calls that issued them. Groups are per ProfilerStep#N (the whole trace
-- without steps).
--
-- Matching: memcpys of fewer than --tiny-memcpy-bytes bytes, grouped by
-- trace, step (of the issuing call), direction (memcpy name) and issuer (the
-- host event around the runtime call: its op; the call's name when it has
-- none); a group of at least --tiny-memcpy-count copies matches, each copy a
-- match. (The bytes, in the args, are read only for copies in groups that
-- large.)
-- Time at stake: the duration of the runtime calls that issued them (host
-- time; one batched copy would cost about one of them).
--
-- severity: low
-- fix: batch small host<->device copies: stack the values and copy once per step
-- method: the duration of the runtime calls issuing the tiny copies
-- needs: gpu
-- option: --tiny-memcpy-bytes INTEGER >= 1 = 1024  tiny-memcpy: a copy of fewer bytes is tiny
-- option: --tiny-memcpy-count INTEGER >= 2 = 16  tiny-memcpy: tiny copies by one op in one step that make a loop
-- shared: launched
-- requires: gpu_activity, host_events, gpu_memcpy, steps, trace_files, gpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the memcpy (gpu_activity.event_id)
-- name         VARCHAR  e.g. 'Memcpy DtoH (Device -> Pageable)'
-- ts_ns        BIGINT   its start on the device, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   the duration of the runtime call that issued it, ns
-- detail       VARCHAR  e.g. '48 copies of < 1024 bytes by aten::copy_ in this step'
-- pid          BIGINT   host process of that call
-- tid          BIGINT   its thread
-- host_ts_ns   BIGINT   when that call started
-- op_event_id  BIGINT   the host event around that call (its op)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, launch_calls with context %}
WITH copies AS (
    SELECT a.trace_id, a.event_id, a.name, a.ts_ns, a.dur_ns, a.call_dur_ns AS launch_dur_ns,
           a.call_ts_ns AS launch_ts_ns, a.call_pid AS pid, a.call_tid AS tid, a.call_parent_event_id AS op_event_id,
           coalesce(p.name, a.call_name) AS issuer
    FROM ({{ launch_calls("(SELECT * FROM gpu_activity WHERE kind = 'memcpy' " ~ run_scope() ~ ")") | indent(10) }}) a
    LEFT JOIN host_events p ON p.trace_id = a.trace_id AND p.event_id = a.call_parent_event_id
    WHERE a.call_event_id IS NOT NULL
),
stepped AS (
    SELECT c.*, CASE WHEN c.launch_ts_ns < s.end_ns THEN s.step END AS step
    FROM copies c
    ASOF LEFT JOIN steps s ON s.trace_id = c.trace_id AND c.launch_ts_ns >= s.ts_ns
),
candidates AS (  -- groups that are large enough before their sizes are read
    SELECT * FROM stepped
    QUALIFY count(*) OVER (PARTITION BY trace_id, step, name, issuer) >= $tiny_memcpy_count
),
tiny AS (
    SELECT c.*, count(*) OVER (PARTITION BY c.trace_id, c.step, c.name, c.issuer) AS n
    FROM candidates c
    JOIN gpu_memcpy m ON m.trace_id = c.trace_id AND m.event_id = c.event_id
    WHERE m.bytes < $tiny_memcpy_bytes
)
SELECT trace_id, event_id, name, ts_ns, dur_ns, launch_dur_ns AS at_stake_ns,
       n || ' copies of < ' || $tiny_memcpy_bytes || ' bytes by ' || issuer || ' in its step' AS detail,
       pid, tid, launch_ts_ns AS host_ts_ns, op_event_id
FROM tiny
WHERE n >= $tiny_memcpy_count

-- @skipped
{{ skipped_unless(['gpu']) }}
