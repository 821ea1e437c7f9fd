-- memory: per device (CPU and each GPU), the allocator's peak, when it was
-- reached (which step, which operator was running), and what is still
-- allocated at the end, from the [memory] events of profile_memory traces.
-- question: How much memory did each device hold at its peak, when, and what is still allocated at the end?
--
-- Devices: the [memory] events' Device Type and Device Id (c10::DeviceType:
-- CPU, CUDA, MKLDNN, IDEEP, HIP, XPU, PrivateUse1, ...). Allocated: the
-- allocator's "Total Allocated" after each event (PyTorch 1.10+ traces); a trace
-- without it (2021) gets the running sum of the events' bytes from the trace's
-- first event instead, relative to an unknown start (a note says so). The peak
-- is the first event at which the level is highest; its step is the
-- ProfilerStep#N whose host range holds it, its operator the innermost
-- cpu_op on the event's thread that spans it. Reserved: the allocator's "Total
-- Reserved" (caching allocators; NULL when not written). Live at the end: the
-- allocations (Bytes > 0) after which nothing more happens at their address
-- (Addr) on their device: never freed while profiling.
-- --by-step: the peak and growth in each step (sql/reports/memory_steps.sql);
-- --ops: the operators that allocate the most, self and total as torch counts
-- them (sql/reports/memory_ops.sql); --live: the largest live allocations
-- (sql/reports/memory_live.sql); --curve: the allocated and reserved levels
-- over time (sql/reports/memory_curve.sql).
--
-- option: --by-step FLAG  per ProfilerStep#N instead (sql/reports/memory_steps.sql)
-- option: --ops FLAG  the operators that allocate the most instead (sql/reports/memory_ops.sql)
-- option: --live FLAG  the allocations still live at the end instead (sql/reports/memory_live.sql)
-- option: --curve FLAG  the allocated and reserved levels over time instead (sql/reports/memory_curve.sql)
-- option: --limit/-n INTEGER >= 0 = 20  with --ops / --live: rows per device (0 = all)
-- option: --allocs FLAG  with --ops: each operator's allocations alone, their bytes and number (TensorBoard's memory view)
-- option: --buckets/-b INTEGER >= 0 = 100  with --curve: a device with more events gets N equal time buckets, each its highest levels (0 = every event)
-- example: duckprof report memory trace.json.gz --by-step
-- requires: memory_events, steps, cpu_ops, trace_files
--
-- Columns:
-- run                   VARCHAR  run label
-- rank                  INTEGER  rank of the trace
-- trace_id              INTEGER  trace
-- device_kind           VARCHAR  'CPU', 'CUDA', 'HIP', 'XPU', 'MKLDNN', ... (c10::DeviceType)
-- device                INTEGER  device index (-1: the host)
-- events                BIGINT   [memory] events
-- allocs                BIGINT  [wide]  allocations (Bytes > 0)
-- allocated_bytes       BIGINT   bytes allocated (sum of the allocations)
-- freed_bytes           BIGINT  [wide]  bytes freed (sum of the frees)
-- peak_allocated_bytes  BIGINT   the highest allocated level
-- peak_at_us            DOUBLE   when it was first reached, µs after the trace's first event (its first
--                                [memory] event if it has no complete event)
-- peak_step             BIGINT   the ProfilerStep#N then running (empty: none)
-- peak_op               VARCHAR  the innermost operator then running on the allocating thread
-- peak_reserved_bytes   BIGINT   the highest reserved level (empty: not in the trace)
-- end_allocated_bytes   BIGINT   the allocated level after the last event
-- live_allocs           BIGINT   allocations never freed (empty: the trace has no addresses)
-- live_bytes            BIGINT   their bytes
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/memory.sql" import memory_levels, device_kind, op_and_step with context %}
WITH {{ memory_levels() }},
per_device AS (
    SELECT trace_id, device_type, device,
           count(*) AS events, count(*) FILTER (WHERE bytes > 0) AS allocs,
           coalesce(sum(bytes) FILTER (WHERE bytes > 0), 0)::BIGINT AS allocated_bytes,
           coalesce(-sum(bytes) FILTER (WHERE bytes < 0), 0)::BIGINT AS freed_bytes,
           max(level) AS peak, arg_max(event_id, (level, -ts_ns, -event_id)) AS peak_event_id,
           max(total_reserved_bytes) AS peak_reserved,
           arg_max(level, (ts_ns, event_id)) AS end_level,
           count(*) FILTER (WHERE live) AS live_allocs,
           sum(bytes) FILTER (WHERE live)::BIGINT AS live_bytes,
           count(addr) > 0 AS has_addr
    FROM levels
    GROUP BY trace_id, device_type, device
),
peak AS (
    SELECT p.*, l.ts_ns, l.pid, l.tid FROM per_device p JOIN levels l ON l.trace_id = p.trace_id AND l.event_id = p.peak_event_id
),
first_mem AS (  -- a trace of [memory] events only has no window (trace_files: complete events)
    SELECT trace_id, min(ts_ns) AS ts_ns FROM levels GROUP BY trace_id
),
peak_at AS (  -- the innermost operator spanning the peak on its thread, and its step
    {{ op_and_step('peak', 'peak_event_id') | indent(4) }}
)
SELECT f.run, f.rank, p.trace_id,
       {{ device_kind('p.') }} AS device_kind,
       p.device, p.events, p.allocs, p.allocated_bytes, p.freed_bytes,
       p.peak AS peak_allocated_bytes, (p.ts_ns - coalesce(f.first_ts_ns, fm.ts_ns)) / 1e3 AS peak_at_us,
       a.step AS peak_step, a.op AS peak_op, p.peak_reserved AS peak_reserved_bytes,
       p.end_level AS end_allocated_bytes,
       CASE WHEN p.has_addr THEN p.live_allocs END AS live_allocs,
       CASE WHEN p.has_addr THEN coalesce(p.live_bytes, 0) END AS live_bytes
FROM peak p
JOIN trace_files f USING (trace_id)
JOIN first_mem fm USING (trace_id)
JOIN peak_at a ON a.trace_id = p.trace_id AND a.peak_event_id = p.peak_event_id
ORDER BY f.run, f.rank NULLS LAST, p.trace_id, p.device_type, p.device

-- @notes
{% from "templates/memory.sql" import memory_notes with context %}
{{ memory_notes() }}
