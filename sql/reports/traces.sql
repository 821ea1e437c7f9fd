-- traces: what was profiled: one row per trace file (rank), with its size,
-- profiled window, profiler steps and how much host and device activity it holds.
-- question: What was profiled: which traces and ranks, how long, how many steps?
--
-- wall_us is trace_files.wall_ns (first start to last end of any complete
-- event); steps are the host-side ProfilerStep#N annotations (steps view);
-- gpu_devices counts the devices with device activity (kernels, memcpys,
-- memsets), not the deviceProperties entries (report devices lists those).
--
-- requires: trace_files, steps, cpu_ops, gpu_ops
--
-- Columns:
-- run           VARCHAR  run label
-- rank          INTEGER  rank of the trace (NULL if unknown)
-- trace_id      INTEGER  trace
-- file_name     VARCHAR  the trace file's name
-- events        BIGINT   events in the trace
-- json_bytes    BIGINT  [wide]  uncompressed JSON size, bytes
-- wall_us       DOUBLE   profiled window: first event start to last event end, µs
-- steps         BIGINT   ProfilerStep#N annotations (0: none)
-- step_mean_us  DOUBLE   mean step duration (host-side window), µs; NULL without steps
-- step_max_us   DOUBLE   longest step, µs
-- slowest_step  BIGINT   N of the longest step (the first of equal ones)
-- cpu_ops       BIGINT   CPU operator events
-- gpu_events    BIGINT   device events: kernels, memcpys, memsets
-- gpu_devices   BIGINT   devices with device activity
{% from "templates/scope.sql" import run_scope with context %}
WITH f AS (
    SELECT * FROM trace_files WHERE TRUE {{ run_scope() }}
),
st AS (
    SELECT trace_id, count(*) AS steps, avg(dur_ns) AS step_mean_ns, max(dur_ns) AS step_max_ns,
           arg_max(step, (dur_ns, -step)) AS slowest_step
    FROM steps WHERE trace_id IN (SELECT trace_id FROM f) GROUP BY trace_id
),
c AS (
    SELECT trace_id, count(*) AS cpu_ops FROM cpu_ops
    WHERE trace_id IN (SELECT trace_id FROM f) GROUP BY trace_id
),
g AS (
    SELECT trace_id, count(*) AS gpu_events, count(DISTINCT device) AS gpu_devices FROM gpu_ops
    WHERE trace_id IN (SELECT trace_id FROM f) AND kind IN ('kernel', 'memcpy', 'memset')
    GROUP BY trace_id
)
SELECT f.run, f.rank, f.trace_id, f.file_name, f.event_count AS events, f.json_bytes,
       f.wall_ns / 1e3 AS wall_us, coalesce(st.steps, 0) AS steps,
       st.step_mean_ns / 1e3 AS step_mean_us, st.step_max_ns / 1e3 AS step_max_us, st.slowest_step,
       coalesce(c.cpu_ops, 0) AS cpu_ops, coalesce(g.gpu_events, 0) AS gpu_events,
       coalesce(g.gpu_devices, 0) AS gpu_devices
FROM f
LEFT JOIN st USING (trace_id)
LEFT JOIN c USING (trace_id)
LEFT JOIN g USING (trace_id)
ORDER BY f.run, f.rank NULLS LAST, f.trace_id

-- @notes
SELECT 'no traces loaded' {% if run is not none %}|| ' in run ''' || $run || ''''{% endif %} AS note, true AS instead
WHERE NOT EXISTS (SELECT 1 FROM trace_files WHERE TRUE {{ run_scope() }})
