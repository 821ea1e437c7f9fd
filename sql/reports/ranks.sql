-- ranks: per rank of a run: step time, GPU busy %, compute / communication / idle time, and who is late to the collectives.
-- question: Which rank is slow, and how much of the others' time does its late arrival at the collectives cost?
--
-- One row per trace (rank). Step time: the host-side ProfilerStep#N
-- annotations (steps). GPU time over gpu_activity, every device of the trace
-- together (each device's union; --hta as in `report temporal`): busy = union
-- of all device activity, compute = union of compute kernels, communication =
-- communication kernels running while no compute kernel does (exposed
-- communication), idle = window (the GPU window, gpu_windows: first device
-- event start to last end, per device) minus busy. overlap_pct = HTA's get_comm_comp_overlap: the time a
-- communication and a compute kernel both run / the union of the
-- communication kernels.
-- Stragglers: each collective operation is matched across the run's ranks (by
-- process group and 'Seq' when recorded, else by type and order:
-- templates/collectives.sql; point-to-point send/recv are not: each pairs with
-- one peer); a rank arrives when its kernel of it starts. The
-- last rank to arrive makes every other rank's kernel wait (last arrival -
-- their arrival): caused_wait_us sums that over the operations it was last
-- to, and the rank whose lateness costs the others most comes first. Kernel
-- starts on different hosts are compared on their clocks as recorded: clock
-- skew between hosts shows as lateness.
--
-- uses: gpu_window
-- requires: trace_files, steps, gpu_activity, gpu_windows, collectives
-- example: duckprof report ranks --db perf.duckdb --run job42
--
-- Columns:
-- run                VARCHAR  run label
-- rank               INTEGER  rank of the trace
-- trace_id           INTEGER  [wide] trace
-- steps              BIGINT   ProfilerStep#N annotations
-- step_mean_us       DOUBLE   mean step duration, µs
-- step_max_us        DOUBLE   [wide] longest step, µs
-- busy_pct           DOUBLE   GPU busy / window, %
-- window_us          DOUBLE   [wide] first device event start to last end, summed over devices, µs
-- compute_us         DOUBLE   some compute kernel running, µs
-- communication_us   DOUBLE   communication running, no compute (exposed communication), µs
-- idle_us            DOUBLE   no device activity within the window, µs
-- overlap_pct        DOUBLE   communication time overlapped by compute / communication time, % (HTA)
-- collectives        BIGINT   collective operations matched with other ranks
-- late_count         BIGINT   of them, how many this rank arrived at last
-- caused_wait_us     DOUBLE   the others' waiting for it where it arrived last, summed, µs
-- lateness_mean_us   DOUBLE   mean of (its arrival - the first rank's arrival), µs
-- waited_us          DOUBLE   [wide] its own waiting for the last rank, summed, µs
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/intervals.sql" import union_lengths %}
{% from "templates/collectives.sql" import collective_arrivals %}
WITH f AS (
    SELECT trace_id, run, rank FROM trace_files WHERE TRUE {{ run_scope() }}
),
st AS (
    SELECT trace_id, count(*) AS steps, avg(dur_ns) AS step_mean_ns, max(dur_ns) AS step_max_ns
    FROM steps WHERE TRUE {{ run_scope() }}
    GROUP BY trace_id
),
a AS (
    SELECT trace_id, device, event_id, ts_ns, end_ns, work_class
    FROM gpu_activity(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE TRUE {{ run_scope() }}
),
unions AS (
    {{ union_lengths('a', ['trace_id', 'device'],
                     {'busy_ns': none, 'compute_ns': "work_class = 'compute'",
                      'comm_ns': "work_class = 'communication'",
                      'cc_ns': "work_class IN ('compute', 'communication')"},
                     order=['end_ns', 'event_id'], open_negative=true) | indent(4) }}
),
gpu AS (
    SELECT u.trace_id, sum(w.window_ns) AS window_ns, sum(u.busy_ns) AS busy_ns, sum(u.compute_ns) AS compute_ns,
           sum(u.comm_ns) AS comm_ns, sum(u.cc_ns) AS cc_ns
    FROM unions u
    JOIN (SELECT trace_id, device, window_ns
          FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
          WHERE scope = 'device' {{ run_scope() }}) w USING (trace_id, device)
    GROUP BY u.trace_id
),
c AS (
    SELECT * FROM collectives WHERE TRUE {{ run_scope() }}
),
arrivals AS (
    {{ collective_arrivals('c') | indent(4) }}
),
late AS (
    SELECT trace_id, count(*) AS collectives, count(*) FILTER (WHERE last_trace_id = trace_id) AS late_count,
           avg(arrival_ns - first_ns) AS lateness_mean_ns, sum(wait_ns) AS waited_ns
    FROM arrivals
    GROUP BY trace_id
),
caused AS (
    SELECT last_trace_id AS trace_id, sum(wait_ns) AS caused_wait_ns
    FROM arrivals
    GROUP BY last_trace_id
)
SELECT f.run, f.rank, f.trace_id, coalesce(st.steps, 0) AS steps,
       st.step_mean_ns / 1e3 AS step_mean_us, st.step_max_ns / 1e3 AS step_max_us,
       100.0 * g.busy_ns / nullif(g.window_ns, 0) AS busy_pct, g.window_ns / 1e3 AS window_us,
       g.compute_ns / 1e3 AS compute_us, (g.cc_ns - g.compute_ns) / 1e3 AS communication_us,
       (g.window_ns - g.busy_ns) / 1e3 AS idle_us,
       100.0 * (g.compute_ns + g.comm_ns - g.cc_ns) / nullif(g.comm_ns, 0) AS overlap_pct,
       coalesce(l.collectives, 0) AS collectives, coalesce(l.late_count, 0) AS late_count,
       CASE WHEN l.collectives > 0 THEN coalesce(x.caused_wait_ns, 0) / 1e3 END AS caused_wait_us,
       l.lateness_mean_ns / 1e3 AS lateness_mean_us,
       l.waited_ns / 1e3 AS waited_us
FROM f
LEFT JOIN st USING (trace_id)
LEFT JOIN gpu g USING (trace_id)
LEFT JOIN late l USING (trace_id)
LEFT JOIN caused x USING (trace_id)
ORDER BY f.run, caused_wait_us DESC NULLS LAST, f.rank NULLS LAST, f.trace_id

-- @notes
WITH f AS (
    SELECT run, count(*) AS traces, max(world_size) AS world_size, list(DISTINCT rank) AS have
    FROM trace_files WHERE TRUE {{ run_scope() }}
    GROUP BY run
),
c AS (
    SELECT * FROM collectives WHERE TRUE {{ run_scope() }}
),
matched AS (
    SELECT DISTINCT run FROM ({{ collective_arrivals('c') }})
)
SELECT note, false AS instead FROM (
    SELECT 0 AS k, run, 'run ''' || run || ''' has one trace: no other rank to compare it with' AS note
    FROM f WHERE traces = 1
    UNION ALL
    SELECT 1, run, 'run ''' || run || ''': no collective matched across ranks (no NCCL/RCCL kernels, or none '
                   || 'shared by two ranks): no lateness'
    FROM f WHERE traces > 1 AND run NOT IN (SELECT run FROM matched)
    UNION ALL
    SELECT 2, run, 'run ''' || run || ''': ' || (world_size - len(list_filter(have, lambda x: x BETWEEN 0 AND world_size - 1)))
                   || ' of ' || world_size || ' ranks (distributedInfo.world_size) not loaded'
    FROM f WHERE world_size > len(list_filter(have, lambda x: x BETWEEN 0 AND world_size - 1))
)
ORDER BY k, run
