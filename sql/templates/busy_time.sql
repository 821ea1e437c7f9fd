-- The GPU's busy time per (trace, device): the length of the union of the
-- intervals (ts_ns, end_ns) of `source` (a relation with trace_id, device,
-- ts_ns, end_ns), overlaps on several streams counted once. Sorted by start,
-- each interval adds the part of it that ends after every earlier interval
-- ended (ties in ts_ns may come in any order: the sum does not depend on it).
-- Emits two CTEs, busy_prev and busy (trace_id, device, busy_ns); the
-- kernels report and diff_summary import it. gpu_busy_intervals (a view)
-- merges the same intervals into rows instead.
{% macro busy_ctes(source) -%}
busy_prev AS (
    SELECT trace_id, device, ts_ns, end_ns,
           max(end_ns) OVER (PARTITION BY trace_id, device ORDER BY ts_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM {{ source }}
),
busy AS (
    SELECT trace_id, device,
           sum(greatest(end_ns - greatest(ts_ns, coalesce(prev_end, ts_ns)), 0)) AS busy_ns
    FROM busy_prev
    GROUP BY trace_id, device
)
{%- endmacro %}
