-- memory: how torch's key_averages counts the [memory] events of a call,
-- written once for report ops and report memory --ops.
-- call_bytes(calls, mem, keys): a SELECT of (trace_id, keys..., cpu_mem, dev_mem),
--   one row per call that has some: the bytes of the [memory] events at times in
--   [start, end] of the call, on any thread of its process (torch's
--   _parse_kineto_results: MemRecordsAcc.in_interval, over the one process a
--   profiler records; a file merging several ranks' processes keeps them apart),
--   CPU and device apart. calls: a relation with trace_id, pid, ts_ns, end_ns and
--   the columns `keys` (passed through; default the call's row key kh and its
--   parent's pkh); mem: a relation of trace_id, pid, ts_ns, cpu_b, dev_b (the
--   [memory] events' bytes, not NULL). A NULL pid is a process of its own.
--   Cumulative sums looked up at the call's end by an ASOF join, and at its start
--   by a second one only for the calls with several [memory] times inside. Computed
--   per call at load (sql/load/derived_call_totals.sql).
-- dropped_names(): the names torch's key_averages leaves out (_parse_kineto_results'
--   _filter_name), an SQL list: report ops and memory --ops count no such call.
-- memory_bytes(alias): cpu_b and dev_b of memory_events: the bytes of CPU
--   (and MKLDNN, IDEEP) and of device (CUDA, HIP, XPU, PrivateUse1) events,
--   as torch's _cpu_memory_usage / _device_memory_usage (c10::DeviceType).
-- memory_levels(): CTE definitions (to follow WITH) ending in levels: every
--   [memory] event of the traces in scope (import with context: the run option)
--   with device (Device Id, -1 for the host), level (the allocator's Total
--   Allocated after it, or when the trace has none the running sum of Bytes on
--   its device from the trace's first event) and live (an allocation after which
--   nothing more happens at its Addr on its device).
-- device_kind(alias): the name of a c10::DeviceType number in device_type ('CPU', 'CUDA', ...).
-- op_and_step(src, id): a SELECT of (trace_id, <id>, op, step), one row per row
--   of src (trace_id, <id>, pid, tid, ts_ns: a moment, e.g. a [memory] event):
--   the innermost CPU operator running at ts_ns on its thread (the deepest,
--   then the latest to start; NULL: none) and the ProfilerStep containing ts_ns
--   (NULL: outside the steps). Reads cpu_ops and steps.
-- memory_notes(): the notes query of the memory reports: traces without
--   [memory] events (printed instead of the table when no trace in scope has
--   any), without Total Allocated, without addresses.
{% from "templates/scope.sql" import run_scope with context %}

{% macro dropped_names() -%}
('[memory]', '[OutOfMemory]', 'profiler::_record_function_enter', 'profiler::_record_function_enter_new',
 'profiler::_record_function_exit', 'aten::is_leaf', 'aten::output_nr', 'aten::_version')
{%- endmacro %}

{% macro memory_bytes(alias='') -%}
CASE WHEN {{ alias }}device_type IN (0, 2, 5) THEN {{ alias }}bytes ELSE 0 END AS cpu_b,
CASE WHEN {{ alias }}device_type IN (1, 6, 12, 20) THEN {{ alias }}bytes ELSE 0 END AS dev_b
{%- endmacro %}

{% macro call_bytes(calls, mem, keys=['kh', 'pkh']) -%}
WITH cum AS (  -- per process, the bytes cumulated by time; ts1: the time before (NULL: none), cpu1, dev1: the
               -- bytes cumulated then
    SELECT trace_id, process, ts_ns, sum(sum(cpu_b)) OVER w AS cpu_cum, sum(sum(dev_b)) OVER w AS dev_cum,
           lag(ts_ns) OVER (PARTITION BY trace_id, process ORDER BY ts_ns) AS ts1,
           CASE WHEN ts1 IS NOT NULL THEN cpu_cum - sum(cpu_b) END AS cpu1,
           CASE WHEN ts1 IS NOT NULL THEN dev_cum - sum(dev_b) END AS dev1
    FROM (SELECT *, coalesce(pid, -1) AS process FROM {{ mem }})
    GROUP BY trace_id, process, ts_ns
    WINDOW w AS (PARTITION BY trace_id, process ORDER BY ts_ns ROWS UNBOUNDED PRECEDING)
),
hi AS (  -- the bytes cumulated at the call's end (at the last time at or before it), for the calls with some
         -- time in [start, end] (for the others the last time up to the end is the last before the start:
         -- nothing in between), or that end before they start; at_ts1: the last time before the call's start
         -- is ts1, whose bytes are known
    SELECT c.trace_id, {% for k in keys %}c.{{ k }}, {% endfor %}c.process, c.ts_ns, h.cpu_cum, h.dev_cum, h.cpu1, h.dev1,
           c.end_ns >= c.ts_ns AND (h.ts1 IS NULL OR h.ts1 < c.ts_ns) AS at_ts1
    FROM (SELECT *, coalesce(pid, -1) AS process FROM {{ calls }}) c
    ASOF JOIN cum h ON h.trace_id = c.trace_id AND h.process = c.process AND c.end_ns >= h.ts_ns
    WHERE h.ts_ns >= c.ts_ns OR c.end_ns < c.ts_ns
)
SELECT trace_id, {% for k in keys %}{{ k }}, {% endfor %}cpu_cum - coalesce(lo_cpu, 0) AS cpu_mem, dev_cum - coalesce(lo_dev, 0) AS dev_mem
FROM (  -- minus the bytes cumulated at its start: at ts1, or looked up (a call with several times inside)
    SELECT *, cpu1 AS lo_cpu, dev1 AS lo_dev FROM hi WHERE at_ts1
    UNION ALL BY NAME
    SELECT c.*, lo.cpu_cum AS lo_cpu, lo.dev_cum AS lo_dev
    FROM (SELECT * FROM hi WHERE NOT at_ts1) c
    ASOF LEFT JOIN cum lo ON lo.trace_id = c.trace_id AND lo.process = c.process AND c.ts_ns > lo.ts_ns
)
WHERE cpu_cum IS DISTINCT FROM lo_cpu OR dev_cum IS DISTINCT FROM lo_dev
{%- endmacro %}

{% macro memory_levels() -%}
mem_events AS (
    SELECT m.*, coalesce(m.device_id, -1) AS device
    FROM memory_events m
    WHERE m.device_type IS NOT NULL {{ run_scope('m.') }}
),
levels AS (
    SELECT *,
           coalesce(total_allocated_bytes,
                    sum(coalesce(bytes, 0)) OVER (PARTITION BY trace_id, device_type, device ORDER BY ts_ns, event_id
                                                  ROWS UNBOUNDED PRECEDING))::BIGINT AS level,
           bytes > 0 AND addr IS NOT NULL
               AND lead(event_id) OVER (PARTITION BY trace_id, device_type, device, addr ORDER BY ts_ns, event_id)
                   IS NULL AS live
    FROM mem_events
)
{%- endmacro %}

{% macro device_kind(alias='') -%}
CASE {{ alias }}device_type WHEN 0 THEN 'CPU' WHEN 1 THEN 'CUDA' WHEN 2 THEN 'MKLDNN' WHEN 5 THEN 'IDEEP'
     WHEN 6 THEN 'HIP' WHEN 12 THEN 'XPU' WHEN 13 THEN 'MPS' WHEN 19 THEN 'MTIA' WHEN 20 THEN 'PrivateUse1'
     ELSE 'type ' || {{ alias }}device_type END
{%- endmacro %}

{% macro memory_notes() -%}
WITH t AS (
    SELECT f.trace_id, f.file_name,
           EXISTS (SELECT 1 FROM memory_events m WHERE m.trace_id = f.trace_id) AS has_mem,
           EXISTS (SELECT 1 FROM memory_events m WHERE m.trace_id = f.trace_id
                   AND m.total_allocated_bytes IS NOT NULL) AS has_total,
           EXISTS (SELECT 1 FROM memory_events m WHERE m.trace_id = f.trace_id AND m.addr IS NOT NULL) AS has_addr
    FROM trace_files f
    WHERE TRUE {{ run_scope('f.') }}
),
any_mem AS (SELECT coalesce(bool_or(has_mem), false) AS yes FROM t)
SELECT note, instead FROM (
    SELECT 0 AS k, trace_id, file_name || ': no [memory] events in this trace (record with profile_memory=True)'
                             AS note, false AS instead
    FROM t WHERE NOT has_mem AND (SELECT yes FROM any_mem)
    UNION ALL
    SELECT 1, trace_id, file_name || ': no ''Total Allocated'' in its [memory] events (PyTorch before 1.10): '
                        || 'allocated levels are the running sum of their bytes since the trace began', false
    FROM t WHERE has_mem AND NOT has_total
    UNION ALL
    SELECT 2, trace_id, file_name || ': no addresses in its [memory] events: live allocations unknown', false
    FROM t WHERE has_mem AND NOT has_addr
    UNION ALL
    SELECT 3, NULL, 'no [memory] events in this trace (record with profile_memory=True)'
                    {%- if run is not none %} || ' (run ''' || $run || ''')'{% endif %}, true
    WHERE NOT (SELECT yes FROM any_mem)
)
ORDER BY k, trace_id
{%- endmacro %}

{% macro op_and_step(src, id) -%}
SELECT m.trace_id, m.{{ id }}, o.op, st.step
FROM {{ src }} m
LEFT JOIN (
    SELECT m.trace_id, m.{{ id }}, arg_max(c.name, (c.depth, c.ts_ns)) AS op
    FROM {{ src }} m
    JOIN cpu_ops c ON c.trace_id = m.trace_id AND c.pid = m.pid AND c.tid = m.tid
                  AND c.ts_ns <= m.ts_ns AND c.end_ns >= m.ts_ns
    GROUP BY ALL
) o ON o.trace_id = m.trace_id AND o.{{ id }} = m.{{ id }}
LEFT JOIN (
    SELECT m.trace_id, m.{{ id }}, s.step
    FROM {{ src }} m ASOF JOIN steps s ON s.trace_id = m.trace_id AND m.ts_ns >= s.ts_ns
    WHERE m.ts_ns < s.end_ns
) st ON st.trace_id = m.trace_id AND st.{{ id }} = m.{{ id }}
{%- endmacro %}
