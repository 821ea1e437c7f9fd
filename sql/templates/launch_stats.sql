-- launch_stats: the launches `report launches` measures, written once for its
-- per-name table (reports/launches.sql) and its per-launch table
-- (reports/launches_per_launch.sql). Import with context (it reads the run,
-- device, exclude_last_step and hta options).
--
-- launch_rows(): CTE definitions (to follow WITH) ending in `launch_rows`, one
--   row per device event and its launch call. Columns: trace_id, device,
--   stream, event_id, kind, name, correlation, launch_event_id, launch_name,
--   launch_ts_ns, ts_ns, cpu_ns (the launch call's duration), gpu_ns (the
--   device event's), delay_ns (max(0, device event start - launch call end):
--   HTA's launch_delay), sync_call (the call is a synchronous one, no launch:
--   is_sync_call).
--   * Without hta: the launches view's rows that have a launch call in the
--     trace (any runtime/driver call with the event's correlation:
--     cudaLaunchKernel(ExC), cuLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync,
--     hipLaunchKernel, ..., and the synchronous cudaMemcpy, cudaMemset,
--     hipMemcpy, hipMemcpyWithStream, ..., flagged sync_call), exact ns. With
--     exclude_last_step, in a trace with 2 or more ProfilerSteps, only events
--     whose launch call started before the last step began (as gpu_activity).
--   * With hta: HTA 0.5's get_cuda_kernel_launch_stats (include_memory_events
--     = True) on hta_events (HTA's events, times and last-step cut): the
--     correlations of events named cudaLaunchKernel, cudaLaunchKernelExC,
--     cudaMemcpyAsync, cudaMemsetAsync or MTIA's runFunction -
--     job_prep_and_submit_for_execution; HTA's CPU events (stream -1) and its
--     GPU events (any other stream: kernels, memcpys, memsets, and whatever
--     else records a stream) with those correlations, inner-joined on
--     correlation (every pair). No sync_call: HTA's calls are all asynchronous.
--
-- is_sync_call(name): the runtime/driver call is of the synchronous API, not a
--   launch: a copy or set without Async (cudaMemcpy, cudaMemcpy2D,
--   cudaMemcpyToSymbol, cudaMemset, cuMemcpyDtoH_v2, cuMemsetD32_v2, hipMemcpy,
--   hipMemcpyWithStream, hipMemcpyDtoH, hipMemset, ...) or a *Synchronize call.
--   Such a call may wait for the stream's earlier work and (device to host,
--   pinned memory, hipMemcpyWithStream: PyTorch's blocking copy_ on ROCm) for
--   the copy itself, so its duration is no launch overhead and its device event
--   never waits after it: HTA counts only the Async calls as launches
--   (cuda_kernel_analysis.cuda_kernel_launch_stats) and lists cudaMemcpy with
--   the blocking synchronisations (critical_path_analysis BLOCKING_SYNC_CALLS);
--   TensorBoard's plugin counts such a call's host time as Memcpy (the device
--   copy it overlaps), not Runtime. report launches counts these calls apart
--   (sync_calls, sync_total_us), not in its launch statistics.
{% from "templates/scope.sql" import scope, run_scope, device_scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% set hta_launch_names = ['cudaLaunchKernel', 'cudaLaunchKernelExC', 'cudaMemcpyAsync', 'cudaMemsetAsync',
                           'runFunction - job_prep_and_submit_for_execution'] %}

{% macro launch_rows() -%}
{%- if not hta %}
last_step AS (
    SELECT trace_id, max(ts_ns) AS last_step_ts_ns
    FROM steps
    WHERE $exclude_last_step
    GROUP BY trace_id
    HAVING count(DISTINCT step) >= 2
),
launch_rows AS (
    SELECT l.trace_id, l.device, l.stream, l.event_id, l.kind, l.name, l.correlation,
           l.launch_event_id, l.launch_name, l.launch_ts_ns, l.ts_ns,
           l.launch_dur_ns AS cpu_ns, l.dur_ns AS gpu_ns,
           greatest(l.ts_ns - (l.launch_ts_ns + l.launch_dur_ns), 0) AS delay_ns,
           {{ is_sync_call('l.launch_name') }} AS sync_call
    FROM launches l
    LEFT JOIN last_step s USING (trace_id)
    WHERE l.launch_event_id IS NOT NULL AND l.dur_ns IS NOT NULL AND l.launch_dur_ns IS NOT NULL
      AND (s.last_step_ts_ns IS NULL OR l.launch_ts_ns < s.last_step_ts_ns)
      {{- scope('l.') }}
)
{%- else %}
hta_corr AS (  -- the correlations of HTA's launch calls (any of its events with such a name)
    SELECT DISTINCT trace_id, correlation
    FROM hta_events
    WHERE name IN ('{{ hta_launch_names | join("', '") }}')
),
hta_cpu AS (
    SELECT h.trace_id, h.event_id, h.name, h.correlation, h.ts_ns, h.dur_ns, h.end_ns
    FROM hta_events h SEMI JOIN hta_corr c USING (trace_id, correlation)
    WHERE h.stream = -1
),
hta_gpu AS (
    SELECT h.trace_id, h.event_id, h.cat, h.name, h.device, h.stream, h.correlation, h.ts_ns, h.dur_ns
    FROM hta_events h SEMI JOIN hta_corr c USING (trace_id, correlation)
    WHERE h.stream <> -1
),
launch_rows AS (
    SELECT g.trace_id, g.device, g.stream, g.event_id,
           CASE g.cat WHEN 'kernel' THEN 'kernel' WHEN 'gpu_memcpy' THEN 'memcpy' WHEN 'gpu_memset' THEN 'memset'
                      ELSE g.cat END AS kind,
           g.name, g.correlation, c.event_id AS launch_event_id, c.name AS launch_name, c.ts_ns AS launch_ts_ns,
           g.ts_ns, c.dur_ns AS cpu_ns, g.dur_ns AS gpu_ns,
           greatest(g.ts_ns - c.end_ns, 0) AS delay_ns, false AS sync_call
    FROM hta_cpu c JOIN hta_gpu g USING (trace_id, correlation)
    WHERE TRUE {{ scope('g.') }}
)
{%- endif %}
{%- endmacro %}

{% macro is_sync_call(name) -%}
((regexp_matches({{ name }}, '^(cuda|hip|cu)Mem(cpy|set)') AND NOT contains({{ name }}, 'Async'))
 OR regexp_matches({{ name }}, '^(cuda|hip|cu)[A-Za-z]*Synchronize$'))
{%- endmacro %}

{#- the three groups of HTA's plots (visualize_cuda_launch_kernel_info): a short kernel ran shorter
    than its launch call took, the call itself not being a runtime outlier. A synchronous call is in
    none (no launch). -#}
{% macro is_short(r='') -%}
(NOT {{ r }}sync_call AND {{ r }}gpu_ns < {{ r }}cpu_ns AND {{ r }}cpu_ns <= $runtime_cutoff * 1000)
{%- endmacro %}
{% macro is_slow_launch(r='') -%}
(NOT {{ r }}sync_call AND {{ r }}cpu_ns > $runtime_cutoff * 1000)
{%- endmacro %}
{% macro is_long_delay(r='') -%}
(NOT {{ r }}sync_call AND {{ r }}delay_ns > $delay_cutoff * 1000)
{%- endmacro %}

{#- launch_notes(per_launch): the report's notes (templates/notes.sql gpu_notes, what the report does
    without launch calls said its way), per trace in scope: no device activity (printed instead of
    the table when no trace has any); device activity but no launch call matching it; per device,
    the device events without a launch call in the trace (not counted); with hta, the device events
    whose launch call HTA does not count; with per_launch, a device whose rows --limit cut. Read
    from the launches view (stored at load), not from the report's rows. -#}
{% macro launch_notes(per_launch=false) -%}
{%- set not_hta = "l.launch_event_id IS NOT NULL AND l.launch_name NOT IN ('" ~ (hta_launch_names | join("', '")) ~ "')" %}
{%- call gpu_notes(need_launches=true, unlaunched=true,
                   windows="(SELECT trace_id, device, count(*) AS events, count(*) FILTER (WHERE launch_event_id IS NULL) "
                           ~ "AS unlaunched FROM launches WHERE TRUE " ~ run_scope() ~ " GROUP BY trace_id, device)",
                   no_launch_effect='so no launch statistics', unlaunched_effect='not counted') %}
    {%- if hta %}
    SELECT 2, d.trace_id, d.device, t.file_name || ': ' || format('{:,}', d.not_hta)
           || CASE WHEN d.not_hta = 1 THEN ' device event on device ' || d.device || ' was'
                   ELSE ' device events on device ' || d.device || ' were' END || ' launched by ' || d.not_hta_names || ', which HTA''s launch stats do not count '
           || '(only cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync and MTIA''s '
           || 'runFunction): not in this table; without --hta they are', false
    FROM (SELECT l.trace_id, l.device, count(*) AS not_hta,
                 string_agg(DISTINCT l.launch_name, ', ' ORDER BY l.launch_name) AS not_hta_names
          FROM launches l
          WHERE {{ not_hta }} {{ device_scope('l.') }}
          GROUP BY l.trace_id, l.device) d
    JOIN t USING (trace_id)
    {%- endif %}
    {%- if hta and per_launch %}
    UNION ALL
    {%- endif %}
    {%- if per_launch %}
    SELECT 3, r.trace_id, r.device, t.file_name || ': the first ' || format('{:,}', count(*)) || ' of '
           || format('{:,}', max(r.device_launches)) || ' launches on device ' || r.device || ' (-n 0 for all)', false
    FROM {{ result }} r JOIN t USING (trace_id)
    GROUP BY r.trace_id, r.device, t.file_name
    HAVING max(r.device_launches) > count(*)
    {%- endif %}
{%- endcall %}
{%- endmacro %}
