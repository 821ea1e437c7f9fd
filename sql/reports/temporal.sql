-- temporal: where each GPU's time goes, per rank (trace) and device: idle,
-- compute, and non-compute (communication, memory). HTA get_temporal_breakdown.
-- question: How much of each GPU's time went to compute, communication, memory and idle?
--
-- Window = the GPU window (gpu_windows: from the first device event's start to
-- the last one's end; HTA's kernel_time). idle = window minus the union of all
-- device events (kernels, memcpys, memsets, all streams: what
-- gpu_busy_intervals merges, computed here in one pass by union_lengths,
-- sql/templates/intervals.sql); compute = union of compute kernels; non_compute
-- = busy time when no compute kernel runs = communication (NCCL/RCCL kernels
-- running, no compute) + memory (only memcpy/memset running) + other. Work
-- classes: gpu_activity.work_class.
-- With --hta it is HTA's breakdown, exactly: HTA's GPU events (every event
-- with a stream arg: also cuda_sync events, non-compute (other_us), and a
-- cpu_op that records a stream, compute), its µs times and its last-step cut
-- (gpu_activity(hta := true)); a sub-µs event rounded to whole µs can open a
-- merged interval of negative length, as in HTA. HTA adds up all devices of a
-- rank; we still give one row per device (the same on single-GPU ranks).
--
-- uses: device, gpu_window
-- requires: gpu_activity, trace_files, launches
--
-- Columns:
-- run               VARCHAR  run label
-- rank              INTEGER  rank of the trace
-- trace_id          INTEGER  trace
-- device            INTEGER  GPU index
-- window_us         DOUBLE   first device event start to last end, µs (HTA kernel_time)
-- idle_us           DOUBLE   no device event running, µs
-- compute_us        DOUBLE   some compute kernel running, µs
-- non_compute_us    DOUBLE   busy but no compute kernel, µs (= communication_us + memory_us + other_us)
-- communication_us  DOUBLE   a communication kernel but no compute kernel running, µs
-- memory_us         DOUBLE   memcpy/memset but no compute or communication kernel running, µs
-- other_us          DOUBLE  [wide]  only other device events running (with --hta: HTA's OTHER, the
--                                  cuda_sync events), µs
-- idle_pct          DOUBLE   idle_us / window_us, %
-- compute_pct       DOUBLE   compute_us / window_us, %
-- non_compute_pct   DOUBLE   non_compute_us / window_us, %
-- events            BIGINT  [wide]  device events in the GPU window
-- unlaunched        BIGINT  [wide]  of those, events whose launch call is not in the trace (a note says how
--                                   many)
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import union_lengths %}
WITH a AS (
    SELECT trace_id, device, event_id, ts_ns, end_ns, work_class, launch_event_id
    FROM gpu_activity(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE TRUE {{ scope() }}
),
windows AS (  -- gpu_windows' scope 'device' rows, from the rows read once for the unions
    SELECT trace_id, device, max(end_ns) - min(ts_ns) AS window_ns, count(*) AS events,
           count(*) FILTER (WHERE launch_event_id IS NULL) AS unlaunched
    FROM a
    GROUP BY trace_id, device
),
{#- without --hta no device event is of class 'other': ccm_ns is busy_ns, one union less to sweep #}
{%- set sets = {'busy_ns': none, 'compute_ns': "work_class = 'compute'",
                'cc_ns': "work_class IN ('compute', 'communication')"} %}
{%- if hta %}{% set sets = dict(sets, ccm_ns="work_class IN ('compute', 'communication', 'memory')") %}{% endif %}
unions AS (
    {{ union_lengths('a', ['trace_id', 'device'], sets, order=['end_ns', 'event_id'], open_negative=true) | indent(4) }}
),
t AS (
    SELECT *{% if not hta %}, busy_ns AS ccm_ns{% endif %} FROM windows JOIN unions USING (trace_id, device)
)
SELECT tr.run, tr.rank, t.trace_id, t.device,
       t.window_ns / 1e3 AS window_us,
       (t.window_ns - t.busy_ns) / 1e3 AS idle_us,
       t.compute_ns / 1e3 AS compute_us,
       (t.busy_ns - t.compute_ns) / 1e3 AS non_compute_us,
       (t.cc_ns - t.compute_ns) / 1e3 AS communication_us,
       (t.ccm_ns - t.cc_ns) / 1e3 AS memory_us,
       (t.busy_ns - t.ccm_ns) / 1e3 AS other_us,
       100.0 * (t.window_ns - t.busy_ns) / nullif(t.window_ns, 0) AS idle_pct,
       100.0 * t.compute_ns / nullif(t.window_ns, 0) AS compute_pct,
       100.0 * (t.busy_ns - t.compute_ns) / nullif(t.window_ns, 0) AS non_compute_pct,
       t.events, t.unlaunched
FROM t
JOIN trace_files tr USING (trace_id)
ORDER BY tr.run, tr.rank NULLS LAST, t.trace_id, t.device

-- @notes
{{ gpu_notes(unlaunched=true, windows=result) }}
