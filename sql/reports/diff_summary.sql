-- diff_summary: the block above the diff table: the size and shape of sides A and B
-- (two runs) and their differences, one row per metric.
--
-- Parameters: run_a, run_b (run labels). Template: qa, qb (catalog prefix of each side).
-- requires: trace_files, steps, gpu_ops
--
-- The metrics (their names carry their unit):
--   traces                trace files in the run
--   steps                 distinct ProfilerStep#N numbers (0: no step annotations)
--   wall_us               profiled window, us: last end - first start over all complete
--                         events of a trace (the longest trace of the run)
--   step_mean_us          mean ProfilerStep#N duration (host-side window), us
--   gpu_devices           (trace, device) pairs with device activity
--   gpu_busy_us           time with at least one kernel/memcpy/memset running, us: the union
--                         of gpu_ops intervals per (trace, device), summed over devices
--   gpu_busy_pct          100 * gpu_busy_us / (each busy device's GPU window, summed): its first
--                         device event's start to its last one's end, as `duckprof runs` and
--                         report gpu-time divide by (trace_summary)
--   kernels               kernel executions (gpu_ops kind 'kernel')
--   kernel_us             sum of kernel durations, us
--   gpu_busy_us_per_step, kernels_per_step, kernel_us_per_step
--                         the same divided by steps (NULL without steps)
--
-- Columns:
-- metric     VARCHAR  the metric
-- a          DOUBLE   value for A (NULL: not defined, e.g. no steps)
-- b          DOUBLE   value for B
-- delta      DOUBLE   b - a (for gpu_busy_pct: percentage points)
-- delta_pct  DOUBLE   100 * delta / a; NULL when a is 0 or NULL, and for *_pct metrics

{% from "templates/intervals.sql" import union_lengths %}
{%- macro stats(q, s) %}
    WITH scope AS (SELECT trace_id FROM {{ q }}trace_files WHERE run = $run_{{ s }}),
    windows AS (
        SELECT trace_id, wall_ns FROM {{ q }}trace_files
        WHERE trace_id IN (SELECT trace_id FROM scope) AND wall_ns IS NOT NULL
    ),
    st AS (
        SELECT count(DISTINCT step) AS steps, avg(dur_ns) AS step_mean_ns
        FROM {{ q }}steps
        WHERE trace_id IN (SELECT trace_id FROM scope)
    ),
    dev_ops AS (
        SELECT trace_id, device, kind, ts_ns, end_ns, dur_ns
        FROM {{ q }}gpu_ops
        WHERE trace_id IN (SELECT trace_id FROM scope) AND dur_ns >= 0
    ),
    busy AS (
        {{ union_lengths('dev_ops', ['trace_id', 'device']) | indent(8) }}
    ),
    per_device AS (
        SELECT o.trace_id, o.device, b.busy_ns, max(o.end_ns) - min(o.ts_ns) AS window_ns,
               count(*) FILTER (WHERE o.kind = 'kernel') AS kernels,
               coalesce(sum(o.dur_ns) FILTER (WHERE o.kind = 'kernel'), 0) AS kernel_ns
        FROM dev_ops o
        JOIN busy b ON b.trace_id = o.trace_id AND b.device IS NOT DISTINCT FROM o.device
        GROUP BY o.trace_id, o.device, b.busy_ns
    ),
    gpu AS (
        SELECT count(*) AS gpu_devices, sum(d.busy_ns) AS busy_ns, sum(d.window_ns) AS busy_window_ns,
               sum(d.kernels) AS kernels, sum(d.kernel_ns) AS kernel_ns
        FROM per_device d
    )
    SELECT (SELECT count(*) FROM scope)::DOUBLE AS traces,
           st.steps::DOUBLE AS steps,
           (SELECT max(wall_ns) FROM windows) / 1000.0 AS wall_us,
           st.step_mean_ns / 1000.0 AS step_mean_us,
           gpu.gpu_devices::DOUBLE AS gpu_devices,
           coalesce(gpu.busy_ns, 0) / 1000.0 AS gpu_busy_us,
           100.0 * gpu.busy_ns / nullif(gpu.busy_window_ns, 0) AS gpu_busy_pct,
           coalesce(gpu.kernels, 0)::DOUBLE AS kernels,
           coalesce(gpu.kernel_ns, 0) / 1000.0 AS kernel_us,
           coalesce(gpu.busy_ns, 0) / 1000.0 / nullif(st.steps, 0) AS gpu_busy_us_per_step,
           coalesce(gpu.kernels, 0) / nullif(st.steps, 0) AS kernels_per_step,
           coalesce(gpu.kernel_ns, 0) / 1000.0 / nullif(st.steps, 0) AS kernel_us_per_step
    FROM st, gpu
{%- endmacro %}

WITH wide AS (
    SELECT 'a' AS side, * FROM ({{ stats(qa, 'a') }})
    UNION ALL
    SELECT 'b' AS side, * FROM ({{ stats(qb, 'b') }})
),
long AS (
    SELECT side, metric, v
    FROM wide UNPIVOT INCLUDE NULLS (v FOR metric IN (
        traces, steps, wall_us, step_mean_us, gpu_devices, gpu_busy_us, gpu_busy_pct, kernels,
        kernel_us, gpu_busy_us_per_step, kernels_per_step, kernel_us_per_step))
),
metrics AS (
    SELECT metric, max(v) FILTER (WHERE side = 'a') AS a, max(v) FILTER (WHERE side = 'b') AS b
    FROM long
    GROUP BY metric
)
SELECT metric, a, b, b - a AS delta,
       CASE WHEN NOT metric LIKE '%\_pct' ESCAPE '\' AND a <> 0 THEN 100.0 * (b - a) / a END AS delta_pct
FROM metrics
ORDER BY list_position(['traces', 'steps', 'wall_us', 'step_mean_us', 'gpu_devices', 'gpu_busy_us',
                        'gpu_busy_pct', 'kernels', 'kernel_us', 'gpu_busy_us_per_step',
                        'kernels_per_step', 'kernel_us_per_step'], metric)
