-- steps: per profiler step: wall time, GPU busy %, device time by kind and
-- category, and where the host's time went (data loading, optimizer, backward,
-- forward).
-- question: How long did each step take, and where did its time go?
--
-- One row per ProfilerStep#N (its host-side range on the thread that runs the
-- steps); a trace without steps gets one row for its whole profiled window
-- (step empty) and a note. What each figure counts (sql/templates/steps.sql,
-- step_figures): device events belong to the step in which their launch call
-- started; gpu_busy_pct is the part of the step with any device event running
-- (all devices of the trace together); the host's time is split by priority,
-- each instant once: dataloader (enumerate(DataLoader)* / enumerate(DataPipe)*,
-- Lightning's *dataloader_next), backward (autograd::engine::evaluate_function:
-- ... and *Backward* operators, any thread; Lightning's *.backward), a
-- Lightning step's forward (*.training_step ...), optimizer (Optimizer.step* /
-- Optimizer.zero_grad*: what the above leave, as a closure runs the forward
-- and backward inside it), host communication (gloo's collectives on the host, a CPU job's:
-- their exposed part), forward (the outermost operators and user
-- annotations on the step's thread), other (the rest). --summary gives mean, median, min, max and
-- coefficient of variation of each figure across the steps, and the outlier
-- step (sql/reports/steps_summary.sql); --breakdown tensorboard gives
-- TensorBoard's step-time breakdown (sql/reports/steps_tensorboard.sql).
--
-- option: --summary FLAG  statistics across the steps instead (sql/reports/steps_summary.sql)
-- option: --breakdown CHOICE(tensorboard)  TensorBoard profiler's step-time breakdown instead (sql/reports/steps_tensorboard.sql)
-- option: --rules VARCHAR  CSV of your own kernel category rules (columns pattern, category), tried first
-- example: duckprof report steps trace.json.gz --summary
-- requires: steps, trace_files, gpu_activity, kernel_categories, launches, cpu_ops, user_annotations, gpu_ops
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- step             BIGINT   N of ProfilerStep#N, or its place in time order where N repeat (the steps view); empty: the whole trace, which has no steps
-- step_us          DOUBLE   the step's host-side duration (wall time), µs
-- vs_median_pct    DOUBLE   step_us relative to the median step, % (+5: 5% slower)
-- gpu_busy_pct     DOUBLE   part of the step with a device event running, %
-- kernel_us        DOUBLE   kernels launched in the step (not communication), µs
-- comm_us          DOUBLE   communication kernels (NCCL/RCCL) launched in the step, µs
-- memcpy_us        DOUBLE  [wide]  memcpys launched in the step, µs
-- memset_us        DOUBLE  [wide]  memsets launched in the step, µs
-- dataloader_us    DOUBLE   host time in data loading, µs
-- optimizer_us     DOUBLE   host time in the optimizer (not data loading, nor a closure's forward and
--                           backward), µs
-- backward_us      DOUBLE   host time in backward operators (not data loading), µs
-- host_comm_us     DOUBLE   host time in gloo collectives (a CPU job's communication, any thread;
--                           none of the above: exposed), µs
-- forward_us       DOUBLE   host time in the other operators on the step's thread (and a Lightning
--                           step's forward ranges), µs
-- other_us         DOUBLE   the rest of the step: Python, waiting, ..., µs
-- top_categories   VARCHAR  the three kernel categories with the most device time in the step,
--                           with their share of it
{% from "templates/steps.sql" import step_figures with context %}
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/numbers.sql" import rounded %}
WITH {{ step_figures(rules) }}
SELECT f.run, f.rank, x.trace_id, x.step, x.step_ns / 1e3 AS step_us,
       CASE WHEN x.step IS NOT NULL
            THEN 100.0 * (x.step_ns / median(x.step_ns) OVER (PARTITION BY x.trace_id) - 1) END AS vs_median_pct,
       100.0 * x.busy_ns / nullif(x.step_ns, 0) AS gpu_busy_pct,
       x.kernel_ns / 1e3 AS kernel_us, x.comm_ns / 1e3 AS comm_us,
       x.memcpy_ns / 1e3 AS memcpy_us, x.memset_ns / 1e3 AS memset_us,
       x.dataloader_ns / 1e3 AS dataloader_us, x.optimizer_ns / 1e3 AS optimizer_us,
       x.backward_ns / 1e3 AS backward_us, x.host_comm_ns / 1e3 AS host_comm_us, x.forward_ns / 1e3 AS forward_us, x.other_ns / 1e3 AS other_us,
       x.top_categories
FROM figures x
JOIN trace_files f USING (trace_id)
ORDER BY f.run, f.rank NULLS LAST, x.trace_id, x.ts_ns, x.step

-- @notes
SELECT note FROM (
    SELECT 0 AS k, f.trace_id, f.file_name || ': no GPU activity in this trace: its device figures are 0' AS note
    FROM trace_files f
    WHERE NOT EXISTS (SELECT 1 FROM gpu_ops g WHERE g.trace_id = f.trace_id) {{ run_scope('f.') }}
    UNION ALL
    SELECT 1, f.trace_id, f.file_name || ': no ProfilerStep#N annotations in this trace: one row for the whole trace'
    FROM trace_files f
    WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id) {{ run_scope('f.') }}
    UNION ALL
    SELECT 1, f.trace_id, f.file_name || ': its ProfilerStep numbers repeat or go back (Lightning numbers '
           || 'validation steps apart): steps numbered 1-' || count(*) || ' in time order'
    FROM trace_files f JOIN steps s USING (trace_id)
    WHERE TRUE {{ run_scope('f.') }}
    GROUP BY f.trace_id, f.file_name
    HAVING bool_or(s.step IS DISTINCT FROM s.recorded)
    UNION ALL
    SELECT 2, f.trace_id,
           f.file_name || ': ' || count(*) || ' steps; step time mean ' || {{ rounded('avg(r.step_us) / 1e3', 3) }}
           || ' ms, coefficient of variation ' || {{ rounded('100.0 * stddev_pop(r.step_us) / nullif(avg(r.step_us), 0)', 1) }}
           || '%; outlier: step ' || arg_max(r.step, (abs(r.vs_median_pct), r.vs_median_pct, -r.step)) || ' ('
           || CASE WHEN arg_max(r.vs_median_pct, (abs(r.vs_median_pct), r.vs_median_pct, -r.step)) >= 0 THEN '+' ELSE '' END
           || {{ rounded('arg_max(r.vs_median_pct, (abs(r.vs_median_pct), r.vs_median_pct, -r.step))', 1) }} || '% vs the median)'
    FROM {{ result }} r JOIN trace_files f USING (trace_id)
    WHERE r.step IS NOT NULL
    GROUP BY f.trace_id, f.file_name
    HAVING count(*) >= 2
)
-- in this order every time (a GROUP BY's rows come in any order)
ORDER BY k, trace_id
