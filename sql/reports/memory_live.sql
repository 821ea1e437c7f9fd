-- memory_live: the allocations still live at the end of the trace, largest
-- first, with the operator that made them.
-- variant of: memory (with --live; its options)
-- question: Which allocations were never freed while profiling?
--
-- An allocation (a [memory] event with Bytes > 0) is live at the end when
-- nothing more happens at its address (Addr) on its device until the trace
-- ends (sql/templates/memory.sql memory_levels). Traces without addresses
-- (2021) cannot tell, and say so. Its operator: the innermost cpu_op on the
-- allocating thread that spans it; its step: the ProfilerStep#N whose host
-- range holds it. --limit allocations per device.
--
-- requires: memory_events, steps, cpu_ops, trace_files
--
-- Columns:
-- run          VARCHAR  run label
-- rank         INTEGER  rank of the trace
-- trace_id     INTEGER  trace
-- device_kind  VARCHAR  'CPU', 'CUDA', ... (c10::DeviceType)
-- device       INTEGER  device index (-1: the host)
-- bytes        BIGINT   bytes allocated
-- at_us        DOUBLE   when, µs after the trace's first event
-- step         BIGINT   the ProfilerStep#N then running (empty: none)
-- op           VARCHAR  the innermost operator then running on the allocating thread
-- addr         BIGINT  [wide]  the address
-- event_id     BIGINT  [wide]  events.event_id of the [memory] event
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/memory.sql" import memory_levels, memory_notes, device_kind, op_and_step with context %}
WITH {{ memory_levels() }},
live AS (
    SELECT * FROM levels WHERE live
    {%- if limit %}
    QUALIFY row_number() OVER (PARTITION BY trace_id, device_type, device ORDER BY bytes DESC, ts_ns, event_id) <= $limit
    {%- endif %}
),
at_op AS (  -- the innermost operator running at the allocation on its thread, and its step
    {{ op_and_step('live', 'event_id') | indent(4) }}
)
SELECT f.run, f.rank, l.trace_id, {{ device_kind('l.') }} AS device_kind, l.device, l.bytes,
       (l.ts_ns - f.first_ts_ns) / 1e3 AS at_us, a.step, a.op, l.addr, l.event_id
FROM live l
JOIN trace_files f USING (trace_id)
JOIN at_op a ON a.trace_id = l.trace_id AND a.event_id = l.event_id
ORDER BY f.run, f.rank NULLS LAST, l.trace_id, l.device_type, l.device, l.bytes DESC, l.ts_ns, l.event_id

-- @notes
{{ memory_notes() }}
