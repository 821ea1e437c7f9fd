-- launch_owner: which host call a launch's device time belongs to, as report ops
-- (its self device time) and call_totals (device time launched inside a call)
-- count it, written once.
-- external_owners(launches, where): one row (trace_id, launch_event_id, owner_id)
--   per launch call whose External id names a cpu_op (launches.op_link =
--   'external_id') other than its innermost enclosing cpu_op by time
--   (runtime.op_event_id), when that op contains the call on the call's thread.
--   A 0 µs call at an op's start or end is inside that op by time as much as
--   inside its parent, and only the id says which one launched it (torch's
--   key_averages and torch-tb-profiler attach a kernel to the op of its
--   External id; the plugin's test_external_id). Every other launch call keeps
--   the callers' rule: its innermost enclosing op, or the user annotation that
--   is its parent. launches: launches or derived_launches; where: a filter on its rows.
--   x is MATERIALIZED: flattened, DuckDB may join cpu_ops to runtime first on
--   pid, tid and the times alone, across traces: many ranks of one job share
--   their pids and tids (1000 ranks: 1.17 M pairs, 0.8-1.2 CPU-s of
--   derived_call_totals; benchmarks/README.md, stop 36).
{% macro external_owners(launches, where='TRUE') -%}
WITH x AS MATERIALIZED (
    SELECT l.trace_id, l.launch_event_id, l.op_event_id, r.pid, r.tid, r.ts_ns, r.end_ns
    FROM (SELECT trace_id, launch_event_id, op_event_id FROM {{ launches }}
          WHERE op_link = 'external_id' AND {{ where }}) l
    JOIN runtime r ON r.trace_id = l.trace_id AND r.event_id = l.launch_event_id
    WHERE l.op_event_id IS DISTINCT FROM r.op_event_id
)
SELECT x.trace_id, x.launch_event_id, any_value(x.op_event_id) AS owner_id
FROM x
JOIN cpu_ops o ON o.trace_id = x.trace_id AND o.event_id = x.op_event_id
WHERE o.pid = x.pid AND o.tid = x.tid AND o.ts_ns <= x.ts_ns AND x.end_ns <= o.end_ns
GROUP BY x.trace_id, x.launch_event_id
HAVING count(DISTINCT x.op_event_id) = 1  -- (the kernels of one call could name different ops)
{%- endmacro %}
