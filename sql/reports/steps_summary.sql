-- steps_summary: each per-step figure of `report steps` summarised across the
-- steps: mean, median, min, max, coefficient of variation, and the outlier.
-- variant of: steps (with --summary; its options)
-- question: How much do the steps vary, and which step is the outlier?
--
-- One row per trace and figure (the columns of `report steps`: step_us,
-- gpu_busy_pct, kernel_us, ... other_us; computed as there,
-- sql/templates/steps.sql). cv_pct = population standard deviation / mean.
-- The outlier is the step furthest from the median (of two as far, the one
-- with the larger value: with two steps, the slower, not the first; then the
-- earlier); none when every step has the same value (one step, or a figure that is 0
-- throughout). A trace without steps has one window, so its statistics are those of
-- that one value.
--
-- option: --rules VARCHAR  CSV of your own kernel category rules (columns pattern, category), tried first
-- requires: steps, trace_files, gpu_activity, kernel_categories, launches, cpu_ops, user_annotations
--
-- Columns:
-- run                VARCHAR  run label
-- rank               INTEGER  rank of the trace
-- trace_id           INTEGER  trace
-- figure             VARCHAR  which figure: step_us, gpu_busy_pct, kernel_us, comm_us, memcpy_us, memset_us,
--                             dataloader_us, optimizer_us, backward_us, host_comm_us, forward_us, other_us (its unit:
--                             µs, or % for gpu_busy_pct)
-- steps              BIGINT   steps (windows) summarised
-- mean               DOUBLE   mean over the steps, in the figure's unit
-- median             DOUBLE   median
-- min                DOUBLE   smallest
-- max                DOUBLE   largest
-- cv_pct             DOUBLE   coefficient of variation: standard deviation / mean, %
-- outlier_step       BIGINT   the step furthest from the median (NULL when every step has the same value)
-- outlier_vs_median_pct  DOUBLE  its value relative to the median, %
{% from "templates/steps.sql" import step_figures with context %}
WITH {{ step_figures(rules) }},
per_step AS (
    SELECT trace_id, step, ts_ns,
           step_ns / 1e3 AS step_us, 100.0 * busy_ns / nullif(step_ns, 0) AS gpu_busy_pct,
           kernel_ns / 1e3 AS kernel_us, comm_ns / 1e3 AS comm_us, memcpy_ns / 1e3 AS memcpy_us,
           memset_ns / 1e3 AS memset_us, dataloader_ns / 1e3 AS dataloader_us,
           optimizer_ns / 1e3 AS optimizer_us, backward_ns / 1e3 AS backward_us,
           host_comm_ns / 1e3 AS host_comm_us, forward_ns / 1e3 AS forward_us, other_ns / 1e3 AS other_us
    FROM figures
),
long AS (
    UNPIVOT per_step ON step_us, gpu_busy_pct, kernel_us, comm_us, memcpy_us, memset_us, dataloader_us,
                        optimizer_us, backward_us, host_comm_us, forward_us, other_us
    INTO NAME figure VALUE v
),
med AS (
    SELECT *, median(v) OVER (PARTITION BY trace_id, figure) AS med FROM long
),
-- mean and deviation from exact integer sums: DuckDB's avg and stddev of
-- doubles add in an order that varies between runs, and so did their last
-- digits. The times are whole ns (µs x 1e3: exact), the busy % in units of
-- 1e-12; n * sum(x^2) - sum(x)^2 is exact in HUGEINT for any real run of
-- steps, past that (try: NULL) the double variance.
spread AS (
    SELECT trace_id, figure, q1 / n / scale AS mean,
           coalesce(try(n * q2 - q1 * q1) / (n * n * 1.0), q_var) ** 0.5 / scale AS sd
    FROM (SELECT trace_id, figure, any_value(scale) AS scale, count(q) AS n, sum(q) AS q1, sum(q * q) AS q2,
                 var_pop(q) AS q_var
          FROM (SELECT trace_id, figure, scale, round(v * scale)::HUGEINT AS q
                FROM (SELECT *, CASE WHEN figure = 'gpu_busy_pct' THEN 1e12 ELSE 1e3 END AS scale FROM long))
          GROUP BY trace_id, figure)
)
SELECT f.run, f.rank, m.trace_id, m.figure, count(*) AS steps,
       any_value(sp.mean) AS mean, any_value(m.med) AS median, min(m.v) AS min, max(m.v) AS max,
       100.0 * any_value(sp.sd) / nullif(any_value(sp.mean), 0) AS cv_pct,
       CASE WHEN max(m.v) > min(m.v) THEN arg_max(m.step, (abs(m.v - m.med), m.v, -m.ts_ns)) END AS outlier_step,
       CASE WHEN max(m.v) > min(m.v)
            THEN 100.0 * (arg_max(m.v, (abs(m.v - m.med), m.v, -m.ts_ns)) / nullif(any_value(m.med), 0) - 1)
       END AS outlier_vs_median_pct
FROM med m
JOIN trace_files f USING (trace_id)
LEFT JOIN spread sp ON sp.trace_id = m.trace_id AND sp.figure = m.figure
GROUP BY f.run, f.rank, m.trace_id, m.figure
ORDER BY f.run, f.rank NULLS LAST, m.trace_id,
         list_position(['step_us', 'gpu_busy_pct', 'kernel_us', 'comm_us', 'memcpy_us', 'memset_us', 'dataloader_us',
                        'optimizer_us', 'backward_us', 'host_comm_us', 'forward_us', 'other_us'], m.figure)

-- @notes
SELECT f.file_name || ': no ProfilerStep#N annotations in this trace: the statistics are of its whole window' AS note
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id)
  AND f.trace_id IN (SELECT trace_id FROM {{ result }})
