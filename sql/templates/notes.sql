-- notes: the notes (what the data cannot support) that several reports share.
-- Each macro renders a query returning note VARCHAR and instead BOOLEAN (see
-- duckprof/reports.py); import with context (they read the run and device
-- options).
-- gpu_notes(need_launches, unlaunched, windows, rows, no_launch_effect,
--   unlaunched_effect): per trace in scope, "no GPU activity in this trace" (on
--   the device, if one is chosen); with need_launches, per trace whose device
--   activity has no launch call in the trace, and what the report then lacks
--   (no_launch_effect, a constant: 'so no queue depth'); with unlaunched, per
--   device whose GPU window (gpu_windows, with the report's --exclude-last-step
--   / --hta) holds device events whose launch call is not in the trace, and
--   what the report does with them (unlaunched_effect). When no trace in scope
--   has device activity, one line "no GPU activity in this trace", printed
--   instead of the table. A trace's notes come before its devices'. A report's
--   own notes: a Jinja call block around the macro's call, one or more SELECTs
--   of (k, trace_id, device, note, instead) joined by UNION ALL, k from 1 to 8
--   (they follow these; 9 is the line printed instead), which may read the CTE
--   t (trace_id, file_name, has_gpu, has_launches); reports/launches.sql's
--   (templates/launch_stats.sql launch_notes) is one.
--   windows: where the unlaunched counts come from: a relation (SQL text) with
--   one row per device in scope (trace_id, device, events, unlaunched), e.g.
--   the report's result table when its main query already computed its
--   GPU windows; none: gpu_windows scope 'device' (computed again). A device
--   with no row in `windows` gets no such note: with rows (the report's
--   result, one or more rows per device), a device of a trace with launches
--   that has device activity but no row says so instead.
--   has_gpu and has_launches read the launches view (the derived table filled
--   at load: every device event, gpu_ops' rows, with its launch call matched by
--   correlation), which costs less to scan than gpu_ops (events).
{% from "templates/scope.sql" import run_scope, device_scope with context %}

{% macro where_device() -%}
{%- if device is not none %}' (device ' || $device || ')'{% else %}''{% endif -%}
{%- endmacro %}

{% macro gpu_notes(need_launches=false, unlaunched=false, windows=none, rows=none,
                   no_launch_effect='so no queue depth',
                   unlaunched_effect='the GPU window and busy time count them, the queue depth does not') -%}
WITH t AS (
    SELECT f.trace_id, f.file_name,
           EXISTS (SELECT 1 FROM launches g WHERE g.trace_id = f.trace_id {{ device_scope('g.') }}) AS has_gpu,
           {%- if need_launches %}
           EXISTS (SELECT 1 FROM launches l
                   WHERE l.trace_id = f.trace_id AND l.launch_event_id IS NOT NULL {{ device_scope('l.') }}) AS has_launches
           {%- else %}
           true AS has_launches
           {%- endif %}
    FROM trace_files f
    WHERE TRUE {{ run_scope('f.') }}
),
any_gpu AS (SELECT coalesce(bool_or(has_gpu), false) AS yes FROM t)
SELECT note, instead FROM (
    SELECT 0 AS k, trace_id, NULL::INTEGER AS device,
           file_name || ': no GPU activity in this trace' || {{ where_device() }} AS note, false AS instead
    FROM t WHERE NOT has_gpu AND (SELECT yes FROM any_gpu)
    {%- if need_launches %}
    UNION ALL
    SELECT 0, trace_id, NULL, file_name || ': no launch call in this trace matches its device activity (correlation)'
                              || {{ where_device() }} || ', {{ no_launch_effect | replace("'", "''") }}', false
    FROM t WHERE has_gpu AND NOT has_launches
    {%- endif %}
    {%- if unlaunched %}
    UNION ALL
    SELECT 0, w.trace_id, w.device,
           w.file_name || ': ' || format('{:,}', w.unlaunched) || ' of ' || format('{:,}', w.events)
           || ' device events on device ' || w.device || ' have no launch call in the trace '
           || '(launched before the profile began, or by a call it does not record): '
           || '{{ unlaunched_effect | replace("'", "''") }}', false
    FROM (SELECT gw.trace_id, gw.device, gw.events, gw.unlaunched, t.file_name
          {%- if windows is none %}
          FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta) gw
          {%- else %}
          FROM (SELECT trace_id, device, events, unlaunched, 'device' AS scope FROM {{ windows }}) gw
          {%- endif %}
          JOIN t USING (trace_id)
          WHERE gw.scope = 'device' AND gw.unlaunched > 0 {% if need_launches %}AND t.has_launches {% endif %}{{ device_scope('gw.') }}) w
    {%- endif %}
    {%- if rows is not none %}
    UNION ALL
    SELECT 0, d.trace_id, d.device, t.file_name || ': no device event on device ' || d.device || ' is queued (none has a '
                                    || 'launch call the queue counts in the trace), so the device has no row', false
    FROM (SELECT DISTINCT trace_id, device FROM launches g WHERE TRUE {{ device_scope('g.') }}) d
    JOIN t USING (trace_id)
    WHERE t.has_launches AND NOT EXISTS (SELECT 1 FROM {{ rows }} r WHERE r.trace_id = d.trace_id AND r.device = d.device)
    {%- endif %}
    {%- set own = caller() if caller is defined else '' %}
    {%- if own | trim %}
    UNION ALL
    {{ own }}
    {%- endif %}
    UNION ALL
    SELECT 9, NULL, NULL, 'no GPU activity in this trace' || {{ where_device() }}
                          {%- if run is not none %} || ' (run ''' || $run || ''')'{% endif %}, true
    WHERE NOT (SELECT yes FROM any_gpu)
)
ORDER BY k, trace_id, device NULLS FIRST
{%- endmacro %}
