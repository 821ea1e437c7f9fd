-- trace_summary: one row per trace: its devices, profiler steps, step time and
-- GPU busy time, computed from its events.
--
-- What `duckprof runs` lists per run (the runs view reads these figures from the
-- trace_facts table, where they are stored when a trace is loaded, so that
-- listing runs reads no events). busy_ns is the union of the device activity
-- (kernels, memcpys, memsets, every stream) per device, summed over the devices;
-- window_ns is, per device, from the first device event's start to the last
-- one's end, summed (HTA's kernel_time); steps are the host-side ProfilerStep#N
-- annotations.
--
-- requires: trace_files, gpu_ops, steps
--
-- Columns:
-- trace_id       INTEGER  trace
-- run            VARCHAR  run label
-- rank           INTEGER  rank of the trace
-- devices        INTEGER  devices with device activity
-- steps          BIGINT   ProfilerStep#N annotations
-- step_total_ns  BIGINT   their summed duration, ns
-- step_max_ns    BIGINT   the longest, ns
-- busy_ns        BIGINT   union of the device activity per device, summed over devices, ns
-- window_ns      BIGINT   first device event start to last end per device, summed, ns
-- busy_pct       DOUBLE   busy_ns / window_ns, %
{% from "templates/intervals.sql" import union_lengths %}
CREATE OR REPLACE VIEW trace_summary AS
WITH g AS (
    SELECT trace_id, device, ts_ns, end_ns FROM gpu_ops WHERE dur_ns IS NOT NULL
),
busy AS (
    {{ union_lengths('g', ['trace_id', 'device']) | indent(4) }}
),
per_device AS (
    SELECT trace_id, device, max(end_ns) - min(ts_ns) AS window_ns FROM g GROUP BY trace_id, device
),
gpu AS (
    SELECT trace_id, count(*)::INTEGER AS devices, sum(b.busy_ns)::BIGINT AS busy_ns,
           sum(d.window_ns)::BIGINT AS window_ns
    FROM per_device d JOIN busy b USING (trace_id, device)
    GROUP BY trace_id
),
st AS (
    SELECT trace_id, count(*) AS steps, sum(dur_ns)::BIGINT AS step_total_ns, max(dur_ns) AS step_max_ns
    FROM steps
    GROUP BY trace_id
)
SELECT f.trace_id, f.run, f.rank, coalesce(gpu.devices, 0) AS devices, coalesce(st.steps, 0) AS steps,
       st.step_total_ns, st.step_max_ns, gpu.busy_ns, gpu.window_ns,
       100.0 * gpu.busy_ns / nullif(gpu.window_ns, 0) AS busy_pct
FROM trace_files f
LEFT JOIN gpu USING (trace_id)
LEFT JOIN st USING (trace_id);
