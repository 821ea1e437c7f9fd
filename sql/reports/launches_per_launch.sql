-- launches_per_launch: report launches --per-launch: one row per launch, HTA's
-- get_cuda_kernel_launch_stats table (correlation, cpu_duration, gpu_duration,
-- launch_delay) with the device event's name and HTA's three groups as flags.
-- question: How long did each launch call take, how long did its kernel run, and how long did it wait to start?
--
-- The launches and their figures are report launches' (reports/launches.sql,
-- sql/templates/launch_stats.sql). Rows are in launch order per device (by
-- the launch call's start, then the device event's); --limit keeps the first
-- N of each device (a note says so; device_launches counts them all). With --hta the rows are HTA 0.5's, to
-- its µs: the same (correlation, cpu_duration, gpu_duration, launch_delay)
-- rows as its table, which is in its join order. A device event issued by a
-- synchronous call (cudaMemcpy, hipMemcpyWithStream, ...: no launch, see
-- reports/launches.sql) has its row, sync_call true and none of the three flags.
--
-- requires: launches, steps, hta_events, trace_files
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- device           INTEGER  GPU index
-- stream           BIGINT   stream
-- correlation      BIGINT   correlation id (HTA's correlation)
-- name             VARCHAR  kernel name (or memcpy/memset kind)
-- kind             VARCHAR  [wide]  'kernel', 'memcpy', 'memset' (with --hta, another category HTA takes for a GPU
--                                  event: 'cuda_sync', 'cpu_op')
-- launch_name      VARCHAR  the launch call, e.g. 'cudaLaunchKernel'
-- cpu_duration_us  DOUBLE   the launch call's duration, µs (HTA's cpu_duration)
-- gpu_duration_us  DOUBLE   the device event's duration, µs (HTA's gpu_duration)
-- launch_delay_us  DOUBLE   its start - the launch call's end, 0 if earlier, µs (HTA's launch_delay)
-- short            BOOLEAN  ran shorter than its launch call took, the call taking at most --runtime-cutoff
-- slow_launch      BOOLEAN  the launch call took longer than --runtime-cutoff µs
-- long_delay       BOOLEAN  waited longer than --delay-cutoff µs
-- sync_call        BOOLEAN  issued by a synchronous call (cudaMemcpy, hipMemcpyWithStream, cudaMemset, ...), no launch:
--                           short, slow_launch and long_delay are false
-- event_id         BIGINT  [wide]  the device event (gpu_ops.event_id; with --hta hta_events.event_id)
-- launch_event_id  BIGINT  [wide]  the launch call (runtime.event_id)
-- launch_ts_ns     BIGINT  [wide]  when the launch call started, ns since the epoch
-- device_launches  BIGINT  [wide]  rows on the device in all (--limit keeps its first ones)
{% from "templates/launch_stats.sql" import launch_rows, is_short, is_slow_launch, is_long_delay with context %}
WITH {{ launch_rows() }},
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY trace_id, device
                                 ORDER BY launch_ts_ns, ts_ns, launch_event_id, event_id) AS pos,
           count(*) OVER (PARTITION BY trace_id, device) AS device_launches
    FROM launch_rows
)
SELECT tr.run, tr.rank, r.trace_id, r.device, r.stream, r.correlation, r.name, r.kind, r.launch_name,
       r.cpu_ns / 1e3 AS cpu_duration_us, r.gpu_ns / 1e3 AS gpu_duration_us, r.delay_ns / 1e3 AS launch_delay_us,
       {{ is_short('r.') }} AS short, {{ is_slow_launch('r.') }} AS slow_launch,
       {{ is_long_delay('r.') }} AS long_delay, r.sync_call,
       r.event_id, r.launch_event_id, r.launch_ts_ns, r.device_launches
FROM ranked r
JOIN trace_files tr USING (trace_id)
WHERE $limit = 0 OR r.pos <= $limit
ORDER BY tr.run, tr.rank NULLS LAST, r.trace_id, r.device, r.pos

-- @notes
{% from "templates/launch_stats.sql" import launch_notes with context %}
{{ launch_notes(per_launch=true) }}
