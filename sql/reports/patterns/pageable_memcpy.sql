-- pageable-memcpy: copies between the host and the GPU from or to pageable
-- (not pinned) host memory: Memcpy HtoD (Pageable -> Device), DtoH (Device ->
-- Pageable).
--
-- Why it matters: the driver stages a pageable copy through a pinned buffer
-- of its own, at a fraction of the bandwidth, and the call returns only when
-- the copy is done: no overlap with the host, non_blocking=True has no effect.
-- How to fix: pin the host memory: DataLoader(pin_memory=True), or
-- tensor.pin_memory(), then .to("cuda", non_blocking=True); for results read
-- back every step, copy into a preallocated pinned buffer.
-- The trace must contain: GPU memcpy events (their names say Pageable or
-- Pinned).
--
-- Matching: every memcpy whose name says Pageable.
-- Time at stake: the copy's duration (an upper bound: pinned copies run
-- about twice as fast and need not block the host).
--
-- severity: low
-- fix: pin host memory (DataLoader(pin_memory=True), tensor.pin_memory()) and copy with non_blocking=True
-- method: the pageable copies' duration (upper bound)
-- needs: gpu
-- shared: launched
-- requires: gpu_activity, host_events, trace_files, gpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the memcpy (gpu_activity.event_id)
-- name         VARCHAR  e.g. 'Memcpy HtoD (Pageable -> Device)'
-- ts_ns        BIGINT   its start on the device, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   = dur_ns
-- detail       VARCHAR  the call that issued it, e.g. 'by cudaMemcpyAsync'
-- pid          BIGINT   host process of the call that issued it (NULL: not in the trace)
-- tid          BIGINT   its thread
-- host_ts_ns   BIGINT   when that call started (the copy's start when it is not in the trace)
-- op_event_id  BIGINT   the host event around that call (its op)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, launch_calls with context %}
SELECT a.trace_id, a.event_id, a.name, a.ts_ns, a.dur_ns, a.dur_ns AS at_stake_ns,
       'by ' || coalesce(a.call_name, 'a call not in the trace') AS detail,
       a.call_pid AS pid, a.call_tid AS tid, coalesce(a.call_ts_ns, a.ts_ns) AS host_ts_ns,
       a.call_parent_event_id AS op_event_id
FROM ({{ launch_calls("(SELECT * FROM gpu_activity WHERE kind = 'memcpy' AND name ILIKE '%pageable%' "
                      ~ run_scope() ~ ")") }}) a

-- @skipped
{{ skipped_unless(['gpu']) }}
