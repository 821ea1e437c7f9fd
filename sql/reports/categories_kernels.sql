-- categories_kernels: the kernels of one category, by time: how the Inductor
-- GPU-profiling doc picks what to optimise.
-- variant of: categories (with --category X; its options)
-- question: Which kernels of this category take each GPU's time?
--
-- The kernels (and copies, memsets) whose category (kernel_categories, or
-- --rules FILE first) is --category, per device and kernel name over the
-- whole trace: count, time, % of the device's GPU time (the sum of all its
-- events' durations) and % of the trace's profiled wall time
-- (trace_files.wall_ns), ordered by time; --limit per device.
--
-- requires: gpu_activity, kernel_categories, trace_files, launches, cpu_ops
--
-- Columns:
-- run       VARCHAR  run label
-- rank      INTEGER  rank of the trace
-- trace_id  INTEGER  trace
-- device    INTEGER  GPU index
-- category  VARCHAR  the category asked for
-- name      VARCHAR  kernel name
-- count     BIGINT   executions
-- total_us  DOUBLE   total duration, µs
-- mean_us   DOUBLE   per execution, µs
-- gpu_pct   DOUBLE   total_us / the device's GPU time (sum of all its events), %
-- wall_pct  DOUBLE   total_us / the trace's profiled wall time, %
{% from "templates/scope.sql" import run_scope, device_scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/categories.sql" import categorized, helpers_outside_conv, event_category %}
WITH scope AS (
    SELECT trace_id, run, rank, wall_ns FROM trace_files WHERE TRUE {{ run_scope() }}
),
cats AS (
    {{ categorized(rules) | indent(4) }}
),
a AS (
    SELECT g.trace_id, g.device, g.name, g.dur_ns, {{ event_category() }} AS category
    FROM gpu_activity g
    JOIN scope USING (trace_id)
    JOIN cats c ON c.kind = g.kind AND c.name = g.name
    {{ helpers_outside_conv('g') }}
    WHERE TRUE {{ device_scope('g.') }}
),
device_time AS (
    SELECT trace_id, device, sum(dur_ns) AS device_ns FROM a GROUP BY ALL
),
k AS (
    SELECT trace_id, device, category, name, count(*) AS count, sum(dur_ns) AS total_ns
    FROM a
    WHERE category = $category
    GROUP BY ALL
)
SELECT s.run, s.rank, k.trace_id, k.device, k.category, k.name, k.count,
       k.total_ns / 1e3 AS total_us, k.total_ns / 1e3 / k.count AS mean_us,
       100.0 * k.total_ns / nullif(d.device_ns, 0) AS gpu_pct,
       100.0 * k.total_ns / nullif(s.wall_ns, 0) AS wall_pct
FROM k
JOIN device_time d USING (trace_id, device)
JOIN scope s USING (trace_id)
{%- if limit %}
QUALIFY row_number() OVER (PARTITION BY k.trace_id, k.device ORDER BY k.total_ns DESC, k.name) <= $limit
{%- endif %}
ORDER BY s.run, s.rank NULLS LAST, k.trace_id, k.device, k.total_ns DESC, k.name

-- @notes
SELECT * FROM (
    SELECT 'no device events of category ''' || $category || ''' in this trace; its categories: '
           || string_agg(DISTINCT {{ event_category() }}, ', ' ORDER BY {{ event_category() }}) AS note,
           false AS instead
    FROM gpu_activity g
    JOIN ({{ categorized(rules) | indent(10) }}) c ON c.kind = g.kind AND c.name = g.name
    {{ helpers_outside_conv('g') }}
    WHERE NOT EXISTS (SELECT 1 FROM {{ result }})
      AND g.trace_id IN (SELECT trace_id FROM trace_files WHERE TRUE {{ run_scope() }}) {{ device_scope('g.') }}
    HAVING count(*) > 0
)
UNION ALL
SELECT * FROM ({{ gpu_notes() | indent(15) }})
