-- launches: kernel launch statistics per trace, device and kernel name: how
-- long the host's launch calls took, how long the kernels (memcpys, memsets)
-- they launched ran, and how long each waited after its launch call returned.
-- HTA get_cuda_kernel_launch_stats, summed up per name (--per-launch: its
-- table, one row per launch).
-- question: How long do launches take on the host, how long do the kernels they launch run, and how long does each wait to start?
--
-- A launch is a device event and the runtime/driver call with its correlation
-- (the launches view; sql/templates/launch_stats.sql). launch_us is that
-- call's duration (HTA's cpu_duration), kernel_us the device event's
-- (gpu_duration), delay_us max(0, device event start - launch call end)
-- (launch_delay): 0 when the kernel started before the call returned, long
-- when it waited behind queued work. HTA's three groups, with its cutoffs as
-- options: short = the kernel ran shorter than its launch call took, the call
-- taking at most --runtime-cutoff (launch-bound work: the host cannot issue
-- such kernels as fast as the GPU runs them); slow_launches = launch calls
-- longer than --runtime-cutoff µs; long_delays = launches that waited
-- longer than --delay-cutoff µs. Rows: per device, the names whose launch
-- calls took the most host time first (--sort). Device events whose launch
-- call is not in the trace are not counted (a note says how many).
-- Without --hta every launch call counts (cuLaunchKernel, cudaGraphLaunch,
-- hipLaunchKernel, ...), times are exact ns; a device event issued by a
-- synchronous call (cudaMemcpy, cudaMemset, hipMemcpy, hipMemcpyWithStream,
-- ...: templates/launch_stats.sql is_sync_call) is no launch: the call may
-- last the whole copy and wait for earlier work, so it would be a 'short'
-- launch that never waits. It is counted in sync_calls and sync_total_us
-- only (HTA does not count these calls either). With
-- --hta the launches are HTA 0.5's exactly: its launch calls only
-- (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync,
-- MTIA's runFunction; so none on AMD traces), its µs times and its last-step
-- cut (hta_events).
--
-- uses: device, gpu_window
-- option: --limit/-n INTEGER >= 0 = 20  rows per device (0 = all); with --per-launch, launches per device
-- option: --sort/-s CHOICE(launch,count,kernel,delay,short,name) = launch  order of the rows per device (the per-name table): total launch call time, launches, total kernel time, total delay, short launches, name
-- option: --runtime-cutoff DOUBLE >= 0 = 50  a launch call longer than this many µs is an outlier (HTA's runtime_cutoff)
-- option: --delay-cutoff DOUBLE >= 0 = 100  a launch delay longer than this many µs is an outlier (HTA's launch_delay_cutoff)
-- option: --per-launch FLAG  one row per launch, in launch order: HTA's table (sql/reports/launches_per_launch.sql)
-- requires: launches, steps, hta_events, trace_files
--
-- Columns:
-- run              VARCHAR  run label
-- rank             INTEGER  rank of the trace
-- trace_id         INTEGER  trace
-- device           INTEGER  GPU index
-- name             VARCHAR  kernel name (or memcpy/memset kind)
-- launches         BIGINT   launches of it (device events with a launch call; a synchronous call is none)
-- launch_mean_us   DOUBLE   mean launch call duration, µs (HTA's cpu_duration)
-- launch_max_us    DOUBLE  [wide]  longest launch call, µs
-- launch_total_us  DOUBLE  [wide]  host time in its launch calls, µs
-- kernel_mean_us   DOUBLE   mean duration of the launched event, µs (HTA's gpu_duration)
-- kernel_total_us  DOUBLE  [wide]  total duration of the launched events, µs
-- delay_mean_us    DOUBLE  [wide]  mean launch delay: start - launch call end, 0 if earlier, µs (HTA's launch_delay)
-- delay_p95_us     DOUBLE   95th percentile launch delay (linear interpolation), µs
-- delay_max_us     DOUBLE  [wide]  longest launch delay, µs
-- delay_total_us   DOUBLE  [wide]  total launch delay, µs
-- short            BIGINT   launches whose kernel ran shorter than its launch call (call <= --runtime-cutoff)
-- slow_launches    BIGINT   launch calls longer than --runtime-cutoff µs
-- long_delays      BIGINT   launch delays longer than --delay-cutoff µs
-- sync_calls       BIGINT   device events of it issued by a synchronous call (cudaMemcpy, hipMemcpyWithStream,
--                           cudaMemset, ...): no launches, in no other column
-- sync_total_us    DOUBLE  [wide]  host time in those synchronous calls (waiting for the work included), µs
{% from "templates/launch_stats.sql" import launch_rows, is_short, is_slow_launch, is_long_delay with context %}
{%- set orders = {'launch': 'launch_total_us DESC', 'count': 'launches DESC, launch_total_us DESC',
                  'kernel': 'kernel_total_us DESC', 'delay': 'delay_total_us DESC, launch_total_us DESC',
                  'short': 'short DESC, launch_total_us DESC', 'name': 'name'} %}
WITH {{ launch_rows() }},
agg AS (
    SELECT trace_id, device, name, count(*) FILTER (WHERE NOT sync_call) AS launches,
           avg(cpu_ns) FILTER (WHERE NOT sync_call) / 1e3 AS launch_mean_us,
           max(cpu_ns) FILTER (WHERE NOT sync_call) / 1e3 AS launch_max_us,
           sum(cpu_ns) FILTER (WHERE NOT sync_call)::BIGINT / 1e3 AS launch_total_us,
           avg(gpu_ns) FILTER (WHERE NOT sync_call) / 1e3 AS kernel_mean_us,
           sum(gpu_ns) FILTER (WHERE NOT sync_call)::BIGINT / 1e3 AS kernel_total_us,
           avg(delay_ns) FILTER (WHERE NOT sync_call) / 1e3 AS delay_mean_us,
           quantile_cont(delay_ns, 0.95) FILTER (WHERE NOT sync_call) / 1e3 AS delay_p95_us,
           max(delay_ns) FILTER (WHERE NOT sync_call) / 1e3 AS delay_max_us,
           sum(delay_ns) FILTER (WHERE NOT sync_call)::BIGINT / 1e3 AS delay_total_us,
           count(*) FILTER (WHERE {{ is_short() }}) AS short,
           count(*) FILTER (WHERE {{ is_slow_launch() }}) AS slow_launches,
           count(*) FILTER (WHERE {{ is_long_delay() }}) AS long_delays,
           count(*) FILTER (WHERE sync_call) AS sync_calls,
           sum(cpu_ns) FILTER (WHERE sync_call)::BIGINT / 1e3 AS sync_total_us
    FROM launch_rows
    GROUP BY trace_id, device, name
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY trace_id, device ORDER BY {{ orders[sort] }}, name) AS pos
    FROM agg
)
SELECT tr.run, tr.rank, r.trace_id, r.device, r.name, r.launches,
       r.launch_mean_us, r.launch_max_us, r.launch_total_us, r.kernel_mean_us, r.kernel_total_us,
       r.delay_mean_us, r.delay_p95_us, r.delay_max_us, r.delay_total_us,
       r.short, r.slow_launches, r.long_delays, r.sync_calls, r.sync_total_us
FROM ranked r
JOIN trace_files tr USING (trace_id)
WHERE $limit = 0 OR r.pos <= $limit
ORDER BY tr.run, tr.rank NULLS LAST, r.trace_id, r.device, r.pos

-- @notes
{% from "templates/launch_stats.sql" import launch_notes with context %}
{{ launch_notes() }}
