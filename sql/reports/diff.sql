-- diff: what changed between two sides A and B (two runs), one row per name at the
-- chosen level: GPU kernel (default), CPU operator, kernel category or device.
-- Each side is aggregated on its own first (count and total per raw name), and only
-- those small per-name tables are joined: raw events of A and B are never joined.
--
-- Levels (template `by`):
--   kernel    every gpu_ops row (kernels, memcpys, memsets), by full name
--   op        every cpu_ops row but the ProfilerStep#N ones (steps: 2021 traces record
--             them as operators), by operator name (and input_dims with `shapes`);
--             time is inclusive CPU time (dur_ns), or self time with op_time = 'self'
--   category  gpu_ops by kernel_categories.category (a MIOpen conv helper outside a
--             convolution: elementwise; templates/categories.sql event_category)
--   device    gpu_ops by device index ('device 0', ...): A's device 0 against B's device 0
-- Name normalisation (template `normalize`, for kernel and op levels), applied in order:
--   1. hexadecimal literals '0x' + hex digits            -> '0x?'
--   2. a name starting 'triton_' loses a final '_<digits>' (Inductor's kernel numbering:
--      triton_poi_fused_add_12 -> triton_poi_fused_add)
--   3. every number that does not continue a word (not after a letter, digit or '_')
--      -> 'N': template values, lambda numbers, casts
--      (vectorized_elementwise_kernel<4, ...> -> <N, ...>, {lambda()#2} -> {lambda()#N};
--      tilesize128x128, float2, _12 are kept)
--   4. (template `collapse_templates` only) every <...> template argument list, nested
--      ones included (up to 12 levels deep), -> '<>'
-- Rows whose normalised names are equal are added together.
--
-- Order: sort = 'abs_delta' (|delta_total_us| descending, default), 'delta' (largest
-- increase first), 'a_total', 'b_total' (descending), 'name'; ties by name.
-- With per_step, counts and totals are per-step averages: divided by the side's number of
-- distinct ProfilerStep#N numbers, counted once across ranks, so a multi-rank run gives
-- per-step sums over its ranks; means are always per call.
--
-- Parameters (duckprof/diff.py binds them): run_a, run_b (run labels), steps_a, steps_b
-- (divisors when per_step), threshold_pct, min_delta_us, statuses (VARCHAR[] or NULL = all),
-- row_limit (NULL = all). Template: by, shapes, op_time, normalize, collapse_templates,
-- raw_names, per_step, sort, qa, qb (catalog prefix of each side: '' or 'dp_src.').
-- requires: gpu_ops, cpu_ops, kernel_categories, trace_files, steps, launches
--
-- Columns:
-- name            VARCHAR  kernel / operator name (normalised with `normalize`), category,
--                          or 'device N'
-- input_dims      VARCHAR  (only with --group-by-input-shape) the op's 'Input Dims' as JSON text
-- a_count         BIGINT   calls / executions in A (DOUBLE with per_step; NULL: absent in A)
-- b_count         BIGINT   same in B
-- delta_count     BIGINT   [wide] b_count - a_count (absent side counts as 0)
-- a_total_us      DOUBLE   total time in A, us (op level: CPU time; others: device time)
-- b_total_us      DOUBLE   total time in B, us
-- delta_total_us  DOUBLE   b_total_us - a_total_us, us (absent side counts as 0)
-- delta_pct       DOUBLE   100 * delta_total_us / a_total_us; NULL when A's total is 0 or absent
-- a_mean_us       DOUBLE   [wide] mean time per call in A, us
-- b_mean_us       DOUBLE   [wide] mean time per call in B, us
-- status          VARCHAR  'added' (only in B), 'removed' (only in A), 'slower' / 'faster'
--                          (|delta_total_us| >= min_delta_us and, when A's total > 0,
--                          |delta_pct| >= threshold_pct), else 'unchanged'
-- a_raw_names     VARCHAR  (only with --raw-names) the distinct raw names in A behind this row, ' | '-separated
-- b_raw_names     VARCHAR  (only with --raw-names) same for B

{% from "templates/scope.sql" import in_run %}
{% from "templates/categories.sql" import helpers_outside_conv, event_category %}
{%- macro scope(q, s) -%}
{{ in_run('run_' ~ s, catalog=q) }}
{%- endmacro %}

{%- macro side(q, s) -%}
{%- if by == 'kernel' %}
    SELECT name AS key, NULL::VARCHAR AS shapes, count(*) AS n, sum(dur_ns) AS total_ns
    FROM {{ q }}gpu_ops
    WHERE {{ scope(q, s) }}
    GROUP BY name
{%- elif by == 'op' %}
    SELECT name AS key, {% if shapes %}input_dims::VARCHAR{% else %}NULL::VARCHAR{% endif %} AS shapes,
           count(*) AS n, sum({% if op_time == 'self' %}self_ns{% else %}dur_ns{% endif %}) AS total_ns
    FROM {{ q }}cpu_ops o
    WHERE {{ scope(q, s) }}
      -- steps are not operators (2021 traces record ProfilerStep#N as one)
      AND NOT EXISTS (SELECT 1 FROM {{ q }}steps st WHERE st.trace_id = o.trace_id AND st.event_id = o.event_id)
    GROUP BY ALL
{%- elif by == 'category' %}
    SELECT {{ event_category() }} AS key, NULL::VARCHAR AS shapes, sum(x.n) AS n, sum(x.total_ns) AS total_ns
    FROM (SELECT g.kind, g.name, x.event_id, count(*) AS n, sum(g.dur_ns) AS total_ns
          FROM {{ q }}gpu_ops g
          {{ helpers_outside_conv('g', q=q) }}
          WHERE {{ in_run('run_' ~ s, alias='g.', catalog=q) }}
          GROUP BY ALL) x
    JOIN {{ q }}kernel_categories c ON c.kind = x.kind AND c.name = x.name
    GROUP BY 1
{%- elif by == 'device' %}
    SELECT 'device ' || coalesce(device::VARCHAR, '?') AS key, NULL::VARCHAR AS shapes,
           count(*) AS n, sum(dur_ns) AS total_ns
    FROM {{ q }}gpu_ops
    WHERE {{ scope(q, s) }}
    GROUP BY device
{%- endif %}
{%- endmacro %}

WITH raw AS (
    SELECT 'a' AS side, * FROM ({{ side(qa, 'a') }})
    UNION ALL
    SELECT 'b' AS side, * FROM ({{ side(qb, 'b') }})
),
named AS (
    SELECT side, key, shapes, n, total_ns,
{%- if normalize %}
           {% if collapse_templates %}replace({% for i in range(12) %}regexp_replace({% endfor %}{% endif -%}
           regexp_replace(
               regexp_replace(
                   regexp_replace(key, '0x[0-9A-Fa-f]+', '0x?', 'g'),
                   '^(triton_[A-Za-z0-9_]*)_[0-9]+$', '\1'),
               '(^|[^A-Za-z0-9_])[0-9]+\b', '\1N', 'g')
           {%- if collapse_templates %}{% for i in range(12) %}, '<[^<>]*>', '«»', 'g'){% endfor %}, '«»', '<>'){% endif %}
           AS name
{%- else %}
           key AS name
{%- endif %}
    FROM raw
),
agg AS (
    SELECT name, shapes,
           sum(n) FILTER (WHERE side = 'a') AS a_n,
           sum(n) FILTER (WHERE side = 'b') AS b_n,
           coalesce(sum(total_ns) FILTER (WHERE side = 'a'), 0) AS a_ns,
           coalesce(sum(total_ns) FILTER (WHERE side = 'b'), 0) AS b_ns
{%- if raw_names %},
           string_agg(DISTINCT key, ' | ' ORDER BY key) FILTER (WHERE side = 'a') AS a_raw_names,
           string_agg(DISTINCT key, ' | ' ORDER BY key) FILTER (WHERE side = 'b') AS b_raw_names
{%- endif %}
    FROM named
    GROUP BY name, shapes
),
scaled AS (
    SELECT *,
{%- if per_step %}
           a_n / $steps_a AS a_count, b_n / $steps_b AS b_count,
           coalesce(a_n, 0) / $steps_a AS a_c0, coalesce(b_n, 0) / $steps_b AS b_c0,
           a_ns / 1000.0 / $steps_a AS a_us, b_ns / 1000.0 / $steps_b AS b_us
{%- else %}
           a_n::BIGINT AS a_count, b_n::BIGINT AS b_count,
           coalesce(a_n, 0)::BIGINT AS a_c0, coalesce(b_n, 0)::BIGINT AS b_c0,
           a_ns / 1000.0 AS a_us, b_ns / 1000.0 AS b_us
{%- endif %}
    FROM agg
),
result AS (
    SELECT name,
{%- if shapes %}
           shapes AS input_dims,
{%- endif %}
           a_count, b_count, b_c0 - a_c0 AS delta_count,
           CASE WHEN a_n IS NOT NULL THEN a_us END AS a_total_us,
           CASE WHEN b_n IS NOT NULL THEN b_us END AS b_total_us,
           b_us - a_us AS delta_total_us,
           CASE WHEN a_us <> 0 THEN 100.0 * (b_us - a_us) / a_us END AS delta_pct,
           a_ns / 1000.0 / a_n AS a_mean_us,
           b_ns / 1000.0 / b_n AS b_mean_us,
           CASE WHEN a_n IS NULL THEN 'added'
                WHEN b_n IS NULL THEN 'removed'
                WHEN b_us <> a_us AND abs(b_us - a_us) >= $min_delta_us
                     AND (a_us = 0 OR abs(100.0 * (b_us - a_us) / a_us) >= $threshold_pct)
                    THEN CASE WHEN b_us > a_us THEN 'slower' ELSE 'faster' END
                ELSE 'unchanged'
           END AS status
{%- if raw_names %},
           a_raw_names, b_raw_names
{%- endif %}
    FROM scaled
)
SELECT *
FROM result
WHERE $statuses IS NULL OR list_contains($statuses, status)
ORDER BY
{%- if sort == 'delta' %} delta_total_us DESC,
{%- elif sort == 'a_total' %} a_total_us DESC NULLS LAST,
{%- elif sort == 'b_total' %} b_total_us DESC NULLS LAST,
{%- elif sort == 'abs_delta' %} abs(delta_total_us) DESC,
{%- endif %} name{% if shapes %}, input_dims{% endif %}
LIMIT $row_limit
