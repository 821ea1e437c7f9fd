-- steps_tensorboard: TensorBoard profiler's step-time breakdown: each step's
-- time partitioned, by priority, into Kernel, Memcpy, Memset, Communication,
-- Runtime, DataLoader, CPU Exec and Other.
-- variant of: steps (with --breakdown tensorboard; its options)
-- question: How does TensorBoard's profiler split each step's time?
--
-- The rules of torch-tb-profiler 0.4.3 (profiler/event_parser.py StepParser,
-- overall_parser.py), on duckprof's normalised categories:
-- Steps: the ProfilerStep#N host ranges, moved to the device's clock: a
-- step's device events are those launched by runtime calls lying entirely
-- inside its host range (matched on correlation); when the trace has any,
-- step i starts at max(its host start, the end of step i-1) and ends at
-- max(its host end, its device events' last end, its start); the first step
-- starts no earlier than the last end of the device events launched outside
-- every step that end before the first step's first device event. Trailing
-- steps that launched no device event are dropped (when there are two steps
-- or more). A trace without steps has one step, '0', from the first to the
-- last end of its CPU operators.
-- Roles, each instant of a step counted once, by priority: Kernel (kernels
-- that are not communication), Memcpy, Memset, Communication (kernels of the
-- communication category, or launched by an nccl:* / gloo:* operator; and
-- those operators), Runtime (runtime and driver calls), DataLoader
-- (enumerate(DataLoader)#*.__next__ and enumerate(DataPipe)#* operators and
-- annotations), CPU Exec (the other operators and user annotations, not the
-- ProfilerStep#N ones; Python function events are not counted, as in the
-- plugin), Other (the rest of the step).
-- Where the plugin reads a newer trace differently: it knows only the 2021
-- category 'Runtime' (it drops 'cuda_runtime' and 'cuda_driver' calls), it drops
-- user annotations other than ProfilerStep#N and nccl:*, and it takes the
-- GPU-side copies of ProfilerStep#N (gpu_user_annotation) as steps too; duckprof
-- applies its rules to what those categories mean (equal on 2021 traces: the
-- tests compare both resnet50 samples step by step).
--
-- requires: steps, cpu_ops, user_annotations, runtime, gpu_ops, kernel_categories, trace_files
--
-- Columns:
-- run               VARCHAR  run label
-- rank              INTEGER  rank of the trace
-- trace_id          INTEGER  trace
-- step              BIGINT   N of ProfilerStep#N, or its place in time order where N repeat (the steps view); 0: the trace has no steps
-- total_us          DOUBLE   the step's duration on the device-adjusted clock, µs
-- kernel_us         DOUBLE   Kernel, µs
-- memcpy_us         DOUBLE   Memcpy, µs
-- memset_us         DOUBLE   Memset, µs
-- communication_us  DOUBLE   Communication, µs
-- runtime_us        DOUBLE   Runtime, µs
-- dataloader_us     DOUBLE   DataLoader, µs
-- cpu_exec_us       DOUBLE   CPU Exec, µs
-- other_us          DOUBLE   Other, µs
-- start_ns          BIGINT  [wide]  the step's start on that clock, ns since the epoch
-- end_ns            BIGINT  [wide]  its end
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/intervals.sql" import covered_lengths %}
WITH scope AS (
    SELECT trace_id, run, rank FROM trace_files WHERE TRUE {{ run_scope() }}
),
host_steps AS (
    SELECT s.trace_id, s.step, s.ts_ns, s.end_ns FROM steps s JOIN scope USING (trace_id)
    UNION ALL
    SELECT c.trace_id, 0, min(c.ts_ns), max(c.end_ns)
    FROM cpu_ops c
    JOIN (SELECT trace_id FROM scope EXCEPT SELECT trace_id FROM steps) USING (trace_id)  -- traces without steps
    GROUP BY c.trace_id
),
comm_ops AS (
    SELECT trace_id, external_id, ts_ns, end_ns FROM cpu_ops
    WHERE name IN ('nccl:broadcast', 'nccl:reduce', 'nccl:all_reduce', 'nccl:all_gather', 'nccl:reduce_scatter',
                   'gloo:broadcast', 'gloo:reduce', 'gloo:all_reduce', 'gloo:all_gather', 'gloo:reduce_scatter')
    UNION ALL
    SELECT trace_id, external_id, ts_ns, end_ns FROM user_annotations
    WHERE name IN ('nccl:broadcast', 'nccl:reduce', 'nccl:all_reduce', 'nccl:all_gather', 'nccl:reduce_scatter',
                   'gloo:broadcast', 'gloo:reduce', 'gloo:all_reduce', 'gloo:all_gather', 'gloo:reduce_scatter')
),
dev AS (
    SELECT g.trace_id, g.event_id, g.kind, g.ts_ns, g.end_ns, g.correlation,
           CASE WHEN g.kind = 'memcpy' THEN 2 WHEN g.kind = 'memset' THEN 3
                WHEN c.category = 'communication' OR g.external_id IN (SELECT external_id FROM comm_ops o
                                                                       WHERE o.trace_id = g.trace_id) THEN 4
                ELSE 1 END AS role
    FROM gpu_ops g
    JOIN scope USING (trace_id)
    JOIN kernel_categories c ON c.kind = g.kind AND c.name = g.name
    WHERE g.kind IN ('kernel', 'memcpy', 'memset') AND g.dur_ns IS NOT NULL
),
rt AS (  -- the runtime call of each correlation id (the last one, as the plugin keeps)
    SELECT r.trace_id, r.correlation, arg_max(r.ts_ns, r.event_id) AS ts_ns, arg_max(r.end_ns, r.event_id) AS end_ns
    FROM runtime r JOIN scope USING (trace_id)
    WHERE r.correlation IS NOT NULL
    GROUP BY r.trace_id, r.correlation
),
rt_step AS (  -- runtime calls entirely inside a host step
    SELECT r.trace_id, r.correlation, h.step
    FROM rt r ASOF JOIN host_steps h ON h.trace_id = r.trace_id AND r.ts_ns >= h.ts_ns
    WHERE r.end_ns <= h.end_ns
),
matched AS (
    SELECT d.trace_id, d.event_id, d.ts_ns, d.end_ns, m.step
    FROM dev d JOIN rt_step m ON m.trace_id = d.trace_id AND m.correlation = d.correlation
),
step_dev AS (
    SELECT trace_id, step, count(*) AS n, min(ts_ns) AS dev_start_ns, max(end_ns) AS dev_end_ns
    FROM matched GROUP BY trace_id, step
),
first_step AS (
    SELECT h.trace_id, arg_min(h.step, h.ts_ns) AS step, min(h.ts_ns) AS ts_ns
    FROM host_steps h GROUP BY h.trace_id
),
prev0 AS (  -- where the first step may start on the device clock (traces with matched device events)
    SELECT f.trace_id,
           greatest(f.ts_ns, coalesce((SELECT max(d.end_ns) FROM dev d
                                       WHERE d.trace_id = f.trace_id AND d.end_ns < sd.dev_start_ns
                                         AND d.event_id NOT IN (SELECT event_id FROM matched m
                                                                WHERE m.trace_id = f.trace_id)), f.ts_ns)) AS ns
    FROM first_step f
    LEFT JOIN step_dev sd ON sd.trace_id = f.trace_id AND sd.step = f.step
    WHERE EXISTS (SELECT 1 FROM matched m WHERE m.trace_id = f.trace_id)
),
adjusted AS (
    SELECT h.trace_id, h.step, h.ts_ns AS host_ts_ns, coalesce(sd.n, 0) AS n, p.ns IS NOT NULL AS use_gpu,
           -- end_i = max(prev0, the running max of max(host end, device end)); start_i = max(host start, end_i-1)
           greatest(p.ns, max(greatest(h.end_ns, coalesce(sd.dev_end_ns, h.end_ns)))
                          OVER (PARTITION BY h.trace_id ORDER BY h.ts_ns ROWS UNBOUNDED PRECEDING)) AS dev_end,
           h.ts_ns, h.end_ns, p.ns AS p0
    FROM host_steps h
    LEFT JOIN step_dev sd ON sd.trace_id = h.trace_id AND sd.step = h.step
    LEFT JOIN prev0 p ON p.trace_id = h.trace_id
),
tb_steps AS (
    SELECT trace_id, step, host_ts_ns,
           CASE WHEN use_gpu THEN greatest(ts_ns, coalesce(lag(dev_end) OVER w, p0)) ELSE ts_ns END AS start_ns,
           CASE WHEN use_gpu THEN dev_end ELSE end_ns END AS end_ns,
           use_gpu, n,
           max(CASE WHEN n > 0 THEN host_ts_ns END) OVER (PARTITION BY trace_id) AS last_with_device,
           count(*) OVER (PARTITION BY trace_id) AS steps
    FROM adjusted
    WINDOW w AS (PARTITION BY trace_id ORDER BY host_ts_ns)
),
kept AS (  -- trailing steps without device events dropped
    SELECT * FROM tb_steps
    WHERE NOT (use_gpu AND steps > 1) OR host_ts_ns <= last_with_device
),
roles AS (
    SELECT trace_id, ts_ns, end_ns, role FROM dev
    UNION ALL
    SELECT trace_id, ts_ns, end_ns, 4 FROM comm_ops
    UNION ALL
    SELECT r.trace_id, r.ts_ns, r.end_ns, 5 FROM runtime r JOIN scope USING (trace_id)
    UNION ALL
    SELECT trace_id, ts_ns, end_ns, role
    FROM (SELECT x.trace_id, x.ts_ns, x.end_ns, x.op_event_id, s.event_id AS step_event_id,
                 CASE WHEN (starts_with(x.name, 'enumerate(DataLoader)#') AND ends_with(x.name, '.__next__'))
                           OR starts_with(x.name, 'enumerate(DataPipe)#') THEN 6 ELSE 7 END AS role
          FROM (SELECT trace_id, name, ts_ns, end_ns, op_event_id FROM cpu_ops
                UNION ALL
                SELECT trace_id, name, ts_ns, end_ns, op_event_id FROM user_annotations) x
          LEFT JOIN steps s ON s.trace_id = x.trace_id AND s.event_id = x.op_event_id
          WHERE NOT starts_with(x.name, 'ProfilerStep#')
            AND x.name NOT IN ('nccl:broadcast', 'nccl:reduce', 'nccl:all_reduce', 'nccl:all_gather',
                               'nccl:reduce_scatter', 'gloo:broadcast', 'gloo:reduce', 'gloo:all_reduce',
                               'gloo:all_gather', 'gloo:reduce_scatter')
            AND x.trace_id IN (SELECT trace_id FROM scope))
    -- a CPU Exec range inside a cpu_op (its op_event_id: it lies entirely in it) that is
    -- not a ProfilerStep#N adds nothing: that op is of role 4, 6 or 7 and covers it
    WHERE role = 6 OR op_event_id IS NULL OR step_event_id IS NOT NULL
),
cum AS (  -- each kept step with uK: the length of the union of its ranges of role K or better
    {{ covered_lengths('kept', 'roles', ['trace_id'], cls='role', ws='start_ns',
                       sets={'u1': [1], 'u2': [1, 2], 'u3': [1, 2, 3], 'u4': [1, 2, 3, 4], 'u5': [1, 2, 3, 4, 5],
                             'u6': [1, 2, 3, 4, 5, 6], 'u7': [1, 2, 3, 4, 5, 6, 7]}) | indent(4) }}
)
SELECT sc.run, sc.rank, k.trace_id, k.step, (k.end_ns - k.start_ns) / 1e3 AS total_us,
       k.u1 / 1e3 AS kernel_us,
       (k.u2 - k.u1) / 1e3 AS memcpy_us,
       (k.u3 - k.u2) / 1e3 AS memset_us,
       (k.u4 - k.u3) / 1e3 AS communication_us,
       (k.u5 - k.u4) / 1e3 AS runtime_us,
       (k.u6 - k.u5) / 1e3 AS dataloader_us,
       (k.u7 - k.u6) / 1e3 AS cpu_exec_us,
       (k.end_ns - k.start_ns - k.u7) / 1e3 AS other_us,
       k.start_ns, k.end_ns
FROM cum k
JOIN scope sc USING (trace_id)
ORDER BY sc.run, sc.rank NULLS LAST, k.trace_id, k.start_ns, k.step

-- @notes
SELECT f.file_name || ': no ProfilerStep#N annotations in this trace: '
       || CASE WHEN EXISTS (SELECT 1 FROM cpu_ops o WHERE o.trace_id = f.trace_id)
               THEN 'one step, 0, over its CPU operators' ELSE 'no CPU operators either, so no step' END AS note
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id) {{ run_scope('f.') }}
