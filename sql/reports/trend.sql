-- trend: one metric across runs, in load order or ordered by a tag, with the runs where it moved.
-- question: How did step time, GPU busy %, or the time of a kernel, an operator or a kernel category change from run to run?
--
-- One row per run (runs without the --by tag are left out, and named in a
-- note). Metrics: step_time = the run's mean ProfilerStep duration and busy =
-- its GPU busy % (both from the runs view: stored at load, no events read);
-- kernel / op / category = the summed duration of the kernels whose name
-- matches --name (ILIKE: '%gemm%'), of the CPU operators whose name matches
-- (inclusive time of each call), or of the device activity in the kernel
-- category --name (kernel_categories; a MIOpen conv helper outside a
-- convolution is elementwise: templates/categories.sql event_category), over
-- every trace of the run; 0 when the run has none. --per-step divides those
-- by the run's profiler steps
-- (summed over its traces). Order: the tag's value, numerically when every
-- value is a number, else as text; without --by, the run's first load time.
-- change_pct compares each run with the one before it (busy, itself a %:
-- change_pp, the difference in percentage points, as diff's delta of
-- gpu_busy_pct); moved is 'up' or 'down' when the change is more than
-- --threshold (% or, for busy, percentage points).
--
-- option: --metric CHOICE(step_time,busy,kernel,op,category) = step_time  what to follow
-- option: --name VARCHAR  with --metric kernel, op or category: the name or ILIKE pattern ('%gemm%')
-- option: --by VARCHAR  order the runs by this tag (duckprof tag); default: load time
-- option: --threshold DOUBLE >= 0 = 10  flag a run whose value moved more than this % (busy: percentage points) from the run before
-- option: --per-step FLAG  kernel, op, category: per profiler step instead of per run
-- requires: runs, kernels, cpu_ops, gpu_ops, kernel_categories, steps, trace_files, launches
-- example: duckprof trend --db perf.duckdb --metric step_time --by commit
--
-- Columns:
-- position     BIGINT     1, 2, ... in the order
-- run          VARCHAR    run label
-- order_value  VARCHAR    the --by tag's value, or the run's first load time
-- value_us     DOUBLE     the metric, µs (only with --metric step_time, kernel, op or category)
-- value_pct    DOUBLE     the metric, % (only with --metric busy)
-- change_pct   DOUBLE     change from the run before, % (only with --metric step_time, kernel, op or category)
-- change_pp    DOUBLE     change from the run before, percentage points (only with --metric busy)
-- moved        VARCHAR    'up' or 'down' when the change is more than --threshold, else NULL
{% from "templates/categories.sql" import helpers_outside_conv, event_category %}
{% set unit = 'pct' if metric == 'busy' else 'us' %}
{%- set change = 'pp' if metric == 'busy' else 'pct' %}
WITH keyed AS (
    SELECT run, first_loaded_at,
           {% if by is not none %}tags[$by]{% else %}strftime(first_loaded_at, '%Y-%m-%d %H:%M:%S'){% endif %}
               AS order_value
    FROM runs
    WHERE TRUE {% if run is not none %}AND run = $run{% endif %}
),
numeric AS (
    SELECT coalesce(bool_and(try_cast(order_value AS DOUBLE) IS NOT NULL), false) AS yes
    FROM keyed WHERE order_value IS NOT NULL
),
ordered AS (
    SELECT run, order_value,
           row_number() OVER (ORDER BY CASE WHEN (SELECT yes FROM numeric) THEN try_cast(order_value AS DOUBLE) END,
                                       order_value, first_loaded_at, run) AS position
    FROM keyed
    WHERE order_value IS NOT NULL
),
metric AS (
    {%- if metric == 'step_time' %}
    SELECT run, step_mean_us AS v FROM runs
    {%- elif metric == 'busy' %}
    SELECT run, busy_pct AS v FROM runs
    {%- else %}
    SELECT f.run, sum(x.dur_ns) / 1e3 AS v
    {%- if metric == 'kernel' %}
    FROM kernels x
    {%- elif metric == 'op' %}
    FROM cpu_ops x
    {%- else %}
    FROM gpu_ops x JOIN kernel_categories c USING (kind, name)
    {{ helpers_outside_conv('x', x='h') }}
    {%- endif %}
    JOIN trace_files f ON f.trace_id = x.trace_id
    WHERE {% if metric == 'category' %}{{ event_category(x='h') }} = $name{% else %}x.name ILIKE $name{% endif %}
    GROUP BY f.run
    {%- endif %}
),
{%- if per_step and metric in ('kernel', 'op', 'category') %}
step_counts AS (
    SELECT f.run, count(*) AS n FROM steps s JOIN trace_files f USING (trace_id) GROUP BY f.run
),
{%- endif %}
valued AS (
    SELECT o.position, o.run, o.order_value,
           {% if metric in ('kernel', 'op', 'category') %}coalesce(m.v, 0){% else %}m.v{% endif %}
           {%- if per_step and metric in ('kernel', 'op', 'category') %} / nullif(sc.n, 0){% endif %} AS v
    FROM ordered o
    LEFT JOIN metric m USING (run)
    {%- if per_step and metric in ('kernel', 'op', 'category') %}
    LEFT JOIN step_counts sc USING (run)
    {%- endif %}
),
changes AS (
    SELECT *,
           {%- if change == 'pp' %}
           v - lag(v) OVER (ORDER BY position) AS change
           {%- else %}
           100.0 * (v - lag(v) OVER (ORDER BY position)) / nullif(lag(v) OVER (ORDER BY position), 0) AS change
           {%- endif %}
    FROM valued
)
SELECT position, run, order_value, v AS value_{{ unit }}, change AS change_{{ change }},
       CASE WHEN abs(change) > $threshold THEN CASE WHEN change > 0 THEN 'up' ELSE 'down' END END AS moved
FROM changes
ORDER BY position

-- @notes
SELECT note, instead FROM (
    SELECT 0 AS k, 'no runs in the database' AS note, true AS instead
    WHERE NOT EXISTS (SELECT 1 FROM runs)
    {%- if by is not none %}
    UNION ALL
    SELECT 1, count(*) || ' run(s) without the tag ''' || $by || ''' left out: ' || string_agg(run, ', ' ORDER BY run),
           count(*) = (SELECT count(*) FROM runs)
    FROM runs WHERE tags[$by] IS NULL
    HAVING count(*) > 0
    {%- endif %}
    UNION ALL
    SELECT 2, 'run ' || run || ': no value (no ' ||
              {% if metric == 'busy' %}'GPU activity'{% else %}'ProfilerStep#N annotations'{% endif %} || ')', false
    FROM {{ result }} WHERE value_{{ unit }} IS NULL
)
ORDER BY k, note
