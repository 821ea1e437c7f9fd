-- steps: what `report steps` measures in each profiler step, written once for
-- its per-step table (reports/steps.sql) and its summary (reports/steps_summary.sql).
-- Import with context (it reads the run option).
--
-- step_figures(rules): CTE definitions (to follow WITH) ending in `figures`,
--   one row per trace and window: each ProfilerStep#N's host-side range, or the
--   trace's whole profiled window (step NULL, window_id -1) when it has no steps.
--   Columns: trace_id, step, window_id, ts_ns, end_ns, step_ns, busy_ns,
--   kernel_ns, comm_ns, memcpy_ns, memset_ns, dataloader_ns, optimizer_ns,
--   backward_ns, host_comm_ns, forward_ns, other_ns, top_categories.
--   Device events (gpu_activity, categorized as kernel_categories or by the
--   --rules file, a MIOpen conv helper outside a convolution elementwise:
--   sql/templates/categories.sql event_category) belong to the window in which
--   their launch call started (their own start without one); busy_ns is the
--   part of the window with any device event running (every device of the
--   trace together). The host time of the window is split by priority, each
--   instant counted once: dataloader (enumerate(DataLoader)* /
--   enumerate(DataPipe)* ranges, Lightning's *dataloader_next), backward
--   (autograd::engine::evaluate_function: ... and *Backward* operators, on
--   any thread; Lightning's [pl][profile]*.backward), optimizer inside a
--   Lightning step (Optimizer.step* / Optimizer.zero_grad* ranges inside one of
--   the step ranges below: manual optimization calls them there), the forward of a
--   Lightning step (its [pl][profile]*.training_step / validation_step /
--   test_step / predict_step ranges), optimizer (Optimizer.step* /
--   Optimizer.zero_grad*: what of them the above leave, since an optimizer
--   step with a closure, as Lightning's automatic optimization and LBFGS,
--   runs the forward and backward inside it), host communication (gloo's
--   collectives, the gloo:* annotations of a CPU job's gloo threads: what of
--   them the host's other work does not hide, the exposed part, as NCCL's
--   kernels are on a device), forward (the outermost
--   operators (in no operator but a ProfilerStep#N) and the user annotations
--   on the thread that runs the steps, or
--   on any thread in a trace without steps), other (the rest: Python, waiting).
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/intervals.sql" import covered_lengths %}
{% from "templates/categories.sql" import categorized, helpers_outside_conv, event_category %}
{% from "templates/numbers.sql" import rounded %}

{% macro step_figures(rules) -%}
scope AS (
    SELECT trace_id, first_ts_ns, last_end_ns FROM trace_files WHERE TRUE {{ run_scope() }}
),
windows AS (
    SELECT s.trace_id, s.step, s.event_id AS window_id, s.pid, s.tid, s.ts_ns, s.end_ns
    FROM steps s JOIN scope USING (trace_id)
    UNION ALL
    SELECT t.trace_id, NULL::BIGINT, -1, NULL::BIGINT, NULL::BIGINT, t.first_ts_ns, t.last_end_ns
    FROM scope t
    WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = t.trace_id)
),
step_threads AS (
    SELECT DISTINCT trace_id, pid, tid FROM windows WHERE window_id <> -1
),
cats AS (
    {{ categorized(rules) | indent(4) }}
),
dev AS (
    SELECT g.trace_id, g.kind, g.ts_ns, g.end_ns, g.dur_ns, coalesce(g.launch_ts_ns, g.ts_ns) AS at_ns,
           {{ event_category() }} AS category
    FROM gpu_activity g
    JOIN scope USING (trace_id)
    JOIN cats c ON c.kind = g.kind AND c.name = g.name
    {{ helpers_outside_conv('g') }}
),
dev_placed AS (
    SELECT d.*, w.window_id
    FROM dev d ASOF JOIN windows w ON w.trace_id = d.trace_id AND d.at_ns >= w.ts_ns
    WHERE d.at_ns < w.end_ns OR w.window_id = -1
),
dev_cat AS (
    SELECT trace_id, window_id, category, sum(dur_ns) AS ns FROM dev_placed GROUP BY ALL
),
dev_sums AS (
    SELECT trace_id, window_id,
           coalesce(sum(dur_ns) FILTER (WHERE kind NOT IN ('memcpy', 'memset') AND category <> 'communication'), 0) AS kernel_ns,
           coalesce(sum(dur_ns) FILTER (WHERE kind NOT IN ('memcpy', 'memset') AND category = 'communication'), 0) AS comm_ns,
           coalesce(sum(dur_ns) FILTER (WHERE kind = 'memcpy'), 0) AS memcpy_ns,
           coalesce(sum(dur_ns) FILTER (WHERE kind = 'memset'), 0) AS memset_ns
    FROM dev_placed GROUP BY ALL
),
top_cats AS (
    SELECT trace_id, window_id,
           string_agg(category || ' ' || {{ rounded('100.0 * ns / total', 1) }} || '%', ', ' ORDER BY ns DESC, category)
               AS top_categories
    FROM (SELECT *, sum(ns) OVER (PARTITION BY trace_id, window_id) AS total FROM dev_cat
          QUALIFY row_number() OVER (PARTITION BY trace_id, window_id ORDER BY ns DESC, category) <= 3)
    GROUP BY ALL
),
host AS (  -- host ranges by priority: 1 dataloader, 2 backward, (3 optimizer inside a Lightning step: host_kept),
            -- 4 a Lightning step's forward, 5 optimizer, 6 host communication, 7 forward
    SELECT trace_id, ts_ns, end_ns,
           CASE WHEN name LIKE 'enumerate(DataLoader)%' OR name LIKE 'enumerate(DataPipe)%'
                     OR name LIKE '[pl][profile]%dataloader_next' THEN 1
                WHEN name LIKE 'autograd::engine::evaluate_function:%' OR name LIKE '%Backward%'
                     OR name LIKE '[pl][profile]%.backward' THEN 2
                WHEN regexp_matches(name, '^\[pl\]\[profile\].*\.(training|validation|test|predict)_step$') THEN 4
                WHEN name LIKE 'Optimizer.step%' OR name LIKE 'Optimizer.zero_grad%' THEN 5
                WHEN name LIKE 'gloo:%' THEN 6
                ELSE 7 END AS r, pid, tid, outermost
    FROM (SELECT trace_id, name, ts_ns, end_ns, pid, tid,
                 op_event_id IS NULL OR op_event_id IN (SELECT window_id FROM windows) AS outermost
          FROM cpu_ops
          UNION ALL
          SELECT trace_id, name, ts_ns, end_ns, pid, tid, true FROM user_annotations)
    WHERE NOT starts_with(name, 'ProfilerStep#')
      AND trace_id IN (SELECT trace_id FROM scope)
),
host_kept AS (
    SELECT h.trace_id, h.ts_ns, h.end_ns, h.r
    FROM host h
    LEFT JOIN step_threads st ON st.trace_id = h.trace_id AND st.pid IS NOT DISTINCT FROM h.pid
                             AND st.tid IS NOT DISTINCT FROM h.tid
    WHERE h.r < 7
       OR (h.outermost AND (st.trace_id IS NOT NULL
                            OR h.trace_id NOT IN (SELECT trace_id FROM step_threads)))
    UNION ALL
    -- the optimizer ranges inside a Lightning step's range on their thread, once more as class 3
    -- (above the step's forward): manual optimization steps its optimizers inside training_step
    SELECT o.trace_id, o.ts_ns, o.end_ns, 3
    FROM (SELECT * FROM host WHERE r = 5) o
    SEMI JOIN (SELECT * FROM host WHERE r = 4) l
         ON l.trace_id = o.trace_id AND l.pid IS NOT DISTINCT FROM o.pid AND l.tid IS NOT DISTINCT FROM o.tid
        AND l.ts_ns <= o.ts_ns AND o.end_ns <= l.end_ns
),
covered AS (  -- each window with busy_ns (device events) and uK_ns: the union of the host ranges of priority <= K
    {{ covered_lengths('windows',
                       '(SELECT trace_id, ts_ns, end_ns, 0 AS class FROM dev
                         UNION ALL
                         SELECT trace_id, ts_ns, end_ns, r FROM host_kept)', ['trace_id'],
                       sets={'busy_ns': [0], 'u1_ns': [1], 'u2_ns': [1, 2], 'u3_ns': [1, 2, 3], 'u4_ns': [1, 2, 3, 4],
                             'u5_ns': [1, 2, 3, 4, 5], 'u6_ns': [1, 2, 3, 4, 5, 6],
                             'u7_ns': [1, 2, 3, 4, 5, 6, 7]})
       | indent(4) }}
),
figures AS (
    SELECT w.trace_id, w.step, w.window_id, w.ts_ns, w.end_ns, w.end_ns - w.ts_ns AS step_ns,
           w.busy_ns,
           coalesce(d.kernel_ns, 0) AS kernel_ns, coalesce(d.comm_ns, 0) AS comm_ns,
           coalesce(d.memcpy_ns, 0) AS memcpy_ns, coalesce(d.memset_ns, 0) AS memset_ns,
           w.u1_ns AS dataloader_ns,
           w.u3_ns - w.u2_ns + w.u5_ns - w.u4_ns AS optimizer_ns,
           w.u2_ns - w.u1_ns AS backward_ns,
           w.u6_ns - w.u5_ns AS host_comm_ns,
           w.u4_ns - w.u3_ns + w.u7_ns - w.u6_ns AS forward_ns,
           w.end_ns - w.ts_ns - w.u7_ns AS other_ns,
           t.top_categories
    FROM covered w
    LEFT JOIN dev_sums d USING (trace_id, window_id)
    LEFT JOIN top_cats t USING (trace_id, window_id)
)
{%- endmacro %}
